"""MRTPOTrainer against TRL's own GRPOTrainer (trl 1.16, run unchanged) on the bundled tiny policy, CPU, float32.

- alpha = 0: the same loss at every ``compute_loss`` call, the same gradients at every optimizer step and the same
  parameters after 2 steps as ``GRPOTrainer(multi_objective_aggregation="normalize_then_sum")``, same seed and
  data, in three setups (DAPO; GRPO loss + beta + sequence-level importance sampling; BNPO + gradient accumulation
  2 + num_iterations 2), with the real replay running (``log_tokens``), so it also shows the replay leaves TRL's
  RNG alone. The rewards include unscorable rows (every reward None) and partial ones.
- alpha = 1: each completion's token mean is TRL's sequence advantage; the advantages really vary per token; they
  equal our library's ``mrtpo_token_advantages`` of the batch; the update differs from GDPO's (the comparison can
  fail); the replay runs once per generation batch; the logged relevance is the replay of the sampling policy.
- the refusals, the per-token parquet, evaluation's own file, two processes (gloo).
"""

from __future__ import annotations

import json
import math
import os
import warnings

import pytest

trl = pytest.importorskip("trl", reason="the TRL integration tests need trl (pip install mrtpo-viz[trl])")

import pandas as pd  # noqa: E402
import torch  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import TrainerCallback  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from mrtpo_viz.integrations import trl_batch, trl_log  # noqa: E402
from mrtpo_viz.integrations.trl import MRTPOConfig, MRTPOTrainer  # noqa: E402
from mrtpo_viz.tasks import Example, Verifier  # noqa: E402
from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR  # noqa: E402
from tests.conftest import AGREEMENT  # noqa: E402

TOL = 1e-6
POLICY = str(BUNDLED_POLICY_DIR)
PROMPTS = [
    "Call the weather tool for Paris.",
    "Write a SQL query that lists all customers.",
    "Answer in lowercase: what is the capital of Italy?",
    "Give three bullet points about tea.",
]
WEIGHTS = [1.0, 0.5, 0.25]


# Rewards on a dyadic grid (exact in float32). Every reward is None when the completion's length is a multiple of
# 5 (an unscorable row), and the length reward also when it is a multiple of 3 (a partial row).
def _texts(completions):
    return [c if isinstance(c, str) else c[-1]["content"] for c in completions]


def _none_if(c: str, *mods) -> bool:
    return any(len(c) % m == 0 for m in mods)


def brace(completions, **kwargs):
    return [None if _none_if(c, 5) else float("{" in c or "(" in c) for c in _texts(completions)]


def length(completions, **kwargs):
    return [None if _none_if(c, 5, 3) else (len(c) % 8) / 8 for c in _texts(completions)]


def vowels(completions, **kwargs):
    return [None if _none_if(c, 5) else min(sum(ch in "aeiou" for ch in c), 4) / 4 for c in _texts(completions)]


REWARDS = [brace, length, vowels]
VERIFIERS = [
    Verifier.from_trl(
        fn, name=fn.__name__, info=lambda ex, _n=fn.__name__: f"{_n} of the answer to: {ex.messages()[-1]['content']}"
    )
    for fn in REWARDS
]


def dataset():
    return Dataset.from_dict({"prompt": [[{"role": "user", "content": p}] for p in PROMPTS]})


def config(tmp_path, name, cls=GRPOConfig, **overrides):
    """What makes two CPU runs identical: same seed, float32 (GRPOConfig defaults to bf16), ``use_cpu``, no
    dataloader workers, one process, the same batch geometry, no reporting. ``Trainer.train`` reseeds the global RNG
    from ``seed``; TRL's sampler seeds its own generator."""
    args = dict(
        output_dir=str(tmp_path / name),
        seed=1234,
        data_seed=1234,
        use_cpu=True,
        bf16=False,
        fp16=False,
        report_to=[],
        logging_steps=1,
        save_strategy="no",
        eval_strategy="no",
        disable_tqdm=True,
        dataloader_num_workers=0,
        gradient_checkpointing=False,
        max_steps=2,
        optim="adamw_torch",
        learning_rate=1e-3,
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=8,
        multi_objective_aggregation="normalize_then_sum",
        reward_weights=WEIGHTS,
    )
    args.update(overrides)
    return cls(**args)


class Recorder(TrainerCallback):
    """The gradients right before every optimizer step (after clipping)."""

    def __init__(self):
        self.grads = []

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        self.grads.append({n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None})


