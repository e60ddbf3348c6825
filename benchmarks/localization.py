"""Localization benchmark: does relevance point at the tokens that decide each verifier's verdict?

Held-out split of every task family, gold reference responses, every verifier with ``relevant_spans``. Methods:
raw JS (the paper's signal), each ``control`` of the replay (placebo, corrupted, others), KL, and two baselines
that know nothing of the verifier: the no-information token entropy and a uniform score. Three views, per verifier
and as a mean over verifiers:

(a) span AUROC: relevance against the tokens the verifier's spans cover (all tokens; and the first token of each
    span against the tokens outside every span);
(b) reward specificity: on responses with two or more verifiers, AUROC of ``rel_k - rel_j`` for telling tokens
    relevant to k (and not j) from tokens relevant to j (and not k); entropy and uniform give 0.5 by construction;
(c) error localization: one error injected into the gold response makes verifier k fail at a known token (the first
    character that differs; the eos token that ends the response when the error cuts text off at the end); where
    does verifier k's relevance rank that token (top-1 and top-3 rates; ties count at their mean rank)?

With ``--slice FILE`` (a JSONL written by ``benchmarks/capable_slice.py``) the responses are the policy's own
sampled ones instead of the gold references: views (a) and (b) use every verifier's spans on the policy's response,
view (c) injects errors into that response for the verifiers it passes. This is the "capable slice" of a real model
that fails most gold-style tasks: instruction following, where its own responses pass about half the constraints.

Usage: ``python benchmarks/localization.py [--quick] [--n 100] [--checkpoint DIR_OR_NAME] [--slice FILE]
[--out benchmarks/results]``; ``--credit``: each credit method's mass on the decision spans instead
(``benchmarks/_credit_mass.py``, ``localization_credit.*``);
``--tasks bfcl --category parallel`` runs it on BFCL's rows instead (one or more calls per response; needs bfcl-eval,
and writes ``localization_bfcl_<category>.*``). Writes ``localization.csv`` (long: model, view, verifier, method,
value, n) and ``localization.md`` (``--slice``: ``localization_slice.*``; ``--quick``: ``*_quick.*``).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.stats import rankdata

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mrtpo_viz.names import TASKS  # noqa: E402
from mrtpo_viz.tasks.example_sources import load_examples  # noqa: E402

METHODS = ("js_raw", "js_placebo", "js_corrupted", "js_others", "kl", "entropy", "uniform")
"""Relevance signals compared; the first five come from the replay, the last two are baselines."""
REPLAYS = {
    "js_raw": ("js", "none"),
    "js_placebo": ("js", "placebo"),
    "js_corrupted": ("js", "corrupted"),
    "js_others": ("js", "others"),
    "kl": ("kl", "none"),
}
"""Replays run per response: (metric, control), all from one batched forward."""


def auroc(scores, labels) -> float:
    """Area under the ROC curve by the rank-sum (Mann-Whitney U) formula; ties get average ranks; NaN if one class
    is empty. ``scores`` (N,), ``labels`` (N,) bool."""
    scores, labels = np.asarray(scores, dtype=float), np.asarray(labels, dtype=bool)
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(scores)
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def mean_rank(scores, index: int) -> float:
    """1-based rank of ``scores[index]`` from the top, ties at their mean rank."""
    scores = np.asarray(scores, dtype=float)
    greater, equal = int((scores > scores[index]).sum()), int((scores == scores[index]).sum())
    return greater + (equal + 1) / 2


def signals(policy, ex, response, verifiers: list[str]) -> tuple[dict[str, np.ndarray], object]:
    """Every method's (K, T) relevance for one response (text or token ids), and one Relevance (offsets, spans):
    all replays from one batched forward (:func:`replay_variants`)."""
    from mrtpo_viz.relevance.engine import replay_variants

    variants = list(REPLAYS.values())
    try:
        rels = replay_variants(policy, ex, response, verifiers, variants)
    except ValueError:  # a verifier whose information never varies has no corruption: the others', row by row
        rels = replay_variants(policy, ex, response, verifiers, [x for x in variants if x[1] != "corrupted"])
        rels[("js", "corrupted")] = None
    out = {}
    for method, key in REPLAYS.items():
        out[method] = (
            rels[key].scores.numpy()
            if rels[key] is not None
            else np.stack([_corrupted_row(policy, ex, response, v) for v in verifiers])
        )
    rel = rels[("js", "none")]
    K, T = out["js_raw"].shape
    out["entropy"] = np.broadcast_to(rel.entropy.numpy(), (K, T))
    out["uniform"] = np.zeros((K, T))
    return out, rel


def _corrupted_row(policy, ex, response, verifier: str) -> np.ndarray:
    """(T,) relevance of one verifier under the ``corrupted`` control, NaN where it has no corruption (its
    information is the same for every example and no other verifier's can be borrowed)."""
    from mrtpo_viz.relevance.engine import replay

    try:
        return replay(policy, ex, response, [verifier], control="corrupted").scores[0].numpy()
    except ValueError:
        ids = (
            response
            if isinstance(response, list)
            else policy.tokenizer(response, add_special_tokens=False)["input_ids"]
        )
        return np.full(len(ids), np.nan)


def token_masks(rel, verifier: str) -> tuple[np.ndarray, np.ndarray]:
    """(T,) bool: tokens overlapping a span of the verifier, and tokens holding the first character of a span."""
    spans = rel.spans.get(verifier) or []
    inside = np.array([any(a < e and s < b for a, b in spans) for s, e in rel.offsets], dtype=bool)
    first = np.array([any(s <= a < e for a, _ in spans) for s, e in rel.offsets], dtype=bool)
    return inside, first


@dataclass
class Pools:
    """Pooled (score, label) pairs per (view, verifier, method), and error ranks per (verifier, method)."""

    pairs: dict = field(default_factory=dict)
    ranks: dict = field(default_factory=dict)

    def add(self, view: str, verifier: str, method: str, scores, labels) -> None:
        if np.isnan(scores).any():  # a method that does not apply to this verifier
            return
        score_list, label_list = self.pairs.setdefault((view, verifier, method), ([], []))
        score_list.append(np.asarray(scores, dtype=float))
        label_list.append(np.asarray(labels, dtype=bool))


def spans_and_specificity(pools: Pools, sig: dict, rel) -> None:
    """Views (a) and (b) for one gold response."""
    masks = {v: token_masks(rel, v) for v in rel.verifiers}
    for k, v in enumerate(rel.verifiers):
        inside, first = masks[v]
        for method, s in sig.items():
            pools.add("span_all", v, method, s[k], inside)
            pools.add("span_first", v, method, s[k][first | ~inside], first[first | ~inside])
            for j, w in enumerate(rel.verifiers):
                only_k, only_j = inside & ~masks[w][0], masks[w][0] & ~inside
                if j != k and only_k.any() and only_j.any():
                    keep = only_k | only_j
                    pools.add("specificity", v, method, (s[k] - s[j])[keep], only_k[keep])


def error_localization(pools: Pools, policy, ex, rng: random.Random, data_pools, passing=None) -> None:
    """View (c): one injected error per verifier of the example (``passing``: only these verifiers, the ones the
    response passes; an error cannot be injected into a verdict that already fails)."""
    from mrtpo_viz.sample_policy.sft_data import inject_error

    for k, v in enumerate(ex.verifiers):
        if passing is not None and v not in passing:
            continue
        bad = inject_error(ex, v, rng, data_pools)
        if bad is None:
            continue
        at = next((i for i, (a, b) in enumerate(zip(bad, ex.reference)) if a != b), min(len(bad), len(ex.reference)))
        # the response ends with eos, as generated: text cut at the end (a missing end phrase or postscript) is
        # decided where the policy stops, so the error token is then the eos token
        ids = policy.tokenizer(bad, add_special_tokens=False)["input_ids"] + [policy.tokenizer.eos_token_id]
        sig, rel = signals(policy, ex, ids, list(ex.verifiers))
        t = next((i for i, (s, e) in enumerate(rel.offsets[:-1]) if s <= at < e), rel.T - 1)
        for method, s in sig.items():
            if not np.isnan(s[k]).any():
                pools.ranks.setdefault((v, method), []).append(mean_rank(s[k], t))


def summarize(pools: Pools) -> list[dict]:
    """Long rows: view, verifier, method, value, n (pooled over responses); :func:`with_means` adds the means."""
    rows = []
    for (view, v, method), (score_list, label_list) in sorted(pools.pairs.items()):
        labels = np.concatenate(label_list)
        rows.append(
            {
                "view": view,
                "verifier": v,
                "method": method,
                "value": auroc(np.concatenate(score_list), labels),
                "n": int(labels.sum()),
            }
        )
    for (v, method), ranks in sorted(pools.ranks.items()):
        r = np.asarray(ranks)
        rows.append(
            {"view": "error_top1", "verifier": v, "method": method, "value": float((r <= 1).mean()), "n": len(r)}
        )
        rows.append(
            {"view": "error_top3", "verifier": v, "method": method, "value": float((r <= 3).mean()), "n": len(r)}
        )
    return rows


def with_means(rows: list[dict]) -> list[dict]:
    """``rows`` without their mean rows, and the means over verifiers recomputed per (model, view, method): how the
    runs of one model's families (``--tasks``, in parallel processes) join into one table."""
    rows = [r for r in rows if r["verifier"] != "mean"]
    means = {}
    for r in rows:
        if not np.isnan(r["value"]):
            means.setdefault((r["model"], r["view"], r["method"]), []).append(r["value"])
    return rows + [
        {"model": model, "view": view, "verifier": "mean", "method": m, "value": float(np.mean(x)), "n": len(x)}
        for (model, view, m), x in sorted(means.items())
    ]


def merge(paths: list[str]) -> list[dict]:
    """The rows of several ``localization*.csv`` files (one model's families), means recomputed."""
    import csv

    rows = [
        {**r, "value": float(r["value"]), "n": int(r["n"])}
        for path in paths
        for r in csv.DictReader(open(path, newline=""))
    ]
    return with_means(rows)


VIEWS = {
    "span_all": "(a) span AUROC, all span tokens",
    "span_first": "(a) span AUROC, first token of each span",
    "specificity": "(b) reward specificity AUROC of rel_k - rel_j",
    "error_top1": "(c) error localization, top-1",
    "error_top3": "(c) error localization, top-3",
}


def markdown(rows: list[dict], header: str) -> str:
    """One table per view: verifiers x methods, the mean last."""
    out = [header]
    for view, title in VIEWS.items():
        table = {(r["verifier"], r["method"]): r for r in rows if r["view"] == view}
        verifiers = sorted({v for v, _ in table if v != "mean"}) + ["mean"]
        out += [
            f"\n### {title}\n",
            "| verifier | n | " + " | ".join(METHODS) + " |",
            "|---|---:|" + "---:|" * len(METHODS),
        ]
        for v in verifiers:
            cells = [table.get((v, m)) for m in METHODS]
            n = next((c["n"] for c in cells if c), 0)
            vals = ["" if c is None or np.isnan(c["value"]) else f"{c['value']:.2f}" for c in cells]
            out.append(f"| {'**mean**' if v == 'mean' else '`' + v + '`'} | {n} | " + " | ".join(vals) + " |")
    return "\n".join(out) + "\n"


def gold_cases(task: str, n: int, category=None) -> list[tuple]:
    """(example, response, verifiers it passes) for the first ``n`` test examples with a gold reference
    (``category``: BFCL's, for ``bfcl``)."""
    options = {"category": category} if task == "bfcl" and category else {}
    return [(e, e.reference, None) for e in load_examples(task, "test", **options) if e.reference][:n]


def slice_cases(path: Path, n: int) -> dict[str, list[tuple]]:
    """Per task, (example whose reference is the policy's own response, its exact token ids, verifiers it passes)
    from a capable-slice JSONL (``benchmarks/capable_slice.py``); the first ``n`` rows of each task."""
    import dataclasses
    import json

    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    out: dict[str, list[tuple]] = {}
    for task in dict.fromkeys(r["task"] for r in rows):
        by_id = {e.id: e for e in load_examples(task, "test")}
        for r in [r for r in rows if r["task"] == task][:n]:
            ex = dataclasses.replace(by_id[r["id"]], reference=r["response"])
            passing = {v for v, score in r["scores"].items() if score >= 1.0}
            out.setdefault(task, []).append((ex, list(r["token_ids"]), passing))
    return out


def run(checkpoint: str, n: int, seed: int = 0, slice_path=None, tasks=TASKS, category=None) -> tuple[list[dict], dict]:
    """All three views over the first ``n`` test examples of each family (``category``: BFCL's, for ``bfcl``) or of
    the slice; returns (rows, run info)."""
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.sample_policy.sft_data import Pools as DataPools

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import model_label

    policy, pools, rng, t0 = load_policy(checkpoint), Pools(), random.Random(seed), time.time()
    cases = slice_cases(slice_path, n) if slice_path else {task: gold_cases(task, n, category) for task in tasks}
    counts = {}
    for task, items in cases.items():
        options = {"category": category} if task == "bfcl" and category else {}
        data_pools = DataPools.from_examples(load_examples(task, "train", **options))
        for i, (ex, response, passing) in enumerate(items):
            sig, rel = signals(policy, ex, response, list(ex.verifiers))
            spans_and_specificity(pools, sig, rel)
            error_localization(pools, policy, ex, rng, data_pools, passing)
            print(f"{task}: {i + 1}/{len(items)} examples, {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
        counts[task] = len(items)
    model = model_label(checkpoint)
    rows = with_means([{"model": model, **r} for r in summarize(pools)])
    return rows, {
        "examples": counts,
        "seconds": round(time.time() - t0, 1),
        "checkpoint": checkpoint,
        "model": model,
        "slice": str(slice_path) if slice_path else None,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--checkpoint",
        default="tiny-mrtpo",
        help="a checkpoint folder, 'tiny-mrtpo' or a known real model (smollm2-135m-instruct)",
    )
    ap.add_argument("--slice", default=None, help="a capable-slice JSONL: the policy's own responses, not the gold")
    ap.add_argument("--n", type=int, default=100, help="test examples per task family (100: the whole split)")
    ap.add_argument("--quick", action="store_true", help="5 examples per family (for `python -m mrtpo_viz bench`)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    ap.add_argument("--tasks", default=",".join(TASKS), help="comma-separated task families (bfcl too)")
    ap.add_argument("--category", default=None, help="BFCL category for --tasks bfcl (default simple_python)")
    ap.add_argument(
        "--merge",
        default=None,
        help="comma-separated localization CSVs of one model's families (runs of --tasks in parallel): "
        "write localization_merged.{csv,md} from them with the means recomputed, run nothing",
    )
    ap.add_argument("--credit", action="store_true", help="each credit method's mass on the decision spans instead")
    args = ap.parse_args(argv)
    if args.credit:  # benchmarks/_credit_mass.py; writes localization_credit.{csv,md}
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _common import command
        from _credit_mass import run_credit, write_credit

        rows, info = run_credit(args.checkpoint, 5 if args.quick else args.n, [t for t in args.tasks.split(",") if t])
        write_credit(rows, info, Path(args.out), command("localization.py", sys.argv[1:]))
        return 0
    if args.merge:
        rows = merge(args.merge.split(","))
        info = {"model": rows[0]["model"], "slice": None, "merged": args.merge}
        write(rows, info, Path(args.out), suffix="_merged")
        return 0
    import torch

    torch.set_num_threads(args.threads)
    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    rows, info = run(args.checkpoint, 5 if args.quick else args.n, args.seed, args.slice, tasks, args.category)
    suffix = "" if tasks == list(TASKS) else "_" + "_".join(tasks + ([args.category] if args.category else []))
    write(
        rows, info, Path(args.out), suffix=suffix + ("_slice" if args.slice else "") + ("_quick" if args.quick else "")
    )
    return 0


def write(rows: list[dict], info: dict, out: Path, suffix: str = "") -> None:
    import csv

    out.mkdir(parents=True, exist_ok=True)
    with (out / f"localization{suffix}.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["model", "view", "verifier", "method", "value", "n"])
        writer.writeheader()
        writer.writerows(rows)
    own = (
        f"The policy's own responses from `{info['slice']}` (views a, b; every verifier's spans on that response) "
        "and one injected error per verifier the response passes (view c)"
    )
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import command

    header = (
        f"# Localization benchmark\n\nCommand: `{command('localization.py', sys.argv[1:])}` · policy "
        f"`{info['model']}` · "
        + (
            f"merged from `{info['merged']}` (each written by its own `--tasks` run), means over all their verifiers. "
            if info.get("merged")
            else f"held-out examples per family: {info['examples']} · {info['seconds']:.0f} s on one CPU thread. "
        )
        + (own if info["slice"] else "Gold responses (views a, b) and one injected error per verifier (view c)")
        + ". AUROC 0.5 = chance; n = positive tokens (a, b) or responses (c); on the mean row, n = "
        "verifiers averaged. Verifiers whose spans are empty on a passing response (no_comma, lowercase, "
        "uppercase, forbidden_words) have no positives in (a) and appear in (c) only; the corrupted control "
        "needs information that varies between examples (not the format verifiers').\n"
    )
    (out / f"localization{suffix}.md").write_text(markdown(rows, header))
    print((out / f"localization{suffix}.md").read_text())


if __name__ == "__main__":
    raise SystemExit(main())
