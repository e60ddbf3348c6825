"""Live training tab: train GRPO, GDPO and MRTPO side by side, one step of each in turn, and watch the curves.

Each click trains private copies of the chosen checkpoint (never the shared, cached policy). The handler is a
generator, so the Stop button cancels it between steps and the curves stay as they were. A process-wide cap
(env ``MRTPO_MAX_TRAININGS``, default 1, read when a training starts) limits concurrent runs; a click beyond it gets a
readable message.
"""
from __future__ import annotations

import dataclasses
import threading
import time

import gradio as gr
import pandas as pd

from .. import viz
from ..names import CONTROLS, METHODS, TASKS
from ..settings import default_checkpoint, get_settings
from ..tasks import available_tasks
from ..viz.training import advantage_tokens_html, phase_times_markdown, reward_curves_figure
from .common import get_policy, readable


class TrainingSlots:
    """Concurrent live trainings of this process, capped by ``MRTPO_MAX_TRAININGS`` as it is when a run starts."""

    def __init__(self):
        self._lock = threading.Lock()
        self.running = 0
        """Trainings running now."""

    def acquire(self) -> bool:
        """Take a slot if one is free under the current cap."""
        with self._lock:
            if self.running >= get_settings().max_trainings:
                return False
            self.running += 1
            return True

    def release(self) -> None:
        with self._lock:
            self.running = max(0, self.running - 1)

    def free(self) -> int:
        """Slots free now (for tests and the status line)."""
        return max(0, get_settings().max_trainings - self.running)


SLOTS = TrainingSlots()
"""The process's training slots."""


@dataclasses.dataclass(frozen=True)
class LiveSettings:
    """Small defaults, so that a click shows curves within seconds on a CPU Space."""

    steps: int = 15
    group_size: int = 4
    prompts_per_step: int = 2
    max_new_tokens: int = 40
    lr: float = 3e-4
    max_steps: int = 200
    """Largest number of steps one click may ask for."""


LIVE = LiveSettings()


def _outputs(rows: list[dict], samples: dict, times: dict, status: str):
    df = pd.DataFrame(rows)
    fig = reward_curves_figure(df, title="Reward per step (one line per method)") if rows else None
    variant = "mrtpo" if "mrtpo" in samples else next(iter(samples), None)
    sample = advantage_tokens_html(samples[variant], f"Latest {variant} sample") if variant else ""
    return fig, sample, phase_times_markdown(times), status


@readable
def run_live_training(checkpoint: str, task: str, methods: list[str], steps, lr, group_size, max_new_tokens,
                      control: str):
    """Train every chosen method one step at a time, in turn; yields (curves, sample HTML, phase times, status).

    The slot is released and the training generators closed when the run ends, fails or is cancelled.
    """
    from ..training import TrainConfig, train

    methods = [m for m in (methods or []) if m in METHODS]
    if not methods:
        raise ValueError("Pick at least one method to train.")
    steps = int(steps or LIVE.steps)
    if not 1 <= steps <= LIVE.max_steps:
        raise ValueError(f"Steps must lie between 1 and {LIVE.max_steps}.")
    if not SLOTS.acquire():
        yield None, "", "", (f"**All {get_settings().max_trainings} training slot(s) are busy** (env "
                             "MRTPO_MAX_TRAININGS). Try again when the running training has finished or been stopped.")
        return
    runs = {}
    try:
        policy = get_policy(checkpoint or default_checkpoint())
        base = TrainConfig(task=task, steps=steps, lr=float(lr), group_size=int(group_size),
                           prompts_per_step=LIVE.prompts_per_step, max_new_tokens=int(max_new_tokens),
                           control=control or "none")
        runs = {m: train(dataclasses.replace(base, method=m), policy=policy) for m in methods}
        yield from _interleave(runs, steps)
    finally:
        for gen in runs.values():
            gen.close()
        SLOTS.release()


def _interleave(runs: dict, steps: int):
    """One step of each run in turn; yields the outputs after every step."""
    rows, samples, times, start = [], {}, {}, time.perf_counter()
    yield _outputs(rows, samples, times, f"Preparing {len(runs)} private copies of the policy ...")
    for step in range(steps):
        for variant, gen in runs.items():
            metrics = next(gen, None)
            if metrics is None:
                continue
            rows.append({**metrics.to_row(), "variant": variant})
            samples[variant], times[variant] = metrics.sample, metrics.times
            line = " · ".join(f"{v}: {r['reward/mean']:.2f}" for v, r in _latest(rows).items())
            yield _outputs(rows, samples, times, f"Step {step + 1}/{steps} ({time.perf_counter() - start:.0f} s) "
                                                 f"· mean reward {line}")
    yield _outputs(rows, samples, times, f"Done: {steps} steps of {', '.join(runs)}.")


def _latest(rows: list[dict]) -> dict[str, dict]:
    out = {}
    for r in rows:
        out[r["variant"]] = r
    return out


def build_training_tab(checkpoint) -> None:
    """The tab's layout and events; ``checkpoint`` is the app's shared checkpoint picker."""
    gr.Markdown("Train a private copy of the policy with each method, one step of each in turn. Curves per reward "
                "stream in as steps finish; the sample shows where the latest step put its advantage, token by "
                "token. Stop keeps the curves.")
    with gr.Row():
        task = gr.Dropdown(available_tasks(), value=TASKS[0], label="Task family")
        methods = gr.CheckboxGroup(list(METHODS), value=list(METHODS), label="Methods")
        steps = gr.Slider(1, LIVE.max_steps, value=LIVE.steps, step=1, label="Steps")
    with gr.Accordion("Settings", open=False):
        with gr.Row():
            lr = gr.Number(LIVE.lr, label="Learning rate")
            group_size = gr.Slider(2, 16, value=LIVE.group_size, step=1, label="Completions per prompt (G)")
            max_new = gr.Slider(8, 128, value=LIVE.max_new_tokens, step=8, label="Max new tokens")
            control = gr.Dropdown(list(CONTROLS), value="none", label="MRTPO relevance control")
    with gr.Row():
        start_btn = gr.Button("Start", variant="primary")
        stop_btn = gr.Button("Stop")
    status = gr.Markdown(f"Idle. {get_settings().max_trainings} concurrent training run(s) allowed.")
    curves = gr.Plot(viz.placeholder_figure("Press Start: one reward curve per method"), label="Reward curves")
    with gr.Row():
        sample = gr.HTML()
        times = gr.Markdown()
    event = start_btn.click(run_live_training, [checkpoint, task, methods, steps, lr, group_size, max_new, control],
                            [curves, sample, times, status], api_name="train", concurrency_id="training",
                            concurrency_limit=get_settings().max_trainings + 4)
    stop_btn.click(None, cancels=[event])
