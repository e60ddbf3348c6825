"""MRTPOTrainer sharded by FSDP2 over 2 CPU processes (gloo) against one process on the same batches.

The driver (``tests/integrations/fsdp_driver.py``) runs 2 steps of MRTPO (alpha = 1) on the bundled policy under
``torch.distributed.run`` with accelerate's FSDP plugin (``fsdp_version: 2``; :func:`allow_cpu_fsdp` lets accelerate
shard on CPU), then in one process on the completions the sharded run sampled. Everything after sampling is
recomputed in each: rewards, the replay (through the sharded model in the first), advantages, loss, update.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("trl", reason="the TRL integration tests need trl (pip install mrtpo-viz[trl])")

import torch  # noqa: E402

from mrtpo_viz.integrations import trl_fsdp  # noqa: E402
from tests.apphelpers import REPO, free_port  # noqa: E402

DRIVER = REPO / "tests" / "integrations" / "fsdp_driver.py"


def _run(launcher: list[str], out, mode: str) -> dict:
    env = dict(
        os.environ,
        OMP_NUM_THREADS="1",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        PYTHONPATH=str(REPO),
        ACCELERATE_USE_CPU="1",
    )
    proc = subprocess.run(
        [*launcher, str(DRIVER), str(out), mode], cwd=REPO, env=env, capture_output=True, text=True, timeout=400
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads((out / mode / "result.json").read_text())
    result["params"] = torch.load(out / mode / "params.pt")
    return result


def _token_gap(a: list, b: list) -> float:
    """Largest difference between two batches' token advantages (rows in TRL's global order)."""
    assert [len(t) for t, _ in a] == [len(t) for t, _ in b]
    return max((abs(x - y) for (ta, _), (tb, _) in zip(a, b) for x, y in zip(ta, tb)), default=0.0)


@pytest.mark.slow  # ~35 s on 2 cores; CI runs the slow tests too (it runs pytest without -m)
def test_fsdp2_two_processes_match_one_process(tmp_path):
    torchrun = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        str(free_port()),
    ]
    sharded = _run(torchrun, tmp_path, "fsdp2")
    single = _run([sys.executable], tmp_path, "single")
    # it really ran sharded: 2 processes, FSDP2, parameters held as DTensors
    assert (sharded["world"], sharded["fsdp_version"], sharded["dtensor"]) == (2, 2, True)
    assert (single["world"], single["dtensor"]) == (1, False)
    assert sharded["sharded_replays"] == [True, True] and single["sharded_replays"] == [False, False]
    assert len(sharded["batches"]) == len(single["batches"]) == 2
    assert all(len(b) == 8 for b in sharded["batches"])
    for batch in sharded["batches"]:  # the comparison can fail: advantages really vary per token in both steps
        assert max(max(t) - min(t) for t, _ in batch if t) > 1.0

    # Step 1: the same weights and ids. Each FSDP2 forward all-gathers the exact full weights, so the replay sees
    # the same numbers as one process (measured: bitwise equal); 1e-6 allows for a kernel that sums differently.
    first, second = (_token_gap(a, b) for a, b in zip(sharded["batches"], single["batches"]))
    assert first <= 1e-6
    # TRL's sequence advantages come from the gathered rewards, the same in both: equal to float32 rounding.
    assert all(
        abs(sa - sb) <= 1e-6
        for ba, bb in zip(sharded["batches"], single["batches"])
        for (_, sa), (_, sb) in zip(ba, bb)
    )
    # Step 2 replays with the weights after one update, which differ by float rounding (gradients reduced across
    # ranks sum in another order): ~1e-6 in the weights, and the relevance normalization (relevance / its mean,
    # JS values ~1e-2) amplifies it ~100x. Measured 8e-5 on advantages up to ~6; a replay of the wrong rows or
    # prompts would be off by O(1).
    assert second <= 2e-3

    # The loss at a policy ratio of 1 (one iteration per generation) is minus the token mean of zero-mean
    # advantages: ~0 in both, up to float32 rounding of ~60 terms of size <= 10 (~4e-7).
    assert all(abs(a - b) <= 1e-6 for a, b in zip(sharded["losses"], single["losses"]))
    # The gradient norm is what really moves: equal up to reduction order (measured 6e-6 relative). Adam ignores a
    # gradient's scale, so a wrong world-size factor would show here (x2), not in the parameters.
    for a, b in zip(sharded["grad_norms"], single["grad_norms"]):
        assert b > 0.1 and abs(a - b) <= 1e-4 * b
    # AdamW (lr 1e-3) moves each parameter by ~lr per step whatever its gradient's size; parameters with a
    # gradient near zero turn float rounding into up to ~1% of lr (measured 5.7e-6 after 2 steps). A gradient
    # that lost one rank's rows would move most parameters in another direction, by O(lr).
    a, b = sharded["params"], single["params"]
    assert a.keys() == b.keys()
    assert max(float((a[k] - b[k]).abs().max()) for k in a) <= 2e-5


def test_in_one_process_lockstep_adds_no_hook_and_no_collective(tiny_policy):
    """Without a process group (and for a model FSDP2 does not manage) lockstep leaves the model alone: the same
    logits, no forward hook left behind, and an error inside passes through unchanged."""
    model = tiny_policy.model
    ids = torch.tensor([[3, 4, 5]])
    assert not trl_fsdp.is_fsdp2(model)
    with torch.no_grad():
        plain = model(input_ids=ids).logits
        with trl_fsdp.lockstep(model, torch.device("cpu")):
            assert not model._forward_pre_hooks
            inside = model(input_ids=ids).logits
        with pytest.raises(KeyError, match="inside"):
            with trl_fsdp.lockstep(model, torch.device("cpu")):
                raise KeyError("inside")
    assert torch.equal(plain, inside) and not model._forward_pre_hooks


def test_fsdp1_and_zero3_are_refused_with_the_reason():
    """The checks that run once accelerate has set the trainer up, on the states they read."""
    from types import SimpleNamespace as NS

    from mrtpo_viz.integrations.trl import MRTPOTrainer

    def trainer(fsdp_version=None, zero_stage=None):
        state = NS(
            fsdp_plugin=NS(fsdp_version=fsdp_version) if fsdp_version else None,
            deepspeed_plugin=NS(zero_stage=zero_stage) if zero_stage else None,
        )
        return NS(_is_vlm=False, is_fsdp_enabled=fsdp_version is not None, accelerator=NS(state=state))

    with pytest.raises(ValueError, match="FSDP2 only"):
        MRTPOTrainer._refuse_after_init(trainer(fsdp_version=1))
    with pytest.raises(ValueError, match="ZeRO-3.*does not start a multi-process DeepSpeed run on CPU"):
        MRTPOTrainer._refuse_after_init(trainer(zero_stage=3))
    for accepted in (trainer(), trainer(fsdp_version=2), trainer(zero_stage=2)):
        MRTPOTrainer._refuse_after_init(accepted)


LOCKSTEP_DRIVER = """
import json, sys
import torch
import torch.distributed as dist
torch.set_num_threads(1)
dist.init_process_group("gloo")
from torch.distributed.fsdp import fully_shard
from transformers import AutoModelForCausalLM
from mrtpo_viz.integrations.trl_fsdp import lockstep
from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR
rank = dist.get_rank()
full = AutoModelForCausalLM.from_pretrained(str(BUNDLED_POLICY_DIR)).eval()
model = AutoModelForCausalLM.from_pretrained(str(BUNDLED_POLICY_DIR)).eval()
for layer in model.model.layers:
    fully_shard(layer)
