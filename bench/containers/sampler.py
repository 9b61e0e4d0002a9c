"""Samples a server's processes from /proc while a load runs: OS threads, memory, CPU time; the CPU time of
everything else on the request's path (slow_api, Nginx, docker-proxy) and of the machine; Postgres's client sessions
and its container's memory. And one look at a server's processes (process_table: each one's uid, CPU, threads).

It reads this machine's /proc where the server's processes are there (sees_container). Where they are not, because
the engine runs in a VM (Docker Desktop), on another machine (DOCKER_HOST, SERVER_HOST=) or in a PID namespace of
its own, EngineSampler and engine_process_table run this same file in a container on that engine (`--pid host`: the
/proc of the engine's machine, with the PIDs `docker inspect` gives), so the columns stay filled. The file uses the
standard library alone for that reason: it is all the container gets."""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# A Postgres backend serving a client names the client's address and port in its title.
CLIENT_BACKEND = re.compile(rb"^postgres: .*\(\d+\)")


@dataclass
class Usage:
    threads_peak: int = 0
    rss_mb_peak: float = 0.0
    cpu_seconds: float = 0.0  # the server's processes
    pg_sessions_peak: int | None = None  # Postgres's client sessions open (of one client, where one is named)
    pg_busy_peak: int | None = None  # of those, in a query or a transaction
    pg_memory_mb_peak: float | None = None  # Postgres's container, where asked for (pg_memory)
    # The other processes on the request's path, by name ("slow_api", "nginx", "httpd", "docker-proxy").
    cpu_seconds_others: dict[str, float] = field(default_factory=dict)
    machine_busy: float = 0.0  # share of all the machine's CPU time spent busy during the load, 0 to 1


def children_by_parent() -> dict[int, list[int]]:
    """Every process on this machine under its parent's PID, from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            # The command name, in parentheses, may hold spaces: the parent PID is the 2nd field after it.
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return children


def children(pid: int) -> list[int]:
    return sorted(children_by_parent().get(pid, []))


def server_pids(main_pid: int) -> list[int]:
    """Host PIDs of a server: the container's main process and its descendants, less the init process that
    `init: true` puts in front. Healthcheck probes are not descendants, so they are not counted."""
    children = children_by_parent()
    tree, frontier = [main_pid], [main_pid]
    while frontier:
        frontier = [child for pid in frontier for child in children.get(pid, [])]
        tree += frontier
    return [pid for pid in tree if command_name(pid) not in ("docker-init", "tini")]


def sees_container(pid: int, container_id: str) -> bool:
    """Whether this machine's /proc shows the container's main process under the PID `docker inspect` gives: the
    process with that PID here is in a cgroup named after the container (Docker names it so with either cgroup
    driver and version, rootless too). Not so where the engine runs in a VM (Docker Desktop), on another machine
    (DOCKER_HOST), or in a PID namespace of its own: that PID is then another process here, or none."""
    try:
        return container_id in Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:  # no such process here, or no /proc at all (macOS)
        return False


def command_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def os_threads(pids: list[int]) -> int:
    """OS threads of these processes, read from /proc on the host: nothing runs inside to count itself."""
    total = 0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError):  # the process ended between listing and counting
            total += len(os.listdir(f"/proc/{pid}/task"))
    return total


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def _machine_ticks() -> tuple[int, int]:
    """(busy, total) CPU ticks of the whole machine since boot."""
    values = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    idle = values[3] + values[4]  # idle + iowait
    return sum(values) - idle, sum(values)


def docker_proxy_pids(network: str | None = None) -> list[int]:
    """The docker-proxy processes: each published port's userland proxy, on every request's path. With `network` (a
    /proc/<pid>/ns/net link), only those in that network namespace: a proxy serves its own namespace's 127.0.0.1, and
    another engine on the machine, in a namespace of its own, has its own proxies, which come and go with its stacks."""
    pids = []
    for comm in Path("/proc").glob("[0-9]*/comm"):
        with contextlib.suppress(OSError):
            if comm.read_text().strip() == "docker-proxy" and network in (None, os.readlink(comm.parent / "ns/net")):
                pids.append(int(comm.parent.name))
    return pids


def this_network() -> str:
    """This process's network namespace, as docker_proxy_pids takes it."""
    return os.readlink("/proc/self/ns/net")


