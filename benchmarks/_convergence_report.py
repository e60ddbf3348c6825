"""The convergence study's report: outcomes per arm and variant, paired differences against GDPO, the oracle
share, relevance quality next to the training gain, CPU hours; written as ``.md``, ``.csv``, ``.json``, ``.html``
(plotly) and ``.png`` (matplotlib, when installed). The statistics are ``_convergence_stats``'s."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Optional

import pandas as pd

import _convergence_stats as st
from mrtpo_viz.viz.study import SCHEMA  # what the app's Method tab looks for in convergence.json

LABELS = {
    "grpo": "GRPO",
    "gdpo": "GDPO",
    "mrtpo": "MRTPO (raw JS)",
    "mrtpo:others": "MRTPO (others control)",
    "mrtpo:oracle": "oracle (span weights)",
    "entropy": "entropy weighting",
}
SHARED = ("mrtpo", "mrtpo:others", "entropy")
"""Variants whose share of the oracle's gain is reported."""
LOCALIZATION = Path(__file__).resolve().parent / "results" / "localization.csv"
FAMILY = {"tool_call.": "tool_calling", "sql.": "text_to_sql", "ifeval.": "instruction_following"}


def label(variant: str) -> str:
    return LABELS.get(variant, variant)


# --- analysis ------------------------------------------------------------------------------------------------------


def analyze_arm(rows: pd.DataFrame, arm: dict, variants: list[str], ledger: dict) -> dict:
    """Everything the report says about one arm (a JSON-able dict)."""
    w, steps = arm["window"], arm["steps"]
    out = st.run_outcomes(rows, w, steps)
    seeds = st.complete_seeds(out, variants)
    out = out[out["seed"].isin(seeds)]
    res = {
        k: arm[k]
        for k in ("task", "checkpoint", "steps", "window", "prompts_per_step", "group_size", "max_new_tokens", "lr")
    }
    res.update(
        seeds_planned=arm["seeds"],
        seeds_used=seeds,
        threshold=None,
        variants={},
        vs_gdpo={},
        oracle_share={},
        cpu=_cpu(ledger, arm["key"], variants),
    )
    if not seeds:
        return res
    thr = st.arm_threshold(out)
    res["threshold"] = thr
    per = {v: out[out["variant"] == v].set_index("seed").loc[seeds] for v in variants}
    hits = {
        v: [st.steps_to_threshold(c, thr, w) if thr is not None else (math.nan, False) for c in per[v]["curve"]]
        for v in variants
    }
    for v in variants:
        res["variants"][v] = {
            "final": _spread(per[v]["final"]),
            "all_pass": _spread(per[v]["final_all_pass"]),
            "start": float(per[v]["start"].mean()),
            "steps": {
                "per_seed": [h[0] for h in hits[v]],
                "reached": sum(h[1] for h in hits[v]),
                "mean": float(pd.Series([h[0] for h in hits[v]]).mean()),
            },
        }
    base = per[st.BASELINE]["final"].to_numpy()
    for v in variants:
        if v == st.BASELINE:
            continue
        d_steps = [a[0] - b[0] for a, b in zip(hits[v], hits[st.BASELINE])]
        res["vs_gdpo"][v] = {
            "final": st.paired(per[v]["final"].to_numpy() - base),
            "steps": st.paired(d_steps) if thr is not None else None,
        }
    if st.ORACLE in variants:
        d_oracle = per[st.ORACLE]["final"].to_numpy() - base
        for v in (x for x in SHARED if x in variants):
            res["oracle_share"][v] = st.oracle_share(per[v]["final"].to_numpy() - base, d_oracle)
    return res


def _spread(x: pd.Series) -> dict:
    return {
        "mean": float(x.mean()),
        "sd": float(x.std(ddof=1)) if len(x) > 1 else math.nan,
        "per_seed": [round(float(v), 4) for v in x],
    }