class RecordLoss:
    """Every compute_loss value and the number of generation batches."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        self.losses.append(loss.detach().double().item())
        return loss

    def _generate_and_score_completions(self, inputs):
        self.generations += 1
        return super()._generate_and_score_completions(inputs)


class GRPORecording(RecordLoss, GRPOTrainer):
    pass


class MRTPORecording(RecordLoss, MRTPOTrainer):
    """Also what each generation batch gave: TRL's GDPO advantage, the token advantages, relevance, mask, rewards."""

    def _relevance(self, examples, output, lengths, applies):
        self.replays += 1
        return super()._relevance(examples, output, lengths, applies)

    def _log_batch(self, mode, G, rows, examples, output, lengths, rewards, relevance, parts, token_adv, replay_s):
        self.batches.append(
            dict(
                trl=output["advantages"].cpu().clone(),
                token=token_adv.cpu().clone(),
                relevance=relevance.clone(),
                mask=output["completion_mask"].cpu().clone(),
                rewards=self._mrtpo_rewards.cpu().clone(),
                G=G,
            )
        )
        return super()._log_batch(
            mode, G, rows, examples, output, lengths, rewards, relevance, parts, token_adv, replay_s
        )


def train(tmp_path, name, kind, overrides=None, **kwargs):
    """(trainer, params before, params after, the recorder) of a 2-step run; kind: grpo, mrtpo."""
    rec = Recorder()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "grpo":
            t = GRPORecording(
                model=POLICY,
                reward_funcs=REWARDS,
                args=config(tmp_path, name, **(overrides or {})),
                train_dataset=dataset(),
                callbacks=[rec],
            )
        else:
            t = MRTPORecording(
                model=POLICY,
                reward_funcs=VERIFIERS,
                train_dataset=dataset(),
                callbacks=[rec],
                args=config(tmp_path, name, MRTPOConfig, **{**(overrides or {}), **kwargs}),
            )
            t.replays = 0
        t.losses, t.generations, t.batches = [], 0, []
        before = {k: v.detach().clone() for k, v in t.model.named_parameters()}
        t.train()
    after = {k: v.detach().clone() for k, v in t.model.named_parameters()}
    return t, before, after, rec


def max_diff(a: dict, b: dict) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


SETUPS = {
    "dapo": {},
    "grpo_beta_seqIS": dict(loss_type="grpo", beta=0.04, importance_sampling_level="sequence"),
    "bnpo_ga2_mu2": dict(
        loss_type="bnpo", per_device_train_batch_size=4, gradient_accumulation_steps=2, num_iterations=2
    ),
}
SGD = dict(optim="sgd", learning_rate=0.1)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    cache = {}

    def get(setup, kind, optimizer=None):
        key = (setup, kind, str(optimizer))
        if key not in cache:
            over = {**SETUPS[setup], **(optimizer or {})}
            tmp = tmp_path_factory.mktemp(f"{setup}_{kind}")
            if kind == "grpo":
                cache[key] = train(tmp, "run", "grpo", over)
            else:
                cache[key] = train(tmp, "run", "mrtpo", over, alpha=0.0 if kind == "mrtpo_a0" else 1.0)
        return cache[key]

    return get


