"""Roles (bench/containers/roles.py): the wiring that `docker compose config` shows, and a benchmark across three real
Docker engines on this machine (tests/engines.py)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from bench.containers import roles
from bench.containers.compose import RunningScenario, compose_command
from bench.containers.roles import Engine, Roles, RolesScenario
from bench.containers.sampler import SAMPLER_IMAGE, EngineSampler, Sampler
from bench.containers.scenarios import REGISTRY, ROOT, load_targets
from bench.measure.client import verify
from bench.modes.bench import run as bench_mode
from bench.options import Options
from tests import engines

# Addresses from the documentation ranges: nothing is started, Compose only resolves the files.
THREE_ENGINES = Roles(
    server=Engine(),
    client=Engine("unix:///run/client.sock"),
    database=Engine("ssh://bench@192.0.2.77"),
    bind="198.51.100.6",
    cpusets={"server": "1", "client": "0", "database": "1"},
)


def resolved(scenario: str, placed: Roles) -> tuple[dict, dict[str, list[str]]]:
    """The scenario with the roles' override, as Compose resolves it (no engine needed), and the placement."""
    running = RolesScenario(scenario, placed, [target.service for target in load_targets(scenario)])
    try:
        config = running.compose("config", "--format", "json", engine=Engine()).stdout
        return json.loads(config)["services"], running.placement
    finally:
        running.discard()


def parse(*arguments: str) -> Roles:
    """The roles of `make bench`'s command line: its declared role options (bench/modes/bench/run.py)."""
    parser = Options("roles", "python -m bench.modes.bench", bench_mode.ROLE_OPTIONS).parser(None)
    return roles.from_arguments(parser.parse_args(list(arguments)))


def test_without_roles_every_scenario_starts_from_its_file_alone() -> None:
    unset = parse()
    assert not unset.active and unset == roles.NO_ROLES
    for scenario in REGISTRY:
        for target in load_targets(scenario):
            assert unset.addressed(target) is target  # the same URLs, in and out of the scenario's network
    # What the harness runs is `docker compose -f <file>` alone, as a reader types it.
    for scenario in ("async-gevent-gunicorn", "bonus-psycopg3-gevent"):
        by_hand = [*compose_command(), "--file", f"{scenario}.yml", "config"]
        plain = subprocess.run(by_hand, cwd=ROOT, capture_output=True, text=True, check=True)
        assert RunningScenario(scenario).compose("config").stdout == plain.stdout


def test_the_dependencies_go_to_the_database_host_and_the_app_reaches_them_there() -> None:
    services, placement = resolved("bonus-psycopg3-gevent", THREE_ENGINES)
    assert placement == {"database": ["slow_api", "postgres"], "server": ["app_patch_first", "app_psycopg_first"]}
    for app, port in (("app_psycopg_first", "3000"), ("app_patch_first", "3001")):
        environment = services[app]["environment"]
        assert environment["SLOW_API_URL"] == "http://192.0.2.77:8000/"
        assert environment["DATABASE_URL"] == "postgresql://postgres:playground@192.0.2.77:5432/postgres"
        # Published on BIND only, in place of 127.0.0.1 (Compose's !override), on the server's core.
        assert [(p["host_ip"], p["published"], p["target"]) for p in services[app]["ports"]] == [
            ("198.51.100.6", port, 3000)
        ]
        assert services[app]["cpuset"] == "1"
    assert [(p["host_ip"], p["published"]) for p in services["postgres"]["ports"]] == [("192.0.2.77", "5432")]
    assert [(p["host_ip"], p["published"]) for p in services["slow_api"]["ports"]] == [("192.0.2.77", "8000")]


def test_the_reference_is_the_server_and_stays_whole() -> None:
    services, placement = resolved("reference-slow-api", THREE_ENGINES)
    assert placement == {"database": [], "server": ["slow_api"]}
    assert [(p["host_ip"], p["published"]) for p in services["slow_api"]["ports"]] == [("198.51.100.6", "3000")]