def _cpu(ledger: dict, arm: str, variants: list[str]) -> dict:
    """CPU hours per variant (all seeds, setup and recomputed steps included) and CPU seconds per step."""
    out = {}
    for v in variants:
        es = [e for k, e in ledger.get("runs", {}).items() if k.startswith(f"{arm}/{v}/")]
        steps = sum(e["steps_computed"] for e in es)
        work = sum(e["cpu_s"] - e["setup_cpu_s"] for e in es)
        out[v] = {"cpu_h": sum(e["cpu_s"] for e in es) / 3600, "s_per_step": work / steps if steps else math.nan}
    return out


def analyze(rows: pd.DataFrame, ledger: dict, plan: dict, digests: Optional[dict] = None) -> dict:
    """The whole study: every arm, the relevance-vs-outcome table and the plain-words conclusion."""
    variants = list(plan["variants"])
    arms = {
        a["key"]: analyze_arm(rows[rows["arm"] == a["key"]] if len(rows) else rows, a, variants, ledger)
        for a in plan["arms"]
    }
    res = {
        "schema": SCHEMA,
        "study": plan.get("study", ""),
        "variants": variants,
        "labels": LABELS,
        "baseline": st.BASELINE,
        "oracle": st.ORACLE,
        "arms": arms,
        "digests": digests or {},
        "complete": all(len(a["seeds_used"]) == a["seeds_planned"] for a in arms.values()),
        "cpu_h": sum(c["cpu_h"] for a in arms.values() for c in a["cpu"].values()),
        "min_seeds": min((len(a["seeds_used"]) for a in arms.values()), default=0),
        "power": plan.get("power"),
    }
    res["relevance_vs_outcome"] = relevance_table(arms)
    for key, a in arms.items():
        a["verdict"] = arm_verdict(key, a)
    res["conclusion"] = conclusion(arms)
    return res


def relevance_table(arms: dict) -> list[dict]:
    """Per arm: the localization numbers of its task on its policy (mean over the task's verifiers) next to the
    training gain of each variant over GDPO."""
    loc = pd.read_csv(LOCALIZATION) if LOCALIZATION.is_file() else None
    out = []
    for key, a in arms.items():
        model = localization_model(a["checkpoint"])
        row = {"arm": key, "model": model}
        for view, method, name in (
            ("span_all", "js_raw", "span_auroc_raw"),
            ("span_all", "js_others", "span_auroc_others"),
            ("specificity", "js_raw", "specificity_raw"),
            ("specificity", "js_others", "specificity_others"),
        ):
            row[name] = _loc_mean(loc, a["task"], view, method, model) if loc is not None else None
        for v, d in a["vs_gdpo"].items():
            row[f"gain/{v}"] = d["final"]["mean"]
        s = a["oracle_share"].get("mrtpo", {})
        row["share/mrtpo"] = s.get("share") if s.get("defined") else None
        out.append(row)
    return out


def localization_model(checkpoint: str) -> str:
    """The ``model`` column of localization.csv for an arm's policy: ``tiny-mrtpo``, or the converted model's folder
    name (``~/.cache/mrtpo-viz/models/smollm2-135m-instruct`` -> ``smollm2-135m-instruct``, the name
    ``localization.py --checkpoint`` was given)."""
    return checkpoint if checkpoint == "tiny-mrtpo" else Path(checkpoint).expanduser().name


def _loc_mean(loc: pd.DataFrame, task: str, view: str, method: str, model: str = "tiny-mrtpo") -> Optional[float]:
    prefix = next(p for p, t in FAMILY.items() if t == task)
    if "model" in loc:  # the arm's policy's rows (the file holds the bundled policy's and a real model's)
        loc = loc[loc["model"] == model]
    elif model != "tiny-mrtpo":
        return None
    sel = loc[(loc["view"] == view) & (loc["method"] == method) & loc["verifier"].str.startswith(prefix)]
    vals = sel["value"].dropna()
    return float(vals.mean()) if len(vals) else None


# --- words ---------------------------------------------------------------------------------------------------------


def _iv(p: dict, fmt: str = "+.3f") -> str:
    return f"{p['mean']:{fmt}} [{p['lo']:{fmt}}, {p['hi']:{fmt}}]" if p["n"] > 1 else f"{p['mean']:{fmt}} (1 seed)"


def _excludes_zero(lo: float, hi: float) -> bool:
    return lo > 0 or hi < 0


