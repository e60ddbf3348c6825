"""The command line's per-token table of one replay."""

from __future__ import annotations

from ..relevance.results import Relevance


def legend(rel: Relevance) -> str:
    """What the table's numbers are: the metric, and with a control, which number is raw."""
    if rel.control == "none":
        return f"relevance per token and verifier: {rel.metric} (with vs without the verifier's information)"
    return (
        f"relevance per token and verifier: {rel.metric} minus the {rel.control!r} control, "
        f"in brackets the raw {rel.metric} (with vs without the verifier's information)"
    )


def format_table(rel: Relevance, max_rows: int = 400) -> str:
    """A compact per-token table under its legend: position, token, one score column per verifier (raw in brackets
    if controlled)."""
    names = [n.split(".")[-1][:12] for n in rel.verifiers]
    lines = [legend(rel), f"{'t':>4}  {'token':<16}" + "".join(f"{n:>14}" for n in names)]
    for t in range(min(rel.T, max_rows)):
        cells = "".join(
            f"{float(rel.scores[k, t]):>14.3f}"
            if rel.control == "none"
            else f"{float(rel.scores[k, t]):>7.3f}({float(rel.raw_scores[k, t]):.3f})"
            for k in range(rel.K)
        )
        lines.append(f"{t:>4}  {repr(rel.tokens[t])[:16]:<16}{cells}")
    if rel.T > max_rows:
        lines.append(f"... {rel.T - max_rows} more tokens")
    for name in rel.verifiers:
        if name in rel.rewards:
            lines.append(f"{name}: reward {rel.rewards[name]:.2f} ({rel.reasons.get(name, '')})")
    return "\n".join(lines)
