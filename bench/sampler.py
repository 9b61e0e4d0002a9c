"""Samples a server's processes from the host's /proc while a load runs: OS threads, memory, CPU time."""

from __future__ import annotations

import contextlib
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from bench.compose import os_threads, server_pids

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# A Postgres backend serving a client names the client's address and port in its title.
CLIENT_BACKEND = re.compile(rb"^postgres: .*\(\d+\)")


@dataclass
class Usage:
    threads_peak: int = 0
    rss_mb_peak: float = 0.0
    cpu_seconds: float = 0.0
    pg_sessions_peak: int | None = None


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def pg_client_sessions(postgres_pid: int) -> int:
    sessions = 0
    for pid in server_pids(postgres_pid):
        with contextlib.suppress(OSError):
            sessions += bool(CLIENT_BACKEND.match(Path(f"/proc/{pid}/cmdline").read_bytes()))
    return sessions


class Sampler:
    """A background thread sampling while the `with` block runs; `usage` holds the peaks and CPU time."""

    def __init__(self, server_pid: int, postgres_pid: int | None = None, every: float = 0.2) -> None:
        self.server_pid = server_pid
        self.postgres_pid = postgres_pid
        self.every = every
        self.usage = Usage(pg_sessions_peak=0 if postgres_pid else None)
        self._ticks_first: dict[int, int] = {}
        self._ticks_last: dict[int, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Sampler:
        self._sample(starting=True)
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        # A worker that ended during the load keeps what it used until its last sample.
        ticks = sum(last - self._ticks_first.get(pid, 0) for pid, last in self._ticks_last.items())
        self.usage.cpu_seconds = round(ticks / CLOCK_TICKS, 2)

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self._sample()

    def _sample(self, starting: bool = False) -> None:
        pids = server_pids(self.server_pid)
        rss_kb = 0
        for pid in pids:
            with contextlib.suppress(OSError, IndexError):
                ticks = _cpu_ticks(pid)
                if starting:
                    self._ticks_first[pid] = ticks
                self._ticks_last[pid] = ticks
                rss_kb += _rss_kb(pid)
        usage = self.usage
        usage.threads_peak = max(usage.threads_peak, os_threads(pids))
        usage.rss_mb_peak = max(usage.rss_mb_peak, round(rss_kb / 1024, 1))
        if self.postgres_pid and usage.pg_sessions_peak is not None:
            usage.pg_sessions_peak = max(usage.pg_sessions_peak, pg_client_sessions(self.postgres_pid))
