"""What a running scenario's containers say of themselves, read through their engine: the interpreter and packages
of each image, a server's settings and command as Compose filled them in, its OS threads at rest, and what one
`?cpu=` unit of work costs in its image."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass

from bench.containers.compose import RunningScenario
from bench.containers.sampler import EngineSampler, os_threads, server_pids

# The app's settings that change its speed; each record keeps their values as the container had them.
APP_SETTINGS = (
    "SLOW_API_CLIENT", "GEVENT_RESOLVER", "POSTGRES_CONNECTIONS", "POSTGRES_POOL_MAX", "POSTGRES_POOL_TIMEOUT",
    "PYPY_GC_NURSERY", "SLOW_API_CONNECTIONS",
)  # fmt: skip


def cpu_ms_per_unit(running: RunningScenario, service: str, units: int = 200) -> float:
    """What one `?cpu=` unit costs in this service's image on this machine now (flask_app/cpu_work.py), idle."""
    container = running.container_ids()[service]
    return float(running.docker(service, "exec", container, "python", "cpu_work.py", str(units)).strip())


def app_settings(running: RunningScenario, service: str) -> dict[str, str]:
    container = running.container_ids()[service]
    environment = json.loads(running.docker(service, "inspect", "--format", "{{json .Config.Env}}", container))
    pairs = (variable.split("=", 1) for variable in environment)
    return {name: value for name, value in pairs if name in APP_SETTINGS}


def server_command(running: RunningScenario, service: str) -> list[str]:
    """The command the service's container runs, as Compose filled in its settings."""
    container = running.container_ids()[service]
    return json.loads(running.docker(service, "inspect", "--format", "{{json .Config.Cmd}}", container)) or []


def image_packages(running: RunningScenario) -> dict[str, list[str]]:
    """The interpreter (first, as "CPython==3.14.8" or "PyPy==3.11.13") and the Python packages as installed in each
    app image, read from the running containers."""
    packages = {}
    interpreter = "import platform; print(f'{platform.python_implementation()}=={platform.python_version()}')"
    for service, container in running.container_ids().items():
        image = running.docker(service, "inspect", "--format", "{{.Config.Image}}", container).strip()
        try:
            freeze = running.docker(service, "exec", container, "pip", "freeze")
            python = running.docker(service, "exec", container, "python", "-c", interpreter)
        except subprocess.CalledProcessError:
            continue  # no pip in it: Postgres, Nginx
        if service != "postgres":
            # A line each, its comments left out (pip's "# Editable install with no version control (...)")
            installed = [line.strip() for line in freeze.splitlines() if line.strip() and not line.startswith("#")]
            packages[image] = [*python.split(), *installed]
    return packages


def idle_threads(running: RunningScenario, service: str) -> int | None:
    """The server's OS threads before any request: from this machine's /proc, or through the server's engine."""
    main_pid = running.main_pid(service)
    if running.sees_processes(service):
        return os_threads(server_pids(main_pid))
    with EngineSampler(running.docker_cli(service), main_pid) as sampler:
        pass  # its first sample is all it takes
    return sampler.usage.threads_peak if sampler.problem is None else None


@dataclass(frozen=True)
class AtRest:
    """What make bench's record says of a started server before any request (bench/bench_run/record.py, BenchResult)."""

    app_settings: dict[str, str]
    server_command: list[str]
    threads_idle: int | None
    cpu_ms_per_unit: float | None  # None: no ?cpu= work asked for


def at_rest(running: RunningScenario, service: str, unit_costs: dict[str, float] | None) -> AtRest:
    """The server's settings, command and idle threads; and, where `unit_costs` is given (a load with CPU work), what
    one `?cpu=` unit costs in its image: measured the first time, kept there by service for the scenario's next
    loads."""
    if unit_costs is not None and service not in unit_costs:
        unit_costs[service] = cpu_ms_per_unit(running, service)
    settings, command = app_settings(running, service), server_command(running, service)
    unit = None if unit_costs is None else unit_costs[service]
    return AtRest(settings, command, idle_threads(running, service), unit)
