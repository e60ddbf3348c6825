"""The slots policy: the bundled tiny policy fine-tuned on the ``slots`` task (:mod:`mrtpo_viz.tasks.slots`).

``python -m mrtpo_viz.sample_policy.slots_policy --out runs/policies/tiny-mrtpo-slots`` rebuilds it (600 steps: 17
minutes of one CPU thread on a busy shared machine; it is not shipped, the command is the recipe). The data follows the
bundled recipe (:mod:`.sft_data`): each part's information block is present independently with probability ``p_info``; a
part whose information is present always carries the right code, a part whose information is absent carries a wrong code
with probability ``p_wrong``. So the policy uses the information, and without it each reward passes about ``1 -
p_wrong`` of the time: a middling start with headroom that only the code token decides. The city -> code map is fixed
(the same in every prompt), so reinforcement can also teach it without the information.

``--conflict`` builds the conflict recipe (``runs/policies/tiny-mrtpo-slots-conflict``): every response opens with
``Mode A.`` or ``Mode B.`` (drawn 50/50), and without their information parts 1-2 carry a wrong code with probability
:data:`P_WRONG_CONFLICT` ``[0]`` in mode A and ``[1]`` in mode B, parts 3-4 the other way round. The mean error rate
is the main recipe's, but one early token makes the two pairs fail against each other: a response right on parts 1-2
is mostly wrong on 3-4, so a uniform credit that sums the four rewards' advantages on every token cancels much of
what each code token should learn."""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Optional
from collections.abc import Sequence

import torch

from ..relevance.contexts import with_info
from ..tasks import get_verifier
from ..tasks.generators import slots as gen
from ..tasks.slots import VERIFIERS, decision
from .sft_data import SftExample
from .slots_eval import pass_rates

P_INFO, P_WRONG = 0.5, 0.6
P_WRONG_CONFLICT = (0.9, 0.3)
"""The conflict recipe's error rates without information: (the pair its mode sets wrong, the other pair); mean 0.6."""


def sft_examples(
    n: int, seed: int, p_info: float = P_INFO, p_wrong: float = P_WRONG, conflict: Optional[tuple[float, float]] = None
) -> list[SftExample]:
    """``n`` fine-tuning examples: random information blocks, wrong codes only where the information is absent. With
    ``conflict = (p_set, p_other)``, each response opens with a mode line and a part without its information is wrong
    with ``p_set`` in the pair its mode sets (A: parts 1-2, B: parts 3-4), ``p_other`` in the other pair."""
    rng = random.Random(seed)
    out = []
    for ex in gen.generate(n, seed=10_000 + seed):
        mode = None if conflict is None else rng.choice(gen.MODES)
        present = tuple(v for v in VERIFIERS if rng.random() < p_info)
        codes, noised = list(ex.meta["codes"]), []
        for k, v in enumerate(VERIFIERS):
            p = p_wrong if mode is None else conflict[(k < 2) != (mode == "A")]
            if v not in present and rng.random() < p:
                codes[k], noised = gen.wrong_code(codes[k], rng), noised + [v]
        blocks = [(get_verifier(v).title, get_verifier(v).info(ex)) for v in present]
        out.append(
            SftExample(
                with_info(ex.messages(), blocks),
                gen.response(ex.meta["cities"], codes, rng, mode),
                present,
                tuple(noised),
                ex,
            )
        )
    return out


CODE_WEIGHT = 10.0
"""Loss weight of the four code tokens against 1 for every other response token: the filler words are most of the
loss but decide nothing, and without the weight 500 steps left the code at chance (0.1 with and without the
information)."""


def weighted_rows(tokenizer, examples: Sequence[SftExample], code_weight: float = CODE_WEIGHT) -> list[tuple]:
    """``(ids, n_prompt, weights)`` per example: weights over the response ids (the end-of-sequence included),
    ``code_weight`` on the tokens that overlap a part's code word (the header's city is copied from the prompt
    and needs no weight)."""
    from .build import render_prompt

    rows = []
    for ex in examples:
        prompt = tokenizer(render_prompt(tokenizer, ex.messages), add_special_tokens=False)["input_ids"]
        enc = tokenizer(ex.response, add_special_tokens=False, return_offsets_mapping=True)
        spans = [sp for k in range(1, len(VERIFIERS) + 1) for sp in [decision(ex.response, k)[1]] if sp]
        w = [code_weight if any(a < e and s < b for s, e in spans) else 1.0 for a, b in enc["offset_mapping"]]
        rows.append((prompt + enc["input_ids"] + [tokenizer.eos_token_id], len(prompt), w + [1.0]))
    return rows


