"""What the harness needs of the host and how it copes with what it finds: the Python it runs on, the open-file
limit where the system refuses the one it asks for (macOS caps it per process), and whether this machine's /proc
shows a container's processes (else the harness reads them through the engine)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from bench.containers import cgroup, doctor, roles, sampler
from bench.containers.compose import RunningScenario
from bench.containers.images import build_on_first_use
from bench.containers.sampler import SAMPLER_IMAGE
from bench.containers.scenarios import ROOT
from bench.measure import resultset
from bench.measure.client import build_loadgen_image
from bench.modes.bench import run as bench_mode
from tests import engines
from tests.conftest import HOST_LOADGENS, free_port, path_without
from tests.test_html_report import CHROMIUM_DOCKERFILE, CHROMIUM_IMAGE


def test_an_older_python_stops_with_one_line_saying_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "version_info", (3, 10, 14, "final", 0))
    source = (ROOT / "bench" / "__init__.py").read_text()
    with pytest.raises(SystemExit, match=r"^the harness needs Python 3\.11 or later; this is ") as stopped:
        exec(compile(source, "bench/__init__.py", "exec"), {})
    assert "\n" not in str(stopped.value)


def test_the_file_limit_is_the_highest_the_system_allows(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As macOS does above kern.maxfilesperproc (10240 by default): setrlimit raises ValueError, the hard limit
    says unlimited."""
    limits = {"now": (256, resource.RLIM_INFINITY)}

    def setrlimit(kind: int, pair: tuple[int, int]) -> None:
        if pair[0] > 10240:
            raise ValueError("current limit exceeds maximum limit")
        limits["now"] = pair

    monkeypatch.setattr(resource, "getrlimit", lambda kind: limits["now"])
    monkeypatch.setattr(resource, "setrlimit", setrlimit)
    assert resultset.raise_file_limit() == 10240
    assert limits["now"] == (10240, resource.RLIM_INFINITY)
    assert capsys.readouterr().out == (
        "open files: this system allows 10240 per process, not 65536: loads of more clients will fail\n"
    )


def test_a_file_limit_already_high_enough_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (100000, 100000))
    monkeypatch.setattr(resource, "setrlimit", lambda kind, pair: pytest.fail("nothing to raise"))
    assert resultset.raise_file_limit() == 100000
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (1024, 4096))
    monkeypatch.setattr(resource, "setrlimit", lambda kind, pair: None)
    assert resultset.raise_file_limit() == 4096


def test_a_pid_that_is_not_the_container_s_is_not_seen() -> None:
    """The PID an engine in a VM or a PID namespace gives is another process here, or none: neither is the
    container's (no cgroup named after it)."""
    container = "4f" * 32
    assert not sampler.sees_container(os.getpid(), container)  # this test's own process: another cgroup
    assert not sampler.sees_container(2**22 + 1, container)  # above any pid_max: no such process


# Another engine on this machine, in a network namespace of its own (tests/in_docker.py runs two), has docker-proxy
# processes of its own; one of them exiting with its stack is no news about the proxy in front of this client.
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="a network namespace needs root")
def test_only_the_docker_proxies_of_this_network_namespace_are_this_client_s(tmp_path: Path) -> None:
    proxy = tmp_path / "docker-proxy"  # its file's name is the process's comm
    shutil.copy(shutil.which("sleep") or "/bin/sleep", proxy)
    here = subprocess.Popen([proxy, "30"])
    elsewhere = subprocess.Popen(["unshare", "--net", proxy, "30"])  # unshare execs: the same pid
    try:
        for pid in (here.pid, elsewhere.pid):  # until each runs the copy, not the unshare before it
            for _ in range(100):
                if Path(f"/proc/{pid}/comm").read_text().strip() == "docker-proxy":
                    break
                time.sleep(0.05)
        assert {here.pid, elsewhere.pid} <= set(sampler.docker_proxy_pids())
        mine = sampler.docker_proxy_pids(sampler.this_network())
        assert here.pid in mine and elsewhere.pid not in mine, (mine, here.pid, elsewhere.pid)
    finally:
        for process in (here, elsewhere):
            process.kill()
            process.wait()


