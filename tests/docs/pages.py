"""The documentation the docs tests read: the README and the pages under docs/ (not the linked trees: docs/results,
docs/assets and docs/model-card.md are links to benchmarks/results/, assets/ and the bundled policy's card), their
fenced Python blocks, and the repository paths they cite."""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
ROOTS = ("mrtpo_viz", "benchmarks", "studies", "scripts", "tests", "examples", "sample_data", "assets", "docs", ".ci")
"""Top-level folders of the repository: a token that starts with one of them and a slash is a cited path."""


def doc_files() -> list[Path]:
    """README.md and every markdown page under docs/ that is not (inside) a link to another tree."""
    pages = []
    for path in sorted(DOCS.rglob("*.md")):
        rel = path.relative_to(DOCS)
        if any((DOCS / Path(*rel.parts[: i + 1])).is_symlink() for i in range(len(rel.parts))):
            continue
        pages.append(path)
    return [REPO / "README.md"] + pages


@dataclass(frozen=True)
class Block:
    """One fenced ```python block of a page."""

    page: Path
    line: int
    """Line of its opening fence (1-based)."""
    code: str
    marker: str
    """The HTML comment right above the fence, if any: ``no-run: why`` or ``snippet: needs MODULE``."""

    @property
    def where(self) -> str:
        page = self.page.relative_to(REPO) if REPO in self.page.parents else self.page
        return f"{page}:{self.line}"


FENCE = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)
MARKER = re.compile(r"<!--\s*(.*?)\s*-->\s*\Z", re.S)


def python_blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        before = text[: m.start()].rstrip("\n")
        last = before.rsplit("\n", 1)[-1]
        marker = MARKER.search(last)
        out.append(Block(page, text.count("\n", 0, m.start()) + 1, m.group(1), marker.group(1) if marker else ""))
    return out


def needs(block: Block) -> str | None:
    """The module a ``snippet: needs MODULE`` block needs, when it is not installed."""
    m = re.match(r"snippet:\s*needs\s+([\w.]+)", block.marker)
    return m.group(1) if m and importlib.util.find_spec(m.group(1)) is None else None


PATH = re.compile(
    r"(?<![\w/.~-])((?:" + "|".join(re.escape(r) for r in ROOTS) + r")/(?:\{[^}\s]*\}|[^\s`'\"()\[\],;|])*)"
)


def cited_paths(text: str) -> list[str]:
    """Repository paths a page cites: every token that starts with a top-level folder and a slash, in inline code,
    fenced blocks, links and prose alike (a test name's ``::name`` and a trailing period are dropped)."""
    found = []
    for m in PATH.finditer(text):
        path = m.group(1).split("::")[0].split("#")[0].rstrip(".:")
        found.append(path)
    return found


def path_exists(path: str, root: Path = REPO) -> bool:
    """Whether a cited path exists; ``{md,csv}`` means each of them; ``<name>``, ``{field}`` and ``*`` are
    wildcards that must match something."""
    alternatives = re.search(r"\{([^}]*,[^}]*)\}", path)
    if alternatives:
        return all(
            path_exists(path[: alternatives.start()] + alt + path[alternatives.end() :], root)
            for alt in alternatives.group(1).split(",")
        )
    if re.search(r"[<{*]", path):
        pattern = re.sub(r"<[^>]*>|\{[^}]*\}", "*", path)
        return any(True for _ in root.glob(pattern.rstrip("/")))
    return (root / path).exists()


def missing_paths(text: str, root: Path = REPO) -> list[str]:
    return sorted({p for p in cited_paths(text) if not path_exists(p, root)})


LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """A heading's anchor, as mkdocs' toc extension makes it (and GitHub, for these headings)."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(h) for h in re.findall(r"^#{1,6}\s+(.+?)\s*#*$", text, re.M)}


def broken_links(page: Path) -> list[str]:
    """Relative links of a page whose file (or, into a markdown page, whose anchor) does not exist."""
    bad = []
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file) if file else page
        if not dest.exists():
            bad.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(target)
    return bad
