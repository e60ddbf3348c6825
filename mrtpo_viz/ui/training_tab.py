"""Live training tab: train GRPO, GDPO and MRTPO side by side, one step of each in turn, and watch the curves.

Each click trains private copies of the chosen checkpoint (never the shared, cached policy). The handler is a
generator; Stop does not cancel it (a cancelled event leaves Gradio's error badge on every output and blanks the
curves) but sets ``stopped`` on the session's :class:`LiveProgress`, which the generator checks before every
method's step: it then yields the curves and summary of the steps every method finished, with "Stopped at step n",
and returns. The defaults are :data:`LIVE` (checked by ``benchmarks/live_defaults.py``). A process-wide cap (env
``MRTPO_MAX_TRAININGS``, default 1, read when a training starts) limits concurrent runs; a click beyond it gets a
readable message.
"""

from __future__ import annotations

import dataclasses
import threading
import time

import gradio as gr
import pandas as pd

from .. import viz
from ..names import CONTROLS, DEFAULT_METHODS, METHODS
from ..settings import default_checkpoint, get_settings
from ..tasks import available_tasks
from ..viz.training import advantage_tokens_html, phase_times_markdown, reward_curves_figure, run_summary_markdown
from .errors import readable
from .policy_choice import get_policy
from .zerogpu import gpu


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
    """The tab's defaults, one source for the tab and for ``benchmarks/live_defaults.py`` (which checks them on
    3 seeds: the mean reward rises within ``steps`` on the bundled policy; numbers in docs/training.md)."""

    task: str = "tool_calling"
    """Task family preselected in the tab."""
    methods: tuple[str, ...] = DEFAULT_METHODS
    """Methods ticked by default (the paper's three; the oracle and the entropy baseline can be ticked too)."""
    steps: int = 30
    group_size: int = 4
    """G: completions per prompt."""
    prompts_per_step: int = 2
    max_new_tokens: int = 64
    """Long enough for most gold responses of the bundled tasks (40 cut half the tool calls short)."""
    lr: float = 5e-4
    temperature: float = 1.0
    seed: int = 0
    shared_samples: bool = True
    """Every method sees the same prompts and sampling seeds (common random numbers): the curves start together
    and part only through what the methods do differently. Off: each method samples with its own seed."""
    smoothing: int = 5
    """Trailing mean over this many steps in the plot (1: the raw per-step values, which swing by about +-0.2 from
    step to step with 2 prompts x 4 completions)."""
    max_steps: int = 200
    """Largest number of steps one click may ask for."""

    def seed_for(self, method: str, seed: int | None = None) -> int:
        """The training seed of ``method``: the run's seed, or one seed per method when samples are not shared."""
        seed = self.seed if seed is None else int(seed)
        return seed if self.shared_samples else seed * len(METHODS) + METHODS.index(method)

    def train_config(self, method: str, **fields):
        """The ``TrainConfig`` of one method's run with these settings (``fields`` override, e.g. ``seed``)."""
        from ..training import TrainConfig

        seed = self.seed_for(method, fields.pop("seed", None))
        base = dict(
            task=self.task,
            method=method,
            steps=self.steps,
            group_size=self.group_size,
            prompts_per_step=self.prompts_per_step,
            max_new_tokens=self.max_new_tokens,
            lr=self.lr,
            temperature=self.temperature,
            seed=seed,
        )
        return TrainConfig(**{**base, **fields})


LIVE = LiveSettings()


@dataclasses.dataclass
class LiveProgress:
    """One session's live run, shared (the same object, from ``gr.State``) by the Start generator, the Stop button's
    handler and the smoothing control: Stop sets ``stopped``; the generator sees it before the next method's step
    and ends the run with "Stopped at step n", keeping every point drawn so far."""

    steps: int = 0
    """Steps asked for."""
    done: int = 0
    """Steps that every method has finished."""
    running: bool = False
    stopped: bool = False
    rows: list = dataclasses.field(default_factory=list)
    """Metrics rows so far (``StepMetrics.to_row()`` plus ``variant``)."""
    window: int = LIVE.smoothing
    """Smoothing of the plot (trailing mean, steps)."""
    methods: int = 1
    """Methods trained side by side (rows per finished step)."""
    samples: dict = dataclasses.field(default_factory=dict)
    """Method -> its latest ``StepMetrics.sample`` (with its ``step``)."""
    sample_of: str = "mrtpo"
    """Whose latest sample the tab shows."""

    def start(self, steps: int, window: int, methods: int) -> None:
        self.steps, self.done, self.running, self.stopped, self.rows, self.samples = steps, 0, True, False, [], {}
        self.window, self.methods = window, methods

    def finished_rows(self) -> list:
        """The rows of the steps that every method has finished (a stop can fall between two methods' steps)."""
        return self.rows[: self.done * self.methods]

    def keep_finished(self) -> None:
        """After Stop: only the steps that every method finished stay (the curves then end where "Stopped at step
        n" says; a method one step ahead loses that step's point and sample)."""
        self.rows = self.finished_rows()
        self.samples = {m: s for m, s in self.samples.items() if s["step"] <= self.done}


