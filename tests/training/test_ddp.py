"""A 2-process CPU run (gloo, through ``torchrun``; accelerate picks the process group up) finishes and leaves
identical parameters on both ranks."""

import os
import socket
import subprocess
import sys
import textwrap

import pytest

from tests.apphelpers import REPO as ROOT  # noqa: E402

DRIVER = textwrap.dedent("""
    import hashlib, json, sys
    import torch
    torch.set_num_threads(1)
    from mrtpo_viz.tasks import Example
    from mrtpo_viz.training import TrainConfig
    from mrtpo_viz.training.loop import setup_run, train_step
    from mrtpo_viz.tasks import Verdict, Verifier, register

    register(Verifier("test.letter_e", "custom", "Letter e", "Share of the letter e.",
                      lambda ex: "Use the letter e often.",
                      lambda r, ex: Verdict(min(1.0, 4 * r.count("e") / max(len(r), 1)), "share of e")))
    examples = [Example("custom", f"Write about city {i}.", id=f"ex{i}", verifiers=("test.letter_e",))
                for i in range(8)]
    policy_dir, out, method = sys.argv[1], sys.argv[2], sys.argv[3]
    cfg = TrainConfig(task="custom", method=method, checkpoint=policy_dir, group_size=4, prompts_per_step=4,
                      steps=2, lr=1e-2, max_new_tokens=8, threads=1)
    run = setup_run(cfg, examples)
    acc = run.accelerator
    texts = []
    for step in range(cfg.steps):
        prompts, _ = run.prompts_for(step)
        texts.append([ex.id for ex in prompts])
        metrics = train_step(run, step)
    params = torch.cat([p.detach().flatten() for p in run.policy.model.parameters()])
    record = {"rank": acc.process_index, "world": acc.num_processes, "prompts": texts,
              "sha256": hashlib.sha256(params.numpy().tobytes()).hexdigest(), "sum": float(params.double().sum()),
              "mean_reward": metrics.mean_reward}
    with open(f"{out}/rank{acc.process_index}.json", "w") as fh:
        json.dump(record, fh)
""")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["mrtpo"])
def test_two_process_gloo_run_keeps_ranks_identical(tiny_policy_dir, tmp_path, method):
    import json

    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    # `accelerate launch --cpu` runs a single process (its multi-CPU mode needs MPI); torchrun starts the two.
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT), ACCELERATE_USE_CPU="1")
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        str(_free_port()),
        str(driver),
        str(tiny_policy_dir),
        str(tmp_path),
        method,
    ]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert [r["world"] for r in ranks] == [2, 2]
    # Each rank trained on its own share of the prompts ...
    assert all(set(a).isdisjoint(b) for a, b in zip(ranks[0]["prompts"], ranks[1]["prompts"]))
    # ... and the all-reduced gradients left the same parameters on both.
    assert ranks[0]["sha256"] == ranks[1]["sha256"]
    assert ranks[0]["sum"] == ranks[1]["sum"]
