"""What the harness needs of the host and how it copes with what it finds: the Python it runs on, the open-file
limit where the system refuses the one it asks for (macOS caps it per process), and whether this machine's /proc
shows a container's processes (else the harness reads them through the engine)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

from bench.containers import cgroup, sampler
from bench.containers.sampler import SAMPLER_IMAGE
from bench.containers.scenarios import ROOT
from bench.measure import resultset


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
