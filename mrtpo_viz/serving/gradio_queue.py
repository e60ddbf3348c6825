"""What the server reads and drops inside Gradio's queue and session store (Gradio 6), in one place.

Gradio keeps, per session hash: the event ids a client has joined and not yet read the result of
(``Queue.pending_event_ids_session``), those results (``Queue.pending_messages_per_session``), the events still
queued or running (``Queue.event_ids_to_events``) and a copy of the app's component state
(``App.state_holder``). These are Gradio's internals: ``tests/serving/test_gradio_queue.py`` runs each function
against the installed Gradio, so an upgrade that moves them fails a test instead of silently lifting a cap.
"""

from __future__ import annotations

from starlette.routing import compile_path, get_route_path

API = "/gradio_api"
ROUTES = [
    ("POST", "/upload", "upload"),
    ("POST", "/queue/join", "join"),
    ("POST", "/call/v2/{api_name}", "call"),
    ("POST", "/call/v2/{api_name}/", "call"),
    ("POST", "/call/{api_name}", "call"),
    ("POST", "/call/{api_name}/", "call"),
    ("POST", "/run/{api_name}", "run"),
    ("POST", "/run/{api_name}/", "run"),
    ("POST", "/api/{api_name}", "run"),
    ("POST", "/api/{api_name}/", "run"),
    ("POST", "/component_server", "component_server"),
    ("POST", "/component_server/", "component_server"),
    ("POST", "/stream/{event_id}", "stream"),
    ("POST", "/cancel", "cancel"),
    ("POST", "/reset", "reset"),
    ("POST", "/reset/", "reset"),
    ("GET", "/queue/data", "data"),
    ("GET", "/heartbeat/{session_hash}", "heartbeat"),
    ("GET", "/call/{api_name}/{event_id}", "result"),
    ("GET", "/file={path_or_url:path}", "file"),
]
"""Gradio's routes that the guard tells apart (method, path under ``/gradio_api``, name), as Gradio 6 registers
them; every other request is ``None`` (1 MiB, no session)."""
_COMPILED = [(m, compile_path(API + p)[0], name) for m, p, name in ROUTES]


def route(scope) -> tuple[str | None, dict]:
    """The name of the Gradio route this request reaches (``upload``, ``join``, ``call``, ...) and its path
    parameters, matched as the app's router matches it: on the decoded path without the root path, with
    Starlette's own path compiler on the templates Gradio registers; (None, {}) for any other request."""
    path, method = get_route_path(scope), scope.get("method")
    for m, regex, name in _COMPILED:
        if m == method and (found := regex.match(path)):
            return name, found.groupdict()
    return None, {}


def _queue(app):
    return app.get_blocks()._queue


def pending(app, session: str) -> int:
    """Events of ``session`` whose result its client has not read yet (queued, running or finished)."""
    return len(_queue(app).pending_event_ids_session.get(session, ()))


def busy(app, session: str) -> bool:
    """Whether ``session`` has an event still queued or running."""
    queue = _queue(app)
    return any(e in queue.event_ids_to_events for e in queue.pending_event_ids_session.get(session, ()))


def forget(app, session: str) -> None:
    """Drop what Gradio holds for ``session``: unread results, their event ids (only if none is still queued or
    running), and its component state."""
    queue = _queue(app)
    if not busy(app, session):
        queue.pending_event_ids_session.pop(session, None)
        queue.pending_messages_per_session.pop(session, None)
    holder = app.state_holder
    with holder.lock:
        holder.session_data.pop(session, None)
        holder.time_last_used.pop(session, None)


def upload_folder(app) -> str:
    """Where Gradio's upload route stores files (``GRADIO_TEMP_DIR``)."""
    return str(app.uploaded_file_dir)


def upload_error(message: str) -> Exception:
    """The exception that makes Gradio's upload parser delete the files it has written so far (it cleans up on
    this one only; any other leaves its temporary files in the upload folder)."""
    from starlette.formparsers import MultiPartException

    return MultiPartException(message)