def alive(pid: int) -> bool:
    """Whether the process exists and has not exited (a zombie waits for its parent, and serves nothing)."""
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


@dataclass(frozen=True)
class ProcessFacts:
    """One process of a server as its /proc shows it at one moment."""

    uid: int  # the real uid: 0 is root
    cpu_ticks: int  # user + system time since it started, in clock ticks
    threads: int


def process_table(main_pid: int) -> dict[int, ProcessFacts]:
    """The server's processes (server_pids) now, from this machine's /proc; one that ended since it was listed
    (a healthcheck's, a short-lived Postgres backend) is left out: gone, it runs nothing."""
    table = {}
    for pid in server_pids(main_pid):
        with contextlib.suppress(OSError, IndexError, KeyError, ValueError):
            status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
            table[pid] = ProcessFacts(int(status["Uid"].split()[0]), cpu_ticks(pid), int(status["Threads"]))
    return table


def on_the_engine(docker_cli: list[str], config: dict[str, Any], *options: str) -> list[str]:
    """This file run with `config` through the engine (`docker_cli`), in a container that sees its machine's PIDs
    (`--pid host`) and no network."""
    return [
        *docker_cli, "run", "--rm", "--pid", "host", *options, "--network", "none", SAMPLER_IMAGE, "python", "-c",
        Path(__file__).read_text(), json.dumps(config),
    ]  # fmt: skip


def engine_process_table(docker_cli: list[str], main_pid: int, timeout: float = 60.0) -> dict[int, ProcessFacts]:
    """process_table run through the engine (`docker_cli`), in a container that sees its machine's PIDs."""
    command = on_the_engine(docker_cli, {"processes": main_pid})
    output = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True).stdout
    return {int(pid): ProcessFacts(**facts) for pid, facts in json.loads(output.splitlines()[-1]).items()}


def pg_sessions(postgres_pid: int, client: str | None = None) -> tuple[int, int]:
    """Client backends open, and those doing something (in a query or in a transaction), of every client or of
    the one at address `client`. Read from their process titles (`postgres: user db 172.18.0.3(40412) idle`),
    which show what pg_stat_activity's state does, so that watching costs Postgres no query."""
    opened = busy = 0
    mine = None if client is None else f" {client}(".encode()
    for pid in server_pids(postgres_pid):
        try:
            title = Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0")
        except OSError:
            continue
        if CLIENT_BACKEND.match(title) and (mine is None or mine in title):
            opened += 1
            busy += not title.endswith(b" idle")
    return opened, busy


CGROUPS = Path("/sys/fs/cgroup")


def memory_mb(stat: str) -> float:
    """From a cgroup's memory.stat: its private memory and its shared memory (Postgres's shared buffers in use), not
    the page cache: with millions of rows the kernel caches the data files, and that is the machine's, not
    Postgres's."""
    values = dict(line.split() for line in stat.splitlines() if line.strip())
    private = int(values.get("total_rss", values.get("rss", values.get("anon", 0))))
    shared = int(values.get("total_shmem", values.get("shmem", 0)))
    return round((private + shared) / 2**20, 1)


