"""Extra Docker engines on this machine, each in a network namespace of its own: stand-ins for the other
machines of a three-host benchmark (bench/containers/roles.py).

Each engine gets a namespace, a veth pair with an address on each side (the host side is how the host and its
own engine's containers reach it), its own containerd (own root, state and socket), and a dockerd with its own
--data-root, --exec-root and --pidfile, reached by the host's docker CLI on its unix socket. They share the
host's kernel, mount and PID namespaces: their containers' processes are in the host's /proc. dockerd starts
under `nsenter --net=...`, not `ip netns exec`, which remounts /sys and leaves dockerd without its cgroups
(measured here). Everything is torn down by pid and by name, also when starting failed half way.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

# A private range nothing else on the machine uses (checked before use): one /30 per engine.
SUBNET = "10.231"
STATE = Path("/var/lib/playground-engines")
CGROUP_PARENT = "TESTS_CGROUP_PARENT"  # on the same filesystem as /var/lib/docker: overlay2 works there


@dataclass
class ExtraEngine:
    name: str
    number: int  # picks its addresses: 10.231.<number>.1 on the host, .2 in its namespace
    processes: list[subprocess.Popen[bytes]]
    # In a PID namespace of its own too, as Docker Desktop's VM is: `docker inspect` then gives PIDs of that
    # namespace, which this machine's /proc shows as other processes or none.
    pid_namespace: bool = False
    subnet: str = SUBNET  # another range lets these engines run beside another test's
    resolver: RefusingResolver | None = field(default=None, repr=False)
    # Its daemons, and its containers' cgroups (dockerd's --cgroup-parent), in this group of low CPU weight.
    cpu_group: CpuGroup | None = None

    @property
    def socket(self) -> str:
        return f"unix:///run/{self.name}.sock"

    @property
    def address(self) -> str:
        """Its own address, in its namespace: where its published ports are."""
        return f"{self.subnet}.{self.number}.2"

    @property
    def host_side(self) -> str:
        """The host's address on the veth to it: where the engine's containers reach the host."""
        return f"{self.subnet}.{self.number}.1"

    @property
    def data(self) -> Path:
        return STATE / self.name


class RefusingResolver:
    """A DNS server on the host side of an engine's veth that refuses every question at once. The engine's namespace
    has no route out, so its containers' lookups of names Docker does not know (a stopped container's) would wait
    10 s for the host's resolver; a machine's resolver (Docker Desktop's) answers at once, and so does this one."""

    def __init__(self, address: str) -> None:
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            self.socket.bind((address, 53))
        except OSError as error:
            self.socket.close()
            raise RuntimeError(f"the engine's resolver cannot listen on {address}:53: {error}") from error
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                query, client = self.socket.recvfrom(4096)
            except OSError:  # closed
                return
            if len(query) < 12:
                continue
            end = 12  # the question: its name's labels, then type and class
            while end < len(query) and query[end]:
                end += query[end] + 1
            flags = 0x8000 | (int.from_bytes(query[2:4], "big") & 0x7900) | 5  # an answer, REFUSED
            header = query[:2] + flags.to_bytes(2, "big") + query[4:6] + bytes(6)
            self.socket.sendto(header + query[12 : end + 5], client)

    def close(self) -> None:
        with contextlib.suppress(OSError):  # wakes the thread in recvfrom, which then ends
            self.socket.shutdown(socket.SHUT_RDWR)
        self.socket.close()
        self.thread.join(timeout=5)


@dataclass(frozen=True)
class CpuGroup:
    """A cgroup whose processes get the CPU only where the machine's others leave it: a low weight against the
    default one (cgroup v1's cpu.shares, v2's cpu.weight), which counts only when the CPU is contended. Processes
    join its `host` group; an engine started with it as --cgroup-parent puts each container in a group beside that.
    cgroup v1 counts CPU time in another hierarchy (cpuacct): the group is made there too, and read there."""

    name: str  # its path under the hierarchy's root: "playground-tests-behind" or "playground-tests-behind/pg-second"
    path: Path
    accounting: Path  # where its CPU time is read: v1's cpuacct group of the same name, v2's the group itself

    def command(self, command: list[str]) -> list[str]:
        """The command run in the group, with every process it starts: a shell joins it, then runs the command."""
        joins = " && ".join(f"echo $$ > {group / 'host' / 'cgroup.procs'}" for group in {self.path, self.accounting})
        return ["sh", "-c", f'{joins} && exec "$@"', "sh", *command]

    def child(self, name: str) -> CpuGroup:
        """A group inside this one, at the default weight within it: its processes and containers share this one's
        weight with its other children, and their CPU time is read apart."""
        group = CpuGroup(f"{self.name}/{name}", self.path / name, self.accounting / name)
        for path in {group.path, group.accounting}:
            (path / "host").mkdir(parents=True, exist_ok=True)
        return group

    def cpu_seconds(self) -> float:
        """The CPU time its processes and containers have used so far."""
        return cpu_seconds_of(self.accounting)


def cpu_seconds_of(group: Path) -> float:
    """A cgroup's CPU time so far: cgroup v1's cpuacct.usage (ns), v2's cpu.stat usage_usec."""
    if (group / "cpuacct.usage").exists():
        return int((group / "cpuacct.usage").read_text()) / 1e9
    stat = dict(line.split() for line in (group / "cpu.stat").read_text().splitlines())
    return int(stat["usage_usec"]) / 1e6


def _cpu_hierarchy() -> tuple[Path, str, int, Path] | None:
    """Where a CPU group is made, the file of its weight, the default weight, and where CPU time is counted; None
    where none can be."""
    if os.geteuid() != 0:
        return None
    v1, unified = Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup")
    if (v1 / "cpu.shares").exists() and (unified / "cpuacct" / "cpuacct.usage").exists():
        return v1, "cpu.shares", 1024, unified / "cpuacct"
    enabled = unified / "cgroup.subtree_control"
    if enabled.exists() and "cpu" in enabled.read_text().split():
        return unified, "cpu.weight", 100, unified
    return None


@contextlib.contextmanager
def low_cpu_group(name: str, share: float) -> Iterator[CpuGroup | None]:
    """A CpuGroup of `share` times the default weight while the block runs (None where the machine's cgroups cannot
    make one); removed afterwards, once the processes in it have ended."""
    hierarchy = _cpu_hierarchy()
    if hierarchy is None:
        yield None
        return
    root, weight_file, default, accounting = hierarchy
    # A run held inside a group of its own (a CPU quota around the whole suite, docs/tests.md) makes its groups there.
    name = "/".join(filter(None, (os.environ.get(CGROUP_PARENT, "").strip("/"), name)))
    path = root / name
    try:
        for group in {path, accounting / name}:
            (group / "host").mkdir(parents=True, exist_ok=True)
        (path / weight_file).write_text(str(max(2, round(default * share))))
    except OSError:
        yield None
        return
    try:
        yield CpuGroup(name, path, accounting / name)
    finally:
        # Also the groups dockerd made for the containers in cgroup v1's other hierarchies (memory, pids, ...).
        tops = {path, *Path("/sys/fs/cgroup").glob(f"*/{name}")}
        groups = [group for top in tops for group in [top, *top.rglob("*")] if group.is_dir()]
        for group in sorted(groups, key=lambda group: len(group.parts), reverse=True):
            with contextlib.suppress(OSError):  # a process still in it (one a killed run left): kept
                group.rmdir()


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def _must(*command: str) -> None:
    result = _run(*command)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed: {result.stderr.strip()}")


def _wait(check, timeout: float, what: str, process: subprocess.Popen[bytes], log: Path) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while not check():
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited ({process.returncode}): {log.read_text()[-1500:]}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready after {timeout:.0f} s: {log.read_text()[-1500:]}")
        time.sleep(0.2)


def missing_tools() -> list[str]:
    return [tool for tool in ("ip", "nsenter", "dockerd", "containerd") if shutil.which(tool) is None]


def unseen_engine_missing() -> str | None:
    """What an engine in PID and network namespaces of its own (tests/test_hosts.py) needs and this machine lacks."""
    if os.geteuid() != 0 or missing_tools() or not all(map(shutil.which, ("unshare", "runuser", "useradd"))):
        return "root, ip, nsenter, unshare, dockerd, containerd, runuser"
    return None


# The scenarios tests/test_hosts.py runs every test of (tests/test_scenarios.py) against that engine.
SCENARIOS_ON_THE_UNSEEN_ENGINE = ("async-gevent-gunicorn", "sync-gunicorn")


def clear_leftovers(*names: str) -> None:
    """What a run killed before its teardown (a test session cut short) left of these engines: their namespace,
    veth, mounts and state. An engine of that name with processes still in its namespace is another run's: kept."""
    for name in names:
        if Path(f"/run/netns/{name}").exists() and _run("ip", "netns", "pids", name).stdout.strip():
            continue
        pidfile = Path(f"/run/{name}/dockerd.pid")
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pidfile.read_text()), 0)
            continue  # its dockerd lives
        stop(ExtraEngine(name, 0, []))


