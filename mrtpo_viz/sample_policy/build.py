"""Build the bundled tiny policy: a byte-level BPE tokenizer and a small Llama trained by supervised fine-tuning.

``python -m mrtpo_viz make-sample-policy [--steps N --seed S --threads T --out DIR]`` writes
``sample_data/policies/tiny-mrtpo/`` (safetensors weights, tokenizer files, chat template, model card). The data
(:mod:`mrtpo_viz.sample_policy.sft_data`) is designed so that each verifier's information block changes what the policy
writes for that verifier's aspect only; :mod:`mrtpo_viz.sample_policy.evaluate` measures it on the held-out split.

Departures from a usual SFT recipe, all for speed on one CPU thread: sequences are grouped by length into batches of
a fixed token budget (little padding), the logits are computed only at response positions (the loss is on response
tokens only, so the prompt positions need no vocabulary projection), and the run has a fixed number of steps so
that it is deterministic for a seed.
"""

from __future__ import annotations

import csv
import json
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional
from collections.abc import Iterator

import torch

from ..policy.padding import pad_id, right_pad
from .sft_data import NoiseConfig, SftExample, build_sft_data

BOS, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""ChatML: ``<|im_start|>role\\ncontent<|im_end|>\\n`` per message; the response ends with ``<|im_end|>``."""


@dataclass(frozen=True)
class TinyPolicyConfig:
    """Sizes and schedule of the bundled policy (defaults: the committed build)."""

    vocab_size: int = 2000
    """Byte-level BPE vocabulary, special tokens included."""
    hidden_size: int = 128
    num_layers: int = 4
    num_heads: int = 4
    intermediate_size: int = 512
    max_len: int = 384
    """Training sequences longer than this (prompt + response) are left out."""
    steps: int = 2000
    """Optimizer steps."""
    tokens_per_batch: int = 4096
    """Token budget of one batch (padded length x rows)."""
    lr: float = 3e-3
    warmup: int = 100
    weight_decay: float = 0.01
    n_per_task: tuple[tuple[str, int], ...] = (
        ("tool_calling", 20000),
        ("text_to_sql", 16000),
        ("instruction_following", 16000),
    )
    """Generated training examples per task family (before removing test-split prompts)."""
    seed: int = 0
    threads: int = 1
    """torch threads (one per concurrent worker; see NOTES on threads)."""
    init_from: Optional[str] = None
    """Continue from a saved policy (its tokenizer and weights) instead of a fresh one: a second training stage."""

    def __post_init__(self):
        if self.hidden_size % self.num_heads:
            raise ValueError(f"hidden_size {self.hidden_size} must be a multiple of num_heads {self.num_heads}")
        for name in ("vocab_size", "steps", "tokens_per_batch", "threads", "max_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.tokens_per_batch < self.max_len:
            raise ValueError("tokens_per_batch must hold at least one sequence of max_len tokens")


# ------------------------------------------------------------------------------------------------- tokenizer
def build_tokenizer(texts: list[str], vocab_size: int):
    """Byte-level BPE trained on ``texts``, wrapped as a transformers tokenizer with the ChatML template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    # digits one by one: a number is the same token sequence in the prompt, the information and the response, so
    # the policy copies values token by token (a merged " 12" in the prompt vs "12" in JSON is harder to copy)
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[BOS, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=IM_END,
        pad_token=BOS,
        additional_special_tokens=[IM_START],
        model_max_length=2048,
    )
    wrapped.chat_template = CHAT_TEMPLATE
    return wrapped


def render_prompt(tokenizer, messages: list) -> str:
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


