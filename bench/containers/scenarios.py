"""The registry of scenarios, read from the compose files themselves: each root `*.yml` (but common.yml) and each
`labs/*.yml` is one scenario, its `x-scenario` block says which list it belongs to, its `x-targets` block what to
load. Adding a scenario is adding a file (docs/project.md, "Adding a scenario")."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]

# Every group, in the order the lists and `make help` show them, with the harness mode that runs it.
GROUPS = {
    "tutorial": "make bench, make test",  # the tutorial's nine, in its order
    "alternative": "make bench, make test",  # the 2026 alternatives, beside the tutorial's nine
    "reference": "make bench",  # slow_api alone, loaded first in every run: the same-run yardstick
    "lab": "make labs",  # gevent broken and fixed side by side (docs/labs.md)
    "bookstore": "make bookstore",  # the realistic app on a real database
}
SCENARIO_KEYS = {"group", "order"}


class ScenarioFileError(ValueError):
    """A compose file that is not a valid scenario; the message names the file."""


@dataclass(frozen=True)
class Scenario:
    """One compose file, as the registry knows it."""

    name: str  # the file's name without .yml; also its Compose project's
    file: Path
    group: str
    order: int  # its place within its group
    services: tuple[str, ...]

    @property
    def uses_postgres(self) -> bool:
        return "postgres" in self.services

    @property
    def behind_nginx(self) -> bool:
        return "nginx" in self.services


def _shown(path: Path) -> Path:
    return path.relative_to(ROOT) if path.is_relative_to(ROOT) else path


def read_scenario(path: Path) -> Scenario:
    """The registry's entry for one compose file, or a ScenarioFileError that says what is wrong with it."""
    where = _shown(path)
    try:
        document = yaml.safe_load(path.read_text())
    except yaml.YAMLError as error:
        raise ScenarioFileError(f"{where}: not valid YAML: {error}") from None
    if not isinstance(document, dict):
        raise ScenarioFileError(f"{where}: not a compose file")
    if document.get("name") != path.stem:
        raise ScenarioFileError(f"{where}: its top-level `name:` must be {path.stem!r}, the file's name")
    block = document.get("x-scenario")
    if not isinstance(block, dict):
        raise ScenarioFileError(f"{where}: no `x-scenario: {{group: ..., order: ...}}` block; see docs/project.md")
    if set(block) != SCENARIO_KEYS:
        raise ScenarioFileError(f"{where}: x-scenario must have exactly the keys group and order, not {sorted(block)}")
    if block["group"] not in GROUPS:
        raise ScenarioFileError(f"{where}: unknown group {block['group']!r}; choose one of: {' '.join(GROUPS)}")
    if not isinstance(block["order"], int) or isinstance(block["order"], bool) or block["order"] < 1:
        raise ScenarioFileError(f"{where}: x-scenario's order must be a whole number from 1, not {block['order']!r}")
    if not document.get("x-targets"):
        raise ScenarioFileError(f"{where}: no `x-targets` list: the harness would have nothing to load")
    return Scenario(path.stem, path, block["group"], block["order"], tuple(document.get("services") or ()))


def scenario_files(root: Path = ROOT) -> list[Path]:
    """Every file the registry reads: users run each with `docker compose -f <file> up`."""
    return sorted([*root.glob("*.yml"), *root.glob("labs/*.yml")])


def read_registry(root: Path = ROOT) -> dict[str, Scenario]:
    """Every scenario by name, ordered by group (as GROUPS lists them), then by order within the group."""
    scenarios = [read_scenario(path) for path in scenario_files(root) if path.name != "common.yml"]
    taken: dict[str, Path] = {}
    for scenario in scenarios:
        # A lab's name must not be a root file's too: the name alone says which file to start.
        for claim in (f"named {scenario.name}", f"{scenario.group} number {scenario.order}"):
            if claim in taken:
                raise ScenarioFileError(f"{_shown(taken[claim])} and {_shown(scenario.file)} are both {claim}")
            taken[claim] = scenario.file
    scenarios.sort(key=lambda s: (list(GROUPS).index(s.group), s.order))
    return {scenario.name: scenario for scenario in scenarios}


REGISTRY = read_registry()


def group(name: str) -> tuple[str, ...]:
    return tuple(scenario.name for scenario in REGISTRY.values() if scenario.group == name)


