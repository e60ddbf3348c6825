"""Replay speed: the shared-prefix batched replay against the naive way, a bare batched forward, and the floor.

Methods, for one prompt, one response of ~100 tokens and K verifiers:

- ``replay``: ``mrtpo_viz.replay`` (``relevance.engine.replay``) as users call it (tokenization, prefix pass, one
  batched forward of the K + 1 suffixes, the metric and the per-token columns: log-probs, entropy, top-5).
- ``floor``: one prefix pass plus one forward of the K + 1 suffixes over a ready cache; no metric, no columns.
- ``batched``: one bare batched forward of the K + 1 FULL sequences (right-padded, no cache); no metric.
- ``naive``: two separate full forwards per verifier (with and without its information), no cache, then the
  metric: 2K forwards.

Models: a tiny Llama (hidden 128, 4 layers) in float32, and a random-init Qwen2-0.5B-shaped config (hidden 896,
24 layers, 14 heads, 2 kv heads, vocab 151,936) in bfloat16, built from the config (no weights saved). Both use a
byte-level BPE tokenizer trained on the sample tasks' text (ids beyond it decode to ""; speed does not depend on
it). Prompts of ~100 and ~1,000 tokens; K = 1, 3, 6. Peak memory is the peak process RSS above the level before
the call, sampled every 2 ms in a thread (tracemalloc does not see torch's allocations).

A real checkpoint (``--checkpoint``: a folder or a known model's name such as ``smollm2-135m-instruct``; several,
comma-separated) runs instead of the two shapes, with its own tokenizer and chat template, in float32
(``--large-dtype`` picks another; ``--modes float32,bfloat16`` runs each checkpoint in both).

The methods are measured interleaved (repeat 1 of every method, then repeat 2, ...), and ``replay / floor`` and
``naive / replay`` are medians of the per-repeat ratios, so that a shared machine's load changes both sides alike.
``--threads 1,2`` runs the whole grid at each thread count in one process. The results file names the CPU, its
vector flags, and the load average at the start and the end.

    python benchmarks/replay_speed.py --threads 1            # both models, writes benchmarks/results/
    python benchmarks/replay_speed.py --models tiny --quick  # a quick check
    python benchmarks/replay_speed.py --checkpoint smollm2-135m-instruct --large-dtype float32
    python benchmarks/replay_speed.py --checkpoint tiny-mrtpo,smollm2-135m-instruct --quick --threads 1,2
"""

from __future__ import annotations

import argparse
import csv
import ctypes
import gc
import statistics
import sys
import threading
import time
from pathlib import Path

import psutil
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mrtpo_viz.divergence import chunked_metric  # noqa: E402
from mrtpo_viz.policy.kvcache import forward  # noqa: E402
from mrtpo_viz.policy import Policy  # noqa: E402
from mrtpo_viz.relevance.engine import plan_replay, replay  # noqa: E402
from mrtpo_viz.relevance.branches import prefix_cache, suffix_logits  # noqa: E402
from mrtpo_viz.tasks.base import Verdict, Verifier  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
RESPONSE_TOKENS = 100
INFO_TOKENS = 40


# --- setup ---------------------------------------------------------------------------------------------------------


def corpus() -> list[str]:
    from mrtpo_viz.names import TASKS
    from mrtpo_viz.tasks.example_sources import load_examples

    texts = []
    for task in TASKS:
        for ex in load_examples(task, split="all"):
            texts += [m["content"] for m in ex.messages()] + [ex.reference or ""]
    return [t for t in texts if t]


def build_tokenizer(texts: list[str]):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=2000,
            special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tok.chat_template = CHAT_TEMPLATE
    return tok


def build_model(name: str, vocab: int, large_dtype: torch.dtype = torch.bfloat16):
    from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

    torch.manual_seed(0)
    if name == "tiny":
        cfg = LlamaConfig(
            vocab_size=vocab,
            hidden_size=128,
            intermediate_size=256,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=4,
            max_position_embeddings=4096,
        )
        return AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    cfg = Qwen2Config(
        vocab_size=151_936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        tie_word_embeddings=True,
    )
    return AutoModelForCausalLM.from_config(cfg, dtype=large_dtype).eval()


