"""The credit study's report: per arm, every method against GDPO on the primary metric (paired by seed, 95% t and
bootstrap intervals), the share of the oracle's gain MRTPO recovers (Fieller's interval), steps to the plan's fixed
threshold, held-out rewards, truncated share and pre-clip gradient norms per method; gate (b) on a pilot."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

import _credit_stats as st
from _credit_runs import auc


def _side(lo: float, hi: float) -> str:
    return "above 0" if lo > 0 else "below 0" if hi < 0 else "includes 0"


def _label(p: dict) -> str:
    """Both intervals' reading, so the words never contradict a printed interval (with 2 seeds the bootstrap has
    only 3 distinct resamples: read the t interval)."""
    t, b = _side(p["t_lo"], p["t_hi"]), _side(p["lo"], p["hi"])
    return t if t == b else f"t: {t}; bootstrap: {b}"


def chosen_lrs(runs: dict) -> dict:
    """Method -> the learning rate with the highest mean AUC over its seeds (``runs``: (method, lr) -> seed -> record);
    ties: the smaller rate."""
    best = {}
    for (m, lr), seeds in sorted(runs.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        score = float(np.mean([auc(r) for r in seeds.values()]))
        if m not in best or score > best[m][1]:
            best[m] = (lr, score)
    return {m: lr for m, (lr, _) in best.items()}


def summarize(plan: dict, records: list[dict]) -> dict:
    """``{arm: {"methods": {...}, "chosen_lr": {...}, "vs_reference": {...}, "share": {...}, "gate_b": {...}}}``.

    Where a method ran at several learning rates (the pilot's grid), the table has a row per rate (``method @ lr``)
    and the comparisons use each method's chosen rate (:func:`chosen_lrs`)."""
    ref, out = plan.get("reference", "gdpo"), {}
    by_arm = defaultdict(lambda: defaultdict(dict))  # arm -> (method, lr) -> seed -> record
    for rec in records:
        by_arm[rec["arm"]][(rec["method"], rec["lr"])][rec["seed"]] = rec
    order = [a["key"] for a in plan["arms"]]
    for arm, runs in sorted(by_arm.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)):
        window = next((a.get("window", plan["window"]) for a in plan["arms"] if a["key"] == arm), plan["window"])
        chosen = chosen_lrs(runs)
        grid = {m for m, _ in runs if sum(k[0] == m for k in runs) > 1}
        rows = {(f"{m} @ {lr:g}" if m in grid else m): seeds for (m, lr), seeds in runs.items()}
        methods = {m: runs[(m, lr)] for m, lr in chosen.items()}
        table = {}
        for m, seeds in rows.items():
            recs = list(seeds.values())
            curves = [[r["mean_reward"] for r in rec["rows"]] for rec in recs]
            norms = [r["grad_norm"] for rec in recs for r in rec["rows"]]
            clip = recs[0].get("max_grad_norm", 1.0)
            reached = [st.steps_to_threshold(c, plan["threshold"], window) for c in curves]
            table[m] = {
                "seeds": sorted(seeds),
                "auc": float(np.mean([auc(r) for r in recs])),
                "start": float(np.mean([c[0] for c in curves])),
                "final": float(np.mean([np.mean(c[-window:]) for c in curves])),
                "steps_to_threshold": float(np.mean([s for s, _ in reached])),
                "reached": sum(ok for _, ok in reached),
                "heldout": {
                    h: float(np.mean([rec["heldout"][h]["mean_reward"] for rec in recs])) for h in recs[0]["heldout"]
                },
                "truncated": float(np.mean([r["truncated"] for rec in recs for r in rec["rows"]])),
                "grad_norm_median": float(np.median(norms)),
                "clipped_share": float(np.mean([n > clip for n in norms])) if clip > 0 else 0.0,
                "cpu_s_per_run": float(np.mean([rec["cpu_s"] for rec in recs])),
                "reward_auc": {  # a reward's mean over the steps that scored it (IFEval's vary by prompt)
                    k: float(np.mean([r["rewards"][k] for rec in recs for r in rec["rows"] if k in r["rewards"]]))
                    for k in sorted({k for rec in recs for r in rec["rows"] for k in r.get("rewards", {})})
                },
            }
        diffs = {}
        for m in methods:
            if m == ref:
                continue
            common = _pairs(methods, m, ref)
            d = [auc(methods[m][s]) - auc(methods[ref][s]) for s in common]
            if len(d) >= 2:
                p = st.paired(d)
                p["label"] = _label(p)
                diffs[m] = p
        added = next((a.get("add_verifiers", []) for a in plan["arms"] if a["key"] == arm), [])
        by_reward = {}
        for name in added:  # a control arm's own reward, compared on its own (mean over steps, paired by seed)
            by_reward[name] = {}
            for m in methods:
                common = _pairs(methods, m, ref) if m != ref else []
                d = [_reward_auc(methods[m][s], name) - _reward_auc(methods[ref][s], name) for s in common]
                if len(d) >= 2:
                    p = st.paired(d)
                    p["label"] = _label(p)
                    by_reward[name][m] = p
        out[arm] = {
            "methods": table,
            "vs_reference_by_reward": by_reward,
            "chosen_lr": chosen,
            "vs_reference": diffs,
            "share": _shares(methods, ref),
            "gate_b": _gate_b(diffs, plan),
        }
    return out


