"""The confirmatory round's report (``confirm.py report``): the analysis and decision rule of
``studies/credit/results/confirm_plan.json``, and nothing else.

Per comparison (method - reference at one rate) and endpoint, differences are paired by (build, seed):

- *per build*: the build's mean paired difference with its t interval (df ``n_b - 1``: 3 at 4 seeds);
- *combined* (builds as fixed blocks): the mean of the build means, with the pooled within-build variance
  ``s^2 = sum_b sum_i (d_bi - mean_b)^2 / (N - B)``, standard error ``sqrt(sum_b s^2 / n_b) / B`` and df ``N - B``
  (9 at 3 x 4);
- *random effect* (builds as a sample of builds): a one-sample t on the ``B`` build means (df ``B - 1``: 2).

Intervals are two-sided at :data:`LEVEL`; tests one-sided at :data:`ALPHA`. The decision (the plan's
``decision_rule``): MRTPO helps iff the combined test of mrtpo - gdpo at the primary rate is significant above 0 on
both co-primary endpoints (intersection-union: no correction), hurts iff both are significant below 0, else it is
not established; the claim extends beyond the builds only if the random-effect intervals of both endpoints exclude 0
on the same side.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
from scipy import stats

from _credit_runs import RunSpec, auc

ALPHA = 0.05
LEVEL = 0.95
CO_PRIMARY = ("auc", "heldout_final")
ENDPOINTS = {
    "auc": "training AUC (mean reward over the steps)",
    "heldout_final": "held-out reward after the last step",
    "heldout_half": "held-out reward after half the steps",
}


def endpoint(rec: dict, name: str) -> float:
    """One run's value of an endpoint of :data:`ENDPOINTS`."""
    if name == "auc":
        return auc(rec)
    steps = rec["steps"]
    key = str(steps if name == "heldout_final" else steps // 2)
    return float(rec["heldout"][key]["mean_reward"])


def build_of(rec: dict) -> str:
    return rec.get("build") or rec["arm"].removeprefix("slots-")


def index(records: list[dict]) -> dict:
    """(method, lr) -> build -> seed -> record."""
    out = defaultdict(lambda: defaultdict(dict))
    for r in records:
        out[(r["method"], round(float(r["lr"]), 12))][build_of(r)][int(r["seed"])] = r
    return out


def _t_row(mean: float, se: float, df: int) -> dict:
    """Mean, two-sided interval at LEVEL and both one-sided p values of a t statistic with ``df``."""
    if not (df >= 1 and se == se):
        return {"mean": mean, "lo": math.nan, "hi": math.nan, "p_greater": math.nan, "p_less": math.nan, "df": df}
    half = stats.t.ppf(1 - (1 - LEVEL) / 2, df) * se
    if se > 0:
        t = mean / se
        p_gt, p_lt = float(stats.t.sf(t, df)), float(stats.t.cdf(t, df))
    else:
        p_gt, p_lt = float(mean <= 0), float(mean >= 0)
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "p_greater": p_gt, "p_less": p_lt, "df": df}


def paired_by_build(runs: dict, method: str, ref: str, lr: float, name: str) -> dict:
    """``method - ref`` at rate ``lr`` on endpoint ``name``: per build, combined (fixed blocks, pooled variance) and
    random effect (t on the build means). Only (build, seed) pairs where both ran count."""
    a, b = runs.get((method, round(lr, 12)), {}), runs.get((ref, round(lr, 12)), {})
    per = {}
    for build in sorted(set(a) & set(b)):
        seeds = sorted(set(a[build]) & set(b[build]))
        d = np.array([endpoint(a[build][s], name) - endpoint(b[build][s], name) for s in seeds])
        if len(d):
            n = len(d)
            se = d.std(ddof=1) / math.sqrt(n) if n > 1 else math.nan
            per[build] = dict(_t_row(float(d.mean()), se, n - 1), n=n, seeds=seeds, per_seed=[float(x) for x in d])
    out = {"method": method, "ref": ref, "lr": lr, "endpoint": name, "per_build": per}
    B, N = len(per), sum(p["n"] for p in per.values())
    means = np.array([p["mean"] for p in per.values()])
    if B:
        ss = sum(float(np.sum((np.array(p["per_seed"]) - p["mean"]) ** 2)) for p in per.values())
        s2 = ss / (N - B) if N > B else math.nan
        se = math.sqrt(sum(s2 / p["n"] for p in per.values())) / B
        out["combined"] = dict(_t_row(float(means.mean()), se, N - B), n=N, builds=B, pooled_var=s2)
        se_re = means.std(ddof=1) / math.sqrt(B) if B > 1 else math.nan
        out["random_effect"] = dict(_t_row(float(means.mean()), se_re, B - 1), builds=B)
    return out


