"""Write the bundled sample data: sample_data/tasks/<task>.jsonl (train and test splits) and the SQL databases.

Deterministic: the same seed gives byte-identical files.  Usage: python scripts/make_sample_data.py [--seed 0]
Every gold reference is checked with its verifiers before anything is written (instruction following: IFEval's
official strict semantics, kwargs and descriptions; its generator already draws again when a gold fails).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mrtpo_viz.tasks.bundled_data import SAMPLE_DATA  # noqa: E402
from mrtpo_viz.tasks import get_verifier  # noqa: E402
from mrtpo_viz.tasks.generators import FAMILY_MODULES  # noqa: E402

N_TRAIN, N_TEST = 300, 100


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default=None, help="one task family")
    args = ap.parse_args(argv)
    out_dir = SAMPLE_DATA / "tasks"
    out_dir.mkdir(parents=True, exist_ok=True)
    for task, modname in FAMILY_MODULES.items():
        if args.only and task != args.only:
            continue
        mod = importlib.import_module(modname)
        if hasattr(mod, "build_databases"):
            mod.build_databases(SAMPLE_DATA / "databases")
        examples = mod.generate(N_TRAIN + N_TEST, seed=args.seed)
        failing = [
            (i, n)
            for i, ex in enumerate(examples)
            for n in ex.verifiers
            if get_verifier(n).score(ex.reference, ex) != 1.0
        ]
        if failing:
            raise SystemExit(f"{task}: gold references fail their verifiers (example, verifier): {failing[:10]}")
        with (out_dir / f"{task}.jsonl").open("w", encoding="utf-8") as fh:
            for i, ex in enumerate(examples):
                row = ex.to_dict()
                row["split"] = "train" if i < N_TRAIN else "test"
                row["id"] = row["id"] or f"{task}-{row['split']}-{i:04d}"
                fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
        print(f"{task}: {len(examples)} examples -> {out_dir / (task + '.jsonl')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
