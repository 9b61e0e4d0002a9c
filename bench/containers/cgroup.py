"""A container's CPU time and memory from its cgroup: what every process it ever ran used, exited ones too (a
Postgres backend that ended), which /proc no longer shows.

Read on this machine where its /proc shows the container's processes (the cgroup found from the main process's
/proc/<pid>/cgroup, so rootless Docker's cgroups under the user's slice are found too); else through the engine,
`docker exec <container> cat` of the same file as the container sees it (Docker Desktop's VM, another machine,
an engine in a PID namespace of its own). None only where neither answers: the record then says so."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from bench.containers.sampler import CGROUPS, memory_mb, sees_container

# Each figure's file: (cgroup v1 controller, v1 file), v2 file.
FILES = {"cpu": (("cpuacct", "cpuacct.usage"), "cpu.stat"), "memory": (("memory", "memory.stat"), "memory.stat")}


def cgroup_dir(container: str, controller: str) -> Path | None:
    """The container's cgroup here: v1 with the cgroupfs driver, v2 with either driver, and wherever the
    container's main process says it is (rootless Docker, other drivers); None where this machine cannot see it."""
    for candidate in (
        CGROUPS / controller / "docker" / container,
        CGROUPS / "system.slice" / f"docker-{container}.scope",
        CGROUPS / "docker" / container,
    ):
        if candidate.is_dir():
            return candidate
    return _dir_of_main_process(container, controller)


@functools.cache
def _dir_of_main_process(container: str, controller: str) -> Path | None:
    inspect = ["docker", "inspect", "--format", "{{.Id}} {{.State.Pid}}", container]
    found = subprocess.run(inspect, capture_output=True, text=True)
    if found.returncode != 0 or len(found.stdout.split()) != 2:
        return None
    full_id, pid = found.stdout.split()
    if not sees_container(int(pid), full_id):
        return None
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        hierarchy, controllers, path = line.split(":", 2)
        if hierarchy == "0" and not controllers:  # v2's unified hierarchy
            candidate = CGROUPS / path.lstrip("/")
        elif controller in controllers.split(","):
            candidate = CGROUPS / controllers / path.lstrip("/")
        else:
            continue
        if candidate.is_dir():
            return candidate
    return None


def read_figure(container: str, figure: str) -> str | None:
    """The text of the figure's cgroup file (FILES): here, else through the engine, else None."""
    (controller, v1_file), v2_file = FILES[figure]
    for directory, name in ((cgroup_dir(container, controller), v1_file), (cgroup_dir(container, figure), v2_file)):
        if directory and (directory / name).exists():
            return (directory / name).read_text()
    # Inside, the container's own cgroup is at the root of /sys/fs/cgroup (v1: per controller).
    script = f"cat {CGROUPS}/{controller}/{v1_file} 2>/dev/null || cat {CGROUPS}/{v2_file}"
    inside = subprocess.run(["docker", "exec", container, "sh", "-c", script], capture_output=True, text=True)
    return inside.stdout if inside.returncode == 0 and inside.stdout.strip() else None


def container_cpu_seconds(container: str) -> float | None:
    """CPU time of every process the container ever ran, exited ones too."""
    text = read_figure(container, "cpu")
    if text is None:
        return None
    if text.split()[0].isdigit():  # v1's cpuacct.usage: nanoseconds
        return int(text.split()[0]) / 1e9
    usage = dict(line.split() for line in text.splitlines() if line.strip())
    return int(usage["usage_usec"]) / 1e6


def container_memory_mb(container: str) -> float | None:
    """The container's private and shared memory, not the page cache (sampler.memory_mb)."""
    text = read_figure(container, "memory")
    return None if text is None else memory_mb(text)


UNREAD = "its cgroup could be read neither on this machine nor through the engine (docker exec ... cat)"
