"""The Replay button's handler (``replay_live``) as a generator: for a slow replay the tokens first (no colour, the
status line naming verifier 1 of K), then each verifier's row, then exactly the one-shot handler's outputs; for the
bundled policy one yield. The ``/replay`` endpoint still returns the final outputs. A slow replay is forced by
setting the threshold (``PROGRESSIVE_FROM_S``) to 0 on the bundled policy."""

import json

import pandas as pd
import pytest
import torch

from mrtpo_viz.relevance import progressive
from mrtpo_viz.ui import relevance_tab as rt
from mrtpo_viz.ui.example_picker import get_example, prompt_text
from mrtpo_viz.tasks import get_verifier
from tests.apphelpers import free_port, patient_url_ok

TEMPLATE = "\n\n[Verifier: {title}] {info}"
TASK, INDEX = "instruction_following", 5  # K = 3 verifiers


def inputs(api: bool = False, task: str = TASK, index: int = INDEX, **change) -> list:
    ex = get_example(task, index)
    d = dict(
        checkpoint="tiny-mrtpo",
        task=task,
        index=index,
        prompt=prompt_text(ex),
        response=ex.reference,
        verifiers=list(ex.verifiers),
        position="user_end",
        metric="js",
        control="none",
        template=TEMPLATE,
    )
    d.update(change)
    infos = [get_verifier(n).info(ex) for n in d["verifiers"]]
    return [*d.values(), *([] if api else [None]), *(infos + [""] * 6)[:6]]


def payload(update) -> dict:
    value = update.get("value") if isinstance(update, dict) else update
    return json.loads(value)


def test_bundled_policy_replays_in_one_yield():
    out = list(rt.replay_live(*inputs()))
    assert len(out) == 1 and out[0][0].K == 3 and out[0][7].startswith("Replayed ")


@pytest.mark.parametrize("control", ["none", "others", "placebo"])
def test_a_slow_replay_shows_tokens_then_rows_then_the_one_shot_outputs(monkeypatch, control):
    monkeypatch.setattr(progressive, "PROGRESSIVE_FROM_S", 0.0)
    out = list(rt.replay_live(*inputs(control=control)))
    # tokens only, rows 1, 2, (3: only where a control's extra branches still run after it), the result
    assert len(out) == (5 if control == "placebo" else 4)
    first, last = out[0], out[-1]
    # (a) the tokens, no colour: every score null, the state emptied, the status naming verifier 1 of 3
    assert first[0] is None
    shown = payload(first[1])
    assert shown["tokens"] == last[0].tokens and shown["verifiers"] == last[0].verifiers
    assert shown["scores"] == [[None] * last[0].T] * 3
    assert first[7].startswith("Replaying verifier 1 of 3 (`ifeval.") and "tiny-mrtpo" in first[7]
    assert first[3] is None  # the heatmap cleared: it is drawn once, with the result
    assert list(first[5].columns) == list(rt.VERDICT_HEADERS) and first[5].empty  # the old verdicts cleared
    # (b) each verifier's row as it is done: the raw metric, the rows after it still null
    for done in range(1, len(out) - 1):
        scores = payload(out[done][1])["scores"]
        assert all(v is not None for row in scores[:done] for v in row)
        assert all(v is None for row in scores[done:] for v in row)
        assert scores[:done] == [
            [pytest.approx(v, abs=2e-3) for v in row] for row in last[0].raw_scores[:done].tolist()
        ]
        assert out[done][0] == {"__type__": "update"}  # the state stays empty until the end
        assert out[done][3] == {"__type__": "update"}  # no heatmap redraw per row
    assert out[1][7].startswith("Replaying verifier 2 of 3") and out[2][7].startswith("Replaying verifier 3 of 3")
    assert out[-2][7].startswith("All 3 verifiers replayed") == (control == "placebo")
    assert ("control comes at the end" in out[1][7]) == (control != "none")
    # (c) the last yield is the one-shot handler's outputs
    once = rt.replay_response(*inputs(control=control))
    # a row replayed alone and in a padded batch round differently in float32 (~1e-7 here)
    assert torch.allclose(last[0].scores, once[0].scores, atol=1e-5) and last[0].tokens == once[0].tokens
    assert last[7] == once[7] and last[7].startswith("Replayed ")
    pd.testing.assert_frame_equal(last[5], once[5])
    pd.testing.assert_frame_equal(last[6], once[6])
    assert payload(last[1])["tokens"] == payload(once[1])["tokens"] and last[2]["visible"] == (control != "none")


def test_a_bad_input_is_a_readable_error_before_any_update(monkeypatch):
    import gradio as gr

    monkeypatch.setattr(progressive, "PROGRESSIVE_FROM_S", 0.0)
    steps = rt.replay_live(*inputs(response=""))
    with pytest.raises(gr.Error, match="response"):
        next(steps)


@pytest.fixture(scope="module")
def client():
    gradio_client = pytest.importorskip("gradio_client")
    from mrtpo_viz.ui import build_app, launch_options

    torch.set_num_threads(1)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("gradio.networking.url_ok", patient_url_ok)
        mp.setattr(progressive, "PROGRESSIVE_FROM_S", 0.0)  # every replay row by row, for the whole module
        demo = build_app()
        _, url, _ = demo.launch(prevent_thread_lock=True, server_port=free_port(), quiet=True, **launch_options())
        c = gradio_client.Client(url, verbose=False, analytics_enabled=False)
        yield c
        c.close()
        demo.close()


def test_the_replay_endpoint_returns_the_final_outputs(client):
    """Through gradio_client (the page's first task, tool calling: K = 2): ``predict`` returns the last yield."""
    case = dict(task="tool_calling", index=0)
    once = rt.replay_response(*inputs(**case))
    final = client.predict(*inputs(api=True, **case), api_name="/replay")  # the State is not an API output
    assert payload(final[0])["tokens"] == once[0].tokens
    assert final[6] == once[7] and final[6].startswith("Replayed ")
    verdicts = pd.DataFrame(final[4]["data"], columns=final[4]["headers"])
    assert (
        verdicts["verifier"].tolist() == once[5]["verifier"].tolist() == ["tool_call.format", "tool_call.correctness"]
    )
    assert verdicts["reward"].tolist() == once[5]["reward"].tolist()
    job = client.submit(*inputs(api=True, **case), api_name="/replay")
    job.result()
    steps = job.outputs()
    assert len(steps) == 3 and steps[0][6].startswith("Replaying verifier 1 of 2")  # tokens, row 1, the result
    assert all(v is None for row in payload(steps[0][0])["scores"] for v in row)
    assert steps[-1][6] == final[6]
