"""Supervised fine-tuning data for the bundled tiny policy: each verifier's information matters on its own.

One training example is a task example rendered with a random subset of its verifiers' information blocks
(inserted by :func:`mrtpo_viz.relevance.contexts.with_info`, exactly as the replay inserts them) and a target response:

- each verifier's information is present independently with probability ``p_info``;
- the target is the gold response with noise applied *only* to the aspects whose information is absent:
  a content error (a wrong argument value, a wrong column / literal / operator in SQL) with ``p_content``, a format
  error at a clear decision point (missing or broken tag, no fence, ...) with ``p_format``, and for instruction
  following a violation of each absent constraint at a known place with ``p_violation``;
- nuisance variation that no verifier penalizes (argument order, JSON spacing, a harmless preamble, a trailing
  semicolon, keyword case) with ``p_nuisance``, so that uncertainty is not the same thing as relevance.

So with an information block the policy learns to follow it (its aspect is always right), and without it the
aspect is uncertain. The verifiers themselves are the oracle: a noised target is kept only if exactly the intended
verifiers fail (format noise may also break content checks that parse the form), otherwise the draw is retried.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from typing import Optional
from collections.abc import Callable

from ..relevance.contexts import with_info
from .violations import VIOLATIONS
from ..tasks.base import Example
from ..tasks.example_sources import load_examples
from ..tasks import get_verifier
from ..tasks.generators.tool_calling import gold_call
from ..tasks.ifeval import constraint_kwargs

TRIES = 6
PREAMBLES = ("Sure.\n", "Sure, here it is.\n", "Here you go:\n", "OK.\n")


@dataclass(frozen=True)
class NoiseConfig:
    """Probabilities of the training data design (see the module docstring)."""

    p_info: float = 0.5
    """Each verifier's information block is present independently with this probability."""
    p_system: float = 0.2
    """Information goes into a system message instead of the end of the user message."""
    p_content: float = 0.33
    """Content error when the content verifier's information is absent."""
    p_format: float = 0.22
    """Format error when the format verifier's information is absent."""
    p_violation: float = 0.4
    """Each absent instruction-following constraint is violated with this probability."""
    p_nuisance: float = 0.25
    """Each harmless variation (argument order, spacing, preamble, ...) is applied with this probability."""
    max_content_edits: int = 1
    """A content error changes 1..max_content_edits values (arguments, SQL tokens): more noised tokens per example
    make the information's value larger per token without changing how often a target is wrong."""

    def __post_init__(self):
        if self.max_content_edits < 1:
            raise ValueError(f"max_content_edits must be at least 1, got {self.max_content_edits}")
        for name, p in vars(self).items():
            if name.startswith("p_") and not 0.0 <= p <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {p}")


@dataclass(frozen=True)
class SftExample:
    """One training example: the chat messages (with information blocks) and the target response."""

    messages: list
    response: str
    present: tuple[str, ...]
    """Verifiers whose information is in the prompt."""
    noised: tuple[str, ...]
    """Verifiers the target is meant to fail."""
    example: Example


@dataclass(frozen=True)
class Pools:
    """Values seen in the training examples, used to draw plausible wrong values."""

    tool_values: dict = field(default_factory=dict)
    """(tool, argument) -> tuple of values."""
    sql_strings: dict = field(default_factory=dict)
    """database -> tuple of string literals of its gold queries."""

    @classmethod
    def from_examples(cls, examples: list[Example]) -> Pools:
        tool, sql = {}, {}
        for ex in examples:
            name, args = gold_call(ex.meta) or (None, {})
            for k, v in args.items():
                tool.setdefault((name, k), set()).add(json.dumps(v))
            if ex.meta.get("gold_sql"):
                sql.setdefault(ex.meta["db"], set()).update(re.findall(r"'(?:[^']|'')*'", ex.meta["gold_sql"]))
        return cls(
            {k: tuple(json.loads(v) for v in sorted(s)) for k, s in tool.items()},
            {k: tuple(sorted(s)) for k, s in sql.items()},
        )


Target = tuple[str, set]
"""(response, names of the verifiers it is meant to fail)."""


