"""The capable slice: test prompts with a real model's own responses at temperature 0.7, scored by every verifier.

A 135M instruct model fails the tool-calling and SQL tasks of the sample data (0 of 5 test examples in every condition
of the probe below), so localization on the gold references there measures a model that would never write them. On
instruction following its own responses pass about half the constraints: those responses, replayed, are what MRTPO
would weight in training, and ``benchmarks/localization.py --slice FILE`` runs the localization views on them.

One response per test example: the plain prompt (no verifier information, as the app's Generate and training's
rollouts sample it), temperature 0.7, top-p 1, at most 128 new tokens, seed ``--seed + index`` (the same seed gives
the same response on the same machine; float arithmetic differs between CPUs, so another CPU can sample other ids
from some point on). Each line of the JSONL holds the example id, the exact generated token ids and text, why it
stopped, and every verifier's score and reason; the ``.md`` beside it has the pass rates (the quality probe).

The slice lives in ``benchmarks/data/<model>/``, not in ``sample_data/``: sample data ships inside the wheel and is
rebuilt byte-identically by ``scripts/make_sample_data.py`` without any model, while this is a benchmark input made by
a model that is not bundled (and only the benchmarks read it).

    python benchmarks/capable_slice.py --checkpoint smollm2-135m-instruct              # 100 examples
    python benchmarks/capable_slice.py --checkpoint smollm2-135m-instruct --quick --out /tmp/slice.jsonl
    python benchmarks/capable_slice.py --task tool_calling --n 5 --out /tmp/tool.jsonl  # the other families' probe
    python benchmarks/capable_slice.py --task tool_calling --n 5 --info --out /tmp/tool_info.jsonl   # with information
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from _common import ROOT, set_threads  # noqa: E402

from mrtpo_viz.atomic import write_text  # noqa: E402

DATA = ROOT / "benchmarks" / "data"
TEMPERATURE = 0.7
MAX_NEW_TOKENS = 128
SEED = 1000


def default_out(model: str, task: str, temperature: float, quick: bool, info: bool = False) -> Path:
    return DATA / model / f"{task}_t{temperature:g}{'_info' if info else ''}{'_quick' if quick else ''}.jsonl"


def sample_rows(
    policy, task: str, n: int, temperature: float, max_new_tokens: int, seed: int, model: str, info: bool = False
):
    """One scored response per test example (the first ``n``); yields one JSON-ready row each. ``info``: every
    verifier's information appended to the prompt (``user_end``, as the replay's with-information branches)."""
    from mrtpo_viz.relevance.contexts import with_info
    from mrtpo_viz.tasks import get_verifier, load_examples

    for i, ex in enumerate(load_examples(task, split="test")[:n]):
        start = time.perf_counter()
        vs = [get_verifier(v) for v in ex.verifiers]
        prompt = with_info(policy.messages(ex), [(v.title, v.info(ex)) for v in vs]) if info else ex
        c = policy.generate(prompt, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed + i)
        verdicts = {v.name: v.check(c.text, ex) for v in vs}
        yield {
            "id": ex.id,
            "task": task,
            "model": model,
            "info": info,
            "temperature": temperature,
            "top_p": 1.0,
            "seed": seed + i,
            "max_new_tokens": max_new_tokens,
            "response": c.text,
            "token_ids": c.token_ids,
            "n_tokens": len(c.token_ids),
            "stopped": "length" if len(c.token_ids) >= max_new_tokens else "eos",
            "scores": {v: float(d.score) for v, d in verdicts.items()},
            "reasons": {v: d.reason for v, d in verdicts.items()},
            "seconds": round(time.perf_counter() - start, 2),
        }


def summary(rows: list[dict]) -> tuple[list[dict], dict]:
    """Per verifier: responses, pass rate, mean score; and the totals (mean score, all-pass responses, speed)."""
    per = {}
    for r in rows:
        for v, s in r["scores"].items():
            per.setdefault(v, []).append(s)
    table = [
        {"verifier": v, "n": len(s), "pass_rate": sum(x >= 1 for x in s) / len(s), "mean_score": sum(s) / len(s)}
        for v, s in sorted(per.items())
    ]
    scores = [s for r in rows for s in r["scores"].values()]
    tokens, seconds = sum(r["n_tokens"] for r in rows), sum(r["seconds"] for r in rows)
    totals = {
        "responses": len(rows),
        "mean_score": sum(scores) / max(len(scores), 1),
        "all_pass": sum(all(s >= 1 for s in r["scores"].values()) for r in rows),
        "passes_one_or_more": sum(any(s >= 1 for s in r["scores"].values()) for r in rows),
        "stopped_at_length": sum(r["stopped"] == "length" for r in rows),
        "tokens": tokens,
        "seconds": round(seconds, 1),
        "tokens_per_s": round(tokens / max(seconds, 1e-9), 2),
    }
    return table, totals


def write(rows: list[dict], out: Path, argv) -> Path:
    """The JSONL (atomically) and its summary ``.md``."""
    write_text(out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    table, totals = summary(rows)
    r0 = rows[0]
    prompt = "prompt with every verifier's information appended" if r0["info"] else "plain prompt"
    notes = [
        f"`{_common.command('capable_slice.py', argv)}`; {_common.machine()}; load average at the end "
        f"{_common.load_average()}.",
        "",
        f"Model `{r0['model']}`, task `{r0['task']}`, test split, one response per example: the {prompt}, "
        f"temperature {r0['temperature']}, top-p 1, at most {r0['max_new_tokens']} new tokens, seed "
        f"{r0['seed']} + index. {totals['responses']} responses: mean verifier score "
        f"{totals['mean_score']:.2f}; every verifier passes on {totals['all_pass']}, at least one on "
        f"{totals['passes_one_or_more']}; "
        f"{totals['stopped_at_length']} stopped at the length limit. Sampling: {totals['tokens']} tokens in "
        f"{totals['seconds']:.0f} s ({totals['tokens_per_s']:.1f} tokens/s, one thread, with the scoring).",
        "",
        f"Responses: `{out.name}` (exact token ids, text, every verifier's score and reason).",
    ]
    stem = out.with_name(out.name.removesuffix(".jsonl"))  # "..._t0.7": with_suffix would eat the ".7"
    _common.write_results(
        table, stem, "Capable slice: the model's own responses", notes, ["verifier", "n", "pass_rate", "mean_score"]
    )
    return stem.with_name(stem.name + ".md")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default="smollm2-135m-instruct", help="a folder or a known model's name")
    ap.add_argument("--task", default="instruction_following")
    ap.add_argument("--n", type=int, default=100, help="test examples (100: the whole split)")
    ap.add_argument("--quick", action="store_true", help="5 examples")
    ap.add_argument("--temperature", type=float, default=TEMPERATURE)
    ap.add_argument("--max-new-tokens", type=int, default=MAX_NEW_TOKENS)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument(
        "--info", action="store_true", help="append every verifier's information to the prompt (does the model use it?)"
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=None, help="the JSONL (default: benchmarks/data/<model>/<task>_t<T>.jsonl)")
    args = ap.parse_args(argv)
    set_threads(args.threads)
    from mrtpo_viz.policy import load_policy

    model = _common.model_label(args.checkpoint)
    policy = load_policy(args.checkpoint, device="cpu", dtype="float32")
    out = Path(args.out) if args.out else default_out(model, args.task, args.temperature, args.quick, args.info)
    rows = []
    for row in sample_rows(
        policy,
        args.task,
        5 if args.quick else args.n,
        args.temperature,
        args.max_new_tokens,
        args.seed,
        model,
        args.info,
    ):
        rows.append(row)
        print(f"{row['id']}: {row['n_tokens']} tokens in {row['seconds']:.1f}s, scores {row['scores']}", flush=True)
    md = write(rows, out, sys.argv[1:] if argv is None else argv)
    print(md.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
