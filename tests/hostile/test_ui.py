"""Hostile input through the app: the module-level handlers called directly (fast), and a handful of endpoints
through ``gradio_client`` against one launched app. Every case gets a readable ``gr.Error`` (no traceback), the app
keeps serving (a good call after the bad ones works), and the sample data stays byte-identical.
"""

import json
import math
import re
import shutil

import pandas as pd
import pytest
import torch

gr = pytest.importorskip("gradio")
gradio_client = pytest.importorskip("gradio_client")

from mrtpo_viz.ui import relevance_tab as rt  # noqa: E402
from mrtpo_viz.ui.example_picker import get_example, prompt_text  # noqa: E402
from mrtpo_viz.tasks import VERIFIERS, get_verifier  # noqa: E402
from tests.apphelpers import free_port as _free_port, patient_url_ok as _patient_url_ok  # noqa: E402

torch.set_num_threads(1)
pytestmark = pytest.mark.usefixtures("sample_data_unchanged")
AppError = gradio_client.exceptions.AppError
TEMPLATE = "\n\n[Verifier: {title}] {info}"


@pytest.fixture(scope="module")
def ckpt(tiny_policy_dir, tiny_policy) -> str:
    """The tests' tiny policy (loaded once), as the checkpoint string the UI receives."""
    return str(tiny_policy_dir)


@pytest.fixture(scope="module")
def bad_folders(tiny_policy_dir, tmp_path_factory) -> dict[str, str]:
    """Copies of the tiny policy made unsafe: pickle weights only, and a config that asks for remote code."""
    root = tmp_path_factory.mktemp("bad_ckpts")
    pickled, remote = root / "pickled", root / "remote"
    shutil.copytree(tiny_policy_dir, pickled)
    (pickled / "model.safetensors").unlink()
    torch.save({"w": torch.zeros(1)}, pickled / "pytorch_model.bin")
    shutil.copytree(tiny_policy_dir, remote)
    config = json.loads((remote / "config.json").read_text())
    (remote / "config.json").write_text(json.dumps({**config, "auto_map": {"AutoModelForCausalLM": "x.Evil"}}))
    return {"pickle": str(pickled), "remote": str(remote)}


def replay_inputs(ckpt: str, of_task: str = "tool_calling", of_index: int = 0, api: bool = False, **change) -> list:
    """The positional inputs of ``replay_response`` for an example, with some fields changed (/replay takes the same
    without the state)."""
    ex = get_example(of_task, of_index)
    d = dict(
        checkpoint=ckpt,
        task=of_task,
        index=of_index,
        prompt=prompt_text(ex),
        response=ex.reference,
        verifiers=list(ex.verifiers),
        position="user_end",
        metric="js",
        control="none",
        template=TEMPLATE,
    )
    infos = change.pop("infos", None)
    d.update(change)
    if infos is None:
        infos = [get_verifier(n).info(ex) if n in VERIFIERS else "x" for n in d["verifiers"]]
    state = [] if api else [None]  # the session's custom verifiers: a state, so not a parameter of /replay
    return [*d.values(), *state, *(list(infos) + [""] * 6)[:6]]


def _error(fn, *args) -> str:
    """The message of the gr.Error a handler raises (and that it is one)."""
    with pytest.raises(gr.Error) as err:
        out = fn(*args)
        if hasattr(out, "__next__"):
            list(out)
    return str(err.value.message)


# --------------------------------------------------------------------------------------------- handlers, directly
CHECKPOINTS = {
    "etc_passwd": ("/etc/passwd", "policy not found: '/etc/passwd'"),
    "traversal": ("../../../../../../../etc", "policy not found: '../../../../../../../etc' is not a model folder"),
    "hub_offline": ("someone/some-model", "cannot be reached (offline)"),
    "empty": ("   ", "No checkpoint given"),
    "pickle": ("{pickle}", "only pickle weights (pytorch_model.bin)"),
    "remote_code": ("{remote}", "remote code is refused"),
}


@pytest.mark.parametrize("kind", list(CHECKPOINTS))
def test_replay_with_a_bad_checkpoint_is_a_readable_error(kind, ckpt, bad_folders, monkeypatch):
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    name, says = CHECKPOINTS[kind]
    message = _error(rt.replay_response, *replay_inputs(name.format(**bad_folders)))
    assert says in message and "Traceback" not in message


def test_the_allow_list_refuses_free_paths_in_the_app(ckpt, monkeypatch):
    monkeypatch.setenv("MRTPO_ALLOWED_CHECKPOINTS", "org/only-this")
    assert "is not allowed here" in _error(rt.replay_response, *replay_inputs(ckpt))
    assert "is not allowed here" in _error(rt.generate, "/etc", "tool_calling", 0, "hi", 1.0, 1.0, 8, 0)