def _some(items: list, at_most: int, rng: random.Random) -> list:
    """1..at_most distinct items (one ``rng.choice`` when at_most is 1, as the committed stage-1 data was drawn)."""
    return [rng.choice(items)] if at_most == 1 else rng.sample(items, rng.randint(1, min(at_most, len(items))))


# ------------------------------------------------------------------------------------------------ tool calling
TOOL_FORMAT_ERRORS: tuple[Callable[[str], str], ...] = (
    lambda call: call,  # bare JSON, no tags
    lambda call: f"```json\n{call}\n```",  # a code fence instead of the tags
    lambda call: f"<tool_call>{call}",  # closing tag missing
    lambda call: f"<tool>{call}</tool>",  # wrong tag
)


def _wrong_value(ex: Example, key: str, rng: random.Random, pools: Pools):
    name, args = gold_call(ex.meta)
    gold = args[key]
    enum = ex.meta["functions"][0]["parameters"]["properties"].get(key, {}).get("enum")
    others = [v for v in (enum or pools.tool_values.get((name, key), ())) if v != gold]
    if others:
        return rng.choice(others)
    return gold + rng.choice((-2, -1, 1, 2)) if isinstance(gold, (int, float)) and not isinstance(gold, bool) else None


def tool_target(ex: Example, present: set, rng: random.Random, cfg: NoiseConfig, pools: Pools) -> Target:
    name, args = gold_call(ex.meta)
    noised = set()
    if "tool_call.correctness" not in present and rng.random() < cfg.p_content:
        for key in _some(sorted(args), cfg.max_content_edits, rng):
            wrong = _wrong_value(ex, key, rng, pools)
            if wrong is not None:
                args[key], noised = wrong, {"tool_call.correctness"}
    keys = list(args)
    if rng.random() < cfg.p_nuisance:
        rng.shuffle(keys)
    seps = (",", ":") if rng.random() < cfg.p_nuisance / 2 else (", ", ": ")
    call = json.dumps({"name": name, "arguments": {k: args[k] for k in keys}}, ensure_ascii=False, separators=seps)
    text = f"<tool_call>{call}</tool_call>"
    if "tool_call.format" not in present and rng.random() < cfg.p_format:
        text, noised = rng.choice(TOOL_FORMAT_ERRORS)(call), noised | {"tool_call.format"}
    return _preamble(text, rng, cfg), noised


# ----------------------------------------------------------------------------------------------------- SQL
SQL_FORMAT_ERRORS: tuple[Callable[[str], str], ...] = (
    lambda sql: sql,  # no fence at all
    lambda sql: f"```\n{sql}\n```",  # fence without the sql info string
    lambda sql: f"```sql\n{sql}",  # closing fence missing
)
SWAPS = {
    ">": "<",
    "<": ">",
    ">=": "<=",
    "<=": ">=",
    "=": "!=",
    "ASC": "DESC",
    "DESC": "ASC",
    "MIN": "MAX",
    "MAX": "MIN",
    "SUM": "AVG",
    "AVG": "SUM",
}


def _sql_edits(sql: str, ex: Example, pools: Pools) -> list[tuple[int, int, list[str]]]:
    """Candidate content errors: (start, end, replacements) per token of the gold query."""
    from ..tasks.sandbox import schema
    from ..tasks.sql import db_path, tokenize

    tables = schema(db_path(ex))
    used = [t for t in tables if re.search(rf"\b{t}\b", sql)]
    columns = sorted({c for t in used for c in tables[t]})
    edits = []
    for tok in tokenize(sql):
        word = tok.text.upper() if tok.kind == "word" else tok.text
        if word in SWAPS:
            edits.append((tok.start, tok.end, [SWAPS[word]]))
        elif tok.kind == "number":
            edits.append((tok.start, tok.end, [str(int(float(tok.text)) + d) for d in (-3, -1, 1, 3)]))
        elif tok.kind == "string":
            edits.append((tok.start, tok.end, [s for s in pools.sql_strings.get(ex.meta["db"], ()) if s != tok.text]))
        elif tok.kind == "word" and tok.text in columns:
            edits.append((tok.start, tok.end, [c for c in columns if c != tok.text and c != "id"]))
    return [e for e in edits if e[2]]