@pytest.mark.parametrize("setup", list(SETUPS))
def test_alpha0_same_loss_gradients_and_update_as_trl_gdpo(runs, setup):
    g, g0, g1, g_rec = runs(setup, "grpo")
    m, m0, m1, m_rec = runs(setup, "mrtpo_a0")
    assert max_diff(g0, m0) == 0.0
    rewards = torch.cat([b["rewards"] for b in m.batches])
    assert rewards.isnan().all(1).any() and (rewards.isnan().any(1) & ~rewards.isnan().all(1)).any()
    assert len(g.losses) == len(m.losses) == (4 if setup == "bnpo_ga2_mu2" else 2)  # GA 2: 2 micro-batches a step
    assert max(abs(a - b) for a, b in zip(g.losses, m.losses)) <= TOL
    assert len(g_rec.grads) == len(m_rec.grads) == 2
    loss_gap = max(abs(a - b) for a, b in zip(g.losses, m.losses))
    grad_gap = max(max_diff(a, b) for a, b in zip(g_rec.grads, m_rec.grads))
    assert grad_gap <= TOL
    update = max(float((g1[k] - g0[k]).abs().max()) for k in g0)
    assert update > 100 * TOL, f"the update ({update:.3g}) is too small for the comparison to mean anything"
    assert m.replays == m.generations  # the replay really ran (log_tokens) and still changed nothing
    AGREEMENT.append(
        f"MRTPOTrainer(alpha=0) vs trl.GRPOTrainer(normalize_then_sum), {setup}, AdamW: max |loss diff| "
        f"{loss_gap:.1e}, |grad diff| {grad_gap:.1e}, |param diff| {max_diff(g1, m1):.1e} "
        f"(update {update:.1e})"
    )
    if setup == "grpo_beta_seqIS":
        # AdamW's first step is ~lr * g / (|g| + 1e-8): on coordinates with |g| near 1e-8 it turns float32 rounding
        # differences of ~1e-11 into parameter differences of ~lr * 1e-3. Sequence-level importance sampling
        # multiplies a (B, 1) coefficient by the advantages: TRL's (B,) advantage broadcasts as (B, 1), our (B, T)
        # one makes autograd sum the same products in another order (gradients differ by ~7e-8; TRL's own advantage,
        # only expanded to (B, T), moves the parameters by as much, ~1e-5 after two AdamW steps at lr 1e-3). So the
        # parameters are compared after plain SGD, whose update is linear in the gradient; the gradients above are
        # AdamW's run.
        g, g0, g1, _ = runs(setup, "grpo", SGD)
        m, m0, m1, _ = runs(setup, "mrtpo_a0", SGD)
        assert max(float((g1[k] - g0[k]).abs().max()) for k in g0) > 100 * TOL
        AGREEMENT.append(f"  {setup} with SGD: |param diff| {max_diff(g1, m1):.1e}")
    assert max_diff(g1, m1) <= TOL


@pytest.mark.parametrize("setup", ["dapo", "bnpo_ga2_mu2"])
def test_alpha1_token_mean_is_trl_sequence_advantage(runs, setup):
    from mrtpo_viz.advantages import mrtpo_token_advantages

    m = runs(setup, "mrtpo_a1")[0]
    assert m.replays == m.generations == (1 if setup == "bnpo_ga2_mu2" else 2)  # once per generation batch
    for b in m.batches:
        mask, adv = b["mask"].double(), b["token"].double()
        token_mean = (adv * mask).sum(1) / mask.sum(1).clamp(min=1)
        assert float((token_mean - b["trl"]).abs().max()) <= TOL
        assert float(adv[mask > 0].std()) > 0.01  # per token, not a broadcast
        # = the library's MRTPO of the whole batch (one process). TRL's float32 GDPO and our float64 one agree to
        # ~1e-7 relative on dyadic rewards (tests/test_advantages_trl.py); token advantages reach ~10 here
        N, T = len(adv) // b["G"], adv.shape[1]
        ours = mrtpo_token_advantages(
            b["rewards"].double().view(N, b["G"], 3),
            b["relevance"].double().view(N, b["G"], 3, T),
            mask.view(N, b["G"], T),
            WEIGHTS,
            alpha=1.0,
        ).view(-1, T)
        assert float(((ours - adv) * mask).abs().max()) <= 1e-5


def test_alpha1_update_differs_from_gdpo(runs):
    """The negative control: the comparison above sees a different advantage."""
    assert max_diff(runs("dapo", "grpo")[2], runs("dapo", "mrtpo_a1")[2]) > 100 * TOL


def test_the_logged_relevance_is_the_replay_of_the_sampling_policy(runs):
    """Step 1's completions replayed one by one (``replay``) by the untrained policy, which sampled them."""
    from mrtpo_viz.policy import load_policy
    from mrtpo_viz.relevance.engine import replay

    m = runs("dapo", "mrtpo_a1")[0]
    log = pd.read_parquet(os.path.join(m.args.output_dir, trl_log.LOG_DIR, trl_log.token_file(1)))
    policy = load_policy(POLICY, device="cpu", dtype="float32")
    names = [v.name for v in VERIFIERS]
    assert len(log) == 8 and log["row"].tolist() == list(range(8)) and log["group"].tolist() == [0] * 4 + [1] * 4
    for _, row in log.iloc[[0, 5]].iterrows():
        ex = Example("custom", json.loads(row["messages"]))
        rel = replay(policy, ex, row["completion_ids"].tolist(), VERIFIERS)
        logged = torch.tensor([row[trl_log.relevance_column(n)].tolist() for n in names])
        applies = torch.tensor([not math.isnan(row[trl_log.reward_column(n)]) for n in names])  # (K,)
        assert logged.shape == rel.scores.shape and float(logged.max()) > 0.01
        # batched group replay against one replay per completion: float32 sums in another order; a reward that
        # is None on the row (it does not apply) gets no relevance there
        assert float((logged - rel.scores * applies[:, None]).abs().max()) <= 1e-5