def make_case(tok, texts: list[str], prompt_tokens: int, K: int):
    """A user prompt of ~prompt_tokens tokens, a 100-token response (ids) and K verifiers with ~40-token infos."""
    ids = tok("\n".join(texts[:2000]), add_special_tokens=False)["input_ids"]
    prompt = tok.decode(ids[:prompt_tokens])
    response = ids[prompt_tokens : prompt_tokens + RESPONSE_TOKENS]
    verifiers, infos = [], {}
    for k in range(K):
        start = 5000 + k * 997
        verifiers.append(
            Verifier(
                f"bench.v{k}",
                "custom",
                f"Check {k}",
                "benchmark verifier",
                lambda ex: "",
                lambda r, ex: Verdict(1.0, ""),
            )
        )
        infos[f"bench.v{k}"] = tok.decode(ids[start : start + INFO_TOKENS])
    return prompt, response, verifiers, infos


# --- methods -------------------------------------------------------------------------------------------------------


def run_replay(policy, case, plan):
    prompt, response, verifiers, infos = case
    replay(policy, prompt, response, verifiers, infos=infos)


@torch.no_grad()
def run_floor(policy, case, plan):
    cache = prefix_cache(policy.model, plan.branches.prefix_ids, policy.device)
    suffix_logits(policy.model, plan.branches, cache, 0, policy.device)


@torch.no_grad()
def run_batched(policy, case, plan):
    br, T = plan.branches, len(plan.branches.response_ids)
    rows = [br.full_ids(b) for b in range(br.B)]
    L = max(len(r) for r in rows)
    ids = torch.zeros((br.B, L), dtype=torch.long)
    mask = torch.zeros((br.B, L), dtype=torch.long)
    for b, row in enumerate(rows):
        ids[b, : len(row)], mask[b, : len(row)] = torch.tensor(row), 1
    keep = torch.tensor([len(r) - T - 1 for r in rows])[:, None] + torch.arange(T)  # (B, T)
    forward(policy.model, ids, attention_mask=mask, logits_to_keep=keep)


@torch.no_grad()
def run_naive(policy, case, plan):
    br, T = plan.branches, len(plan.branches.response_ids)
    for k in range(1, br.B):
        pair = []
        for b in (0, k):
            logits, _ = forward(policy.model, torch.tensor([br.full_ids(b)]), logits_to_keep=T + 1)
            pair.append(logits[:, :-1])  # (1, T, V): the positions that predict the response tokens
        chunked_metric(pair[1], pair[0], "js")


METHODS = {"floor": run_floor, "replay": run_replay, "batched": run_batched, "naive": run_naive}


# --- measuring -----------------------------------------------------------------------------------------------------


def _trim() -> None:
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)  # give freed memory back so the next RSS baseline is honest
    except OSError:
        pass


def measure(fn, *args) -> tuple[float, float, float]:
    """(seconds, peak RSS above the starting level in MiB, CPU seconds of this process) of one call."""
    _trim()
    proc, peak, stop = psutil.Process(), [0], threading.Event()
    base = proc.memory_info().rss

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.002)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    start, cpu = time.perf_counter(), time.process_time()
    fn(*args)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    stop.set()
    thread.join()
    return seconds, max(peak[0], proc.memory_info().rss) / 2**20 - base / 2**20, cpu


def bench_model(
    name: str, tok, texts, prompts, Ks, repeats: int, large_dtype=torch.bfloat16, methods=tuple(METHODS)
) -> list[dict]:
    model = build_model(name, len(tok), large_dtype)
    policy = Policy(model, tok, name, torch.device("cpu"), next(model.parameters()).dtype)
    rows = bench_policy(policy, name, texts, prompts, Ks, repeats, methods, warm_up=name == "tiny")
    del model, policy
    _trim()
    return rows


def bench_checkpoint(
    checkpoint: str, texts, prompts, Ks, repeats: int, dtype=torch.float32, methods=tuple(METHODS)
) -> list[dict]:
    """The same rows for a real checkpoint (its own tokenizer), labelled by ``_common.model_label``."""
    from _common import model_label
    from mrtpo_viz.policy import load_policy

    policy = load_policy(checkpoint, device="cpu", dtype=dtype)
    return bench_policy(policy, model_label(checkpoint), texts, prompts, Ks, repeats, methods, warm_up=True)


