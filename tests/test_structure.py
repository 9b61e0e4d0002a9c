"""The harness's shape (docs/project.md, "The harness"): a package per layer, each importing only the layers below
it, renderers that run nothing, and every mode reachable from the Makefile and the render dispatch. Read from the
source with `ast`, no Docker: a module in the wrong room, an import circle, a private name borrowed across modules
or a mode nobody can run fails here, before it knots the house again."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
# Lowest first: a module imports from its own package or one before it, never one after. At the bottom the pure
# models (bench/models: ceilings, bounds, percentiles, medians, spreads), which import nothing of the harness. Then
# the result set's file (bench/results: its format, the record modes share, loading and saving): the measuring
# machinery writes through it, the renderers read through it, the modes do both, and it imports none of them. The
# renderers' shared drawing (bench/render) sits above the measuring machinery, which never draws a page. make bench's
# measuring, its record and its tables (bench/bench_run) sit above both, shared by the modes that measure as it does
# (bench, map, recommend). A mode
# (bench/modes) is a room of its own: a package holding its run, and its record and its renderer where no other mode
# shares them, which imports nothing of another mode; when its run ends it hands the set as it loads to its
# renderer, which reads results.json alone, so it needs nothing of what runs containers (and imports nothing that
# starts a process, below). The docs' pages (bench/pages) cite the sets of every mode; at the top, the modules that
# know every mode: bench/sets.py (each mode's record and renderer), make help's and the commands' entry points.
LAYERS = ("models", "results", "loadgen", "containers", "measure", "render", "bench_run", "modes", "pages", "top")
# bench/options.py: each mode's options declared, importing nothing of bench: as low as the records.
# `python -m bench up|down|ab|threads` (the Makefile's commands for one scenario), `python -m bench.modes` (make
# help), `python -m bench.render OUT` and bench/sets.py: at the top.
TOP = {
    "__main__": "top", "__init__": "loadgen", "options": "results", "sets": "top", "modes.__main__": "top",
    "render.__main__": "top",
}  # fmt: skip


def module_name(path: Path) -> str:
    """bench/render/shared.py -> "render.shared"; a package's __init__.py is the package: "render"."""
    parts = path.relative_to(BENCH).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)


MODULES = {module_name(path): path for path in sorted(BENCH.rglob("*.py"))}


def layer(module: str) -> str:
    return TOP.get(module) or module.split(".")[0]


def room(module: str) -> str | None:
    """The mode a module of bench/modes belongs to: "modes.latency.run" -> "latency", "modes.bench" -> "bench"."""
    parts = module.split(".")
    return parts[1] if parts[0] == "modes" and len(parts) > 1 and layer(module) == "modes" else None


