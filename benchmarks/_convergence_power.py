"""Power of the convergence study, from the pilot: how many seeds detect a difference of 0.05 in final mean reward
(and 20% in steps to threshold) with 80% power, paired two-sided t test, alpha 0.05; and the proposed plan.

The noise model (assumptions, each stated in the written file):

- the paired difference of two variants' final rewards over seeds has variance ``tau2 + noise / w``: ``tau2`` the
  seed-to-seed spread of the training trajectories, ``noise`` one step's sampling noise of the paired difference
  (``_convergence_stats.step_noise``: half the mean squared successive difference), divided by the window ``w``
  of the trailing mean (steps treated as independent draws around a slow trend);
- ``noise`` scales as 1 / (P G) (completions per step); ``tau2`` is estimated at half and at the full pilot horizon
  and extrapolated to the study's horizon: in proportion to the horizon where it grew (a random walk of the
  trajectories; conservative), constant where it did not;
- the variants' differences from GDPO share one variance (pooled over variants; they are correlated through the
  shared GDPO run, so the pooled degrees of freedom overstate the precision);
- CPU per step scales linearly with P G (conservative: sampling is batched over G).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

import _convergence_stats as st

EFFECT = 0.05
POWER = 0.8
ALPHA = 0.05
STEP_EFFECT = 0.2
"""Steps to threshold: detect a difference of 20% of GDPO's mean steps."""


def pooled_sd(diffs: list[np.ndarray]) -> tuple[float, int]:
    """sd of paired differences pooled over variants (each centred on its own mean) and its degrees of freedom."""
    ss = sum(float(((d - d.mean()) ** 2).sum()) for d in diffs if len(d) > 1)
    df = sum(len(d) - 1 for d in diffs if len(d) > 1)
    return (math.sqrt(ss / df) if df else math.nan), df


def arm_noise(rows: pd.DataFrame, arm: dict, variants: list[str], horizon: int) -> dict:
    """Pilot estimates at ``horizon`` steps: pooled sd of the final-reward differences, step noise, tau2."""
    w = arm["window"]
    out = st.run_outcomes(rows[rows["step"] < horizon], w, horizon)
    seeds = st.complete_seeds(out, variants)
    per = {v: out[out["variant"] == v].set_index("seed").loc[seeds] for v in variants}
    others = [v for v in variants if v != st.BASELINE]
    diffs = [per[v]["final"].to_numpy() - per[st.BASELINE]["final"].to_numpy() for v in others]
    sd, df = pooled_sd(diffs)
    noise = float(
        np.nanmean([st.step_noise(a, b) for v in others for a, b in zip(per[v]["curve"], per[st.BASELINE]["curve"])])
    )
    return {
        "horizon": horizon,
        "sd": sd,
        "df": df,
        "noise": noise,
        "tau2": max(sd**2 - noise / w, 0.0),
        "seeds": seeds,
        "per_variant_sd": {v: float(np.std(d, ddof=1)) for v, d in zip(others, diffs)},
    }


def steps_sd(pilot_arm: dict) -> tuple[float, float]:
    """Pooled sd of the paired steps-to-threshold differences and GDPO's mean steps (pilot)."""
    diffs = [np.asarray(d["steps"]["per_seed"], dtype=float) for d in pilot_arm["vs_gdpo"].values() if d["steps"]]
    sd, _ = pooled_sd(diffs)
    return sd, pilot_arm["variants"][st.BASELINE]["steps"]["mean"]


def design(est: dict, arm: dict, steps: int, window: int, pg_factor: float = 1.0) -> float:
    """Predicted sd of the paired final-reward difference at ``steps``, ``window`` and ``pg_factor`` x P G."""
    full, half = est["full"], est["half"]
    grew = half is not None and full["tau2"] > half["tau2"]
    tau2 = full["tau2"] * (steps / full["horizon"] if grew else 1.0)
    return math.sqrt(tau2 + full["noise"] / pg_factor / window)


def cost_per_seed(pilot_arm: dict, steps: int, pg_factor: float = 1.0) -> float:
    """CPU seconds of one seed of every variant at ``steps`` (pilot CPU per step, linear in P G; setup included)."""
    cpu = pilot_arm["cpu"]
    per_step = sum(c["s_per_step"] for c in cpu.values())
    n_runs = max(len(pilot_arm["seeds_used"]), 1)
    setup = sum(c["cpu_h"] * 3600 - c["s_per_step"] * pilot_arm["steps"] * n_runs for c in cpu.values()) / n_runs
    return per_step * steps * pg_factor + max(setup, 0.0)


