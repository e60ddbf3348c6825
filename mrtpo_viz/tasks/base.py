"""Examples, the Verifier contract and the registry of verifiers.

An :class:`Example` is one prompt of a task family with what its verifiers need (``meta``) and, for the sample data,
a gold reference response. A verifier scores one reward of a response (``check`` -> score in [0, 1] and a short
reason), says what it checks (``info``: its *verifier information*, the text the replay inserts into the prompt) and,
where it can, which character spans of the response it reads to decide (``relevant_spans``: the ground truth of the
localization benchmark) and which spans decide its verdict (``decision_spans``: the per-token weights of the credit
study's oracle; by default the relevant spans). Spans are half-open character intervals ``[start, end)``; the
end-of-sequence token occupies the virtual character ``[len(response), len(response) + 1)`` (:func:`eos_span`), so a
span that reaches past the text's end holds it.
"""

from __future__ import annotations

import inspect
import json
import math
from dataclasses import dataclass, field
from typing import Any, Optional, Union
from collections.abc import Callable

from ..names import VERIFIER_FAMILY

Messages = list[dict[str, str]]
Prompt = Union[str, Messages]
Span = tuple[int, int]
"""A half-open character interval ``[start, end)`` of a response; ``[len(response), len(response) + 1)`` is the
end-of-sequence token (:func:`eos_span`)."""
Info = Union[str, Callable[["Example"], str]]
"""Verifier information: a fixed text, or a function of the example."""
TrlReward = Callable[..., list]
"""A TRL reward function ``fn(prompts, completions, completion_ids, **columns) -> list[float | None]``."""


def eos_span(response: str) -> Span:
    """The span of the end-of-sequence token that ends ``response``: the virtual character just past the text."""
    return (len(response), len(response) + 1)


@dataclass(frozen=True)
class Example:
    """One prompt of a task family."""

    task: str
    """Task family name, one of :data:`TASKS` (or a custom name)."""
    prompt: Prompt
    """A user message string, or a list of chat messages ``{"role", "content"}``."""
    meta: dict[str, Any] = field(default_factory=dict)
    """What the verifiers need: gold call, gold SQL and database, constraint arguments."""
    id: str = ""
    """Stable identifier, e.g. ``tool_calling-test-0007``."""
    reference: str | None = None
    """A gold reference response that scores 1 on every verifier of the example."""
    verifiers: tuple[str, ...] = ()
    """Names of the verifiers that apply to this example (dotted, e.g. ``tool_call.format``)."""

    def messages(self) -> Messages:
        """The prompt as chat messages (a plain string becomes one user message)."""
        if isinstance(self.prompt, str):
            return [{"role": "user", "content": self.prompt}]
        return [dict(m) for m in self.prompt]

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "id": self.id,
            "prompt": self.prompt,
            "meta": self.meta,
            "reference": self.reference,
            "verifiers": list(self.verifiers),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Example:
        if not isinstance(d, dict) or "prompt" not in d or "task" not in d:
            raise ValueError("an example needs at least the fields 'task' and 'prompt'")
        return cls(
            task=str(d["task"]),
            prompt=d["prompt"],
            meta=dict(d.get("meta") or {}),
            id=str(d.get("id", "")),
            reference=d.get("reference"),
            verifiers=tuple(d.get("verifiers") or ()),
        )


@dataclass(frozen=True)
class Verdict:
    """A verifier's result for one response."""

    score: float
    """Reward in [0, 1]."""
    reason: str
    """One short readable sentence that says why."""


ARGUMENT_KINDS = ("text", "integer", "number", "boolean", "json", "list", "choice")
"""How the app asks for an argument's value (a text box, a number, a JSON box, a dropdown of ``choices``...)."""


class MissingArguments(ValueError):
    """The example lacks an argument a verifier needs (a free prompt, say): the verifier needs input before it can
    give information or a score; nothing is replayed against a placeholder."""


