"""BFCL as a task family: examples built at run time from the data files of the installed ``bfcl-eval`` package.

``load_bfcl(category)`` reads ``bfcl_eval/data/BFCL_v<N>_<category>.json`` and ``possible_answer/`` (JSON lines, rows
matched by id) from the installed package, found without importing it; nothing of BFCL is copied into this project.
Each row becomes an :class:`Example` of task ``bfcl`` (scored by the tool-calling verifiers, ``names.VERIFIER_FAMILY``):

- ``prompt``: BFCL's question turns as chat messages, after a system message that lists the functions (OpenAI tool
  objects, one JSON per line inside ``<tools>``) and the reply format, since BFCL's questions name neither (merged
  into BFCL's own system message where a row has one); ``tools_in_prompt=False`` keeps BFCL's messages as they are;
- ``meta``: ``category``, ``bfcl_id``, ``functions`` (BFCL's docs as shipped: the format information) and
  ``possible_answer`` (BFCL's ground truth: the correctness information);
- ``reference``: the first possible answer, one ``<tool_call>`` block per expected call, each argument at its first
  accepted value (left out where that is ``""``, "may be omitted"; dict answers rendered one level down).

BFCL ships one evaluation set and no training split: every ``split`` gives all rows of the category, so training on
``bfcl`` trains on the benchmark's own prompts (a demo, not a held-out evaluation).

Supported: :data:`~mrtpo_viz.names.BFCL_CATEGORIES`, the categories BFCL's AST checker scores with Python rules; the
others are refused with the reason (:data:`REFUSED`). Install: ``pip install mrtpo-viz[bfcl]``, or ``pip install
bfcl-eval==2026.3.23 --no-deps`` (only its data files are read; its dependencies are API clients and models).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any, Optional

from ..names import BFCL_CATEGORIES, BFCL_TASK
from .base import Example
from .tool_calling import check_correctness, check_format, render_calls
from .tool_calling.schema import normalize_function
from .tool_catalog import CLOSE_TAG, OPEN_TAG

BFCL_EVAL_VERSION = "2026.3.23"
"""The bfcl-eval release these rules and the agreement figures were checked on (BFCL v4 data)."""
INSTALL_HINT = (
    f"pip install mrtpo-viz[bfcl] (or, lighter: pip install bfcl-eval=={BFCL_EVAL_VERSION} --no-deps; "
    "only its data files are read)"
)
VERIFIERS = ("tool_call.format", "tool_call.correctness")
_JAVA_JS = (
    "its values are Java/JavaScript source literals given as strings, which BFCL converts with its own "
    "parsers per declared type before checking; that has no natural form in the JSON <tool_call> format"
)
_MULTI_TURN = "it is multi-turn and checked by executing the calls against BFCL's simulated APIs"
_NO_ANSWER = "it has no possible answers: a response is right when it makes {} call"
REFUSED: dict[str, str] = {
    "simple_java": _JAVA_JS,
    "simple_javascript": _JAVA_JS,
    "java": _JAVA_JS,
    "javascript": _JAVA_JS,
    "irrelevance": _NO_ANSWER.format("no"),
    "live_irrelevance": _NO_ANSWER.format("no"),
    "live_relevance": _NO_ANSWER.format("any"),
    **{f"multi_turn_{k}": _MULTI_TURN for k in ("base", "miss_func", "miss_param", "long_context")},
    "memory": "it is agentic (memory backends) and checked on the final answer text, not on calls",
    "web_search": "it is agentic (web search) and checked on the final answer text, not on calls",
    "format_sensitivity": "it is BFCL's non-scoring study of prompt formats, built from other categories",
}
"""BFCL categories that are not loaded, and why."""


class BFCLNotInstalled(ImportError):
    """bfcl-eval is not installed, so its data files cannot be read."""


def package_dir() -> Optional[Path]:
    """The installed ``bfcl_eval`` package's folder (found without importing it), or None."""
    spec = importlib.util.find_spec("bfcl_eval")
    return Path(next(iter(spec.submodule_search_locations))) if spec and spec.submodule_search_locations else None


def installed() -> bool:
    """Whether bfcl-eval is installed."""
    return package_dir() is not None


def data_dir() -> Path:
    """``bfcl_eval/data`` of the installed package."""
    folder = package_dir()
    if folder is None:
        raise BFCLNotInstalled(
            f"the BFCL task family reads the data shipped with bfcl-eval, which is not installed; "
            f"install it with: {INSTALL_HINT}"
        )
    return folder / "data"


def check_category(category: str) -> str:
    """The category if it is supported; a ValueError that says why not otherwise."""
    if category in BFCL_CATEGORIES:
        return category
    if category in REFUSED:
        raise ValueError(
            f"BFCL category {category!r} is not supported: {REFUSED[category]}; supported: {', '.join(BFCL_CATEGORIES)}"
        )
    raise ValueError(f"unknown BFCL category {category!r}; supported: {', '.join(BFCL_CATEGORIES)}")


def data_file(folder: Path, category: str) -> Path:
    """``BFCL_v<N>_<category>.json`` in ``folder``, the highest data version N there."""
    found = [
        (int(m.group(1)), p)
        for p in folder.glob(f"BFCL_v*_{category}.json")
        if (m := re.fullmatch(rf"BFCL_v(\d+)_{re.escape(category)}\.json", p.name))
    ]
    if not found:
        raise FileNotFoundError(f"no BFCL_v*_{category}.json in {folder}; reinstall bfcl-eval: {INSTALL_HINT}")
    return max(found)[1]


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# --- the reference -------------------------------------------------------------------------------------------------


def _nested_answer(answer: dict) -> dict:
    return {k: v[0] for k, v in answer.items() if isinstance(v, list) and v and v[0] != ""}


