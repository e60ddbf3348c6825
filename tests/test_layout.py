"""The house stays a house: no import cycle between modules, arrows between the package's parts point down only,
``tasks/`` keeps its families apart, and modules stay under 400 lines.

Imports are read with :mod:`ast` (module level and inside functions, relative and absolute), so a lazy import inside
a function counts as much as one at the top. Three kinds of arrow count besides ``import x`` / ``from x import y``:
an import of the package root for one of its attributes (``from .. import load_policy``, ``import mrtpo_viz``: the
root re-exports policy, relevance and training lazily, so a lower layer could reach up through it), and a constant
module name given to ``importlib.import_module`` (absolute, or relative to ``__name__`` / ``__package__``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "mrtpo_viz"

RANKS = {
    "names": 0,
    "guards": 0,
    "version": 0,
    "atomic": 0,
    "docstrings": 0,
    "divergence": 1,
    "advantages": 1,
    "tasks": 1,
    "serving": 1,
    "policy": 2,
    "relevance": 3,
    "training": 4,
    "viz": 5,
    "sample_policy": 5,
    "integrations": 6,
    "settings": 6,
    "bench": 6,
    "ui": 7,
    "cli": 8,
    "__main__": 9,
    "__init__": 9,
}
"""Each part of the package (a top-level module or subpackage) and its layer: a part imports only lower layers."""
MAX_LINES = 400

TASK_FAMILIES = {
    "ifeval": ("ifeval",),
    "tool_calling": ("tool_calling",),
    "sql": ("sql", "sql_parsing", "sandbox", "sql_worker"),
    "custom": ("custom",),
    "slots": ("slots",),
}
"""The verifier families inside ``tasks/`` (first name under ``tasks.``): a family imports no other family."""


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for every module of ``package`` under ``root`` (a package is its __init__)."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _import_module_target(node: ast.Call, name: str, is_pkg: bool) -> str | None:
    """The module that ``importlib.import_module("...", package)`` imports, if its name is a constant."""
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    if (
        called != "import_module"
        or not node.args
        or not isinstance(node.args[0], ast.Constant)
        or not isinstance(node.args[0].value, str)
    ):
        return None
    target = node.args[0].value
    if not target.startswith("."):
        return target
    anchor = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "package"), None)
    if isinstance(anchor, ast.Constant) and isinstance(anchor.value, str):
        package = anchor.value
    elif isinstance(anchor, ast.Name) and anchor.id in ("__name__", "__package__"):
        package = name if (is_pkg or anchor.id == "__name__") else name.rpartition(".")[0]
    else:
        return None
    level = len(target) - len(target.lstrip("."))
    base = package.split(".")
    return ".".join(base[: len(base) - level + 1] + ([target[level:]] if target[level:] else []))


def imports_of(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that module ``name`` imports: ``from .x import y`` counts ``.x.y`` if it is a module
    and ``.x`` if some ``y`` is not (an attribute of ``.x``); ``import_module`` with a constant name counts too."""
    is_pkg = path.name == "__init__.py"
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = here[: len(here) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            subs = {f"{target}.{a.name}" for a in node.names} & set(modules)
            found |= subs
            if target in modules and len(subs) < len(node.names):
                found.add(target)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name in modules}
        elif isinstance(node, ast.Call) and (t := _import_module_target(node, name, is_pkg)) in modules:
            found.add(t)
    return found - {name}


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Module -> modules it imports. A package importing its own children and a child importing its own package
    are left out (re-exports, not arrows between rooms), except the root package: every module is its child, and
    it re-exports the upper layers, so an import of the root is an arrow to the top layer."""
    modules = module_names(root, package)
    graph = {}
    for name, path in modules.items():
        deps = imports_of(name, path, modules)
        graph[name] = {
            d for d in deps if not d.startswith(name + ".") and (d == package or not name.startswith(d + "."))
        }
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


def task_role(module: str, package: str) -> str | None:
    """A module's role inside ``tasks/``: ``base``, ``generators``, ``family:<name>``, ``tasks`` (the package, which
    imports every family to register it), ``other`` (sources, data and catalogues); None outside ``tasks/``."""
    parts = module.split(".")
    if parts[:2] != [package, "tasks"]:
        return None
    if len(parts) == 2:
        return "tasks"
    first = parts[2]
    if first in ("base", "generators"):
        return first
    family = next((f for f, names in TASK_FAMILIES.items() if first in names), None)
    return f"family:{family}" if family else "other"


def task_problems(graph: dict[str, set[str]], package: str) -> list[str]:
    """Inside ``tasks/``: a family imports no other family (nor the tasks package, which imports them all); ``base``
    imports no family; no verifier (a family's module or ``base``) imports a generator."""
    raw = {src: deps for src, deps in graph.items() if task_role(src, package)}
    bad = []
    for src, deps in sorted(raw.items()):
        a = task_role(src, package)
        for dst in sorted(deps):
            b = task_role(dst, package)
            if b is None:
                continue
            if a.startswith("family:") and (b.startswith("family:") and b != a or b == "tasks"):
                bad.append(f"family imports another family: {src} -> {dst}")
            if a == "base" and (b.startswith("family:") or b == "tasks"):
                bad.append(f"base imports a family: {src} -> {dst}")
            if (a.startswith("family:") or a == "base") and b == "generators":
                bad.append(f"a verifier imports a generator: {src} -> {dst}")
    return bad


def task_graph(root: Path, package: str) -> dict[str, set[str]]:
    """Like :func:`import_graph`, but a module importing its own package counts (``from .. import X`` in a family
    goes through ``tasks/__init__``, which imports every family)."""
    modules = module_names(root, package)
    return {
        name: {d for d in imports_of(name, path, modules) if not d.startswith(name + ".")}
        for name, path in modules.items()
    }


def problems(root: Path, package: str, ranks: dict[str, int]) -> list[str]:
    graph = import_graph(root, package)
    unranked = sorted({part_of(m) for m in graph} - set(ranks))
    return (
        [f"import cycle: {' <-> '.join(c)}" for c in cycles(graph)]
        + [f"upward arrow: {a} -> {b}" for a, b in upward_arrows(graph, ranks)]
        + [f"part without a layer in RANKS: {p}" for p in unranked]
        + task_problems(task_graph(root, package), package)
    )


def test_the_package_has_no_cycle_and_no_upward_arrow():
    assert problems(ROOT, PACKAGE, RANKS) == []


SCRATCH = {
    "__init__.py": (
        "import importlib\n\ndef __getattr__(name):\n    return importlib.import_module('.policy', __name__)\n"
    ),
    "names.py": "",
    "tasks/__init__.py": "from .base import X\nfrom . import ifeval, sql\n",
    "tasks/base.py": "from ..names import Y\nX = 1\n",
    "tasks/ifeval/__init__.py": "from ..base import X\n",
    "tasks/ifeval/checks.py": "from ..base import X\n",
    "tasks/sql.py": "from .base import X\n",
    "tasks/generators/__init__.py": "",
    "tasks/generators/gen.py": "from ..ifeval.checks import X\n",
    "policy/__init__.py": "",
    "policy/loading.py": "from ..tasks.base import X\nfrom .. import names\n",
}
"""A clean scratch package (a lazy root like ours, two families, a generator that uses a family)."""

BACK_EDGES = {
    "root attribute": ("tasks/base.py", "from .. import load_policy\n", ["upward arrow: house.tasks.base -> house"]),
    "import of the root": ("tasks/sql.py", "def f():\n    import house\n", ["upward arrow: house.tasks.sql -> house"]),
    "import_module, absolute": (
        "tasks/base.py",
        "import importlib\nM = importlib.import_module('house.policy.loading')\n",
        ["upward arrow: house.tasks.base -> house.policy.loading"],
    ),
    "import_module, relative": (
        "tasks/sql.py",
        "from importlib import import_module\n\ndef f():\n    return import_module('..policy.loading', __package__)\n",
        ["upward arrow: house.tasks.sql -> house.policy.loading"],
    ),
    "family to family": (
        "tasks/sql.py",
        "from .ifeval.checks import X\n",
        ["family imports another family: house.tasks.sql -> house.tasks.ifeval.checks"],
    ),
    "family through the tasks package": (
        "tasks/ifeval/checks.py",
        "from ... import tasks\nfrom ...tasks import X\n",
        ["family imports another family: house.tasks.ifeval.checks -> house.tasks"],
    ),
    "base to a family": (
        "tasks/base.py",
        "def f():\n    from .sql import X\n",
        ["base imports a family: house.tasks.base -> house.tasks.sql"],
    ),
    "verifier to a generator": (
        "tasks/ifeval/checks.py",
        "from ...tasks.generators import gen\n",
        ["a verifier imports a generator: house.tasks.ifeval.checks -> house.tasks.generators.gen"],
    ),
}
"""Each kind of back-edge: (file, what it gets appended, problems it must raise)."""

SCRATCH_RANKS = {"names": 0, "tasks": 1, "policy": 2, "__init__": 9}


def _scratch(tmp_path: Path) -> Path:
    pkg = tmp_path / "house"
    for rel, text in SCRATCH.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    return pkg


def test_the_check_fails_on_a_deliberate_back_edge(tmp_path):
    pkg = _scratch(tmp_path)
    assert problems(tmp_path, "house", SCRATCH_RANKS) == []
    # the back-edge: a task module reaches up into policy, inside a function (lazy imports count too)
    (pkg / "tasks/base.py").write_text("from ..names import Y\nX = 1\n\ndef f():\n    from ..policy.loading import X\n")
    found = problems(tmp_path, "house", SCRATCH_RANKS)
    assert "import cycle: house.policy.loading <-> house.tasks.base" in found
    assert "upward arrow: house.tasks.base -> house.policy.loading" in found
    # an unknown part is reported rather than silently allowed
    (pkg / "extra.py").write_text("from .names import Y\n")
    assert "part without a layer in RANKS: extra" in problems(tmp_path, "house", SCRATCH_RANKS)


@pytest.mark.parametrize("kind", list(BACK_EDGES))
def test_each_kind_of_back_edge_is_caught(tmp_path, kind):
    pkg = _scratch(tmp_path)
    rel, added, expected = BACK_EDGES[kind]
    (pkg / rel).write_text((pkg / rel).read_text() + added)
    found = problems(tmp_path, "house", SCRATCH_RANKS)
    assert found, kind
    for line in expected:
        assert line in found, (kind, found)


def test_modules_stay_under_400_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for p in module_names(ROOT, PACKAGE).values()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
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


def test_studies_have_their_own_room():
    """Experiments that ask whether a method trains better (a plan committed before their results) live in
    ``studies/<name>/``; ``benchmarks/`` measures speed and agreement and holds no study (no plan module). A study's
    modules stay under the same 400 lines."""
    assert sorted(p.name for p in (ROOT / "benchmarks").glob("*.py") if "plan" in p.stem) == []
    assert (ROOT / "studies" / "credit" / "credit.py").is_file()
    long = {
        str(p.relative_to(ROOT)): n
        for p in sorted((ROOT / "studies").rglob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


@pytest.mark.parametrize("name", ["torch", "transformers", "gradio"])
def test_names_imports_nothing_heavy(name):
    import subprocess
    import sys

    code = f"import mrtpo_viz.names, mrtpo_viz.tasks, sys; print({name!r} in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"
