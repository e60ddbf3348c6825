"""The Gradio request a handler thread serves: who sent it (client address, session), and whether its client left.

Both read Gradio's context variables (``gradio.context.LocalContext``), set for the thread that runs a handler;
outside a Gradio request (the Python API, tests) every call is one client, ``local``.
"""

from __future__ import annotations

LOCAL = "local"
"""The key of calls outside a Gradio request."""


def request_keys() -> tuple[str, str]:
    """(client address, session hash) of the request this thread serves; (``local``, ``local``) outside one. The
    address is the one the server reports (uvicorn: the peer, or ``X-Forwarded-For`` from a trusted proxy)."""
    try:
        from gradio.context import LocalContext

        request = LocalContext.request.get(None)
    except Exception:  # noqa: BLE001 -- outside Gradio: one shared key
        return LOCAL, LOCAL
    if request is None:
        return LOCAL, LOCAL
    session = getattr(request, "session_hash", None) or LOCAL
    try:
        client = request.client.host or LOCAL
    except AttributeError:
        client = LOCAL
    return str(client), str(session)


def client_gone() -> bool:
    """Whether the Gradio request this thread serves was abandoned (Gradio marks a session's jobs not alive when
    its client disconnects); False outside a request or where Gradio's queue does not say."""
    try:
        from gradio.context import LocalContext

        blocks, event_id = LocalContext.blocks.get(None), LocalContext.event_id.get(None)
        if blocks is None or event_id is None:
            return False
        for jobs in blocks._queue.active_jobs:
            for job in jobs or ():
                if getattr(job, "_id", None) == event_id:
                    return not job.alive
    except Exception:  # noqa: BLE001 -- Gradio's internals moved: never cancel rather than fail
        return False
    return False
