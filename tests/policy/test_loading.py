"""Loading policies (and refusing bad checkpoints) and sampling from them."""

import json
import shutil
from collections import namedtuple

import pytest
import torch

from mrtpo_viz.policy.loading import PolicyLoadError, load_policy
from mrtpo_viz.policy.model import PLAIN_CHAT_TEMPLATE, Completion
from mrtpo_viz.policy.sampling import filter_top_p

torch.set_num_threads(1)


def _copy(src, dst, skip=()):
    dst.mkdir()
    for f in src.iterdir():
        if f.name not in skip:
            shutil.copy(f, dst / f.name)
    return dst


def test_describe_and_cache(tiny_policy, tiny_policy_dir):
    assert tiny_policy.n_params == sum(p.numel() for p in tiny_policy.model.parameters())
    assert tiny_policy.describe() == f"{tiny_policy.n_params / 1e6:.1f}M params, float32, cpu"
    assert load_policy(tiny_policy_dir, device="cpu", dtype="float32") is tiny_policy
    assert tiny_policy.model.training is False


def test_the_bundled_policy_has_one_name_by_path_or_by_name():
    """The app shows a policy's name: loaded first by its folder's path (the Runs tab's replays do), the bundled
    policy is still ``tiny-mrtpo``, the same cached object as by name."""
    from mrtpo_viz.names import BUNDLED_POLICY
    from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR

    by_path = load_policy(str(BUNDLED_POLICY_DIR), device="cpu", dtype="float32")
    assert by_path.name == BUNDLED_POLICY == "tiny-mrtpo"
    assert load_policy(BUNDLED_POLICY, device="cpu", dtype="float32") is by_path


def test_chat_ids_end_with_generation_prompt(tiny_policy):
    ids = tiny_policy.chat_ids([{"role": "user", "content": "hi"}])
    assert tiny_policy.tokenizer.decode(ids) == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


def test_generate_is_seeded_and_returns_exact_ids(tiny_policy):
    a = tiny_policy.generate("Weather in Oslo?", max_new_tokens=20, seed=3)
    b = tiny_policy.generate("Weather in Oslo?", max_new_tokens=20, seed=3)
    c = tiny_policy.generate("Weather in Oslo?", max_new_tokens=20, seed=4)
    assert isinstance(a, Completion) and a == b and a.token_ids != c.token_ids
    assert 0 < len(a.token_ids) <= 20
    assert tiny_policy.tokenizer.decode(a.token_ids, skip_special_tokens=True) == a.text
    assert a.prompt_ids == tiny_policy.chat_ids([{"role": "user", "content": "Weather in Oslo?"}])


def test_greedy_matches_a_no_cache_loop(tiny_policy):
    """temperature 0 with the cached sampler equals argmax over full recomputation at every step."""
    out = tiny_policy.generate("SELECT name FROM users", max_new_tokens=12, temperature=0)
    ids = list(out.prompt_ids)
    for _ in range(len(out.token_ids)):
        with torch.no_grad():
            logits = tiny_policy.model(input_ids=torch.tensor([ids]), use_cache=False).logits
        ids.append(int(logits[0, -1].argmax()))
    assert ids[len(out.prompt_ids) :] == out.token_ids


def test_generate_group_stops_each_row_at_eos(tiny_policy, monkeypatch):
    stops = set(range(0, len(tiny_policy.tokenizer), 10))  # a random model rarely samples its one eos: use many
    monkeypatch.setattr(type(tiny_policy), "stop_ids", lambda self: stops)
    group = tiny_policy.generate_group("Write two sentences about Rome.", 6, max_new_tokens=40, seed=0)
    assert len(group) == 6
    assert all(not stops & set(c.token_ids) and len(c.token_ids) <= 40 for c in group)
    assert len({len(c.token_ids) for c in group}) > 1  # each row stopped at its own stop token
    assert len({tuple(c.token_ids) for c in group}) > 1


def test_stop_after_lines_ends_each_row_with_the_token_that_completes_the_lines(tiny_policy, monkeypatch):
    """Same seed with and without the line stop: each stopped row is the free row cut just after its second "line
    end" (a random model rarely writes newlines, so every id divisible by 7 counts as one here)."""
    import mrtpo_viz.policy.sampling as sampling

    monkeypatch.setattr(type(tiny_policy), "stop_ids", lambda self: {-1})  # no end-of-sequence: rows run to the cap
    free = tiny_policy.generate_group("List two cities.", 5, max_new_tokens=30, seed=1)
    monkeypatch.setattr(sampling._NewlineCounter, "__call__", lambda self, t: int(t % 7 == 0))
    stopped = tiny_policy.generate_group("List two cities.", 5, max_new_tokens=30, seed=1, stop_after_lines=2)
    cuts = 0
    for f, s in zip(free, stopped):
        ends = [i + 1 for i, t in enumerate(f.token_ids) if t % 7 == 0]
        want = f.token_ids[: ends[1]] if len(ends) >= 2 else f.token_ids
        assert s.token_ids == want
        cuts += len(want) < len(f.token_ids)
    assert cuts >= 2  # the stop did cut rows (with 30 tokens each row is likely to hold two such ids)
    with pytest.raises(ValueError, match="stop_after_lines"):
        tiny_policy.generate_group("hi", 1, stop_after_lines=-1)