def decide(by_endpoint: dict) -> dict:
    """The plan's decision rule on the confirmatory comparison's co-primary endpoints."""
    comb = [by_endpoint[e].get("combined") for e in CO_PRIMARY]
    if any(c is None for c in comb):
        return {"decision": "not established", "extends_beyond_builds": False, "why": "an endpoint has no pairs"}
    if all(c["p_greater"] < ALPHA for c in comb):
        decision = "helps"
    elif all(c["p_less"] < ALPHA for c in comb):
        decision = "hurts"
    else:
        decision = "not established"
    re = [by_endpoint[e]["random_effect"] for e in CO_PRIMARY]
    side = {"helps": lambda r: r["lo"] > 0, "hurts": lambda r: r["hi"] < 0}.get(decision)
    extends = bool(side and all(side(r) for r in re))
    return {"decision": decision, "extends_beyond_builds": extends}


def expected_runs(plan: dict) -> list[tuple[str, str, float, int]]:
    """Every (build, method, lr, seed) of the plan's schedule."""
    return [
        (b, m, float(plan[part]["lr"]), int(s))
        for part in ("primary", "secondary")
        for s in plan["seeds"]["per_build"]
        for b in plan["builds"]
        for m in plan[part]["methods"]
    ]


def comparisons(plan: dict) -> list[dict]:
    """The plan's comparisons as (name, method, ref, lr, part); the first is the confirmatory one."""
    p, s = float(plan["primary"]["lr"]), float(plan["secondary"]["lr"])
    return [
        {"name": "mrtpo - gdpo", "method": "mrtpo", "ref": "gdpo", "lr": p, "part": "primary"},
        {"name": "mrtpo - mrtpo:shuffle", "method": "mrtpo", "ref": "mrtpo:shuffle", "lr": p, "part": "primary"},
        {"name": "mrtpo-mask - gdpo", "method": "mrtpo-mask", "ref": "gdpo", "lr": p, "part": "primary"},
        {"name": "mrtpo:oracle-mask - gdpo", "method": "mrtpo:oracle-mask", "ref": "gdpo", "lr": p, "part": "primary"},
        {"name": "mrtpo - gdpo", "method": "mrtpo", "ref": "gdpo", "lr": s, "part": "secondary"},
    ]


def summarize(plan: dict, records: list[dict]) -> dict:
    """The report's numbers: every comparison per endpoint, the decision, truncation per method, cost per run, and
    the scheduled runs that have no record. The secondary rate's comparison appears only when all its runs exist."""
    runs = index(records)
    have = {(build_of(r), r["method"], round(float(r["lr"]), 12), int(r["seed"])) for r in records}
    want = expected_runs(plan)
    missing = [w for w in want if (w[0], w[1], round(w[2], 12), w[3]) not in have]
    arm = dict(plan["arm"], key="slots-{build}")
    out = {
        "alpha": ALPHA,
        "level": LEVEL,
        "runs": len(records),
        "scheduled": len(want),
        "missing": [RunSpec(dict(arm, key=f"slots-{b}"), m, lr, s).name for b, m, lr, s in missing],
        "comparisons": [],
    }
    for c in comparisons(plan):
        if c["part"] == "secondary" and any(float(m[2]) == c["lr"] for m in missing):
            out.setdefault("left_out", []).append(f"{c['name']} at {c['lr']:g}: not every run of that rate exists")
            continue
        by = {e: paired_by_build(runs, c["method"], c["ref"], c["lr"], e) for e in ENDPOINTS}
        out["comparisons"].append(dict(c, endpoints=by))
    first = out["comparisons"][0] if out["comparisons"] else None
    out["decision"] = decide(first["endpoints"]) if first else {"decision": "not established"}
    out["truncated"] = {
        f"{m} @ {lr:g}": float(
            np.mean([r["truncated"] for b in blds.values() for rec in b.values() for r in rec["rows"]])
        )
        for (m, lr), blds in sorted(runs.items())
    }
    out["cost"] = [
        {"run": r["run"], "cpu_s": r["cpu_s"], "wall_s": r["wall_s"], "policy": r.get("policy", "")}
        for r in sorted(records, key=lambda r: r["run"])
    ]
    out["cpu_h"] = sum(r["cpu_s"] for r in records) / 3600
    return out


