"""The reader's app as an image (`make yourapp`): the servers' image (yourapp/Dockerfile-servers, at the Python the
reader chose), then the app's requirements in one layer and its folder above it (yourapp/Dockerfile-app, built with
the app's folder as the context and the Dockerfile on stdin: nothing of the app is copied into this repository).

The requirements are read here, on the host, from the app's requirements.txt (its `-r` includes followed), from a
REQUIREMENTS= file, or from its pyproject.toml's [project] dependencies, and written into the Dockerfile's one
`pip install` line: the layer is rebuilt only when they change."""

from __future__ import annotations

import hashlib
import re
import shlex
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

from bench.containers.compose import remove_replaced_images
from bench.containers.images import legacy_builder
from bench.containers.scenarios import ROOT

HERE = ROOT / "yourapp"
SERVERS = "flask-playground/yourapp-servers"


class AppError(ValueError):
    """Bad input about the reader's app: its message is the one line the mode prints."""


@dataclass(frozen=True)
class AppSource:
    folder: Path
    requirements: tuple[str, ...]  # pip's arguments, one requirement or option each
    python: str  # the image's Python version, 3.14 unless the reader chose one

    @property
    def name(self) -> str:
        """The image's name: the folder's, lower-cased to what a Docker tag allows."""
        return re.sub(r"[^a-z0-9]+", "-", self.folder.resolve().name.lower()).strip("-") or "app"

    @property
    def image(self) -> str:
        return f"flask-playground/yourapp-{self.name}:py{self.python}"


def requirement_lines(path: Path, seen: frozenset[Path] = frozenset()) -> list[str]:
    """A requirements file's requirements and options, its `-r` includes followed (relative to it)."""
    if path.resolve() in seen:
        raise AppError(f"{path}: includes itself")
    lines: list[str] = []
    for number, raw in enumerate(path.read_text(errors="replace").splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        include = re.match(r"^(?:-r|--requirement)[\s=]+(\S+)$", line)
        if include:
            nested = path.parent / include[1]
            if not nested.is_file():
                raise AppError(f"{path}:{number}: included file not found: {include[1]}")
            lines += requirement_lines(nested, seen | {path.resolve()})
        elif line.startswith(("-e", "--editable")) or line.startswith((".", "/")):
            raise AppError(
                f"{path}:{number}: a local or editable requirement ({line}): the app's folder is copied whole"
            )
        else:
            lines += shlex.split(line)
    return lines


def read_requirements(folder: Path, requirements: Path | None = None) -> tuple[str, ...]:
    if requirements is not None:
        if not requirements.is_file():
            raise AppError(f"{requirements}: no such requirements file")
        return tuple(requirement_lines(requirements))
    if (folder / "requirements.txt").is_file():
        return tuple(requirement_lines(folder / "requirements.txt"))
    pyproject = folder / "pyproject.toml"
    if pyproject.is_file():
        try:
            project = tomllib.loads(pyproject.read_text()).get("project", {})
        except tomllib.TOMLDecodeError as error:
            raise AppError(f"{pyproject}: not TOML: {error}") from None
        dependencies = project.get("dependencies")
        if not isinstance(dependencies, list) or not dependencies:
            raise AppError(f"{pyproject}: no [project] dependencies (give REQUIREMENTS= a requirements file)")
        return tuple(str(item) for item in dependencies)
    raise AppError(f"{folder}: neither requirements.txt nor pyproject.toml (give REQUIREMENTS= a requirements file)")


def app_source(folder: Path, requirements: Path | None, python: str) -> AppSource:
    if not folder.is_dir():
        raise AppError(f"{folder}: no such folder")
    if not re.fullmatch(r"3\.\d+", python):
        raise AppError(f"PYTHON_VERSION={python}: a CPython version such as 3.12")
    return AppSource(folder, read_requirements(folder, requirements), python)


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
        raise AppError(f"building {image} failed: {last_line(done.stdout + done.stderr)}")
    return image


# pip's own words for a requirement it cannot install, and the pin they name.
_PIP_FAILURE = re.compile(
    r"(?:No matching distribution found for|Could not find a version that satisfies the requirement"
    r"|Failed to build|Failed building wheel for) (\S+)"
)


def last_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def app_dockerfile(source: AppSource, servers: str) -> str:
    install = "RUN pip install --no-cache-dir " + " ".join(shlex.quote(item) for item in source.requirements)
    text = (HERE / "Dockerfile-app").read_text()
    return text.replace("ARG SERVERS=flask-playground/yourapp-servers:py3.14", f"ARG SERVERS={servers}").replace(
        "{install}", install
    )


def build_app_image(source: AppSource) -> str:
    """The servers' image, then the app's on it; its tag. AppError, in one line, where a requirement does not install
    (named, with the Python it was tried on) or the build fails otherwise."""
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
        refused = _PIP_FAILURE.search(output)
        if refused:
            raise AppError(
                f"{source.folder}: {refused[1]} does not install on Python {source.python} (PYTHON_VERSION=)"
            )
        raise AppError(f"{source.folder}: building the app's image failed: {last_line(output)}")
    remove_replaced_images()
    return source.image