@dataclass(frozen=True)
class Argument:
    """One input a verifier reads from the example (a constraint's kwarg, the gold call and tool schema, the gold
    SQL and database): what the app shows as a field for a free prompt."""

    name: str
    """Key of the value (in ``example.meta`` unless the verifier's ``args_fn`` says otherwise)."""
    title: str
    """Label of the field."""
    kind: str = "text"
    """One of :data:`ARGUMENT_KINDS`."""
    description: str = ""
    """What the value means, with an example."""
    choices: tuple[str, ...] = ()
    """The allowed values of a ``choice`` argument."""
    required: bool = True
    """Whether the verifier cannot work without it."""

    def __post_init__(self):
        if self.kind not in ARGUMENT_KINDS:
            raise ValueError(f"unknown argument kind {self.kind!r}; choose one of {list(ARGUMENT_KINDS)}")


def _meta_args(verifier: Verifier, example: Example) -> dict[str, Any]:
    """The default ``args_fn``: each argument is a key of ``example.meta``."""
    return {a.name: example.meta[a.name] for a in verifier.arguments if a.name in example.meta}


def _with_meta_args(verifier: Verifier, example: Example, values: dict[str, Any]) -> Example:
    """The default ``with_args_fn``: the example with those keys of ``meta`` set."""
    from dataclasses import replace

    return replace(example, meta={**example.meta, **values})


@dataclass(frozen=True)
class Verifier:
    """One verifiable reward."""

    name: str
    """Dotted name, e.g. ``tool_call.format``, ``sql.execution``, ``ifeval.no_comma``."""
    task: str
    """Task family it belongs to (``tool_calling``, ``text_to_sql``, ``instruction_following``) or ``custom``."""
    title: str
    """Short human title, shown in the UI and used in the information block ``[Verifier: {title}]``."""
    description: str
    """One or two sentences: what it checks and how it scores."""
    info_fn: Callable[[Example], str]
    """Example -> verifier information text."""
    check_fn: Callable[[str, Example], Verdict]
    """(response, example) -> Verdict. Never raises on bad responses: returns score 0 with a reason."""
    spans_fn: Optional[Callable[[str, Example], Optional[list[Span]]]] = None
    """(response, example) -> the character spans ``[start, end)`` the verifier reads to decide (its relevant spans,
    the localization benchmark's ground truth), or None if unknown; they lie inside the text."""
    arguments: tuple[Argument, ...] = ()
    """What the verifier reads from the example (shown as fields for a free prompt)."""
    args_fn: Optional[Callable[[Verifier, Example], dict[str, Any]]] = None
    """(verifier, example) -> the example's values of ``arguments`` (absent keys missing); default: ``meta`` keys."""
    with_args_fn: Optional[Callable[[Verifier, Example, dict[str, Any]], Example]] = None
    """(verifier, example, values) -> the example with those argument values; default: ``meta`` updated."""
    trl_reward: Optional[TrlReward] = None
    """The TRL reward function this verifier wraps (:meth:`from_trl`): a TRL trainer calls it as is, batched."""
    decision_spans_fn: Optional[Callable[[str, Example], Optional[list[Span]]]] = None
    """(response, example) -> the character spans whose tokens decide the verdict (the credit study's oracle), or
    None if unknown; default: the relevant spans. A span may reach past the text's end: ``(len(response),
    len(response) + 1)`` is the end-of-sequence token, where ending the response decides (an end phrase, an upper
    limit on words, a closing tag that must come last)."""

    def __post_init__(self):
        if not self.name or " " in self.name:
            raise ValueError(f"verifier name must be a non-empty dotted name without spaces, got {self.name!r}")

    def info(self, example: Example) -> str:
        return self.info_fn(example)

    def check(self, response: str, example: Example) -> Verdict:
        return self.check_fn(response, example)

    def score(self, response: str, example: Example) -> float:
        return float(self.check_fn(response, example).score)

    def relevant_spans(self, response: str, example: Example) -> Optional[list[Span]]:
        """The spans ``[start, end)`` of ``response`` the verifier reads to decide (``spans_fn``), or None if
        unknown: the ground truth of the localization benchmark."""
        return None if self.spans_fn is None else self.spans_fn(response, example)

    def decision_spans(self, response: str, example: Example) -> Optional[list[Span]]:
        """The spans ``[start, end)`` whose tokens decide the verdict (``decision_spans_fn``; without one, the
        relevant spans), or None if unknown: where the credit study's oracle puts its weight. A span that reaches
        past the text's end holds the end-of-sequence token, the virtual character ``[len(response),
        len(response) + 1)`` (:func:`eos_span`)."""
        if self.decision_spans_fn is None:
            return self.relevant_spans(response, example)
        return self.decision_spans_fn(response, example)

    def args(self, example: Example) -> dict[str, Any]:
        """The example's values of this verifier's ``arguments``."""
        return (self.args_fn or _meta_args)(self, example)

    def missing_args(self, example: Example) -> list[str]:
        """Names of the required arguments the example lacks (empty: the verifier can inform and score)."""
        have = self.args(example)
        return [a.name for a in self.arguments if a.required and have.get(a.name) in (None, "")]

    def with_args(self, example: Example, values: dict[str, Any]) -> Example:
        """The example with these argument values (e.g. typed into the app for a free prompt)."""
        unknown = sorted(set(values) - {a.name for a in self.arguments})
        if unknown:
            raise ValueError(
                f"verifier {self.name!r} takes no argument(s) {unknown}; it takes {[a.name for a in self.arguments]}"
            )
        for a in self.arguments:  # a boolean is true or false, not a string whose truth is its length ("no")
            if a.kind == "boolean" and values.get(a.name) is not None and not isinstance(values[a.name], bool):
                raise ValueError(
                    f"verifier {self.name!r}: argument {a.name!r} must be true or false, got "
                    f"{str(values[a.name])[:40]!r}"
                )
        return (self.with_args_fn or _with_meta_args)(self, example, dict(values))

    @classmethod
    def from_trl(cls, fn: Callable, name: str, info, title: Optional[str] = None, task: str = "custom") -> Verifier:
        """Wrap a TRL reward function ``fn(completions, **kwargs) -> list[float | None]`` (see
        :func:`verifier_from_trl`)."""
        return verifier_from_trl(fn, name=name, info=info, title=title, task=task)

    def as_trl_reward(self) -> Callable:
        """This verifier as a TRL reward function ``fn(prompts, completions, **columns)`` (see
        :func:`as_trl_reward`)."""
        return as_trl_reward(self)