def address_taken(subnet: str = SUBNET) -> bool:
    return f" {subnet}." in _run("ip", "-o", "address").stdout or f"{subnet}." in _run("ip", "route").stdout


def start(engine: ExtraEngine) -> None:
    """Namespace, veth pair, containerd and dockerd of one engine; returns when its engine answers."""
    name, netns = engine.name, f"/var/run/netns/{engine.name}"
    _must("ip", "netns", "add", name)
    _must("ip", "link", "add", f"{name}-h", "type", "veth", "peer", "name", f"{name}-n")
    _must("ip", "link", "set", f"{name}-n", "netns", name)
    _must("ip", "address", "add", f"{engine.host_side}/30", "dev", f"{name}-h")
    _must("ip", "link", "set", f"{name}-h", "up")
    engine.resolver = RefusingResolver(engine.host_side)
    _must("ip", "-n", name, "address", "add", f"{engine.address}/30", "dev", f"{name}-n")
    _must("ip", "-n", name, "link", "set", f"{name}-n", "up")
    _must("ip", "-n", name, "link", "set", "lo", "up")
    # The route back to the host's other networks (its own engine's bridges) goes through the host side.
    _must("ip", "-n", name, "route", "add", "default", "via", engine.host_side)
    engine.data.mkdir(parents=True, exist_ok=True)
    run_dir = Path(f"/run/{name}")
    run_dir.mkdir(parents=True, exist_ok=True)
    containerd_socket = run_dir / "containerd.sock"
    # Its own containerd: the host's serves the host's engine, and a second engine there would share its state.
    config = engine.data / "containerd.toml"
    config.write_text(
        "version = 2\n"
        f'root = "{engine.data}/containerd"\n'
        f'state = "{run_dir}/containerd-state"\n'
        'disabled_plugins = ["io.containerd.grpc.v1.cri"]\n'
        f'[grpc]\n  address = "{containerd_socket}"\n'
        f'[ttrpc]\n  address = "{containerd_socket}.ttrpc"\n'
    )
    containerd_log = engine.data / "containerd.log"
    if engine.pid_namespace:
        _start_in_pid_namespace(engine, netns, config, containerd_socket, run_dir)
        return
    in_group = engine.cpu_group.command if engine.cpu_group else list
    with containerd_log.open("wb") as log:
        containerd = subprocess.Popen(
            in_group(["nsenter", f"--net={netns}", "containerd", "--config", str(config)]), stdout=log, stderr=log
        )
    engine.processes.append(containerd)
    _wait(containerd_socket.exists, 30, f"containerd of {name}", containerd, containerd_log)
    dockerd_log = engine.data / "dockerd.log"
    with dockerd_log.open("wb") as log:
        dockerd = subprocess.Popen(
            in_group(["nsenter", f"--net={netns}", *dockerd_command(engine, run_dir, containerd_socket)]),
            stdout=log,
            stderr=log,
        )
    engine.processes.append(dockerd)
    answers = lambda: _run("docker", "--host", engine.socket, "version").returncode == 0  # noqa: E731
    _wait(answers, 60, f"dockerd of {name}", dockerd, dockerd_log)


