"""Command-line options generated from a configuration dataclass: one ``--field-name`` per field, typed from its
annotation, its help the field's docstring, its choices from :mod:`mrtpo_viz.names`. A field added to
``TrainConfig`` is thereby settable from ``train`` with no second copy of its name, type or description."""

from __future__ import annotations

import argparse
import re
import dataclasses
import typing
from functools import cache
from typing import Any, Optional
from collections.abc import Callable

from .. import names
from ..docstrings import field_docs

CHOICES: dict[str, tuple[str, ...]] = {
    "method": names.METHODS,
    "control": names.CONTROLS,
    "metric": names.METRICS,
    "info_position": names.INFO_POSITIONS,
    "task": names.TASKS,
    "dtype": names.DTYPES,
}
"""Fields whose values are registry names (the task may also be any other family the examples file names)."""


@cache
def _weights(text: str) -> tuple[tuple[str, float], ...]:
    """``"tool_call.format=0.5,tool_call.correctness=2"`` -> pairs."""
    pairs = []
    for item in filter(None, (s.strip() for s in text.split(","))):
        name, sep, value = item.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"expected verifier=weight, got {item!r}")
        try:
            pairs.append((name.strip(), float(value)))
        except ValueError:
            raise argparse.ArgumentTypeError(f"the weight of {name.strip()!r} is not a number: {value!r}") from None
    return tuple(pairs)


def whole(lowest: int, highest: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``lowest`` to ``highest``, else argparse's usage error (exit 2)
    naming the option (``--port -1`` used to end in an OverflowError, ``--threads 100000`` in a killed process)."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not lowest <= value <= highest:
            raise argparse.ArgumentTypeError(f"must be a whole number from {lowest} to {highest}, got {text[:40]!r}")
        return value

    convert.__name__ = "whole number"
    return convert


def _converter(annotation: Any) -> tuple[Callable[[str], Any], str]:
    """A string -> value function and a metavar for a field annotation."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    base = args[0] if typing.get_origin(annotation) is typing.Union and len(args) == 1 else annotation
    if base in (int, float, str):
        return base, base.__name__.upper()
    if typing.get_origin(base) is tuple:
        return _weights, "NAME=W,..."
    raise TypeError(f"no command-line form for a field of type {annotation!r}")


def plain(text: str) -> str:
    """Help text without reStructuredText's double backticks (``x`` -> x): the docstrings it comes from use them."""
    return re.sub(r"``(.+?)``", r"\1", text, flags=re.S)


def add_dataclass_options(
    parser: argparse.ArgumentParser,
    cls: type,
    *,
    skip: tuple[str, ...] = (),
    defaults: Optional[dict[str, Any]] = None,
    extra: Optional[dict[str, str]] = None,
) -> None:
    """One option per field of ``cls`` (except ``skip``); ``defaults`` replace the dataclass's own; ``extra`` adds a
    sentence to a field's help (e.g. the known models for ``checkpoint``)."""
    hints = typing.get_type_hints(cls)
    docs, defaults, extra = field_docs(cls), defaults or {}, extra or {}
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        convert, metavar = _converter(hints[f.name])
        default = defaults.get(f.name, f.default)
        shown = "" if default in (None, (), "") else f" (default: {default})"
        shown += _task_choices() if f.name == "task" else ""
        parser.add_argument(
            "--" + f.name.replace("_", "-"),
            dest=f.name,
            type=convert,
            default=default,
            choices=CHOICES.get(f.name) if f.name != "task" else None,
            metavar=metavar if f.name not in CHOICES else None,
            help=plain(docs.get(f.name, "") + extra.get(f.name, "") + shown),
        )


def _task_choices() -> str:
    """The task families that load here (bfcl only where bfcl-eval is installed), for the help of ``--task``."""
    from ..tasks.example_sources import available_tasks

    return f"; here: {', '.join(available_tasks())}"


def dataclass_kwargs(args: argparse.Namespace, cls: type, *, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """The parsed values of ``cls``'s fields."""
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if f.name not in skip}
