"""Several variants x seeds: each run in its own folder, one combined frame, a resumed comparison does not retrain."""

import pytest

from mrtpo_viz.training.compare import run_variants
from mrtpo_viz.training.config import TrainConfig
from tests.training.test_loop import _examples


def test_variants_and_seeds_give_one_frame_and_resume(tiny_policy, tmp_path):
    base = TrainConfig(
        task="custom",
        group_size=2,
        prompts_per_step=1,
        steps=2,
        max_new_tokens=6,
        threads=1,
        save_every=1,
        out_dir=str(tmp_path),
    )
    seen = []
    df = run_variants(
        base,
        ["gdpo", "mrtpo:others"],
        [0, 1],
        tmp_path,
        examples=_examples(),
        policy=tiny_policy,
        on_step=lambda label, m: seen.append((label, m.seed, m.step)),
    )
    assert len(df) == 2 * 2 * 2 and set(df["variant"]) == {"gdpo", "mrtpo:others"}
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "gdpo-seed0",
        "gdpo-seed1",
        "mrtpo-others-seed0",
        "mrtpo-others-seed1",
    ]
    assert seen[:2] == [("gdpo", 0, 0), ("gdpo", 0, 1)] and len(seen) == 8
    seen.clear()
    again = run_variants(
        base,
        ["gdpo", "mrtpo:others"],
        [0, 1],
        tmp_path,
        examples=_examples(),
        policy=tiny_policy,
        on_step=lambda label, m: seen.append(label),
    )
    assert seen == [] and again[["variant", "seed", "step", "reward/mean"]].equals(
        df[["variant", "seed", "step", "reward/mean"]]
    )  # every run resumed at its end: nothing retrained


def test_an_unknown_variant_fails_before_training(tiny_policy, tmp_path):
    base = TrainConfig(task="custom", steps=1)
    with pytest.raises(ValueError, match="unknown control 'magic'"):
        run_variants(base, ["mrtpo:magic"], [0], tmp_path, examples=_examples(), policy=tiny_policy)
