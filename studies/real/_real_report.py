"""The real-model arm's one look: the primary endpoint (held-out pass rate after the last step, MRTPO - GDPO paired
by seed, one-sided t), the secondary ones, the cost, and the figure (held-out and training curves)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def auc(rec: dict) -> float:
    """Mean over steps of the step's mean per-verifier training reward."""
    return float(np.mean([r["mean_reward"] for r in rec["rows"]]))


def summarize(plan: dict, records: list[dict], stats, start: dict | None = None) -> dict:
    """Every figure of the report from the plan and the run records (``stats``: ``_credit_stats``)."""
    steps = plan["settings"]["steps"]
    last, half = str(steps), str(steps // 2)
    by = {(r["method"], r["seed"]): r for r in records}
    seeds = [s for s in plan["seeds"] if all((m, s) in by for m in plan["arms"])]
    missing = [f"{m}-s{s}" for s in plan["seeds"] for m in plan["arms"] if (m, s) not in by]

    def diff(value) -> dict:
        d = [value(by[("mrtpo", s)]) - value(by[("gdpo", s)]) for s in seeds]
        return stats.paired(d)

    primary = diff(lambda r: r["heldout"][last]["pass_rate"])
    alpha = float(plan["primary"].get("alpha", 0.05)) if isinstance(plan["primary"], dict) else 0.05
    arms = {}
    for m in plan["arms"]:
        recs = [by[(m, s)] for s in seeds]
        rows = [row for r in recs for row in r["rows"]]
        kinds = sorted({k for r in recs for k in r["heldout"][last]["by_kind"]})
        arms[m] = {
            "heldout_last": float(np.mean([r["heldout"][last]["pass_rate"] for r in recs])),
            "heldout_half": float(np.mean([r["heldout"][half]["pass_rate"] for r in recs])),
            "auc": float(np.mean([auc(r) for r in recs])),
            "by_kind": {k: float(np.mean([r["heldout"][last]["by_kind"].get(k, np.nan) for r in recs])) for k in kinds},
            "train_truncated": float(np.mean([row["truncated"] for row in rows])),
            "heldout_truncated": float(np.mean([r["heldout"][last]["truncated"] for r in recs])),
            "cpu_s_per_step": float(np.mean([row["cpu_s"] for row in rows])),
            # wall per step as a median over steps: a step during which the run was paused (SIGSTOP, while a
            # benchmark needed the machine) is an outlier that a mean would carry
            "wall_s_per_step": float(np.median([sum(row.get("times", {}).values()) for row in rows])),
            "phase_s": {
                ph: float(np.median([row["times"][ph] for row in rows if ph in row.get("times", {})]))
                for ph in sorted({ph for row in rows for ph in row.get("times", {})})
            },
            "wall_s_per_run": float(np.mean([r["wall_s"] for r in recs])),
            "cpu_h": float(sum(r["cpu_s"] for r in recs) / 3600),
            "diverged": [r["seed"] for r in recs if r.get("diverged")],
        }
    return {
        "seeds": seeds,
        "missing": missing,
        "alpha": alpha,
        "primary": primary,
        "established": bool(len(seeds) == len(plan["seeds"]) and primary["p_greater"] < alpha),
        "auc": diff(auc),
        "heldout_half": diff(lambda r: r["heldout"][half]["pass_rate"]),
        "by_kind": {
            k: diff(lambda r, k=k: r["heldout"][last]["by_kind"][k])
            for k in sorted({k for r in records for k in r["heldout"][last]["by_kind"]})
            if all(k in by[(m, sd)]["heldout"][last]["by_kind"] for m in plan["arms"] for sd in seeds)
        },
        "arms": arms,
        "start": start,
        "minimum_detectable": plan["primary"]["minimum_detectable"]["value"],
        "achieved": achieved(plan, primary, stats),
        "sd_planned": plan["primary"]["minimum_detectable"]["sd_difference_assumed"],
        "cpu_h": float(sum(a["cpu_h"] for a in arms.values())),
    }


def achieved(plan: dict, primary: dict, stats) -> dict:
    """The plan's promise for its uncertain sd (it came from two pilot runs): the paired sd the main runs show, the
    difference that sd lets this many seeds detect (power 0.8, the plan's one-sided alpha, computed as the plan's
    own minimum detectable difference was), and the power the design had at the plan's minimum detectable value."""
    alpha = float(plan["primary"].get("alpha", 0.05)) if isinstance(plan["primary"], dict) else 0.05
    n, sd = primary["n"], primary["sd"]
    if n < 2 or not sd > 0:
        return {"sd": sd, "n": n, "detectable": float("nan"), "power_at_planned": float("nan")}
    planned = plan["primary"]["minimum_detectable"]["value"]
    return {
        "sd": sd,
        "n": n,
        "detectable": float(stats.detectable(n, sd, power=0.8, alpha=2 * alpha)),
        "power_at_planned": float(stats.power_paired(n, planned, sd, alpha=2 * alpha)),
    }


def _iv(p: dict) -> str:
    return f"{p['mean']:+.3f} [{p['t_lo']:+.3f}, {p['t_hi']:+.3f}]"


def _phases(arm: dict) -> str:
    return ", ".join(arm["phase_s"])


def _phase_values(arm: dict) -> str:
    return ", ".join(f"{v:.1f}" for v in arm["phase_s"].values())


def _power_line(s: dict) -> str:
    a = s["achieved"]
    return (
        f"Power as achieved: the paired differences' sd is {a['sd']:.3f} over {a['n']} seeds (the plan assumed "
        f"{s['sd_planned']:.3f}); with it the design detects {a['detectable']:.3f} at power 0.8, and had power "
        f"{a['power_at_planned']:.2f} at the planned {s['minimum_detectable']}."
    )


def markdown(plan: dict, s: dict) -> str:
    """The report page."""
    p, g, m = s["primary"], s["arms"]["gdpo"], s["arms"]["mrtpo"]
    verdict = (
        f"MRTPO beats GDPO on held-out prompts (one-sided p = {p['p_greater']:.3f} < {s['alpha']})"
        if s["established"]
        else f"not established (one-sided p = {p['p_greater']:.3f}; the design detects "
        f"{s['minimum_detectable']} with power 0.8)"
    )
    start = f"{s['start']['pass_rate']:.3f}" if s.get("start") else "n/a"
    lines = [
        "# Real-model arm: SmolLM2-135M-Instruct, multi-constraint instruction following",
        "",
        f"Plan: `studies/real/results/plan.json`. {len(s['seeds'])} seeds per arm"
        + (f" (missing: {', '.join(s['missing'])})" if s["missing"] else "")
        + f"; {plan['settings']['steps']} steps of {plan['settings']['prompts_per_step']} prompts x "
        f"G = {plan['settings']['group_size']} at lr {plan['lr']:g}, temperature {plan['settings']['temperature']}, "
        f"up to {plan['settings']['max_new_tokens']} new tokens. Held-out: {plan['task']['heldout_prompts']} prompts, "
        "greedy, strict IFEval verdict per constraint.",
        "",
        f"**Primary** (held-out pass rate after the last step, MRTPO - GDPO, paired, 95% t interval): {_iv(p)}: "
        f"{verdict}.",
        "",
        _power_line(s),
        "",
        "| | start | GDPO | MRTPO | MRTPO - GDPO |",
        "|---|---|---|---|---|",
        f"| held-out pass rate, last step | {start} | {g['heldout_last']:.3f} | {m['heldout_last']:.3f} | {_iv(p)} |",
        f"| held-out pass rate, half horizon | | {g['heldout_half']:.3f} | {m['heldout_half']:.3f} | "
        f"{_iv(s['heldout_half'])} |",
        f"| training-reward AUC | | {g['auc']:.3f} | {m['auc']:.3f} | {_iv(s['auc'])} |",
        f"| truncated (training samples) | | {g['train_truncated']:.1%} | {m['train_truncated']:.1%} | |",
        f"| truncated (held-out, greedy) | | {g['heldout_truncated']:.1%} | {m['heldout_truncated']:.1%} | |",
        f"| CPU s per step | | {g['cpu_s_per_step']:.0f} | {m['cpu_s_per_step']:.0f} | |",
        f"| wall s per step (median; {_phases(g)}) | | {g['wall_s_per_step']:.0f} ({_phase_values(g)}) | "
        f"{m['wall_s_per_step']:.0f} ({_phase_values(m)}) | |",
        "",
        "Held-out pass rate per constraint type (last step, mean over seeds):",
        "",
        "| constraint | start | GDPO | MRTPO | MRTPO - GDPO (paired, 95% t; not corrected for the number of types) |",
        "|---|---|---|---|---|",
    ]
    for k in sorted(g["by_kind"]):
        st = s["start"]["by_kind"].get(k) if s.get("start") else None
        shown = "" if st is None else f"{st:.2f}"
        dk = _iv(s["by_kind"][k]) if k in s["by_kind"] else ""
        lines.append(f"| {k} | {shown} | {g['by_kind'][k]:.2f} | {m['by_kind'].get(k, float('nan')):.2f} | {dk} |")
    lines += ["", f"Cost: {s['cpu_h']:.1f} CPU h for the main runs.", ""]
    return "\n".join(lines)


def figure(plan: dict, records: list[dict], start: dict | None, out: Path) -> Path | None:
    """Held-out pass rate at 0 / half / last step and the training reward per step, mean over seeds per arm (thin
    lines: each seed). None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    steps = plan["settings"]["steps"]
    colors = {"gdpo": "#555555", "mrtpo": "#d62728"}
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.6))
    for m in plan["arms"]:
        recs = [r for r in records if r["method"] == m]
        xs = [0, steps // 2, steps]
        for r in recs:
            ys = [start["pass_rate"] if start else np.nan] + [r["heldout"][str(x)]["pass_rate"] for x in xs[1:]]
            a.plot(xs, ys, color=colors[m], alpha=0.25, lw=0.8)
            b.plot([row["mean_reward"] for row in r["rows"]], color=colors[m], alpha=0.15, lw=0.6)
        if recs:
            mean = [start["pass_rate"] if start else np.nan] + [
                float(np.mean([r["heldout"][str(x)]["pass_rate"] for r in recs])) for x in xs[1:]
            ]
            a.plot(xs, mean, color=colors[m], lw=2.2, marker="o", label=m.upper())
            b.plot(np.mean([[row["mean_reward"] for row in r["rows"]] for r in recs], axis=0), color=colors[m], lw=2.2)
    a.set_xticks([0, steps // 2, steps])
    a.set(xlabel="step (0: the start policy)", ylabel="held-out pass rate (greedy)", title="Held-out")
    b.set(xlabel="step", ylabel="mean per-verifier reward", title="Training")
    a.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def write(plan: dict, records: list[dict], stats, start: dict | None, folder: Path) -> dict:
    s = summarize(plan, records, stats, start)
    (folder / "report.json").write_text(json.dumps(s, indent=1) + "\n")
    (folder / "report.md").write_text(markdown(plan, s))
    figure(plan, records, start, folder / "real.png")
    return s