# The benchmark matrix, in the tutorial's order then the alternatives': what `make bench` and the tests run.
SCENARIOS = group("tutorial") + group("alternative")
# The failure labs (labs/<name>.yml), run by `make labs`; apart from SCENARIOS, so that the matrix stays the
# tutorial's and the alternatives.
LABS = group("lab")
# The bookstore (make bookstore): apart from SCENARIOS like the labs.
BOOKSTORE = group("bookstore")
# slow_api alone, loaded first in every benchmark run: the same-run reference for every target's figures.
_references = group("reference")
if len(_references) != 1:
    raise ScenarioFileError(f"exactly one compose file must be in group reference, not {len(_references)}")
(REFERENCE,) = _references

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
    # An app that answers with a Postgres half (the bonus apps): how it waits, "blocking" (the worker serialises)
    # or "cooperative".
    postgres: str | None = None
    # The labs only: "broken" or "fixed", and the one setting that makes it so.
    variant: str | None = None
    setting: str | None = None
    db_pool: int | None = None  # the bookstore: connections the target's pool may hold, all processes together
    # The bookstore's ladder: the rung's number (the unchanged app is 0), and the ending of its reads, which the
    # rung's service fixes (None: the run's READS_END_WITH).
    rung: int | None = None
    reads_end_with: str | None = None
    db_via: str | None = None  # the service between the target and Postgres (pgbouncer), holding its sessions

    @property
    def concurrency(self) -> int | None:
        """How many requests the server can hold at once; None when only memory limits it."""
        # asyncio: none of its servers here caps the tasks a worker holds.
        per_worker = {"sync": self.threads_per_worker, "gevent": self.gevent_cores}.get(self.mode)
        return None if per_worker is None else self.workers * per_worker

    def record_fields(self) -> dict[str, Any]:
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
        if self.service == "slow_api":  # the reference: slow_api answers by itself
            return "slow api response"
        if self.postgres:
            return f"Hi there! slow api response, postgres slept {delay / 2:.2f} s"
        return "Hi there! slow api response"

    @property
    def development_server(self) -> bool:
        """Flask's development server: no graceful stop, and not for production."""
        return self.server == "flask-devserver"

    @property
    def url_inside(self) -> str:
        """Its address on the scenario's network: apps listen on 3000 in their containers, Nginx on 8080."""
        return f"http://{self.via}:8080/" if self.via else f"http://{self.service}:3000/"


def compose_file(scenario: str) -> Path:
    # A lab is named without its folder: the name is its Compose project's too, which cannot hold a slash.
    if scenario not in REGISTRY:
        raise SystemExit(f"unknown scenario {scenario!r}; choose one of: {' '.join(REGISTRY)}")
    return REGISTRY[scenario].file


def interpolate(value: object, environment: dict[str, str]) -> object:
    if not isinstance(value, str):
        return value
    text = _VARIABLE.sub(lambda m: environment.get(m[1]) or (m[2] or ""), value)
    return int(text) if text.isdigit() else text


def target_fields(entry: dict[str, Any], environment: dict[str, str]) -> dict[str, Any]:
    """One entry of an x-targets block with its variables set from `environment`: Target's keyword arguments."""
    return {key: interpolate(value, environment) for key, value in entry.items()}


def load_targets(scenario: str, environment: dict[str, str] | None = None) -> list[Target]:
    """The scenario's targets as Compose would start them, in this environment (settings like WORKERS=2) on top
    of the process's own."""
    document = yaml.safe_load(compose_file(scenario).read_text())
    settings = {**os.environ, **(environment or {})}
    return [Target(scenario=scenario, **target_fields(entry, settings)) for entry in document["x-targets"]]


@dataclass(frozen=True)
class ConfiguredTarget:
    """A scenario's target started with these settings (e.g. WORKERS=2): what make map and make recommend load."""

    scenario: str
    target: str
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        # gunicorn-gevent-2-workers for WORKERS=2: a name that also works on the command line.
        return "-".join([self.target, *(f"{value}-{name.lower()}" for name, value in self.settings.items())])

    def resolve(self) -> Target:
        (found,) = [t for t in load_targets(self.scenario, self.settings) if t.name == self.target]
        return found


def all_targets(scenarios: tuple[str, ...] = SCENARIOS) -> list[Target]:
    return [target for scenario in scenarios for target in load_targets(scenario)]


def describe_registry() -> str:
    """The scenarios by group, for `make help`."""
    lines = []
    for name, mode in GROUPS.items():
        members = group(name)
        if members:
            lines.append(f"  {name} ({mode}):")
            lines += [f"    {member:28} {REGISTRY[member].file.relative_to(ROOT)}" for member in members]
    return "\n".join(lines)


if __name__ == "__main__":
    print(describe_registry())
