"""Per-token context sensitivity: our replay against Inseq's ``attribute-context`` (PECoRe), same model and inputs.

Both get a user prompt, a given response (teacher-forced) and K verifier-information blocks, and return one score
per response token per verifier:

- ``inseq``: ``inseq.commands.attribute_context.attribute_context_with_model`` with the context-sensitive token
  identification (CTI) step only: KL metric, and a selection threshold so high that no token goes on to the
  attribution (CCI) step. One context per call, so K calls. Its CTI runs the model once per response token with and
  without the context (about 2T forwards of the growing sequence, no KV cache).
- ``replay_kl``, ``replay_js``: ``mrtpo_viz.replay`` (``relevance.engine.replay``) with ``metric="kl"`` / ``"js"``: the
  shared prompt prefix once (KV cache), the K + 1 suffixes in one batched forward, the metric chunked over positions;
  it also computes the per-token columns (log-probs, entropy, top-5) that the app shows.

The information enters both in the same place: appended to the user message (our ``user_end`` position), through
Inseq's ``input_template`` / ``contextless_input_current_text``, with a newline as the decoder input/output
separator (the chat template's assistant header ends with one). Model loading is not timed (both share the
loaded model object); each timing covers everything else that a call does.

Agreement: Inseq's CTI score is ``KL(P_without || P_with)`` (its "original" forward is the contextless one, the
context goes in as the contrast); our ``kl`` is ``KL(P_with || P_without)``. The check compares Inseq's scores
with ours computed in Inseq's direction from the same replay logits, and also reports the other direction.

    python benchmarks/vs_inseq.py                      # tiny policy + 0.5B shape, writes benchmarks/results/
    python benchmarks/vs_inseq.py --quick --models tiny
    python benchmarks/vs_inseq.py --checkpoint smollm2-135m-instruct --lengths 128   # a real model (float32)
"""

from __future__ import annotations

import argparse
import logging
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402
from _common import RESULTS, corpus, measure, median, response_ids, set_threads  # noqa: E402

SEPARATOR = "\n"
INSEQ_BUDGET_S = 180.0
"""A configuration whose estimated Inseq time passes this is not run (its estimate is reported instead)."""
REPEATS_BUDGET_S = 60.0
"""Inseq configurations estimated to take longer than this in all repeats run once."""


@dataclass(frozen=True)
class Case:
    """One benchmark input: a user prompt, the response ids, and K (verifier name, title, information)."""

    prompt: str
    response_ids: list[int]
    verifiers: list[tuple[str, str, str]]


def inseq_available() -> bool:
    try:
        import inseq  # noqa: F401
    except ImportError:
        return False
    return True


# --- inputs ---------------------------------------------------------------------------------------------------------


def sample_infos(n: int) -> list[tuple[str, str, str]]:
    """``n`` real verifiers (distinct names) with the information they give for an example of their task."""
    from mrtpo_viz import tasks as _registry  # noqa: F401  (registers the verifiers)
    from mrtpo_viz.names import TASKS
    from mrtpo_viz.tasks.example_sources import load_examples
    from mrtpo_viz.tasks import get_verifier

    out, seen = [], set()
    for task in TASKS:
        for ex in load_examples(task, split="test")[:20]:
            for name in ex.verifiers:
                if name not in seen and len(out) < n:
                    v = get_verifier(name)
                    out.append((name, v.title, v.info(ex)))
                    seen.add(name)
    if len(out) < n:
        raise ValueError(f"the sample tasks have only {len(out)} distinct verifiers; {n} were asked")
    return out


def make_case(tokenizer, T: int, K: int) -> Case:
    from mrtpo_viz.tasks.example_sources import load_examples

    prompt = load_examples("tool_calling", split="test")[0].messages()[-1]["content"]
    return Case(prompt, response_ids(tokenizer, corpus(), T, skip=3000), sample_infos(K))


# --- the two tools ----------------------------------------------------------------------------------------------------


def chat_frame(policy) -> tuple[str, str]:
    """The chat template around one user message, without the final separator: (before, after)."""
    mark = "\x00MRTPO\x00"
    text = policy.render([{"role": "user", "content": mark}])
    before, after = text.split(mark)
    return before, after.removesuffix(SEPARATOR)