def test_cpusets_alone_pin_every_role_on_the_one_engine() -> None:
    pinned = parse("--cpuset-server", "1", "--cpuset-client", "0", "--cpuset-database", "1")
    services, placement = resolved("async-gevent-gunicorn", pinned)
    assert placement == {"database": [], "server": ["flask_app", "slow_api"]}
    assert services["flask_app"]["environment"]["SLOW_API_URL"] == "http://slow_api:8000/"  # as without roles
    assert services["flask_app"]["ports"][0]["host_ip"] == "127.0.0.1"
    assert (services["flask_app"]["cpuset"], services["slow_api"]["cpuset"]) == ("1", "1")
    running = RolesScenario("async-gevent-gunicorn", pinned, ["flask_app"])
    running.discard()
    assert running.loadgen_run("flask-playground/ab") == [
        "docker", "run", "--rm", "--network", "async-gevent-gunicorn_default", "--cpuset-cpus", "0",
        "flask-playground/ab",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (["--client-host", "unix:///run/other.sock"], "set BIND="),
        (["--database-host", "my-context"], "set DATABASE_BIND="),
        (["--database-host", "unix:///run/db.sock"], "set DATABASE_BIND="),
    ],
)
def test_a_role_apart_without_an_address_to_meet_at_is_refused(arguments: list[str], says: str) -> None:
    with pytest.raises(SystemExit, match=says):
        parse(*arguments)


class StartedContainers:
    """The names of the containers an engine (its unix socket, or "" for the host's) starts while this runs,
    streamed from `docker events`: an engine keeps only its last 256 events, fewer than a run across three engines
    makes (probes, image copies, host facts), so asking afterwards alone loses the first scenario's. The stream starts
    at the moment this object is made (--since), however late it attaches; the last seconds are asked for again once
    the run is over (--until), so that an event still on its way to the stream is not missed."""

    TAIL = 10.0  # seconds before the end asked for again: far fewer than 256 events happen in them

    def __init__(self, engine: str) -> None:
        self.command = [
            "docker", *(["--host", engine] if engine else []), "events", "--filter", "type=container",
            "--filter", "event=start", "--format", "{{.Actor.Attributes.name}}",
        ]  # fmt: skip
        since = f"{time.time():.3f}"
        self.process = subprocess.Popen([*self.command, "--since", since], stdout=subprocess.PIPE, text=True)

    def names(self) -> set[str]:
        end = time.time()
        window = ["--since", f"{end - self.TAIL:.3f}", "--until", f"{end:.3f}"]
        tail = subprocess.run([*self.command, *window], capture_output=True, text=True, timeout=30, check=True)
        self.process.terminate()
        output, _ = self.process.communicate(timeout=10)
        return set(output.split()) | set(tail.stdout.split())


@pytest.fixture(scope="module")
def extra_engines():
    if os.geteuid() != 0 or engines.missing_tools():
        pytest.skip(f"needs root and {engines.missing_tools() or 'ip, nsenter, dockerd, containerd'}")
    engines.clear_leftovers("pgr-client", "pgr-db")
    if engines.address_taken():
        pytest.fail(f"{engines.SUBNET}.0.0/16 is in use on this machine: the extra engines need it free")
    with engines.extra_engines("pgr-client", "pgr-db") as started:
        yield started


@pytest.mark.docker
def test_a_gevent_scenario_and_the_postgres_bonus_across_three_engines(extra_engines, tmp_path: Path) -> None:
    client, database = extra_engines
    arguments = [
        "--scenarios", "async-gevent-gunicorn", "bonus-psycopg3-gevent", "-n", "20", "-c", "10", "--delay", "0.3",
        # The server stays on the host's engine, published on the host's side of the client's veth.
        "--client-host", client.socket, "--database-host", database.socket,
        "--bind", client.host_side, "--database-bind", database.address, "--out", str(tmp_path),
    ]  # fmt: skip
    watching = {engine: StartedContainers(engine) for engine in ("", client.socket, database.socket)}
    assert bench_mode.main(arguments) == 0
    started = {engine: watch.names() for engine, watch in watching.items()}
    document = json.loads((tmp_path / "results.json").read_text())
    records = {record["target"]: record for record in document["results"]}
    assert records.keys() == {"slow_api-alone", "gunicorn-gevent", "psycopg3-before-patch", "psycopg3-after-patch"}
    for name, record in records.items():
        assert record["verified"] and record["ok"] and (record["failed"], record["non2xx"]) == (0, 0), record
        # ab ran in a container on the client's engine, and its requests crossed to the server's address.
        assert record["command"].startswith(f"docker --host {client.socket} run --rm flask-playground/ab ab "), name
        assert f"http://{client.host_side}:{3001 if name == 'psycopg3-after-patch' else 3000}/" in record["command"]
        assert record["p50_ms"] >= 300 and 0 < record["rps"] <= 1.01 * record["ceiling_rps"], record
        where = record["roles"]
        assert (where["server"]["engine"], where["client"]["engine"]) == ("local", client.socket)
        assert where["database"]["engine"] == database.socket
        for role in ("server", "client", "database"):
            assert where[role]["cores"] >= 1 and where[role]["kernel"] and where[role]["cpu_model"], where
        assert where["shared_machine"] and where["one_machine"], where  # three engines, one kernel
        # The CPU probe ran on each role's engine around the load, and says whether the CPU kept its speed.
        probe = record["cpu_probe"]
        assert probe["seconds"].keys() == probe["moved"].keys() == set(roles.ROLES), probe
        assert all(times.keys() == {"before", "after"} for times in probe["seconds"].values()), probe
        assert all(min(times.values()) > 0 for times in probe["seconds"].values()), probe
        assert probe["steady"] == all(moved <= roles.UNSTEADY_FACTOR for moved in probe["moved"].values())
    # Each engine started its role's containers and no other's: slow_api and Postgres on the database's, the apps
    # on the host's, ab on the client's. The apps' verified answers carry slow_api's (and Postgres's) half, which
    # they could only get across from the database's engine.
    projects = ("async-gevent-gunicorn-", "bonus-psycopg3-gevent-")  # the rest: probes, host facts, ab
    assert {name for name in started[database.socket] if name.startswith(projects)} == {
        "async-gevent-gunicorn-slow_api-1", "bonus-psycopg3-gevent-slow_api-1", "bonus-psycopg3-gevent-postgres-1"
    }  # fmt: skip
    assert {"async-gevent-gunicorn-flask_app-1", "bonus-psycopg3-gevent-app_patch_first-1"} <= started[""]
    ours = {name for name in started[""] if name.startswith(projects)}
    assert not {name for name in ours if name.endswith(("slow_api-1", "postgres-1"))}, ours
    assert started[client.socket] and not any(name.startswith(projects) for name in started[client.socket])
    # Postgres's sessions, counted from its processes: the app's pool connected across to it.
    assert records["psycopg3-after-patch"]["pg_sessions_peak"] >= 1
    # The server ran on this machine: its processes were read from this machine's /proc.
    assert all(record["sampled_on"] == "this machine" for record in records.values()), records


