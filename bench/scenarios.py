"""The scenario matrix, read from the `x-targets` block of each compose file: the one place it is written."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent

# The tutorial's order, which the README, `make bench` and the tests follow.
SCENARIOS = (
    "sync-devserver",
    "async-gevent-pywsgi",
    "sync-gunicorn",
    "async-gevent-gunicorn",
    "sync-uwsgi",
    "async-gevent-uwsgi",
    "nginx-gunicorn",
    "nginx-uwsgi",
    "bonus-psycopg2-gevent",
    # The 2026 alternatives, beside the tutorial's nine.
    "bonus-psycopg3-gevent",
    "sync-granian",
    "flask-async-view",
    "async-quart",
    "async-gevent-gunicorn-pypy",
    "nginx-sync-gunicorn",  # Nginx in front of sync-gunicorn: the defence against slow clients
)

# The failure labs (labs/<name>.yml, docs/labs.md): gevent broken and fixed side by side, run by `make labs`.
# Apart from SCENARIOS, so that the benchmark matrix stays the tutorial's and the alternatives.
LABS = ("late-patch", "blocking-call", "pool-default", "small-backlog", "cpu-starvation")

# slow_api alone, loaded first in every benchmark run: the same-run reference for every target's figures.
REFERENCE = "reference-slow-api"

# The tutorial's ab loads (requests, clients): `-n 10 -c 5` where one request at a time is the point.
LOADS = {"full": (2000, 200), "small": (10, 5)}

# Compose's `${NAME:-default}` and `${NAME}`; enough for the settings the x-targets blocks use.
_VARIABLE = re.compile(r"\$\{(\w+)(?::?-([^}]*))?\}")


@dataclass(frozen=True)
class Target:
    """One server port of a scenario, with the settings that bound how many requests it holds at once."""

    scenario: str
    name: str
    service: str  # the compose service that runs the Flask server
    port: int  # published on 127.0.0.1
    server: str
    # "sync" (a thread per request), "gevent" (a greenlet per request) or "asyncio" (a task per request)
    mode: str
    workers: int
    threads_per_worker: int | None = None  # sync only; None: a new thread per request, no limit
    gevent_cores: int | None = None  # gevent only; None: no limit
    via: str | None = None  # the proxy service in front of it, if any
    load: str = "full"  # "small" for targets that serve one request at a time, or nearly
    # The bonus apps only: how the Postgres half waits, "blocking" (the worker serialises) or "cooperative".
    postgres: str | None = None
    # The labs only: "broken" or "fixed", and the one setting that makes it so.
    variant: str | None = None
    setting: str | None = None
    db_pool: int | None = None  # the bookstore: connections the target's pool may hold, all processes together

    @property
    def concurrency(self) -> int | None:
        """How many requests the server can hold at once; None when only memory limits it."""
        # asyncio: none of its servers here caps the tasks a worker holds.
        per_worker = {"sync": self.threads_per_worker, "gevent": self.gevent_cores}.get(self.mode)
        return None if per_worker is None else self.workers * per_worker

    def describe(self) -> dict:
        """What every record of this target says about it, whatever the mode."""
        return {
            "scenario": self.scenario,
            "target": self.name,
            "server": self.server,
            "mode": self.mode,
            "workers": self.workers,
            "threads_per_worker": self.threads_per_worker,
            "gevent_cores": self.gevent_cores,
            "concurrency": self.concurrency,
        }

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def expected_body(self, delay: float) -> str:
        if self.scenario == REFERENCE:
            return "slow api response"
        if self.scenario.startswith("bonus-"):
            return f"Hi there! slow api response, postgres slept {delay / 2:.2f} s"
        return "Hi there! slow api response"

    @property
    def url_inside(self) -> str:
        """Its address on the scenario's network: apps listen on 3000 in their containers, Nginx on 8080."""
        return f"http://{self.via}:8080/" if self.via else f"http://{self.service}:3000/"


def compose_file(scenario: str) -> Path:
    # A lab is named without its folder: the name is its Compose project's too, which cannot hold a slash.
    if scenario in LABS:
        return ROOT / "labs" / f"{scenario}.yml"
    if scenario not in (*SCENARIOS, REFERENCE):
        known = " ".join((*SCENARIOS, *LABS))
        raise SystemExit(f"unknown scenario {scenario!r}; choose one of: {known}")
    return ROOT / f"{scenario}.yml"


def _interpolate(value: object, environment: dict[str, str]) -> object:
    if not isinstance(value, str):
        return value
    text = _VARIABLE.sub(lambda m: environment.get(m[1]) or (m[2] or ""), value)
    return int(text) if text.isdigit() else text


def load_targets(scenario: str, environment: dict[str, str] | None = None) -> list[Target]:
    """The scenario's targets as Compose would start them, in this environment (settings like WORKERS=2) on top
    of the process's own."""
    document = yaml.safe_load(compose_file(scenario).read_text())
    settings = {**os.environ, **(environment or {})}
    return [
        Target(scenario=scenario, **{key: _interpolate(value, settings) for key, value in entry.items()})
        for entry in document["x-targets"]
    ]


def all_targets(scenarios: tuple[str, ...] = SCENARIOS) -> list[Target]:
    return [target for scenario in scenarios for target in load_targets(scenario)]