# What `make test` runs its parts behind in (tests/in_docker.py): two busy loops on one core, one in the group, get
# the CPU in about the ratio of their weights, 8 to 1; at the same weight they would share it half and half.
@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("taskset"), reason="a cgroup needs root")
@pytest.mark.timing
def test_a_process_in_a_low_cpu_group_gets_the_cpu_only_where_the_others_leave_it() -> None:
    """Two busy loops on one core, one in the low group, the other in a group of the default weight: not in the root
    group, where the kernel's autogroups would share its weight with whatever else runs in this session (in the
    parallel pool the other workers did: 0.98 s against 0.36 s)."""
    busy = [sys.executable, "-c", "import time\nend = time.monotonic() + 2\nwhile time.monotonic() < end: pass"]
    with (
        engines.low_cpu_group("playground-test-low-weight", 1 / 8) as group,
        engines.low_cpu_group("playground-test-default-weight", 1) as default,
    ):
        if group is None or default is None:
            pytest.skip("no cgroup of CPU weight can be made here")
        low = subprocess.Popen(group.command(["taskset", "--cpu-list", "0", *busy]))
        normal = subprocess.Popen(default.command(["taskset", "--cpu-list", "0", *busy]))
        used = {}
        for name, process in (("low", low), ("normal", normal)):
            _, status, usage = os.wait4(process.pid, 0)  # its CPU time, which Popen.wait does not give
            process.returncode = os.waitstatus_to_exitcode(status)
            used[name] = usage.ru_utime + usage.ru_stime
    # Both loops must have run at all (a core taken whole by something else leaves nothing to compare).
    assert used["normal"] > 0.5, f"premise: the loop of the default weight got {used['normal']:.2f} s of 2 s"
    assert used["normal"] > 3 * used["low"], used


