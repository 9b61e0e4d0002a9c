"""Start, wait for, inspect and tear down one scenario with Docker Compose v2."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from types import TracebackType

from bench.containers.sampler import ProcessFacts, engine_process_table, process_table, sees_container
from bench.containers.scenarios import ROOT, compose_file


@functools.cache
def compose_command() -> tuple[str, ...]:
    """`docker compose`, the v2 plugin. Compose v1 (`docker-compose`, end of life) cannot read the top-level
    `name:` that keeps each scenario in its own Compose project."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True)
        if probe.returncode == 0:
            return ("docker", "compose")
    raise SystemExit(
        "Docker Compose v2 is not installed (`docker compose` fails): install the docker-compose-plugin package,"
        " or run .ci/compose-v2. Compose v1 (`docker-compose`) cannot read these files' top-level `name:`."
    )


class ScenarioError(RuntimeError):
    def in_one_line(self, limit: int = 400) -> str:
        """For a record's problem: the first line, and for a command that failed the last line of its output,
        where docker says why (a port already taken, a build step that failed)."""
        lines = [line.strip() for line in str(self).splitlines() if line.strip()]
        text = lines[0] if lines else ""
        if text.endswith("failed:") and len(lines) > 1:
            text = f"{text} {lines[-1]}"
        return text[:limit]


def docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True).stdout


# Every Dockerfile of the project puts this label in every stage: `LABEL org.flask-playground.project=...`.
PROJECT_LABEL = "org.flask-playground.project=flask-playground"


def remove_replaced_images() -> None:
    """Remove the project's dangling images: the ones a rebuild replaced, and the legacy builder's stages and
    their layers. Only images with the project's label and no tag, that no container uses; never a volume.
    Without it every cold build leaves the previous build's images behind (a CI run left 71, 1.6 GB)."""
    docker("image", "prune", "--force", "--filter", f"label={PROJECT_LABEL}")


def builds_on_up() -> bool:
    """Whether `up` builds the images first (a changed file rebuilt): yes, unless BUILD_IMAGES=0 says every image is
    built already (`make images`, which `make test` runs before the tests that start stacks)."""
    return os.environ.get("BUILD_IMAGES", "1") != "0"


# What the apps call (slow_api, Postgres) or sit behind (the proxies): every other service is an app server.
SUPPORTING_SERVICES = ("slow_api", "nginx", "httpd", "postgres")


# Compose and docker commands that change no container: the containers' ids known before them still hold.
READ_ONLY = ("ps", "config", "logs", "exec", "port", "images", "top", "inspect")


