"""Framing and counting of request bodies (mrtpo_viz.serving.body_limit), without a server."""

import asyncio

import pytest

from mrtpo_viz.serving.body_limit import BodyTooLarge, CountedBody, declared_length, framing_problem, read_body


@pytest.mark.parametrize(
    "headers, says",
    [
        ([(b"content-length", b"100"), (b"transfer-encoding", b"chunked")], "both Content-Length and Transfer"),
        ([(b"Transfer-Encoding", b"chunked"), (b"Content-Length", b"5")], "both Content-Length and Transfer"),
        ([(b"content-length", b"5"), (b"content-length", b"6")], "not one whole number"),
        ([(b"content-length", b"-1")], "not one whole number"),
        ([(b"content-length", b"9" * 40)], "not one whole number"),
    ],
)
def test_ambiguous_framing_is_refused(headers, says):
    assert says in framing_problem(headers)


def test_plain_framing_passes():
    assert framing_problem([(b"content-length", b"10")]) is None
    assert framing_problem([(b"transfer-encoding", b"chunked")]) is None
    assert framing_problem([(b"content-length", b"10"), (b"content-length", b"10")]) is None
    assert declared_length([(b"content-length", b" 10 ")]) == 10 and declared_length([]) is None


def _messages(*chunks):
    queue = [{"type": "http.request", "body": c, "more_body": i < len(chunks) - 1} for i, c in enumerate(chunks)]

    async def receive():
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    return receive


def test_a_counted_body_raises_the_moment_it_passes_its_cap_whatever_was_declared():
    counted = CountedBody(_messages(b"a" * 60, b"b" * 60, b"c" * 60), limit=100)

    async def drain():
        got = []
        while True:
            got.append(await counted())

    with pytest.raises(BodyTooLarge, match="over 100 bytes"):
        asyncio.run(drain())
    assert counted.over and counted.seen == 120
    assert asyncio.run(counted()) == {"type": "http.disconnect"}  # the app sees a disconnect after that


def test_read_body_takes_a_body_at_the_cap_and_refuses_one_byte_more():
    assert asyncio.run(read_body(_messages(b"a" * 50, b"b" * 50), 100)) == (b"a" * 50 + b"b" * 50, True)
    assert asyncio.run(read_body(_messages(b"a" * 50, b"b" * 51), 100)) == (b"", False)


def test_the_guard_answers_ambiguous_framing_with_400_before_the_app_reads_anything():
    """Whatever HTTP parser the server runs (h11 decoded such a request by its Transfer-Encoding), the guard
    refuses it: the app is never called."""
    from mrtpo_viz.serving.guard import ServingGuard

    called, sent = [], []

    async def app(scope, receive, send):
        called.append(scope)

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/gradio_api/queue/join",
        "root_path": "",
        "headers": [(b"content-length", b"100"), (b"transfer-encoding", b"chunked")],
        "client": ("10.0.0.1", 1),
    }
    asyncio.run(ServingGuard(app)(scope, _messages(b"x" * 5000), send))
    assert called == [] and sent[0]["status"] == 400
    assert b"both Content-Length and Transfer-Encoding" in sent[1]["body"]
