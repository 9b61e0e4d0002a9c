"""The harness's shape (docs/project.md, "The harness"): machinery below, modes on top, renderers apart. Read from the
source with `ast`, no Docker: an import circle, a private name borrowed across modules, a renderer that starts
containers or a machinery module that knows a mode fails here, before it knots the house again."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
# The commands: each declares its loads and its table and calls the machinery; nothing imports them.
MODES = {"run", "map", "latency", "slowclients", "labs", "bookstore", "__main__"}
# Rendering: from results.json alone. No Docker, no load, no mode.
RENDERERS = {"render", "report", "html_report", "pages", "latency_report", "slowclients_report", "map_report",
             "labs_report", "bookstore_report"}  # fmt: skip
RUNS_THINGS = {"compose", "roles", "sampler", "measure", "images", "resultset", "pgbench"}


def imports() -> dict[str, dict[str, set[str]]]:
    """Per module of bench/: the bench modules it imports, and the names it takes from each."""
    found: dict[str, dict[str, set[str]]] = {}
    for path in sorted(BENCH.glob("*.py")):
        mine: dict[str, set[str]] = {}
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "bench":
                for alias in node.names:
                    mine.setdefault(alias.name, set())
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bench."):
                mine.setdefault(node.module.removeprefix("bench."), set()).update(a.name for a in node.names)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("bench."):
                        mine.setdefault(alias.name.removeprefix("bench."), set())
        found[path.stem] = mine
    return found


IMPORTS = imports()


def test_the_modules_named_here_exist() -> None:
    """A module renamed or removed must be renamed here too, or this test checks nothing about it."""
    assert (MODES | RENDERERS | RUNS_THINGS) - {"__main__"} <= IMPORTS.keys()


def test_no_import_circle() -> None:
    def visit(module: str, path: tuple[str, ...]) -> None:
        for imported in IMPORTS.get(module, {}):
            assert imported not in path, " -> ".join([*path, imported])
            visit(imported, (*path, imported))

    for module in IMPORTS:
        visit(module, (module,))


@pytest.mark.parametrize("module", sorted(IMPORTS))
def test_no_private_name_crosses_a_module(module: str) -> None:
    """What two modules share is public in the one that owns it: `from bench.x import _y` and `x._y` are borrowing."""
    borrowed = {f"{other}.{name}" for other, names in IMPORTS[module].items() for name in names if name.startswith("_")}
    tree = ast.parse((BENCH / f"{module}.py").read_text())
    bench_names = {other for other in IMPORTS[module]}
    borrowed |= {
        f"{node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bench_names
        if node.attr.startswith("_") and not node.attr.startswith("__")
    }
    assert not borrowed, borrowed


@pytest.mark.parametrize("module", sorted(IMPORTS))
def test_nothing_imports_a_mode(module: str) -> None:
    assert not (IMPORTS[module].keys() & MODES), (module, IMPORTS[module].keys() & MODES)


@pytest.mark.parametrize("module", sorted(RENDERERS & IMPORTS.keys()))
def test_renderers_run_nothing(module: str) -> None:
    """A set renders from its results.json alone: on any machine, without Docker, long after the run."""
    assert not (IMPORTS[module].keys() & RUNS_THINGS), (module, IMPORTS[module].keys() & RUNS_THINGS)
