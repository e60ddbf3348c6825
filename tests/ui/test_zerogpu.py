"""ZeroGPU: handlers are wrapped in ``spaces.GPU(duration=...)`` with a duration from the request's size; off ZeroGPU
(and without the ``spaces`` package) nothing changes."""

import sys
import types

import pytest

from mrtpo_viz.ui import zerogpu


class FakeSpaces(types.ModuleType):
    """Records the duration each call asks for, as ZeroGPU's scheduler would receive it."""

    def __init__(self):
        super().__init__("spaces")
        self.asked = []

    def GPU(self, duration):
        def wrap(fn):
            import inspect

            if inspect.isgeneratorfunction(fn):

                def gen(*a, **k):
                    self.asked.append(duration(*a, **k))
                    yield from fn(*a, **k)

                return gen

            def call(*a, **k):
                self.asked.append(duration(*a, **k))
                return fn(*a, **k)

            return call

        return wrap


def test_durations_follow_the_request_size(monkeypatch):
    fake = FakeSpaces()
    monkeypatch.setitem(sys.modules, "spaces", fake)

    @zerogpu.gpu("replay")
    def replay(checkpoint, prompt, response, verifiers):
        return len(response)

    @zerogpu.gpu("train")
    def train(checkpoint, task, methods, steps):
        yield from range(steps)

    assert replay("tiny-mrtpo", "q", "x" * 100, ["a"]) == 100
    assert replay("tiny-mrtpo", "q" * 20_000, "x" * 20_000, ["a"]) == 20_000
    assert list(train("tiny-mrtpo", "tool_calling", ["gdpo"], 3)) == [0, 1, 2]
    list(train("tiny-mrtpo", "tool_calling", ["gdpo"], 30))
    short, long, train3, train30 = fake.asked
    assert short == zerogpu.MIN_S and short < long <= zerogpu.MAX_S  # 40k characters: 15 + 80 s
    assert long == 15 + 80
    assert train3 == 15 + 3 * 4 and train30 == 15 + 30 * 4 and train30 <= zerogpu.MAX_S


def test_without_the_package_the_handler_is_unchanged(monkeypatch):
    monkeypatch.setitem(sys.modules, "spaces", None)  # import spaces -> ImportError

    def handler(x):
        return x

    assert zerogpu.gpu("replay")(handler) is handler


def test_the_real_package_is_a_no_op_off_zerogpu(monkeypatch):
    spaces = pytest.importorskip("spaces", reason="pip install spaces (requirements-dev.txt) tests the real decorator")
    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)
    assert not spaces.config.Config.zero_gpu

    def handler(x):
        return 2 * x

    def gen(n):
        yield from range(n)

    assert zerogpu.gpu("replay")(handler) is handler and zerogpu.gpu("train")(gen) is gen


def test_zerogpu_places_the_model_on_cuda_at_start_up(monkeypatch):
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    assert zerogpu.on_zerogpu() and zerogpu.startup_device() == "cuda"
    monkeypatch.delenv("SPACES_ZERO_GPU")
    assert not zerogpu.on_zerogpu() and zerogpu.startup_device() is None


def test_the_app_wraps_every_handler_that_runs_the_model():
    """Generate, replay, group sampling, A/B, scoring, live training, the Runs replay and the MCP replay: each asks
    ZeroGPU for a slice of the right kind; the handlers without a model (scoring a response, tables) do not."""
    from mrtpo_viz.ui import build_app  # noqa: F401  (imports every tab)
    from mrtpo_viz.ui import ab_split_tab, ab_tab, relevance_tab, rollouts_tab, runs_tab, tools, training_tab  # noqa: F401

    assert {k: v for k, v in zerogpu.HANDLERS.items() if k.startswith("mrtpo_viz.")} == {
        "mrtpo_viz.ui.ab_split_tab.compare_split": "replay",
        "mrtpo_viz.ui.ab_tab.compare": "replay",
        "mrtpo_viz.ui.relevance_tab.generate": "replay",
        "mrtpo_viz.ui.relevance_tab.replay_live": "replay",
        "mrtpo_viz.ui.relevance_tab.replay_response": "replay",
        "mrtpo_viz.ui.relevance_tab.sample_group": "replay",
        "mrtpo_viz.ui.rollouts_tab.score_file": "score",
        "mrtpo_viz.ui.runs_tab.replay_completion": "replay",
        "mrtpo_viz.ui.tools.token_relevance": "replay",
        "mrtpo_viz.ui.training_tab.run_live_training": "train",
    }


def test_real_handlers_ask_for_their_durations_through_the_decorator(monkeypatch):
    """With a fake ``spaces`` in place the tabs' own handlers (re-imported) ask for the estimate of their request:
    a generation of the bundled policy and a one-step live training (a generator)."""
    import importlib

    from mrtpo_viz.ui import relevance_tab, training_tab

    fake = FakeSpaces()
    monkeypatch.setitem(sys.modules, "spaces", fake)
    try:
        gen_tab, train_tab = importlib.reload(relevance_tab), importlib.reload(training_tab)
        args = ("tiny-mrtpo", "tool_calling", 0, "What is the weather in Paris?", 0.0, 1.0, 8, 0)
        response, status = gen_tab.generate(*args)
        assert isinstance(response, str) and "Generated" in status
        out = list(train_tab.run_live_training("tiny-mrtpo", "tool_calling", ["gdpo"], 1, 5e-4, 2, 8, "none"))
        assert out and out[-1][3].startswith("**Done**: 1 steps of gdpo")
    finally:
        monkeypatch.delitem(sys.modules, "spaces")
        importlib.reload(relevance_tab), importlib.reload(training_tab)  # back to the undecorated handlers
    assert fake.asked == [zerogpu.estimate_seconds("replay", args, {}), zerogpu.MIN_S + 1 * zerogpu.PER_STEP_S]
    assert fake.asked[0] == zerogpu.MIN_S  # a short prompt asks for the minimum


def test_the_default_checkpoint_is_loaded_at_start_up_only_on_zerogpu(monkeypatch):
    calls = []
    monkeypatch.delenv("SPACES_ZERO_GPU", raising=False)
    assert zerogpu.preload(lambda: calls.append("load")) is False and calls == []
    monkeypatch.setenv("SPACES_ZERO_GPU", "true")
    assert zerogpu.preload(lambda: calls.append("load")) is True and calls == ["load"]
