"""Agreement with the references people trust, run on their own code; writes benchmarks/results/reference_agreement_*.md.

``--bfcl``: ``tool_call.correctness`` against bfcl-eval's AST checker on every row of the supported BFCL categories,
with generated right, wrong, edge and fuzz calls (``benchmarks/bfcl_agreement.py``); tables per category and per
case class, and every difference (none expected). Needs ``pip install bfcl-eval==2026.3.23 --no-deps``.

Usage: ``python benchmarks/reference_agreement.py --bfcl [--limit N] [--out benchmarks/results]``.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

BY_DESIGN = """## Where we differ by design (outside the generated cases; each pinned by a test)

- Types outside BFCL's Python table (OpenAI's `number` and `object`, unknown names, an array without `items`): BFCL
  raises `KeyError`; we treat `number` as float (int promoted), `object` as dict, and compare unknown types literally.
- Inputs on which BFCL raises (a non-dict item in a list-of-dict value, a possible answer naming an undeclared
  function): we score 0 with a reason.
- Decoding: BFCL decodes Python-call syntax or each API's JSON; we decode `<tool_call>` JSON blocks (no tuples).
  Correctness ignores text around the blocks and extra keys in a block; `tool_call.format` rejects them.
- `underscore_to_dot` is BFCL's per-model setting; here it is `meta.underscore_to_dot` (default off).
- Java/JavaScript categories and those without AST answers are refused with the reason."""
COLUMNS = ("cases", "agree", "agreement_%", "bfcl_accepts", "ours_accepts", "same_error_class")


def _markdown(rows: list[dict], key: str) -> str:
    lines = [f"| {key} | " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * len(COLUMNS)]
    for r in rows:
        cells = [f"{r[c]:.2f}" if isinstance(r[c], float) else str(r[c]) for c in COLUMNS]
        lines.append(f"| {'**total**' if r[key] == 'total' else r[key]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def bfcl_report(limit=None) -> str:
    """The BFCL agreement report (markdown)."""
    import bfcl_agreement as agreement
    from importlib.metadata import version

    t0 = time.process_time()
    rows = agreement.agreement(limit=limit)
    seconds = time.process_time() - t0
    diffs = [r for r in rows if r["bfcl"] != r["ours"]]
    total = agreement.table(rows, "category")[-1]
    out = ["# Agreement with BFCL's AST checker", "",
           f"Command: `python benchmarks/reference_agreement.py --bfcl{f' --limit {limit}' if limit else ''}` · "
           f"bfcl-eval {version('bfcl-eval')} (its data and its `ast_checker`, run unchanged) · "
           f"Python {platform.python_version()} · {seconds:.0f} s CPU.", "",
           f"**{total['agree']:,} of {total['cases']:,} generated cases agree ({total['agreement_%']:.2f}%).** "
           "A case is a list of calls made from a row's possible answers (right variants, wrong ones, edge values "
           "near BFCL's type and normalization rules, seeded fuzz); its label says only how it was made, the truth "
           "is BFCL's verdict. BFCL scores the decoded calls; ours scores the same calls rendered as `<tool_call>` "
           "blocks. `same_error_class`: where both reject, BFCL's error type (coarsened) equals ours.", "",
           "## Per category", "", _markdown(agreement.table(rows, "category"), "category"), "",
           "## Per case class", "", _markdown(agreement.table(rows, "class"), "class"), "",
           f"## Differences ({len(diffs)})", ""]
    out += [f"- `{r['id']}` {r['class']}: BFCL {r['bfcl']} ({r['bfcl_err']}), ours {r['ours']} ({r['reason']}); "
            f"calls `{json.dumps(r['calls'], ensure_ascii=False)[:200]}`" for r in diffs] or ["None."]
    return "\n".join(out + ["", BY_DESIGN]) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bfcl", action="store_true", help="tool_call.correctness vs bfcl-eval's AST checker")
    ap.add_argument("--limit", type=int, default=None, help="only the first N rows of each category")
    ap.add_argument("--out", default=str(HERE / "results"))
    args = ap.parse_args(argv)
    if not args.bfcl:
        ap.error("choose a reference: --bfcl")
    report = bfcl_report(args.limit)
    path = Path(args.out) / "reference_agreement_bfcl.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