def propose(
    rows: pd.DataFrame,
    pilot: dict,
    budget_cpu_h: float,
    variants: list[str],
    horizons: dict | None = None,
    floor: dict | None = None,
    command: str = "power",
) -> tuple[dict, str]:
    """The study's plan and the text of ``convergence_power.md``; ``floor``: seeds an arm keeps (a study under way
    has run them: they are in the budget, and a plan may not take them back); ``command``: the phase's arguments,
    quoted in the text."""
    horizons, floor = horizons or {}, floor or {}
    est = {}
    for key, a in pilot["arms"].items():
        arm_rows = rows[rows["arm"] == key]
        half = a["steps"] // 2
        est[key] = {
            "full": arm_noise(arm_rows, a, variants, a["steps"]),
            "half": arm_noise(arm_rows, a, variants, half) if half >= 2 * a["window"] else None,
        }
    plan_arms, power, costs = [], {}, {}
    for key, a in pilot["arms"].items():
        steps = horizons.get(key, default_horizon(a))
        window = max(steps // 4, 1)
        sd = design(est[key], a, steps, window)
        need = st.seeds_for_power(EFFECT, sd, POWER, ALPHA)
        costs[key] = cost_per_seed(a, steps)
        power[key] = {
            "sd": sd,
            "seeds_needed": need,
            "steps": steps,
            "window": window,
            "cpu_h_needed": need * costs[key] / 3600,
        }
        plan_arms.append(
            {
                "key": key,
                "task": a["task"],
                "checkpoint": a["checkpoint"],
                "steps": steps,
                "prompts_per_step": a["prompts_per_step"],
                "group_size": a["group_size"],
                "max_new_tokens": a["max_new_tokens"],
                "lr": a["lr"],
                "window": window,
                "save_every": max(5, steps // 5) if a["checkpoint"] != "tiny-mrtpo" else 25,
            }
        )
    seeds = affordable_seeds(power, costs, budget_cpu_h, floor=floor)
    for arm in plan_arms:
        k = arm["key"]
        arm["seeds"] = seeds[k]
        power[k].update(
            seeds=seeds[k], mde=st.detectable(seeds[k], power[k]["sd"], POWER, ALPHA), cpu_h=seeds[k] * costs[k] / 3600
        )
    plan = {
        "study": "main",
        "variants": variants,
        "arms": plan_arms,
        "budget_cpu_h": budget_cpu_h,
        "power": {k: {x: round(v, 4) if isinstance(v, float) else v for x, v in p.items()} for k, p in power.items()},
    }
    return plan, text(pilot, est, power, budget_cpu_h, rows, command)


def default_horizon(a: dict) -> int:
    """2.5x the pilot's steps on the bundled policy (the earlier runs were still climbing at 57 steps); the real
    model 4x its (short) pilot: its steps cost ~30x more."""
    return int(a["steps"] * (2.5 if a["checkpoint"] == "tiny-mrtpo" else 4))


def affordable_seeds(
    power: dict, costs: dict, budget_cpu_h: float, minimum: int = 5, floor: dict | None = None
) -> dict:
    """Seeds per arm: everyone gets ``minimum`` (or its ``floor``, the seeds a study under way has run, if more);
    the rest of the budget raises the arms whose need is largest relative to what they have, one seed at a time,
    never past what 80% power needs."""
    seeds = {k: max(minimum, (floor or {}).get(k, 0)) for k in power}
    spent = sum(seeds[k] * costs[k] for k in seeds) / 3600
    while True:
        open_ = [k for k in seeds if seeds[k] < power[k]["seeds_needed"] and spent + costs[k] / 3600 <= budget_cpu_h]
        if not open_:
            return seeds
        k = max(open_, key=lambda x: power[x]["seeds_needed"] / seeds[x])
        seeds[k] += 1
        spent += costs[k] / 3600


def text(pilot: dict, est: dict, power: dict, budget: float, rows: pd.DataFrame, command: str = "power") -> str:
    z = st._z(1 - ALPHA / 2) + st._z(POWER)
    total = sum(p["cpu_h"] for p in power.values())
    lines = [
        "# Convergence study: power from the pilot, and the plan",
        "",
        f"Produced by `python benchmarks/convergence.py {command}` from `convergence_pilot.{{csv,json}}` (the "
        "`pilot` phase). Goal: detect a difference of "
        f"{EFFECT} in final mean reward (paired by seed, two-sided t test, alpha {ALPHA}) with "
        f"{POWER:.0%} power; and {STEP_EFFECT:.0%} of GDPO's steps to threshold.",
        "",
        "## Arithmetic",
        "",
        f"Seeds needed: the smallest n with power(n) >= {POWER}, power(n) = P(|T| > t(0.975, n-1)), T ~ "
        "noncentral t(n - 1, delta sqrt(n) / sd) (scipy.stats.nct). The normal formula n = ((z(0.975) + "
        f"z(0.8)) sd / delta)^2 = ({z:.3f} sd / delta)^2 is a lower bound; the t correction adds ~2 seeds.",
        "",
        "Predicted sd of a paired difference of final rewards: sd^2 = tau2 + noise / (w x P G factor); see "
        "the assumptions below.",
        "",
        "## Pilot estimates",
        "",
        "| arm | pilot seeds x steps | sd of paired final difference (df) | at half the steps | step noise "
        "(variance) | tau2 | noise/w share | steps-to-threshold sd; GDPO mean steps |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for key, e in est.items():
        f, h, a = e["full"], e["half"], pilot["arms"][key]
        s_sd, s_mean = steps_sd(a)
        share = (f["noise"] / a["window"]) / f["sd"] ** 2 if f["sd"] > 0 else math.nan
        lines.append(
            f"| {key} | {len(f['seeds'])} x {a['steps']} | {f['sd']:.4f} ({f['df']}) | "
            + (f"{h['sd']:.4f} at {h['horizon']}" if h else "—")
            + f" | {f['noise']:.4f} | {f['tau2']:.5f} | {share:.0%} | {s_sd:.1f}; {s_mean:.1f} |"
        )
    lines += [
        "",
        "## Seeds for 80% power, and the plan",
        "",
        f"Budget: {budget:.1f} CPU hours for the whole study (2 cores; one run at a time on one thread). "
        "Every arm gets at least 5 seeds (or the seeds a study under way has run, `--keep-seeds`); the rest "
        "of the budget adds seeds where the need is largest.",
        "",
        "| arm | steps | window | predicted sd | seeds for 80% power | CPU h for those | seeds planned | "
        "minimum detectable difference | CPU h planned |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key, p in power.items():
        lines.append(
            f"| {key} | {p['steps']} | {p['window']} | {p['sd']:.4f} | {p['seeds_needed']} | "
            f"{p['cpu_h_needed']:.1f} | {p['seeds']} | {p['mde']:.3f} | {p['cpu_h']:.2f} |"
        )
    lines += ["", f"Planned total: {total:.2f} CPU hours.", ""]
    assumptions = __doc__.split("(assumptions, each stated in the written file):", 1)[1].strip()
    lines += steps_lines(pilot) + outcome_lines(pilot, est, rows) + ["## Assumptions", "", assumptions, ""]
    return "\n".join(lines)


def steps_lines(pilot: dict) -> list[str]:
    lines = [
        "## Steps to threshold",
        "",
        "| arm | sd of paired difference (steps) | effect (20% of GDPO's) | seeds for 80% power |",
        "|---|---|---|---|",
    ]
    for key, a in pilot["arms"].items():
        sd, mean = steps_sd(a)
        eff = STEP_EFFECT * mean if mean and not math.isnan(mean) else math.nan
        need = st.seeds_for_power(eff, sd) if eff > 0 and sd == sd else "—"
        lines.append(f"| {key} | {sd:.1f} | {eff:.1f} | {need} |")
    return lines + [
        "",
        "Steps to threshold depend on the threshold, which depends on the horizon (half-way to "
        "the best final reward); these pilot numbers hold at the pilot's horizon only.",
        "",
    ]


def outcome_lines(pilot: dict, est: dict, rows: pd.DataFrame) -> list[str]:
    """Trailing training mean or a held-out evaluation? The share of the variance an evaluation could remove."""
    lines, shares = ["## Outcome: trailing training mean or a held-out evaluation?", ""], []
    for key in est:
        a, f = pilot["arms"][key], est[key]["full"]
        share = (f["noise"] / a["window"]) / f["sd"] ** 2 if f["sd"] > 0 else math.nan
        r = rows[rows["arm"] == key]
        t = r[[c for c in r.columns if c.startswith("time/")]].mean()
        sample_share = float(t.get("time/sample", math.nan) / t.sum()) if t.sum() > 0 else math.nan
        shares.append(share)
        lines.append(
            f"- {key}: sampling noise of the {a['window']}-step trailing mean is {share:.0%} of the "
            f"paired variance at the pilot's settings; sampling is {sample_share:.0%} of a step's time."
        )
    lines += [
        "",
        "The trailing mean costs nothing beyond training; an evaluation of the final policy on held-out "
        "prompts can remove at most the sampling-noise share above, and matching the trailing mean's "
        "sample count (w x P x G completions) costs about w x (sampling share) steps of CPU per run. Where the "
        "share is small, seeds are the better buy; where it is large, a longer window is free.",
        "",
        (
            "Decision: the trailing mean (largest share " + f"{max(shares):.0%}" + "); the plan's window is the "
            "last quarter of the steps."
            if shares and max(shares) < 0.5
            else "Decision: the sampling noise is a large share somewhere; the plan's window is the last "
            "quarter of the steps (free), and a held-out evaluation would be worth adding before the full run."
        ),
        "",
    ]
    return lines
