"""Roles: the load generator (client), the server under test and its dependencies (database: slow_api and
Postgres) each on a Docker engine of its own, as the field's reference benchmark runs them on three machines;
and each role's containers pinned to cores of their own (cpusets) on one machine.

With no role and no cpuset set, nothing here is used: the harness starts each scenario exactly as before. With
roles set, the harness writes a small override compose file beside the scenario's, which publishes slow_api and
Postgres on the database host's address and points the app at it, and runs `docker compose` once per engine:
the database's services first, then the server's with `up --no-deps`. Images are built on the harness's own
engine, as always, and copied (`docker save | docker load`) to the engines that lack them: a remote engine may
reach no registry. The load generator runs in a container on the client's engine, against the server's address.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from bench.containers.compose import READ_ONLY, RunningScenario, ScenarioError, compose_command
from bench.containers.scenarios import ROOT, Target
from bench.results.records import CpuProbe

ROLES = ("server", "client", "database")
# The services the app waits on: they run on the database's engine, unless a scenario loads one itself (the
# reference loads slow_api alone: there it is the server).
DEPENDENCIES = ("slow_api", "postgres")
# Where each dependency listens in its container; published on the database host under the same port.
DEPENDENCY_PORTS = {"slow_api": 8000, "postgres": 5432}
# The image every engine gets for the small containers that tell the host's facts (the stand-in base).
FACTS_IMAGE = "python:3.14-slim"
ENGINE_SCHEMES = ("ssh", "tcp", "unix")


class RolesError(SystemExit):
    """A setting that cannot work, said in one line."""


@dataclass(frozen=True)
class Engine:
    """A Docker engine: an address (ssh://, tcp://, unix://), a `docker context` name, or None for the engine the
    harness's own environment names (the local one unless DOCKER_HOST says otherwise)."""

    address: str | None = None

    @property
    def is_context(self) -> bool:
        return self.address is not None and urlsplit(self.address).scheme not in ENGINE_SCHEMES

    def cli(self) -> list[str]:
        if self.address is None:
            return ["docker"]
        return ["docker", "--context" if self.is_context else "--host", self.address]

    def environment(self, base: dict[str, str]) -> dict[str, str]:
        """`base` with this engine as the one `docker` and `docker compose` talk to."""
        if self.address is None:
            return dict(base)
        chosen = {key: value for key, value in base.items() if key not in ("DOCKER_HOST", "DOCKER_CONTEXT")}
        chosen["DOCKER_CONTEXT" if self.is_context else "DOCKER_HOST"] = self.address
        return chosen

    def host(self) -> str | None:
        """The machine this engine's address names, where it names one other roles could reach."""
        if self.address is None or self.is_context:
            return None
        parts = urlsplit(self.address)
        return parts.hostname if parts.scheme in ("ssh", "tcp") else None

    def __str__(self) -> str:
        return self.address or "local"


@dataclass(frozen=True)
class Roles:
    server: Engine = Engine()
    client: Engine = Engine()
    database: Engine = Engine()
    bind: str | None = None  # an address of the server host, where its ports are published (127.0.0.1 unless set)
    database_bind: str | None = None  # an address of the database host, where the server reaches slow_api, Postgres
    cpusets: dict[str, str] = field(default_factory=dict)  # role -> cpuset ("0", "1-3"), unset roles not pinned

    @property
    def active(self) -> bool:
        """Whether any role or cpuset is set: if not, the harness runs exactly as it did before roles."""
        engines = (self.server, self.client, self.database)
        return any(engine.address for engine in engines) or bool(self.cpusets) or self.bind is not None

    @property
    def database_apart(self) -> bool:
        return self.database != self.server

    @property
    def client_apart(self) -> bool:
        return self.client != self.server

    @property
    def server_address(self) -> str:
        """Where the client and the harness reach the server's published ports."""
        return self.bind or "127.0.0.1"

    @property
    def database_address(self) -> str:
        """Where the server's app reaches slow_api and Postgres, published there."""
        address = self.database_bind or self.database.host()
        if address and not self.database_bind:
            # Compose publishes on an IP address only; the database host's name as this machine resolves it.
            try:
                address = socket.gethostbyname(address)
            except OSError as error:
                raise RolesError(f"cannot resolve {address} ({error}): set DATABASE_BIND= to its address") from None
        if address is None:
            raise RolesError(
                f"DATABASE_HOST={self.database} names no host the server can reach:"
                " set DATABASE_BIND= to an address of the database host"
            )
        return address

    def check(self) -> None:
        if self.client_apart and self.bind is None:
            raise RolesError(
                f"the client ({self.client}) is not on the server's engine ({self.server}): set BIND= to an address"
                " of the server host that the client reaches (on a private network: the server is open there)"
            )
        if self.database_apart:
            self.database_address  # noqa: B018 (raises when it cannot be known)
        unknown = set(self.cpusets) - set(ROLES)
        if unknown:
            raise RolesError(f"cpusets for unknown roles {sorted(unknown)}; roles are {', '.join(ROLES)}")

    def engines(self) -> dict[str, Engine]:
        return {"server": self.server, "client": self.client, "database": self.database}

    def addressed(self, target: Target) -> Target:
        """The target as the harness and the client reach it with these roles."""
        if not self.active:
            return target
        fields = {name: getattr(target, name) for name in target.__dataclass_fields__}
        inside = f"http://{self.server_address}:{target.port}/" if self.client_apart else None
        return ServedTarget(**fields, address=self.server_address, inside=inside)


# Every role on the harness's own engine, no cpuset: the harness as it was before roles.
NO_ROLES = Roles()


@dataclass(frozen=True)
class ServedTarget(Target):
    """A target on the server role's engine: published on `address`; the client, on another engine, reaches it
    there too (`inside`), not by its service name on the scenario's network."""

    address: str = "127.0.0.1"
    inside: str | None = None

    @property
    def url(self) -> str:
        return f"http://{self.address}:{self.port}/"

    @property
    def url_inside(self) -> str:
        return self.inside or super().url_inside


def from_arguments(args: argparse.Namespace) -> Roles:
    roles = Roles(
        server=Engine(args.server_host or None),
        client=Engine(args.client_host or None),
        database=Engine(args.database_host or None),
        bind=args.bind or None,
        database_bind=args.database_bind or None,
        cpusets={role: value for role in ROLES if (value := getattr(args, f"cpuset_{role}"))},
    )
    roles.check()
    return roles


def _run(command: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, **options)


def image_id(engine: Engine, image: str) -> str | None:
    found = _run([*engine.cli(), "image", "inspect", "--format", "{{.Id}}", image])
    return found.stdout.strip() if found.returncode == 0 else None


def copy_images(images: list[str], engine: Engine, source: Engine = Engine()) -> list[str]:
    """Copy to `engine` the images it lacks or holds in another version, in one stream (shared layers once)."""
    wanted = [image for image in dict.fromkeys(images) if image_id(engine, image) != image_id(source, image)]
    if not wanted or engine == source:
        return []
    save = subprocess.Popen([*source.cli(), "save", *wanted], stdout=subprocess.PIPE)
    load = _run([*engine.cli(), "load", "--quiet"], stdin=save.stdout, timeout=600)
    assert save.stdout is not None  # stdout=PIPE
    save.stdout.close()
    if save.wait(timeout=60) != 0 or load.returncode != 0:
        raise ScenarioError(f"copying {wanted} to the engine {engine} failed: {load.stderr.strip()[:300]}")
    return wanted


def host_facts(engine: Engine) -> dict[str, Any]:
    """What the engine's machine is: cores, kernel, CPU model, and its boot id (equal boot ids: one machine)."""
    info = json.loads(_run([*engine.cli(), "info", "--format", "{{json .}}"], check=True).stdout)
    script = "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2; cat /proc/sys/kernel/random/boot_id"
    inside = _run([*engine.cli(), "run", "--rm", "--network", "none", FACTS_IMAGE, "sh", "-c", script], check=True)
    cpu_model, boot_id = (inside.stdout.strip().splitlines() + ["", ""])[:2]
    return {
        "engine": str(engine),
        "engine_name": info.get("Name"),
        "docker_version": info.get("ServerVersion"),
        "cores": info.get("NCPU"),
        "kernel": info.get("KernelVersion"),
        "os": info.get("OperatingSystem"),
        "cpu_model": cpu_model.strip(),
        "machine": boot_id.strip(),
    }


def describe_roles(roles: Roles) -> dict[str, Any]:
    """Each role's host facts, the cpusets, and whether roles shared a machine (the same running kernel)."""
    facts: dict[Engine, dict[str, Any]] = {}
    for engine in roles.engines().values():
        if engine != Engine():
            copy_images([FACTS_IMAGE], engine)
        if engine not in facts:
            facts[engine] = host_facts(engine)
    described: dict[str, Any] = {role: dict(facts[engine]) for role, engine in roles.engines().items()}
    for role, cpuset in roles.cpusets.items():
        described[role]["cpuset"] = cpuset
    machines = {described[role]["machine"] for role in ROLES}
    described["shared_machine"] = len(machines) < len(ROLES)
    described["one_machine"] = len(machines) == 1
    return described


class _Override(list[str]):
    """A list that replaces, not extends, the base file's (Compose's `!override` tag, Compose 2.24.4 and later)."""


yaml.SafeDumper.add_representer(_Override, lambda dumper, data: dumper.represent_sequence("!override", data))


def override(model: dict[str, Any], roles: Roles, targets: list[str]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """The override compose document for a scenario's resolved model (`docker compose config` as JSON), and
    which services run on which role's engine."""
    services = model["services"]
    database = [name for name in DEPENDENCIES if name in services and name not in targets and roles.database_apart]
    server = [name for name in services if name not in database]
    document: dict[str, Any] = {}
    for name in server:
        entry: dict[str, Any] = {}
        environment = services[name].get("environment") or {}
        if database:
            address = roles.database_address
            if "SLOW_API_URL" in environment:
                entry.setdefault("environment", {})["SLOW_API_URL"] = f"http://{address}:8000/"
            if "DATABASE_URL" in environment:
                url = environment["DATABASE_URL"].replace("@postgres:5432/", f"@{address}:5432/")
                entry.setdefault("environment", {})["DATABASE_URL"] = url
        if roles.bind and services[name].get("ports"):
            ports = [f"{roles.bind}:{port['published']}:{port['target']}" for port in services[name]["ports"]]
            entry["ports"] = _Override(ports)
        if "server" in roles.cpusets:
            entry["cpuset"] = roles.cpusets["server"]
        if entry:
            document[name] = entry
    for name in DEPENDENCIES:
        if name not in services or name in targets:
            continue
        entry = {}
        if name in database:
            port = DEPENDENCY_PORTS[name]
            entry["ports"] = _Override([f"{roles.database_address}:{port}:{port}"])
        if "database" in roles.cpusets:
            entry["cpuset"] = roles.cpusets["database"]
        if entry:
            document[name] = entry
    return {"services": document}, {"database": database, "server": server}


class RolesScenario(RunningScenario):
    """A scenario started across the roles' engines: its dependencies on the database's, the rest on the
    server's; with cpusets, each role's containers on their cores. Same interface as RunningScenario."""

    def __init__(self, scenario: str, roles: Roles, targets: list[str], **options: Any) -> None:
        super().__init__(scenario, **options)
        self.roles = roles
        self.targets = targets
        self.folder = Path(tempfile.mkdtemp(prefix=f"roles-{scenario}-"))
        self.override_file = self.folder / "roles.yml"
        model = json.loads(self._compose_plain("config", "--format", "json").stdout)
        document, self.placement = override(model, roles, targets)
        self.override_file.write_text(yaml.safe_dump(document, sort_keys=False))
        self.images = {name: service.get("image") for name, service in model["services"].items()}
        self.building = [name for name, service in model["services"].items() if service.get("build")]

    def _compose_plain(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [*compose_command(), *self.project_options(), *args]
        result = _run(command, cwd=ROOT, env=self.environment, timeout=120)
        if result.returncode != 0:
            raise ScenarioError(f"{' '.join(command)} failed:\n{result.stderr}")
        return result

    def engine_of(self, service: str) -> Engine:
        return self.roles.database if service in self.placement["database"] else self.roles.server

    def compose(
        self, *args: str, check: bool = True, timeout: float | None = 900, engine: Engine | None = None
    ) -> subprocess.CompletedProcess[str]:
        command = [*compose_command(), *self.project_options(), "--file", str(self.override_file), *args]
        if not args or args[0] not in READ_ONLY:
            self._ids = None  # as RunningScenario.compose: the containers may change
        environment = (engine or self.roles.server).environment(self.environment)
        result = _run(command, cwd=ROOT, timeout=timeout, env=environment)
        if check and result.returncode != 0:
            raise ScenarioError(f"{' '.join(command)} on {engine or self.roles.server} failed:\n{result.stderr}")
        return result

    def up(self) -> None:
        if self.build and self.building:
            # On the harness's own engine, as without roles; the other engines get copies.
            self.compose("build", *self.building, engine=Engine())
        for role in ("database", "server"):
            services = self.placement[role]
            engine = self.engine_of(services[0]) if services else None
            if engine is None:
                continue
            images = [self.images[name] for name in services if self.images.get(name)]
            copy_images(images, engine)
            self.compose("up", "--detach", "--no-build", "--no-deps", *services, engine=engine)
            self.wait_healthy()

    def down(self) -> None:
        engines = dict.fromkeys(self.engine_of(name) for names in self.placement.values() for name in names)
        for engine in engines:
            self.compose("down", "--volumes", "--remove-orphans", "--timeout", "10", check=False, engine=engine)
        self.discard()

    def discard(self) -> None:
        """Remove the override file: for a scenario never started."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def container_ids(self) -> dict[str, str]:
        if self._ids is None:
            ids = {}
            for names in self.placement.values():
                for name in names:
                    container = self.compose("ps", "--quiet", name, engine=self.engine_of(name)).stdout.strip()
                    if container:
                        ids[name] = container
            self._ids = ids
        return dict(self._ids)

    def docker(self, service: str, *args: str) -> str:
        if not args or args[0] not in READ_ONLY:
            self._ids = None
        return _run([*self.engine_of(service).cli(), *args], check=True).stdout

    def health(self) -> dict[str, str]:
        state = "{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}"
        return {
            service: self.docker(service, "inspect", "--format", state, container).strip()
            for service, container in self.container_ids().items()
        }

    def exited_services(self) -> list[str]:
        engines = dict.fromkeys(self.engine_of(name) for names in self.placement.values() for name in names)
        status = ["--services", "--status", "exited", "--status", "dead"]
        return [name for engine in engines
                for name in self.compose("ps", *status, check=False, engine=engine).stdout.split()]  # fmt: skip

    def main_pid(self, service: str) -> int:
        return int(self.docker(service, "inspect", "--format", "{{.State.Pid}}", self.container_ids()[service]))

    def docker_cli(self, service: str) -> list[str]:
        return self.engine_of(service).cli()

    def loadgen_run(self, image: str) -> list[str]:
        """`docker run` of the load generator on the client's engine, on its cores."""
        command = [*self.roles.client.cli(), "run", "--rm"]
        if not self.roles.client_apart:
            command += ["--network", self.network()]
        if "client" in self.roles.cpusets:
            command += ["--cpuset-cpus", self.roles.cpusets["client"]]
        return [*command, image]


# The CPU steadiness probe: a fixed pure-Python loop, timed inside a container on each role's engine and cores,
# just before and just after each measurement. Here its time moved from 0.081 s to 0.151 s within 12 minutes
# (2026-11-23): the machine's CPU speed moves, and a server that spends 1-2 ms of CPU per request moves with it,
# while the same-run reference (slow_api alone, 0.15 ms per request) barely does.
PROBE_LOOP = "import time\nstarted = time.perf_counter()\nx = 0\nfor i in range(1_000_000): x += i\n"
PROBE_LOOP += "print(round(time.perf_counter() - started, 4))"
# A measurement is unsteady when a role's probe after it differs from the one before by more than this factor:
# a CPU a quarter faster or slower moves a server that spends 1-2 ms of CPU per request by about as much, more
# than many of the gaps between the servers compared here.
UNSTEADY_FACTOR = 1.25


def probe(placed: Roles) -> dict[str, float]:
    """Seconds the probe loop took on each role's engine and cores now; roles on the same engine and cores share
    one probe."""
    seconds: dict[tuple[Engine, str | None], float] = {}
    timed = {}
    for role, engine in placed.engines().items():
        key = (engine, placed.cpusets.get(role))
        if key not in seconds:
            cores = ["--cpuset-cpus", key[1]] if key[1] else []
            command = [*engine.cli(), "run", "--rm", "--network", "none", *cores, FACTS_IMAGE, "python", "-c"]
            seconds[key] = float(_run([*command, PROBE_LOOP], check=True).stdout.strip())
        timed[role] = seconds[key]
    return timed


def steadiness(before: dict[str, float], after: dict[str, float]) -> CpuProbe:
    """The probe around a measurement, and whether every role's CPU kept its speed within UNSTEADY_FACTOR."""
    return CpuProbe.judged({role: {"before": before[role], "after": after[role]} for role in before}, UNSTEADY_FACTOR)