def test_a_replay_that_draws_from_the_global_rng_changes_nothing(runs, tmp_path, monkeypatch):
    """TRL shuffles the generation batch and samples from the global RNG: the replay runs on a forked one. A replay
    that draws (as dropout would) still leaves the alpha = 0 run equal to GRPOTrainer's."""
    real = trl_batch.batch_relevance

    def noisy(*args, **kwargs):
        torch.rand(1000)
        return real(*args, **kwargs)

    monkeypatch.setattr("mrtpo_viz.integrations.trl.batch_relevance", noisy)
    g, _, g1, _ = runs("bnpo_ga2_mu2", "grpo")
    m, _, m1, _ = train(tmp_path, "noisy", "mrtpo", SETUPS["bnpo_ga2_mu2"], alpha=0.0)
    assert m.replays == 1
    assert max(abs(a - b) for a, b in zip(g.losses, m.losses)) <= TOL
    assert max_diff(g1, m1) <= TOL


def test_the_per_token_parquet_and_trl_logs(runs):
    m = runs("dapo", "mrtpo_a1")[0]
    out = m.args.output_dir
    files = sorted(os.listdir(os.path.join(out, trl_log.LOG_DIR)))
    assert files == ["run.json", "tokens_00001.parquet", "tokens_00002.parquet"]  # no temporary file left
    info = json.loads(open(os.path.join(out, trl_log.LOG_DIR, trl_log.RUN_FILE)).read())
    assert info["rewards"] == ["brace", "length", "vowels"] and info["reward_weights"] == WEIGHTS
    assert info["alpha"] == 1.0 and info["num_generations"] == 4
    df = pd.read_parquet(os.path.join(out, trl_log.LOG_DIR, trl_log.token_file(2)))
    assert list(df.columns[: len(trl_log.BASE_COLUMNS)]) == list(trl_log.BASE_COLUMNS)
    assert len(df) == 8 and (df["step"] == 2).all() and (df["mode"] == "train").all()
    b = m.batches[1]  # what the loss used in step 2
    for _, row in df.iterrows():
        L = len(row["completion_ids"])
        assert L == len(row["tokens"]) == len(row["token_advantages"]) == int(b["mask"][row["row"]].sum())
        assert row["token_advantages"].tolist() == pytest.approx(b["token"][row["row"], :L].tolist(), abs=1e-7)
        assert row["advantage"] == pytest.approx(float(b["trl"][row["row"]]), abs=1e-7)
        parts = sum(row[trl_log.part_column(n)] for n in info["rewards"])
        rewards = [row[trl_log.reward_column(n)] for n in info["rewards"]]
        if all(math.isnan(r) for r in rewards):  # unscorable: advantage 0 and no shares
            assert row["advantage"] == 0 and not parts.any()
    history = m.state.log_history[0]
    for name in info["rewards"]:
        assert 0 < history[f"mrtpo/relevance/{name}/mean"] < 1
        assert 0.125 <= history[f"mrtpo/weights/{name}/top10_share"] <= 1  # 8 tokens: uniform is 1/8
    assert history["mrtpo/token_advantage/within_std"] > 0.01
    assert history["mrtpo/token_advantage/mean_minus_trl"] <= TOL