def bench_policy(policy, name: str, texts, prompts, Ks, repeats: int, methods, warm_up: bool) -> list[dict]:
    tok = policy.tokenizer
    rows = []
    for P in prompts:
        for K in Ks:
            case = make_case(tok, texts, P, K)
            plan = plan_replay(policy, case[0], case[1], case[2], infos=case[3])
            if warm_up:  # one-time costs (first forward, template, vocabulary texts) stay out of every method
                run_floor(policy, case, plan)
                run_replay(policy, case, plan)
            runs = {m: [] for m in methods}
            for _ in range(repeats):  # interleaved: a change of the machine's load reaches every method alike
                for method in methods:
                    runs[method].append(measure(METHODS[method], policy, case, plan))
            ratios = {
                f"{a}_over_{b}": round(statistics.median(x[0] / y[0] for x, y in zip(runs[a], runs[b])), 3)
                for a, b in (("replay", "floor"), ("naive", "replay"))
                if a in runs and b in runs
            }
            for method in methods:
                rows.append(
                    {
                        "model": name,
                        "params_M": round(policy.n_params / 1e6, 1),
                        "dtype": str(policy.dtype).removeprefix("torch."),
                        "threads": torch.get_num_threads(),
                        "prompt_tokens": len(plan.branches.full_ids(0)) - RESPONSE_TOKENS,
                        "shared_prefix": len(plan.branches.prefix_ids),
                        "response_tokens": RESPONSE_TOKENS,
                        "K": K,
                        "method": method,
                        "repeats": repeats,
                        "seconds": round(statistics.median(s for s, _, _ in runs[method]), 4),
                        "peak_mb": round(max(m for _, m, _ in runs[method]), 1),
                        "cpu_seconds": round(statistics.median(c for _, _, c in runs[method]), 4),
                        **ratios,
                    }
                )
                print(rows[-1], flush=True)
    return rows


# --- reporting -----------------------------------------------------------------------------------------------------


def write_csv(rows: list[dict], path: Path) -> None:
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(dict.fromkeys(k for r in rows for k in r)), restval="")
        writer.writeheader()
        writer.writerows(rows)


def write_md(rows: list[dict], path: Path, notes: list[str] = ()) -> None:
    key = lambda r: (r["model"], r["dtype"], int(r["threads"]), int(r["prompt_tokens"]), int(r["K"]))  # noqa: E731
    by = {(*key(r), r["method"]): r for r in rows}
    cases = sorted({key(r) for r in rows}, key=lambda c: (c[0] != "tiny", c[0], c[1], c[3], c[4], c[2]))
    lines = [
        "# Replay speed",
        "",
        *notes,
        "",
        "CPU, response 100 tokens, information ~40 tokens per verifier. Seconds (median of the runs), peak RSS "
        "above the start of the call in MiB; `-`: not run. `replay / floor` and `naive / replay`: medians of the "
        "per-repeat ratios (the methods ran interleaved); the CSV also has `cpu_seconds`.",
        "",
        "| model | dtype | threads | prompt | K | floor s | replay s | batched s | naive s | replay / floor "
        "| naive / replay | replay MiB | naive MiB |",
        "|" + "---|" * 13,
    ]
    for case in cases:
        got = {meth: by[(*case, meth)] for meth in METHODS if (*case, meth) in by}
        sec = {meth: float(r["seconds"]) for meth, r in got.items()}
        mib = {meth: float(r["peak_mb"]) for meth, r in got.items()}
        first = next(iter(got.values()))
        cell = lambda d, k, f: f.format(d[k]) if k in d else "-"  # noqa: E731

        def ratio(a, b, first=first, sec=sec):
            if first.get(f"{a}_over_{b}") not in (None, ""):
                return f"{float(first[f'{a}_over_{b}']):.2f}x"
            return f"{sec[a] / sec[b]:.2f}x" if a in sec and b in sec else "-"

        m, dtype, threads, P, K = case
        lines.append(
            f"| {m} | {dtype} | {threads} | {P} | {K} | "
            + " | ".join(cell(sec, k, "{:.3f}") for k in METHODS)
            + f" | {ratio('replay', 'floor')} | {ratio('naive', 'replay')} | "
            f"{cell(mib, 'replay', '{:.0f}')} | {cell(mib, 'naive', '{:.0f}')} |"
        )
    lines += [
        "",
        "Targets: replay (metric and columns included) within 1.10x of the floor at ~100 tokens, K = 3; "
        "never slower than naive (naive / replay >= 1).",
        "",
    ]
    path.write_text("\n".join(lines))