def inseq_model(policy):
    import inseq

    logging.getLogger("inseq").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore")
    return inseq.load_model(policy.model, "dummy", tokenizer=policy.tokenizer)


def inseq_scores(model, policy, case: Case, k: int) -> tuple[list[float], list[str]]:
    """Inseq CTI scores (KL, one per response token) for verifier ``k``'s information, and Inseq's tokens."""
    from mrtpo_viz.relevance.contexts import render_info
    from inseq.commands.attribute_context.attribute_context import attribute_context_with_model
    from inseq.commands.attribute_context.attribute_context_args import AttributeContextArgs

    before, after = chat_frame(policy)
    _, title, info = case.verifiers[k]
    args = AttributeContextArgs(
        model_name_or_path=policy.name,
        attribution_method="dummy",
        input_current_text=case.prompt,
        input_context_text=render_info(title, info),
        input_template=before + "{current}{context}" + after,
        contextless_input_current_text=before + "{current}" + after,
        output_current_text=policy.tokenizer.decode(case.response_ids),
        output_template="{current}",
        decoder_input_output_separator=SEPARATOR,
        context_sensitivity_metric="kl_divergence",
        context_sensitivity_std_threshold=1e9,  # no token passes: CTI only, the attribution step is skipped
        handle_output_context_strategy="pre",
        show_viz=False,
        add_output_info=False,
    )
    out = attribute_context_with_model(args, model)
    return list(out.cti_scores), list(out.output_current_tokens)


def run_inseq(model, policy, case: Case) -> list[list[float]]:
    return [inseq_scores(model, policy, case, k)[0] for k in range(len(case.verifiers))]


def run_replay(policy, case: Case, metric: str):
    from mrtpo_viz.relevance.engine import replay
    from mrtpo_viz.tasks import get_verifier

    vs = [get_verifier(name) for name, _, _ in case.verifiers]
    return replay(policy, case.prompt, case.response_ids, vs, infos={n: i for n, _, i in case.verifiers}, metric=metric)


@torch.no_grad()
def our_kl_both_ways(policy, case: Case) -> tuple[torch.Tensor, torch.Tensor]:
    """(KL(without || with), KL(with || without)), each (K, T), from the replay's batched logits."""
    from mrtpo_viz.divergence import chunked_metric
    from mrtpo_viz.relevance.engine import plan_replay
    from mrtpo_viz.relevance.branches import branch_logits
    from mrtpo_viz.tasks import get_verifier

    vs = [get_verifier(name) for name, _, _ in case.verifiers]
    plan = plan_replay(policy, case.prompt, case.response_ids, vs, infos={n: i for n, _, i in case.verifiers})
    logits = branch_logits(policy.model, plan.branches, policy.pad_id, policy.device)  # (K + 1, T, V)
    without, with_k = logits[:1], logits[1:]
    return chunked_metric(without, with_k, "kl"), chunked_metric(with_k, without, "kl")


def agreement(model, policy, case: Case) -> dict:
    """Max abs difference between Inseq's CTI scores and our KL in both directions, verifier 0."""
    ins, tokens = inseq_scores(model, policy, case, 0)
    same_dir, other_dir = (x[0] for x in our_kl_both_ways(policy, case))  # (T,) each
    if len(ins) != len(same_dir):
        return {"agree_tokens": f"inseq {len(ins)} vs ours {len(same_dir)}"}
    ins_t = torch.tensor(ins, dtype=torch.float32)
    return {
        "agree_tokens": len(ins),
        "max_abs_diff": float((ins_t - same_dir).abs().max()),
        "max_abs_diff_other_direction": float((ins_t - other_dir).abs().max()),
        "max_inseq_kl": float(ins_t.max()),
    }


# --- benchmark ------------------------------------------------------------------------------------------------------


def timed(fn, *args, repeats: int = 1) -> tuple[float, float]:
    """Median wall and median CPU seconds of ``repeats`` calls (RSS sampled only every 50 ms: timing only)."""
    runs = [measure(fn, *args, interval=0.05) for _ in range(repeats)]
    return median([m.seconds for m in runs]), median([m.cpu_seconds for m in runs])


