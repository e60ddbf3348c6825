"""The app through its API (gradio_client against a launched app): generate, replay, advantages, A/B, rollouts, and
bad inputs that must come back as readable errors while the app keeps serving.

One app per module; the checkpoint is the bundled policy when it exists, else the tests' random-init tiny policy.
"""

import json
import re

import pandas as pd
import pytest
import torch

from mrtpo_viz.relevance.results import Relevance
from mrtpo_viz.tasks.bundled_data import SAMPLE_DATA
from mrtpo_viz.tasks.example_sources import load_examples
from mrtpo_viz.tasks import get_verifier
from tests.apphelpers import free_port, patient_url_ok

gradio_client = pytest.importorskip("gradio_client")
AppError = gradio_client.exceptions.AppError
TEMPLATE = "\n\n[Verifier: {title}] {info}"
BUNDLED = SAMPLE_DATA / "policies" / "tiny-mrtpo"


@pytest.fixture(scope="module")
def checkpoint(request) -> str:
    if (BUNDLED / "config.json").is_file():
        return str(BUNDLED)
    return str(request.getfixturevalue("tiny_policy_dir"))


def launch_app():
    """Build and launch the app on a free port; returns (demo, url)."""
    from mrtpo_viz.ui import build_app, launch_options

    demo = build_app()
    _, url, _ = demo.launch(prevent_thread_lock=True, server_port=free_port(), quiet=True, **launch_options())
    return demo, url


@pytest.fixture(scope="module")
def client(checkpoint):
    from mrtpo_viz.policy import load_policy

    torch.set_num_threads(1)
    load_policy(checkpoint)  # loaded once here, so no test's timing includes the load
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("gradio.networking.url_ok", patient_url_ok)
        demo, url = launch_app()
    c = gradio_client.Client(url, verbose=False, analytics_enabled=False)  # no telemetry thread
    yield c
    c.close()
    demo.close()


@pytest.fixture(scope="module")
def example():
    from mrtpo_viz.ui.example_picker import get_example

    return get_example("tool_calling", 0)


def replay_args(checkpoint, example, task="tool_calling", index=0, **kw):
    """The positional inputs of /replay: checkpoint ... template, then six information boxes."""
    from mrtpo_viz.ui.example_picker import prompt_text

    d = dict(
        checkpoint=checkpoint,
        task=task,
        index=index,
        prompt=prompt_text(example),
        response=example.reference,
        verifiers=list(example.verifiers),
        position="user_end",
        metric="js",
        control="none",
        template=TEMPLATE,
    )
    infos = kw.pop("infos", None)
    d.update(kw)
    if infos is None:
        from mrtpo_viz.tasks import VERIFIERS

        infos = [VERIFIERS[n].info(example) if n in VERIFIERS else "" for n in d["verifiers"]]
    return [*d.values(), *(list(infos) + [""] * 6)[:6]]


def plot(value) -> dict:
    """A gr.Plot output (possibly wrapped in an update) as the plotly figure dict."""
    value = value.get("value", value) if isinstance(value, dict) else value
    return json.loads(value["plot"])


def table(value) -> pd.DataFrame:
    return pd.DataFrame(value["data"], columns=value["headers"])


def view(value) -> dict:
    """A token view output (its JSON payload, possibly inside an update) as the payload dict."""
    value = value.get("value") if isinstance(value, dict) else value
    return json.loads(value)


def test_api_lists_the_named_endpoints(client):
    names = set(client.view_api(print_info=False, return_format="dict")["named_endpoints"])
    assert {
        "/generate",
        "/replay",
        "/advantages",
        "/sample_group",
        "/ab",
        "/rollouts",
        "/load_checkpoint",
        "/token_relevance",
        "/score_response",
    } <= names


def test_load_status_names_the_model_or_the_problem(client, checkpoint):
    assert "params" in client.predict(checkpoint, api_name="/load_checkpoint")
    missing = client.predict("/no/such/checkpoint", api_name="/load_checkpoint")
    assert "not loaded" in missing and "/no/such/checkpoint" in missing


def test_generate_returns_text_and_token_count(client, checkpoint, example):
    from mrtpo_viz.ui.example_picker import prompt_text

    text, status = client.predict(
        checkpoint, "tool_calling", 0, prompt_text(example), 1.0, 1.0, 16, 3, api_name="/generate"
    )
    n = int(re.search(r"Generated (\d+) tokens", status).group(1))
    assert isinstance(text, str) and 1 <= n <= 16


