"""Task families: examples, the Verifier contract and registry, and one module per family.

- :mod:`.base`: :class:`Example`, :class:`Verifier`, :class:`Verdict`, the registry (``register``, ``get_verifier``,
  ``list_verifiers``) and the TRL reward-function adapters;
- :mod:`.example_sources` / :mod:`.bundled_data`: the bundled examples (package data) and any JSONL file of examples;
  :mod:`.bfcl`: BFCL's rows, read from the installed bfcl-eval (``available_tasks()`` lists ``bfcl`` only then);
- one module per family with its verifiers, their information and relevant spans: :mod:`.tool_calling` (BFCL's
  semantics for any tool; the built-in :mod:`.tool_catalog`), :mod:`.sql` (with the read-only :mod:`.sandbox`),
  :mod:`.ifeval`;
  :mod:`.custom` builds declarative verifiers;
- :mod:`.generators`: the sample-data generators, beside the verifiers and never imported by them.

Importing this package registers every family's verifiers.
"""

from ..names import TASKS
from .base import (
    VERIFIERS,
    Argument,
    Example,
    MissingArguments,
    Span,
    Verdict,
    Verifier,
    get_verifier,
    list_verifiers,
    register,
)
from .example_sources import available_tasks, load_examples
from . import ifeval  # noqa: E402,F401  (registers the ifeval.* verifiers)
from . import tool_calling  # noqa: E402,F401  (registers tool_call.format, tool_call.correctness)
from . import sql  # noqa: E402,F401  (registers sql.format, sql.execution)
from . import slots  # noqa: E402,F401  (registers slots.part1..4, the credit study's task)

__all__ = [
    "TASKS",
    "VERIFIERS",
    "Argument",
    "Example",
    "MissingArguments",
    "Span",
    "Verdict",
    "Verifier",
    "get_verifier",
    "list_verifiers",
    "available_tasks",
    "load_examples",
    "register",
]
