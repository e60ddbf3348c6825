"""The session ledger (mrtpo_viz.serving.sessions): hashes checked, sessions capped per client address and in all,
idle ones going first, expiry, and the sessions Gradio drew for one call forgotten once read. A fake clock: every
check is on counts and order."""

import pytest

from mrtpo_viz.serving.sessions import MAX_HASH_CHARS, SessionLedger, hash_problem


@pytest.mark.parametrize(
    "value, says",
    [
        ("a" * (MAX_HASH_CHARS + 1), f"at most {MAX_HASH_CHARS}"),
        ("", "not a non-empty string"),
        (12, "not a non-empty string"),
        ("a/b", "letters, digits"),
        ("é" * 4, "letters, digits"),
    ],
)
def test_a_hash_too_long_or_odd_is_refused(value, says):
    assert says in hash_problem(value)


@pytest.mark.parametrize("value", ["x7k2m9q1abc", "0f6a2b1c-7d4e-4a5b-9c8d-1e2f3a4b5c6d", "a" * MAX_HASH_CHARS])
def test_the_hashes_gradio_clients_draw_are_taken(value):
    assert hash_problem(value) is None


def test_a_client_keeps_at_most_its_sessions_and_the_oldest_idle_one_goes():
    ledger = SessionLedger(per_client=3, total=100, ttl_s=60)
    for i, s in enumerate(["s0", "s1", "s2"]):
        assert ledger.touch("c", s, now=i) == []
    ledger.touch("c", "s0", now=3)  # seen again: now the most recent
    busy = {"s1"}
    assert ledger.touch("c", "s3", now=4, busy=busy.__contains__) == ["s2"]  # s1 is busy: the next oldest goes
    assert ledger.sessions_of("c") == ["s1", "s0", "s3"]
    assert ledger.touch("other", "t0", now=5) == []  # another client is not affected
    assert ledger.hash_bytes() == 8


def test_the_total_is_capped_across_clients():
    ledger = SessionLedger(per_client=10, total=4, ttl_s=60)
    for i in range(4):
        ledger.touch(f"c{i}", f"s{i}", now=i)
    assert ledger.touch("c9", "s9", now=5) == ["s0"] and len(ledger) == 4


def test_sessions_unseen_for_the_ttl_are_forgotten():
    ledger = SessionLedger(per_client=10, total=10, ttl_s=60)
    ledger.touch("c", "old", now=0)
    ledger.touch("c", "new", now=50)
    assert ledger.touch("c", "later", now=61) == ["old"]
    assert "old" not in ledger and ledger.client_of("new") == "c"


def test_a_session_drawn_for_one_call_goes_once_read():
    ledger = SessionLedger()
    ledger.touch("c", "call1", now=0, minted=True)
    ledger.touch("c", "page", now=0)
    unread = {"call1": 1}
    assert ledger.settle("c", lambda s: unread.get(s, 0)) == []
    unread["call1"] = 0
    assert ledger.settle("c", lambda s: unread.get(s, 0)) == ["call1"]
    assert ledger.sessions_of("c") == ["page"]  # a page's session stays while idle
