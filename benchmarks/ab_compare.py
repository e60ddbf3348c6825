"""The A/B tab on real examples: does the example's own information (A) focus a verifier's relevance on its spans
more than the verifier's generic description (B, the tab's first rewording)?

For each model, the first ``--n`` held-out instruction-following examples with a gold response, and each of their
verifiers whose spans on that response are not empty and whose own information differs from its description: the
tab's comparison (two replays of the gold response, one verifier, information A then B, JS, no control) and its
summary numbers (:func:`mrtpo_viz.relevance.diagnostics.relevance_summary`): the share of the relevance on the
verifier's relevant spans, the mean relevance, the effective number of tokens, and the largest per-token B - A.
``compare_s`` is the wall time of the two replays (the tab's handler adds a few milliseconds of rendering).

    python benchmarks/ab_compare.py --checkpoint tiny-mrtpo,smollm2-135m-instruct   # ab_compare.{csv,md}
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from _common import RESULTS, median, set_threads  # noqa: E402

TASK = "instruction_following"


def cases(n: int) -> list[tuple]:
    """(example, verifier name, information A, information B) for the first ``n`` test examples with a gold
    response; a verifier is kept where its spans on the gold are not empty and A differs from B."""
    from mrtpo_viz.tasks import get_verifier
    from mrtpo_viz.tasks.example_sources import load_examples

    out = []
    for ex in [e for e in load_examples(TASK, "test") if e.reference][:n]:
        for name in ex.verifiers:
            v = get_verifier(name)
            a, b = v.info(ex), v.description
            if a != b and v.relevant_spans(ex.reference, ex):
                out.append((ex, name, a, b))
    return out


def compare_rows(checkpoint: str, n: int) -> list[dict]:
    """One row per case: A's and B's summary numbers, the largest |B - A| and the seconds of the two replays."""
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.relevance import replay
    from mrtpo_viz.relevance.diagnostics import relevance_summary

    policy, model, rows = load_policy(checkpoint), _common.model_label(checkpoint), []
    for ex, name, info_a, info_b in cases(n):
        start = time.perf_counter()
        rel_a, rel_b = (replay(policy, ex, ex.reference, [name], infos={name: info}) for info in (info_a, info_b))
        seconds = time.perf_counter() - start
        a, b = relevance_summary(rel_a, name), relevance_summary(rel_b, name)
        in_span = rel_a.token_in_span(name)
        rows.append(
            {
                "model": model,
                "example": ex.id,
                "verifier": name,
                "tokens": rel_a.T,
                "span_token_share": sum(in_span) / max(len(in_span), 1),
                "span_mass_a": a["span_mass"],
                "span_mass_b": b["span_mass"],
                "mean_a": a["mean"],
                "mean_b": b["mean"],
                "effective_tokens_a": a["effective_tokens"],
                "effective_tokens_b": b["effective_tokens"],
                "max_abs_b_minus_a": float((rel_b.scores - rel_a.scores).abs().max()),
                "compare_s": seconds,
            }
        )
        print(model, ex.id, name, f"span mass A {a['span_mass']:.3f} B {b['span_mass']:.3f}", flush=True)
    return rows


def summary(rows: list[dict]) -> dict:
    """Per model: medians over the cases and the share of cases where A puts more of the relevance on the spans."""
    pick = lambda key: [r[key] for r in rows]  # noqa: E731
    better = sum(r["span_mass_a"] > r["span_mass_b"] for r in rows)
    return {
        "model": rows[0]["model"],
        "cases": len(rows),
        "examples": len({r["example"] for r in rows}),
        "span_token_share_median": round(median(pick("span_token_share")), 3),
        "span_mass_a_median": round(median(pick("span_mass_a")), 3),
        "span_mass_b_median": round(median(pick("span_mass_b")), 3),
        "a_more_on_spans": f"{better}/{len(rows)}",
        "mean_a_median": round(median(pick("mean_a")), 3),
        "mean_b_median": round(median(pick("mean_b")), 3),
        "effective_tokens_a_median": round(median(pick("effective_tokens_a")), 1),
        "effective_tokens_b_median": round(median(pick("effective_tokens_b")), 1),
        "max_abs_b_minus_a_median": round(median(pick("max_abs_b_minus_a")), 3),
        "compare_s_median": round(median(pick("compare_s")), 2),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", default="tiny-mrtpo", help="comma-separated folders or known models' names")
    ap.add_argument("--n", type=int, default=20, help="held-out examples per model")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", default=str(RESULTS / "ab_compare"))
    args = ap.parse_args(argv)
    set_threads(args.threads)
    per_case = {c: compare_rows(c, args.n) for c in args.checkpoint.split(",")}
    rows = [summary(r) for r in per_case.values() if r]
    out = Path(args.out)
    _common.write_results(
        [r for rs in per_case.values() for r in rs],
        out.with_name(out.name + "_cases"),
        "A/B tab on real examples: every case",
    )
    note = [
        f"`{_common.command('ab_compare.py', sys.argv[1:])}`; {_common.machine()}.",
        "",
        f"The first {args.n} held-out {TASK} examples with a gold response; per verifier whose spans on it are "
        "not empty and whose own information (A) differs from its generic description (B): the A/B tab's "
        "comparison of the gold response (JS, no control). `span_mass`: share of the verifier's relevance on "
        "its relevant spans (`span_token_share`: the share of the tokens inside them, what a uniform "
        "relevance gives); `a_more_on_spans`: cases where A's share is larger; `effective_tokens`: exp of "
        "the entropy of the normalized relevance; `max_abs_b_minus_a`: the largest per-token difference; "
        "`compare_s`: the two replays. Every case: `ab_compare_cases.csv`.",
    ]
    _, md = _common.write_results(rows, out, "A/B tab on real examples", note)
    print(md.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
