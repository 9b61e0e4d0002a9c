"""The ways `make yourapp` serves the reader's app (yourapp/compose.yml's x-ways: one server command each, the same
for every app), and one of them running: the compose file started as a project of its own, with the reader's
services file beside it."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.containers.compose import RunningScenario, ScenarioError
from bench.containers.scenarios import ROOT
from bench.modes.yourapp.errors import error_line
from bench.modes.yourapp.services import ServiceError, start_services

COMPOSE_FILE = ROOT / "yourapp" / "compose.yml"
APP_PORT, NGINX_PORT = (
    3000,
    8080,
)  # inside the way's network; published on 127.0.0.1 at YOURAPP_PORT, YOURAPP_NGINX_PORT


@dataclass(frozen=True)
class Way:
    name: str
    server: str
    command: str
    mode: str = "sync"
    workers: int = 1
    threads_per_worker: int | None = None
    gevent_cores: int | None = None
    nginx: bool = False
    # The reference: Werkzeug's development server (what `flask run` starts) on the callable as every way imports it,
    # never loaded: what every other way's answers are compared with.
    reference: bool = False

    @property
    def port(self) -> int:
        """The port the load goes to, inside the way's network: Nginx's where it stands in front."""
        return NGINX_PORT if self.nginx else APP_PORT

    @property
    def concurrency(self) -> int:
        return self.workers * (self.threads_per_worker or self.gevent_cores or 1)

    def record_fields(self) -> dict[str, Any]:
        """What every record says about its target (bench/results/records.py, Record)."""
        return {
            "scenario": "yourapp",
            "target": self.name,
            "server": self.server,
            "mode": self.mode,
            "workers": self.workers,
            "threads_per_worker": self.threads_per_worker,
            "gevent_cores": self.gevent_cores,
            "concurrency": self.concurrency,
        }


def ways(cores: int | None = None) -> list[Way]:
    """Every way of compose.yml, `{cores}` filled with this machine's core count."""
    cores = cores or os.cpu_count() or 1
    found = []
    for raw in yaml.safe_load(COMPOSE_FILE.read_text())["x-ways"]:
        filled: dict[str, Any] = dict(raw)
        filled["command"] = raw["command"].replace("{cores}", str(cores))
        filled["workers"] = int(str(raw.get("workers", 1)).replace("{cores}", str(cores)))
        found.append(Way(**filled))
    return found


def choose(names: list[str] | None) -> list[Way]:
    """The reference, then the ways named (all by default), in compose.yml's order; an unknown name is one line."""
    every = ways()
    known = {way.name for way in every}
    unknown = [name for name in names or [] if name not in known]
    if unknown:
        raise SystemExit(f"unknown way {', '.join(unknown)}; choose among: {' '.join(sorted(known))}")
    return [way for way in every if way.reference or not names or way.name in names]


class RunningWay(RunningScenario):
    """One way of the app up and healthy on entry, removed on exit: compose.yml (and the reader's services file) as
    the Compose project yourapp-<way>."""

    def __init__(self, way: Way, environment: dict[str, str], services: Path | None = None) -> None:
        profile = {"COMPOSE_PROFILES": "nginx"} if way.nginx else {}
        super().__init__(
            f"yourapp-{way.name}", build=False, environment={**environment, **profile, "YOURAPP_SERVER": way.command},
            files=(COMPOSE_FILE, *([services.resolve()] if services else [])), project_directory=ROOT / "yourapp",
        )  # fmt: skip
        self.way = way
        self.services_file = services

    def up(self) -> None:
        """The reader's services, each healthy within its own healthcheck's time, then the app, up and healthy; else
        ScenarioError in one line: the service that is not (services.py), or the error among the app's
        words (its import error, its set-up's: not Flask's "No such command" after it), or among Compose's."""
        try:
            if self.services_file:
                start_services(self, self.services_file)
            super().up()
        except ServiceError:
            raise  # named already
        except ScenarioError as error:
            logs = self.app_logs()
            raise ScenarioError(error_line(logs) if logs.strip() else error_line(str(error))) from None

    @property
    def published_port(self) -> int:
        """The port the load goes to, on 127.0.0.1."""
        name = "YOURAPP_NGINX_PORT" if self.way.nginx else "YOURAPP_PORT"
        return int(self.environment.get(name) or self.way.port)

    def app_services(self) -> list[str]:
        return ["app"]

    def app_logs(self, since: str | None = None) -> str:
        """The app's logs, from `since` on (an RFC 3339 time) or all of them."""
        window = ["--since", since] if since else []
        logs = self.compose("logs", "--no-color", "--no-log-prefix", *window, "app", check=False).stdout
        return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", logs)  # Compose's line erasing, even with --no-color
