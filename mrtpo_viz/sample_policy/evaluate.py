"""Measure the bundled tiny policy on the held-out split, and write its model card.

Two questions per verifier, on the ``test`` split of the sample data:

- **Pass rate** of completions sampled at temperature 1, without any information block and with that verifier's
  own block (at the end of the user message, as the replay's default puts it). Without information it should be
  imperfect (the data design aims at ~40-80%); with it, higher.
- **p(gold)**: the probability, teacher-forced on the gold reference, of the gold token at the positions that the
  verifier's ``relevant_spans`` cover, without and with the verifier's information. If the policy uses the
  information, p(gold) rises on exactly those tokens.
"""

from __future__ import annotations

import json
import platform
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

import torch

from ..relevance.contexts import with_info
from ..names import TASKS
from ..tasks.base import Example
from ..tasks.example_sources import load_examples
from ..tasks import get_verifier


@dataclass(frozen=True)
class EvalConfig:
    """How much of the held-out split to measure."""

    n_examples: tuple[tuple[str, int], ...] = (
        ("tool_calling", 50),
        ("text_to_sql", 50),
        ("instruction_following", 100),
    )
    """Test examples per task family (the first n of the split; instruction following needs more, as each of its
    verifiers applies to a few examples only)."""
    samples: int = 4
    """Completions sampled per prompt and condition at temperature 1."""
    max_new_tokens: int = 128
    seed: int = 0


def prompt_ids(tokenizer, ex: Example, verifier: Optional[str] = None) -> list[int]:
    """Chat prompt ids without information, or with one verifier's block at the end of the user message."""
    blocks = [] if verifier is None else [(get_verifier(verifier).title, get_verifier(verifier).info(ex))]
    text = tokenizer.apply_chat_template(
        with_info(ex.messages(), blocks, "user_end"), tokenize=False, add_generation_prompt=True
    )
    return tokenizer(text, add_special_tokens=False)["input_ids"]


@torch.no_grad()
def sample(model, tokenizer, ids: list[int], n: int, max_new_tokens: int, temperature: float = 1.0) -> list[str]:
    """``n`` completions of one prompt (no padding needed: the rows share the prompt)."""
    x = torch.tensor([ids] * n)  # (n, P)
    kw = dict(do_sample=True, temperature=temperature, top_k=0, top_p=1.0) if temperature > 0 else dict(do_sample=False)
    out = model.generate(
        x,
        attention_mask=torch.ones_like(x),
        max_new_tokens=max_new_tokens,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **kw,
    )
    return [tokenizer.decode(row[len(ids) :], skip_special_tokens=True) for row in out]


def pass_rates(model, tokenizer, examples: list[Example], cfg: EvalConfig) -> dict[str, dict[str, float]]:
    """Per verifier: sampled pass rate without information, with its own information, and greedy without."""
    hits: dict[str, dict[str, list[float]]] = {}
    for i, ex in enumerate(examples):
        torch.manual_seed(cfg.seed * 100_003 + i)
        plain = sample(model, tokenizer, prompt_ids(tokenizer, ex), cfg.samples, cfg.max_new_tokens)
        greedy = sample(model, tokenizer, prompt_ids(tokenizer, ex), 1, cfg.max_new_tokens, temperature=0)
        for name in ex.verifiers:
            v = get_verifier(name)
            informed = sample(model, tokenizer, prompt_ids(tokenizer, ex, name), cfg.samples, cfg.max_new_tokens)
            h = hits.setdefault(name, {"without": [], "with": [], "greedy_without": []})
            h["without"] += [float(v.score(r, ex) >= 1.0) for r in plain]
            h["with"] += [float(v.score(r, ex) >= 1.0) for r in informed]
            h["greedy_without"] += [float(v.score(r, ex) >= 1.0) for r in greedy]
    return {
        name: {k: sum(xs) / len(xs) for k, xs in h.items()} | {"n_examples": len(h["greedy_without"])}
        for name, h in hits.items()
    }


@torch.no_grad()
def gold_logprobs(model, tokenizer, ex: Example, verifier: Optional[str] = None) -> torch.Tensor:
    """(T,) log-prob of each gold reference token, teacher-forced, without or with one verifier's information."""
    prompt = prompt_ids(tokenizer, ex, verifier)
    response = tokenizer(ex.reference, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt + response])  # (1, P + T)
    logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1]  # (T, V)
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp.gather(-1, torch.tensor(response)[:, None])[:, 0]