@pytest.mark.parametrize(
    "change, says",
    [
        (dict(prompt="x" * 100_000), "The prompt is too long: 100,000 characters"),
        (dict(prompt=""), "The prompt is empty"),
        (dict(response="y" * 100_000), "The response is too long: 100,000 characters"),
        (dict(infos=["i" * 100_000]), "too long: 100,000 characters"),
        (dict(verifiers=["no.such"]), "unknown verifier 'no.such'"),
        (dict(verifiers=["tool_call.format"] * 7), "At most 6 verifiers"),
        (dict(template="{info:>100000000}"), "bad information template"),
        (dict(template="{info.__class__.__mro__}"), "bad information template"),
        (dict(metric="mse"), "mse"),
        (dict(control="drop_tables"), "unknown control 'drop_tables'"),
        (dict(position="everywhere"), "unknown info_position 'everywhere'"),
        (dict(index=10**9), "No example 1000000000 in tool_calling"),
        (dict(task="poetry"), "unknown task family 'poetry'"),
    ],
)
def test_bad_replay_inputs_are_readable_errors(change, says, ckpt):
    message = _error(rt.replay_response, *replay_inputs(ckpt, **change))
    assert says in message and "Traceback" not in message


@pytest.mark.parametrize(
    "response",
    [
        "\x00\x01\x1b[2J\x7f" * 5,
        "😀 مرحبا 你好 e\u0301 \u202eevil",
        '<script>alert(1)</script><img src=x onerror="alert(2)">',
    ],
)
def test_odd_responses_render_escaped(response, ckpt):
    out = rt.replay_response(*replay_inputs(ckpt, response=response))
    rel, sent = out[0], out[1]["value"]  # the JSON text the page receives
    payload = json.loads(sent)
    assert rel.T > 0 and len(payload["tokens"]) == rel.T
    assert "<script" not in sent and "<img" not in sent  # no markup travels as markup ("<" is escaped)
    assert "\\u003c" in sent if "<" in response else True
    assert json.loads(sent)["tokens"] == payload["tokens"]  # and the text itself arrives unchanged


@pytest.mark.parametrize(
    "sql, why",
    [
        ("DROP TABLE orders", "only reading is allowed"),
        ("ATTACH DATABASE '/tmp/evil.sqlite' AS evil", "denied"),
        ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c", "budget"),
        ("SELECT load_extension('/tmp/evil.so')", "load_extension"),
    ],
)
def test_hostile_sql_typed_as_a_response_scores_zero_in_the_verdicts(sql, why, ckpt):
    out = rt.replay_response(*replay_inputs(ckpt, of_task="text_to_sql", response=f"```sql\n{sql}\n```"))
    verdicts = out[5].set_index("verifier")
    assert verdicts.loc["sql.execution", "reward"] == 0.0
    assert why in verdicts.loc["sql.execution", "reason"]


@pytest.mark.parametrize(
    "args, says",
    [
        ((-1.0, 1.0, 8, 0), "the temperature must be 0 (greedy) or lie in [0.001, 100], got -1.0"),
        ((float("nan"), 1.0, 8, 0), "the temperature must be 0 (greedy) or lie in [0.001, 100], got nan"),
        ((1e-300, 1.0, 8, 0), "the temperature must be 0 (greedy) or lie in [0.001, 100], got 1e-300"),
        ((1.0, 0.0, 8, 0), "top_p must lie in (0, 1], got 0.0"),
        ((1.0, 1.0, 8, 2**70), "the seed must lie in"),
        ((1.0, 1.0, -3, 0), "max_new_tokens must be at least 1"),
    ],
)
def test_bad_generation_settings_are_readable_errors(args, says, ckpt):
    assert says in _error(rt.generate, ckpt, "tool_calling", 0, "Weather in Oslo?", *args)


def test_generation_length_is_capped(ckpt, tiny_policy, monkeypatch):
    monkeypatch.setattr(type(tiny_policy), "stop_ids", lambda self: set())  # never stops early: count every token
    text, status = rt.generate(ckpt, "tool_calling", 0, "Weather in Oslo?", 1.0, 1.0, 10**9, 0)
    n = int(re.search(r"Generated (\d+) tokens", status).group(1))
    assert n == rt.limits().max_new_tokens == 256


@pytest.fixture(scope="module")
def replayed(ckpt):
    """One replayed Relevance of the first tool-calling example (what the group table is built around)."""
    return rt.replay_response(*replay_inputs(ckpt))[0]


