"""`make doctor`: what this machine has for the harness, on one screen. Docker's engine and Compose v2, whether
this machine's /proc shows the containers' processes (tested: a tiny container started and its PID looked for),
rootless or not, the Python, which load generators run here and which in a container instead, whether the
project's ports are free, and how long `make bench` and `make test` take.

It changes nothing and needs nothing but Python: each line says what it found, or why it could not tell."""

from __future__ import annotations

import json
import platform
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.containers.sampler import SAMPLER_IMAGE, sees_container
from bench.containers.scenarios import ROOT
from bench.results import store


def published_ports() -> tuple[int, ...]:
    """Every port a compose file of the project publishes on 127.0.0.1 (`"127.0.0.1:<port>:<port>"`), read from
    the files, so that a new scenario's port is checked without anyone listing it here."""
    published = re.compile(r"127\.0\.0\.1:(\d+):")
    return tuple(sorted({int(port) for file in ROOT.glob("*.yml") for port in published.findall(file.read_text())}))


PORTS = published_ports()
LOADGEN_TOOLS = {"ab": "apache2-utils", "hey": "hey", "wrk": "wrk", "vegeta": "bash .ci/vegeta (Go 1.22 or later)"}
BENCH_TIMES = re.compile(r"--(repeat|also) (\S+)")
TIMEOUT = 120  # seconds for any docker command: a first `docker run` may have to pull its image


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)


def _last_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = (result.stderr or result.stdout).strip().splitlines()
    return lines[-1] if lines else f"exit status {result.returncode}"


def python_line() -> str:
    version = platform.python_version()
    verdict = "ok" if sys.version_info >= (3, 11) else "TOO OLD: the harness needs 3.11 or later"
    return f"{version} ({sys.executable}): {verdict}"


def engine_info() -> dict[str, Any] | None:
    """`docker info` as JSON, or None where no engine answers."""
    if shutil.which("docker") is None:
        return None
    try:
        result = _run("docker", "info", "--format", "{{json .}}")
    except subprocess.TimeoutExpired:
        return None
    if result.returncode != 0:
        return None
    info = json.loads(result.stdout)
    return info if info.get("ServerVersion") else None


def engine_line(info: dict[str, Any] | None) -> str:
    if shutil.which("docker") is None:
        return "NO docker command: install Docker Engine (Linux) or Docker Desktop (macOS, Windows with WSL2)"
    if info is None:
        return "NO engine answers `docker info`: start it (or check DOCKER_HOST, the docker group)"
    where = info.get("OperatingSystem") or "?"
    return f"{info['ServerVersion']} on {where}, {info.get('NCPU')} cores, cgroup v{info.get('CgroupVersion', '?')}"


def rootless_line(info: dict[str, Any] | None) -> str:
    if info is None:
        return "unknown (no engine)"
    if any("rootless" in option for option in info.get("SecurityOptions") or []):
        return "yes: rootless Docker (its containers' cgroups are under your user's slice)"
    return "no"


def compose_line() -> str:
    if shutil.which("docker") is None:
        return "NO (no docker command)"
    result = _run("docker", "compose", "version", "--short")
    if result.returncode != 0:
        return "NO: `docker compose` fails; install the Compose v2 plugin (docker-compose-plugin), or .ci/compose-v2"
    version = result.stdout.strip()
    major = version.lstrip("v").split(".")[0]
    verdict = "ok" if major.isdigit() and int(major) >= 2 else "TOO OLD: the scenarios need Compose v2"
    return f"{version}: {verdict}"


def sees_processes() -> tuple[bool | None, str]:
    """Whether this machine's /proc shows a container's processes: a tiny container started (the sampler's image,
    which every app image is built from), its PID from `docker inspect` looked for here. None: could not tell."""
    started = _run("docker", "run", "--detach", "--rm", "--network", "none", SAMPLER_IMAGE, "sleep", "30")
    if started.returncode != 0:
        return None, f"could not start a container of {SAMPLER_IMAGE}: {_last_line(started)}"
    container = started.stdout.strip()
    try:
        pid = _run("docker", "inspect", "--format", "{{.State.Pid}}", container).stdout.strip()
        seen = pid.isdigit() and sees_container(int(pid), container)
    finally:
        _run("docker", "rm", "--force", container)
    if seen:
        return True, f"yes: the harness reads the containers' threads, memory and CPU here (PID {pid})"
    return False, (
        f"no (the engine's PID {pid} is not that container here: a VM, another machine or another PID namespace):"
        " the harness samples through the engine, in a container with its PIDs"
    )


