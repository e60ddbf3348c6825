"""Request bodies over :data:`MAX_BODY_BYTES` are refused before Gradio reads them.

Gradio validates, copies and stores every input of an event in its event loop before any handler runs: a 3.5 MB
JSON table of 200,000 rows kept the whole server busy for seconds, for every session, before the handler's own cap
(256 rows) could refuse it. The largest request the app's forms can produce (prompt, response and six information
texts at their caps, escaped) is a few hundred kilobytes, so a body over the cap is refused with HTTP 413 while it
streams in. File uploads have their own cap (``MRTPO_MAX_UPLOAD_MB``, Gradio's ``max_file_size``) and pass here.
"""

from __future__ import annotations

import json

MAX_BODY_BYTES = 1 * 2**20
"""Largest request body (except file uploads, capped by ``MRTPO_MAX_UPLOAD_MB``)."""
MESSAGE = (
    f"This request is over {MAX_BODY_BYTES // 2**20} MiB: the app's inputs are capped far below that "
    "(send files through an upload field; a rewards table has at most 256 rows)."
)


class BodyLimit:
    """ASGI middleware: 413 for a body over ``limit`` bytes (by its Content-Length, or counted as it streams)."""

    def __init__(self, app, limit: int = MAX_BODY_BYTES):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("path", "").rstrip("/").endswith("/upload"):
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            return await _refuse(send)
        if length is not None:  # the server enforces the declared length
            return await self.app(scope, receive, send)
        # no Content-Length (chunked): read the body here, at most the cap, then hand it on
        messages, seen = [], 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            seen += len(message.get("body", b""))
            if seen > self.limit:
                return await _refuse(send)
            if not message.get("more_body", False):
                break

        async def replayed():
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replayed, send)


async def _refuse(send) -> None:
    body = json.dumps({"detail": MESSAGE}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
