"""Verifiers: the Verifier contract, the registry, and one module per task family."""
from .base import VERIFIERS, Span, Verdict, Verifier, get_verifier, list_verifiers, register
from . import ifeval  # noqa: E402,F401  (registers the ifeval.* verifiers)
from . import tool_calling  # noqa: E402,F401  (registers tool_call.format, tool_call.correctness)
from . import sql  # noqa: E402,F401  (registers sql.format, sql.execution)

__all__ = ["VERIFIERS", "Span", "Verdict", "Verifier", "get_verifier", "list_verifiers", "register"]
