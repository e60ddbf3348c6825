"""Fair turns at the model (mrtpo_viz.serving.turns): off by default, mutual exclusion of forwards, a short job
served within about one quantum of a long one, and chunked replay forwards equal to the one-batch forward. Timing
checks count forwards and compare orders, never wall seconds."""

import threading
import time

import pytest
import torch

from mrtpo_viz.serving import turns


@pytest.fixture
def turns_on():
    turns.enable()
    yield
    turns.enable(False)


def test_off_by_default_turns_order_nothing():
    assert not turns.enabled()
    together = threading.Barrier(2, timeout=10)  # passed only if both forwards are inside at once
    inside = []

    def work():
        with turns.model_job(), turns.model_forward():
            together.wait()
            inside.append(1)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(inside) == 2 and not together.broken


def test_a_short_job_waits_about_one_quantum_not_for_a_whole_long_job(turns_on):
    active, overlaps, order = [0], [0], []
    lock = threading.Lock()
    arrived = threading.Event()

    def fwd(who, seconds):
        with turns.model_forward():
            with lock:
                active[0] += 1
                overlaps[0] = max(overlaps[0], active[0])
                order.append(who)
            time.sleep(seconds)
            with lock:
                active[0] -= 1

    def long_job():
        with turns.model_job():
            for i in range(30):  # 1.5 s of forwards
                if i == 2:
                    arrived.set()  # the short job comes while the long one holds the model
                fwd("long", 0.05)

    def short_job():
        arrived.wait(10)
        with turns.model_job():
            fwd("short", 0.05)

    threads = [threading.Thread(target=long_job), threading.Thread(target=short_job)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps[0] == 1  # never two forwards at once
    # served after the long job's current quantum (0.2 s: 4 forwards of 0.05 s, plus the one under way), not
    # after its 30 forwards
    before = order.index("short")
    assert before - 2 <= turns.QUANTUM_S / 0.05 + 2, order
    assert order.count("long") - before >= 20, order


def test_a_forward_outside_a_job_takes_its_own_turn(turns_on):
    order = []

    def job():
        with turns.model_job():
            order.append("job-start")
            time.sleep(0.3)
            order.append("job-end")

    t = threading.Thread(target=job)
    t.start()
    time.sleep(0.05)
    with turns.model_forward():
        order.append("forward")
    t.join()
    assert order == ["job-start", "job-end", "forward"]


def test_chunked_replay_forward_equals_the_one_batch_forward(tiny_policy, monkeypatch):
    """With turns on, a batch over CHUNK_TOKENS positions runs in chunks of branches: same logits. Tolerance 1e-5:
    batch size changes the matmul blocking, so float32 sums differ in the last bits."""
    from mrtpo_viz.relevance import replay
    from mrtpo_viz.tasks import load_examples

    ex = load_examples("tool_calling", "test")[0]
    args = (ex, ex.reference, list(ex.verifiers))
    whole = replay(tiny_policy, *args, control="placebo")
    monkeypatch.setattr(turns, "CHUNK_TOKENS", 40)  # a few branches per chunk
    turns.enable()
    try:
        chunked = replay(tiny_policy, *args, control="placebo")
    finally:
        turns.enable(False)
    assert torch.allclose(whole.scores, chunked.scores, atol=1e-5)
    assert whole.scores.abs().max() > 1e-3  # the replay did see a difference between branches


def test_a_request_whose_client_left_stops_at_its_next_forward():
    """The threat: a replay at the caps that goes on for seconds after its client left. With the app's check
    (``serving.gradio_context.client_gone``: Gradio marks the session's jobs not alive when its event stream
    closes), the handler's next forward raises RequestCancelled."""
    import httpx

    import gradio as gr
    from mrtpo_viz.serving.gradio_context import client_gone

    from ..apphelpers import free_port

    seen = {"forwards": 0, "cancelled": False}

    def work(x):
        try:
            for _ in range(200):  # 20 s of "forwards" if nothing stops it
                with turns.model_forward():
                    seen["forwards"] += 1
                    time.sleep(0.1)
        except turns.RequestCancelled:
            seen["cancelled"] = True
        return x

    with gr.Blocks() as demo:
        box = gr.Textbox()
        gr.Button().click(work, box, box, api_name="work")
    _, url, _ = demo.launch(prevent_thread_lock=True, server_port=free_port(), quiet=True)
    turns.enable()
    turns.on_cancel(client_gone)
    try:
        join = httpx.post(
            f"{url}gradio_api/queue/join",
            json={"data": ["a"], "fn_index": 0, "session_hash": "gone", "event_data": None, "trigger_id": None},
            timeout=10,
        )
        assert join.status_code == 200
        with httpx.stream("GET", f"{url}gradio_api/queue/data", params={"session_hash": "gone"}, timeout=10) as r:
            for line in r.iter_lines():
                if "process_starts" in line:
                    break
        # the stream is closed: the client left
        deadline = time.monotonic() + 10
        while not seen["cancelled"] and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        turns.on_cancel(None)
        turns.enable(False)
        demo.close()
    assert seen["cancelled"] and seen["forwards"] < 100, seen
