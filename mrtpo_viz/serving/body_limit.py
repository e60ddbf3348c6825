"""Request bodies: unambiguous framing, and a byte cap counted on the bytes that really arrive.

Gradio validates, copies and stores every input of an event in its event loop before any handler runs: a 3.5 MB
JSON table of 200,000 rows kept the whole server busy for seconds, for every session, before the handler's own cap
(256 rows) could refuse it. The largest request the app's forms can produce (prompt, response and six information
texts at their caps, escaped) is a few hundred kilobytes, so every route takes at most :data:`MAX_BODY_BYTES`,
except Gradio's upload route, whose cap is the upload cap (:mod:`.guard` picks the cap by the route the request
reaches, not by how its path ends).

What is counted is the body as the server decodes it, chunk by chunk, never the length a header declares:

- a request with both ``Content-Length`` and ``Transfer-Encoding`` is refused (HTTP 400, RFC 9112 section 6.3:
  its length is ambiguous; a server that trusted the first while decoding the second read 200 MiB past a
  "100-byte" request), and so is a ``Content-Length`` that is not one whole number;
- a declared length over the cap is refused before any of the body is read (HTTP 413);
- every other body is counted as it streams, and refused as soon as it passes the cap, whatever its headers say.
"""

from __future__ import annotations

import json

MAX_BODY_BYTES = 1 * 2**20
"""Largest request body of every route but Gradio's upload route (which the upload cap bounds, :mod:`.uploads`)."""


def too_large_message(limit: int, what: str = "This request") -> str:
    size = f"{limit / 2**20:g} MiB" if limit >= 2**20 else f"{limit:,} bytes"
    return (
        f"{what} is over {size}: the app's inputs are capped far below that (send files through an upload field; "
        "a rewards table has at most 256 rows)."
    )


def framing_problem(headers) -> str | None:
    """Why a request's framing is refused (RFC 9112 section 6.3), or None: both ``Content-Length`` and
    ``Transfer-Encoding``, several different lengths, or a length that is not a whole number."""
    lengths = {v.strip() for k, v in headers if k.lower() == b"content-length"}
    chunked = any(k.lower() == b"transfer-encoding" for k, _ in headers)
    if lengths and chunked:
        return (
            "This request has both Content-Length and Transfer-Encoding headers: its length is ambiguous "
            "(RFC 9112, section 6.3), so it is refused. Send one of them."
        )
    if len(lengths) > 1 or any(not v.isdigit() or len(v) > 18 for v in lengths):
        return "This request's Content-Length is not one whole number of bytes, so it is refused."
    return None


def declared_length(headers) -> int | None:
    """The ``Content-Length`` of a request whose framing passed :func:`framing_problem`; None without one."""
    for k, v in headers:
        if k.lower() == b"content-length":
            return int(v.strip())
    return None


class BodyTooLarge(Exception):
    """Raised from ``receive`` when a body passes its cap (the app never sees the byte that passed it)."""


class CountedBody:
    """An ASGI ``receive`` that counts the body's bytes as they arrive and raises ``error()`` the moment they pass
    ``limit``; after that (or after ``error`` was raised for a dropped connection) the app sees a disconnect."""

    def __init__(self, receive, limit: int, error=BodyTooLarge, on_disconnect=None):
        self.receive, self.limit, self.error, self.on_disconnect = receive, limit, error, on_disconnect
        self.seen, self.over, self.done = 0, False, False

    async def __call__(self):
        if self.over:
            return {"type": "http.disconnect"}
        message = await self.receive()
        if message["type"] == "http.request":
            self.seen += len(message.get("body", b""))
            if self.seen > self.limit:
                self.over = True
                raise self.error(too_large_message(self.limit))
            self.done = not message.get("more_body", False)
        elif message["type"] == "http.disconnect" and not self.done and self.on_disconnect is not None:
            raise self.on_disconnect("The client left before the body was complete.")
        return message


async def read_body(receive, limit: int) -> tuple[bytes, bool]:
    """The whole body, counted as it streams: (body, True), or (what came, False) once it passes ``limit``."""
    parts, seen = [], 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts), True
        chunk = message.get("body", b"")
        seen += len(chunk)
        if seen > limit:
            return b"", False
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts), True


def replay(body: bytes, receive):
    """An ASGI ``receive`` that hands ``body`` on in one message, then what ``receive`` says (a disconnect)."""
    sent = [False]

    async def again():
        if not sent[0]:
            sent[0] = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return again


async def answer(send, status: int, message: str, headers=()) -> None:
    """A JSON answer ``{"detail": message}`` (FastAPI's shape for errors, which Gradio's clients show)."""
    body = json.dumps({"detail": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