def dockerd_command(engine: ExtraEngine, run_dir: Path, containerd_socket: Path) -> list[str]:
    # --dns: the RefusingResolver on the host side of its veth.
    parent = ["--cgroup-parent", f"/{engine.cpu_group.name}"] if engine.cpu_group else []
    return [
        "dockerd", "--host", engine.socket, "--data-root", str(engine.data / "docker"),
        "--exec-root", str(run_dir / "exec"), "--pidfile", str(run_dir / "dockerd.pid"),
        "--containerd", str(containerd_socket), "--dns", engine.host_side, *parent,
    ]  # fmt: skip


def _start_in_pid_namespace(
    engine: ExtraEngine, netns: str, config: Path, containerd_socket: Path, run_dir: Path
) -> None:
    """containerd and dockerd under one init of a new PID namespace (and the mount namespace its /proc needs),
    in the engine's network namespace. The init, a shell, stops dockerd then containerd on SIGTERM; `unshare`
    waits for it, and kills it if `unshare` itself dies."""
    dockerd = " ".join(dockerd_command(engine, run_dir, containerd_socket))
    init = (
        f"containerd --config {config} >{engine.data}/containerd.log 2>&1 & containerd=$!\n"
        f"while [ ! -S {containerd_socket} ]; do sleep 0.2; done\n"
        f"{dockerd} >{engine.data}/dockerd.log 2>&1 & dockerd=$!\n"
        "trap 'kill -TERM $dockerd; wait $dockerd; kill -TERM $containerd; wait $containerd; exit 0' TERM\n"
        "wait\n"
    )
    command = ["nsenter", f"--net={netns}", "unshare", "--pid", "--mount-proc", "--kill-child", "sh", "-c", init]
    namespace = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    engine.processes.append(namespace)
    answers = lambda: _run("docker", "--host", engine.socket, "version").returncode == 0  # noqa: E731
    _wait(answers, 60, f"dockerd of {engine.name} in its PID namespace", namespace, engine.data / "dockerd.log")