def encode(tokenizer, ex: SftExample) -> tuple[list[int], int]:
    """Prompt and response tokenized separately (as the replay does), then joined: (ids, number of prompt ids)."""
    prompt = tokenizer(render_prompt(tokenizer, ex.messages), add_special_tokens=False)["input_ids"]
    response = tokenizer(ex.response, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return prompt + response, len(prompt)


# ----------------------------------------------------------------------------------------------------- model
def build_model(cfg: TinyPolicyConfig, tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_heads,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    return model


def batches(
    seqs: list[tuple[list[int], int]], tokens_per_batch: int, pad_id: int, rng: random.Random
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Endless length-grouped batches: (input_ids (B, L), labels (B, L) with -100 on prompt and padding)."""
    while True:
        order = rng.sample(range(len(seqs)), len(seqs))
        groups = []
        for lo in range(0, len(order), 512):  # sort within windows: little padding, still shuffled
            window = sorted(order[lo : lo + 512], key=lambda i: len(seqs[i][0]))
            while window:
                L = len(seqs[window[-1]][0])
                take = max(1, tokens_per_batch // L)
                groups.append(window[-take:])
                window = window[:-take]
        rng.shuffle(groups)
        for group in groups:
            yield _collate([seqs[i] for i in group], pad_id)


def _collate(rows: list[tuple[list[int], int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    input_ids, _ = right_pad([ids for ids, _ in rows], pad_id)  # (B, L)
    labels = torch.full_like(input_ids, -100)  # (B, L)
    for b, (ids, n_prompt) in enumerate(rows):
        labels[b, n_prompt : len(ids)] = torch.tensor(ids[n_prompt:])
    return input_ids, labels


def sft_loss(model, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over response tokens; logits only where a label exists.

    Right padding needs no attention mask: with causal attention no real token sees a pad.
    """
    hidden = model.model(input_ids=input_ids).last_hidden_state  # (B, L, H)
    target = labels[:, 1:]  # (B, L-1)
    keep = target != -100
    logits = model.lm_head(hidden[:, :-1][keep])  # (M, V)
    return torch.nn.functional.cross_entropy(logits.float(), target[keep])


def lr_at(step: int, cfg: TinyPolicyConfig) -> float:
    """Linear warm-up, then cosine decay to a tenth of the peak."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def train(model, seqs, cfg: TinyPolicyConfig, pad_id: int, log_every: int = 50, on_log=None) -> list[dict]:
    """Run ``cfg.steps`` AdamW steps; returns the log (step, loss, lr, seconds)."""
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.98), weight_decay=cfg.weight_decay)
    stream, log, running, t0 = batches(seqs, cfg.tokens_per_batch, pad_id, random.Random(cfg.seed)), [], [], time.time()
    model.train()
    for step in range(cfg.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, cfg)
        loss = sft_loss(model, *next(stream))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        running.append(loss.item())
        if (step + 1) % log_every == 0 or step + 1 == cfg.steps:
            log.append(
                {
                    "step": step + 1,
                    "loss": sum(running) / len(running),
                    "lr": lr_at(step, cfg),
                    "seconds": round(time.time() - t0, 1),
                }
            )
            running = []
            if on_log:
                on_log(log[-1])
    model.eval()
    return log


# ------------------------------------------------------------------------------------------------ the build
def build(cfg: TinyPolicyConfig, out: str | Path, noise: NoiseConfig = NoiseConfig(), checkpoint_every: int = 0):
    """Data -> tokenizer -> model -> training -> ``save_pretrained`` in ``out``; returns (model, tokenizer, info)."""
    torch.manual_seed(cfg.seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    data = build_sft_data(dict(cfg.n_per_task), cfg.seed, noise)
    if cfg.init_from:
        model, tokenizer, previous = load_stage(cfg.init_from)
    else:
        tokenizer = build_tokenizer([render_prompt_plain(ex) for ex in data[:8000]], cfg.vocab_size)
        model, previous = build_model(cfg, tokenizer), []
    seqs = [s for s in (encode(tokenizer, ex) for ex in data) if len(s[0]) <= cfg.max_len]
    t_data = time.time() - t0
    print(f"data: {len(data)} examples, {len(seqs)} within {cfg.max_len} tokens, {t_data:.0f}s", flush=True)

    def on_log(row):
        print(f"step {row['step']:5d}  loss {row['loss']:.4f}  lr {row['lr']:.2e}  {row['seconds']:.0f}s", flush=True)
        if checkpoint_every and row["step"] % checkpoint_every == 0:
            save(model, tokenizer, out)

    log = train(model, seqs, cfg, pad_id(tokenizer), on_log=on_log)
    save(model, tokenizer, out)
    with (out / f"training_log_stage{len(previous) + 1}.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(log[0]))
        writer.writeheader()
        writer.writerows(log)
    stage = {
        "config": asdict(cfg),
        "noise": asdict(noise),
        "n_train_examples": len(data),
        "n_train_sequences": len(seqs),
        "data_seconds": round(t_data, 1),
        "train_seconds": log[-1]["seconds"],
        "final_loss": log[-1]["loss"],
    }
    info = {"stages": previous + [stage], "n_params": sum(p.numel() for p in model.parameters())}
    (out / "build_info.json").write_text(json.dumps(info, indent=1) + "\n")
    return model, tokenizer, info


def load_stage(folder: str | Path):
    """A saved policy to continue from: (model, tokenizer, the build stages recorded with it)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise FileNotFoundError(f"no saved policy to continue from at {folder}")
    info = folder / "build_info.json"
    previous = json.loads(info.read_text())["stages"] if info.is_file() else []
    model = AutoModelForCausalLM.from_pretrained(folder)
    return model, AutoTokenizer.from_pretrained(folder), previous


def render_prompt_plain(ex: SftExample) -> str:
    """Tokenizer-training text of one example: every message and the response (no special tokens)."""
    return "\n".join([m["content"] for m in ex.messages] + [ex.response])


def save(model, tokenizer, out: Path) -> None:
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


STAGES: tuple[dict, ...] = (
    {"steps": 2000, "lr": 3e-3, "max_content_edits": 1},
    {"steps": 2500, "lr": 3e-3, "max_content_edits": 4},
    {"steps": 1500, "lr": 1e-3, "max_content_edits": 1},
)
"""The default build (see the model card's "Why three stages"): stage 2 continues stage 1 with content errors that
change 1-4 values at once (the content information becomes worth more per token); stage 3 continues at a lower
learning rate with single-value errors again (sampled content is right more often without information)."""
STAGE_STEPS = tuple(st["steps"] for st in STAGES)


def stage_settings(i: int) -> dict:
    """Learning rate and content-error size of stage ``i`` (0-based) of the build; later stages reuse the last."""
    return STAGES[min(i, len(STAGES) - 1)]


def build_policy(
    out: str,
    *,
    seed: int = 0,
    threads: int = 1,
    steps: Optional[int] = None,
    stages: Optional[str] = None,
    init_from: Optional[str] = None,
) -> Path:
    """Build and train the tiny policy (every stage), evaluate it and write its model card; returns ``out``.

    Without ``steps`` it runs the whole default build (``stages``: steps per stage, default :data:`STAGE_STEPS`;
    from scratch, seed ``seed`` then ``seed + 1`` ...); ``steps`` runs one stage of that many steps (continuing
    ``init_from`` if given).
    """
    from .evaluate import evaluate, write_model_card

    torch.set_num_threads(threads)
    if steps is not None:  # one stage, with the settings of stage 2 when it continues a policy
        plan = [(steps, seed, init_from, stage_settings(1 if init_from else 0))]
    else:
        counts = [int(n) for n in str(stages or ",".join(map(str, STAGE_STEPS))).split(",")]
        plan = [(n, seed + i, init_from if i == 0 else out, stage_settings(i)) for i, n in enumerate(counts)]
    for n, stage_seed, source, st in plan:
        cfg = TinyPolicyConfig(seed=stage_seed, threads=threads, init_from=source, steps=n, lr=st["lr"])
        noise = NoiseConfig(max_content_edits=st["max_content_edits"])
        print(
            f"stage: {n} steps, seed {stage_seed}" + (f", continuing {source}" if source else ", from scratch"),
            flush=True,
        )
        model, tokenizer, info = build(cfg, out, noise, checkpoint_every=250)
    results = evaluate(model, tokenizer, seed=seed)
    write_model_card(Path(out), info, results, out)
    return Path(out)