def tool_lines() -> list[tuple[str, str]]:
    lines = []
    for tool, install in LOADGEN_TOOLS.items():
        found = shutil.which(tool)
        where = f"on this machine ({found})" if found else f"in a container instead (bench/loadgen/Dockerfile-{tool})"
        lines.append((tool, where if found else f"{where}; on this machine: {install}"))
    # The page test's browser: Chromium and its driver, both or neither.
    found = shutil.which("chromium") if shutil.which("chromedriver") else None
    install = "apt-get install chromium chromium-driver"
    where = f"on this machine ({found})" if found else "in a container instead (tests/Dockerfile-chromium)"
    lines.append(("chromium", where if found else f"{where}; on this machine: {install}"))
    return lines


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def ports_line() -> str:
    taken = [port for port in PORTS if not port_free(port)]
    if not taken:
        return f"{', '.join(map(str, PORTS))} on 127.0.0.1 all free"
    return f"TAKEN on 127.0.0.1: {', '.join(map(str, taken))} (a running scenario? `make down S=...`, `docker ps`)"


def committed_sets(root: Path = ROOT) -> list[Path]:
    listed = _run("git", "-C", str(root), "ls-files", "results/*/results.json")
    return [root / name for name in listed.stdout.split()] if listed.returncode == 0 else []


def make_bench_duration_line(sets: list[Path]) -> str:
    """From the committed `make bench` result set of the most scenarios (the newest of those), where it records its
    minutes: how long the whole run took, with the options it ran with."""
    runs = []
    for path in sets:
        metadata, records = store.read_json(path.parent)
        if metadata.get("mode") == "bench":
            # A run of a few scenarios (SCENARIOS=) takes a part of the whole: say how many it had.
            named = {record.get("scenario") for record in records} - {"reference-slow-api"}
            runs.append((len(named), metadata.get("date", ""), path.parent.name, metadata))
    if not runs:
        return "not recorded: no committed make bench result set"
    scenarios, date, name, metadata = max(runs, key=lambda run: run[:2])
    if metadata.get("minutes") is None:
        return f"not recorded: the largest committed set, results/{name} ({date[:10]}), does not say how long it ran"
    # Its repeats and extra loads, as make's options: they multiply its time.
    shown = " ".join(f"{option.upper()}={value}" for option, value in BENCH_TIMES.findall(metadata.get("command", "")))
    return (
        f"{metadata['minutes']:g} min for {scenarios} scenarios{f' ({shown})' if shown else ''}, results/{name}"
        f" ({date[:10]}, {metadata.get('cpu_count')} cores)"
    )


def make_test_duration_line(tests_doc: Path = ROOT / "docs" / "tests.md") -> str:
    text = tests_doc.read_text() if tests_doc.exists() else ""
    found = re.search(r"It takes about ([^:.]+?) once ([^:.]+?):", text)
    if not found:
        return "see docs/tests.md"
    return f"about {found[1]} once {found[2]} (docs/tests.md)"


def report(check_engine: bool = True, echo: Callable[[str], None] = print) -> list[tuple[str, str]]:
    """Every line of the report, each printed as it is known (a docker command may take a while)."""
    lines: list[tuple[str, str]] = []

    def say(label: str, value: str) -> None:
        lines.append((label, value))
        echo(f"{label + ':':22} {value}")

    say("Python", python_line())
    info = engine_info() if check_engine else None
    say("Docker engine", engine_line(info) if check_engine else "not checked")
    say("Compose v2", compose_line() if check_engine else "not checked")
    say("rootless", rootless_line(info))
    if info is not None:
        say("sees the containers", sees_processes()[1])
    else:
        say("sees the containers", "unknown (no engine)")
    for tool, where in tool_lines():
        say(tool, where)
    say("ports", ports_line())
    say("make bench takes", make_bench_duration_line(committed_sets()))
    say("make test takes", make_test_duration_line())
    return lines


if __name__ == "__main__":
    report()
