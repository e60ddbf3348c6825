"""Fair turns at the model (mrtpo_viz.policy.turns): off by default, mutual exclusion of forwards, a short job
served within about one quantum of a long one, and chunked replay forwards equal to the one-batch forward."""

import threading
import time

import pytest
import torch

from mrtpo_viz.policy import turns


@pytest.fixture
def turns_on():
    turns.enable()
    yield
    turns.enable(False)


def test_off_by_default_turns_order_nothing():
    assert not turns.enabled()
    inside = []

    def work():
        with turns.model_job(), turns.model_forward():
            inside.append(1)
            time.sleep(0.2)

    threads = [threading.Thread(target=work) for _ in range(2)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(inside) == 2 and time.monotonic() - start < 0.35  # both slept at once


def test_a_short_job_waits_about_one_quantum_not_for_a_whole_long_job(turns_on):
    active, overlaps, done = [0], [0], {}
    lock = threading.Lock()

    def fwd(seconds):
        with turns.model_forward():
            with lock:
                active[0] += 1
                overlaps[0] = max(overlaps[0], active[0])
            time.sleep(seconds)
            with lock:
                active[0] -= 1

    def long_job():
        with turns.model_job():
            for _ in range(30):  # 1.5 s of forwards
                fwd(0.05)
        done["long"] = time.monotonic()

    def short_job():
        time.sleep(0.1)  # arrives while the long job holds the model
        t0 = time.monotonic()
        with turns.model_job():
            fwd(0.05)
        done["short_wait"] = time.monotonic() - t0
        done["short"] = time.monotonic()

    threads = [threading.Thread(target=long_job), threading.Thread(target=short_job)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert overlaps[0] == 1  # never two forwards at once
    # served after the long job's current quantum (0.2 s) and one forward, not after its 1.5 s
    assert done["short_wait"] < turns.QUANTUM_S + 0.25, done
    assert done["short"] < done["long"] - 0.5


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
    (``ui.fair_share.client_gone``: Gradio marks the session's jobs not alive when its event stream closes), the
    handler's next forward raises RequestCancelled."""
    import httpx

    import gradio as gr
    from mrtpo_viz.ui.fair_share import client_gone

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
