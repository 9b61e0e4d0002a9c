"""Extra Docker engines on this machine, each in a network namespace of its own: stand-ins for the other
machines of a three-host benchmark (bench/containers/roles.py).

Each engine gets a namespace, a veth pair with an address on each side (the host side is how the host and its
own engine's containers reach it), its own containerd (own root, state and socket), and a dockerd with its own
--data-root, --exec-root and --pidfile, reached by the host's docker CLI on its unix socket. They share the
host's kernel, mount and PID namespaces: their containers' processes are in the host's /proc. dockerd starts
under `nsenter --net=...`, not `ip netns exec`, which remounts /sys and leaves dockerd without its cgroups
(../shared/FACTS.md). Everything is torn down by pid and by name, also when starting failed half way.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# A private range nothing else on the machine uses (checked before use): one /30 per engine.
SUBNET = "10.231"
STATE = Path("/var/lib/playground-engines")  # on the same filesystem as /var/lib/docker: overlay2 works there


@dataclass
class ExtraEngine:
    name: str
    number: int  # picks its addresses: 10.231.<number>.1 on the host, .2 in its namespace
    processes: list[subprocess.Popen[bytes]]

    @property
    def socket(self) -> str:
        return f"unix:///run/{self.name}.sock"

    @property
    def address(self) -> str:
        """Its own address, in its namespace: where its published ports are."""
        return f"{SUBNET}.{self.number}.2"

    @property
    def host_side(self) -> str:
        """The host's address on the veth to it: where the engine's containers reach the host."""
        return f"{SUBNET}.{self.number}.1"

    @property
    def data(self) -> Path:
        return STATE / self.name


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


def address_taken() -> bool:
    return f" {SUBNET}." in _run("ip", "-o", "address").stdout or f"{SUBNET}." in _run("ip", "route").stdout


def start(engine: ExtraEngine) -> None:
    """Namespace, veth pair, containerd and dockerd of one engine; returns when its engine answers."""
    name, netns = engine.name, f"/var/run/netns/{engine.name}"
    _must("ip", "netns", "add", name)
    _must("ip", "link", "add", f"{name}-h", "type", "veth", "peer", "name", f"{name}-n")
    _must("ip", "link", "set", f"{name}-n", "netns", name)
    _must("ip", "address", "add", f"{engine.host_side}/30", "dev", f"{name}-h")
    _must("ip", "link", "set", f"{name}-h", "up")
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
    with containerd_log.open("wb") as log:
        containerd = subprocess.Popen(
            ["nsenter", f"--net={netns}", "containerd", "--config", str(config)], stdout=log, stderr=log
        )
    engine.processes.append(containerd)
    _wait(containerd_socket.exists, 30, f"containerd of {name}", containerd, containerd_log)
    dockerd_log = engine.data / "dockerd.log"
    with dockerd_log.open("wb") as log:
        dockerd = subprocess.Popen(
            [
                "nsenter", f"--net={netns}", "dockerd", "--host", engine.socket,
                "--data-root", str(engine.data / "docker"), "--exec-root", str(run_dir / "exec"),
                "--pidfile", str(run_dir / "dockerd.pid"), "--containerd", str(containerd_socket),
            ],
            stdout=log, stderr=log,
        )  # fmt: skip
    engine.processes.append(dockerd)
    answers = lambda: _run("docker", "--host", engine.socket, "version").returncode == 0  # noqa: E731
    _wait(answers, 60, f"dockerd of {name}", dockerd, dockerd_log)


def stop(engine: ExtraEngine) -> None:
    """Everything start() made, in reverse, whatever state it got to."""
    for process in reversed(engine.processes):  # dockerd first: it stops its containers
        if process.poll() is None:
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
    _run("ip", "link", "delete", f"{engine.name}-h")  # takes its peer with it
    _run("ip", "netns", "delete", engine.name)
    shutil.rmtree(engine.data, ignore_errors=True)
    shutil.rmtree(f"/run/{engine.name}", ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        Path(f"/run/{engine.name}.sock").unlink()


@contextlib.contextmanager
def extra_engines(*names: str) -> Iterator[list[ExtraEngine]]:
    engines = [ExtraEngine(name, number, []) for number, name in enumerate(names, start=1)]
    try:
        for engine in engines:
            start(engine)
        yield engines
    finally:
        for engine in engines:
            stop(engine)
        with contextlib.suppress(OSError):
            STATE.rmdir()
