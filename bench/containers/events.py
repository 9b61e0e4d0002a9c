"""What can happen to a running scenario while it serves, the way it happens in production: a graceful reload, one
worker killed, the container killed, the container replaced the Compose way, a deploy of two copies one after the
other, a proxy's reload, a burst of heavy requests. Each returns what it did, to whom, for the record (`make
incidents`, docs/incidents.md), and, where one command is the event, `at`: time.monotonic() just before it, since
finding the process or the container takes docker calls that last a second or more on a busy machine.

Containers run with `init: true`: the container's main process is docker-init, which forwards a signal that
`docker kill --signal` sends it to the server's main process (gunicorn's master, uWSGI's master, granian's, uvicorn's
supervisor). Workers are found the way the sampler finds a server's processes: the host's /proc, from the
container's main PID down."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal as signals
import socket
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.containers.compose import RunningScenario
from bench.containers.sampler import children, os_threads, server_pids


def started_ticks(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])


def pid_inside(pid: int) -> int:
    """The PID the container's own tools and logs show for this host PID (the last of NSpid)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[-1])
    return pid


def command_line(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    return ""


def server_main_pid(running: RunningScenario, service: str) -> int:
    """The server's main process: the container's first process, or its child when that is docker-init."""
    return server_pids(running.main_pid(service))[0]


# uWSGI's processes all have the same command line; its log says which PID is the HTTP router, not a worker.
UWSGI_ROUTER = re.compile(r"spawned uWSGI http \d+ \(pid: (\d+)\)")


def router_pids(running: RunningScenario, service: str) -> set[int]:
    """uWSGI's HTTP router, as the container sees its PID: from the log, the one place that tells it from a worker."""
    logs = running.compose("logs", "--no-color", service, check=False).stdout
    return {int(pid) for pid in UWSGI_ROUTER.findall(logs)}


def workers_of(main: int, routers: set[int]) -> list[int]:
    """The main process's children that serve requests, oldest first: less multiprocessing's resource tracker
    (beside granian's and uvicorn's workers) and uWSGI's HTTP router."""
    workers = []
    for pid in children(main):
        # A worker replaced meanwhile (uWSGI's chain reload) has left /proc: it is no longer one (a CI run read a
        # status that was gone).
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            if "resource_tracker" not in command_line(pid) and pid_inside(pid) not in routers:
                workers.append((started_ticks(pid), pid))
    return [pid for _, pid in sorted(workers)]


def worker_pids(running: RunningScenario, service: str) -> list[int]:
    """The server's workers, oldest first."""
    return workers_of(server_main_pid(running, service), router_pids(running, service))


def container(running: RunningScenario, service: str) -> str:
    return running.container_ids()[service]


def send_signal(running: RunningScenario, service: str, signal: str) -> dict[str, Any]:
    """`docker kill --signal`: to docker-init, which forwards it to the server's main process."""
    main, target = server_main_pid(running, service), container(running, service)
    inside = pid_inside(main)  # before the signal: a process it ends is gone from /proc
    at = time.monotonic()
    running.docker(service, "kill", "--signal", signal, target)
    return {"did": f"SIG{signal} to {service}'s main process (pid {inside} in the container)", "at": at}


def connections_held(pid: int) -> int:
    """How many client connections the process holds open: its established TCP sockets on the port it listens on (not
    those to slow_api or Postgres). Each carries at most one request at a time, so a process killed loses at most
    that many."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            link = os.readlink(fd)
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    sockets = []  # (local port, state) of each of the process's TCP sockets
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                sockets.append((fields[1].rsplit(":", 1)[1], fields[3]))
    listening = {port for port, state in sockets if state == "0A"}
    return sum(1 for port, state in sockets if state == "01" and port in listening)


def kill_worker(running: RunningScenario, service: str) -> dict[str, Any]:
    """SIGKILL to the oldest worker, from the host: what the OOM killer or a crash in a C extension does. The worker
    is stopped (SIGSTOP) a moment before, so that the connections it holds are counted when it can accept no more:
    counted while it runs, a gevent worker under load goes on accepting in the milliseconds that reading /proc takes
    on a busy machine (a CI run lost 28 requests of a uWSGI worker counted at 13)."""
    workers = worker_pids(running, service)
    if not workers:
        return {"problem": f"{service} has no worker process apart from its main process"}
    victim = workers[0]
    threads, inside = os_threads([victim]), pid_inside(victim)  # before the kill: then it is gone from /proc
    at = time.monotonic()
    os.kill(victim, signals.SIGSTOP)
    held = connections_held(victim)
    os.kill(victim, signals.SIGKILL)
    return {
        "at": at,
        "did": f"SIGKILL to {service}'s oldest worker, pid {inside} in the container, of {len(workers)}",
        "workers": len(workers),
        "victim_threads": threads,
        "victim_connections": held,
    }


def unread_answers(host_ports: set[int], container_ips: set[str]) -> int:
    """Bytes on this machine's sockets to the container, received and not yet read: the clients' (to its published
    ports) and Docker's proxy's (to its addresses). Answers the server wrote wait there until a client reads them."""
    unread = 0
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            address, port = fields[2].rsplit(":", 1)
            ip = socket.inet_ntoa(bytes.fromhex(address)[::-1]) if len(address) == 8 else address
            if int(port, 16) in host_ports or ip in container_ips:
                unread += int(fields[4].split(":")[1], 16)
    return unread


# Until the bytes have stayed read for this long; then as long again for the clients' threads to note the answers.
DRAINED_FOR = 0.1
DRAIN_LIMIT = 5.0


def wait_until_read(host_ports: set[int], container_ips: set[str]) -> float:
    """Until every answer already sent to the clients has been read by them (or DRAIN_LIMIT s); the seconds waited."""
    start = quiet_since = time.monotonic()
    while time.monotonic() < start + DRAIN_LIMIT:
        now = time.monotonic()
        if unread_answers(host_ports, container_ips):
            quiet_since = now
        elif now - quiet_since >= DRAINED_FOR:
            break
        time.sleep(0.01)
    time.sleep(DRAINED_FOR)
    return round(time.monotonic() - start, 3)


def crash_container(running: RunningScenario, service: str) -> dict[str, Any]:
    """SIGKILL to the container's main process from the host: the container dies as if its process crashed (or the
    OOM killer took it), which, unlike `docker kill`, is what a restart policy answers. The server is stopped first
    (SIGSTOP to each of its processes) until its clients have read every answer it had sent: a client on a busy
    machine reads an answer late, and one sent before the crash and read after it is not lost (a CI run counted 3 of
    50 such). So the requests in flight at the SIGKILL are the ones the server held."""
    main, target = running.main_pid(service), container(running, service)
    inspected = json.loads(running.docker(service, "inspect", "--format", "{{json .}}", target))
    network, policy = inspected["NetworkSettings"], inspected["HostConfig"]["RestartPolicy"]["Name"]
    ports = {int(b["HostPort"]) for bound in (network.get("Ports") or {}).values() for b in bound or []}
    ips = {each["IPAddress"] for each in (network.get("Networks") or {}).values()} - {""}
    for pid in server_pids(main):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signals.SIGSTOP)
    stopped_for = wait_until_read(ports, ips)
    at = time.monotonic()
    os.kill(main, signals.SIGKILL)
    did = f"SIGKILL to {service}'s main process from the host (restart policy: {policy or 'no'})"
    return {"did": did, "at": at, "stopped_for_s": stopped_for}


UWSGI_FIFO = "/tmp/uwsgi-master.fifo"  # flask_app/uwsgi.ini's master-fifo


def chain_reload(running: RunningScenario, service: str, wait: float = 30.0) -> dict[str, Any]:
    """uWSGI's chain reload: `c` to its master's FIFO. One worker at a time is replaced by a new one that loads the
    app (lazy-apps), the next only once the last is ready; the HTTP router and the listening socket stay. Returns
    once every worker there was is gone (or after `wait` s), saying how many were replaced."""
    # The master and the HTTP router stay through a chain reload: found once, the workers are then read from /proc.
    main, routers = server_main_pid(running, service), router_pids(running, service)
    target, before = container(running, service), set(workers_of(main, routers))
    at = time.monotonic()
    running.docker(service, "exec", target, "sh", "-c", f"echo c > {UWSGI_FIFO}")
    while before & set(workers_of(main, routers)) and time.monotonic() < at + wait:
        time.sleep(0.2)
    replaced = len(before - set(workers_of(main, routers)))
    did = f"echo c > {UWSGI_FIFO} in {service} (chain reload): {replaced} of {len(before)} workers replaced"
    return {"did": did, "at": at, "workers": len(before), "workers_replaced": replaced}


def kill_container(running: RunningScenario, service: str) -> dict[str, Any]:
    """`docker kill`: SIGKILL to everything in the container. No restart policy here: Compose leaves it down."""
    target = container(running, service)
    at = time.monotonic()
    running.docker(service, "kill", target)
    return {"did": f"docker kill {service} (no restart policy: it stays down)", "at": at}


def recreate(running: RunningScenario, service: str, wait: bool = False) -> dict[str, Any]:
    """The Compose way to deploy a new version of one service: stop it (SIGTERM, a graceful stop), remove it,
    create and start a new one; `wait` returns only once the new one is healthy."""
    command = ["up", "--detach", "--force-recreate", "--no-deps", *(["--wait"] if wait else []), service]
    running.compose(*command)
    return {"did": f"docker compose {' '.join(command)}"}


# Nginx sends nothing to a copy for its fail_timeout (2 s, flask_app/nginx-deploy.conf) after a request to it failed,
# as requests to the copy being replaced do. Replacing the next copy sooner leaves Nginx no live copy: 502s.
PROXY_FAIL_TIMEOUT = 2.0


def deploy(running: RunningScenario, services: list[str]) -> dict[str, Any]:
    """A rolling deploy: each copy replaced in turn, the next only once the last one is healthy again and the
    proxy has taken it back (its fail_timeout over)."""
    for number, service in enumerate(services):
        if number:
            time.sleep(PROXY_FAIL_TIMEOUT + 1)
        recreate(running, service, wait=True)
    waited = f"; then {PROXY_FAIL_TIMEOUT + 1:g} s for the proxy to take it back; then "
    return {"did": waited.join(f"{service} recreated, waited until healthy" for service in services)}


def hog(url: str, requests: int, units: int, delay: float) -> dict[str, Any]:
    """`requests` requests at once that each build `units` units of CPU work (the app's `?cpu=`) after a wait of
    `delay` s for slow_api: a burst of heavy requests that keeps a worker busy. The wait lines them up: all are in
    before the first answer comes back, so their CPU work runs back to back, not interleaved with the process's
    own housekeeping (a gevent worker's heartbeat to its master). Sent from threads of their own, so that the load
    goes on; what they get is not the load's, and they are left to end (or be cut) with the worker."""
    target = f"{url.rstrip('/')}/?delay={delay:g}&cpu={units}"

    def send() -> None:
        try:
            with urllib.request.urlopen(target, timeout=120) as answer:
                answer.read()
        except OSError:  # cut with the worker it ran in: the event's whole point, counted in the load
            pass

    at = time.monotonic()
    for _ in range(requests):
        threading.Thread(target=send, daemon=True).start()
    return {"did": f"{requests} requests of {units} CPU units at once (GET /?delay={delay:g}&cpu={units})", "at": at}


def reload_nginx(running: RunningScenario, service: str = "nginx") -> dict[str, Any]:
    """`nginx -s reload`: new worker processes with the configuration read again, the old ones finishing theirs."""
    running.docker(service, "exec", container(running, service), "nginx", "-s", "reload")
    return {"did": "nginx -s reload"}
