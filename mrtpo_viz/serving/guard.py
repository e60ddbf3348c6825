"""The app's one ASGI middleware: every HTTP request passes here before Gradio reads any of it.

Per request, in order:

1. **Framing** (:mod:`.body_limit`): both ``Content-Length`` and ``Transfer-Encoding``, or a malformed length, is a
   400; nothing else of the request is read.
2. **The route decides the cap**: the request is matched against the app's routes the way the app will match it
   (:func:`.gradio_queue.route_path`). Gradio's upload route takes the upload cap and the client's upload share
   (:mod:`.uploads`); every other route takes :data:`.body_limit.MAX_BODY_BYTES`. A declared length over the cap
   is a 413 at once; otherwise the body is counted as it streams and refused the moment it passes the cap.
3. **Sessions** (:mod:`.sessions`): a session hash in a body, a query or a path is checked (length, characters);
   each session is recorded under the client's address, and one past the caps makes an idle one go, with what
   Gradio held for it.
4. **Requests in flight per client address**: a request that would queue an event (``/queue/join``,
   ``/call/...``) while the client already has :data:`IN_FLIGHT_PER_CLIENT` events queued, running or finished
   but unread is a 429, before Gradio queues it.
5. **Upload paths**: the upload route answers with aliases, and an alias in a request is turned back into the
   stored file's path (:mod:`.uploads`).

The client address is the connection's peer as the server reports it: uvicorn replaces it by the
``X-Forwarded-For`` address only for a proxy listed in ``FORWARDED_ALLOW_IPS`` (loopback by default).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from urllib.parse import parse_qs

from . import gradio_queue as gq
from . import sessions, uploads
from .body_limit import (
    MAX_BODY_BYTES,
    CountedBody,
    answer,
    declared_length,
    framing_problem,
    read_body,
    replay,
    too_large_message,
)

IN_FLIGHT_PER_CLIENT = 8
"""Events one client address may have queued, running or finished but unread at once (Gradio hands the model's
group 16 worker threads: one client can hold at most half of them)."""
JOIN_ROUTES = {"join", "call"}
"""Routes that queue an event (:data:`.gradio_queue.ROUTES`)."""
MINTING_ROUTES = {"call"}
"""Of those, the ones whose session Gradio draws itself (the event's id)."""
BODY_ROUTES = JOIN_ROUTES | {"run", "component_server", "stream", "cancel", "reset"}
"""Routes whose JSON body may carry a session hash or a file input: read whole (at most 1 MiB) and checked."""
SESSION_PARAMS = ("session_hash",)


@dataclass(frozen=True)
class ServingLimits:
    """The guard's caps; ``mrtpo_viz.ui.launch_options`` fills the upload ones from the operator settings."""

    body_bytes: int = MAX_BODY_BYTES
    upload_bytes: int = 5 * 2**20
    """One upload request, files and fields (``MRTPO_MAX_UPLOAD_MB``)."""
    upload_window_s: float = 3600.0
    """How long Gradio keeps an upload (the app's ``delete_cache``): the client share's window."""
    client_share: int = uploads.CLIENT_SHARE
    in_flight: int = IN_FLIGHT_PER_CLIENT
    sessions_per_client: int = sessions.SESSIONS_PER_CLIENT
    max_sessions: int = sessions.MAX_SESSIONS
    session_ttl_s: float = sessions.SESSION_TTL_S


def client_of(scope) -> str:
    peer = scope.get("client")
    return str(peer[0]) if peer else "unknown"


class ServingGuard:
    """ASGI middleware (``Middleware(ServingGuard, limits=...)``); one per app, holding its ledgers."""

    def __init__(self, app, limits: ServingLimits | None = None):
        self.app, self.limits = app, limits or ServingLimits()
        lim = self.limits
        self.sessions = sessions.SessionLedger(lim.sessions_per_client, lim.max_sessions, lim.session_ttl_s)
        self.uploads = uploads.UploadShare(lim.client_share * lim.upload_bytes, lim.upload_window_s)
        self._joining: dict[str, int] = {}  # per client: joins passed on to Gradio and not answered yet

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = scope.get("headers") or []
        problem = framing_problem(headers)
        if problem:
            return await answer(send, 400, problem)
        path, params = gq.route(scope)
        client = client_of(scope)
        if path == "upload":
            return await self._upload(scope, receive, send, client)
        for key in SESSION_PARAMS:
            values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get(key, []) + (
                [params[key]] if key in params else []
            )
            for value in values:
                if problem := sessions.hash_problem(value):
                    return await answer(send, 400, problem)
                if value in self.sessions:
                    self.sessions.touch(client, value, time.monotonic())
        if path == "file":
            scope = self._resolve_file(scope, params.get("path_or_url", ""))
        if path in BODY_ROUTES:
            return await self._body_route(scope, receive, send, client, path)
        return await self._counted(scope, receive, send)

    # ------------------------------------------------------------------------------------------- every other route

    async def _counted(self, scope, receive, send, limit: int | None = None):
        limit = self.limits.body_bytes if limit is None else limit
        length = declared_length(scope.get("headers") or [])
        if length is not None and length > limit:
            return await answer(send, 413, too_large_message(limit))
        counted, started = CountedBody(receive, limit), [False]

        async def guarded(message):
            if counted.over:
                return  # the app's own answer to the cut body gives way to the 413 below
            started[0] = started[0] or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, guarded)
        except Exception:
            if not counted.over:
                raise
        if counted.over and not started[0]:
            await answer(send, 413, too_large_message(limit))

    def _resolve_file(self, scope, name: str):
        if not name.startswith(uploads.ALIAS):
            return scope
        real = uploads.resolve(name, gq.upload_folder(scope["app"]))
        new_path = scope["path"][: len(scope["path"]) - len(name)] + real
        return {**scope, "path": new_path, "raw_path": new_path.encode()}

    # ------------------------------------------------------------------------------------------- JSON routes

    async def _body_route(self, scope, receive, send, client: str, path: str):
        limit = self.limits.body_bytes
        length = declared_length(scope.get("headers") or [])
        if length is not None and length > limit:
            return await answer(send, 413, too_large_message(limit))
        body, ok = await read_body(receive, limit)
        if not ok:
            return await answer(send, 413, too_large_message(limit))
        content_type = dict(scope.get("headers") or []).get(b"content-type", b"")
        if content_type.startswith(b"multipart/"):
            return await answer(send, 415, "Files go through the upload route (/gradio_api/upload), not this one.")
        app, now = scope["app"], time.monotonic()
        if body:  # parsed whole: a key may be spelt with escapes ("session\\u005fhash")
            try:
                session = json.loads(body).get("session_hash")
            except (ValueError, AttributeError):
                session = None  # not a JSON object: Gradio answers it
            if session is not None:
                if problem := sessions.hash_problem(session):
                    return await answer(send, 400, problem)
                self._forget(app, self.sessions.touch(client, session, now, busy=lambda s: gq.busy(app, s)))
        if path in JOIN_ROUTES and hasattr(app, "get_blocks"):
            self._forget(app, self.sessions.settle(client, lambda s: gq.pending(app, s)))
            waiting = sum(gq.pending(app, s) for s in self.sessions.sessions_of(client))
            waiting += self._joining.get(client, 0)  # joins on their way into Gradio's queue count too
            if waiting >= self.limits.in_flight:
                return await answer(
                    send,
                    429,
                    f"This address has {waiting} requests queued, running or with a result not read yet; at most "
                    f"{self.limits.in_flight} at once. Read a result before sending more.",
                    headers=[(b"retry-after", b"1")],
                )
        if hasattr(app, "uploaded_file_dir"):
            body = uploads.resolve_inputs(body, gq.upload_folder(app))
        scope = _with_length(scope, len(body))
        if path not in JOIN_ROUTES:
            return await self.app(scope, replay(body, receive), send)
        self._joining[client] = self._joining.get(client, 0) + 1
        try:
            if path not in MINTING_ROUTES:
                return await self.app(scope, replay(body, receive), send)
            captured = await _captured(self.app, scope, replay(body, receive))
        finally:
            self._joining[client] -= 1
            if not self._joining[client]:
                del self._joining[client]
        try:
            event = json.loads(captured.body).get("event_id") if captured.status == 200 else None
        except (ValueError, AttributeError):
            event = None
        if isinstance(event, str) and not sessions.hash_problem(event):
            self._forget(app, self.sessions.touch(client, event, now, minted=True, busy=lambda s: gq.busy(app, s)))
        await captured.send_to(send)

    def _forget(self, app, gone: list[str]) -> None:
        for session in gone:
            gq.forget(app, session)

    # ------------------------------------------------------------------------------------------- the upload route

    async def _upload(self, scope, receive, send, client: str):
        now, lim = time.monotonic(), self.limits
        left = self.uploads.left(client, now)
        cap = min(lim.upload_bytes, left)
        limit = cap + uploads.FORM_SLACK
        message = uploads.over_message(lim.upload_bytes, left, self.uploads.share_bytes)
        length = declared_length(scope.get("headers") or [])
        if cap <= 0 or (length is not None and length > limit):
            return await answer(send, 413, message)
        counted = CountedBody(receive, limit, error=gq.upload_error, on_disconnect=gq.upload_error)
        captured = await _captured(self.app, scope, counted)
        if counted.over:
            return await answer(send, 413, message)
        if captured.status == 200:
            self.uploads.record(client, counted.seen, now)
            aliased = uploads.alias_answer(captured.body, gq.upload_folder(scope["app"]))
            if aliased is not None:
                captured.replace_body(aliased)
        await captured.send_to(send)