def relevant_tokens(tokenizer, ex: Example, verifier: str) -> torch.Tensor:
    """(T,) bool: reference tokens that overlap the verifier's relevant spans of the reference."""
    enc = tokenizer(ex.reference, add_special_tokens=False, return_offsets_mapping=True)
    spans = get_verifier(verifier).relevant_spans(ex.reference, ex) or []
    return torch.tensor([any(a < e and s < b for a, b in spans) for s, e in enc["offset_mapping"]], dtype=torch.bool)


def p_gold(model, tokenizer, examples: list[Example]) -> dict[str, dict[str, float]]:
    """Per verifier: mean p(gold token) over its relevant tokens, without and with its information."""
    acc: dict[str, dict[str, list[torch.Tensor]]] = {}
    for ex in examples:
        base = gold_logprobs(model, tokenizer, ex).exp()
        for name in ex.verifiers:
            mask = relevant_tokens(tokenizer, ex, name)
            if not mask.any():
                continue
            a = acc.setdefault(name, {"without": [], "with": []})
            a["without"].append(base[mask])
            a["with"].append(gold_logprobs(model, tokenizer, ex, name).exp()[mask])
    return {
        name: {
            "without": torch.cat(a["without"]).mean().item(),
            "with": torch.cat(a["with"]).mean().item(),
            "tokens": int(sum(x.numel() for x in a["with"])),
        }
        for name, a in acc.items()
    }


def evaluate(model, tokenizer, seed: int = 0, cfg: Optional[EvalConfig] = None) -> dict:
    """Pass rates and p(gold) per verifier on the first examples of each family's test split."""
    cfg = cfg or EvalConfig(seed=seed)
    model.eval()
    out = {"eval_config": asdict(cfg), "pass_rate": {}, "p_gold": {}}
    for task, n in cfg.n_examples:
        examples = [e for e in load_examples(task, "test") if e.reference][:n]
        out["pass_rate"].update(pass_rates(model, tokenizer, examples, cfg))
        out["p_gold"].update(p_gold(model, tokenizer, examples))
    return out


