"""The result record of one replay: :class:`Relevance`. Data only: no rendering here (``viz`` renders), no model."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

import torch

TopK = list[tuple[str, float]]
"""Top predictions at one position: (token text, probability), most likely first."""


def _tensor(x, dtype=torch.float32) -> torch.Tensor:
    return x.detach().to("cpu", dtype) if isinstance(x, torch.Tensor) else torch.tensor(x, dtype=dtype)


@dataclass
class Relevance:
    """Per-token relevance of a response to each of K verifiers (one replay).

    ``scores[k, t]`` is the relevance of response token ``t`` to verifier ``k`` after the chosen ``control``;
    ``raw_scores`` is always the plain with-vs-without metric (the paper's signal), so both can be shown.
    """

    tokens: list[str]
    """Display text of each response token; ``"".join(tokens) == response`` where the tokenizer allows."""
    token_ids: list[int]
    """The response token ids, identical in every branch of the replay."""
    verifiers: list[str]
    """Verifier names, the K rows of ``scores``."""
    scores: torch.Tensor
    """(K, T) relevance after the control."""
    raw_scores: torch.Tensor
    """(K, T) raw metric between the with-information and the no-information branch."""
    metric: str = "js"
    control: str = "none"
    info_position: str = "user_end"
    response: str = ""
    offsets: list[tuple[int, int]] = field(default_factory=list)
    """Character span ``[start, end)`` of each token in ``response``."""
    infos: dict[str, str] = field(default_factory=dict)
    """The information text used per verifier."""
    logp_without: Optional[torch.Tensor] = None
    """(T,) log-prob of the actual token without information."""
    logp_with: Optional[torch.Tensor] = None
    """(K, T) log-prob of the actual token with each verifier's information."""
    entropy: Optional[torch.Tensor] = None
    """(T,) entropy (nats) of the no-information next-token distribution."""
    top_without: list[TopK] = field(default_factory=list)
    """T lists of top predictions without information."""
    top_with: list[list[TopK]] = field(default_factory=list)
    """K x T lists of top predictions with each information."""
    rewards: dict[str, float] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    spans: dict[str, Optional[list[tuple[int, int]]]] = field(default_factory=dict)
    """Per verifier, the character spans that decide its verdict (None where unknown)."""
    example_id: str = ""
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self):
        self.scores = _tensor(self.scores)
        self.raw_scores = _tensor(self.raw_scores)
        K, T = len(self.verifiers), len(self.token_ids)
        if tuple(self.scores.shape) != (K, T) or tuple(self.raw_scores.shape) != (K, T):
            raise ValueError(
                f"scores must be (K={K}, T={T}), got {tuple(self.scores.shape)} and {tuple(self.raw_scores.shape)}"
            )
        for name in ("logp_without", "logp_with", "entropy"):
            v = getattr(self, name)
            if v is not None:
                setattr(self, name, _tensor(v))

    @property
    def K(self) -> int:
        return len(self.verifiers)

    @property
    def T(self) -> int:
        return len(self.token_ids)

    def token_in_span(self, verifier: str) -> Optional[list[bool]]:
        """Per token, whether it overlaps one of the verifier's relevant spans (None if spans are unknown)."""
        spans = self.spans.get(verifier)
        if spans is None or not self.offsets:
            return None
        return [any(s < e_t and s_t < e for s, e in spans) for s_t, e_t in self.offsets]

    def to_frame(self):
        """Long pandas frame: one row per (position, verifier)."""
        import pandas as pd

        rows = []
        for k, name in enumerate(self.verifiers):
            in_span = self.token_in_span(name)
            for t in range(self.T):
                start, end = self.offsets[t] if self.offsets else (None, None)
                rows.append(
                    {
                        "position": t,
                        "token": self.tokens[t],
                        "token_id": self.token_ids[t],
                        "start": start,
                        "end": end,
                        "verifier": name,
                        "score": float(self.scores[k, t]),
                        "raw_score": float(self.raw_scores[k, t]),
                        "logp_with": None if self.logp_with is None else float(self.logp_with[k, t]),
                        "logp_without": None if self.logp_without is None else float(self.logp_without[t]),
                        "entropy": None if self.entropy is None else float(self.entropy[t]),
                        "in_span": None if in_span is None else in_span[t],
                        "reward": self.rewards.get(name),
                        "metric": self.metric,
                        "control": self.control,
                    }
                )
        return pd.DataFrame(rows)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for name in ("scores", "raw_scores", "logp_without", "logp_with", "entropy"):
            v = getattr(self, name)
            d[name] = None if v is None else v.tolist()
        d["offsets"] = [list(o) for o in self.offsets]
        return d

    def to_json(self, **kw) -> str:
        return json.dumps(self.to_dict(), **kw)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Relevance:
        d = dict(d)
        d["offsets"] = [tuple(o) for o in d.get("offsets") or []]
        d["top_without"] = [[tuple(p) for p in pos] for pos in d.get("top_without") or []]
        d["top_with"] = [[[tuple(p) for p in pos] for pos in row] for row in d.get("top_with") or []]
        d["spans"] = {k: None if v is None else [tuple(s) for s in v] for k, v in (d.get("spans") or {}).items()}
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in known})

    @classmethod
    def from_json(cls, text: str) -> Relevance:
        return cls.from_dict(json.loads(text))
