"""The reader's app as an image (`make yourapp`): the servers' image (yourapp/Dockerfile-servers, at the Python the
reader chose), then the app's requirements in one layer and its folder above it (yourapp/Dockerfile-app, built with
the app's folder as the context and the Dockerfile on stdin: nothing of the app is copied into this repository).

The requirements are read here, on the host (bench/modes/yourapp/requirements.py), and written into the
Dockerfile as the file pip reads, line by line: the layer is rebuilt only when they change. A folder that is a
project (a pyproject.toml with a [build-system]) is installed as one, `pip install -e /app`, above its copy."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.containers.compose import remove_replaced_images
from bench.containers.images import legacy_builder
from bench.containers.scenarios import ROOT
from bench.modes.yourapp.errors import docker_build_failure, last_line, pip_failure
from bench.modes.yourapp.requirements import (
    AppError,
    Project,
    read_requirements,
    replaced_pins_line,
    replaced_server_pins,
    server_pins,
    src_layout,
    unpatchable,
)

# What the mode takes from here; AppError and last_line live in the modules that read requirements and words.
__all__ = ["AppError", "AppSource", "app_source", "build_app_image", "last_line", "pins_said", "server_versions"]

HERE = ROOT / "yourapp"
SERVERS = "flask-playground/yourapp-servers"
# Where the image keeps the requirements as pip read them: a record of what was installed, beside the entry module.
REQUIREMENTS_IN_IMAGE = "/srv/yourapp/app-requirements.txt"
CONSTRAINTS_IN_IMAGE = "/srv/yourapp/app-constraints.txt"
# A RUN line is one argument of `sh -c`, which Linux caps at 128 KiB (MAX_ARG_STRLEN): a lock with every wheel's hash
# can pass that, so its lines are written in RUNs of at most this many characters each.
RUN_CHARACTERS = 64_000


@dataclass(frozen=True)
class AppSource:
    folder: Path
    requirements: tuple[str, ...]  # the requirements file pip reads: a requirement (markers, hashes) or an option each
    python: str  # the image's Python version, 3.14 unless the reader chose one
    constraints: tuple[str, ...] = ()  # its `-c` files' lines
    project: Project | None = None  # the folder installed as a project (`pip install -e /app`)
    src_layout: bool = False  # its code under src/, put on the import path
    # Read from its requirements once, before the build: those gevent cannot patch (each with its fix), and the
    # servers' pins they replace (each with the app's requirement that does it).
    unpatchable: dict[str, str] = field(default_factory=dict)
    replaced_pins: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The image's name: the folder's, lower-cased to what a Docker tag allows."""
        return re.sub(r"[^a-z0-9]+", "-", self.folder.resolve().name.lower()).strip("-") or "app"

    @property
    def image(self) -> str:
        return f"flask-playground/yourapp-{self.name}:py{self.python}"


def app_source(folder: Path, requirements: Path | None, python: str) -> AppSource:
    if not folder.is_dir():
        raise AppError(f"{folder}: no such folder")
    if not re.fullmatch(r"3\.\d+", python):
        raise AppError(f"PYTHON_VERSION={python}: a CPython version such as 3.12")
    found = read_requirements(folder, requirements)
    return AppSource(
        folder, found.lines, python, found.constraints, found.project, src_layout(folder), unpatchable(found.lines),
        replaced_server_pins(found.lines, python),
    )  # fmt: skip


def build(command: list[str], dockerfile: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, input=dockerfile, capture_output=True, text=True, env=legacy_builder(), cwd=ROOT)


def build_servers_image(python: str) -> str:
    image = f"{SERVERS}:py{python}"
    command = [
        "docker",
        "build",
        "--quiet",
        "--build-arg",
        f"PYTHON_VERSION={python}",
        "--tag",
        image,
        "--file",
        str(HERE / "Dockerfile-servers"),
        str(HERE),
    ]
    done = build(command)
    if done.returncode != 0:
        raise AppError(f"building {image} failed: {docker_build_failure(done.stdout + done.stderr)}")
    return image


def written_file(lines: tuple[str, ...], path: str) -> list[str]:
    """RUN lines that write `lines` to `path` in the image, one quoted line each (a `\\` continuation between): as
    few RUNs as RUN_CHARACTERS allows, the first creating the file, the others adding to it."""
    runs: list[list[str]] = [[]]
    for line in lines:
        quoted = shlex.quote(line)
        if runs[-1] and sum(len(item) + 7 for item in runs[-1]) + len(quoted) > RUN_CHARACTERS:
            runs.append([])
        runs[-1].append(quoted)
    written = []
    for number, chunk in enumerate(runs):
        body = "".join(f" \\\n    {item}" for item in chunk)
        written.append(f"RUN printf '%s\\n'{body} \\\n    {'>' if number == 0 else '>>'} {path}")
    return written