VERIFIERS: dict[str, Verifier] = {}
"""Registry: name -> Verifier. Each family module of :mod:`mrtpo_viz.tasks` adds its own on import."""


def register(verifier: Verifier, *, replace: bool = False) -> Verifier:
    """Add a verifier to the registry (``replace=True`` to overwrite one of the same name)."""
    if verifier.name in VERIFIERS and not replace:
        raise ValueError(f"a verifier named {verifier.name!r} is already registered")
    VERIFIERS[verifier.name] = verifier
    return verifier


def list_verifiers(task: str | None = None) -> list[str]:
    """Registered verifier names, for one task family or all (BFCL's: the tool-calling ones, ``VERIFIER_FAMILY``)."""
    family = VERIFIER_FAMILY.get(task, task)
    return [n for n, v in VERIFIERS.items() if task is None or v.task == family]


def get_verifier(name: str) -> Verifier:
    """Look a verifier up by name; a clear error lists the known names."""
    try:
        return VERIFIERS[name]
    except KeyError:
        known = ", ".join(sorted(VERIFIERS)) or "(none registered)"
        raise KeyError(f"unknown verifier {name!r}; known verifiers: {known}") from None


# --- TRL reward functions in both directions ---------------------------------------------------------------------
# TRL's ``None`` ("this reward does not apply") is a NaN score here, and NaN goes back out as ``None``.


def _call_kwargs(fn: Callable, example: Example) -> dict[str, Any]:
    """One-row TRL columns for ``fn``: prompts, task, meta and each meta key (only the names ``fn`` accepts)."""
    columns = {f"{k}": [v] for k, v in example.meta.items()}
    columns.update(prompts=[example.prompt], task=[example.task], meta=[example.meta], completion_ids=None)
    params = inspect.signature(fn).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return columns
    return {k: v for k, v in columns.items() if k in params}


