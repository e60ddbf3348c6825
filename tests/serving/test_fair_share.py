"""The fair-share gate (mrtpo_viz.serving.fair_share): the least-used client, then session, starts first, a long
request gives its slot up, one request per session and per client, a hard cap on running requests, decaying use,
and wrapped handlers that keep Gradio's view of them. Every check is on order or counts, never on wall seconds
(each wait has a generous timeout only so that a broken gate fails instead of hanging)."""

import inspect
import threading
import time

import gradio as gr

from mrtpo_viz.serving import fair_share
from mrtpo_viz.serving.fair_share import FairGate, fair


def _wait_for(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def _record(gate, session, seconds, client=None):
    """Give ``session`` (of ``client``; itself by default) ``seconds`` of recent use (a request that ran that long,
    back-dated)."""
    token = gate.enter(session, client)
    who, _, _ = gate._running[token]
    gate._running[token] = (who, session, time.monotonic() - seconds)
    gate.leave(token)


def _start(gate, session, started, client=None):
    def go():
        token = gate.enter(session, client)
        started.append(session)
        return token

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


def test_the_least_used_session_starts_first():
    gate = FairGate(slots=1, long_s=60)
    _record(gate, "heavy", 5.0)
    _record(gate, "light", 0.1)
    hold = gate.enter("holder")  # the one slot is taken while both queue
    started = []
    _start(gate, "heavy", started)
    _wait_for(lambda: len(gate._waiting) == 1)
    _start(gate, "light", started)  # arrives later, has used less
    _wait_for(lambda: len(gate._waiting) == 2)
    gate.leave(hold)
    _wait_for(lambda: started)
    assert started == ["light"]


def test_a_long_request_gives_its_slot_up():
    """The threat: a request at the caps (8 s of replay) holding a slot while short requests wait for its end."""
    gate = FairGate(slots=1, long_s=0.3)
    long_one = gate.enter("hostile")
    started = []
    _start(gate, "benign", started)
    _wait_for(lambda: started)  # while the long request still runs: it did not wait for its end
    assert gate.running == 2 and gate.holding() == 1  # the long one gave its slot to the benign one
    gate.leave(long_one)


def test_one_request_per_session_and_a_hard_cap():
    gate = FairGate(slots=4, long_s=60, max_running=2)
    first = gate.enter("s")
    started = []
    _start(gate, "s", started)  # the same session: waits for its first request
    time.sleep(0.2)
    assert started == []
    other = gate.enter("t")  # another session gets in
    _start(gate, "u", started)  # a third would pass the hard cap of 2
    time.sleep(0.2)
    assert started == []
    gate.leave(first)
    _wait_for(lambda: len(started) == 1)
    assert started == ["s"] or started == ["u"]
    gate.leave(other)
    _wait_for(lambda: len(started) == 2)


def test_use_decays_with_the_half_life():
    gate = FairGate(slots=1)
    _record(gate, "s", 8.0)
    now = time.monotonic()
    # recorded a moment before `now`: within 1e-2 of the exact halves
    assert abs(gate.use("s", now + 10) - 4.0) < 1e-2
    assert abs(gate.use("s", now + 20) - 2.0) < 1e-2
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


def test_a_client_with_many_sessions_waits_behind_a_lighter_client():
    """The threat: one client with 16 fresh sessions, each as unused as a new visitor's. Use is counted per client
    address too: the client that has used the server least goes first, whatever its sessions."""
    gate = FairGate(slots=1, long_s=60, client_running=4)
    _record(gate, "a0", 5.0, client="attacker")
    hold = gate.enter("holder")
    started = []
    for i in range(1, 4):  # fresh sessions of the busy client, queued first
        _start(gate, f"a{i}", started, client="attacker")
        _wait_for(lambda i=i: len(gate._waiting) == i)
    _start(gate, "b", started, client="visitor")
    _wait_for(lambda: len(gate._waiting) == 4)
    gate.leave(hold)
    _wait_for(lambda: started)
    assert started == ["b"]


def test_a_client_runs_one_request_at_a_time_whatever_its_sessions():
    """A client's sessions share one share: its second request waits although slots are free, and another
    client's does not."""
    gate = FairGate(slots=4, long_s=60)
    first = gate.enter("s1", "attacker")
    started = []
    _start(gate, "s2", started, client="attacker")
    _wait_for(lambda: len(gate._waiting) == 1)
    other = gate.enter("t1", "visitor")  # passes the waiting one: another client
    assert started == [] and gate.running == 2
    gate.leave(first)
    _wait_for(lambda: started == ["s2"])
    gate.leave(other)


def test_use_is_kept_per_client_and_per_session():
    gate = FairGate(slots=1)
    _record(gate, "s1", 2.0, client="c")
    _record(gate, "s2", 1.0, client="c")
    now = time.monotonic()
    assert abs(gate.use("c", now) - 3.0) < 1e-2
    assert abs(gate.use("c", now, session="s2") - 1.0) < 1e-2
