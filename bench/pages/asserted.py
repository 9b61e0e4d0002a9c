"""What the end-to-end tests assert, and the settings they run with, for docs/reliability.md and docs/hosts.md: no
result set keeps those tests' runs, so the pages state what a test holds a server to, not what one run measured.
Each bound and setting is read from the test's (or the app's, or a compose file's) source with `ast`, without
importing it (bench/ imports nothing of tests/): a test's constant, a name its function assigns, a parameter's
default, the right side of the comparison it asserts; an edit of the test changes the page's rendering."""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from bench.containers import doctor
from bench.pages.facts import FactError

ROOT = Path(__file__).resolve().parents[2]
OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
}
CONVERSIONS: dict[str, Callable[[Any], Any]] = {"float": float, "int": int, "str": str}
# A compose file's variable with its default: `${POSTGRES_POOL_MAX:-30}`.
DEFAULT = r"\$\{{{variable}:-([^}}]*)\}}"


class Unevaluable(FactError):
    """An expression of the source that is more than constants, the names before it and arithmetic."""


@cache
def tree(path: str, root: Path = ROOT) -> ast.Module:
    return ast.parse((root / path).read_text(), path)


def evaluate(node: ast.expr, names: dict[str, Any]) -> Any:
    """The value of an expression built of constants, known names, + - * /, tuples and lists, float()/int()/str(),
    and `os.environ.get(name, default)` (its default: what the test runs with unless told otherwise)."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
        return OPERATORS[type(node.op)](evaluate(node.left, names), evaluate(node.right, names))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -evaluate(node.operand, names)
    if isinstance(node, ast.Tuple | ast.List) and not any(isinstance(e, ast.Starred) for e in node.elts):
        return tuple(evaluate(element, names) for element in node.elts)
    conversion = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in CONVERSIONS
    if isinstance(node, ast.Call) and conversion and len(node.args) == 1 and not node.keywords:
        return CONVERSIONS[ast.unparse(node.func)](evaluate(node.args[0], names))
    if isinstance(node, ast.Call) and ast.unparse(node.func) == "os.environ.get" and len(node.args) == 2:
        return evaluate(node.args[1], names)
    raise Unevaluable(f"not a constant expression: {ast.unparse(node)}")


def assigned(statements: list[ast.stmt], names: dict[str, Any]) -> dict[str, Any]:
    """The names the statements assign, in order, each from the names before it (those it cannot evaluate left out)."""
    found = dict(names)
    for statement in statements:
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            targets, value = [statement.target], statement.value
        else:
            continue
        try:
            result = evaluate(value, found)
        except Unevaluable:
            continue
        for target in targets:
            if isinstance(target, ast.Name):
                found[target.id] = result
            elif isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
                found.update(zip((e.id for e in target.elts if isinstance(e, ast.Name)), result, strict=True))
    return found


@cache
def constants(path: str, root: Path = ROOT) -> dict[str, Any]:
    """The module-level names of a source file that are constants."""
    return assigned(tree(path, root).body, {})


def constant(path: str, name: str, root: Path = ROOT) -> Any:
    """A module-level constant of a source file: tests/test_faults.py's RECOVERY -> 10.0."""
    found = constants(path, root)
    if name not in found:
        raise FactError(f"{path} assigns no constant {name}")
    return found[name]


def function(path: str, name: str, root: Path = ROOT) -> ast.FunctionDef:
    for node in tree(path, root).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return node
    raise FactError(f"{path} defines no function {name}")


def statements_in(node: ast.AST) -> Iterator[ast.stmt]:
    """A function's statements, those inside `with`, `for` and `if` blocks too, in the order of the source."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt):
            yield child
            if not isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
                yield from statements_in(child)


def local(path: str, name: str, variable: str, root: Path = ROOT, **given: Any) -> Any:
    """A name a test's function assigns from constants: assert_a_stop_lets_requests_finish's `delay` -> 2.0.
    `given` names the function's parameters (a parametrized test's case)."""
    found = assigned(list(statements_in(function(path, name, root))), {**constants(path, root), **given})
    if variable not in found:
        raise FactError(f"{path}:{name} assigns no constant {variable}")
    return found[variable]


def keyword(path: str, name: str, callee: str, argument: str, root: Path = ROOT) -> Any:
    """The constant a test's function passes as a keyword to the one call of `callee` that has it: the clients of
    slow_api_dies_and_the_app_recovers's BackgroundLoad -> 100."""
    values = [
        word.value
        for node in ast.walk(function(path, name, root))
        if isinstance(node, ast.Call) and ast.unparse(node.func) == callee
        for word in node.keywords
        if word.arg == argument
    ]
    if len(values) != 1:
        raise FactError(f"{path}:{name} passes {argument} to {callee} {len(values)} times, not once")
    return evaluate(values[0], constants(path, root))