def time_inseq(model, policy, case: Case, repeats: int, estimate) -> tuple[float, float, str]:
    """(wall, CPU) seconds of the K Inseq calls and how they were obtained. ``estimate``: expected (wall, CPU)."""
    if estimate is not None and estimate[0] > INSEQ_BUDGET_S:
        return estimate[0], estimate[1], "estimated, not run (over 3 min)"
    n = repeats if (estimate or (0, 0))[0] * repeats <= REPEATS_BUDGET_S else 1
    return *timed(run_inseq, model, policy, case, repeats=n), f"measured, {n} run{'s' * (n > 1)}"


def bench_policy(label: str, policy, Ts, Ks, repeats: int, with_inseq: bool) -> list[dict]:
    """One row per (T, K): replay kl / js seconds, Inseq seconds (measured, or K x its one-verifier time at this T
    when that passes the budget; a new T is first estimated linearly from the last, a lower bound).
    Speed-ups are ratios of CPU time (the shared machine's load moves wall time more)."""
    model = inseq_model(policy) if with_inseq else None
    per_call, last_T = None, None  # Inseq (wall, CPU) seconds of one call (one verifier) at last_T
    run_replay(policy, make_case(policy.tokenizer, 16, 1), "js")  # warm-up
    rows = []
    for T in Ts:
        for K in sorted(Ks):
            case = make_case(policy.tokenizer, T, K)
            row = {
                "model": label,
                "dtype": str(policy.dtype).removeprefix("torch."),
                "threads": torch.get_num_threads(),
                "response_tokens": len(case.response_ids),
                "K": K,
            }
            for metric in ("kl", "js"):
                wall, cpu = timed(run_replay, policy, case, metric, repeats=repeats)
                row.update({f"replay_{metric}_s": round(wall, 3), f"replay_{metric}_cpu_s": round(cpu, 3)})
            if model is not None:
                scale = K * (1.0 if last_T == T else T / (last_T or T))
                estimate = None if per_call is None else (per_call[0] * scale, per_call[1] * scale)
                wall, cpu, how = time_inseq(model, policy, case, repeats, estimate)
                if how.startswith("measured"):
                    per_call, last_T = (wall / K, cpu / K), T
                row.update(
                    inseq_s=round(wall, 2),
                    inseq_cpu_s=round(cpu, 2),
                    inseq_how=how,
                    inseq_per_verifier_cpu_s=round(cpu / K, 2),
                    speedup_kl=round(cpu / row["replay_kl_cpu_s"], 1),
                    speedup_js=round(cpu / row["replay_js_cpu_s"], 1),
                )
            rows.append(row)
            print(row, flush=True)
    return rows


def bench_model(name: str, Ts, Ks, repeats: int) -> tuple[list[dict], dict]:
    """Speed rows and the agreement check (32 tokens, first verifier) for one model: ``tiny``, ``qwen05b``, or a
    checkpoint (a folder or a known model's name)."""
    from mrtpo_viz.policy import load_policy

    with _folder(name) as (folder, label):
        policy = load_policy(str(folder), device="cpu", dtype="bfloat16" if name == "qwen05b" else "float32")
        rows = bench_policy(label, policy, Ts, Ks, repeats, inseq_available())
        agree = {}
        if inseq_available():
            case = make_case(policy.tokenizer, 32, 1)
            agree = {
                "model": label,
                "dtype": str(policy.dtype).removeprefix("torch."),
                **agreement(inseq_model(policy), policy, case),
            }
            print(agree, flush=True)
    return rows, agree


def run(quick: bool = True, models: tuple[str, ...] = ("tiny",), repeats: int = 3) -> list[dict]:
    """Speed rows. Quick: 32 and 128 tokens, K = 1, one run each."""
    Ts, Ks = ((32, 128), (1,)) if quick else ((32, 128, 512), (1, 3, 6))
    return [r for name in models for r in bench_model(name, Ts, Ks, 1 if quick else repeats)[0]]