def install_lines(source: AppSource) -> list[str]:
    """The requirements layer: the file pip reads, written as it was read, then installed with `-r`, where pip reads
    each line's markers and `--hash` options as in the reader's own file."""
    if not source.requirements:
        return []
    lines = written_file(source.requirements, REQUIREMENTS_IN_IMAGE)
    constrained = ""
    if source.constraints:
        lines += written_file(source.constraints, CONSTRAINTS_IN_IMAGE)
        constrained = f" -c {CONSTRAINTS_IN_IMAGE}"
    return [*lines, f"RUN pip install --no-cache-dir -r {REQUIREMENTS_IN_IMAGE}{constrained}"]


def project_lines(source: AppSource) -> list[str]:
    """Above the folder's copy: src/ on the import path, and the project installed from it: editable, so that its
    code stays at /app, where Flask finds its instance folder and the profiles and gevent's monitor name the app's
    own frames; with its dependencies, the ones no file the harness reads lists (Poetry 1's) among them."""
    lines = ["ENV PYTHONPATH=/app/src:/app:/srv/yourapp"] if source.src_layout else []
    if source.project:
        lines.append(f"RUN pip install --no-cache-dir --editable {shlex.quote(f'/app{source.project.extras}')}")
    return lines


def app_dockerfile(source: AppSource, servers: str) -> str:
    text = (HERE / "Dockerfile-app").read_text()
    return (
        text.replace("ARG SERVERS=flask-playground/yourapp-servers:py3.14", f"ARG SERVERS={servers}")
        .replace("{install}", "\n".join(install_lines(source)))
        .replace("{project}", "\n".join(project_lines(source)))
    )


def build_app_image(source: AppSource) -> str:
    """The servers' image, then the app's on it; its tag. AppError, in one line, where a requirement does not install
    or build (named, with the Python it was tried on and pip's cause) or the build fails otherwise (its error line)."""
    servers = build_servers_image(source.python)
    dockerfile = app_dockerfile(source, servers)
    digest = hashlib.sha256(dockerfile.encode()).hexdigest()[:12]
    # --force-rm: a requirement that does not install leaves no stopped container of the failed step behind.
    command = [
        "docker",
        "build",
        "--quiet",
        "--force-rm",
        "--label",
        f"org.flask-playground.yourapp={digest}",
        "--tag",
        source.image,
        "--file",
        "-",
        str(source.folder.resolve()),
    ]
    done = build(command, dockerfile)
    if done.returncode != 0:
        output = done.stdout + done.stderr
        said = pip_failure(output, source.python)
        if said:
            raise AppError(f"{source.folder}: {said}")
        raise AppError(f"{source.folder}: building the app's image failed: {docker_build_failure(output)}")
    remove_replaced_images()
    return source.image


# Run in the built image: each named distribution's version as installed there (absent where it is not).
_VERSIONS = (
    "import importlib.metadata as m, json, sys\n"
    "found = {}\n"
    "for name in sys.argv[1:]:\n"
    "    try: found[name] = m.version(name)\n"
    "    except m.PackageNotFoundError: pass\n"
    "print(json.dumps(found))"
)


def installed_versions(image: str, names: list[str]) -> dict[str, str]:
    """The versions the app's image holds of these packages: what every way runs, whatever the app's requirements
    put over the servers' pins. Read from a container of the image, without network, removed at once."""
    command = ["docker", "run", "--rm", "--network", "none", image, "python", "-c", _VERSIONS, *names]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise AppError(f"reading {image}'s packages failed: {docker_build_failure(done.stdout + done.stderr)}")
    found = json.loads(done.stdout)
    return {str(name): str(version) for name, version in found.items()}


def pins_said(source: AppSource) -> str | None:
    """Before the build: the one line naming the servers' pins the app's requirements replace, or None."""
    return replaced_pins_line(source.replaced_pins) if source.replaced_pins else None


def server_versions(source: AppSource) -> tuple[dict[str, Any], str | None]:
    """After the build: the servers' packages as the app's image holds them, for the record ({"pinned": the servers'
    pins, "ran": the versions every way runs, "replaced": those that differ}), and a line for the ones replaced that
    the app's requirements did not name (a dependency of theirs asked for another), or None."""
    pins = server_pins()
    ran = installed_versions(source.image, sorted(pins))
    replaced = {name: ran.get(name, "absent") for name, pin in pins.items() if ran.get(name) != pin}
    unnamed = {name: version for name, version in replaced.items() if name not in source.replaced_pins}
    each = ", ".join(f"{name} {pins[name]} -> {version}" for name, version in unnamed.items())
    said = f"the app's image holds other servers' versions than their pins: {each}" if unnamed else None
    return {"pinned": pins, "ran": ran, "replaced": replaced}, said