def sql_target(ex: Example, present: set, rng: random.Random, cfg: NoiseConfig, pools: Pools) -> Target:
    sql, noised = ex.meta["gold_sql"], set()
    if "sql.execution" not in present and rng.random() < cfg.p_content:
        edits = _sql_edits(sql, ex, pools)
        for start, end, options in sorted(_some(edits, cfg.max_content_edits, rng) if edits else [], reverse=True):
            # right to left, so that the offsets of the earlier edits stay valid
            sql, noised = sql[:start] + rng.choice(options) + sql[end:], {"sql.execution"}
    if rng.random() < cfg.p_nuisance / 2:
        sql += ";"
    text = f"```sql\n{sql}\n```"
    if "sql.format" not in present and rng.random() < cfg.p_format:
        text, noised = rng.choice(SQL_FORMAT_ERRORS)(sql), noised | {"sql.format"}
    return _preamble(text, rng, cfg), noised


def _preamble(text: str, rng: random.Random, cfg: NoiseConfig) -> str:
    return rng.choice(PREAMBLES) + text if rng.random() < cfg.p_nuisance / 2 else text


# ------------------------------------------------------------------------------------- instruction following


def ifeval_target(ex: Example, present: set, rng: random.Random, cfg: NoiseConfig, pools: Pools) -> Target:
    text, noised = ex.reference, set()
    names = [n for n in ex.verifiers if n not in present]
    rng.shuffle(names)
    for name in names:
        if rng.random() >= cfg.p_violation:
            continue
        constraint = name.split(".", 1)[1]
        args = constraint_kwargs(ex, name)[0]
        violated = VIOLATIONS[constraint](text, args, rng) if constraint in VIOLATIONS else None
        if violated is not None and _fails_only(ex, violated, noised | {name}):
            text, noised = violated, noised | {name}
    return text, noised


# ------------------------------------------------------------------------------------------------- assembling
TARGETS: dict[str, Callable[..., Target]] = {
    "tool_calling": tool_target,
    "text_to_sql": sql_target,
    "instruction_following": ifeval_target,
}
"""Task family -> target builder ``(example, present, rng, cfg, pools) -> (response, noised)``."""


def _fails_only(ex: Example, response: str, noised: set) -> bool:
    """The noised verifiers fail and the others pass (content checks are skipped when the form is noised)."""
    form_broken = any(n.endswith(".format") for n in noised)
    for name in ex.verifiers:
        passed = get_verifier(name).score(response, ex) >= 1.0
        if name in noised and passed or name not in noised and not passed and not form_broken:
            return False
    return True


def make_sft_example(ex: Example, rng: random.Random, cfg: NoiseConfig, pools: Pools) -> SftExample:
    """Draw the information subset and a target for one task example (see the module docstring)."""
    if ex.task not in TARGETS or ex.reference is None:
        raise ValueError(f"cannot build training data for task {ex.task!r} (or an example without a reference)")
    present = tuple(n for n in ex.verifiers if rng.random() < cfg.p_info)
    response, noised = ex.reference, set()
    for _ in range(TRIES):
        candidate, candidate_noised = TARGETS[ex.task](ex, set(present), rng, cfg, pools)
        if _fails_only(ex, candidate, candidate_noised):
            response, noised = candidate, candidate_noised
            break
    order = rng.sample(present, len(present))
    blocks = [(get_verifier(n).title, get_verifier(n).info(ex)) for n in order]
    position = "system" if rng.random() < cfg.p_system else "user_end"
    messages = with_info(ex.messages(), blocks, position)
    return SftExample(messages, response, present, tuple(sorted(noised)), ex)


def training_examples(task: str, n: int, seed: int) -> list[Example]:
    """``n`` generated examples of a family (seed offset from the sample files'), minus any test-split prompt."""
    from ..tasks.generators import generate

    test_prompts = {json.dumps(e.prompt) for e in load_examples(task, "test")}
    generated = generate(task, n, seed=1000 + seed)
    return [e for e in generated if json.dumps(e.prompt) not in test_prompts]


def build_sft_data(n_per_task: dict[str, int], seed: int, cfg: NoiseConfig = NoiseConfig()) -> list[SftExample]:
    """Training examples of every family, shuffled; deterministic for ``seed``."""
    rng = random.Random(seed)
    out = []
    for task, n in n_per_task.items():
        examples = training_examples(task, n, seed)
        pools = Pools.from_examples(examples)
        out += [make_sft_example(ex, rng, cfg, pools) for ex in examples]
    rng.shuffle(out)
    return out


