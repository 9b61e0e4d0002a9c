"""What the harness sends a target from the client's side: one request that verifies it before it is trusted, and a
closed-loop load (Load: n requests from c clients) from a load generator (Client: ab, hey or wrk, on the host or in
a container on the scenario's network), warm-up included."""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass

import requests

from bench.containers.compose import RunningScenario
from bench.containers.images import build_on_first_use
from bench.containers.scenarios import Target
from bench.loadgen.closed_loop import LOADGENS, LoadGenerator

# A warm-up opens at most this many clients: past a few thousand, docker-proxy gives out (docs/many-clients.md).
WARM_CLIENTS_MAX = 1000


@dataclass(frozen=True)
class Load:
    """One load of a target: n requests from c clients, each waiting `delay` seconds on I/O and doing `cpu` units
    of CPU work (flask_app/cpu_work.py)."""

    n: int
    c: int
    delay: float
    cpu: int = 0


@dataclass(frozen=True)
class Client:
    """Where the load generator runs, "host" or "container", and which one it is."""

    place: str
    loadgen: LoadGenerator = LOADGENS["ab"]


def query(delay: float, cpu: int = 0) -> str:
    """The request every load generator sends: the I/O wait, and the CPU work only when there is some."""
    return f"?delay={delay:g}" + (f"&cpu={cpu}" if cpu else "")


def verify(target: Target, delay: float, cpu: int = 0) -> str | None:
    """Why the target cannot be trusted, or None. A fast answer is a broken server, not a fast one."""
    started = time.monotonic()
    try:
        response = requests.get(target.url + query(delay, cpu), timeout=delay + 30 + cpu / 100)
    except requests.RequestException as error:
        return f"no answer: {error.__class__.__name__}"
    took = time.monotonic() - started
    if response.status_code != 200:
        return f"status {response.status_code}"
    if response.text != target.expected_body(delay):
        return f"unexpected body {response.text[:60]!r}"
    if took < delay:
        return f"answered in {took:.2f} s, before the {delay:g} s delay"
    return None


def choose_client(wanted: str, loadgen: str = "ab") -> Client:
    """From the host where the tool is installed (auto), else from a container on the scenario's network."""
    tool = LOADGENS[loadgen]
    installed = shutil.which(tool.name) is not None
    place = wanted if wanted != "auto" else ("host" if installed else "container")
    if place == "host" and not installed:
        raise SystemExit(f"CLIENT=host needs {tool.name} on this machine: apt-get install {tool.package}")
    if place == "container":
        build_loadgen_image(tool.name)
    return Client(place, tool)


def build_loadgen_image(name: str) -> str:
    """flask-playground/<name> from bench/loadgen/Dockerfile-<name>, on the harness's engine; its tag."""
    return build_on_first_use(f"flask-playground/{name}", f"bench/loadgen/Dockerfile-{name}", "bench/loadgen")


def run_loadgen(
    target: Target, running: RunningScenario, client: Client, requests_total: int, concurrency: int, delay: float,
    cpu: int = 0,
) -> tuple[list[str], str]:  # fmt: skip
    """The client's load generator (ab, hey or wrk) against the target: its command and output."""
    loadgen = client.loadgen
    if client.place == "host":
        command = loadgen.command(target.url + query(delay, cpu), requests_total, concurrency, delay)
    else:
        inside = loadgen.command(target.url_inside + query(delay, cpu), requests_total, concurrency, delay)
        command = [*running.loadgen_run(loadgen.image), *inside]
    finished = subprocess.run(command, capture_output=True, text=True)
    return command, finished.stdout + finished.stderr


def warm_up(target: Target, running: RunningScenario, client: Client, clients: int) -> None:
    """Without the delay, at the load's concurrency: connections, pools and threads opened before the measurement."""
    warm = min(clients, WARM_CLIENTS_MAX)
    run_loadgen(target, running, client, warm * 2, warm, 0)