def _iv(r: dict) -> str:
    return f"[{r['lo']:+.4f}, {r['hi']:+.4f}]"


def markdown(summary: dict, plan: dict, command: str) -> str:
    d = summary["decision"]
    lines = [
        "# Credit study, confirmatory round (one look)",
        "",
        f"Reproduce: `{command}`. Plan: `studies/credit/results/confirm_plan.json` (committed before any run). "
        f"{summary['runs']} of {summary['scheduled']} scheduled runs; intervals two-sided "
        f"{100 * summary['level']:.0f}%, tests one-sided at {summary['alpha']}.",
        "",
        f"**Decision** (mrtpo - gdpo at {plan['primary']['lr']:g}, both co-primary endpoints, combined test): "
        f"**{d['decision']}**; beyond these builds (random-effect intervals exclude 0): "
        f"{'yes' if d.get('extends_beyond_builds') else 'no'}.",
        "",
    ]
    for c in summary["comparisons"]:
        lines += [f"## {c['name']} at {c['lr']:g}", ""]
        lines += [
            "| endpoint | combined (df) | 95% | p > 0 | p < 0 | random effect (df) | 95% | p > 0 |"
            + "".join(f" {b} (n) | {b} 95% |" for b in plan["builds"]),
            "|---|---|---|---|---|---|---|---|" + "---|---|" * len(plan["builds"]),
        ]
        for e, r in c["endpoints"].items():
            if "combined" not in r:
                lines.append(f"| {ENDPOINTS[e]} | no pairs |" + " |" * (6 + 2 * len(plan["builds"])))
                continue
            k, re = r["combined"], r["random_effect"]
            cells = [
                f"{ENDPOINTS[e]}",
                f"{k['mean']:+.4f} ({k['df']})",
                _iv(k),
                f"{k['p_greater']:.4f}",
                f"{k['p_less']:.4f}",
                f"{re['mean']:+.4f} ({re['df']})",
                _iv(re),
                f"{re['p_greater']:.4f}",
            ]
            for b in plan["builds"]:
                p = r["per_build"].get(b)
                cells += [f"{p['mean']:+.4f} ({p['n']})", _iv(p)] if p else ["—", "—"]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    for why in summary.get("left_out", []):
        lines += [f"Left out: {why}.", ""]
    lines += ["## Truncated share per method", "", "| method @ rate | truncated |", "|---|---|"]
    lines += [f"| {m} | {v:.4f} |" for m, v in summary["truncated"].items()]
    lines += ["", f"## Cost: {summary['cpu_h']:.2f} CPU h in all", "", "| run | CPU s | wall s | build fingerprint |"]
    lines += ["|---|---|---|---|"] + [
        f"| {r['run']} | {r['cpu_s']:.0f} | {r['wall_s']:.0f} | {r['policy']} |" for r in summary["cost"]
    ]
    lines += ["", f"## Scheduled runs without a result file: {len(summary['missing'])}", ""]
    lines += [f"- `{m}`" for m in summary["missing"]]
    return "\n".join(lines + [""])