def _namespace_init(process: subprocess.Popen[bytes]) -> int | None:
    """The host PID of the PID namespace's init: the child `unshare --fork` waits for."""
    try:
        children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
    except OSError:
        return None
    return int(children[0]) if children else None


def stop(engine: ExtraEngine) -> None:
    """Everything start() made, in reverse, whatever state it got to."""
    for process in reversed(engine.processes):  # dockerd first: it stops its containers
        init = _namespace_init(process) if engine.pid_namespace else None
        if init is not None and process.poll() is None:
            # Its init stops dockerd, then containerd; unshare returns when it has.
            with contextlib.suppress(ProcessLookupError):
                os.kill(init, signal.SIGTERM)
            try:
                process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                process.kill()  # --kill-child: the init, and with it the whole namespace, goes too
                process.wait(timeout=10)
        elif process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
    # Mounts a killed engine left behind (the engines mount in the host's mount namespace).
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    for mount in sorted((m for m in mounts if m.startswith((str(engine.data), f"/run/{engine.name}/"))), reverse=True):
        _run("umount", "--lazy", mount)
    if engine.resolver:
        engine.resolver.close()
    _run("ip", "link", "delete", f"{engine.name}-h")  # takes its peer with it
    _run("ip", "netns", "delete", engine.name)
    shutil.rmtree(engine.data, ignore_errors=True)
    shutil.rmtree(f"/run/{engine.name}", ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        Path(f"/run/{engine.name}.sock").unlink()


@contextlib.contextmanager
def extra_engines(
    *names: str, pid_namespace: bool = False, subnet: str = SUBNET, cpu_group: CpuGroup | None = None
) -> Iterator[list[ExtraEngine]]:
    engines = [
        # Each engine in a group of its own inside `cpu_group`: they share its weight, each one's CPU time read apart.
        ExtraEngine(name, number, [], pid_namespace, subnet, cpu_group=cpu_group.child(name) if cpu_group else None)
        for number, name in enumerate(names, start=1)
    ]
    try:
        for engine in engines:
            start(engine)
        yield engines
    finally:
        for engine in engines:
            stop(engine)
        with contextlib.suppress(OSError):
            STATE.rmdir()