def _reward_auc(rec: dict, name: str) -> float:
    return float(np.mean([r["rewards"][name] for r in rec["rows"]]))


def _pairs(methods: dict, *names: str) -> list:
    """Seeds that every one of ``names`` ran on the same build of the policy (a record's ``policy`` fingerprint;
    records written before fingerprints were kept count as one build)."""
    seeds = set.intersection(*(set(methods.get(n, {})) for n in names))
    return sorted(s for s in seeds if len({methods[n][s].get("policy", "") for n in names}) == 1)


def _shares(methods: dict, ref: str) -> dict:
    shares = {}
    for oracle in ("mrtpo:oracle", "mrtpo:oracle-mask"):
        for m in sorted(methods):
            if m in (ref, "grpo") or m.startswith("mrtpo:oracle") or oracle not in methods or ref not in methods:
                continue
            common = _pairs(methods, m, oracle, ref)
            if len(common) < 2:
                continue
            dv = [auc(methods[m][s]) - auc(methods[ref][s]) for s in common]
            do = [auc(methods[oracle][s]) - auc(methods[ref][s]) for s in common]
            share = st.oracle_share(dv, do)
            if not share["defined"]:
                share["why"] = f"undefined: the oracle's gain over GDPO is not detected at {len(common)} seeds"
            shares[f"{m} of {oracle}"] = share
    return shares


def _gate_b(diffs: dict, plan: dict) -> dict:
    """The best oracle's gain against the minimum detectable difference at the planned seeds (80% power)."""
    oracles = {m: p for m, p in diffs.items() if m.startswith("mrtpo:oracle")}
    if not oracles:
        return {"passed": False, "why": "no oracle run paired with GDPO"}
    best = max(oracles, key=lambda m: oracles[m]["mean"])
    p, n = oracles[best], plan["seeds"]["min"]
    mde = st.detectable(n, p["sd"]) if p["sd"] == p["sd"] else math.nan
    need = st.seeds_for_power(p["mean"], p["sd"]) if p["mean"] > 0 and p["sd"] > 0 else None
    return {
        "best_oracle": best,
        "gain": p["mean"],
        "sd": p["sd"],
        "pilot_seeds": p["n"],
        "planned_seeds": n,
        "mde": mde,
        "passed": bool(p["mean"] > 0 and mde == mde and p["mean"] >= 3 * mde),
        "seeds_for_80pct_power": need,
    }


