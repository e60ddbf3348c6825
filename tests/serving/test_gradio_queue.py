"""What the guard reads inside Gradio (mrtpo_viz.serving.gradio_queue), against the installed Gradio: the routes
it tells apart are Gradio's, and the queue and session store are where it reads and trims them. A Gradio upgrade
that moves either fails here rather than silently lifting a cap."""

import time

import httpx
import pytest

gr = pytest.importorskip("gradio")

from mrtpo_viz.serving import gradio_queue as gq  # noqa: E402

from ..apphelpers import free_port  # noqa: E402


def _registered(app) -> set[tuple[str, str]]:
    """(method, path) of every route the app serves, through routers included with a prefix."""
    out = set()

    def walk(routes, prefix=""):
        for r in routes:
            inner = getattr(r, "original_router", None) or getattr(r, "router", None)
            if inner is not None and not hasattr(r, "methods"):
                context = getattr(r, "include_context", None)
                walk(inner.routes, prefix + (getattr(context, "prefix", "") or getattr(r, "path", "") or ""))
            elif hasattr(r, "path"):
                for m in getattr(r, "methods", None) or ():
                    out.add((m, prefix + r.path))

    walk(app.router.routes)
    return out


@pytest.fixture(scope="module")
def demo():
    with gr.Blocks() as demo:
        box = gr.Textbox()
        gr.Button().click(lambda x: x, box, box, api_name="echo")
    _, url, _ = demo.launch(prevent_thread_lock=True, server_port=free_port(), quiet=True)
    demo.url = url
    yield demo
    demo.close()


def test_every_route_the_guard_tells_apart_is_one_gradio_serves(demo):
    served = _registered(demo.app)
    missing = [(m, gq.API + p) for m, p, _ in gq.ROUTES if (m, gq.API + p) not in served]
    assert missing == [], missing


@pytest.mark.parametrize(
    "method, path, name",
    [
        ("POST", "/gradio_api/upload", "upload"),
        ("POST", "/gradio_api/call/upload", "call"),
        ("POST", "/gradio_api/call/v2/echo", "call"),
        ("GET", "/gradio_api/call/echo/abc", "result"),
        ("POST", "/gradio_api/upload/", None),
        ("POST", "/gradio_api/queue/join/upload", None),
        ("POST", "/upload", None),
        ("GET", "/gradio_api/upload", None),
    ],
)
def test_a_request_is_told_by_its_route_not_by_its_suffix(method, path, name):
    assert gq.route({"type": "http", "method": method, "path": path, "root_path": ""})[0] == name


def test_the_queue_and_session_store_are_read_and_trimmed_where_gradio_keeps_them(demo):
    body = {"data": ["x"], "fn_index": 0, "session_hash": "probe1", "event_data": None, "trigger_id": None}
    assert httpx.post(f"{demo.url}gradio_api/queue/join", json=body, timeout=30).status_code == 200
    deadline = time.monotonic() + 10
    while gq.busy(demo.app, "probe1") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gq.pending(demo.app, "probe1") == 1 and not gq.busy(demo.app, "probe1")  # finished, not read
    assert "probe1" in demo._queue.pending_messages_per_session and "probe1" in demo.app.state_holder
    gq.forget(demo.app, "probe1")
    assert gq.pending(demo.app, "probe1") == 0
    assert "probe1" not in demo._queue.pending_messages_per_session and "probe1" not in demo.app.state_holder
    assert gq.upload_folder(demo.app) == str(demo.app.uploaded_file_dir)