def curves_figure(progress: LiveProgress):
    """The reward curves of the rows so far, smoothed as the tab's control says."""
    if not progress.rows:
        return viz.placeholder_figure("Press Start: one reward curve per method")
    return reward_curves_figure(
        pd.DataFrame(progress.rows), window=progress.window, title="Reward per step (one line per method)"
    )


def summary_markdown(progress: LiveProgress) -> str:
    rows = progress.finished_rows()
    return run_summary_markdown(pd.DataFrame(rows), window=5) if rows else ""


def stopped_status(progress: LiveProgress) -> str:
    if not progress.done:
        return f"**Stopped at step 0** of {progress.steps}, before any step had finished."
    return (
        f"**Stopped at step {progress.done}** of {progress.steps}: every method finished {progress.done} "
        f"step{'s' * (progress.done != 1)}; the curves and the summary of those steps stay."
    )


def sample_html(progress: LiveProgress) -> str:
    """The latest sample of the chosen method (or of the first method trained, when that one is not)."""
    samples = progress.samples
    variant = progress.sample_of if progress.sample_of in samples else next(iter(samples), None)
    if variant is None:
        return ""
    return advantage_tokens_html(samples[variant], f"Latest {variant} sample (step {samples[variant]['step']})")


def _outputs(progress: LiveProgress, times: dict, status: str, summary: str = ""):
    return curves_figure(progress), sample_html(progress), phase_times_markdown(times), status, summary


def _check_inputs(methods, steps, seed, smoothing) -> tuple[list[str], int, int, int]:
    methods = [m for m in dict.fromkeys(methods or []) if m in METHODS]
    if not methods:
        raise ValueError("Pick at least one method to train.")
    steps = int(steps or LIVE.steps)
    if not 1 <= steps <= LIVE.max_steps:
        raise ValueError(f"Steps must lie between 1 and {LIVE.max_steps}.")
    if seed is None or float(seed) != int(seed) or int(seed) < 0:
        raise ValueError(f"The seed must be a whole number >= 0, got {seed!r}.")
    return methods, steps, int(seed), max(1, int(smoothing or 1))


@gpu("train")
@readable
def run_live_training(
    checkpoint: str,
    task: str,
    methods: list[str],
    steps,
    lr,
    group_size,
    max_new_tokens,
    control: str,
    seed=LIVE.seed,
    shared_samples: bool = LIVE.shared_samples,
    smoothing=LIVE.smoothing,
    temperature=LIVE.temperature,
    progress: LiveProgress | None = None,
):
    """Train every chosen method one step at a time, in turn; yields (curves, sample HTML, phase times, status,
    summary). ``progress`` is the session's :class:`LiveProgress` (a new one when not given).

    The slot is released and the training generators closed when the run ends, fails or is cancelled.
    """
    from ..training import train

    methods, steps, seed, smoothing = _check_inputs(methods, steps, seed, smoothing)
    progress = LiveProgress() if progress is None else progress
    if not SLOTS.acquire():
        yield (
            gr.update(),
            "",
            "",
            f"**All {get_settings().max_trainings} training slot(s) are busy** (env "
            "MRTPO_MAX_TRAININGS). Try again when the running training has finished or been stopped.",
            "",
        )
        return
    runs = {}
    try:
        progress.start(steps, smoothing, len(methods))
        policy = get_policy(checkpoint or default_checkpoint())
        live = dataclasses.replace(
            LIVE,
            task=task,
            steps=steps,
            lr=float(lr),
            group_size=int(group_size),
            max_new_tokens=int(max_new_tokens),
            temperature=float(temperature),
            shared_samples=bool(shared_samples),
        )
        runs = {m: train(live.train_config(m, seed=seed, control=control or "none"), policy=policy) for m in methods}
        yield from _interleave(runs, progress)
    finally:
        progress.running = False
        for gen in runs.values():
            gen.close()
        SLOTS.release()


def _interleave(runs: dict, progress: LiveProgress):
    """One step of each run in turn; yields the outputs after every step, and a summary at the end."""
    times, start, steps = {}, time.perf_counter(), progress.steps
    yield _outputs(progress, times, f"Preparing {len(runs)} private copies of the policy ...")
    for step in range(steps):
        for variant, gen in runs.items():
            if progress.stopped:  # Stop was pressed: end here, keeping the steps that every method finished
                progress.keep_finished()
                yield _outputs(progress, times, stopped_status(progress), summary_markdown(progress))
                return
            metrics = next(gen, None)
            if metrics is None:
                continue
            progress.rows.append({**metrics.to_row(), "variant": variant})
            progress.done = len(progress.rows) // progress.methods  # steps that every method has finished
            progress.samples[variant], times[variant] = {**metrics.sample, "step": step + 1}, metrics.times
            line = " · ".join(f"{v}: {viz.fmt_sig(r['reward/mean'])}" for v, r in _latest(progress.rows).items())
            yield _outputs(
                progress, times, f"Step {step + 1}/{steps} ({time.perf_counter() - start:.0f} s) · mean reward {line}"
            )
    yield _outputs(
        progress,
        times,
        f"**Done**: {steps} steps of {', '.join(runs)} in {time.perf_counter() - start:.0f} s.",
        summary_markdown(progress),
    )