def test_refusals_say_why():
    base = dict(model=POLICY, reward_funcs=VERIFIERS, train_dataset=dataset())
    cases = [(dict(loss_type="vespo"), "vespo"), (dict(off_policy_mask_threshold=0.5), "off_policy_mask")]
    for over, match in cases:
        with pytest.raises(ValueError, match=match):
            MRTPOTrainer(args=config_tmp(**over), **base)
    with pytest.raises(ValueError, match="normalize_then_sum"):
        config_tmp(multi_objective_aggregation="sum_then_normalize")
    with pytest.raises(ValueError, match="alpha"):
        config_tmp(alpha=1.5)
    with pytest.raises(ValueError, match="unknown control"):
        config_tmp(control="nope")
    with pytest.raises(ValueError, match="tools"):
        MRTPOTrainer(args=config_tmp(), tools=[len], **base)
    with pytest.raises(ValueError, match="MRTPOConfig"):
        MRTPOTrainer(args=GRPOConfig(output_dir="/nonexistent", use_cpu=True), **base)
    with pytest.raises(ValueError, match="Verifier.from_trl"):
        MRTPOTrainer(args=config_tmp(), **{**base, "reward_funcs": REWARDS})
    with pytest.raises(KeyError, match="unknown verifier"):
        MRTPOTrainer(args=config_tmp(), **{**base, "reward_funcs": ["no.such"]})
    with pytest.warns(UserWarning, match="top_entropy_quantile"):
        with pytest.raises(ValueError, match="vespo"):
            MRTPOTrainer(args=config_tmp(top_entropy_quantile=0.5, loss_type="vespo"), **base)


def config_tmp(**over):
    import tempfile

    return config(__import__("pathlib").Path(tempfile.mkdtemp(prefix="mrtpo-refuse-")), "x", MRTPOConfig, **over)


