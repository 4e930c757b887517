"""docs/ARCHITECTURE.md tells the truth about the tree: every module of the package is in its
module map, every repository path and ``fvswe.`` name it gives exists, and every recipe lists
files that exist. Also the docs site: mkdocs.yml's nav has every page, and CI's build counts
every warning."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from fvswe.backends.cuda_header import HEADERS

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
TEXT = DOC.read_text(encoding="utf-8")
#: Code spans of the page.
SPANS = re.findall(r"`([^`\n]+)`", TEXT)
#: A span that is a repository path: path characters only, at least one slash; ``<name>``
#: stands for a file to create, ``*`` for a glob, ``::name`` for a test in the file.
PATH = re.compile(r"^[\w.\-<>*]+(?:/[\w.\-<>*]*)+(?:::\w+)?$")
#: A span that names a package object.
DOTTED = re.compile(r"^fvswe(?:\.\w+)+$")


def package_modules() -> list[str]:
    """Every module file of fvswe/: the Python modules and the CUDA sources."""
    package = ROOT / "fvswe"
    files = [*package.rglob("*.py"), *(package / "backends" / "cuda").glob("*.cu*")]
    return sorted(str(f.relative_to(ROOT)) for f in files if "__pycache__" not in f.parts)


def problem(span: str) -> str | None:
    """Why a path span names nothing in the tree, or None."""
    path, _, test = span.partition("::")
    if "*" in path:
        return None if list(ROOT.glob(path)) else "matches no file"
    if "<" in path:  # a file the recipe creates: its folder exists
        folder = ROOT / path.rsplit("/", 1)[0]
        return None if folder.is_dir() else "its folder does not exist"
    target = ROOT / path
    if not target.exists():
        return "does not exist"
    if test and not re.search(rf"^def {test}\b", target.read_text(encoding="utf-8"), re.M):
        return f"has no test {test}"
    return None


def resolves(name: str) -> bool:
    """Whether ``fvswe.a.b.c`` is a module, or an attribute of the longest module prefix."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for attr in parts[k:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def recipes() -> dict[str, list[str]]:
    """Per recipe heading of section 5, the code spans of its numbered steps."""
    section = TEXT.split("\n## 5. Recipes", 1)[1].split("\n## ", 1)[0]
    out: dict[str, list[str]] = {}
    for block in re.split(r"\n### ", section)[1:]:
        title, _, body = block.partition("\n")
        steps = re.findall(r"^\d+\. (.*(?:\n {3}.*)*)", body, re.M)
        out[title] = [s for step in steps for s in re.findall(r"`([^`\n]+)`", step)]
    return out


def test_every_module_is_in_the_module_map():
    missing = [m for m in package_modules() if f"`{m}`" not in TEXT]
    assert len(package_modules()) > 80
    assert not missing, f"docs/ARCHITECTURE.md does not name {missing}"


def test_every_path_it_names_exists():
    paths = [s for s in SPANS if PATH.match(s)]
    assert len(paths) > 100
    bad = {p: problem(p) for p in paths if problem(p)}
    assert not bad, bad


def test_every_package_name_it_gives_resolves():
    names = sorted({s for s in SPANS if DOTTED.match(s)})
    assert len(names) > 10
    bad = [n for n in names if not resolves(n)]
    assert not bad, bad


@pytest.mark.parametrize("title", list(recipes()))
def test_every_file_a_recipe_lists_exists(title):
    """A recipe's steps name files, each a path of the tree (or a file the recipe creates in
    a folder that exists), a CUDA source of the tree or a generated header."""
    spans = recipes()[title]
    paths = [s for s in spans if PATH.match(s)]
    assert paths, f"recipe {title!r} names no file"
    bad = {p: problem(p) for p in paths if problem(p)}
    sources = {f.name for f in (ROOT / "fvswe" / "backends" / "cuda").iterdir()} | set(HEADERS)
    bare = [s for s in spans if re.fullmatch(r"[\w.]+\.cuh?", s) and s not in sources]
    assert not bad and not bare, (bad, bare)


def test_the_recipes_are_all_there():
    """The eight recipes of issue 26, in order."""
    letters = [title[1] for title in recipes()]
    assert letters == list("abcdefgh"), list(recipes())


def test_the_site_lists_every_page_and_ci_counts_every_warning():
    """An omitted page is a warning of ``mkdocs build --strict``, but ``--quiet`` stops it
    from being counted (mkdocs 1.6): CI builds without it, and the nav has every page."""
    nav = set(re.findall(r"^\s*- [^:\n]+: (\S+\.md)$", (ROOT / "mkdocs.yml").read_text(), re.M))
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert nav == pages
    builds = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
              if line.startswith("mkdocs build")]  # fmt: skip
    assert builds and all("--strict" in b and "--quiet" not in b for b in builds)
