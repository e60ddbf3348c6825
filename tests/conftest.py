"""Shared test setup: offline, quiet, one torch thread (the CI machine has 2 cores and runs other work)."""

import os
import sys
from pathlib import Path

# benchmarks/ holds test material that is not in the wheel (the lm-eval adapter, the IFEval adversarial set);
# tests import its modules by their plain names, as the benchmark scripts do.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


# --- A tiny random-init chat policy (owned by the policy/replay tests; shared by all) --------------------------------
import pytest  # noqa: E402

TINY_CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _tiny_corpus() -> list[str]:
    """A few hundred strings of the project's kinds of text: tool calls, SQL, instructions, verifier blocks."""
    cities = ["Paris", "Tokyo", "Lima", "Oslo", "Cairo", "Quito", "Rome", "Delhi"]
    tables = ["users", "orders", "products", "cities", "payments"]
    texts = []
    for i in range(300):
        c, t = cities[i % len(cities)], tables[i % len(tables)]
        texts += [
            f'<tool_call>{{"name": "get_weather", "arguments": {{"city": "{c}", "days": {i % 7 + 1}}}}}</tool_call>',
            f"SELECT name, COUNT(*) FROM {t} WHERE id > {i} GROUP BY name ORDER BY name LIMIT {i % 10 + 1};",
            f"Write {i % 5 + 2} sentences about {c} without using any commas, and end with the word done.",
            f"\n\n[Verifier: Tool call format] The answer must be one JSON object inside tags, number {i}.",
            f"What is the weather in {c} for the next {i % 7 + 1} days? Use the tool.",
        ]
    return texts


@pytest.fixture(scope="session")
def tiny_policy_dir(tmp_path_factory):
    """A random-init tiny Llama (hidden 64, 2 layers, 4 heads) with a byte-level BPE tokenizer and a ChatML template.

    ``initializer_range=0.2`` makes its next-token distributions sharp, so mask, position and cache mistakes show
    up as large log-prob errors (12-16 nats for a wrong mask; the default 0.02 init is near-uniform and shows ~1e-2).
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(_tiny_corpus(), trainer=trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
    )
    tok.chat_template = TINY_CHAT_TEMPLATE
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        initializer_range=0.2,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    out = tmp_path_factory.mktemp("tiny_policy")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="session")
def tiny_policy(tiny_policy_dir):
    """The tiny policy loaded on CPU in float32 through :func:`mrtpo_viz.policy.load_policy`."""
    from mrtpo_viz.policy import load_policy

    return load_policy(str(tiny_policy_dir), device="cpu", dtype="float32")


# --- The sample data must come out of the hostile-input suites byte-identical (owned by tests/test_hostile*.py) ------
def _tree_digest(root) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``root``."""
    import hashlib
    from pathlib import Path

    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(Path(root).rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="session")
def sample_data_unchanged():
    """Hashes the sample_data tree before the first test that asks for it and checks it again at the session's end."""
    from mrtpo_viz.tasks.bundled_data import SAMPLE_DATA

    before = _tree_digest(SAMPLE_DATA)
    yield SAMPLE_DATA
    after = _tree_digest(SAMPLE_DATA)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"hostile input changed files under sample_data: {changed[:10]}"


# --- Agreement with reference implementations, printed at the end of the run (also under pytest -q) ----------------
AGREEMENT: list[str] = []
"""Lines appended by the reference-agreement tests (TRL, IFEval, BFCL); shown in the terminal summary."""


def pytest_terminal_summary(terminalreporter):
    if AGREEMENT:
        terminalreporter.section("agreement with the reference implementations")
        for line in AGREEMENT:
            terminalreporter.write_line(line)


# --- A 2-step CPU run of examples/trl_mrtpo.py (owned by the TRL integration tests; the Runs view opens it) --------
@pytest.fixture(scope="session")
def trl_example_run(tmp_path_factory):
    """The output_dir of ``python examples/trl_mrtpo.py --steps 2`` (MRTPOTrainer on the bundled policy), under a
    fresh runs folder: ``(runs folder, run folder)``."""
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("trl", reason="the example needs trl (pip install mrtpo-viz[trl])")
    root = Path(__file__).resolve().parent.parent
    runs = tmp_path_factory.mktemp("runs")
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(root))
    proc = subprocess.run(
        [sys.executable, str(root / "examples" / "trl_mrtpo.py"), "--out", str(runs / "example"), "--steps", "2"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "Open the run in the app" in proc.stdout
    return runs, runs / "example"