@pytest.mark.docker
def test_the_host_engine_s_container_is_seen_and_its_cgroup_read_here_and_through_the_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On this machine's engine the harness reads /proc and the cgroup here; where it could not, the cgroup's
    figures come through the engine (docker exec ... cat) and agree."""
    busy = "x = 0\nwhile True: x += 1\n"
    started = ["docker", "run", "-d", "--rm", "--network", "none", SAMPLER_IMAGE, "python", "-c", busy]
    container = subprocess.run(started, check=True, capture_output=True, text=True).stdout.strip()
    try:
        inspect = ["docker", "inspect", "--format", "{{.State.Pid}}", container]
        pid = int(subprocess.run(inspect, check=True, capture_output=True, text=True).stdout)
        assert sampler.sees_container(pid, container)
        here = cgroup.container_cpu_seconds(container), cgroup.container_memory_mb(container)
        monkeypatch.setattr(cgroup, "cgroup_dir", lambda container, controller: None)
        there = cgroup.container_cpu_seconds(container), cgroup.container_memory_mb(container)
        assert None not in here and None not in there, (here, there)
        # The CPU time goes on growing between the two reads (one core busy), the memory barely moves.
        assert 0 <= there[0] - here[0] < 2 and abs(there[1] - here[1]) < 2, (here, there)
        assert cgroup.container_cpu_seconds("0" * 64) is None  # no such container: neither way answers
    finally:
        subprocess.run(["docker", "rm", "--force", container], capture_output=True)


# --- An engine whose processes this machine cannot see (as Docker Desktop's VM), without the host's tools ------

# The same small run on this machine's engine and on the other: what their records must agree within. Threads and
# memory are the servers' own and hardly move between two runs (gevent's resolver pool aside: it grows with the
# lookups that happen to overlap, so the runs use c-ares, one thread). CPU time over 10 requests counts whole
# scheduler ticks (10 ms) and moves with the CPU's speed (up to 1.8x within minutes here), so only its order of
# magnitude is compared: within a factor of 4, or 2 ticks apart.
THREADS_WITHIN, RSS_WITHIN, CPU_FACTOR, CPU_TICKS_APART = 2, 0.15, 4.0, 0.02
# 10 ms of CPU work a request: CPU time counts whole scheduler ticks (10 ms) of each process, and without work a
# request took 1 to 3 ms here (2026-11-29, AMD EPYC), so a target of ten requests read none on one engine.
SMALL_RUN = [
    "--scenarios", "async-gevent-gunicorn", "sync-gunicorn", "-n", "10", "-c", "5", "--delay", "0.3", "--cpu", "10"
]  # fmt: skip


def run_bench(out: Path, *arguments: str) -> dict[str, dict]:
    assert bench_mode.main([*SMALL_RUN, "--no-reference", *arguments, "--out", str(out)]) == 0
    return {record["target"]: record for record in json.loads((out / "results.json").read_text())["results"]}


USER = "playground-user"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@contextlib.contextmanager
def docker_group_user() -> Iterator[Path]:
    """A user who is not root, in the docker group (of both engines' sockets), with a home of its own; gone after."""
    subprocess.run(["userdel", "--remove", USER], capture_output=True)  # left by a run that was killed
    home = Path(tempfile.mkdtemp(prefix="playground-user-"))
    add = ["useradd", "--home-dir", str(home), "--no-create-home", "--groups", "docker", "--shell", "/bin/sh", USER]
    subprocess.run(add, check=True, capture_output=True)
    try:
        shutil.chown(home, USER, USER)
        yield home
    finally:
        subprocess.run(["userdel", USER], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)


def python_for(user: str) -> tuple[str, dict[str, str]]:
    """A Python the user may run with this one's packages: this one, or (where it lives in root's home, as a
    pyenv build does) the system's of the same version, given the venv's packages."""
    if subprocess.run(["runuser", "-u", user, "--", sys.executable, "-V"], capture_output=True).returncode == 0:
        return sys.executable, {}
    system = shutil.which("python3", path="/usr/bin:/bin") or ""
    version = subprocess.run([system, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True, text=True)
    if not system or version.stdout.strip() != str(tuple(sys.version_info[:2])):
        pytest.skip(f"{user} may not run {sys.executable}, and no system Python {sys.version_info[:2]} is there")
    packages = next(path for path in sys.path if path.endswith("site-packages") and path.startswith(sys.prefix))
    return system, {"PYTHONPATH": packages}


def run_bench_as_user(home: Path, *arguments: str) -> dict[str, dict]:
    """The same run as run_bench, as USER, with the host's load generators hidden from its PATH."""
    path = path_without(HOST_LOADGENS, home / "bin", SYSTEM_PATH)  # not root's own folders, closed to the user
    out = home / "out"
    python, extra = python_for(USER)
    environment = {"HOME": str(home), "PATH": path, "GEVENT_RESOLVER": "ares", "LANG": "C.UTF-8", **extra}
    command = [python, "-m", "bench.modes.bench", *SMALL_RUN, "--no-reference", *arguments, "--out", str(out)]
    ran = ["runuser", "-u", USER, "--", "/usr/bin/env", "-i", *(f"{k}={v}" for k, v in environment.items()), *command]
    finished = subprocess.run(ran, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    return {record["target"]: record for record in json.loads((out / "results.json").read_text())["results"]}


@pytest.fixture(scope="module")
def unseen_engine():
    """An engine in a PID namespace (and a network namespace) of its own: `docker inspect` gives PIDs that are
    not this machine's processes. Its own address range, so that it runs beside the roles' test's engines."""
    missing = engines.unseen_engine_missing()
    if missing:
        pytest.skip(f"an engine in namespaces of its own needs {missing}")
    engines.clear_leftovers("pgp-vm")
    if engines.address_taken(UNSEEN_SUBNET):
        pytest.fail(f"{UNSEEN_SUBNET}.0.0/16 is in use on this machine: the unseen engine needs it free")
    with engines.extra_engines("pgp-vm", pid_namespace=True, subnet=UNSEEN_SUBNET) as (engine,):
        yield engine


UNSEEN_SUBNET = "10.232"


@pytest.mark.docker
def test_an_engine_whose_processes_this_machine_cannot_see_is_sampled_through_it(
    unseen_engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """make bench with every role on that engine, its ports published on its address, run by a user who is not
    root (in the docker group), with ab, hey, wrk and vegeta hidden from PATH: every record filled, sampled through
    the engine, and agreeing with the same run on this machine's engine (ab in its container there too, so that
    both load alike)."""
    monkeypatch.setenv("PATH", path_without(HOST_LOADGENS, tmp_path / "bin"))
    monkeypatch.setenv("GEVENT_RESOLVER", "ares")
    engine = unseen_engine.socket
    roles = ["--server-host", engine, "--client-host", engine, "--database-host", engine]
    with docker_group_user() as home:
        unseen = run_bench_as_user(home, *roles, "--bind", unseen_engine.address)
        page = (home / "out" / "results.md").read_text()
    assert f"not on this machine: the processes of every target (`docker --host {engine}`)." in page, page
    here = run_bench(tmp_path / "here", "--client", "container")
    assert unseen.keys() == here.keys() == {"gunicorn-gevent", "gunicorn-sync"}
    for name, record in unseen.items():
        mine = here[name]
        assert record["ok"] and mine["ok"], (record, mine)
        assert record["sampled_on"] == f"through the engine: docker --host {engine}", record
        assert mine["sampled_on"] == "this machine" and "not_sampled" not in record, mine
        assert record["client"] == mine["client"] == "container" and " flask-playground/ab ab " in record["command"]
        assert record["threads_idle"] > 0 and record["threads_peak"] >= record["threads_idle"], record
        # gthread workers start a pool thread for a request when none is idle, and which workers the kernel hands
        # the clients' connections (and the healthchecks) to differs from run to run: up to one thread more or
        # less per worker, on either engine, idle and at the peak.
        per_worker = record["workers"] if record["mode"] == "sync" else 0
        assert abs(record["threads_peak"] - mine["threads_peak"]) <= THREADS_WITHIN + per_worker, (name, record, mine)
        assert record["rss_mb_peak"] == pytest.approx(mine["rss_mb_peak"], rel=RSS_WITHIN), (name, record, mine)
        assert abs(record["threads_idle"] - mine["threads_idle"]) <= per_worker, (name, record, mine)
        cpu, cpu_here = (1000 * r["cpu_seconds"] / r["n"] for r in (record, mine))
        assert cpu > 0 and cpu_here > 0, (name, record, mine)
        apart = abs(record["cpu_seconds"] - mine["cpu_seconds"]) <= CPU_TICKS_APART
        assert apart or 1 / CPU_FACTOR <= cpu / cpu_here <= CPU_FACTOR, (name, cpu, cpu_here)
        assert record["cpu_seconds_others"].keys() == mine["cpu_seconds_others"].keys() == {"slow_api"}
        assert 0 < record["machine_busy"] <= 1, record
        print(
            f"{name}: threads {record['threads_idle']} -> {record['threads_peak']} vs {mine['threads_idle']} ->"
            f" {mine['threads_peak']}, RSS {record['rss_mb_peak']} vs"
            f" {mine['rss_mb_peak']} MB, CPU {cpu:.2f} vs {cpu_here:.2f} ms per request (engine vs this machine)"
        )


# What of `make test` runs against that engine as on Docker Desktop: the tests without Docker in files that call the
# engine or a host tool, and every test of these scenarios (the tutorial's gevent worker and its threads;
# tests/conftest.py does not run them here again).
SCENARIOS_THERE = engines.SCENARIOS_ON_THE_UNSEEN_ENGINE
HOST_TOOLS = (*HOST_LOADGENS, "chromium", "chromedriver")
# The rest of the tests without Docker (renderers, parsers, the docs' figures, the apps as processes) run Python on
# files alone, the same on any engine. Run with docker and the tools off PATH, those that failed or skipped (ab, hey
# and wrk against slow_api, Compose's config, the pages in Chromium, wrk's script) were all in the files this picks.
CALLS_ENGINE_OR_TOOL = re.compile(
    r"shutil\.which|\[\"docker\"|[^_.]docker\(|chromium|tool_beside_a_server|compose_command|RolesScenario"
    r"|RunningScenario\(|build_loadgen_image|DOCKER_HOST|sees_processes|doctor\."
)


def files_calling_the_engine_or_a_tool() -> list[str]:
    tests = sorted((ROOT / "tests").glob("test_*.py"))
    return [str(path.relative_to(ROOT)) for path in tests if CALLS_ENGINE_OR_TOOL.search(path.read_text())]


@pytest.mark.docker
def test_the_engine_s_tests_and_two_scenarios_tests_pass_against_that_engine(unseen_engine, tmp_path: Path) -> None:
    """As on Docker Desktop: `docker` reaches an engine whose processes this machine cannot see, 127.0.0.1 reaches
    its published ports, and ab, hey, wrk, vegeta, chromium and chromedriver are not on PATH. The tests run in the
    engine's network namespace, whose loopback has its published ports as Docker Desktop forwards them to the Mac's.
    That engine reaches no package index: it gets the images from this machine's engine, and builds none."""
    engine = roles.Engine(unseen_engine.socket)
    images = [SAMPLER_IMAGE, *(build_loadgen_image(tool) for tool in ("ab", "hey", "wrk"))]
    images.append(build_on_first_use(CHROMIUM_IMAGE, CHROMIUM_DOCKERFILE, "tests"))
    for scenario in SCENARIOS_THERE:
        running = RunningScenario(scenario)
        running.compose("build")
        images += running.compose("config", "--images").stdout.split()
    roles.copy_images(images, engine)
    environment = {
        **os.environ, "DOCKER_HOST": engine.address or "", "PATH": path_without(HOST_TOOLS, tmp_path / "bin"),
        "TESTS_BUILD": "0", "TESTS_SCENARIOS": " ".join(SCENARIOS_THERE),
    }  # fmt: skip
    in_namespace = ["nsenter", f"--net=/var/run/netns/{unseen_engine.name}", sys.executable, "-m", "pytest"]
    # Those tests without Docker, and the scenarios' tests beside them: the two share nothing but the machine's cores.
    selections = {
        "the tests without Docker that call the engine or a tool": [
            "-m",
            "not docker and not timing",  # those measure the scheduler: not beside the scenarios' tests
            *files_calling_the_engine_or_a_tool(),
        ],
        "the scenarios' tests": ["tests/test_scenarios.py"],
    }
    running = {
        name: subprocess.Popen(
            [*in_namespace, "-p", "no:cacheprovider", "-q", "-rs", *selection],
            cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        for name, selection in selections.items()
    }  # fmt: skip
    try:
        for name, process in running.items():
            output, _ = process.communicate(timeout=1200)
            summary = output.strip().splitlines()[-1] if output.strip() else ""
            failures = output[output.find("= FAILURES =") :][:6000]  # or the end, where none failed
            assert process.returncode == 0, f"{name}:\n{failures}{output[-1500:]}"
            assert " passed" in summary and "skipped" not in summary, f"{name}:\n{output[-3000:]}"
            print(f"{name}: {summary}")
    finally:  # not left running against an engine that goes next
        for process in running.values():
            if process.poll() is None:
                process.kill()
                process.wait()


# --- make doctor --------------------------------------------------------------------------------------------------


def test_doctor_says_what_runs_in_a_container_and_what_is_taken(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A machine without docker and without the load generators, one of the project's ports taken."""
    monkeypatch.setenv("PATH", path_without((*HOST_LOADGENS, "chromedriver", "docker"), tmp_path / "bin"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        monkeypatch.setattr(doctor, "PORTS", (port, free_port()))
        printed: list[str] = []
        lines = dict(doctor.report(echo=printed.append))
    assert len(printed) == len(lines) <= 24, printed  # one screen
    assert lines["Docker engine"].startswith("NO docker command")
    assert lines["sees the containers"] == "unknown (no engine)"
    for tool in HOST_LOADGENS:
        assert lines[tool].startswith(f"in a container instead (bench/loadgen/Dockerfile-{tool})"), lines[tool]
    assert lines["chromium"].startswith("in a container instead (tests/Dockerfile-chromium)"), lines["chromium"]
    assert lines["ports"].startswith(f"TAKEN on 127.0.0.1: {port} ("), lines["ports"]
    assert lines["Python"].endswith(": ok")
    assert lines["make test takes"].startswith("about ") and lines["make test takes"].endswith("(docs/tests.md)")


def test_doctor_checks_every_port_a_compose_file_publishes() -> None:
    """Read from the compose files as Compose reads them (YAML, each service's `ports`), not by the doctor's pattern."""
    published = set()
    for file in ROOT.glob("*.yml"):
        for service in (yaml.safe_load(file.read_text()).get("services") or {}).values():
            published |= {int(port.split(":")[1]) for port in service.get("ports", [])}
    assert published and set(doctor.PORTS) == published, (sorted(published), doctor.PORTS)


def test_doctor_takes_make_bench_s_duration_from_the_newest_set(tmp_path: Path) -> None:
    def result_set(name: str, metadata: dict, scenarios: tuple[str, ...] = ()) -> Path:
        path = tmp_path / name / "results.json"
        path.parent.mkdir()
        records = [{"scenario": scenario} for scenario in ("reference-slow-api", *scenarios, *scenarios)]
        path.write_text(json.dumps({"metadata": metadata, "results": records}))
        return path

    command = "python -m bench.modes.bench --out results/old --repeat 3 --client auto --cold-build --also 1000"
    old = {"mode": "bench", "date": "2026-11-20T10:00:00+00:00", "minutes": 30.5, "cpu_count": 2, "command": command}
    whole = result_set("old", old, ("sync-gunicorn", "nginx-gunicorn"))
    latency = result_set("latency", {"mode": "latency", "date": "2026-11-25T10:00:00+00:00", "minutes": 3})
    part = result_set("part", {"mode": "bench", "date": "2026-11-24T10:00:00+00:00", "minutes": 2}, ("sync-uwsgi",))
    line = doctor.make_bench_duration_line([whole, latency, part])  # the largest, not the newest
    assert line == "30.5 min for 2 scenarios (REPEAT=3 ALSO=1000), results/old (2026-11-20, 2 cores)", line
    newest = result_set("new", {"mode": "bench", "date": "2026-11-24T10:00:00+00:00"}, ("a", "b"))
    assert doctor.make_bench_duration_line([whole, latency, newest]).startswith(
        "not recorded: the largest committed set, results/new (2026-11-24)"
    )
    assert doctor.make_bench_duration_line([]) == "not recorded: no committed make bench result set"


@pytest.mark.docker
def test_doctor_finds_this_machine_s_engine_and_sees_its_containers() -> None:
    seen, line = doctor.sees_processes()
    assert seen is True, line
    lines = dict(doctor.report(echo=lambda line: None))
    assert lines["Compose v2"].endswith(": ok") and not lines["Docker engine"].startswith("NO"), lines
    assert lines["sees the containers"].startswith("yes: "), lines


# .ci/slower holds the whole run to 1.3 cores: a check of time then counts "half the machine" of those, not of the
# machine's two, or the other parts never seem busy enough to explain a failure (tests/cpu_share.py).
@pytest.mark.skipif(os.geteuid() != 0 or not Path("/sys/fs/cgroup/cpu").is_dir(), reason="a cgroup needs root")
def test_a_run_under_a_cpu_quota_counts_the_cores_of_its_quota() -> None:
    # Both groups at the top, each with a process of its own: this run may itself be held to a quota (.ci/slower).
    group = Path(f"/sys/fs/cgroup/cpu/playground-quota-test-{os.getpid()}")
    inner = group / "inner"
    free_group = Path(f"/sys/fs/cgroup/cpu/playground-quota-free-{os.getpid()}")
    inner.mkdir(parents=True)
    free_group.mkdir()
    try:
        (group / "cpu.cfs_period_us").write_text("100000")
        (group / "cpu.cfs_quota_us").write_text("130000")
        code = "from tests.cpu_share import machine_cores; print(machine_cores())"

        def cores_in(where: Path) -> float:
            enter = f"echo $$ > {where}/cgroup.procs && exec {sys.executable} -c '{code}'"
            return float(
                subprocess.run(["sh", "-c", enter], cwd=ROOT, capture_output=True, text=True, check=True).stdout
            )

        held, free = cores_in(inner), cores_in(free_group)
        assert held == pytest.approx(1.3) and free == float(os.cpu_count() or 1), (held, free)
    finally:
        inner.rmdir()
        group.rmdir()
        free_group.rmdir()
