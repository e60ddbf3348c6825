"""The house stays a house: no import cycle between modules, arrows between the package's parts point down only,
modules stay under 400 lines, and every library module has its test module.

Imports are read with :mod:`ast` (module level and inside functions, relative and absolute), so a lazy import inside
a function counts as much as one at the top.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "mrtpo_viz"

RANKS = {
    "names": 0, "guards": 0,
    "divergence": 1, "advantages": 1, "tasks": 1,
    "policy": 2,
    "relevance": 3,
    "training": 4,
    "viz": 5, "sample_policy": 5,
    "integrations": 6, "settings": 6, "bench": 6,
    "ui": 7,
    "cli": 8,
    "__main__": 9, "__init__": 9,
}
"""Each part of the package (a top-level module or subpackage) and its layer: a part imports only lower layers."""
MAX_LINES = 400


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package`` under ``root`` (a package is its __init__)."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that module ``name`` imports (``from .x import y`` counts ``.x.y`` if it is a module)."""
    is_pkg = path.name == "__init__.py"
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = here[:len(here) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            found |= {t for t in [target] + [f"{target}.{a.name}" for a in node.names] if t in modules}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
    return found - {name}


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> modules it imports; a package importing its own children and a child importing its package are
    left out (re-exports, not arrows between rooms)."""
    modules = module_names(root, package)
    graph = {}
    for name, path in modules.items():
        deps = imports_of(name, path, modules)
        graph[name] = {d for d in deps if not d.startswith(name + ".") and not name.startswith(d + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def part_of(module: str) -> str:
    """``mrtpo_viz.relevance.engine`` -> ``relevance``; the package itself -> ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward_arrows(graph: dict[str, set[str]], ranks: dict[str, int]) -> list[tuple[str, str]]:
    """Imports from one part of the package into a part of the same or a higher layer."""
    bad = []
    for src, deps in graph.items():
        for dst in deps:
            a, b = part_of(src), part_of(dst)
            if a != b and ranks.get(b, 99) >= ranks.get(a, -1):
                bad.append((src, dst))
    return sorted(bad)


def problems(root: Path, package: str, ranks: dict[str, int]) -> list[str]:
    graph = import_graph(root, package)
    unranked = sorted({part_of(m) for m in graph} - set(ranks))
    return ([f"import cycle: {' <-> '.join(c)}" for c in cycles(graph)]
            + [f"upward arrow: {a} -> {b}" for a, b in upward_arrows(graph, ranks)]
            + [f"part without a layer in RANKS: {p}" for p in unranked])


def test_the_package_has_no_cycle_and_no_upward_arrow():
    assert problems(ROOT, PACKAGE, RANKS) == []


def test_the_check_fails_on_a_deliberate_back_edge(tmp_path):
    pkg = tmp_path / "house"
    for rel, text in {
        "__init__.py": "", "names.py": "", "tasks/__init__.py": "from .base import X\n",
        "tasks/base.py": "from ..names import Y\nX = 1\n",
        "policy/__init__.py": "", "policy/loading.py": "from ..tasks.base import X\n",
    }.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    ranks = {"names": 0, "tasks": 1, "policy": 2, "__init__": 9}
    assert problems(tmp_path, "house", ranks) == []
    # the back-edge: a task module reaches up into policy, inside a function (lazy imports count too)
    (pkg / "tasks/base.py").write_text("from ..names import Y\nX = 1\n\ndef f():\n    from ..policy.loading import X\n")
    found = problems(tmp_path, "house", ranks)
    assert "import cycle: house.policy.loading <-> house.tasks.base" in found
    assert "upward arrow: house.tasks.base -> house.policy.loading" in found
    # an unknown part is reported rather than silently allowed
    (pkg / "extra.py").write_text("from .names import Y\n")
    assert "part without a layer in RANKS: extra" in problems(tmp_path, "house", ranks)


def test_modules_stay_under_400_lines():
    long = {str(p.relative_to(ROOT)): n for p in module_names(ROOT, PACKAGE).values()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_no_two_modules_share_a_basename():
    """One name, one module: ``checks`` or ``data`` in three places makes every traceback and import ambiguous."""
    by_name: dict[str, list[str]] = {}
    for path in module_names(ROOT, PACKAGE).values():
        if path.name != "__init__.py":
            by_name.setdefault(path.stem, []).append(str(path.relative_to(ROOT)))
    assert {k: v for k, v in by_name.items() if len(v) > 1} == {}


def test_few_modules_sit_directly_in_the_package():
    top = sorted(p.name for p in (ROOT / PACKAGE).glob("*.py"))
    assert len(top) <= 14, top


@pytest.mark.parametrize("name", ["torch", "transformers", "gradio"])
def test_names_imports_nothing_heavy(name):
    import subprocess
    import sys

    code = f"import mrtpo_viz.names, mrtpo_viz.tasks, sys; print({name!r} in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


# --- every module has its test module -------------------------------------------------------------------------------
ENGINE, LOOP, BUILD, VIEWS, APP, CLI = ("tests/relevance/test_engine.py", "tests/training/test_loop.py",
                                       "tests/sample_policy/test_build.py", "tests/viz/test_views.py",
                                       "tests/ui/test_api.py", "tests/cli/test_cli.py")
COVERED_BY = {
    # the lazy public API, and the replay's pieces, exercised through the replay they make up
    "mrtpo_viz": "tests/test_public_api.py",
    "mrtpo_viz.advantages.*": "tests/test_advantages.py",  # the math, tested as one piece (and against TRL)
    "mrtpo_viz.relevance.branches": ENGINE, "mrtpo_viz.relevance.controls": ENGINE,
    "mrtpo_viz.relevance.tokens": ENGINE, "mrtpo_viz.relevance.results": ENGINE,
    # a loaded policy's generation and sampling, tested on the policy that loading gives
    "mrtpo_viz.policy.model": "tests/policy/test_loading.py", "mrtpo_viz.policy.sampling": "tests/policy/test_loading.py",
    # the sample-data generators, one file for the four of them (determinism, uniqueness, gold passes)
    "mrtpo_viz.tasks.generators.*": "tests/tasks/test_generators.py",
    # one training step's pieces, tested on real steps of the tiny policy
    **{f"mrtpo_viz.training.{m}": LOOP for m in ("config", "rollouts", "group_replay", "metrics", "checkpoints",
                                                 "report")},
    # the bundled policy's data, violations and evaluation, tested with its build
    **{f"mrtpo_viz.sample_policy.{m}": BUILD for m in ("sft_data", "evaluate", "violations")},
    # the views, on one hand-built Relevance and frame
    "mrtpo_viz.viz.*": VIEWS,
    "mrtpo_viz.viz.training": "tests/viz/test_training.py",
    # the app: one launched server serves every tab's endpoints; the Runs tab's handlers have their own file
    "mrtpo_viz.ui.*": APP, "mrtpo_viz.ui.runs_tab": "tests/ui/test_runs_tab.py",
    # MRTPOTrainer's batch handling, tested through the trainer on real TRL runs
    "mrtpo_viz.integrations.trl_batch": "tests/integrations/test_trl.py",
    "mrtpo_viz.ui.training_tab": "tests/ui/test_training_tab.py",
    "mrtpo_viz.cli.*": CLI,
}
"""Modules whose tests live in a sibling's test file, and why; ``pkg.*`` covers a package and all its modules."""


def default_test_file(module: str) -> str:
    """``mrtpo_viz.relevance.engine`` -> ``tests/relevance/test_engine.py``; ``mrtpo_viz.names`` -> ``tests/test_names.py``."""
    parts = module.split(".")[1:]
    return "/".join(["tests", *parts[:-1], f"test_{parts[-1]}.py"])


def covering_test_file(module: str) -> str:
    """The test file of ``module``: :func:`default_test_file` where it exists, else its entry in COVERED_BY."""
    if module != PACKAGE and (ROOT / default_test_file(module)).is_file():
        return default_test_file(module)
    if module in COVERED_BY:
        return COVERED_BY[module]
    pkg = next((k for k in COVERED_BY if k.endswith(".*") and (module + ".").startswith(k[:-1])), None)
    return COVERED_BY[pkg] if pkg else default_test_file(module)


def defines_code(path: Path) -> bool:
    """Whether a module defines a function or class (a package that only re-exports needs no test of its own)."""
    return any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) for n in ast.parse(path.read_text()).body)


def test_every_module_has_a_test_module_that_imports_it():
    modules = module_names(ROOT, PACKAGE)
    missing = []
    for name, path in modules.items():
        if not defines_code(path) and name != PACKAGE:
            continue
        test = ROOT / covering_test_file(name)
        if not test.is_file() or name not in imports_of("tests.x", test, modules):
            missing.append(f"{name} -> {test.relative_to(ROOT)}")
    assert missing == []