def verifier_from_trl(
    fn: TrlReward, name: str, info: Info, title: Optional[str] = None, task: str = "custom", description: str = ""
) -> Verifier:
    """Wrap a TRL reward function as a verifier.

    ``fn`` is called with a one-element ``completions`` list plus the example's columns as one-element lists
    (``prompts``, ``task``, ``meta`` and every key of ``meta``; only those its signature accepts unless it takes
    ``**kwargs``). It must return a list of one number or ``None`` (-> NaN, "does not apply"). The score is the
    number as given (TRL rewards need not lie in [0, 1]). An exception inside ``fn`` scores 0 with its message.
    """
    if not callable(fn):
        raise ValueError(f"a TRL reward must be callable, got {type(fn).__name__}")
    info_fn = info if callable(info) else (lambda example, _text=str(info): _text)

    def check(response: str, example: Example) -> Verdict:
        try:
            out = fn(completions=[response], **_call_kwargs(fn, example))
        except Exception as e:  # noqa: BLE001 -- user code; a failure on one response is a zero with the reason
            return Verdict(0.0, f"the reward function raised {type(e).__name__}: {e}")
        if not isinstance(out, (list, tuple)) or len(out) != 1:
            raise ValueError(
                f"reward function {name!r} must return a list of one value for one completion, got {out!r}"
            )
        if out[0] is None:
            return Verdict(math.nan, "does not apply to this example")
        return Verdict(float(out[0]), f"{name} returned {float(out[0]):g}")

    return Verifier(
        name=name,
        task=task,
        title=title or name,
        description=description or f"TRL reward {name}",
        info_fn=info_fn,
        check_fn=check,
        trl_reward=fn,
    )


def _completion_text(completion: Any) -> str:
    """A TRL completion: a string, or (conversational) a list of messages whose last content is the response."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, (list, tuple)) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    raise ValueError(f"a completion must be a string or a list of chat messages, got {type(completion).__name__}")


def example_from_row(row: dict[str, Any], task: str = "custom") -> Example:
    """A dataset row (TRL's columns) as an :class:`Example`: ``prompt``, ``task`` (default ``task``), ``id``, and
    ``meta`` (a dict, or a JSON object string: a dataset of dicts with differing keys would fill every row with the
    union of the keys; default: the row's other columns)."""
    row = dict(row)
    prompt, meta = row.pop("prompt"), row.pop("meta", None)
    task, ident = str(row.pop("task", None) or task), str(row.pop("id", None) or "")
    if isinstance(meta, str):
        meta = json.loads(meta)
        if not isinstance(meta, dict):
            raise ValueError(f"the 'meta' column must hold JSON objects, got {type(meta).__name__}")
    return Example(task=task, prompt=prompt, meta=dict(meta) if meta is not None else row, id=ident)


def as_trl_reward(verifier: Verifier) -> TrlReward:
    """The verifier as a TRL reward function ``fn(prompts, completions, completion_ids=None, **columns)``.

    Each row becomes an :class:`Example` from the dataset columns (:func:`example_from_row`): ``task`` (default:
    the verifier's task), ``prompt``, ``id`` and ``meta`` (a dict or a JSON string; default: the row's other columns).
    Returns one score per completion, NaN as None; None too on a row whose ``verifiers`` column (a list of reward
    names, as :func:`~mrtpo_viz.integrations.trl_batch.trl_dataset` writes it) does not list this verifier. ``__name__``
    is the verifier name, which TRL logs as the reward name.
    """

    def reward(prompts, completions, completion_ids=None, **columns) -> list[Optional[float]]:
        if len(prompts) != len(completions):
            raise ValueError(f"{len(prompts)} prompts but {len(completions)} completions")
        scores = []
        for i, (prompt, completion) in enumerate(zip(prompts, completions)):
            row = {k: v[i] for k, v in columns.items() if isinstance(v, (list, tuple)) and len(v) == len(prompts)}
            listed = row.pop("verifiers", None)
            if isinstance(listed, (list, tuple)) and verifier.name not in listed:
                scores.append(None)  # the row's prompt does not ask for this
                continue
            example = example_from_row({**row, "prompt": prompt}, verifier.task)
            s = verifier.score(_completion_text(completion), example)
            scores.append(None if math.isnan(s) else s)
        return scores

    reward.__name__ = reward.__qualname__ = verifier.name
    return reward