def stop_live_training(progress: LiveProgress) -> None:
    """The Stop button's handler: asks the running generator to stop after its current step (it then writes
    "Stopped at step n" and the summary). It writes nothing itself: its answer can reach the page after the
    generator's last update, and would then overwrite "Stopped at step n". Nothing happens when no run is going."""
    if progress.running:
        progress.stopped = True


def redraw(progress: LiveProgress, smoothing):
    """The smoothing control: redraw the curves so far (a running run draws with the new value from now on)."""
    progress.window = max(1, int(smoothing or 1))
    return curves_figure(progress)


def show_sample(progress: LiveProgress, method: str):
    """The "Sample of" control: show that method's latest sample (a running run keeps showing it)."""
    progress.sample_of = method if method in METHODS else progress.sample_of
    return sample_html(progress)


def _latest(rows: list[dict]) -> dict[str, dict]:
    out = {}
    for r in rows:
        out[r["variant"]] = r
    return out


INTRO = """Train a private copy of the policy with each method, one step of each in turn, and watch the mean reward
per step. With **same samples for every method** (the default) all methods start from the same policy on the same
prompts and completions, so their first points coincide by design (the dashes and markers show every line) and they
part only through what the methods do differently. On the bundled toy policy's three families token credit has
little to add: over 40 steps and 6 seeds an oracle on the deciding tokens does not beat GDPO, and MRTPO at GDPO's
learning rate stays within 0.02 of it; on the `slots` task built to need token credit, that oracle beats GDPO over
14 seeds, and whether MRTPO's own relevance does is not established yet (`docs/study.md`). MRTPO's visible difference is
*where* the advantage goes: the sample below colours each token by the advantage it was trained with. Stop ends the
run after the step that is running and keeps the curves."""


def build_training_tab(checkpoint) -> None:
    """The tab's layout and events; ``checkpoint`` is the app's shared checkpoint picker."""
    gr.Markdown(INTRO)
    with gr.Row():
        task = gr.Dropdown(available_tasks(), value=LIVE.task, label="Task family")
        methods = gr.CheckboxGroup(list(METHODS), value=list(LIVE.methods), label="Methods", elem_id="live-methods")
        steps = gr.Slider(1, LIVE.max_steps, value=LIVE.steps, step=1, label="Steps")
        smoothing = gr.Slider(1, 10, value=LIVE.smoothing, step=1, label="Smoothing (trailing mean, steps)")
    with gr.Accordion("Settings", open=False):
        with gr.Row():
            lr = gr.Number(LIVE.lr, label="Learning rate")
            group_size = gr.Slider(2, 16, value=LIVE.group_size, step=1, label="Completions per prompt (G)")
            max_new = gr.Slider(8, 128, value=LIVE.max_new_tokens, step=8, label="Max new tokens")
            temperature = gr.Slider(0.3, 1.5, value=LIVE.temperature, step=0.1, label="Sampling temperature")
        with gr.Row():
            control = gr.Dropdown(list(CONTROLS), value="none", label="MRTPO relevance control")
            seed = gr.Number(LIVE.seed, precision=0, minimum=0, label="Seed")
            shared = gr.Checkbox(LIVE.shared_samples, label="Same samples for every method (common random numbers)")
    with gr.Row():
        start_btn = gr.Button("Start", variant="primary", elem_id="live-start")
        stop_btn = gr.Button("Stop", elem_id="live-stop")
    progress = gr.State(LiveProgress())
    status = gr.Markdown(
        f"Idle. {get_settings().max_trainings} concurrent training run(s) allowed.", elem_id="live-status"
    )
    summary = gr.Markdown(elem_id="live-summary")
    curves = gr.Plot(
        viz.placeholder_figure("Press Start: one reward curve per method"), label="Reward curves", elem_id="live-curves"
    )
    sample_of = gr.Radio(
        list(METHODS),
        value="mrtpo",
        label="Latest sample of",
        info="GDPO and GRPO give every token of a completion the same advantage (one "
        "colour); MRTPO moves each reward's share to the tokens relevant to it.",
    )
    sample = gr.HTML(elem_id="live-sample")
    # full width, below the sample: beside it the table had one letter of a header per line
    times = gr.Markdown(elem_id="live-times", elem_classes=["mrtpo-table"])
    start_btn.click(
        run_live_training,
        [
            checkpoint,
            task,
            methods,
            steps,
            lr,
            group_size,
            max_new,
            control,
            seed,
            shared,
            smoothing,
            temperature,
            progress,
        ],
        [curves, sample, times, status, summary],
        api_name="train",
        concurrency_id="training",
        concurrency_limit=get_settings().max_trainings + 4,
    )
    # no cancels=[event]: a cancelled event puts Gradio's error state on every output; the generator stops itself
    stop_btn.click(stop_live_training, [progress], None, queue=False, api_name="stop_training")
    smoothing.change(redraw, [progress, smoothing], [curves], queue=False, api_visibility="private")
    sample_of.change(show_sample, [progress, sample_of], [sample], queue=False, api_visibility="private")