def _with_length(scope, n: int):
    headers = [
        (k, v) for k, v in scope.get("headers") or [] if k.lower() not in (b"content-length", b"transfer-encoding")
    ]
    return {**scope, "headers": [*headers, (b"content-length", str(n).encode())]}


class _Captured:
    """A whole (small) response held back to be read or changed before it is sent."""

    def __init__(self):
        self.start, self.chunks = None, []

    @property
    def status(self) -> int | None:
        return self.start["status"] if self.start else None

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)

    def replace_body(self, body: bytes) -> None:
        self.chunks = [body]
        headers = [(k, v) for k, v in self.start["headers"] if k.lower() != b"content-length"]
        self.start = {**self.start, "headers": [*headers, (b"content-length", str(len(body)).encode())]}

    async def send_to(self, send) -> None:
        if self.start is None:
            return
        await send(self.start)
        await send({"type": "http.response.body", "body": self.body})


async def _captured(app, scope, receive) -> _Captured:
    held = _Captured()

    async def keep(message):
        if message["type"] == "http.response.start":
            held.start = message
        elif message["type"] == "http.response.body":
            held.chunks.append(message.get("body", b""))

    try:
        await app(scope, receive, keep)
    except Exception:
        if getattr(receive, "over", False):
            return held  # the body passed its cap: the caller answers
        raise
    return held
