"""The reader's requirements as pip reads them in the app's image (bench/modes/yourapp/image.py writes them into
its Dockerfile), read here on the host: a requirements file's logical lines, as pip joins and strips them (a hashed
lock's `\\` continuations joined, comments dropped, `-r` includes inlined, `-c` constraints gathered into a file of
their own), each line kept whole, markers and `--hash` options with it; else a pyproject.toml's [project]
dependencies. Beside them: whether the folder is a project pip installs (a pyproject.toml with a [build-system], or
`-e .`), whether its code sits under src/, and which of the servers' pins the app's requirements replace."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName, default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from bench.containers.scenarios import ROOT

SERVERS_REQUIREMENTS = ROOT / "yourapp" / "requirements-servers.txt"
# pip's own comment rule (pip/_internal/req/req_file.py, COMMENT_RE): a `#` at the start or after whitespace, so that
# a URL's `#sha256=` or `#egg=` stays.
COMMENT = re.compile(r"(^|\s+)#.*$")
INCLUDE = re.compile(r"^(?:-r|--requirement)(?:\s*=\s*|\s+|(?=[^\s-]))(\S+)$")
CONSTRAINT = re.compile(r"^(?:-c|--constraint)(?:\s*=\s*|\s+|(?=[^\s-]))(\S+)$")
EDITABLE = re.compile(r"^(?:-e|--editable)(?:\s*=\s*|\s+)(\S+)$")
# A requirement's own options after it (`--hash=...`, `--config-settings ...`): not part of what it names.
OWN_OPTIONS = re.compile(r"\s+--?[A-Za-z]")


class AppError(ValueError):
    """Bad input about the reader's app: its message is the one line the mode prints."""


@dataclass(frozen=True)
class Project:
    """The app's folder as a Python project, installed with `pip install -e /app` once it is copied (pip builds it
    with the backend its [build-system] names); its extras where `-e .[extra]` asked for them."""

    backend: str
    extras: str = ""


@dataclass(frozen=True)
class AppRequirements:
    lines: tuple[str, ...] = ()  # the requirements file pip reads: a requirement (markers, hashes) or an option each
    constraints: tuple[str, ...] = ()  # the `-c` files' lines
    project: Project | None = None


def logical_lines(text: str) -> list[tuple[int, str]]:
    """The lines pip reads, each with the number of its first physical line: a line ending in `\\` continued on the
    next (how lock exports put each `--hash` on a line of its own), comments dropped, whitespace runs made one."""
    joined: list[tuple[int, str]] = []
    pending: list[str] = []
    first = 0
    for number, line in enumerate(text.splitlines(), 1):
        if line.endswith("\\") and not COMMENT.match(line):
            first = first if pending else number
            pending.append(line[:-1])
        elif pending:
            joined.append((first, "".join(pending) + (" " + line if COMMENT.match(line) else line)))
            pending = []
        else:
            joined.append((number, line))
    if pending:
        joined.append((first, "".join(pending)))
    stripped = ((number, " ".join(COMMENT.sub("", line).split())) for number, line in joined)
    return [(number, line) for number, line in stripped if line]


def project_of(folder: Path) -> Project | None:
    """The folder as a project pip installs: a pyproject.toml with a [build-system] (setuptools' legacy backend
    where it names none, as pip takes it). None for a folder of modules, imported by path only."""
    build_system = pyproject_of(folder).get("build-system")
    if isinstance(build_system, dict):
        return Project(str(build_system.get("build-backend") or "setuptools.build_meta:__legacy__"))
    return None


def pyproject_of(folder: Path) -> dict[str, Any]:
    path = folder / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise AppError(f"{path}: not TOML: {error}") from None


def local_target(line: str) -> str | None:
    """What an editable or local line installs (`-e .`, `./`, `file:.`), or None for a requirement of the index."""
    editable = EDITABLE.match(line)
    target = editable[1] if editable else line
    if editable or target.startswith((".", "/", "file:")):
        return target.removeprefix("file:")
    return None


