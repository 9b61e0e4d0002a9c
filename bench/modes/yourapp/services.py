"""The services of the reader's SERVICES= file (Postgres, Redis), started before the app and waited for each within
its own healthcheck's time: its start period and its interval times its retries, read from the file, with Docker's
defaults where it says none. One that does not turn healthy is named with its own last words, "service postgres is
unhealthy after 30 s: <its last log line>", not with Compose's "dependency failed to start" after a generic wait."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.containers.compose import RunningScenario, ScenarioError
from bench.modes.yourapp.errors import error_line

# Docker's healthcheck defaults (the Dockerfile reference, HEALTHCHECK): what a service's check is where it says none.
DEFAULT_INTERVAL, DEFAULT_RETRIES, DEFAULT_START_PERIOD = 30.0, 3, 0.0
# Beyond a service's healthcheck time: Docker's own probe running its last try, and this harness's poll.
GRACE_SECONDS = 5.0
POLL_SECONDS = 0.5
# Compose's own services, not the reader's: the app and the proxy in front of it (yourapp/compose.yml).
OURS = ("app", "nginx")
# Starting the services pulls their images: minutes on a first run, not a health wait.
START_TIMEOUT = 900.0
GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


class ServiceError(ScenarioError):
    """A service of the reader's file that is not up, or the file itself, said in one line that names it."""


def duration_seconds(value: Any, default: float) -> float:
    """A Compose duration ("1m30s", "500ms", "10s") in seconds; a bare number as seconds; the default where absent."""
    if value is None:
        return default
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    parts = GO_DURATION.findall(text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        raise ServiceError(f"not a duration: {value!r} (as Compose reads one: 30s, 1m30s, 500ms)")
    return sum(float(number) * UNIT_SECONDS[unit] for number, unit in parts)


@dataclass(frozen=True)
class ServiceHealth:
    """A service of the reader's and how long its healthcheck may take to say healthy."""

    name: str
    checked: bool  # a healthcheck of its own in the file (else it is up once running, or as its image's check says)
    seconds: float  # start period + interval x retries

    @property
    def deadline(self) -> float:
        return self.seconds + GRACE_SECONDS


def health_seconds(healthcheck: dict[str, Any] | None) -> float:
    """How long Docker takes to call a service unhealthy: failures in the start period do not count, then `retries`
    failed tries, one each interval."""
    check = healthcheck or {}
    interval = duration_seconds(check.get("interval"), DEFAULT_INTERVAL)
    start_period = duration_seconds(check.get("start_period"), DEFAULT_START_PERIOD)
    retries = int(check.get("retries", DEFAULT_RETRIES))
    return start_period + interval * retries


def services_health(path: Path) -> list[ServiceHealth]:
    """The reader's services in a SERVICES= file, in its order: all but the app (which the file may give an
    environment) and those behind a profile, which Compose does not start."""
    try:
        text = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as error:
        raise ServiceError(f"{path}: not a Compose file: {error}") from None
    if not isinstance(text, dict) or not isinstance(text.get("services") or {}, dict):
        raise ServiceError(f"{path}: not a Compose file: no `services:` mapping")
    found = []
    for name, service in (text.get("services") or {}).items():
        service = service or {}
        if name in OURS or service.get("profiles"):
            continue
        healthcheck = service.get("healthcheck")
        disabled = bool(healthcheck and (healthcheck.get("disable") or healthcheck.get("test") in (["NONE"], "NONE")))
        found.append(ServiceHealth(str(name), bool(healthcheck) and not disabled, health_seconds(healthcheck)))
    return found


def last_words(running: RunningScenario, service: str) -> str:
    """A service's own last words: the error among its last log lines, else its healthcheck's last output."""
    logs = running.compose("logs", "--no-color", "--no-log-prefix", "--tail", "50", service, check=False).stdout
    if logs.strip():
        return error_line(logs)
    container = running.container_ids().get(service)
    try:
        health = running.docker(service, "inspect", "--format", "{{json .State.Health}}", container or "")
    except subprocess.CalledProcessError:
        health = ""  # removed meanwhile, or never created
    probes = (json.loads(health) or {}).get("Log") or [] if health.strip() else []
    said = str(probes[-1].get("Output", "")) if probes else ""
    return f"its healthcheck said: {error_line(said)}" if said.strip() else "it logged nothing"


def not_up(services: list[ServiceHealth], states: dict[str, str], elapsed: float) -> tuple[str, str] | None:
    """The service to name, and what to say of it: one that failed (unhealthy, exited) before one that never
    started (another's failure stopped Compose), before one past its deadline; None while each may still come up."""
    failed = [service.name for service in services if states.get(service.name) in ("unhealthy", "exited", "dead")]
    if failed:
        return failed[0], f"is {states[failed[0]]} after {elapsed:.0f} s"
    gone = [service.name for service in services if states.get(service.name, "created") == "created"]
    if gone:
        return gone[0], "did not start"
    late = [service for service in services if elapsed > service.deadline]
    if late:
        state, seconds = states[late[0].name], late[0].seconds
        return late[0].name, f"is not healthy after {elapsed:.0f} s (its healthcheck's {seconds:.0f} s; {state})"
    return None


def is_up(service: ServiceHealth, state: str | None) -> bool:
    return state == "healthy" or (state == "running" and not service.checked)


def wait_for_services(
    running: RunningScenario,
    services: list[ServiceHealth],
    compose_said: str | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Each service healthy (running, where it has no healthcheck) within its own deadline; else ServiceError in one
    line naming the service, its state and its last words (Compose's, for one that never ran)."""
    started = clock()
    waiting = list(services)
    while waiting:
        states = running.health()
        waiting = [service for service in waiting if not is_up(service, states.get(service.name))]
        named = not_up(waiting, states, clock() - started)
        if named:
            name, said = named
            words = last_words(running, name)  # an exited one's too: `compose ps` lists it no more
            if said == "did not start" and compose_said and words == "it logged nothing":
                words = compose_said
            raise ServiceError(f"service {name} {said}: {words}")
        if waiting:
            sleep(POLL_SECONDS)


def start_services(running: RunningScenario, path: Path) -> None:
    """The reader's services up and healthy before the app starts, each named where it is not."""
    services = services_health(path)
    if not services:
        return
    compose_said = None
    try:
        running.compose("up", "--detach", *(service.name for service in services), timeout=START_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise ServiceError(f"starting the services took over {START_TIMEOUT:.0f} s (pulling their images?)") from None
    except ScenarioError as error:
        compose_said = error_line(str(error))  # one that waits for another's health fails here: named below
    wait_for_services(running, services, compose_said)
    if compose_said:  # every service up, and still Compose failed
        raise ServiceError(compose_said)
