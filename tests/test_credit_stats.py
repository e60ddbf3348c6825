"""The credit study's statistics, pinned with hand-computed numbers: the oracle share and Fieller's interval, the
two-look corrections (Pocock's level, the inverse-normal combination), and the audit of the committed first round
(the numbers the README and docs/study.md quote)."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "studies" / "credit"))

import _credit_audit as audit  # noqa: E402
import _credit_runs as runs  # noqa: E402
import _credit_stats as st  # noqa: E402

D_METHOD = [0.1, 0.1, 0.2, 0.2]  # method - GDPO per seed: mean 0.15
D_ORACLE = [0.2, 0.4, 0.3, 0.5]  # oracle - GDPO per seed: mean 0.35


def test_the_oracle_share_is_method_over_oracle_and_swapping_its_arguments_changes_it():
    s = st.oracle_share(D_METHOD, D_ORACLE)
    assert s["defined"] and s["share"] == pytest.approx(0.15 / 0.35)
    assert s["oracle_gain"] == pytest.approx(0.35) and s["n"] == 4
    swapped = st.oracle_share(D_ORACLE, D_METHOD)  # the method's gain is detected too, so the ratio is defined
    assert swapped["share"] == pytest.approx(0.35 / 0.15)
    assert swapped["share"] != pytest.approx(s["share"])
    # no headroom: an oracle whose gain includes 0 leaves the share undefined
    flat = st.oracle_share(D_METHOD, [0.2, -0.2, 0.1, -0.1])
    assert not flat["defined"] and math.isnan(flat["share"]) and "no headroom" in flat["why"]


def test_fieller_interval_by_hand():
    """Means a = 0.15, b = 0.35; covariance of the means (n = 4): var a 0.01/12, var b 0.05/12, cov 0.01/12;
    t(0.975, 3) = 3.182446. The bounds solve (b^2 - t^2 vb) r^2 - 2 (ab - t^2 cab) r + (a^2 - t^2 va) = 0:
    0.0803002 r^2 - 0.0881201 r + 0.0140600 = 0, r = 0.19378 and 0.90361."""
    lo, hi = st.fieller(D_METHOD, D_ORACLE)
    assert (lo, hi) == pytest.approx((0.19378, 0.90361), abs=2e-5)
    t = 3.182446305284263
    for r in (lo, hi):  # at each bound the ratio's pivot sits exactly on the t quantile
        d = np.array(D_METHOD) - r * np.array(D_ORACLE)
        assert d.mean() ** 2 == pytest.approx(t**2 * d.var(ddof=1) / 4, rel=1e-9)
    assert st.fieller(D_ORACLE, D_METHOD)[0] > 1  # the swapped ratio's interval lies above 1
    assert all(math.isnan(x) for x in st.fieller(D_METHOD, [0.2, -0.2, 0.1, -0.1]))  # unbounded: no interval


def test_one_sided_p_and_the_two_look_level_by_hand():
    """d = [1, 2, 3]: t = 2 / (1 / sqrt 3) = 3.4641 on 2 df, whose tail is 0.5 (1 - t / sqrt(t^2 + 2)) = 0.03709;
    Pocock's per-look level 97.06% takes the df-2 quantile (2p - 1) / sqrt(2p (1 - p)) at p = 0.9853, 5.70274."""
    assert st.p_greater([1, 2, 3]) == pytest.approx(0.5 * (1 - 12**0.5 / 14**0.5), abs=1e-9)
    half = 5.702741 / 3**0.5
    assert st.t_ci([1, 2, 3], level=1 - st.POCOCK_TWO_LOOKS) == pytest.approx((2 - half, 2 + half), abs=1e-5)
    assert st.p_greater([-1, -2, -3]) == pytest.approx(1 - st.p_greater([1, 2, 3]))


def test_the_inverse_normal_combination_by_hand():
    """Two equal stages at one-sided p 0.05 each: z = 1.644854 each, combined sqrt(1/2) (z + z) = 2.326174,
    p = 1 - Phi(2.326174) = 0.010005 (z_0.01 = 2.326348, density there 0.02665). Unequal weights follow the stage
    sizes."""
    assert st.inverse_normal_p(0.05, 0.05, 7, 7) == pytest.approx(0.010005, abs=1e-6)
    assert st.inverse_normal_p(0.5, 0.5, 3, 9) == pytest.approx(0.5)
    # the larger second stage weighs more: a small p there moves the result more than the same p first
    assert st.inverse_normal_p(0.5, 0.01, 6, 8) < st.inverse_normal_p(0.01, 0.5, 6, 8)
    two = st.two_looks([0.1, 0.2], [0.3, 0.1, 0.2])
    assert two["n"] == 5 and two["mean"] == pytest.approx(0.18)
    assert two["pocock"][0] < two["t95"][0] and two["pocock"][1] > two["t95"][1]
    expected = st.inverse_normal_p(st.p_greater([0.1, 0.2]), st.p_greater([0.3, 0.1, 0.2]), 2, 3)
    assert two["p_combined"] == pytest.approx(expected)