def imports() -> dict[str, dict[str, set[str]]]:
    """Per module of bench/: the bench modules it imports, and the names it takes from each. `from bench.render
    import document` imports the module render.document; `from bench.render import render` takes a name of the
    package's __init__.py."""
    found: dict[str, dict[str, set[str]]] = {}
    for module, path in MODULES.items():
        mine: dict[str, set[str]] = {}
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "bench":
                source = node.module.removeprefix("bench").removeprefix(".")
                for alias in node.names:
                    submodule = f"{source}.{alias.name}" if source else alias.name
                    if submodule in MODULES:
                        mine.setdefault(submodule, set())
                    else:
                        mine.setdefault(source, set()).add(alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("bench."):
                        mine.setdefault(alias.name.removeprefix("bench."), set())
        found[module] = mine
    return found


IMPORTS = imports()


def imports_subprocess(module: str) -> bool:
    tree = ast.parse(MODULES[module].read_text())
    return any(
        (isinstance(node, ast.Import) and any(alias.name == "subprocess" for alias in node.names))
        or (isinstance(node, ast.ImportFrom) and node.module == "subprocess")
        for node in ast.walk(tree)
    )


def closure(module: str) -> set[str]:
    """Every bench module that importing this one runs, through the modules it imports."""
    seen: set[str] = set()
    stack = [module]
    while stack:
        for imported in IMPORTS[stack.pop()]:
            if imported not in seen:
                seen.add(imported)
                stack.append(imported)
    return seen


def test_every_module_lives_in_a_layer() -> None:
    """No module loose at the top: a new one goes in the package of its layer (or a new layer named here)."""
    assert {layer(module) for module in MODULES} <= set(LAYERS), sorted(MODULES)


def test_imports_resolve_to_modules() -> None:
    """Every `bench...` import names a module that exists: a stale path after a move fails here, not at run time."""
    unknown = {(module, imported) for module, found in IMPORTS.items() for imported in found}
    assert {pair for pair in unknown if pair[1] not in MODULES} == set()


@pytest.mark.parametrize("module", sorted(IMPORTS))
def test_no_import_from_a_higher_layer(module: str) -> None:
    rank = LAYERS.index(layer(module))
    higher = {imported for imported in IMPORTS[module] if LAYERS.index(layer(imported)) > rank}
    assert not higher, f"{module} ({layer(module)}) imports {sorted(higher)} from a higher layer"


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
    tree = ast.parse(MODULES[module].read_text())
    bench_names = {other.split(".")[-1] for other in IMPORTS[module]}
    borrowed |= {
        f"{node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bench_names
        if node.attr.startswith("_") and not node.attr.startswith("__")
    }
    assert not borrowed, borrowed


@pytest.mark.parametrize("module", sorted(IMPORTS))
def test_a_mode_imports_nothing_of_another(module: str) -> None:
    """A mode's room is its own: what two modes share lives in a layer below them."""
    mine = room(module)
    others = {imported for imported in IMPORTS[module] if mine and room(imported) not in (None, mine)}
    assert not others, (module, sorted(others))


@pytest.mark.parametrize("module", sorted(IMPORTS))
def test_nothing_imports_a_mode_s_run(module: str) -> None:
    """A run is started, not imported: only by its room's `python -m` entry and the entry points at the top (make
    help reads each run's options)."""
    runs = {imported for imported in IMPORTS[module] if (mode := room(imported)) and imported == run_module(mode)}
    own_entry = module.endswith(".__main__") and runs == {run_module(room(module) or "")}
    assert layer(module) == "top" or own_entry or not runs, (module, sorted(runs))


@pytest.mark.parametrize("module", sorted(m for m in MODULES if layer(m) == "models"))
def test_the_models_are_pure(module: str) -> None:
    """A model is a function of numbers: it imports nothing of the harness and starts nothing."""
    assert not IMPORTS[module] and not imports_subprocess(module), (module, sorted(IMPORTS[module]))


@pytest.mark.parametrize(
    "module",
    sorted(
        m
        for m in MODULES
        if layer(m) == "render" or (layer(m) in ("bench_run", "modes") and m.endswith((".render", ".rows", ".record")))
    ),
)
def test_renderers_run_nothing(module: str) -> None:
    """A set renders from its results.json alone: on any machine, without Docker, long after the run. So nothing a
    renderer imports, directly or through others, starts a process (a load generator's run, docker)."""
    runs = {other for other in closure(module) | {module} if imports_subprocess(other)}
    assert not runs, f"{module} imports, directly or not, {sorted(runs)}, which start processes"


# What a record may be built from besides fields named one by one: the target's own description (a scenario's
# Target.record_fields, a way's, a lab's lab_fields) and a typed step's fields (vars of a dataclass), or a step taken
# in whole (Record.with_measured). A dict built by string key and splatted in would let a misspelt key past mypy.
SPLATTED_FROM = ("record_fields", "lab_fields", "vars")
# Where a record's fields are set by name from a list of them: with_measured itself, and the bookstore's table,
# whose row shows the median of the repeats for each field of MEDIANS.
SET_BY_NAME = {"results.records", "modes.bookstore.rows"}


@pytest.mark.parametrize("module", sorted(set(MODULES) - SET_BY_NAME))
def test_records_are_built_from_typed_values(module: str) -> None:
    def name(node: ast.expr) -> str:
        return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""

    splatted = [
        f"line {node.lineno}: **{ast.unparse(keyword.value)}"
        for node in ast.walk(ast.parse(MODULES[module].read_text()))
        if isinstance(node, ast.Call) and (name(node.func) == "replace" or name(node.func).endswith("Result"))
        for keyword in node.keywords
        if keyword.arg is None
        if not (isinstance(keyword.value, ast.Call) and name(keyword.value.func) in SPLATTED_FROM)
    ]
    assert not splatted, splatted


# --- Adding a mode (docs/project.md): each step of the checklist, checked for every mode -----------------------

MODES = sorted({mode for mode in map(room, MODULES) if mode})


def run_module(mode: str) -> str:
    """The module that runs the mode: its room's run.py."""
    return f"modes.{mode}.run"


def renderer_module(mode: str) -> str:
    """Its room's render.py, or the renderer it shares with others below (make bench's tables)."""
    return f"modes.{mode}.render" if f"modes.{mode}.render" in MODULES else "bench_run.render"


def test_every_mode_is_a_room() -> None:
    """A package with its run and its `python -m` entry; no mode left as a module of bench/modes."""
    loose = [m for m in MODULES if layer(m) == "modes" and m.count(".") == 1 and MODULES[m].name != "__init__.py"]
    assert not loose, loose
    assert not [mode for mode in MODES if {run_module(mode), f"modes.{mode}.__main__"} - MODULES.keys()]


MAKEFILE = (ROOT / "Makefile").read_text()
PROJECT_DOC = (ROOT / "docs" / "project.md").read_text()


def test_there_are_modes() -> None:
    assert {"bench", "latency", "map", "slowclients", "labs", "bookstore"} <= set(MODES)


@pytest.mark.parametrize("mode", MODES)
def test_a_mode_has_its_kind_of_record(mode: str) -> None:
    """1. Its record typed (in its room's record.py, or in bench/bench_run), named in bench/sets.py's KINDS under the
    mode's name."""
    from bench import sets
    from bench.results.records import Record

    assert mode in sets.KINDS, f"bench/sets.py's KINDS has no entry {mode!r}"
    assert issubclass(sets.KINDS[mode].record, Record)
    if f"modes.{mode}.record" in MODULES:
        assert sets.KINDS[mode].record.__module__ == f"bench.modes.{mode}.record"


@pytest.mark.parametrize("mode", MODES)
def test_a_mode_has_a_main_and_a_result_set(mode: str) -> None:
    """2. bench/modes/<mode>/run.py with main(), which opens a ResultSet, finishes it and renders it."""
    tree = ast.parse(MODULES[run_module(mode)].read_text())
    functions = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    calls = {
        node.func.id if isinstance(node.func, ast.Name) else node.func.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute)
    }
    done = {"finish", "render"} <= calls
    assert "main" in functions and "ResultSet" in calls and done, (mode, sorted(functions))