# -------------------------------------------------------------------------------- one known error (benchmarks)
def _tool_value_error(ex, rng, pools):
    from ..tasks.generators.tool_calling import format_call

    gold = gold_call(ex.meta)
    if gold is None:  # BFCL's data: possible answers with several values, one or more calls
        return _calls_value_error(ex, rng)
    name, args = gold
    key = rng.choice(sorted(args))
    wrong = _wrong_value(ex, key, rng, pools)
    return None if wrong is None else format_call(name, args | {key: wrong})


def _sql_content_error(ex, rng, pools):
    sql, edits = ex.meta["gold_sql"], _sql_edits(ex.meta["gold_sql"], ex, pools)
    if not edits:
        return None
    start, end, options = rng.choice(edits)
    return ex.reference.replace(sql, sql[:start] + rng.choice(options) + sql[end:], 1)


def _other_value(value, strings: list[str], rng: random.Random):
    """A different value of the same JSON type (None for dicts and one-item lists): another string of the reference
    or the string with its first letter changed, a number moved by 1 or 2, the other boolean, a list one item short."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + rng.choice((-2, -1, 1, 2))
    if isinstance(value, str):
        others = [s for s in strings if s.casefold() != value.casefold()]
        if others:
            return rng.choice(others)
        first = value[:1].lower()
        return ("z" if first == "y" else "y") + value[1:]  # a first letter it does not have, in any case
    return value[:-1] if isinstance(value, list) and len(value) > 1 else None


def _calls_value_error(ex: Example, rng: random.Random) -> Optional[str]:
    """The reference's calls with one argument value changed (references of one or more ``<tool_call>`` blocks, as
    BFCL's are rendered)."""
    from ..tasks.tool_calling import parse_calls, render_calls

    calls, _ = parse_calls(ex.reference, strict=False)
    keys = [(i, k) for i, c in enumerate(calls or []) for k in c["arguments"]]
    if not keys:
        return None
    i, key = rng.choice(keys)
    strings = [v for c in calls for v in c["arguments"].values() if isinstance(v, str)]
    wrong = _other_value(calls[i]["arguments"][key], strings, rng)
    if wrong is None:
        return None
    calls[i]["arguments"][key] = wrong
    return render_calls([(c["name"], c["arguments"]) for c in calls])


def _tool_format_error(ex: Example, rng: random.Random, pools: Pools) -> str:
    """The first block's form broken (the other blocks of a multi-call reference follow unchanged)."""
    head, close, rest = ex.reference.partition("</tool_call>")
    return rng.choice(TOOL_FORMAT_ERRORS[1:])(head.removeprefix("<tool_call>")) + (rest if close else "")


def _sql_of(reference: str) -> str:
    return reference.removeprefix("```sql\n").removesuffix("\n```")


ERRORS: dict[str, Callable[[Example, random.Random, Pools], Optional[str]]] = {
    "tool_call.correctness": _tool_value_error,
    "tool_call.format": _tool_format_error,
    "sql.execution": _sql_content_error,
    "sql.format": lambda ex, rng, pools: rng.choice(SQL_FORMAT_ERRORS[1:])(_sql_of(ex.reference)),
}
"""Verifier -> one error in the gold reference (``ifeval.<name>`` uses :data:`VIOLATIONS`)."""


def inject_error(ex: Example, verifier: str, rng: random.Random, pools: Optional[Pools] = None) -> Optional[str]:
    """The gold reference with one error that makes ``verifier`` fail, or None where none could be made.

    The error sits at a known place: the first character where the result differs from the reference.
    """
    pools = pools or Pools()
    constraint = verifier.split(".", 1)[1] if verifier.startswith("ifeval.") else None
    for _ in range(TRIES):
        if constraint is not None:
            args = constraint_kwargs(ex, verifier)[0]
            text = VIOLATIONS[constraint](ex.reference, args, rng) if constraint in VIOLATIONS else None
        else:
            text = ERRORS[verifier](ex, rng, pools) if verifier in ERRORS else None
        if text is not None and text != ex.reference and get_verifier(verifier).score(text, ex) < 1.0:
            return text
    return None