def _rec(method, seed, aucs, policy="", held=0.5):
    rows = [{"mean_reward": r} for r in aucs]
    hh = {"20": {"mean_reward": held}, "40": {"mean_reward": held}}
    return dict(arm="slots", method=method, lr=5e-4, seed=seed, rows=rows, heldout=hh, policy=policy)


def test_the_audit_pairs_only_within_a_build_and_reports_each_build():
    """Seeds 0-1 on the first build (no fingerprint), 2-3 on build "b" for GDPO; the method's seed 2 ran on "c", so
    it pairs with nothing. Per build: first build +0.1, +0.2; build b: seed 3 alone (too few for an interval)."""
    records = [_rec("gdpo", s, [0.4, 0.6], "" if s < 2 else "b") for s in range(4)]
    records += [_rec("mrtpo", 0, [0.5, 0.7]), _rec("mrtpo", 1, [0.6, 0.8])]
    records += [_rec("mrtpo", 2, [0.9, 0.9], "c"), _rec("mrtpo", 3, [0.5, 0.6], "b")]
    runs_ = audit.by_method(records, "slots")
    assert audit.diffs(runs_, "mrtpo", [0, 1, 2, 3], "auc") == pytest.approx([0.1, 0.2, 0.05])
    pb = audit.per_build(runs_, "mrtpo")
    assert list(pb) == [audit.FIRST_BUILD] and pb[audit.FIRST_BUILD]["mean"] == pytest.approx(0.15)
    assert pb[audit.FIRST_BUILD]["gdpo"] == pytest.approx(0.5) and pb[audit.FIRST_BUILD]["seeds"] == [0, 1]
    c = audit.comparison(runs_, "mrtpo", [0, 1], "auc")  # one seed after the first look: no second stage
    assert c["looks"] == 1 and c["n"] == 3 and c["mean"] == pytest.approx(0.35 / 3)
    assert audit.endpoint(records[4], "final", window=1) == pytest.approx(0.7)
    assert audit.endpoint(records[4], "heldout_40") == pytest.approx(0.5)


@pytest.fixture(scope="module")
def first_round():
    results = ROOT / "benchmarks" / "results"
    records = list(runs.load_runs(results / "credit_main"))
    return audit.audit(records, list(runs.load_runs(results / "credit_pilot")), list(range(100, 106)))


def test_the_committed_first_round_reproduces_the_issues_audit(first_round):
    """The numbers the README and docs/study.md quote, recomputed from the committed per-run files; an independent
    audit (issue 40) got the same: MRTPO one-sided p 0.020 combined (above Pocock's 0.0147), the mask oracle 0.002."""
    auc = first_round["endpoints"]["auc"]
    m, o = auc["mrtpo"], auc["mrtpo:oracle-mask"]
    assert m["n"] == o["n"] == 14 and m["looks"] == o["looks"] == 2
    assert m["mean"] == pytest.approx(0.0736, abs=1e-4) and o["mean"] == pytest.approx(0.1266, abs=1e-4)
    assert m["p_combined"] == pytest.approx(0.0201, abs=1e-4) and not m["holds"]
    assert o["p_combined"] == pytest.approx(0.0021, abs=1e-4) and o["holds"]
    assert m["pocock"] == pytest.approx((-0.0014, 0.1486), abs=1e-4)
    assert o["pocock"] == pytest.approx((0.0346, 0.2187), abs=1e-4)
    assert m["t95"] == pytest.approx((0.0073, 0.1399), abs=1e-4)
    share = first_round["shares"]["mrtpo of mrtpo:oracle-mask"]
    assert share["share"] == pytest.approx(0.581, abs=1e-3)
    assert (share["lo"], share["hi"]) == pytest.approx((0.110, 0.989), abs=1e-3)
    assert share["two_look"] == pytest.approx((-0.026, 1.087), abs=1e-3)
    b = first_round["per_build"]["mrtpo"]
    assert b[audit.FIRST_BUILD]["seeds"] == list(range(100, 106)) and b["dba3bf3a165d"]["n"] == 8
    assert b[audit.FIRST_BUILD]["mean"] == pytest.approx(0.0270, abs=1e-4)
    assert b[audit.FIRST_BUILD]["t95"] == pytest.approx((-0.0398, 0.0937), abs=1e-4)
    w = first_round["without_gdpo_low"]
    assert w["seed"] == 109 and w["rows"]["mrtpo"]["mean"] == pytest.approx(0.0527, abs=1e-4)
    assert first_round["pilot"][5e-4]["mrtpo"] == pytest.approx([-0.002, -0.030], abs=1e-3)


def test_the_reports_share_table_is_method_over_oracle():
    """The report (credit_main.md) computes the same share as the audit: a swap inside the report fails here."""
    import _credit_plan as plans
    from _credit_report import summarize

    results = ROOT / "benchmarks" / "results"
    plan = plans.load_plan(results / "credit_plan.json")
    records = [r for r in runs.load_runs(results / "credit_main") if r["arm"] == "slots"]
    share = summarize(plan, records)["slots"]["share"]["mrtpo of mrtpo:oracle-mask"]
    assert share["share"] == pytest.approx(0.581, abs=1e-3) and share["n"] == 14
    assert (share["lo"], share["hi"]) == pytest.approx((0.110, 0.989), abs=1e-3)