class RunningScenario:
    """A scenario's containers, as a context manager: up and healthy on entry, removed on exit."""

    _ids: dict[str, str] | None = None  # container_ids(), until a Compose command may have changed them

    def __init__(
        self,
        scenario: str,
        *,
        build: bool | None = None,
        ready_timeout: float = 300.0,
        environment: dict[str, str] | None = None,
        files: tuple[Path, ...] = (),
        project_directory: Path | None = None,
    ) -> None:
        """`scenario` names the Compose project; its file is the registry's, unless `files` names others (the first
        the main one), as for the bookstore and the reader's own app, with their own `project_directory`."""
        self.scenario = scenario
        self.files = list(files) or [compose_file(scenario)]
        self.file: Path = self.files[0]
        self.project_directory = project_directory
        self.build = build if build is not None else builds_on_up()
        self.ready_timeout = ready_timeout
        # Settings the compose file reads, like WORKERS=2, on top of this process's environment.
        self.environment = {**os.environ, **(environment or {})}
        self._seen: dict[str, bool] = {}  # service -> whether this machine's /proc shows its processes

    def project_options(self) -> list[str]:
        """Compose's options that name the project: the scenario's name is the project's, so scenarios never share
        containers or networks."""
        directory = ["--project-directory", str(self.project_directory)] if self.project_directory else []
        return ["--project-name", self.scenario, *directory, *(o for f in self.files for o in ("--file", str(f)))]

    def compose(self, *args: str, check: bool = True, timeout: float | None = 900) -> subprocess.CompletedProcess[str]:
        command = [*compose_command(), *self.project_options(), *args]
        if not args or args[0] not in READ_ONLY:
            self._ids = None  # it may start, replace or remove containers
        result = subprocess.run(
            command, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=self.environment
        )
        if check and result.returncode != 0:
            raise ScenarioError(f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}")
        return result

    def __enter__(self) -> RunningScenario:
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.down()

    def up(self) -> None:
        self.compose("up", "--detach", *(["--build"] if self.build else []))
        if self.build:  # a changed file rebuilt an image: the one it replaced is dangling now
            remove_replaced_images()
        self.wait_healthy()

    def down(self) -> None:
        self.compose("down", "--volumes", "--remove-orphans", "--timeout", "10", check=False)

    def services(self) -> list[str]:
        return self.compose("config", "--services").stdout.split()

    def app_services(self) -> list[str]:
        """The app servers' services: every one but what they call or sit behind (SUPPORTING_SERVICES). More than a
        target's own where copies of its app stand behind one proxy (nginx-deploy.yml)."""
        return [service for service in self.services() if service not in SUPPORTING_SERVICES]

    def container_ids(self) -> dict[str, str]:
        """Each running service's container, asked of Compose once after each command that may change them
        (a Compose call per service: a harness or a test asks for them around every request it measures)."""
        if self._ids is None:
            ids = {}
            for service in self.services():
                container = self.compose("ps", "--quiet", service).stdout.strip()
                if container:
                    ids[service] = container
            self._ids = ids
        return dict(self._ids)

    def health(self) -> dict[str, str]:
        """Each service's state: a health status where it has a healthcheck, else its run state."""
        ids = self.container_ids()
        if not ids:
            return {}
        state = "{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}"
        return dict(zip(ids, docker("inspect", "--format", state, *ids.values()).split(), strict=True))

    def wait_healthy(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout or self.ready_timeout)
        expected = len(self.services())
        while time.monotonic() < deadline:
            states = self.health()
            if states and all(state == "healthy" for state in states.values()):
                return
            broken = {service: state for service, state in states.items() if state in ("unhealthy", "exited", "dead")}
            if len(states) < expected:  # Compose's `ps` leaves a stopped container out: one that exited at once
                broken.update(dict.fromkeys(self.exited_services(), "exited"))
            if broken:
                raise ScenarioError(f"{self.scenario}: {broken}\n{self.logs()}")
            time.sleep(0.5)
        waited = timeout or self.ready_timeout
        raise ScenarioError(f"{self.scenario} not healthy after {waited:.0f} s: {self.health()}\n{self.logs()}")

    def exited_services(self) -> list[str]:
        """The services whose container has stopped, which `ps --quiet` and so health() do not list."""
        return self.compose("ps", "--services", "--status", "exited", "--status", "dead", check=False).stdout.split()

    def logs(self, tail: int = 30) -> str:
        return self.compose("logs", "--no-color", "--tail", str(tail), check=False).stdout

    def stop(self, service: str) -> None:
        self.compose("stop", "--timeout", "10", service)

    def start(self, service: str) -> None:
        self.compose("start", service)

    def main_pid(self, service: str) -> int:
        return int(docker("inspect", "--format", "{{.State.Pid}}", self.container_ids()[service]))

    def sees_processes(self, service: str) -> bool:
        """Whether the service's processes are in this machine's /proc under the PIDs its engine gives, where the
        sampler reads them; if not, it samples through the engine (bench/containers/sampler.py). Detected per
        container, so that nothing needs configuring: a local engine, rootless or not, passes; an engine in a VM,
        on another machine or in a PID namespace of its own does not."""
        if service not in self._seen:  # asked at every measurement: once per service is enough, an engine stays
            container = self.container_ids()[service]
            inspected = self.docker(service, "inspect", "--format", "{{.Id}} {{.State.Pid}}", container)
            full_id, pid = inspected.split()
            self._seen[service] = sees_container(int(pid), full_id)
        return self._seen[service]

    def processes(self, service: str) -> dict[int, ProcessFacts]:
        """The service's server processes now, each with its uid, CPU ticks and threads: read from this machine's
        /proc where it shows them, else through the service's engine."""
        main_pid = self.main_pid(service)
        if self.sees_processes(service):
            return process_table(main_pid)
        return engine_process_table(self.docker_cli(service), main_pid)

    def net_file(self, service: str, name: str) -> str:
        """A file of /proc/net (tcp, netstat) as the service's network namespace shows it: through its main process
        in this machine's /proc where it shows it, else read inside the container, through its engine."""
        if self.sees_processes(service):
            return Path(f"/proc/{self.main_pid(service)}/net/{name}").read_text()
        return self.docker(service, "exec", self.container_ids()[service], "cat", f"/proc/net/{name}")

    def network(self) -> str:
        return f"{self.scenario}_default"

    def address(self, service: str) -> str:
        """The service's IP address on the scenario's network, for a client container on that network (wrk's URL
        parser refuses the "_" in service names)."""
        networks = json.loads(self.docker(service, "inspect", "--format", "{{json .NetworkSettings.Networks}}",
                                          self.container_ids()[service]))  # fmt: skip
        return networks[self.network()]["IPAddress"]

    # What bench/containers/roles.py's RolesScenario answers per engine: here every service is on the one engine, the
    # one the environment names (this machine's unless DOCKER_HOST or a context says otherwise).
    def docker(self, service: str, *args: str) -> str:
        if not args or args[0] not in READ_ONLY:
            self._ids = None  # docker kill, stop or rm: a container may have gone
        return docker(*args)

    def docker_cli(self, service: str) -> list[str]:
        """The docker command that reaches the engine the service runs on."""
        return ["docker"]

    def loadgen_run(self, image: str) -> list[str]:
        """`docker run` of a load generator's container on the scenario's network."""
        return ["docker", "run", "--rm", "--network", self.network(), image]
