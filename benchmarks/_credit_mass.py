"""``localization.py --credit``: each credit method's mass on the verifiers' decision spans.

For every held-out gold response of the bundled families and every verifier with spans on it, each credit method
that one replay feeds (``mrtpo_viz.viz.credit_compare.app_credits``: the registry's, not a copied list) gives token
weights for that verifier; its *mass on the spans* is the share of its weight on the span tokens. Uniform weighting
(GDPO) puts the span tokens' share of the response there, so ``mass / uniform`` > 1 means the method concentrates
credit on the tokens that decide the verdict. Means over (response, verifier) pairs, per family and overall.
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

import numpy as np


def run_credit(checkpoint: str, n: int, tasks) -> tuple[list[dict], dict]:
    from mrtpo_viz import load_policy, replay
    from mrtpo_viz.tasks import load_examples
    from mrtpo_viz.viz.credit_compare import app_credits, compare_credits

    policy = load_policy(checkpoint, device="cpu", dtype="float32")
    methods, rows, start = app_credits(), [], time.perf_counter()
    for task in tasks:
        shares = {m: [] for m in methods + ["uniform"]}
        for ex in [e for e in load_examples(task, "test") if e.reference][:n]:
            rel = replay(policy, ex, ex.reference, list(ex.verifiers))
            for v in rel.verifiers:
                comp = compare_credits(rel, v, methods)
                if comp.uniform_share is None:  # no span tokens on this response
                    continue
                shares["uniform"].append(comp.uniform_share)
                for m, s in zip(methods, comp.span_share):
                    shares[m].append(s)
        for m, values in shares.items():
            rows.append(
                {
                    "task": task,
                    "method": m,
                    "mass": float(np.mean(values)) if values else float("nan"),
                    "n": len(values),
                }
            )
    info = {"model": policy.name, "seconds": time.perf_counter() - start, "n": n}
    return rows, info


def write_credit(rows: list[dict], info: dict, out: Path, command: str) -> str:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "localization_credit.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["task", "method", "mass", "n"])
        writer.writeheader()
        writer.writerows(rows)
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    get = {(r["task"], r["method"]): r for r in rows}
    lines = [
        "# Credit methods: mass on the decision spans",
        "",
        f"Command: `{command}` · policy `{info['model']}` · gold responses, up to {info['n']} held-out examples per "
        f"family · {info['seconds']:.0f} s on one CPU thread. Mass = share of a method's weight for a verifier on "
        "that verifier's decision-span tokens, mean over (response, verifier) pairs with spans; uniform = the span "
        "tokens' share (GDPO's mass); in brackets the ratio to uniform.",
        "",
        "| method | " + " | ".join(tasks) + " |",
        "|---|" + "---:|" * len(tasks),
    ]
    for m in methods:
        cells = []
        for t in tasks:
            r, u = get[(t, m)], get[(t, "uniform")]
            cells.append(f"{r['mass']:.3f} ({r['mass'] / u['mass']:.2f}x)" if r["n"] else "-")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    lines.append("| pairs (n) | " + " | ".join(str(get[(t, "uniform")]["n"]) for t in tasks) + " |")
    text = "\n".join(lines) + "\n"
    (out / "localization_credit.md").write_text(text)
    print(text, file=sys.stdout)
    return text
