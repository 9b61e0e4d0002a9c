"""A container's CPU time and memory from its cgroup, on this machine: what every process it ever ran used,
exited ones too (a Postgres backend that ended), which /proc no longer shows."""

from __future__ import annotations

from pathlib import Path


def cgroup_dir(container: str, controller: str) -> Path | None:
    """The container's cgroup: v1 with the cgroupfs driver (this machine), v2 with either driver."""
    for candidate in (
        Path(f"/sys/fs/cgroup/{controller}/docker/{container}"),
        Path(f"/sys/fs/cgroup/system.slice/docker-{container}.scope"),
        Path(f"/sys/fs/cgroup/docker/{container}"),
    ):
        if candidate.is_dir():
            return candidate
    return None


def container_cpu_seconds(container: str) -> float | None:
    """CPU time of every process the container ever ran, exited ones too."""
    v1 = cgroup_dir(container, "cpuacct")
    if v1 and (v1 / "cpuacct.usage").exists():
        return int((v1 / "cpuacct.usage").read_text()) / 1e9
    v2 = cgroup_dir(container, "cpu")
    if v2 and (v2 / "cpu.stat").exists():
        usage = dict(line.split() for line in (v2 / "cpu.stat").read_text().splitlines())
        return int(usage["usage_usec"]) / 1e6
    return None


def container_memory_mb(container: str) -> float | None:
    """The container's private memory and its shared memory (Postgres's shared buffers in use), not the page
    cache: with millions of rows the kernel caches the data files, and that is the machine's, not Postgres's."""
    directory = cgroup_dir(container, "memory")
    if directory is None or not (directory / "memory.stat").exists():
        return None
    stat = dict(line.split() for line in (directory / "memory.stat").read_text().splitlines())
    private = int(stat.get("total_rss", stat.get("rss", stat.get("anon", 0))))
    shared = int(stat.get("total_shmem", stat.get("shmem", 0)))
    return round((private + shared) / 2**20, 1)
