"""Verifiers: the Verifier contract, the registry, and one module per task family."""
from .base import VERIFIERS, Span, Verdict, Verifier, get_verifier, list_verifiers, register

__all__ = ["VERIFIERS", "Span", "Verdict", "Verifier", "get_verifier", "list_verifiers", "register"]
