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

from tests.apphelpers import REPO, free_port  # noqa: E402

DRIVER = REPO / "tests" / "integrations" / "fsdp_driver.py"


def _run(launcher: list[str], out, mode: str) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(REPO),
               ACCELERATE_USE_CPU="1")
    proc = subprocess.run([*launcher, str(DRIVER), str(out), mode], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=400)
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
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
                str(free_port())]
    sharded = _run(torchrun, tmp_path, "fsdp2")
    single = _run([sys.executable], tmp_path, "single")
    # it really ran sharded: 2 processes, FSDP2, parameters held as DTensors
    assert (sharded["world"], sharded["fsdp_version"], sharded["dtensor"]) == (2, 2, True)
    assert (single["world"], single["dtensor"]) == (1, False)
    assert len(sharded["batches"]) == len(single["batches"]) == 2
    assert all(len(b) == 8 for b in sharded["batches"])
    for batch in sharded["batches"]:  # the comparison can fail: advantages really vary per token in both steps
        assert max(max(t) - min(t) for t, _ in batch if t) > 1.0

    # Step 1: the same weights and ids. Each FSDP2 forward all-gathers the exact full weights, so the replay sees
    # the same numbers as one process (measured: bitwise equal); 1e-6 allows for a kernel that sums differently.
    first, second = (_token_gap(a, b) for a, b in zip(sharded["batches"], single["batches"]))
    assert first <= 1e-6
    # TRL's sequence advantages come from the gathered rewards, the same in both: equal to float32 rounding.
    assert all(abs(sa - sb) <= 1e-6 for ba, bb in zip(sharded["batches"], single["batches"])
               for (_, sa), (_, sb) in zip(ba, bb))
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