class RequirementsFile:
    """One requirements file read as pip reads it, its includes and constraint files followed (relative to the file
    that names them); a local requirement is the app's own folder or an error."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder.resolve()
        self.lines: list[str] = []
        self.constraints: list[str] = []
        self.project_extras: str | None = None  # set where a line installs the app's own folder (`-e .`)

    def read(self, path: Path, seen: frozenset[Path] = frozenset(), into: list[str] | None = None) -> None:
        if path.resolve() in seen:
            raise AppError(f"{path}: includes itself")
        into = self.lines if into is None else into
        for number, line in logical_lines(path.read_text(errors="replace")):
            include, constraint = INCLUDE.match(line), CONSTRAINT.match(line)
            if named := include or constraint:
                nested = path.parent / named[1]
                if not nested.is_file():
                    raise AppError(f"{path}:{number}: included file not found: {named[1]}")
                self.read(nested, seen | {path.resolve()}, into if include else self.constraints)
            elif (target := local_target(line)) is not None:
                self.local(path, number, line, target)
            else:
                into.append(line)

    def local(self, path: Path, number: int, line: str, target: str) -> None:
        """`-e .` (uv's and pip-tools' exports write it for the project itself): the app's folder, installed as a
        project once it is copied. Any other local path is not in the image when the requirements install."""
        where, _, extras = target.partition("[")
        for base in (path.parent, self.folder):
            if (base / where).resolve() == self.folder:
                self.project_extras = f"[{extras}" if extras else ""
                return
        raise AppError(
            f"{path}:{number}: a local or editable requirement ({line}): the requirements install before the app's"
            " folder is in the image, and of local paths only the folder itself (`-e .`) is installed, after it"
        )


def requirements_file(folder: Path, path: Path) -> AppRequirements:
    found = RequirementsFile(folder)
    found.read(path)
    project = project_of(folder)
    if found.project_extras is not None:
        # `-e .` of a folder with a setup.py and no [build-system]: setuptools builds it, as pip would.
        if project is None and not (folder / "setup.py").is_file():
            raise AppError(f"{path}: `-e .` installs {folder} as a project, and it has no [build-system] nor setup.py")
        project = Project(project.backend if project else "setup.py", found.project_extras)
    return AppRequirements(tuple(found.lines), tuple(found.constraints), project)


def read_requirements(folder: Path, requirements: Path | None = None) -> AppRequirements:
    """REQUIREMENTS=, else the folder's requirements.txt, else its pyproject.toml's [project] dependencies; a folder
    with a [build-system] is installed as a project too (pip then adds what its backend declares and no file said,
    Poetry 1's [tool.poetry.dependencies] among them)."""
    if requirements is not None:
        if not requirements.is_file():
            raise AppError(f"{requirements}: no such requirements file")
        return requirements_file(folder, requirements)
    if (folder / "requirements.txt").is_file():
        return requirements_file(folder, folder / "requirements.txt")
    if not (folder / "pyproject.toml").is_file():
        raise AppError(
            f"{folder}: neither requirements.txt nor pyproject.toml (give REQUIREMENTS= a requirements file)"
        )
    dependencies = pyproject_of(folder).get("project", {}).get("dependencies") or []
    project = project_of(folder)
    if not isinstance(dependencies, list) or (not dependencies and project is None):
        raise AppError(
            f"{folder / 'pyproject.toml'}: no [project] dependencies and no [build-system] (give REQUIREMENTS= a"
            " requirements file)"
        )
    return AppRequirements(tuple(" ".join(str(item).split()) for item in dependencies), project=project)


def src_layout(folder: Path) -> bool:
    """Whether the app's code sits under src/ (a package or a module there): src/ then goes on the import path, as
    an installed project would have it."""
    src = folder / "src"
    if not src.is_dir():
        return False
    return any((entry / "__init__.py").is_file() or entry.suffix == ".py" for entry in src.iterdir())


def named_requirement(line: str) -> Requirement | None:
    """The requirement a line names, its own options (`--hash`) left off; None for an option or an unnamed URL."""
    if line.startswith("-"):
        return None
    try:
        return Requirement(OWN_OPTIONS.split(line, maxsplit=1)[0])
    except InvalidRequirement:
        return None


def server_pins(path: Path = SERVERS_REQUIREMENTS) -> dict[str, str]:
    """The servers' image's pins (yourapp/requirements-servers.txt): each package's normalized name and version."""
    pins: dict[str, str] = {}
    for _, line in logical_lines(path.read_text()):
        requirement = named_requirement(line)
        versions = [spec.version for spec in requirement.specifier if spec.operator == "=="] if requirement else []
        if requirement and versions:
            pins[canonicalize_name(requirement.name)] = versions[0]
    return pins


def image_markers(python: str) -> dict[str, str]:
    """The environment markers of the app's image: CPython `python` on Linux (this machine's architecture)."""
    return {
        **{key: str(value) for key, value in default_environment().items()},
        "python_version": python,
        "python_full_version": f"{python}.0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "sys_platform": "linux",
        "platform_system": "Linux",
        "os_name": "posix",
    }


def applies(requirement: Requirement, python: str) -> bool:
    if requirement.marker is None:
        return True
    try:
        return requirement.marker.evaluate(image_markers(python))
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return True  # pip decides in the image; naming a pin that may not apply is the safer mistake


def replaced_server_pins(lines: tuple[str, ...], python: str, pins: dict[str, str] | None = None) -> dict[str, str]:
    """The servers' packages the app's requirements install over the servers' pins: each one's name and the app's
    requirement that does it (an old `gunicorn==` or `greenlet<2`; a range the servers' pin satisfies is not)."""
    pins = server_pins() if pins is None else pins
    replaced: dict[str, str] = {}
    for line in lines:
        requirement = named_requirement(line)
        if requirement is None or not applies(requirement, python):
            continue
        name = canonicalize_name(requirement.name)
        if name not in pins:
            continue
        if requirement.url or not requirement.specifier.contains(pins[name], prereleases=True):
            replaced[name] = str(requirement)
    return replaced


def replaced_pins_line(replaced: dict[str, str], pins: dict[str, str] | None = None) -> str:
    """The one line said before the run about them."""
    pins = server_pins() if pins is None else pins
    each = ", ".join(f"{requirement} (the servers' {pins[name]})" for name, requirement in replaced.items())
    return f"the app's requirements replace the servers' pins: {each}; every way runs the app's"


# C libraries whose waits no monkey-patch reaches (docs/labs.md: the blocking-call lab), by their PyPI name, with
# the fix. A greenlet waiting inside one holds the whole process.
UNPATCHABLE = {
    "psycopg2": "psycogreen's patch_psycopg() in the worker (gunicorn's post_fork), or psycopg 3",
    "psycopg2-binary": "psycogreen's patch_psycopg() in the worker (gunicorn's post_fork), or psycopg 3",
    "mysqlclient": "PyMySQL (pure Python, patched with the socket module)",
    "pylibmc": "pymemcache (pure Python)",
    "python-ldap": "ldap3 (pure Python)",
    "grpcio": "grpc.experimental.gevent.init_gevent() before any channel is made",
    "confluent-kafka": "its calls in gevent's threadpool (hub.threadpool.apply), or a pure-Python client",
    "pymssql": "its calls in gevent's threadpool (hub.threadpool.apply)",
    "cassandra-driver": "its GeventConnection (cluster.connection_class)",
    "oracledb": "its default thin mode (thick mode waits in C)",
}


def unpatchable(requirements: tuple[str, ...]) -> dict[str, str]:
    """The requirements gevent cannot patch, each with its fix."""
    named = (named_requirement(line) for line in requirements)
    names = (canonicalize_name(requirement.name) for requirement in named if requirement is not None)
    return {name: UNPATCHABLE[name] for name in names if name in UNPATCHABLE}