def _first_value(accepted: list, prop: dict) -> Any:
    """The first accepted value; dict (and list-of-dict) answers are possible answers themselves, one level down."""
    value = accepted[0]
    items = prop.get("items") if isinstance(prop.get("items"), dict) else {}
    if prop.get("type") in ("dict", "object") and isinstance(value, dict):
        return _nested_answer(value)
    if prop.get("type") == "array" and items.get("type") == "dict" and isinstance(value, list):
        return [_nested_answer(v) if isinstance(v, dict) else v for v in value]
    return value


def reference_arguments(answer: dict, function: Optional[dict]) -> dict:
    """The first accepted value of each argument. Left out: an argument whose first accepted value is ``""`` (may be
    omitted) and an undeclared one that may be omitted; a required one whose only accepted value is ``""`` gets the
    empty value of its type (``[]`` for arrays, else ``""``), which BFCL accepts."""
    params = normalize_function(function)["parameters"] if function else {"properties": {}, "required": []}
    props, required = params["properties"], set(params["required"])
    args = {}
    for key, accepted in answer.items():
        accepted = accepted if isinstance(accepted, list) else [accepted]
        prop = props.get(key) if isinstance(props.get(key), dict) else {}
        others = [a for a in accepted if a != ""]
        if "" in accepted and key not in props:
            continue
        if accepted and accepted[0] != "":
            args[key] = _first_value(accepted, prop)
        elif key in required:
            args[key] = _first_value(others, prop) if others else [] if prop.get("type") == "array" else ""
    return args


def render_reference(functions: list[dict], possible_answer: list[dict]) -> str:
    """The possible answer's calls in expected order, one ``<tool_call>`` block per line."""
    by_name = {f.get("name"): f for f in functions}
    return render_calls(
        [
            (name, reference_arguments(args, by_name.get(name)))
            for answer in possible_answer
            for name, args in answer.items()
        ]
    )


# --- the prompt ----------------------------------------------------------------------------------------------------


def tools_system_text(functions: list[dict]) -> str:
    """A system text that lists the functions (OpenAI tool objects, one JSON per line) and the reply format."""
    tools = "\n".join(json.dumps({"type": "function", "function": f}, ensure_ascii=False) for f in functions)
    return (
        "You may call one or more of these functions:\n<tools>\n" + tools + "\n</tools>\n"
        f'To call functions, reply with one {OPEN_TAG}{{"name": <function name>, "arguments": <JSON object>}}'
        f"{CLOSE_TAG} block per call and nothing else."
    )


def prompt_messages(question: list, functions: list[dict], tools_in_prompt: bool = True) -> list[dict]:
    """BFCL's question (turns of chat messages) flattened; with ``tools_in_prompt`` the functions and the reply
    format come first, in the system message (before BFCL's own system text where the row has one)."""
    messages = [dict(m) for turn in question for m in (turn if isinstance(turn, list) else [turn])]
    if not tools_in_prompt:
        return messages
    text = tools_system_text(functions)
    if messages and messages[0].get("role") == "system":
        messages[0]["content"] = text + "\n\n" + str(messages[0].get("content", ""))
        return messages
    return [{"role": "system", "content": text}] + messages


def make_example(row: dict, ground_truth: list[dict], category: str, tools_in_prompt: bool = True) -> Example:
    """One BFCL row (and its possible answer) as an Example of task ``bfcl``."""
    functions = row["function"] if isinstance(row["function"], list) else [row["function"]]
    meta = {"category": category, "bfcl_id": row["id"], "functions": functions, "possible_answer": ground_truth}
    return Example(
        task=BFCL_TASK,
        prompt=prompt_messages(row["question"], functions, tools_in_prompt),
        meta=meta,
        id=f"bfcl-{row['id']}",
        reference=render_reference(functions, ground_truth),
        verifiers=VERIFIERS,
    )


def reference_is_consistent(example: Example) -> bool:
    """Whether the reference scores 1 on both verifiers (not so for the few BFCL rows whose possible answer breaks its
    own schema or cannot be met; docs/tasks.md lists them)."""
    ref = example.reference
    return check_format(ref, example).score == 1.0 and check_correctness(ref, example).score == 1.0


def load_bfcl(
    category: str = BFCL_CATEGORIES[0],
    *,
    limit: Optional[int] = None,
    tools_in_prompt: bool = True,
    root: Optional[Path] = None,
    consistent_only: bool = False,
) -> list[Example]:
    """The examples of one BFCL category, in file order.

    Args:
        category: one of :data:`~mrtpo_viz.names.BFCL_CATEGORIES`; the others raise a ValueError that says why.
        limit: only the first ``limit`` rows.
        tools_in_prompt: put the functions and the reply format in a system message (see the module docstring).
        root: a ``data`` folder laid out like bfcl-eval's (default: the installed package's).
        consistent_only: leave out the rows whose reference cannot score 1 on both verifiers.
    Raises:
        BFCLNotInstalled: bfcl-eval is not installed (and no ``root`` is given); the message says how to install it.
    """
    check_category(category)
    base = Path(root) if root is not None else data_dir()
    rows = _read_jsonl(data_file(base, category))
    answers = {r["id"]: r["ground_truth"] for r in _read_jsonl(data_file(base / "possible_answer", category))}
    rows = rows if limit is None else rows[: max(int(limit), 0)]
    missing = [r["id"] for r in rows if r["id"] not in answers]
    if missing:
        raise ValueError(f"{len(missing)} rows of BFCL {category} have no possible answer (first: {missing[0]})")
    examples = [make_example(r, answers[r["id"]], category, tools_in_prompt) for r in rows]
    return [e for e in examples if reference_is_consistent(e)] if consistent_only else examples