def test_replay_renders_tokens_heatmap_verdicts_and_downloads(client, checkpoint, example):
    tokens, raw_view, heat, raw_heat, verdicts, rewards, status = client.predict(
        *replay_args(checkpoint, example), api_name="/replay"
    )
    csv, js = client.predict(api_name="/downloads")  # the step after the replay: its tables as files
    rel = Relevance.from_json(open(js["value"], encoding="utf-8").read())
    K, T = rel.K, rel.T
    assert rel.verifiers == list(example.verifiers) and T > 5 and f"Replayed {T} tokens" in status
    p = view(tokens)
    assert p["tokens"] == rel.tokens and p["verifiers"] == rel.verifiers and len(p["scores"][0]) == T
    # 3 significant digits: within half a unit of the third digit of each score
    assert all(abs(x - y) <= 5e-3 * max(abs(y), 1e-9) + 1e-12 for x, y in zip(p["scores"][0], rel.scores[0].tolist()))
    assert len(p["top"]) == K and len(p["lp0"]) == T and p["rewards"] == [1] * K
    z = plot(heat)["data"][0]["z"]
    assert (len(z), len(z[0])) == (K, T) and z[0][3] == pytest.approx(float(rel.scores[0, 3]), abs=1e-6)
    assert raw_view["visible"] is False  # control none: raw and controlled are the same, shown once
    v = table(verdicts)
    assert v["reward"].tolist() == [1] * K  # the gold reference passes every verifier
    frame = pd.read_csv(csv["value"])
    assert len(frame) == K * T and set(frame["verifier"]) == set(rel.verifiers) and csv["interactive"] is True
    assert table(rewards).iloc[0, 1:].tolist() == [1.0] * K  # the group's row 1 is the replayed response


def test_advantages_follow_the_typed_group(client, checkpoint, example):
    client.predict(*replay_args(checkpoint, example), api_name="/replay")
    K = len(example.verifiers)
    group = {
        "headers": ["response", *example.verifiers],
        "data": [["replayed"] + [1.0] * K, ["b"] + [0.0] * K, ["c"] + [1.0] + [0.0] * (K - 1)],
    }
    fig, text, weights, tokens = client.predict(group, 1.0, 1.0, "controlled", api_name="/advantages")
    data = plot(fig)["data"]
    bars = [t for t in data if t["type"] == "bar"]
    total = next(t for t in data if t["name"] == "MRTPO total")["y"]
    gdpo = next(t for t in data if t["name"].startswith("GDPO"))["y"][0]
    stacked = torch.tensor([b["y"] for b in bars]).sum(0)
    assert torch.allclose(stacked, torch.tensor(total), atol=1e-4)  # stacks sum to the MRTPO advantage
    assert sum(total) / len(total) == pytest.approx(gdpo, abs=1e-3)  # whose token mean is GDPO's
    assert gdpo > 0 and f"GDPO advantage +{gdpo:.3g}" in text  # the best response of the group
    assert weights.splitlines()[0] == "| | format | correctness |" and weights.splitlines()[2].startswith("| Gini | 0.")
    adv = json.loads(tokens["props"]["adv"])  # the token view's panel gets both methods' advantages
    assert adv[0][0] == "GDPO" and adv[0][1] == pytest.approx(gdpo, rel=5e-3)
    assert adv[1][0] == "MRTPO" and adv[1][1] == pytest.approx(total, rel=5e-3, abs=1e-6)
    flat, flat_text, flat_weights, _ = client.predict(group, 0.0, 1.0, "controlled", api_name="/advantages")
    assert "| Gini | 0 | 0 |" in flat_weights and "| effective tokens | 1 | 1 |" in flat_weights  # alpha = 0: GDPO
    assert max(abs(y - gdpo) for y in next(t for t in plot(flat)["data"] if t["name"] == "MRTPO total")["y"]) < 1e-3
    with pytest.raises(AppError, match="must be a number"):
        client.predict(
            {**group, "data": [["a"] + ["high"] * K, ["b"] + [0.0] * K]}, 1.0, 1.0, "controlled", api_name="/advantages"
        )


