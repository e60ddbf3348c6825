"""Do the Live training tab's defaults teach? Reward at the start and after ``steps`` steps, per method and seed.

Usage:
    python benchmarks/live_defaults.py                 # the tab's defaults (LiveSettings) on 3 seeds
    python benchmarks/live_defaults.py --search        # the candidate settings of SEARCH on --seeds seeds (default 1)
    python benchmarks/live_defaults.py --seeds 5 --set lr=3e-4 --set task=text_to_sql   # the defaults, changed

The settings come from ``mrtpo_viz.ui.training_tab.LIVE`` (the one source the tab uses), so after a rebuild of the
bundled policy or a change of the defaults a plain rerun measures what the tab shows. Every run trains private
copies of the bundled policy exactly as the tab does (``LiveSettings.train_config``), one step of each method in
turn; one torch thread.

Writes ``benchmarks/results/live_defaults.{csv,md,json}`` (``live_defaults_search.*`` with ``--search``): one CSV row
per step, and per method and seed the reward at step 0, the mean of the first and of the last 5 steps, the rise, the
first step at which the methods' rewards differ, and the spread over seeds. Finished (settings, seed) runs are kept
in ``--work`` (default: a folder in the system's temporary directory) and reused when the script is rerun.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import math
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from _common import load_average, machine  # noqa: E402

import pandas as pd  # noqa: E402
import torch  # noqa: E402

from mrtpo_viz.atomic import atomic_path  # noqa: E402
from mrtpo_viz.tasks.bundled_data import BUNDLED_POLICY_DIR  # noqa: E402
from mrtpo_viz.ui.training_tab import LIVE, LiveSettings  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
EDGE = 5
"""Steps averaged at the start and at the end of a curve (one step's reward is 2 prompts x G samples: noisy)."""

SEARCH: dict[str, dict] = {
    # what the tab had before this check: 15 steps there, 30 here so that every candidate is measured alike
    "old (lr 3e-4, 40 tokens)": dict(lr=3e-4, max_new_tokens=40),
    "lr 3e-4": dict(lr=3e-4),
    "lr 5e-4": dict(lr=5e-4),
    "lr 1e-3": dict(lr=1e-3),
    "lr 3e-3": dict(lr=3e-3),
    "lr 5e-4, 4 prompts": dict(lr=5e-4, prompts_per_step=4),
    "lr 5e-4, G 8": dict(lr=5e-4, group_size=8),
    "lr 5e-4, T 0.7": dict(lr=5e-4, temperature=0.7),
    "lr 5e-4, own seeds": dict(lr=5e-4, shared_samples=False),
    "sql, lr 5e-4": dict(lr=5e-4, task="text_to_sql"),
    "ifeval, lr 5e-4, 96 tokens": dict(lr=5e-4, task="instruction_following", max_new_tokens=96),
}
"""Candidate settings (changes to ``LIVE``) of ``--search``."""


def run_once(settings: LiveSettings, seed: int, policy) -> pd.DataFrame:
    """Every method of ``settings`` for ``settings.steps`` steps, one step of each in turn, as the tab runs them."""
    from mrtpo_viz.training import train

    gens = {m: train(settings.train_config(m, seed=seed, threads=1), policy=policy) for m in settings.methods}
    rows = []
    try:
        for _ in range(settings.steps):
            for method, gen in gens.items():
                m = next(gen)
                rows.append({**m.to_row(), "variant": method, "run_seed": seed})
    finally:
        for gen in gens.values():
            gen.close()
    return pd.DataFrame(rows)


def cached_run(label: str, settings: LiveSettings, seed: int, policy, work: Path, digest: str) -> pd.DataFrame:
    """``run_once``, kept in ``work`` under a name from the settings, the seed and the policy's weights."""
    trains = {k: v for k, v in dataclasses.asdict(settings).items() if k not in ("smoothing", "max_steps")}
    key = hashlib.sha256(f"{trains}|{seed}|{digest}".encode()).hexdigest()[:16]
    path = work / f"{key}.csv"
    if path.is_file():
        return pd.read_csv(path).assign(settings=label)
    start = time.perf_counter()
    df = run_once(settings, seed, policy).assign(settings=label)
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=False)
    print(f"  {label!r} seed {seed}: {time.perf_counter() - start:.0f} s", flush=True)
    return df


def run_summary(df: pd.DataFrame) -> dict:
    """One (settings, seed) run: per method the reward of the first and the last step, the means of the first and
    last EDGE steps and the rise between them; the first step (1-based) at which the methods' rewards differ (None:
    never) and the mean gap between the highest and the lowest method per step."""
    order = list(dict.fromkeys(df["variant"]))
    curves = df.pivot_table(index="step", columns="variant", values="reward/mean")[order]  # (steps, methods)
    methods = {}
    for v in curves.columns:
        c = curves[v]
        start, end = float(c.iloc[:EDGE].mean()), float(c.iloc[-EDGE:].mean())
        methods[v] = {
            "first": float(c.iloc[0]),
            "last": float(c.iloc[-1]),
            "start": start,
            "end": end,
            "rise": end - start,
        }
    gap = curves.max(axis=1) - curves.min(axis=1)  # (steps,)
    first = int(gap.gt(1e-9).idxmax()) + 1 if gap.gt(1e-9).any() else None
    return {"methods": methods, "first_differ": first, "mean_gap": float(gap.mean())}