def _folder(name: str):
    """(what load_policy loads, label) for a model name of ``--models``."""
    import contextlib

    if name == "tiny":
        return _common.tiny_policy_folder()
    if name == "qwen05b":
        return _common.qwen05b_labelled()
    return contextlib.nullcontext((name, _common.model_label(name)))


COLUMNS = [
    "model",
    "dtype",
    "response_tokens",
    "K",
    "replay_kl_s",
    "replay_kl_cpu_s",
    "replay_js_s",
    "replay_js_cpu_s",
    "inseq_s",
    "inseq_cpu_s",
    "inseq_how",
    "inseq_per_verifier_cpu_s",
    "speedup_kl",
    "speedup_js",
]


def notes(agree: list[dict], args) -> list[str]:
    lines = [
        f"`{_common.command('vs_inseq.py', sys.argv[1:])}`; {_common.machine()}; "
        f"load average at the end {_common.load_average()} (the 2 cores were shared with other work, so "
        "wall times are noisy).",
        "",
        "Seconds to per-token scores for one response and K verifiers (median of the runs; model loading not "
        "timed); `_s` is wall time, `_cpu_s` the CPU time of the process (one torch thread, so about the "
        "compute; it moves less than wall time when the shared cores are busy). `replay_*`: one `replay()` "
        "call for all K (prefix once, K + 1 suffixes batched, metric and per-token columns included). "
        "`inseq`: K calls of `attribute_context_with_model`, CTI only (KL), one context per call. `speedup` = "
        "Inseq CPU time / replay CPU time (the same ratio per verifier). Rows marked *estimated* were not run "
        "because they would take over 3 minutes: K x the measured one-verifier time at the same length, or "
        "for a new length the last measured one scaled linearly (a lower bound: Inseq's cost grows faster "
        "than linearly with length, since it recomputes the whole prefix for every token).",
        "",
    ]
    if agree:
        lines += [
            "Agreement on the same input (32-token response, first verifier): Inseq's CTI score is "
            "KL(P_without || P_with); ours in that direction from the replay's logits:",
            "",
            _common.markdown_table(
                agree,
                ["model", "dtype", "agree_tokens", "max_abs_diff", "max_abs_diff_other_direction", "max_inseq_kl"],
            ),
            "",
            "`max_abs_diff_other_direction` compares with our `kl` metric as `replay` computes it, "
            "KL(P_with || P_without): the two directions are different numbers, not an error.",
            "",
        ]
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="tiny,qwen05b", help="comma-separated: tiny, qwen05b, or checkpoints")
    ap.add_argument(
        "--checkpoint",
        default=None,
        help="a real checkpoint (folder or known name, e.g. smollm2-135m-instruct) instead of --models",
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3, help="runs per configuration (the 0.5B shape: 1)")
    ap.add_argument("--quick", action="store_true", help="32 and 128 tokens, K = 1, one run")
    ap.add_argument("--lengths", default=None, help="response tokens, comma-separated (default 32,128,512)")
    ap.add_argument("--verifiers", default=None, help="K values, comma-separated (default 1,3,6)")
    ap.add_argument("--out", default=str(RESULTS / "vs_inseq"))
    args = ap.parse_args(argv)
    set_threads(args.threads)
    if not inseq_available():
        print("inseq is not installed (pip install -r benchmarks/requirements.txt): timing the replay only")
    Ts, Ks = ((32, 128), (1,)) if args.quick else ((32, 128, 512), (1, 3, 6))
    Ts = tuple(int(x) for x in args.lengths.split(",")) if args.lengths else Ts
    Ks = tuple(int(x) for x in args.verifiers.split(",")) if args.verifiers else Ks
    rows, agree = [], []
    for name in [args.checkpoint] if args.checkpoint else args.models.split(","):
        r, a = bench_model(name, Ts, Ks, 1 if args.quick or name == "qwen05b" else args.repeats)
        rows += r
        agree += [a] if a else []
    _, md = _common.write_results(
        rows, Path(args.out), "Context sensitivity per token: replay vs Inseq", notes(agree, args), COLUMNS
    )
    print(md.read_text())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