def test_sample_group_scores_new_responses(client, checkpoint, example):
    from mrtpo_viz.ui.example_picker import prompt_text

    client.predict(*replay_args(checkpoint, example), api_name="/replay")
    out = table(
        client.predict(
            checkpoint, "tool_calling", 0, prompt_text(example), 3, 1.0, 1.0, 12, 0, api_name="/sample_group"
        )
    )
    assert len(out) == 3 and out["response"][0].startswith("1 (replayed): ")
    assert out["response"][1].startswith("2: ") and len(out["response"][1]) <= 3 + 32 + 6  # short, distinct labels
    assert out[list(example.verifiers)].map(lambda r: 0.0 <= r <= 1.0).all().all()


def test_replay_with_a_control_shows_raw_and_controlled(client, checkpoint, example):
    out = client.predict(*replay_args(checkpoint, example, control="others"), api_name="/replay")
    rel = Relevance.from_json(open(client.predict(api_name="/downloads")[1]["value"], encoding="utf-8").read())
    assert rel.control == "others" and out[1]["visible"] is True and view(out[1])["label"] == "raw js"
    assert view(out[0])["label"] == "js minus others control"
    assert plot(out[3])["data"][0]["z"][0] == pytest.approx(rel.raw_scores[0].tolist(), abs=1e-6)
    others = (rel.raw_scores.sum(0, keepdim=True) - rel.raw_scores) / (rel.K - 1)
    assert torch.allclose(rel.scores, (rel.raw_scores - others).clamp_min(0), atol=1e-5)


def test_other_task_after_switching(client, checkpoint):
    """Choices follow the task per session: an SQL example replays with the SQL verifiers. The argument fields are
    passed empty (the example's own values): omitted, an API call gets the page's first values, the tool-calling
    example's, which the SQL verifiers refuse by name."""
    from mrtpo_viz.ui.example_picker import get_example

    client.predict("text_to_sql", api_name="/task_examples")
    prompt, response, _ = client.predict("text_to_sql", 1, api_name="/pick_example")
    ex = get_example("text_to_sql", 1)
    assert response == ex.reference
    try:
        out = client.predict(*replay_args(checkpoint, ex, task="text_to_sql", index=1), *[""] * 18, api_name="/replay")
        assert table(out[4])["verifier"].tolist() == list(ex.verifiers)
        with pytest.raises(AppError, match="sql.execution: database must be one of company, school, shop"):
            client.predict(*replay_args(checkpoint, ex, task="text_to_sql", index=1), api_name="/replay")
    finally:  # back to the first task, for the tests after this one
        client.predict("tool_calling", api_name="/task_examples")
        client.predict("tool_calling", 0, api_name="/pick_example")


def test_ab_difference_is_b_minus_a(client, checkpoint, example):
    from mrtpo_viz.ui.example_picker import prompt_text
    from mrtpo_viz.tasks import get_verifier

    name = example.verifiers[-1]
    info_a = get_verifier(name).info(example)
    view_a, view_b, diff, summary, status = client.predict(
        checkpoint,
        "tool_calling",
        0,
        prompt_text(example),
        example.reference,
        name,
        info_a,
        "Check the answer carefully.",
        "user_end",
        "js",
        "none",
        api_name="/ab",
    )
    pa, pb = view(view_a), view(view_b)
    assert (
        pa["title"].startswith("information: The correct call")
        and pb["title"] == "information: Check the answer carefully."
    )
    ab, d = (plot(diff)["data"][i]["z"] for i in (0, 1))
    a, b = ab  # full precision in the figure; the views carry 3 significant digits
    assert len(a) == len(b) == len(d[0]) == len(pa["tokens"]) > 5
    assert d[0] == pytest.approx([y - x for x, y in zip(a, b)], abs=1e-6)
    assert pa["scores"][0] == pytest.approx(a, rel=5e-3, abs=1e-9) and pa["vmax"] == pb["vmax"]  # one scale
    s = table(summary).set_index("measure")
    assert float(s.loc["mean relevance", "A"]) == pytest.approx(sum(a) / len(a), rel=5e-3)
    assert 0.0 <= float(s.loc["share on the verifier's relevant spans", "A"]) <= 1.0
    assert float(s.loc["max relevance", "B"]) == pytest.approx(max(b), rel=5e-3)