fully_shard(model)
# rank 0 runs 3 forwards, rank 1 runs 1 and then fails: without lockstep rank 0 would wait forever on rank 1's
# all-gathers; with it rank 1 runs dummy forwards until rank 0 is done, then raises its error
inputs = [torch.tensor([[5 + i + rank, 7, 9, 11][: 2 + i]]) for i in range(3 if rank == 0 else 1)]
gaps, error = [], None
try:
    with torch.no_grad(), lockstep(model, torch.device("cpu")):
        for ids in inputs:
            gaps.append(float((model(input_ids=ids).logits - full(input_ids=ids).logits).abs().max()))
        if rank == 1:
            raise ValueError("rank 1 failed after its forward")
except ValueError as e:
    error = str(e)
with torch.no_grad():  # both ranks are back in step: one more sharded forward each
    gaps.append(float((model(input_ids=inputs[0]).logits - full(input_ids=inputs[0]).logits).abs().max()))
json.dump({"rank": rank, "gaps": gaps, "error": error}, open(f"{sys.argv[1]}/rank{rank}.json", "w"))
dist.destroy_process_group()
"""


@pytest.mark.slow  # ~10 s
def test_lockstep_lets_ranks_run_different_numbers_of_forwards(tmp_path):
    """Under FSDP2 each forward all-gathers from every rank: ranks with 3 and 1 forwards (the second failing) both
    finish, their sharded logits equal the unsharded model's, and the failing rank still raises its error."""
    driver = tmp_path / "lockstep.py"
    driver.write_text(LOCKSTEP_DRIVER)
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", PYTHONPATH=str(REPO))
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
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [len(r["gaps"]) for r in ranks] == [4, 2]
    # the gathered weights are the full weights: equal logits up to summation order in the matmuls
    assert all(g <= 1e-5 for r in ranks for g in r["gaps"])
    assert ranks[0]["error"] is None and ranks[1]["error"] == "rank 1 failed after its forward"
