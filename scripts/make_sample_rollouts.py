"""Write sample_data/rollouts/sample_rollouts.jsonl: a small rollouts file for the app's Rollouts tab.

Per task family, the first test examples with four responses each: the gold reference, another example's reference
(right format, wrong content: the correctness-type verifiers fail), the reference cut short (the format-type
verifiers fail too) and, when the bundled policy exists, its greedy response. Deterministic for a given policy.
Usage: python scripts/make_sample_rollouts.py [--per-task 4] [--policy sample_data/policies/tiny-mrtpo]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mrtpo_viz.names import TASKS  # noqa: E402
from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR, SAMPLE_ROLLOUTS  # noqa: E402
from mrtpo_viz.tasks.example_sources import load_examples  # noqa: E402

OUT = SAMPLE_ROLLOUTS
POLICY = BUNDLED_POLICY_DIR


def responses(examples, i: int) -> dict[str, str]:
    """Three responses to example ``i``: its reference, the next example's reference, its reference cut short."""
    ref, other = examples[i].reference, examples[(i + 1) % len(examples)].reference
    return {"reference": ref, "other_reference": other, "truncated": ref[: max(1, int(0.6 * len(ref)))]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--per-task", type=int, default=4)
    ap.add_argument("--policy", default=str(POLICY), help="adds its greedy response per example ('' for none)")
    args = ap.parse_args(argv)
    policy = None
    if args.policy and Path(args.policy, "config.json").is_file():
        import torch

        from mrtpo_viz.policy import load_policy

        torch.set_num_threads(1)
        policy = load_policy(args.policy, device="cpu", dtype="float32")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    with OUT.open("w", encoding="utf-8") as fh:
        for task in TASKS:
            examples = load_examples(task, split="test")
            for i in range(args.per_task):
                ex = examples[i]
                texts = responses(examples, i)
                if policy is not None:
                    texts["policy_greedy"] = policy.generate(ex, max_new_tokens=160, temperature=0.0, seed=0).text
                for kind, text in texts.items():
                    if not text.strip():
                        continue
                    row = {
                        "id": f"{ex.id}/{kind}",
                        "task": task,
                        "prompt": ex.prompt,
                        "meta": ex.meta,
                        "verifiers": list(ex.verifiers),
                        "response": text,
                        "kind": kind,
                    }
                    fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
                    n += 1
    print(f"{n} rollouts -> {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
