"""Pieces of the benchmark scripts that results files depend on (no timing)."""

import sys

from tests.apphelpers import REPO

sys.path.insert(0, str(REPO / "benchmarks"))


def test_localization_merge_of_family_runs_recomputes_the_means(tmp_path):
    """Families run in parallel processes (``--tasks``) join into one table: their own mean rows are dropped and
    the means over all verifiers recomputed, what one run over every family gives."""
    import csv

    import localization as loc  # benchmarks/localization.py

    def rows(verifiers, values):
        out = [
            {"model": "m", "view": "span_all", "verifier": v, "method": "js_raw", "value": x, "n": 3}
            for v, x in zip(verifiers, values)
        ]
        return loc.with_means(out)

    files = []
    for name, part in (("a", rows(["t.a", "t.b"], [0.9, 0.7])), ("b", rows(["s.c"], [0.2]))):
        path = tmp_path / f"{name}.csv"
        with path.open("w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(part[0]))
            writer.writeheader()
            writer.writerows(part)
        files.append(str(path))
    merged = loc.merge(files)
    means = [r for r in merged if r["verifier"] == "mean"]
    assert len(means) == 1 and means[0]["n"] == 3 and abs(means[0]["value"] - 0.6) < 1e-12  # not (0.8 + 0.2) / 2
    assert sorted(r["verifier"] for r in merged if r["verifier"] != "mean") == ["s.c", "t.a", "t.b"]


def test_localization_falls_back_to_a_corrupted_row_per_verifier(tiny_policy, monkeypatch):
    """Where the corrupted control cannot serve every verifier at once (ValueError), each verifier gets its own
    corrupted replay; the other methods still come from one joint replay."""
    import numpy as np

    import localization as loc
    from mrtpo_viz.relevance import engine
    from mrtpo_viz.tasks.example_sources import load_examples

    ex = load_examples("tool_calling", "test")[0]
    joint = engine.replay_variants

    def no_joint_corruption(policy, example, response, verifiers, variants, **kw):
        if ("js", "corrupted") in variants and len(verifiers) > 1:  # one verifier at a time still works
            raise ValueError("control 'corrupted': no other example has a different information")
        return joint(policy, example, response, verifiers, variants, **kw)

    monkeypatch.setattr(engine, "replay_variants", no_joint_corruption)
    sig, rel = loc.signals(tiny_policy, ex, ex.reference, list(ex.verifiers))
    rows = np.stack([loc._corrupted_row(tiny_policy, ex, ex.reference, v) for v in ex.verifiers])
    assert set(sig) == set(loc.METHODS) and sig["js_corrupted"].shape == (len(ex.verifiers), rel.T)
    assert not np.isnan(rows).any() and np.array_equal(sig["js_corrupted"], rows)
    assert sig["js_raw"].max() > 0.1  # the joint replay still ran