def _reading(p: dict) -> str:
    """Words for a paired difference that agree with the interval printed beside them (the bootstrap one): an
    interval that excludes 0 is never called "no difference"; where the t interval disagrees, both are named."""
    if p.get("n", 0) < 2:
        return "one seed: no interval"
    boot, t = _excludes_zero(p["lo"], p["hi"]), _excludes_zero(p["t_lo"], p["t_hi"])
    side = "higher" if p["mean"] > 0 else "lower"
    if boot and t:
        return side
    if boot:
        return (
            f"{side} by this interval, but the t interval [{p['t_lo']:+.3f}, {p['t_hi']:+.3f}] includes 0: not robust"
        )
    if t:
        return f"this interval includes 0, the t interval [{p['t_lo']:+.3f}, {p['t_hi']:+.3f}] does not: not robust"
    return "no difference detected"


def arm_verdict(key: str, a: dict) -> str:
    """The arm's result in plain words."""
    if not a["seeds_used"]:
        return f"{key}: no complete seed yet."
    n, vs = len(a["seeds_used"]), a["vs_gdpo"]
    parts = [f"{key} ({n} seeds, final mean reward minus GDPO's, 95% bootstrap interval):"]
    if st.ORACLE in vs:
        o = vs[st.ORACLE]["final"]
        if st.detected(o):
            head = (
                "there is headroom for token credit"
                if o["mean"] > 0
                else "token credit from these span labels does worse than GDPO"
            )
        elif o["mean"] < 0 and _excludes_zero(o["lo"], o["hi"]):
            head = (
                f"lower than GDPO by this interval (the t interval [{o['t_lo']:+.3f}, {o['t_hi']:+.3f}] "
                "includes 0): no headroom from these span labels"
            )
        else:
            head = "no headroom detected: these span labels do not beat GDPO here"
        parts.append(f"the oracle {_iv(o)}: {head}.")
    for v in (x for x in ("mrtpo", "mrtpo:others", "entropy", "grpo") if x in vs):
        parts.append(f"{label(v)} {_iv(vs[v]['final'])} ({_reading(vs[v]['final'])}).")
    share = a["oracle_share"].get("mrtpo")
    if share and share["defined"]:
        parts.append(
            f"MRTPO (raw) recovers {share['share']:.0%} [{share['lo']:.0%}, {share['hi']:.0%}] of the oracle's gain."
        )
    elif share:
        parts.append("The share of the oracle's gain is not defined (no headroom).")
    return " ".join(parts)


def conclusion(arms: dict) -> str:
    """The study's answer in plain words, whichever way it falls."""
    done = {k: a for k, a in arms.items() if a["seeds_used"]}
    if not done:
        return "Not run yet: no arm has a complete seed."

    def count(v, sign):
        return [
            k
            for k, a in done.items()
            if v in a["vs_gdpo"]
            and st.detected(a["vs_gdpo"][v]["final"])
            and (a["vs_gdpo"][v]["final"]["mean"] > 0) == (sign > 0)
        ]

    head, better, worse = count(st.ORACLE, 1), count("mrtpo", 1), count("mrtpo", -1)
    ctrl = count("mrtpo:others", 1)
    s = [
        f"Of {len(done)} arms, the oracle beats GDPO on {len(head)}"
        + (f" ({', '.join(head)})" if head else "")
        + "; MRTPO (raw) beats GDPO on "
        + (", ".join(better) if better else "none")
        + (f" and is worse on {', '.join(worse)}" if worse else "")
        + "; MRTPO (others) beats GDPO on "
        + (", ".join(ctrl) if ctrl else "none")
        + "."
    ]
    if not head:
        s.append(
            "Without headroom (no detected oracle gain), these tasks at this scale cannot show whether token "
            "credit helps: the span labels themselves do not speed up learning."
        )
    elif not better and not ctrl:
        s.append("Where there is headroom, the replay's relevance does not recover a detectable part of it.")
    else:
        s.append("Where MRTPO beats GDPO, the oracle share says how much of the possible gain the relevance finds.")
    return " ".join(s)