@pytest.mark.parametrize("mode", MODES)
def test_a_mode_starts_its_scenarios_through_scenario_start(mode: str) -> None:
    """2. Every scenario a mode starts goes through bench/measure/scenario_start.py (ScenarioStart, or run_scenario
    which uses it): its images' packages recorded, and a scenario that fails turned into records, the same way in
    every mode. So a mode neither enters a scenario in a `with` of its own, nor reads packages, nor catches
    ScenarioError."""
    tree = ast.parse(MODULES[run_module(mode)].read_text())

    def name(node: ast.expr) -> str:
        return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""

    entered = {
        name(item.context_expr.func)
        for node in ast.walk(tree)
        if isinstance(node, ast.With)
        for item in node.items
        if isinstance(item.context_expr, ast.Call) and name(item.context_expr.func).endswith("Scenario")
    }
    called = {name(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    caught = {ast.unparse(node.type) for node in ast.walk(tree) if isinstance(node, ast.ExceptHandler) and node.type}
    assert not entered, f"bench/modes/{mode}.py enters {sorted(entered)} itself"
    assert "image_packages" not in called, f"bench/modes/{mode}.py reads the images' packages itself"
    assert not [c for c in caught if "ScenarioError" in c], f"bench/modes/{mode}.py catches ScenarioError"


@pytest.mark.parametrize("mode", MODES)
def test_a_mode_has_its_renderer_in_the_dispatch(mode: str) -> None:
    """3. Its renderer (its room's render.py, or bench/bench_run/render.py) with render(out, loaded), named in
    bench/sets.py under the mode's name, and the run itself imports it: its run ends by rendering its own set,
    nothing below the modes draws a page."""
    from bench import sets

    renderer = sets.KINDS[mode].renderer
    assert renderer.__name__ == f"bench.{renderer_module(mode)}" and callable(renderer.render), renderer.__name__
    assert renderer_module(mode) in IMPORTS[run_module(mode)], f"{run_module(mode)} does not import its renderer"


@pytest.mark.parametrize("mode", MODES)
def test_a_mode_has_its_make_target(mode: str) -> None:
    """4. A make target of the same name that runs it, with its `##` help line for `make help`."""
    assert re.search(rf"^{mode}: .*## ", MAKEFILE, re.M), f"no `{mode}:` target with a ## help line in the Makefile"
    assert re.search(rf"-m bench\.modes\.{mode}\b", MAKEFILE), f"the Makefile never runs python -m bench.modes.{mode}"


def test_the_makefile_runs_only_modes_that_exist() -> None:
    ran = set(re.findall(r"-m bench\.modes\.(\w+)", MAKEFILE))
    assert ran <= set(MODES), sorted(ran - set(MODES))


def test_the_render_dispatch_names_only_renderers_of_modes() -> None:
    """A renderer without its mode renders nothing new: every dispatch entry is a mode or one of its kinds."""
    from bench import sets

    kinds = {"sweep", "overload"}  # make sweep and make overload are make bench's modes (bench/modes/bench/run.py)
    assert set(sets.KINDS) <= set(MODES) | kinds, sorted(set(sets.KINDS) - set(MODES) - kinds)


def test_docs_show_every_layer_and_mode() -> None:
    """docs/project.md's picture names each package and each mode, so that it cannot fall behind the code."""
    missing = [f"bench/{name}/" for name in LAYERS if name != "top" and f"bench/{name}/" not in PROJECT_DOC]
    missing += ["bench/sets.py"] if "bench/sets.py" not in PROJECT_DOC else []
    missing += [f"modes/{mode}" for mode in MODES if f"{mode}.py" not in PROJECT_DOC and f"{mode}/" not in PROJECT_DOC]
    assert not missing, f"docs/project.md does not name {missing}"


# What a reader can take in at once: a module they read whole, a function on about one screen.
MODULE_LINES_MAX, FUNCTION_LINES_MAX = 450, 80


def test_no_module_or_function_is_longer_than_a_reader_takes_in() -> None:
    too_long = []
    for path in sorted(BENCH.rglob("*.py")):
        text = path.read_text()
        name = path.relative_to(ROOT)
        if len(text.splitlines()) > MODULE_LINES_MAX:
            too_long.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                lines = node.end_lineno - node.lineno + 1
                if lines > FUNCTION_LINES_MAX:
                    too_long.append(f"{name}:{node.lineno} {node.name}: {lines} lines")
    assert not too_long, f"over {MODULE_LINES_MAX} lines a module or {FUNCTION_LINES_MAX} a function: {too_long}"