@pytest.mark.parametrize(
    "rows, says",
    [
        ([["a", "1; DROP TABLE x", 1.0], ["b", 0.0, 0.0]], "must be a number"),
        ([["a", "inf", "-inf"], ["b", "", None]], "must be a number"),
        ([["a", 1.0, 1.0]], "at least two responses"),
    ],
)
def test_bad_group_tables_are_readable_errors(rows, says, replayed):
    frame = pd.DataFrame(rows, columns=["response", *replayed.verifiers])
    assert says in _error(rt.advantages, replayed, frame, 1.0, 1.0, "controlled")


def test_a_nan_reward_means_does_not_apply_and_advantages_stay_finite(replayed):
    frame = pd.DataFrame([["a", float("nan"), 1.0], ["b", 0.0, 0.0]], columns=["response", *replayed.verifiers])
    fig, text, _, _ = rt.advantages(replayed, frame, 1.0, 1.0, "controlled")
    totals = next(t for t in fig.data if t.name == "MRTPO total").y
    assert len(totals) == replayed.T and all(math.isfinite(y) for y in totals)
    assert "GDPO advantage +0.707" in text  # the one reward that applies: (1 - 0.5) / std([1, 0])


def test_odd_example_picks_are_readable_errors():
    assert "No example 'abc' in tool_calling" in _error(rt.pick_example, "tool_calling", "abc")
    assert "unknown task family 'x'" in _error(rt.pick_example, "x", 0)


# --------------------------------------------------------------------------------------------- through gradio_client


@pytest.fixture(scope="module")
def client(ckpt):
    from mrtpo_viz.ui import build_app

    demo = build_app()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("gradio.networking.url_ok", _patient_url_ok)
        _, url, _ = demo.launch(prevent_thread_lock=True, server_name="127.0.0.1", server_port=_free_port(), quiet=True)
    c = gradio_client.Client(url, verbose=False, analytics_enabled=False)
    yield c
    c.close()
    demo.close()


@pytest.mark.parametrize(
    "change, says",
    [
        (dict(checkpoint="/etc/passwd"), "policy not found"),
        (dict(checkpoint="../../../../../../../etc"), "is not a model folder"),
        (dict(response="\x00" * 10 + "😀" * 10), None),
        (dict(template="{info:>100000000}"), "bad information template"),
        (dict(infos=["i" * 100_000]), "too long: 100,000 characters"),
    ],
)
def test_endpoints_answer_hostile_input_and_keep_serving(client, ckpt, change, says):
    change.setdefault("checkpoint", ckpt)
    checkpoint = change.pop("checkpoint")
    inputs = replay_inputs(checkpoint, api=True, **change)
    if says is None:
        assert '"tokens":' in client.predict(*inputs, api_name="/replay")[0]["value"]
    else:
        with pytest.raises(AppError, match=re.escape(says)) as err:
            client.predict(*inputs, api_name="/replay")
        assert "Traceback" not in str(err.value)
    assert '"tokens":' in client.predict(*replay_inputs(ckpt, api=True), api_name="/replay")[0]["value"]  # serving


def test_upload_over_the_cap_is_refused(client, ckpt, tmp_path):
    big = tmp_path / "big.jsonl"
    line = json.dumps({"task": "tool_calling", "prompt": "p", "response": "r" * 1000}) + "\n"
    big.write_text(line * (6 * 2**20 // len(line) + 1))
    with pytest.raises(AppError, match=r"big.jsonl is 6.0 MiB; the limit is 5 MiB"):
        client.predict(ckpt, gradio_client.handle_file(str(big)), "js", "none", "user_end", api_name="/rollouts")


def test_upload_of_binary_garbage_is_refused(client, ckpt, tmp_path):
    junk = tmp_path / "junk.jsonl"
    junk.write_bytes(bytes(range(256)) * 100)
    with pytest.raises(AppError, match="holds no valid rollout"):
        client.predict(ckpt, gradio_client.handle_file(str(junk)), "js", "none", "user_end", api_name="/rollouts")


def test_smuggled_database_path_in_an_upload_is_skipped(client, ckpt, tmp_path):
    ex = get_example("text_to_sql", 0)
    good = {"task": "text_to_sql", "prompt": ex.prompt, "response": ex.reference, "meta": ex.meta, "id": "good"}
    evil = {**good, "id": "evil", "meta": {**ex.meta, "db_path": "/etc/passwd"}}
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(evil) + "\n")
    status = client.predict(ckpt, gradio_client.handle_file(str(path)), "js", "none", "user_end", api_name="/rollouts")[
        0
    ]
    assert "Scored 1 rollouts" in status and "line 2: 'meta.db_path' is not accepted" in status