def train_weighted(
    model, rows: list[tuple], *, steps: int, lr: float, batch: int, pad: int, seed: int, on_log=None
) -> list[dict]:
    """AdamW on the weighted next-token loss of the response tokens (warm-up, cosine decay; clipping at 1)."""
    from ..policy.padding import right_pad
    from .build import TinyPolicyConfig, lr_at

    sched = TinyPolicyConfig(steps=steps, lr=lr, warmup=min(50, steps))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.98), weight_decay=0.01)
    rng, log, running, t0 = random.Random(seed), [], [], time.time()
    model.train()
    for step in range(steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, sched)
        pick = [rows[i] for i in rng.sample(range(len(rows)), batch)]
        ids, _ = right_pad([r[0] for r in pick], pad)  # (B, L)
        weights = torch.zeros(ids.shape, dtype=torch.float32)  # (B, L): weight of predicting token j
        for b, (seq, n_prompt, w) in enumerate(pick):
            weights[b, n_prompt : len(seq)] = torch.tensor(w)
        hidden = model.model(input_ids=ids).last_hidden_state  # (B, L, H)
        keep = weights[:, 1:] > 0  # (B, L-1)
        logits = model.lm_head(hidden[:, :-1][keep])  # (M, V)
        ce = torch.nn.functional.cross_entropy(logits.float(), ids[:, 1:][keep], reduction="none")  # (M,)
        w = weights[:, 1:][keep]
        loss = (ce * w).sum() / w.sum()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        running.append(loss.item())
        if (step + 1) % 50 == 0 or step + 1 == steps:
            log.append({"step": step + 1, "loss": sum(running) / len(running), "seconds": round(time.time() - t0, 1)})
            running = []
            if on_log:
                on_log(log[-1])
    model.eval()
    return log


def build_slots_policy(
    out: str | Path,
    *,
    steps: int = 600,
    lr: float = 2e-3,
    n: int = 12000,
    seed: int = 0,
    threads: int = 1,
    init_from: Optional[str] = None,
    eval_prompts: int = 32,
    batch: int = 16,
    conflict: bool = False,
) -> dict:
    """Fine-tune ``init_from`` (default: the bundled policy) on slots data (the conflict recipe with ``conflict``);
    save to ``out``; measure pass rates."""
    from ..policy import load_policy
    from ..policy.padding import pad_id
    from ..tasks.bundled_data import BUNDLED_POLICY_DIR
    from ..tasks import load_examples
    from .build import load_stage, save

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    out, t0 = Path(out), time.time()
    model, tokenizer, previous = load_stage(init_from or BUNDLED_POLICY_DIR)
    cfg = {
        "steps": steps,
        "lr": lr,
        "batch": batch,
        "n": n,
        "seed": seed,
        "code_weight": CODE_WEIGHT,
        "init_from": str(init_from or "tiny-mrtpo"),
    }
    if conflict:
        cfg["conflict"] = list(P_WRONG_CONFLICT)
    rows = weighted_rows(tokenizer, sft_examples(n, seed, conflict=P_WRONG_CONFLICT if conflict else None))
    log = train_weighted(
        model,
        rows,
        steps=steps,
        lr=lr,
        batch=batch,
        pad=pad_id(tokenizer),
        seed=seed,
        on_log=lambda r: print(f"step {r['step']:4d}  loss {r['loss']:.4f}  {r['seconds']:.0f}s", flush=True),
    )
    out.mkdir(parents=True, exist_ok=True)
    save(model, tokenizer, out)
    policy = load_policy(str(out))
    test = load_examples("slots", "test")[:eval_prompts]
    results = {"without_info": pass_rates(policy, test, info=False), "with_info": pass_rates(policy, test, info=True)}
    stage = {
        "config": cfg,
        "p_info": P_INFO,
        "p_wrong": P_WRONG,
        "n_train_sequences": len(rows),
        "train_seconds": log[-1]["seconds"],
        "final_loss": log[-1]["loss"],
        "total_seconds": round(time.time() - t0),
    }
    info = {
        "stages": previous + [stage],
        "slots_pass_rates": results,
        "eval_prompts": len(test),
        "samples_per_prompt": 4,
    }
    (out / "build_info.json").write_text(json.dumps(info, indent=1) + "\n")
    return info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="runs/policies/tiny-mrtpo-slots")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--n", type=int, default=12000, help="fine-tuning examples")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--init-from", default=None, help="continue a saved policy (default: the bundled tiny-mrtpo)")
    ap.add_argument(
        "--conflict", action="store_true", help="the conflict recipe: a mode line sets which pair goes wrong"
    )
    args = ap.parse_args(argv)
    info = build_slots_policy(
        args.out,
        steps=args.steps,
        lr=args.lr,
        n=args.n,
        seed=args.seed,
        threads=args.threads,
        init_from=args.init_from,
        conflict=args.conflict,
    )
    print(json.dumps(info["slots_pass_rates"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
