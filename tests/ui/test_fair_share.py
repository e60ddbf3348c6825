"""The fair-share gate (mrtpo_viz.ui.fair_share): the least-used session goes first, a heavy session leaves a slot
free, use decays, generator handlers hold their slot to the end, and the wrapper keeps Gradio's view of a handler."""

import inspect
import threading
import time

import gradio as gr

from mrtpo_viz.ui import fair_share
from mrtpo_viz.ui.fair_share import FairGate, fair


def _wait_for(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def test_the_least_used_session_starts_first():
    gate = FairGate(slots=1, half_life_s=60, heavy_s=1e9)
    gate.leave("heavy", 5.0), gate.leave("light", 0.1)
    gate.running = 1  # (leave() above counted down) hold the one slot while both queue
    order = []

    def go(session):
        gate.enter(session)
        order.append(session)
        gate.leave(session, 0.0)

    threads = [threading.Thread(target=go, args=(s,)) for s in ("heavy", "light")]
    threads[0].start()
    _wait_for(lambda: len(gate._waiting) == 1)
    threads[1].start()  # arrives later, has used less
    _wait_for(lambda: len(gate._waiting) == 2)
    with gate._cond:
        gate.running = 0
        gate._cond.notify_all()
    for t in threads:
        t.join(5)
    assert order == ["light", "heavy"]


def test_a_heavy_session_leaves_one_slot_free():
    gate = FairGate(slots=2, half_life_s=60, heavy_s=1.0)
    for session, seconds in (("hostile", 10.0), ("a", 1.5), ("b", 2.0), ("c", 1.5)):
        gate.leave(session, seconds)
    gate.running = 1  # (leave counted down) one light request is running
    now = time.monotonic()
    assert gate._heavy("hostile", now) and not gate._heavy("b", now)  # over 2x the median (2.0), and not
    started = threading.Event()

    def heavy():
        gate.enter("hostile")
        started.set()
        gate.leave("hostile", 0.0)

    t = threading.Thread(target=heavy)
    t.start()
    assert not started.wait(0.3)  # one slot is free, but it is the light sessions' slot
    gate.enter("light")  # a light session still gets in
    assert gate.running == 2
    gate.leave("light", 0.01)
    gate.leave("other", 0.0)  # the first light request ends too: two slots free, the heavy one may start
    t.join(5)
    assert started.is_set()


def test_heavy_sessions_share_one_slot():
    gate = FairGate(slots=3, half_life_s=60, heavy_s=1.0)
    for session, seconds in (("h1", 10.0), ("h2", 10.0), ("a", 1.0), ("b", 1.0), ("c", 1.0)):
        gate.leave(session, seconds)
    gate.running = 0
    assert gate.enter("h1") is True  # admitted as heavy
    second = threading.Event()
    t = threading.Thread(target=lambda: (gate.enter("h2"), second.set()))
    t.start()
    assert not second.wait(0.3)  # two slots free, but a heavy request already runs
    assert gate.enter("a") is False  # light sessions still get in
    gate.leave("h1", 0.0, True)
    t.join(5)
    assert second.is_set()


def test_when_every_session_is_busy_none_is_heavy():
    """Sessions that all use the server alike (benign sessions looping) reserve nothing: no one is over twice the
    median, however long their requests."""
    gate = FairGate(slots=2, half_life_s=60, heavy_s=1.0)
    for session, seconds in (("a", 8.0), ("b", 9.0), ("c", 10.0)):
        gate.leave(session, seconds)
    now = time.monotonic()
    assert not any(gate._heavy(s, now) for s in "abc")


def test_use_decays_with_the_half_life():
    gate = FairGate(slots=1, half_life_s=10)
    gate.running = 1
    gate.leave("s", 8.0)
    now = time.monotonic()
    # recorded a moment before `now`: within 1e-3 of the exact halves
    assert abs(gate.use("s", now + 10) - 4.0) < 1e-3
    assert abs(gate.use("s", now + 20) - 2.0) < 1e-3
    assert gate.use("never-seen") == 0.0


def test_wrapped_handlers_keep_their_signature_and_hold_the_slot(monkeypatch):
    gate = FairGate(slots=1)
    monkeypatch.setattr(fair_share, "GATE", gate)

    def handler(text: str, request: gr.Request):
        """Doc."""
        assert gate.running == 1
        return text.upper()

    def stream(n: int):
        for i in range(n):
            assert gate.running == 1
            yield i

    h, g = fair(handler), fair(stream)
    assert inspect.signature(h) == inspect.signature(handler) and h.__doc__ == "Doc."
    assert inspect.isgeneratorfunction(g)
    assert h("ab", None) == "AB" and gate.running == 0
    assert list(g(3)) == [0, 1, 2] and gate.running == 0
    assert gate.use("local") > 0  # outside a Gradio request every call shares one key