def conditions(argv) -> list[str]:
    """The command, the CPU (model, vector flags, cores) and the load average, for the results file."""
    from _common import command, cpu_description, load_average

    return [f"`{command('replay_speed.py', argv)}`; {cpu_description()}; load average {load_average()} at the start"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1", help="torch threads; comma-separated: the grid at each (e.g. 1,2)")
    ap.add_argument("--models", default="tiny,qwen2-0.5b-shape")
    ap.add_argument(
        "--checkpoint",
        default=None,
        help="real checkpoints (folders or known names, e.g. tiny-mrtpo,smollm2-135m-instruct) instead of "
        "--models; their dtype: --large-dtype (default float32 here) or --modes",
    )
    ap.add_argument("--modes", default=None, help="dtypes to run each checkpoint in, e.g. float32,bfloat16")
    ap.add_argument("--repeats", type=int, default=None, help="runs per method (default: 5 tiny, 1 large)")
    ap.add_argument("--quick", action="store_true", help="prompt ~100 tokens, K = 1, 3 only")
    ap.add_argument("--ks", default=None, help="K values (default: 1,3,6; --quick: 1,3)")
    ap.add_argument(
        "--large-dtype",
        default=None,
        choices=["bfloat16", "float32"],
        help="dtype of the 0.5B shape (bfloat16 is slow on CPUs without AMX)",
    )
    ap.add_argument("--large-ks", default=None, help="K values for the 0.5B shape (default: as the tiny model)")
    ap.add_argument("--large-prompts", default=None, help="prompt lengths for the 0.5B shape (e.g. 1000)")
    ap.add_argument("--large-methods", default=",".join(METHODS), help="methods run on the 0.5B shape")
    ap.add_argument("--merge", default=None, help="comma-separated result CSVs: write one table from them, run nothing")
    ap.add_argument("--out", default=str(RESULTS / "replay_speed"))
    args = ap.parse_args(argv)
    argv = sys.argv[1:] if argv is None else list(argv)
    out = Path(args.out)
    if args.merge:
        rows = [r for f in args.merge.split(",") for r in csv.DictReader(open(f))]
        write_csv(rows, out.with_suffix(".csv"))
        write_md(rows, out.with_suffix(".md"))
        print(out.with_suffix(".md").read_text())
        return 0
    texts = corpus()
    tok = build_tokenizer(texts)
    prompts, Ks = ([100], [1, 3]) if args.quick else ([100, 1000], [1, 3, 6])
    Ks = [int(k) for k in args.ks.split(",")] if args.ks else Ks
    notes, rows = conditions(argv), []
    for threads in [int(t) for t in str(args.threads).split(",")]:
        torch.set_num_threads(threads)
        for checkpoint in args.checkpoint.split(",") if args.checkpoint else []:
            ks = [int(k) for k in args.large_ks.split(",")] if args.large_ks else Ks
            ps = [int(p) for p in args.large_prompts.split(",")] if args.large_prompts else prompts
            for mode in (args.modes or args.large_dtype or "float32").split(","):
                rows += bench_checkpoint(
                    checkpoint,
                    texts,
                    ps,
                    ks,
                    args.repeats or 3,
                    getattr(torch, mode),
                    tuple(args.large_methods.split(",")),
                )
        for name in [] if args.checkpoint else args.models.split(","):
            tiny = name == "tiny"
            repeats = args.repeats or (5 if tiny else 1)
            ks = Ks if tiny or not args.large_ks else [int(k) for k in args.large_ks.split(",")]
            ps = prompts if tiny or not args.large_prompts else [int(p) for p in args.large_prompts.split(",")]
            methods = tuple(METHODS) if tiny else tuple(args.large_methods.split(","))
            dtype = getattr(torch, args.large_dtype or "bfloat16")
            rows += bench_model(name, tok, texts, ps, ks, repeats, dtype, methods)
    from _common import load_average

    notes[0] += f" and {load_average()} at the end."
    out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out.with_suffix(".csv"))
    write_md(rows, out.with_suffix(".md"), notes)
    print(out.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