def test_plain_text_prompts_are_refused_at_the_first_batch(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = MRTPOTrainer(
            model=POLICY,
            reward_funcs=VERIFIERS,
            args=config(tmp_path, "plain", MRTPOConfig),
            train_dataset=Dataset.from_dict({"prompt": PROMPTS}),
        )
        with pytest.raises(ValueError, match="conversational prompts"):
            t.train()


def test_a_prompt_tokenized_otherwise_than_trl_sampled_is_refused():
    from mrtpo_viz.policy import load_policy

    policy = load_policy(POLICY, device="cpu", dtype="float32")
    ex = Example("custom", [{"role": "user", "content": PROMPTS[0]}])
    ids = policy.chat_ids(ex.messages())
    trl_batch.check_prompt(policy, ex, ids)  # the same ids pass
    with pytest.raises(ValueError, match="differs from the one TRL sampled from .* at token 0"):
        trl_batch.check_prompt(policy, ex, [0] + ids)  # a BOS our rendering does not add


def test_evaluation_writes_its_own_file_and_trl_overwrites_its_training_one(tmp_path):
    """TRL writes its evaluation at step s over its training completions of step s; our token log keeps both."""
    evals = Dataset.from_dict({"prompt": [[{"role": "user", "content": f"Evaluate item {i}."}] for i in range(2)]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = MRTPOTrainer(
            model=POLICY,
            reward_funcs=VERIFIERS,
            train_dataset=dataset(),
            eval_dataset=evals,
            args=config(
                tmp_path,
                "eval",
                MRTPOConfig,
                max_steps=1,
                eval_strategy="steps",
                eval_steps=1,
                per_device_eval_batch_size=8,
                log_completions=True,
            ),
        )
        t.train()
    out = tmp_path / "eval"
    trl_file = pd.read_parquet(out / "completions" / "completions_00001.parquet")
    assert all("Evaluate" in str(p) for p in trl_file["prompt"])  # TRL's training rows of step 1 are gone
    train = pd.read_parquet(out / trl_log.LOG_DIR / trl_log.token_file(1))
    ev = pd.read_parquet(out / trl_log.LOG_DIR / trl_log.token_file(1, "eval"))
    assert len(train) == 8 and set(train["prompt"]) <= set(PROMPTS) and (train["mode"] == "train").all()
    assert len(ev) == 8 and ev["prompt"].str.startswith("Evaluate").all() and (ev["mode"] == "eval").all()
    assert "eval_mrtpo/relevance/brace/mean" in t.state.log_history[-2] or any(
        "eval_mrtpo/relevance/brace/mean" in h for h in t.state.log_history
    )


DDP_DRIVER = """
import hashlib, json, sys, warnings
warnings.simplefilter("ignore")
import torch
torch.set_num_threads(1)
from tests.integrations.test_trl import MRTPORecording, VERIFIERS, config, dataset, POLICY
from mrtpo_viz.integrations.trl import MRTPOConfig
import pathlib
out = pathlib.Path(sys.argv[1])
# 2 completions per process, groups of 4: each group is split across the two ranks
t = MRTPORecording(model=POLICY, reward_funcs=VERIFIERS, train_dataset=dataset(),
                   args=config(out, "run", MRTPOConfig, per_device_train_batch_size=2, alpha=1.0))
t.losses, t.generations, t.batches, t.replays = [], 0, [], 0
t.train()
rank = t.accelerator.process_index
gap = max(float(((b["token"] * b["mask"]).sum(1) / b["mask"].sum(1).clamp(min=1) - b["trl"]).abs().max())
          for b in t.batches)
# the library's MRTPO of the gathered batch (all rows' relevance), against each rank's rows
from accelerate.utils import gather_object
from mrtpo_viz.advantages import mrtpo_token_advantages
lib_gap = 0.0
for b in t.batches:
    parts = gather_object([(b["relevance"], b["token"], b["mask"])])
    T = max(p[0].shape[-1] for p in parts)
    pad = lambda x: torch.nn.functional.pad(x, (0, T - x.shape[-1]))
    rel, tok, mask = (torch.cat([pad(p[i]) for p in parts]).double() for i in range(3))
    ours = mrtpo_token_advantages(b["rewards"].double().view(-1, 4, 3), rel.view(-1, 4, 3, T), mask.view(-1, 4, T),
                                  [1.0, 0.5, 0.25], alpha=1.0).view(-1, T)
    lib_gap = max(lib_gap, float(((ours - tok) * mask).abs().max()))
params = torch.cat([p.detach().flatten() for p in t.model.parameters()])
json.dump({"rank": rank, "world": t.accelerator.num_processes, "gap": gap, "lib_gap": lib_gap,
           "sha": hashlib.sha256(params.numpy().tobytes()).hexdigest(),
           "rows": [int(b["rewards"].shape[0]) for b in t.batches], "local": [len(b["trl"]) for b in t.batches]},
          open(out / f"rank{rank}.json", "w"))
"""


@pytest.mark.slow
def test_two_processes_split_a_group_and_stay_identical(tmp_path):
    """2 gloo processes (torch.distributed.run), a group of 4 split over both: each takes TRL's slice of the gathered
    rewards (its token means equal its own rows' TRL advantages), the per-token file holds the 4 gathered rows once,
    and both ranks end with identical parameters."""
    import subprocess
    import sys

    from tests.apphelpers import REPO, free_port

    driver = tmp_path / "driver.py"
    driver.write_text(DDP_DRIVER)
    env = dict(
        os.environ,
        OMP_NUM_THREADS="1",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        PYTHONPATH=str(REPO),
        ACCELERATE_USE_CPU="1",
    )
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        str(free_port()),
        str(driver),
        str(tmp_path),
    ]
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world"] for r in ranks] == [2, 2]
    assert all(r["rows"] == [4, 4] and r["local"] == [2, 2] for r in ranks)  # gathered 4, local 2
    assert all(r["gap"] <= TOL for r in ranks)
    assert all(r["lib_gap"] <= 1e-5 for r in ranks)  # rows taken from another rank's slice would miss by O(1)
    assert ranks[0]["sha"] == ranks[1]["sha"]
    log = pd.read_parquet(tmp_path / "run" / trl_log.LOG_DIR / trl_log.token_file(1))
    assert log["row"].tolist() == [0, 1, 2, 3] and log["group"].tolist() == [0, 0, 0, 0]


def test_the_readme_snippet_trains(tmp_path):
    """README, "Train with TRL": its Python block runs (one step, into a temporary folder)."""
    import re

    from tests.apphelpers import REPO

    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Train with TRL") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "max_steps=20" in code and '"runs/tool"' in code
    code = code.replace("max_steps=20", "max_steps=1").replace('"runs/tool"', repr(str(tmp_path / "tool")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(code, "README.md", "exec"), {})
    assert (tmp_path / "tool" / trl_log.LOG_DIR / trl_log.token_file(1)).is_file()


@pytest.mark.parametrize("control", ["corrupted", "others"])
def test_a_control_runs_inside_the_trainer(tmp_path, control):
    """Controls with extra branches (``corrupted`` borrows another prompt's information from the batch) run in the
    trainer; the token mean still is TRL's advantage."""
    t, _, _, _ = train(tmp_path, control, "mrtpo", dict(max_steps=1), alpha=1.0, control=control)
    b = t.batches[0]
    assert b["relevance"].min() >= 0 and b["relevance"].max() > 0.01
    mean = (b["token"] * b["mask"]).sum(1) / b["mask"].sum(1).clamp(min=1)
    assert float((mean - b["trl"]).abs().max()) <= TOL
    assert json.loads((tmp_path / control / "mrtpo" / "run.json").read_text())["control"] == control