def cgroup_memory_mb(pid: int, root: Path = CGROUPS) -> float | None:
    """memory_mb of the cgroup that process `pid` is in (its container's; cgroup v1 or v2), the hierarchy mounted
    at `root`; None where it is not there."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        hierarchy, controllers, path = line.split(":", 2)
        if hierarchy == "0" and not controllers:  # v2's unified hierarchy
            stat = root / path.lstrip("/") / "memory.stat"
        elif "memory" in controllers.split(","):
            stat = root / controllers / path.lstrip("/") / "memory.stat"
        else:
            continue
        with contextlib.suppress(OSError):
            return memory_mb(stat.read_text())
    return None


class _CpuAccount:
    """CPU ticks used by a changing set of processes between the first and the last sample."""

    def __init__(self) -> None:
        self.first: dict[int, int] = {}
        self.last: dict[int, int] = {}

    def sample(self, pids: list[int], starting: bool) -> None:
        for pid in pids:
            with contextlib.suppress(OSError, IndexError):
                ticks = cpu_ticks(pid)
                if starting:
                    self.first[pid] = ticks
                self.last[pid] = ticks

    def seconds(self) -> float:
        # A process that ended during the load keeps what it used until its last sample.
        return round(sum(last - self.first.get(pid, 0) for pid, last in self.last.items()) / CLOCK_TICKS, 2)


class Sampler:
    """A background thread sampling while the `with` block runs; `usage` holds the peaks and CPU times.

    `others` names the root PIDs of other processes whose CPU time to account, each with its descendants."""

    def __init__(
        self,
        server_pid: int,
        postgres_pid: int | None = None,
        others: dict[str, list[int]] | None = None,
        every: float = 0.2,
        pg_client: str | None = None,
        pg_memory: bool = False,
        cgroups: Path = CGROUPS,
    ) -> None:
        # pg_client: count only the Postgres sessions of the client at that address (the other apps of a scenario
        # keep theirs open); pg_memory: also Postgres's container's memory, from its cgroup under `cgroups`.
        self.server_pid = server_pid
        self.postgres_pid = postgres_pid
        self.others = others or {}
        self.every = every
        self.pg_client, self.pg_memory, self.cgroups = pg_client, pg_memory, cgroups
        self.usage = Usage(pg_sessions_peak=0 if postgres_pid else None, pg_busy_peak=0 if postgres_pid else None)
        self.problem: str | None = None  # as EngineSampler's: reading /proc here does not fail as a whole
        self.sampled_on = "this machine"  # as EngineSampler's: where the figures were read, for the record
        self._server_cpu = _CpuAccount()
        self._others_cpu = {name: _CpuAccount() for name in self.others}
        self._machine_first = _machine_ticks()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._machine_first = _machine_ticks()
        self._sample(starting=True)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        self.usage.cpu_seconds = self._server_cpu.seconds()
        self.usage.cpu_seconds_others = {name: account.seconds() for name, account in self._others_cpu.items()}
        busy_first, total_first = self._machine_first
        busy_last, total_last = _machine_ticks()
        self.usage.machine_busy = round((busy_last - busy_first) / max(1, total_last - total_first), 3)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def _sample(self, starting: bool = False) -> None:
        pids = server_pids(self.server_pid)
        self._server_cpu.sample(pids, starting)
        for name, roots in self.others.items():
            self._others_cpu[name].sample([pid for root in roots for pid in server_pids(root)], starting)
        rss_kb = 0
        for pid in pids:
            with contextlib.suppress(OSError, IndexError):
                rss_kb += _rss_kb(pid)
        usage = self.usage
        usage.threads_peak = max(usage.threads_peak, os_threads(pids))
        usage.rss_mb_peak = max(usage.rss_mb_peak, round(rss_kb / 1024, 1))
        if self.postgres_pid:
            opened, busy = pg_sessions(self.postgres_pid, self.pg_client)
            usage.pg_sessions_peak = max(usage.pg_sessions_peak or 0, opened)
            usage.pg_busy_peak = max(usage.pg_busy_peak or 0, busy)
            memory = cgroup_memory_mb(self.postgres_pid, self.cgroups) if self.pg_memory else None
            if memory is not None:
                usage.pg_memory_mb_peak = max(usage.pg_memory_mb_peak or 0, memory)


# The image the sampler runs in on another engine: the apps' base, copied there with the apps (stdlib Python only).
SAMPLER_IMAGE = "python:3.14-slim"
ENGINE_CGROUPS = "/engine-cgroups"  # where the sampler's container sees its machine's cgroup tree
READY = "sampling"


class EngineSampler:
    """The Sampler run through a Docker engine (`docker_cli`, e.g. ["docker", "--host", "ssh://server"]): a
    container with that machine's PIDs, fed this file, that samples until its stdin closes and then prints the
    usage as JSON. PIDs are that machine's, as `docker inspect` on that engine gives them."""

    def __init__(
        self,
        docker_cli: list[str],
        server_pid: int,
        postgres_pid: int | None = None,
        others: dict[str, list[int]] | None = None,
        timeout: float = 60.0,
        docker_proxy: bool = False,
        pg_client: str | None = None,
        pg_memory: bool = False,
    ) -> None:
        # docker_proxy: also account the engine machine's docker-proxy processes (a client loading a published port).
        config = {
            "server": server_pid, "postgres": postgres_pid, "others": others, "docker_proxy": docker_proxy,
            "pg_client": pg_client, "pg_memory": pg_memory, "cgroups": ENGINE_CGROUPS,
        }  # fmt: skip
        # Postgres's memory: its cgroup, in the engine machine's whole cgroup tree (mounted read-only), found from
        # /proc/<pid>/cgroup as that machine names it (the host's cgroup namespace).
        cgroups = ["--cgroupns", "host", "--volume", f"{CGROUPS}:{ENGINE_CGROUPS}:ro"] if pg_memory else []
        self.command = on_the_engine(docker_cli, config, "-i", *cgroups)
        self.sampled_on = f"through the engine: {' '.join(docker_cli)}"
        self.timeout = timeout
        self.usage = Usage()
        self.problem: str | None = None
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> EngineSampler:
        self._process = subprocess.Popen(
            self.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        # Its first sample is taken before the load starts: wait for it (bounded), as the sampler here does.
        assert self._process.stdout is not None
        ready, _, _ = select.select([self._process.stdout], [], [], self.timeout)
        first = self._process.stdout.readline().strip() if ready else ""
        if first != READY:  # the columns say why they are empty; the load still runs
            self._process.kill()
            _, errors = self._process.communicate(timeout=self.timeout)
            self.problem = f"the sampler on the server's engine did not start: {errors.strip()[-300:]}"
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._process is None or self.problem:
            return
        try:
            output, errors = self._process.communicate(input="", timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.communicate()
            self.problem = f"the sampler on the server's engine gave no answer in {self.timeout:g} s"
            return
        try:
            self.usage = Usage(**json.loads(output.strip().splitlines()[-1]))
        except (ValueError, IndexError, TypeError):
            self.problem = f"the sampler on the server's engine failed: {errors.strip()[-300:]}"


def sample_until_stdin_closes(config: dict[str, Any]) -> None:
    """EngineSampler's other end, in the container: sample from the first sample to the end of stdin."""
    others = dict(config.get("others") or {})
    if config.get("docker_proxy"):
        others["docker-proxy"] = docker_proxy_pids()
    postgres, cgroups = config.get("postgres"), Path(config.get("cgroups") or CGROUPS)
    pg_client, pg_memory = config.get("pg_client"), bool(config.get("pg_memory"))
    with Sampler(
        config["server"], postgres, others, pg_client=pg_client, pg_memory=pg_memory, cgroups=cgroups
    ) as sampler:
        print(READY, flush=True)
        sys.stdin.read()
    print(json.dumps(asdict(sampler.usage)), flush=True)


if __name__ == "__main__":
    config = json.loads(sys.argv[1])
    if "processes" in config:  # engine_process_table's other end: one look, printed
        print(json.dumps({pid: asdict(facts) for pid, facts in process_table(config["processes"]).items()}))
    else:
        sample_until_stdin_closes(config)