# ------------------------------------------------------------------------------------------------ model card
def _table(results: dict) -> str:
    rows = [
        "| verifier | examples | pass, no info (T=1) | pass, own info (T=1) | pass, no info (greedy) "
        "| p(gold) relevant tokens, no info | with info | tokens |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name in sorted(results["pass_rate"], key=lambda n: (TASKS.index(get_verifier(n).task), n)):
        r, g = results["pass_rate"][name], results["p_gold"].get(name, {})
        pg = f"{g['without']:.3f} | {g['with']:.3f} | {g['tokens']}" if g else "n/a | n/a | 0"
        rows.append(
            f"| `{name}` | {r['n_examples']} | {r['without']:.0%} | {r['with']:.0%} | "
            f"{r['greedy_without']:.0%} | {pg} |"
        )
    return "\n".join(rows)


def _commands(stages: list[dict], out: str) -> str:
    """The one command that rebuilds these stages (from scratch when stage 1 was)."""
    first = stages[0]["config"]
    if first.get("init_from"):  # a continuation of a policy built elsewhere: one command per stage
        return "\n".join(
            f"python -m mrtpo_viz make-sample-policy --steps {c['steps']} --seed {c['seed']} "
            f"--threads {c['threads']} --init-from {c['init_from']} --out {out}"
            for c in (st["config"] for st in stages)
        )
    return (
        f"python -m mrtpo_viz make-sample-policy --stages {','.join(str(st['config']['steps']) for st in stages)}"
        f" --seed {first['seed']} --threads {first['threads']} --out {out}"
    )


def _upto(m: int) -> str:
    return f"1-{m}" if m > 1 else "1"


def _stages_table(stages: list[dict]) -> str:
    rows = [
        "| stage | steps | seed | tokens / batch | peak lr | training examples | values changed per content "
        "error | data + tokenizer min | training min | final loss |",
        "|---:" * 10 + "|",
    ]
    for i, st in enumerate(stages, 1):
        c, n = st["config"], st["noise"]
        rows.append(
            f"| {i} | {c['steps']} | {c['seed']} | {c['tokens_per_batch']} | {c['lr']:g} | "
            f"{st['n_train_examples']:,} | {_upto(n.get('max_content_edits', 1))} | "
            f"{st['data_seconds'] / 60:.1f} | "
            f"{st['train_seconds'] / 60:.1f} | {st['final_loss']:.3f} |"
        )
    return "\n".join(rows)


def write_model_card(out: Path, info: dict, results: dict, out_name: str) -> Path:
    """README.md (the model card) and eval_results.json in the policy folder."""
    (out / "eval_results.json").write_text(json.dumps({"build": info, **results}, indent=1) + "\n")
    stages, c = info["stages"], info["stages"][-1]["config"]
    noise = {k: v for k, v in stages[-1]["noise"].items() if k != "max_content_edits"}
    size_mb = sum(f.stat().st_size for f in out.iterdir() if f.is_file() and f.suffix != ".md") / 1e6
    card = CARD.format(
        command=_commands(stages, out_name),
        n_params=info["n_params"],
        size_mb=size_mb,
        minutes=sum(st["train_seconds"] + st["data_seconds"] for st in stages) / 60,
        machine=f"{platform.machine()} CPU, {c['threads']} thread",
        stages=_stages_table(stages),
        arch=f"hidden {c['hidden_size']}, {c['num_layers']} layers, {c['num_heads']} heads, MLP "
        f"{c['intermediate_size']}, vocabulary {c['vocab_size']}, tied embeddings, sequences up to "
        f"{c['max_len']} tokens",
        noise=", ".join(f"{k} {v}" for k, v in noise.items()),
        table=_table(results),
        eval_config=json.dumps(results["eval_config"]),
        why=WHY_STAGES if len(stages) > 1 else "",
    )
    (out / "README.md").write_text(card)
    return out / "README.md"


WHY_STAGES = """- Why three stages: after stage 1 the policy followed the format information but not yet the content
  information (p(gold) on argument values the same with and without it). Stage 2 continues with content errors that
  change several values at once, which makes the content information worth more per token. It also left the content
  sampled without information (temperature 1) right less often than the data's own noise allows (tool-call correctness
  35%, SQL execution 32%). Stage 3 continues at a third of the learning rate with single-value errors again: 40% and
  50%, while the content information still raises p(gold).
"""

CARD = """---
license: apache-2.0
library_name: transformers
tags: [toy, mrtpo-viz, tool-calling, text-to-sql, instruction-following]
---
# tiny-mrtpo: the bundled toy policy of mrtpo-viz

**A toy for demos and tests, not a useful model.** A {n_params:,}-parameter Llama with a byte-level BPE tokenizer
trained on this project's synthetic tasks (tool calling, text-to-SQL, multi-constraint instruction following). It
exists so that the app, the replay and the tests work offline on a CPU, and so that the relevance heatmaps mean
something: the policy was trained to *use* each verifier's information block the way an instruction-tuned model
does, and to be unsure without it.

## How it was built

```
{command}
```

Deterministic for a seed: on the build machine one and two torch threads give the same weights, byte for byte
(tests/sample_policy/test_build.py), so `--threads 2` rebuilds this policy on an idle 2-core machine in about an hour
(0.54-0.58 s per step against 0.87 s on one thread). Code: `mrtpo_viz/sample_policy/build.py` (tokenizer, model,
training), `mrtpo_viz/sample_policy/sft_data.py` and `.../violations.py` (data), `.../evaluate.py`
(this card's numbers). Total {minutes:.0f} minutes on {machine}; files {size_mb:.1f} MB.

- Model: Llama, {arch}. Tokenizer: byte-level BPE trained on the task data; AdamW, linear warm-up then cosine
  decay to a tenth, loss on response tokens only, batches grouped by length.
- Data: the task generators with a seed other than the sample files', every prompt of the test split removed.
  Each verifier's information block (inserted with `mrtpo_viz.relevance.contexts.with_info`, as the replay does) is
  present independently; the target is the gold response with noise only on the aspects whose information is absent
  (content errors, format errors at decision points, constraint violations at known places), plus harmless
  variation no verifier penalizes (argument order, JSON spacing, a short preamble, a trailing semicolon).
  Probabilities: {noise}.
{why}
{stages}

- Chat format: ChatML (`<|im_start|>role\\n...<|im_end|>\\n`); responses end with `<|im_end|>` (the eos token).

## What it measured (held-out test split)

Pass rate: completions sampled at temperature 1 without information, and with the verifier's own information
block at the end of the user message; greedy without information. p(gold): mean probability of the gold token,
teacher-forced on the reference, over the tokens inside the verifier's `relevant_spans` of the reference.

{table}

Evaluation settings: `{eval_config}`

## Limits

It knows only the templates of the bundled generators; outside them it writes nonsense. Pass rates and p(gold) are
from a small held-out sample and move by several points between seeds. Use it to try the tools, never to judge a
method's real-world value.
"""
