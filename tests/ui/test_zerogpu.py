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