def default(path: str, name: str, parameter: str, root: Path = ROOT) -> Any:
    """A parameter's default: a_round_in_about_one_delay's `round_delay` -> 3.0."""
    arguments = function(path, name, root).args
    positional = arguments.posonlyargs + arguments.args
    pairs = list(zip(positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True) if d is not None]
    for argument, value in pairs:
        if argument.arg == parameter:
            return evaluate(value, constants(path, root))
    raise FactError(f"{path}:{name} has no parameter {parameter} with a default")


def bound(path: str, name: str, measured: str, root: Path = ROOT, **given: Any) -> Any:
    """The bound a test's function asserts on what it measured: the other side of the one comparison `assert` whose
    side is `measured` ("elapsed", "stopped_in", "result.percentiles_ms[100]"), evaluated from the test's constants,
    the function's names before it and `given` (its parameters)."""
    body = function(path, name, root)
    sides = [
        (node, node.test)
        for node in statements_in(body)
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare) and len(node.test.comparators) == 1
    ]
    found = [
        (node, test.comparators[0] if ast.unparse(test.left) == measured else test.left)
        for node, test in sides
        if measured in (ast.unparse(test.left), ast.unparse(test.comparators[0]))
    ]
    if len(found) != 1:
        raise FactError(f"{path}:{name} asserts {len(found)} comparisons of {measured}, not one")
    node, other = found[0]
    before = [statement for statement in statements_in(body) if statement.lineno < node.lineno]
    return evaluate(other, assigned(before, {**constants(path, root), **given}))


def parametrized(path: str, name: str, root: Path = ROOT) -> list[Any]:
    """The cases a test function is parametrized with (`@pytest.mark.parametrize(names, cases)`), each a value or a
    tuple of values."""
    for decorator in function(path, name, root).decorator_list:
        if isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith("mark.parametrize"):
            return list(evaluate(decorator.args[1], constants(path, root)))
    raise FactError(f"{path}:{name} is not parametrized")


def count(path: str, name: str, root: Path = ROOT) -> int:
    """How many entries a module-level tuple or list written out in the source holds: hostile_framing's CASES."""
    for node in tree(path, root).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if isinstance(target, ast.Name) and target.id == name and isinstance(value, ast.Tuple | ast.List):
            if any(isinstance(element, ast.Starred) for element in value.elts):
                raise FactError(f"{path}'s {name} is not written out")
            return len(value.elts)
    raise FactError(f"{path} writes out no tuple or list {name}")


def compose_default(paths: list[str], variable: str, root: Path = ROOT) -> str:
    """The default a compose file gives a variable (`${POSTGRES_POOL_MAX:-30}` -> "30"), the same in every file named
    and every place of each, else an error."""
    pattern = re.compile(DEFAULT.format(variable=re.escape(variable)))
    found = {value for path in paths for value in pattern.findall((root / path).read_text())}
    missing = [path for path in paths if not pattern.search((root / path).read_text())]
    if missing or len(found) != 1:
        raise FactError(f"{variable}'s default: {sorted(found)} in {paths}, none in {missing}")
    return found.pop()


# How the pages print them


def number(value: float) -> str:
    """A setting or a bound as prose writes it: 12.0 -> "12", 0.3 -> "0.3", 2.5 -> "2.5"."""
    return f"{value:g}"


def percent(fraction: float) -> str:
    """A relative bound as a percentage: 0.15 -> "15 %"."""
    return f"{fraction * 100:g} %"


def kilobytes(size: int) -> str:
    """A size in bytes in whole KB: 61439 -> "60"."""
    return f"{size / 1024:.0f}"


def ticks(seconds: float, tick_ms: float = 10) -> str:
    """A CPU time in the scheduler's ticks of 10 ms (what CPU time is counted in): 0.02 -> "2"."""
    return f"{seconds * 1000 / tick_ms:g}"


def options(arguments: tuple[str, ...], after: str) -> str:
    """The options of a command after those that name what it runs: SMALL_RUN's after its scenarios' names,
    "-n 10 -c 5 --delay 0.3"."""
    if after not in arguments:
        raise FactError(f"no {after} in {arguments}")
    rest = list(arguments[arguments.index(after) + 1 :])
    while rest and not rest[0].startswith("-"):
        rest.pop(0)
    return " ".join(rest)


# make doctor's lines of the committed sets and of docs/tests.md


def make_bench_takes(root: Path = ROOT) -> str:
    """make doctor's `make bench takes` line, from the committed sets (bench/containers/doctor.py)."""
    return doctor.make_bench_duration_line(doctor.committed_sets(root))


def make_test_takes(root: Path = ROOT) -> str:
    """make doctor's `make test takes` line, from docs/tests.md."""
    return doctor.make_test_duration_line(root / "docs" / "tests.md")


def ports() -> str:
    """The ports make doctor checks: those the compose files publish."""
    return ", ".join(map(str, doctor.PORTS))
