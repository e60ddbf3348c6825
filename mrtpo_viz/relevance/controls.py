"""Relevance controls: what each with-information branch of the replay is held against.

Raw JS also follows the policy's own uncertainty where it ignores the information, so (ours, not the paper's):

- ``none``: with vs without (the paper's signal).
- ``placebo``: raw minus the metric that a neutral block of about the same number of tokens causes, clipped at 0.
- ``corrupted``: with vs the information of another example of the same task (instead of none); where a
  verifier's information never changes, another verifier's information.
- ``others``: raw minus the mean raw of the other verifiers, clipped at 0 (with K = 1 it equals raw).
- ``wrong_hint``: raw minus the metric that the wrong information (``corrupted``'s borrowed one) causes against no
  information, clipped at 0: RLCSD's right-hint gap minus wrong-hint gap, with the metric as the gap. It runs the
  same branches as ``corrupted`` and differs from it: ``corrupted`` is ``d(right, wrong)`` directly, and for a metric
  such as JS distance ``|d(right, none) - d(wrong, none)| <= d(right, wrong)`` (the triangle inequality), with
  equality only when the three distributions lie on one geodesic.

Names come from :data:`mrtpo_viz.names.CONTROLS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional
from collections.abc import Callable, Sequence

import torch

from .. import names
from ..tasks.base import Example, Verifier, get_verifier
from ..tasks.example_sources import load_examples

NEUTRAL_FILLER = (
    "The morning was quiet and the sky over the old town stayed a pale shade of grey while a few "
    "people walked slowly along the river past the market. "
)
"""The placebo control's information: neutral text, cut to the real information's number of tokens."""


@dataclass(frozen=True)
class ControlInput:
    """What a control may use to build its extra branches."""

    verifiers: list[Verifier]
    infos: list[str]
    example: Optional[Example]
    tokenizer: object
    pool: Optional[Sequence[Example]]


@dataclass(frozen=True)
class Control:
    """What each with-information branch is held against."""

    name: str
    description: str
    extra_infos: Optional[Callable[[ControlInput], list[str]]]
    """Per verifier the information of an extra branch (same title and template), or None for no extra branches."""
    combine: Callable[[torch.Tensor, Optional[torch.Tensor], Optional[torch.Tensor]], torch.Tensor]
    """(raw, with_vs_extra, extra_vs_without), each (K, T) -> scores (K, T)."""


def _placebo_infos(c: ControlInput) -> list[str]:
    """Neutral text of about the same number of tokens as each information (empty stays empty)."""
    # a pool of filler tokens, never fed to the model: verbose=False keeps transformers from warning that it is
    # longer than the model's context ("(3649 > 2048) ... indexing errors")
    filler_ids = c.tokenizer(NEUTRAL_FILLER * 64, add_special_tokens=False, verbose=False)["input_ids"]
    out = []
    for info in c.infos:
        n = len(c.tokenizer(info, add_special_tokens=False)["input_ids"]) if info else 0
        out.append(c.tokenizer.decode(filler_ids[:n]).strip())
    return out


def _corrupted_infos(c: ControlInput) -> list[str]:
    """Each verifier's information for another example of the same task: the next one in the pool (cyclic,
    starting after this example) whose information differs. A verifier whose information is the same for every
    example (an IFEval instruction without arguments: its official description) borrows instead the first
    information of another verifier, in that order, that is none of this example's own."""
    if c.example is None:
        raise ValueError("control 'corrupted' needs an Example (it borrows another example's information)")
    pool = list(c.pool) if c.pool is not None else load_examples(c.example.task, split="all")
    ids = [e.id for e in pool]
    start = ids.index(c.example.id) + 1 if c.example.id in ids else 0
    ordered = [e for e in pool[start:] + pool[:start] if e.id != c.example.id or not e.id]
    out = []
    for v, info in zip(c.verifiers, c.infos):
        other = next((i for e in ordered for i in [_info_of(v, e)] if i not in (None, info)), None)
        if other is None:
            other = next(
                (
                    i
                    for e in ordered
                    for name in e.verifiers
                    if name != v.name
                    for i in [_info_of(name, e)]
                    if i not in (None, *c.infos)
                ),
                None,
            )
        if other is None:
            raise ValueError(
                f"control 'corrupted': no other example of task {c.example.task!r} has a different "
                f"information for verifier {v.name!r}"
            )
        out.append(other)
    return out


def _info_of(verifier: Verifier | str, example: Example) -> Optional[str]:
    """A verifier's (or a registered name's) information for ``example``; None where it has none: a name that is not
    registered, or a verifier whose arguments the example lacks."""
    try:
        return (get_verifier(verifier) if isinstance(verifier, str) else verifier).info(example)
    except (KeyError, ValueError):
        return None


def _others(raw: torch.Tensor, *_: Optional[torch.Tensor]) -> torch.Tensor:
    """``clip(raw_k - mean_{j != k} raw_j, 0)``; K = 1 gives raw."""
    K = raw.shape[0]
    if K == 1:
        return raw.clone()
    mean_others = (raw.sum(0, keepdim=True) - raw) / (K - 1)  # (K, T)
    return (raw - mean_others).clamp_min(0.0)


_ALL = (
    Control("none", "with vs without the information (the paper's signal)", None, lambda raw, wx, xw: raw.clone()),
    Control(
        "placebo",
        "raw minus the metric a neutral block of similar length causes, clipped at 0",
        _placebo_infos,
        lambda raw, wx, xw: (raw - xw).clamp_min(0.0),
    ),
    Control(
        "corrupted",
        "with vs another example's information of the same task",
        _corrupted_infos,
        lambda raw, wx, xw: wx.clone(),
    ),
    Control("others", "raw minus the mean raw of the other verifiers, clipped at 0", None, _others),
    Control(
        "wrong_hint",
        "raw minus the metric another example's (wrong) information causes, clipped at 0",
        _corrupted_infos,
        lambda raw, wx, xw: (raw - xw).clamp_min(0.0),
    ),
)
CONTROL_SPECS: dict[str, Control] = {c.name: c for c in _ALL}
"""Control name -> Control, keyed by :data:`mrtpo_viz.names.CONTROLS` (checked at import)."""
assert tuple(CONTROL_SPECS) == names.CONTROLS, "names.CONTROLS and the controls defined here differ"


def get_control(name: str) -> Control:
    """A control by name, with a clear error for unknown names."""
    return CONTROL_SPECS[names.check_choice("control", name, names.CONTROLS)]