def _spread(xs: list[float]) -> dict:
    mean = sum(xs) / len(xs)
    return {"mean": mean, "std": math.sqrt(sum((x - mean) ** 2 for x in xs) / len(xs)), "min": min(xs), "max": max(xs)}


def summarize(df: pd.DataFrame) -> dict:
    """Per settings: each seed's run summary; per method the spread over seeds (mean, std, min, max) of each
    number; how many (method, seed) runs rose; and the end-of-run difference of MRTPO to the other methods."""
    out = {}
    for label, runs in df.groupby("settings", sort=False):
        seeds = {int(s): run_summary(r) for s, r in runs.groupby("run_seed")}
        methods = list(next(iter(seeds.values()))["methods"])
        per_method = {
            v: {
                k: _spread([r["methods"][v][k] for r in seeds.values()])
                for k in ("first", "last", "start", "end", "rise")
            }
            for v in methods
        }
        rises = [r["methods"][v]["rise"] for r in seeds.values() for v in methods]
        vs = {
            f"mrtpo - {v}": _spread([r["methods"]["mrtpo"]["end"] - r["methods"][v]["end"] for r in seeds.values()])
            for v in methods
            if v != "mrtpo" and "mrtpo" in methods
        }
        times = runs[[c for c in runs.columns if c.startswith("time/")]].sum(axis=1)
        out[label] = {
            "seeds": seeds,
            "methods": per_method,
            "rose": sum(x > 0 for x in rises),
            "runs": len(rises),
            "smallest_rise": min(rises),
            "end_difference": vs,
            "s_per_step": float(times.mean()),
        }
    return out