def test_rollouts_scores_good_rows_and_reports_bad_lines(client, checkpoint, tmp_path):
    rows = [json.loads(line) for line in open(SAMPLE_DATA / "rollouts" / "sample_rollouts.jsonl")][:2]
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        json.dumps(rows[0])
        + "\n{not json\n"
        + json.dumps({"task": "tool_calling"})
        + "\n"
        + json.dumps(rows[1])
        + "\n",
        encoding="utf-8",
    )
    status, bars, top, summary, csv, picker, tokens = client.predict(
        checkpoint, gradio_client.handle_file(str(path)), "js", "none", "user_end", api_name="/rollouts"
    )
    assert "Scored 2 rollouts" in status and "line 2: not valid JSON" in status and "line 3: missing" in status
    s = table(summary)
    assert sorted(set(s["id"])) == sorted(r["id"] for r in rows)
    frame = pd.read_csv(csv["value"])
    means = frame.groupby("verifier")["score"].mean()
    fig = plot(bars)["data"][0]
    assert dict(zip(fig["x"], fig["y"])) == pytest.approx(means.to_dict())
    first = frame[frame["id"] == rows[0]["id"]]
    assert picker["value"] == rows[0]["id"] and [c[0] for c in picker["choices"]] == [r["id"] for r in rows]
    p = view(tokens)  # the first rollout's token view
    assert p["verifiers"] == list(dict.fromkeys(first["verifier"])) and len(p["tokens"]) == first["position"].max() + 1


@pytest.mark.parametrize(
    "change,message",
    [
        (dict(checkpoint="/no/such/checkpoint"), "policy not found"),
        (dict(response=""), "response is empty"),
        (dict(response="   \n "), "response is empty"),
        (dict(verifiers=["no_such.verifier"]), "not in the list of choices"),
        (dict(verifiers=[]), "at least one verifier"),
        (dict(response="x" * 20_000), "too long"),
        (dict(infos=["i" * 100_000]), "too long: 100,000 characters"),
        (dict(template="{nope}"), "bad information template"),
    ],
)
def test_bad_replay_inputs_give_readable_errors(client, checkpoint, example, change, message):
    with pytest.raises(AppError, match=re.escape(message)) as err:
        client.predict(*replay_args(**{"checkpoint": checkpoint, "example": example, **change}), api_name="/replay")
    assert "Traceback" not in str(err.value)


def test_the_app_keeps_serving_after_bad_inputs(client, checkpoint, example):
    """Runs after the bad inputs above (file order): the same session still replays."""
    assert len(view(client.predict(*replay_args(checkpoint, example), api_name="/replay")[0])["tokens"]) > 5


def test_response_over_the_token_cap_is_refused(client, checkpoint, example, monkeypatch):
    monkeypatch.setenv("MRTPO_MAX_TOKENS", "5")  # read when the request is served
    with pytest.raises(AppError, match=r"at most 5 are replayed here \(MRTPO_MAX_TOKENS\)"):
        client.predict(*replay_args(checkpoint, example), api_name="/replay")