def test_generate_rejects_bad_arguments(tiny_policy):
    with pytest.raises(ValueError, match="temperature"):
        tiny_policy.generate("hi", temperature=-1)
    with pytest.raises(ValueError, match="at least 1"):
        tiny_policy.generate_group("hi", 0)


def test_filter_top_p_keeps_the_nucleus():
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    assert torch.allclose(filter_top_p(probs, 0.7), torch.tensor([[0.625, 0.375, 0.0, 0.0]]))
    assert torch.allclose(filter_top_p(probs, 0.1), torch.tensor([[1.0, 0.0, 0.0, 0.0]]))
    assert torch.equal(filter_top_p(probs, 1.0), probs)


def test_plain_chat_template_fallback(tiny_policy_dir, tmp_path):
    folder = _copy(tiny_policy_dir, tmp_path / "no_template", skip={"chat_template.jinja"})
    pol = load_policy(folder, device="cpu")
    assert pol.tokenizer.chat_template == PLAIN_CHAT_TEMPLATE
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    assert pol.render(msgs) == "Be brief.\n\nUser: hi\nAssistant: "


@pytest.mark.parametrize("name", ["/no/such/folder", "../../etc/passwd", "a/b/c", "not a model id!"])
def test_not_found(name):
    with pytest.raises(PolicyLoadError, match="policy not found"):
        load_policy(name, device="cpu")


def test_hub_id_while_offline():
    with pytest.raises(PolicyLoadError, match=r"hub cannot be reached \(offline\); give a local folder"):
        load_policy("someone/surely-not-cached-model", device="cpu")


def test_folder_without_config(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(PolicyLoadError, match=r"not a model folder \(no config.json\)"):
        load_policy(tmp_path, device="cpu")


def test_pickle_only_weights_are_refused(tiny_policy_dir, tmp_path):
    folder = _copy(tiny_policy_dir, tmp_path / "pickle", skip={"model.safetensors"})
    (folder / "pytorch_model.bin").write_bytes(b"not loaded")
    with pytest.raises(PolicyLoadError, match=r"only pickle weights \(pytorch_model.bin\).*refused"):
        load_policy(folder, device="cpu")


def test_remote_code_is_refused(tiny_policy_dir, tmp_path):
    folder = _copy(tiny_policy_dir, tmp_path / "remote")
    cfg = json.loads((folder / "config.json").read_text())
    cfg["auto_map"] = {"AutoModelForCausalLM": "modeling_x.XForCausalLM"}
    (folder / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(PolicyLoadError, match="remote code is refused"):
        load_policy(folder, device="cpu")


def test_not_a_causal_lm(tiny_policy_dir, tmp_path):
    folder = _copy(tiny_policy_dir, tmp_path / "t5")
    (folder / "config.json").write_text(json.dumps({"model_type": "t5"}))
    with pytest.raises(PolicyLoadError, match="not a causal language model"):
        load_policy(folder, device="cpu")


def test_no_tokenizer(tiny_policy_dir, tmp_path):
    folder = _copy(
        tiny_policy_dir, tmp_path / "notok", skip={"tokenizer.json", "tokenizer_config.json", "chat_template.jinja"}
    )
    with pytest.raises(PolicyLoadError, match="no usable tokenizer"):
        load_policy(folder, device="cpu")


def test_too_large_for_memory(tiny_policy_dir, tmp_path, monkeypatch):
    import psutil

    folder = _copy(tiny_policy_dir, tmp_path / "big")
    memory = namedtuple("memory", "available")
    monkeypatch.setattr(psutil, "virtual_memory", lambda: memory(available=1000))
    with pytest.raises(PolicyLoadError, match="too large for memory: needs about"):
        load_policy(folder, device="cpu")


def test_unknown_dtype(tiny_policy_dir):
    with pytest.raises(PolicyLoadError, match="unknown dtype 'float8'"):
        load_policy(tiny_policy_dir, device="cpu", dtype="float8")


def test_default_device_is_resolved_safely_from_many_threads_at_once():
    """Two app handlers loading a policy at once once saw accelerate's half-initialized PartialState (device None)."""
    import threading

    from accelerate import PartialState

    from mrtpo_viz.policy.loading import _resolve_device

    PartialState._reset_state()
    barrier, out = threading.Barrier(8), []

    def worker():
        barrier.wait()
        out.append(_resolve_device(None))

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(out) == 8 and all(isinstance(d, torch.device) and d.type == "cpu" for d in out)