def _nan(x):
    """JSON's None back to NaN (the inverse of :func:`_clean` for numbers)."""
    if isinstance(x, dict):
        return {k: _nan(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_nan(v) for v in x]
    return math.nan if x is None else x


def refresh_words(stem: Path, title: str, power_md: Optional[Path] = None) -> dict:
    """Rewrite the verdicts and the conclusion of ``stem.{json,md}`` from the numbers stored there (no rerun)."""
    stem = Path(stem)
    res = json.loads(stem.with_suffix(".json").read_text(encoding="utf-8"))
    for key, a in res["arms"].items():
        a["verdict"] = arm_verdict(key, _nan(a))
    res["conclusion"] = conclusion({k: _nan(a) for k, a in res["arms"].items()})
    stem.with_suffix(".json").write_text(json.dumps(_clean(res), indent=1) + "\n", encoding="utf-8")
    shown = {**res, "arms": {k: _nan(a) for k, a in res["arms"].items()}}  # the tables keep None as "—"
    stem.with_suffix(".md").write_text(markdown(shown, title, power_md), encoding="utf-8")
    return res


# --- files ---------------------------------------------------------------------------------------------------------


def markdown(res: dict, title: str, power_md: Optional[Path] = None) -> str:
    lines = [
        f"# {title}",
        "",
        "Produced by `python benchmarks/convergence.py report` (study "
        f"`{res['study']}`; {res['cpu_h']:.2f} CPU hours on one thread). "
        + (
            "All planned seeds are complete."
            if res["complete"]
            else "**Incomplete: not every planned seed has finished; only complete seeds are paired.**"
        ),
        "",
        "## Conclusion",
        "",
        res["conclusion"],
        "",
    ]
    lines += [f"- {a['verdict']}" for a in res["arms"].values()] + [""]
    if power_md is not None and Path(power_md).is_file():
        lines += (
            [
                "## Power (before the run)",
                "",
                f"See [{Path(power_md).name}]({Path(power_md).name}); the plan's numbers:",
                "",
            ]
            + _power_lines(res.get("power"))
            + [""]
        )
    for key, a in res["arms"].items():
        lines += arm_table(key, a)
    lines += relevance_markdown(res["relevance_vs_outcome"])
    lines += ["## Definitions", "", st.__doc__.split("Definitions:", 1)[1].strip(), ""]
    return "\n".join(lines)


def _power_lines(power: Optional[dict]) -> list[str]:
    if not power:
        return ["(no power numbers in the plan)"]
    return [
        f"- {k}: sd of the paired difference {p['sd']:.3f}, {p['seeds']} seeds planned, minimum detectable "
        f"difference {p['mde']:.3f} (80% power, two-sided alpha 0.05)"
        for k, p in power.items()
    ]


def arm_table(key: str, a: dict) -> list[str]:
    lines = [
        f"## {key}",
        "",
        f"Policy `{a['checkpoint']}`; {a['steps']} steps of {a['prompts_per_step']} prompts x "
        f"G = {a['group_size']}, max {a['max_new_tokens']} new tokens, lr {a['lr']}; final = mean of the last "
        f"{a['window']} steps; seeds {a['seeds_used']} of {a['seeds_planned']} planned; threshold "
        + (
            f"not defined (no variant's final mean reward is {st.MIN_GAIN} above the start)"
            if a["threshold"] is None
            else f"{a['threshold']:.3f}"
        )
        + ".",
        "",
        f"| variant | start (first {a['window']} steps) | final mean reward (sd) | minus GDPO [bootstrap 95%] "
        "(t 95%) | steps to threshold (reached) | minus GDPO [95%] | share of oracle gain [95%] | CPU h | "
        "CPU s/step (x GDPO) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for v, r in a["variants"].items():
        d = a["vs_gdpo"].get(v)
        fin = f"{_iv(d['final'])} ({d['final']['t_lo']:+.3f}, {d['final']['t_hi']:+.3f})" if d else "—"
        stp = _iv(d["steps"], "+.1f") if d and d["steps"] else "—"
        sh = a["oracle_share"].get(v)
        share = (
            f"{sh['share']:.0%} [{sh['lo']:.0%}, {sh['hi']:.0%}]"
            if sh and sh["defined"]
            else ("n/a (no headroom)" if sh else "—")
        )
        c, base = a["cpu"][v], a["cpu"][st.BASELINE]["s_per_step"]
        steps = (
            "—"
            if a["threshold"] is None
            else f"{r['steps']['mean']:.1f} ({r['steps']['reached']}/{len(r['steps']['per_seed'])})"
        )
        lines.append(
            f"| {label(v)} | {r['start']:.3f} | {r['final']['mean']:.3f} ({r['final']['sd']:.3f}) | {fin} | "
            f"{steps} | {stp} | "
            f"{share} | {c['cpu_h']:.2f} | {c['s_per_step']:.2f} ({c['s_per_step'] / base:.2f}x) |"
        )
    return lines + [""]


def relevance_markdown(table: list[dict]) -> list[str]:
    f = lambda x: "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"  # noqa: E731
    g = lambda x: "—" if x is None else f"{x:+.3f}"  # noqa: E731
    lines = [
        "## Relevance quality vs training gain",
        "",
        "Localization numbers of the arm's task on the arm's policy (benchmarks/results/localization.csv, "
        "mean over the task's verifiers; rerun `python benchmarks/localization.py` after a policy rebuild) next "
        "to the gain in final mean reward over GDPO.",
        "",
        "| arm | span AUROC raw / others | specificity raw / others | oracle gain | MRTPO raw gain | "
        "MRTPO others gain | entropy gain | MRTPO share of oracle |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in table:
        share = "—" if r.get("share/mrtpo") is None else f"{r['share/mrtpo']:.0%}"
        lines.append(
            f"| {r['arm']} | {f(r['span_auroc_raw'])} / {f(r['span_auroc_others'])} | "
            f"{f(r['specificity_raw'])} / {f(r['specificity_others'])} | {g(r.get('gain/mrtpo:oracle'))} | "
            f"{g(r.get('gain/mrtpo'))} | {g(r.get('gain/mrtpo:others'))} | {g(r.get('gain/entropy'))} | "
            f"{share} |"
        )
    return lines + [""]


def write_report(
    rows: pd.DataFrame,
    ledger: dict,
    plan: dict,
    stem: Path,
    title: str,
    digests: Optional[dict] = None,
    power_md: Optional[Path] = None,
) -> dict:
    """Write ``stem.{md,csv,json,html}`` (and ``.png`` with matplotlib); returns the analysis."""
    from mrtpo_viz.viz.study import study_figure

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    res = analyze(rows, ledger, plan, digests)
    rows.to_csv(stem.with_suffix(".csv"), index=False)
    stem.with_suffix(".json").write_text(json.dumps(_clean(res), indent=1) + "\n", encoding="utf-8")
    stem.with_suffix(".md").write_text(markdown(res, title, power_md), encoding="utf-8")
    html = study_figure(res).to_html(full_html=True, include_plotlyjs="cdn")  # plotly.js from its CDN: small file
    stem.with_suffix(".html").write_text(html, encoding="utf-8")
    res["png"] = write_png(res, stem.with_suffix(".png"))
    return res


def _clean(x):
    """NaN -> None (JSON has no NaN), numpy scalars -> floats."""
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, float) or hasattr(x, "item"):
        x = float(x)
        return None if math.isnan(x) else x
    return x


def write_png(res: dict, path: Path) -> bool:
    """The paired differences as a PNG through matplotlib when installed. Returns whether a file was written."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    from mrtpo_viz.viz.study import forest_rows

    arms = list(res["arms"])
    fig, axes = plt.subplots(1, len(arms), figsize=(3.6 * len(arms), 3.0), squeeze=False, sharey=True)
    for ax, key in zip(axes[0], arms):
        for i, r in enumerate(forest_rows(res, key)):
            ax.errorbar(r["mean"], i, xerr=[[r["mean"] - r["lo"]], [r["hi"] - r["mean"]]], fmt="o", capsize=3)
        ax.axvline(0, color="grey", linewidth=0.8)
        ax.set_title(key, fontsize=9)
        ax.set_xlabel("final reward minus GDPO")
    axes[0][0].set_yticks(
        range(len(forest_rows(res, arms[0]))), [label(r["variant"]) for r in forest_rows(res, arms[0])]
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