def markdown(summary: dict, plan: dict, phase: str, command: str) -> str:
    lines = [
        f"# Credit study: {phase}",
        "",
        f"Reproduce: `{command}`. Plan: `benchmarks/results/credit_plan.json` "
        f"(primary metric: mean training reward over all steps; threshold {plan['threshold']} fixed in advance; "
        f"clipping: max_grad_norm {plan['clipping']['max_grad_norm']} for every method).",
        "",
    ]
    for arm, s in summary.items():
        lines += [
            f"## Arm `{arm}`",
            "",
            "| method | seeds | AUC | start | final | steps to thr. | held-out (half, full) "
            "| truncated | grad norm median | clipped steps | CPU s/run |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for m, t in s["methods"].items():
            held = ", ".join(f"{v:.3f}" for v in t["heldout"].values())
            lines.append(
                f"| {m} | {len(t['seeds'])} | {t['auc']:.3f} | {t['start']:.3f} | {t['final']:.3f} | "
                f"{t['steps_to_threshold']:.1f} ({t['reached']} reached) | {held} | {t['truncated']:.3f} | "
                f"{t['grad_norm_median']:.3f} | {t['clipped_share']:.2f} | {t['cpu_s_per_run']:.0f} |"
            )
        names = sorted({k for t in s["methods"].values() for k in t.get("reward_auc", {})})
        if len(names) > MAX_REWARD_COLUMNS:
            lines += [
                "",
                f"{len(names)} rewards (each scored on the prompts that carry it): their means are in the JSON.",
            ]
        elif names:
            lines += [
                "",
                "Each reward's mean over all steps and seeds:",
                "",
                "| method | " + " | ".join(f"`{k}`" for k in names) + " |",
                "|---|" + "---|" * len(names),
            ]
            lines += [
                f"| {m} | " + " | ".join(f"{t['reward_auc'].get(k, float('nan')):.3f}" for k in names) + " |"
                for m, t in s["methods"].items()
            ]
        if any(" @ " in m for m in s["methods"]):
            rates = ", ".join(f"{m} {lr:g}" for m, lr in s["chosen_lr"].items())
            lines += [
                "",
                f"Each method's learning rate (highest mean AUC of the grid; the rows below use it): {rates}.",
            ]
        lines += [
            "",
            "| method - GDPO (AUC, paired by seed) | mean | 95% t interval | 95% bootstrap | n | 0 is |",
            "|---|---|---|---|---|---|",
        ]
        for m, p in s["vs_reference"].items():
            lines.append(
                f"| {m} | {p['mean']:+.4f} | [{p['t_lo']:+.4f}, {p['t_hi']:+.4f}] | "
                f"[{p['lo']:+.4f}, {p['hi']:+.4f}] | {p['n']} | {p['label']} |"
            )
        for name, diffs in s.get("vs_reference_by_reward", {}).items():
            lines += [
                "",
                f"| method - GDPO on `{name}` alone (mean over steps, paired by seed) | mean | 95% t interval | "
                "95% bootstrap | n | 0 is |",
                "|---|---|---|---|---|---|",
            ]
            lines += [
                f"| {m} | {p['mean']:+.4f} | [{p['t_lo']:+.4f}, {p['t_hi']:+.4f}] | [{p['lo']:+.4f}, {p['hi']:+.4f}] "
                f"| {p['n']} | {p['label']} |"
                for m, p in diffs.items()
            ]
        lines += ["", "| share of the oracle's gain | share | 95% Fieller interval | note |", "|---|---|---|---|"]
        for k, sh in s["share"].items():
            lines.append(f"| {k} | {sh['share']:.2f} | [{sh['lo']:.2f}, {sh['hi']:.2f}] | {sh.get('why', '')} |")
        g = s["gate_b"]
        if "gain" in g and phase == "pilot":  # a gate of the pilot; the main run's power is read from its intervals
            lines += [
                "",
                f"Gate (b): best oracle `{g['best_oracle']}` gains {g['gain']:+.4f} (sd {g['sd']:.4f}, "
                f"{g['pilot_seeds']} pilot seeds); minimum detectable difference at {g['planned_seeds']} seeds "
                f"{g['mde']:.4f}; passed: {g['passed']} (needs gain >= 3 x MDE); seeds for 80% power at this "
                f"effect: {g['seeds_for_80pct_power']}.",
            ]
        lines.append("")
    return "\n".join(lines)


def gates_markdown(gate_a: dict | None, relevance: dict | None) -> str:
    """Gate (a) and the relevance quality on the decision tokens, when their files exist."""
    lines = []
    if gate_a:
        lines += [
            "## Gate (a): do single-batch gradients agree?",
            "",
            f"`{gate_a.get('command', '')}`: {gate_a['batches']} batches of {gate_a['prompts']} x "
            f"{gate_a['group_size']}, the same batches for every method; cosine of each batch's gradient with "
            "the mean of the others. Passed: " + str(gate_a["passed"]) + f" ({gate_a['rule']}).",
            "",
            "| method | mean cosine | sd | median gradient norm |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {m} | {v['cos_mean']:+.3f} | {v['cos_sd']:.3f} | {v['grad_norm_median']:.4f} |"
            for m, v in gate_a["methods"].items()
        ]
        lines.append("")
    if relevance:
        lines += [
            "## Relevance on the decision tokens",
            "",
            f"`{relevance.get('command', '')}`: "
            f"{relevance['rows']} (response, reward) rows; uniform weights put {relevance['uniform_mass']:.3f} "
            "of a row's weight on its decision tokens.",
            "",
            "| relevance | top token is a decision token | mass on the decision tokens |",
            "|---|---|---|",
        ]
        label = {"none": "JS, control `none` (`mrtpo`)", "others": "JS, control `others` (`mrtpo@others`)"}
        label["kl"] = "KL, control `none` (`mrtpo@kl`)"
        lines += [
            f"| {label[c]} | {relevance[c]['top1']:.2f} | {relevance[c]['mass']:.3f} |"
            for c in ("none", "others", "kl")
            if c in relevance
        ]
        lines.append("")
    return "\n".join(lines)


MAX_REWARD_COLUMNS = 8
"""Above this many rewards (IFEval's instructions) the per-reward table is left to the JSON."""


def relevance_by_arm_markdown(by_arm: dict[str, dict]) -> str:
    """The relevance on each other arm's decision spans (``credit.py relevance --arm KEY``), one row per arm."""
    if not by_arm:
        return ""
    lines = [
        "## Relevance on the decision spans of the other arms",
        "",
        "Top: share of (response, reward) rows whose most relevant token lies in a decision span; mass: the share of "
        "the row's relevance there; uniform: what uniform weights put there.",
        "",
        "| arm | rows | uniform | JS `none`: top, mass | JS `others`: top, mass | KL: top, mass | command |",
        "|---|---|---|---|---|---|---|",
    ]
    for arm, r in by_arm.items():
        cells = [f"{r[c]['top1']:.2f}, {r[c]['mass']:.3f}" if c in r else "—" for c in ("none", "others", "kl")]
        lines.append(
            f"| `{arm}` | {r['rows']} | {r['uniform_mass']:.3f} | "
            + " | ".join(cells)
            + f" | `{r.get('command', '')}` |"
        )
    return "\n".join(lines + [""])


POCOCK_TWO_LOOKS = st.POCOCK_TWO_LOOKS


def looks(plan: dict, records: list[dict]) -> dict:
    """Where the main runs were extended beyond the seeds first planned (``chosen.first_seeds``): every method against
    the reference at the first seeds (the planned look) and at all seeds, each with its 95% t interval, and at all
    seeds also the t interval at the two-look level (so that looking twice does not inflate the error rate)."""
    chosen = plan.get("chosen") or {}
    first = chosen.get("first_seeds")
    if not first:
        return {}
    offset = chosen.get("seed_offset", 0)
    early = summarize(plan, [r for r in records if r["seed"] < offset + first])
    late = summarize(plan, [r for r in records if r["seed"] >= offset + first])
    full = summarize(plan, records)
    out = {}
    for arm, s in full.items():
        rows = {}
        for m, p in s["vs_reference"].items():
            q = early.get(arm, {}).get("vs_reference", {}).get(m)
            x = late.get(arm, {}).get("vs_reference", {}).get(m)
            lo, hi = st.t_ci(p["per_seed"], level=1 - POCOCK_TWO_LOOKS)
            rows[m] = {"first": q, "extension": x, "all": p, "all_pocock": (lo, hi)}
        if any(r["extension"] for r in rows.values()):  # an arm that ran only its planned seeds has one look
            out[arm] = {"first_seeds": list(range(offset, offset + first)), "rows": rows}
    return out


def looks_markdown(lk: dict) -> str:
    lines = []
    for arm, a in lk.items():
        s0, s1 = a["first_seeds"][0], a["first_seeds"][-1]
        lines += [
            f"## Arm `{arm}`: the planned seeds and the extension",
            "",
            f"The plan first fixed seeds {s0}-{s1}; its second amendment extended the main runs (why: the plan's "
            "`amendments`; the extension's seeds trained a rebuild of the slots policy, so the middle columns are "
            "also the two builds). The first column is the planned look; the last is the extended look's t interval "
            f"at the two-look level ({100 * (1 - POCOCK_TWO_LOOKS):.2f}%, Pocock), which keeps the two looks "
            "together at a 5% false-positive rate.",
            "",
            f"| method - GDPO (AUC) | seeds {s0}-{s1}: mean [95% t] | later seeds: mean [95% t] "
            "| all seeds: mean [95% t] | n | all seeds, two-look t interval |",
            "|---|---|---|---|---|---|",
        ]

        def cell(q):
            return f"{q['mean']:+.4f} [{q['t_lo']:+.4f}, {q['t_hi']:+.4f}] (n {q['n']})" if q else "not run"

        for m, r in a["rows"].items():
            p, (lo, hi) = r["all"], r["all_pocock"]
            lines.append(
                f"| {m} | {cell(r['first'])} | {cell(r.get('extension'))} | "
                f"{p['mean']:+.4f} [{p['t_lo']:+.4f}, {p['t_hi']:+.4f}] | {p['n']} | [{lo:+.4f}, {hi:+.4f}] "
                f"({_side(lo, hi)}) |"
            )
        lines.append("")
    return "\n".join(lines)