def markdown(summary: dict, settings: dict[str, LiveSettings], header: str) -> str:
    lines = [
        header,
        "",
        f"Per method and seed: the mean reward of the first step (the starting policy's samples, "
        f"before any update) and of the last; start and end = means over the first and the last {EDGE} steps "
        f"(one step's reward is prompts x G samples and swings by about +-0.2); rise = end - start. 'Differ "
        "from' = first step at which the methods' rewards are not all equal (shared samples make the first step "
        "equal by design); gap = mean over steps of the highest minus the lowest method.",
        "",
    ]
    if len(summary) > 1:
        lines += [
            "| settings | runs that rose | mean rise | smallest rise | end: highest - lowest method (mean over "
            "seeds) | differ from step (per seed) | gap | s per method-step |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for label, s in summary.items():
            ends = [m["end"]["mean"] for m in s["methods"].values()]
            rise = sum(m["rise"]["mean"] for m in s["methods"].values()) / len(s["methods"])
            gaps = sum(r["mean_gap"] for r in s["seeds"].values()) / len(s["seeds"])
            differ = ", ".join(str(r["first_differ"]) for r in s["seeds"].values())
            lines.append(
                f"| {label} | {s['rose']}/{s['runs']} | {rise:+.3f} | {s['smallest_rise']:+.3f} | "
                f"{max(ends) - min(ends):.3f} | {differ} | {gaps:.3f} | {s['s_per_step']:.2f} |"
            )
        lines.append("")
    for label, s in summary.items():
        lines += _settings_section(label, s, settings[label])
    return "\n".join(lines) + "\n"


def _settings_section(label: str, s: dict, cfg: LiveSettings) -> list[str]:
    n = cfg.steps
    lines = [
        f"### {label}",
        "",
        f"`{_settings_text(cfg)}`; {s['s_per_step']:.2f} s per method-step (wall, this load).",
        "",
        f"**The mean reward rose in {s['rose']} of {s['runs']} runs (method x seed); smallest rise "
        f"{s['smallest_rise']:+.3f}.**",
        "",
        f"| method | seed | step 1 | step {n} | start (steps 1-{EDGE}) | end (steps {n - EDGE + 1}-{n}) | rise |",
        "|---|---|---|---|---|---|---|",
    ]
    for v in s["methods"]:
        for seed, r in s["seeds"].items():
            m = r["methods"][v]
            lines.append(
                f"| {v} | {seed} | {m['first']:.3f} | {m['last']:.3f} | {m['start']:.3f} | {m['end']:.3f} | "
                f"{m['rise']:+.3f} |"
            )
    lines += [
        "",
        "Spread over seeds (mean ± std, min..max):",
        "",
        f"| method | step 1 | step {n} | start | end | rise |",
        "|---|---|---|---|---|---|",
    ]
    for v, st in s["methods"].items():
        cells = [
            f"{st[k]['mean']:.3f} ± {st[k]['std']:.3f} ({st[k]['min']:.3f}..{st[k]['max']:.3f})"
            for k in ("first", "last", "start", "end", "rise")
        ]
        lines.append(f"| {v} | " + " | ".join(cells) + " |")
    lines += [""] + [
        f"- End of run, {k}: {d['mean']:+.3f} (per-seed range {d['min']:+.3f}..{d['max']:+.3f})"
        for k, d in s["end_difference"].items()
    ]
    lines += [
        f"- Seed {k}: methods differ from step {r['first_differ']}; gap {r['mean_gap']:.3f}"
        for k, r in s["seeds"].items()
    ]
    return lines + [""]


def _settings_text(s: LiveSettings) -> str:
    keep = ("task", "steps", "group_size", "prompts_per_step", "max_new_tokens", "lr", "temperature", "shared_samples")
    return ", ".join(f"{k}={getattr(s, k)}" for k in keep) + f", methods={','.join(s.methods)}"


def _parse_set(items: list[str]) -> dict:
    fields = {f.name: f for f in dataclasses.fields(LiveSettings)}
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        if key not in fields:
            raise SystemExit(f"--set {item!r}: no LiveSettings field {key!r}; fields: {', '.join(fields)}")
        default = getattr(LIVE, key)
        out[key] = (
            tuple(value.split(","))
            if isinstance(default, tuple)
            else value.lower() in ("1", "true", "yes")
            if isinstance(default, bool)
            else type(default)(value)
        )
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--search", action="store_true", help="run the candidate settings of SEARCH")
    ap.add_argument("--only", action="append", default=[], help="with --search: a SEARCH label to run (repeatable)")
    ap.add_argument("--seeds", type=int, default=None, help="seeds 0..n-1 (default 3; 1 with --search)")
    ap.add_argument("--set", action="append", default=[], help="change a LiveSettings field, e.g. lr=3e-4")
    ap.add_argument("--work", default=str(Path(tempfile.gettempdir()) / "mrtpo-live-defaults"))
    ap.add_argument("--out", default=None, help="results stem (default benchmarks/results/live_defaults[_search])")
    args = ap.parse_args(argv)
    from mrtpo_viz.policy import load_policy

    torch.set_num_threads(1)
    base = dataclasses.replace(LIVE, **_parse_set(args.set))
    if args.search:
        unknown = set(args.only) - set(SEARCH)
        if unknown:
            raise SystemExit(f"--only {sorted(unknown)}: not in SEARCH ({', '.join(SEARCH)})")
        settings = {k: dataclasses.replace(base, **v) for k, v in SEARCH.items() if not args.only or k in args.only}
    else:
        settings = {"defaults" + (" (" + ", ".join(args.set) + ")" if args.set else ""): base}
    seeds = range(args.seeds if args.seeds is not None else (1 if args.search else 3))
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256((BUNDLED_POLICY_DIR / "model.safetensors").read_bytes()).hexdigest()[:16]
    policy = load_policy(str(BUNDLED_POLICY_DIR), device="cpu", dtype="float32")
    start, cpu0 = time.perf_counter(), time.process_time()
    frames = [cached_run(label, s, seed, policy, work, digest) for label, s in settings.items() for seed in seeds]
    df = pd.concat(frames, ignore_index=True)
    summary = summarize(df)
    stem = Path(args.out) if args.out else RESULTS / ("live_defaults_search" if args.search else "live_defaults")
    cmd = "python benchmarks/live_defaults.py " + " ".join(argv if argv is not None else sys.argv[1:])
    header = (
        f"# Live training defaults: does the mean reward rise, and do the methods part?\n\n"
        f"Produced by `{cmd.strip()}` on {machine()}, load average {load_average()} at the end; "
        f"{time.perf_counter() - start:.0f} s wall, {time.process_time() - cpu0:.0f} s CPU (runs found in "
        f"--work are reused). Policy: bundled `tiny-mrtpo` (model.safetensors sha256 {digest}...). "
        f"Seeds {list(seeds)}."
    )
    df.to_csv(stem.with_suffix(".csv"), index=False)
    stem.with_suffix(".md").write_text(markdown(summary, settings, header))
    stem.with_suffix(".json").write_text(
        json.dumps(
            {
                "policy_sha256": digest,
                "edge_steps": EDGE,
                "settings": {k: dataclasses.asdict(v) for k, v in settings.items()},
                "results": summary,
            },
            indent=1,
            default=_json_default,
        )
    )
    print(stem.with_suffix(".md").read_text())


def _json_default(x):
    if isinstance(x, float) and math.isnan(x):
        return None
    return str(x)


if __name__ == "__main__":
    main()