def test_bad_rollouts_files(client, checkpoint, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("not json\n", encoding="utf-8")
    with pytest.raises(AppError, match="holds no valid rollout"):
        client.predict(
            checkpoint, gradio_client.handle_file(str(empty)), "js", "none", "user_end", api_name="/rollouts"
        )
    with pytest.raises(AppError, match="policy not found"):
        client.predict("/no/such/checkpoint", None, "js", "none", "user_end", api_name="/rollouts")


def test_download_folders_older_than_the_ttl_are_removed(tmp_path):
    import os
    import time

    from mrtpo_viz.ui.downloads import download_folder

    old = download_folder("relevance-", root=tmp_path, ttl_s=60)
    (old / "relevance.csv").write_text("t,token\n")
    os.utime(old, (time.time() - 120, time.time() - 120))
    fresh = download_folder("relevance-", root=tmp_path, ttl_s=60)
    assert not old.exists() and fresh.is_dir() and fresh.parent == tmp_path
    newer = download_folder("rollouts-", root=tmp_path, ttl_s=60)
    assert fresh.exists() and newer.name.startswith("rollouts-")  # within the TTL: kept
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([fresh.name, newer.name])


def test_changing_the_verifier_selection_keeps_edited_information():
    from mrtpo_viz.ui.arguments import FIELDS
    from mrtpo_viz.ui.input_limits import MAX_VERIFIERS
    from mrtpo_viz.ui.relevance_tab import info_boxes, reselect_info_boxes

    M, F = MAX_VERIFIERS, FIELDS
    ex = load_examples("tool_calling", "test")[0]
    fmt, cor = "tool_call.format", "tool_call.correctness"
    first = info_boxes("tool_calling", 0, [fmt, cor])
    assert len(first) == M + M * F + 1 and first[-1] == [fmt, cor]
    assert first[1]["value"] == get_verifier(cor).info(ex)
    texts = ["my edited format text", "my edited correctness text"] + [""] * (M - 2) + [""] * (M * F)
    # drop the format verifier: correctness moves to the first box with its edit kept
    out = reselect_info_boxes("tool_calling", 0, [cor], [fmt, cor], None, *texts)
    assert out[0]["value"] == "my edited correctness text" and out[0]["visible"] is True
    assert out[1]["visible"] is False and out[-2] == [cor] and out[-1]["value"] == [cor]
    # add the format verifier back: its box starts from the template, correctness keeps the edit
    again = reselect_info_boxes(
        "tool_calling", 0, [cor, fmt], [cor], None, "my edited correctness text", *[""] * (M - 1 + M * F)
    )
    assert again[0]["value"] == "my edited correctness text"
    assert again[1]["value"] == get_verifier(fmt).info(ex) and again[-2] == [cor, fmt]


def test_more_than_six_verifiers_are_cut_up_front_with_a_warning():
    from mrtpo_viz.ui.arguments import FIELDS
    from mrtpo_viz.ui.input_limits import MAX_VERIFIERS
    from mrtpo_viz.ui.relevance_tab import reselect_info_boxes
    from mrtpo_viz.tasks import list_verifiers

    names = list_verifiers("instruction_following")[: MAX_VERIFIERS + 2]
    with pytest.warns(
        UserWarning, match=f"At most {MAX_VERIFIERS} verifiers at once: {names[-2]}, {names[-1]} left out"
    ):
        out = reselect_info_boxes("instruction_following", 0, names, [], None, *[""] * (MAX_VERIFIERS * (1 + FIELDS)))
    assert out[-1]["value"] == names[:MAX_VERIFIERS] and out[-2] == names[:MAX_VERIFIERS]


def test_sql_arguments_fill_the_fields_and_a_free_prompt_needs_them():
    from mrtpo_viz.ui.arguments import FIELDS, with_typed_args
    from mrtpo_viz.ui.example_picker import FREE_PROMPT, get_example
    from mrtpo_viz.ui.input_limits import MAX_VERIFIERS
    from mrtpo_viz.ui.relevance_tab import info_boxes

    ex = get_example("text_to_sql", 0)
    out = info_boxes("text_to_sql", 0, ["sql.format", "sql.execution"])
    fields = out[MAX_VERIFIERS + FIELDS : MAX_VERIFIERS + 2 * FIELDS]  # the second box's fields
    assert [f["label"] for f in fields] == [
        "sql.execution: database (one of company, school, shop)",
        "sql.execution: gold SQL",
        "sql.execution: order matters (true / false; optional)",
    ]
    assert [f["value"] for f in fields] == [
        ex.meta["db"],
        ex.meta["gold_sql"],
        "true" if ex.meta["ordered"] else "false",
    ]
    assert out[MAX_VERIFIERS]["visible"] is False  # sql.format takes no arguments: its fields stay hidden
    free = info_boxes("text_to_sql", FREE_PROMPT, ["sql.execution"])
    assert free[0]["value"] == "" and free[0]["label"].endswith("needs input: database, gold SQL")
    typed = ["shop", "SELECT name FROM products", ""]
    filled, needs = with_typed_args(get_example("text_to_sql", FREE_PROMPT), ["sql.execution"], typed)
    assert needs == {} and filled.meta == {"db": "shop", "gold_sql": "SELECT name FROM products"}
    with pytest.raises(ValueError, match=r"sql.execution: database must be one of company, school, shop, got 'mine'"):
        with_typed_args(get_example("text_to_sql", FREE_PROMPT), ["sql.execution"], ["mine", "SELECT 1", ""])


def test_the_tabs_pure_helpers():
    from mrtpo_viz.ui import ab_tab, method_tab, rollouts_tab, training_tab

    assert "GDPO" in method_tab.METHOD_MD and "our reading of the paper" in method_tab.METHOD_MD.lower()
    assert rollouts_tab._problems_md([]) == ""
    md = rollouts_tab._problems_md([(n, "bad") for n in range(1, 25)])
    assert "Skipped 24 line(s)" in md and "line 20: bad" in md and "and 4 more" in md and "line 21" not in md
    start = ab_tab._start_values("tool_calling", [("0: x", 0)])
    assert start["verifier"] == "tool_call.format" and start["a"].startswith("Reply with exactly one")
    slots = training_tab.TrainingSlots()
    assert slots.acquire() and slots.free() == 0 and not slots.acquire()
    slots.release()
    assert slots.free() == 1


def switch(client, task: str, index: int) -> None:
    """Pick a task and an example as the page does (the session's choices of examples and verifiers follow)."""
    client.predict(task, api_name="/task_examples")
    client.predict(task, index, api_name="/pick_example")


@pytest.fixture
def free_prompts(client):
    """The tests in between use free prompts; the first task's first example comes back afterwards."""
    yield
    switch(client, "tool_calling", 0)


def test_a_free_prompt_scores_a_lowercase_response_and_marks_what_needs_input(client, checkpoint, free_prompts):
    from mrtpo_viz.ui.example_picker import FREE_PROMPT

    switch(client, "instruction_following", FREE_PROMPT)
    free = dict(
        checkpoint=checkpoint,
        task="instruction_following",
        index=FREE_PROMPT,
        prompt="Describe the sea in one sentence, all in lowercase.",
        response="the sea is calm and blue today.",
        verifiers=["ifeval.lowercase", "ifeval.no_comma"],
        position="user_end",
        metric="js",
        control="none",
        template=TEMPLATE,
    )
    out = client.predict(*free.values(), *[""] * 6, api_name="/replay")
    v = table(out[4]).set_index("verifier")
    assert v.loc["ifeval.lowercase", "reward"] == 1 and v.loc["ifeval.no_comma", "reward"] == 1
    assert view(out[0])["rewards"] == [1, 1]
    shouting = client.predict(*{**free, "response": "THE SEA IS CALM."}.values(), *[""] * 6, api_name="/replay")
    assert table(shouting[4]).set_index("verifier").loc["ifeval.lowercase", "reward"] == 0
    # an SQL verifier without its database and gold query is neither scored nor replayed
    switch(client, "text_to_sql", FREE_PROMPT)
    sql = {
        **free,
        "task": "text_to_sql",
        "verifiers": ["sql.format", "sql.execution"],
        "response": "```sql\nSELECT name FROM products\n```",
        "prompt": "List the products.",
    }
    out = client.predict(*sql.values(), *[""] * 6, *[""] * 18, api_name="/replay")  # fields: the example's own
    v = table(out[4]).set_index("verifier")
    assert v.loc["sql.format", "reward"] == 1 and v.loc["sql.execution", "reward"] == "needs input"
    assert view(out[0])["verifiers"] == ["sql.format"] and "**Needs input**" in out[6] and "gold SQL" in out[6]
    fields = ["", "", "", "shop", "SELECT name FROM products", ""]  # box 2's fields: database, gold SQL
    out = client.predict(*sql.values(), *[""] * 6, *fields, api_name="/replay")
    assert table(out[4]).set_index("verifier").loc["sql.execution", "reward"] == 1
    with pytest.raises(AppError, match="Every chosen verifier needs input: sql.execution needs database, gold SQL"):
        client.predict(*{**sql, "verifiers": ["sql.execution"]}.values(), *[""] * 6, *[""] * 18, api_name="/replay")


def test_a_template_without_info_is_refused(client, checkpoint, example):
    with pytest.raises(AppError, match=r"it needs the field \{info\}"):
        client.predict(*replay_args(checkpoint, example, template="[Verifier: {title}]"), api_name="/replay")


def test_switching_the_task_clears_the_results():
    from mrtpo_viz.ui.relevance_tab import cleared

    out = cleared("text_to_sql")
    assert out[0] is None and out[1]["value"] is None and out[5].empty and list(out[5].columns)[0] == "verifier"
    assert out[-1] == out[-2] == {"__type__": "update", "value": None, "interactive": False}  # no stale download
    assert "earlier results were cleared" in out[7] and "text_to_sql" in out[7]


def test_the_json_endpoints_replay_and_score(client, checkpoint, example):
    out = json.loads(
        client.predict(
            example.reference,
            list(example.verifiers),
            "tool_calling",
            0,
            "",
            None,
            "js",
            "none",
            checkpoint,
            api_name="/token_relevance",
        )
    )
    names = list(example.verifiers)
    assert list(out["verifiers"]) == names and out["needs_input"] == {} and len(out["tokens"]) > 5
    first = out["verifiers"][names[0]]
    assert first["reward"] == 1.0 and len(first["relevance"]) == len(out["tokens"]) and len(first["top_tokens"]) == 5
    t, tok, score = first["top_tokens"][0]
    assert out["tokens"][t] == tok and score == max(first["relevance"])
    scored = json.loads(
        client.predict(
            "the sea. THE END",
            ["ifeval.lowercase", "sql.execution"],
            "instruction_following",
            -1,
            api_name="/score_response",
        )
    )
    assert scored["ifeval.lowercase"]["reward"] == 0 and scored["sql.execution"]["reward"] is None
    assert scored["sql.execution"]["reason"] == "needs input: database, gold SQL"
    given = json.loads(
        client.predict(
            "```sql\nSELECT name FROM products\n```",
            ["sql.execution"],
            "text_to_sql",
            -1,
            "",
            {"sql.execution": {"db": "shop", "gold_sql": "SELECT name FROM products"}},
            api_name="/score_response",
        )
    )
    assert given["sql.execution"]["reward"] == 1


def test_the_token_view_component_sends_one_json_string_and_its_templates_hold_no_data():
    from pathlib import Path

    from mrtpo_viz.ui import relevance_layout, token_component, tools

    p = {"tokens": ["<b>", "${1+1}"], "verifiers": ["v"], "scores": [[0.5, 0.25]]}
    comp = token_component.token_view(heading="A")
    sent = comp.postprocess(token_component.view_value(p))
    assert isinstance(sent, str) and "<" not in sent and json.loads(sent) == p
    assert not (Path(token_component.__file__).with_suffix(".pyi")).exists()  # no component subclass, so no stub file
    for template in (token_component.HTML_TEMPLATE, token_component.CSS_TEMPLATE):  # gr.HTML evaluates ${...} in them
        assert "${" not in template and "{{" not in template
    assert "__VIRIDIS__" not in token_component.JS_ON_LOAD and "[68, 1, 84]" in token_component.JS_ON_LOAD  # Viridis'
    # first stop
    assert json.loads(token_component.advantages_json({"GDPO": 0.5, "MRTPO": [1.0, -0.123456]}, 2)) == [
        ["GDPO", 0.5],
        ["MRTPO", [1, -0.123]],
    ]
    assert token_component.advantages_json({}, 2) is None
    locked = relevance_layout.lock_buttons()
    assert [u["interactive"] for u in locked] == [False, False]
    assert [u["interactive"] for u in relevance_layout.unlock_buttons()] == [True, True]
    assert tools.not_a_tool(lambda: None)._mcp_type == "ui"


def test_a_custom_verifier_from_the_form_scores_and_replays_in_its_session_only(client, checkpoint, example):
    added = client.predict(
        "tool_calling",
        list(example.verifiers),
        "no_apology",
        "No apology",
        "The response must not apologize.",
        "regex_must_not",
        r"\bsorry\b",
        "",
        "",
        True,
        api_name="/add_verifier",
    )
    choice, status = added
    assert "custom.no_apology" in [c[0] for c in choice["choices"]] and "Added `custom.no_apology`" in status
    names = [*example.verifiers, "custom.no_apology"]
    out = client.predict(*replay_args(checkpoint, example, verifiers=names, infos=[""] * 3), api_name="/replay")
    v = table(out[4]).set_index("verifier")
    assert v.loc["custom.no_apology", "reward"] == 1 and view(out[0])["verifiers"] == names
    sorry = client.predict(
        *replay_args(checkpoint, example, verifiers=names, infos=[""] * 3, response="Sorry, " + example.reference),
        api_name="/replay",
    )
    assert table(sorry[4]).set_index("verifier").loc["custom.no_apology", "reward"] == 0
    from mrtpo_viz.tasks import VERIFIERS

    assert "custom.no_apology" not in VERIFIERS  # kept in the session, not in the process-wide registry
    other = gradio_client.Client(client.src, verbose=False, analytics_enabled=False)  # another session
    try:
        with pytest.raises(AppError, match="not in the list of choices|unknown verifier 'custom.no_apology'"):
            other.predict(*replay_args(checkpoint, example, verifiers=names, infos=[""] * 3), api_name="/replay")
    finally:
        other.close()
    for bad, says in [
        (("x y", "t", "i", "regex_must", "a", "", "", False), "a name without spaces"),
        (("bad", "t", "i", "regex_must", "(", "", "", False), "bad regex"),
        (("js", "t", "i", "json_schema", "", "", "{not json", False), "not valid JSON"),
        (("kw", "t", "i", "keywords", "", " , ", "", False), "keywords must be a non-empty list"),
    ]:
        # reported in place, in the form's status line, and nothing chosen changes
        chosen, said = client.predict("tool_calling", [], *bad, api_name="/add_verifier")
        assert said.startswith("**⚠ Not added:**") and re.search(says, said), said
        assert chosen == {"__type__": "update"}  # the choice is left as it was
    said = client.predict(
        "tool_calling",
        [],
        "js2",
        "t",
        "i",
        "json_schema",
        "",
        "",
        '{"type": "object",,}',
        False,
        api_name="/add_verifier",
    )[1]
    assert "line 1, column 19" in said, said  # where the JSON breaks


def test_custom_specs_resolve_in_their_session_and_keep_the_task_choices():
    from mrtpo_viz.tasks import list_verifiers
    from mrtpo_viz.ui import custom_verifiers as cv

    spec = cv.spec_from_form(
        "json_answer",
        "",
        "Answer with a JSON object that has an answer.",
        "json_schema",
        "",
        "",
        '{"type": "object", "required": ["answer"]}',
        False,
    )
    assert spec["name"] == "custom.json_answer" and spec["title"] == "custom.json_answer"
    customs = {spec["name"]: spec}
    v = cv.resolve("custom.json_answer", customs)
    assert v.score('{"answer": 4}', None) == 1.0 and v.score('{"other": 4}', None) == 0.0
    assert cv.resolve("tool_call.format", customs).name == "tool_call.format"
    with pytest.raises(KeyError, match="unknown verifier 'custom.json_answer'"):
        cv.resolve("custom.json_answer", {})  # another session's custom verifier does not exist here
    assert cv.task_choices("tool_calling", customs) == list_verifiers("tool_calling") + ["custom.json_answer"]
    assert cv.KIND_CHOICES == ["regex_must", "regex_must_not", "keywords", "json_schema"]


def test_stop_in_rollouts_says_where_it_stopped_and_a_run_starts_from_empty_views(checkpoint):
    from mrtpo_viz.ui import rollouts_tab

    said = rollouts_tab.stopped("Scoring `mixed.jsonl`: 39 / 48 rollouts.")
    assert said.startswith("**Stopped at rollout 39** / 48 of `mixed.jsonl`") and "no rollout was scored" in said
    assert rollouts_tab.stopped("Scored 2 rollouts.") == "Scored 2 rollouts."  # a finished run keeps its line
    first = next(rollouts_tab.score_file(checkpoint, None, "js", "none", "user_end"))
    status, bars, top, table_, download, picker, view_, path = first
    assert status.startswith("Scoring `sample_rollouts.jsonl`: 0 / ") and top.empty and table_.empty
    assert list(table_.columns) == rollouts_tab.TABLE_HEADERS and view_ is None and path is None
    assert download == {"__type__": "update", "value": None, "interactive": False}
    assert not [t for t in bars.data if t.type == "bar"]  # the previous run's bars are gone


def test_stop_in_rollouts_ends_the_run_after_the_current_rollout_without_an_error(checkpoint):
    from mrtpo_viz.ui import rollouts_tab
    from mrtpo_viz.ui.result_state import StopFlag

    flag = StopFlag()
    rollouts_tab.stop_scoring(flag)  # nothing running: nothing changes
    assert not flag.stopped
    gen = rollouts_tab.score_file(checkpoint, None, "js", "none", "user_end", flag)
    try:
        next(gen)  # the views emptied
        first = next(gen)[0]  # 0 / n: the file is read
        assert first.startswith("Scoring `sample_rollouts.jsonl`: 0 / ") and flag.running
        rollouts_tab.stop_scoring(flag)
        assert flag.stopped
        out = next(gen)  # the rollout that was being replayed ends, then the run, showing what was scored
        assert out[0].startswith("**Stopped at rollout 1** / ") and "the 1 rollout scored before it" in out[0]
        first_id = "tool_calling-test-0300/reference"  # the bundled sample's first rollout
        assert out[5]["choices"] == [first_id] and out[5]["value"] == first_id
        assert set(pd.read_csv(out[7])["id"].astype(str)) == {first_id}  # the download holds that rollout
        with pytest.raises(StopIteration):
            next(gen)
    finally:
        gen.close()
    assert not flag.running