@pytest.mark.docker
def test_a_server_on_another_engine_is_sampled_through_that_engine(extra_engines) -> None:
    """A server on another machine's engine is out of this machine's /proc: the harness samples it in a container
    on that engine (EngineSampler). This engine runs on this machine, so both ways can read the same process here,
    and must agree: its threads exactly, its memory closely, its CPU time both well above nothing."""
    engine = Engine(extra_engines[1].socket)
    roles.copy_images([SAMPLER_IMAGE], engine)
    busy = "import threading, time\nfor _ in range(6): threading.Thread(target=time.sleep, args=(600,)).start()\n"
    busy += "x = 0\nwhile True: x += 1\n"  # 7 threads, one of them always on the CPU
    started = [*engine.cli(), "run", "-d", "--rm", "--network", "none", SAMPLER_IMAGE, "python", "-c", busy]
    container = subprocess.run(started, check=True, capture_output=True, text=True).stdout.strip()
    try:
        inspect = [*engine.cli(), "inspect", "--format", "{{.State.Pid}}", container]
        pid = int(subprocess.run(inspect, check=True, capture_output=True, text=True).stdout)
        with EngineSampler(engine.cli(), pid) as there, Sampler(pid) as here:
            time.sleep(1.5)  # the window both sample over, not a wait for anything
        assert there.problem is None, there.problem
        assert there.usage.threads_peak == here.usage.threads_peak == 7, (there.usage, here.usage)
        assert there.usage.rss_mb_peak > 0 and abs(there.usage.rss_mb_peak - here.usage.rss_mb_peak) < 2
        assert there.usage.cpu_seconds >= 0.3 and here.usage.cpu_seconds >= 0.3, (there.usage, here.usage)
    finally:
        subprocess.run([*engine.cli(), "rm", "--force", container], capture_output=True)


@pytest.mark.docker
def test_cpusets_pin_each_role_on_one_engine() -> None:
    pinned = parse("--cpuset-server", "1", "--cpuset-database", "0", "--cpuset-client", "0")
    with RolesScenario("async-gevent-gunicorn", pinned, ["flask_app"]) as running:
        ids = running.container_ids()
        cpusets = {
            service: running.docker(service, "inspect", "--format", "{{.HostConfig.CpusetCpus}}", ids[service]).strip()
            for service in ids
        }
        assert cpusets == {"flask_app": "1", "slow_api": "0"}
        # The load generator's container runs on the client's core, on the scenario's network.
        (target,) = map(pinned.addressed, load_targets("async-gevent-gunicorn"))
        # The cores the kernel lets its processes run on (a cpuset is a CPU affinity to them).
        inside = ["python", "-c", "import os; print(sorted(os.sched_getaffinity(0)))"]
        command = [*running.loadgen_run("flask-playground/ab"), *inside]
        assert subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip() == "[0]"
        assert verify(target, 0.2) is None
