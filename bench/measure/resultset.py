"""A run's result set from start to end, the same for every mode: its folder, the file limit, the metadata with
the real command, every record written to OUT/results.json as it comes (bench/results), and at the end the set as
it loads from that file, for the mode's renderer. Also the one line per phase every mode prints while it runs."""

from __future__ import annotations

import os
import platform
import resource
import subprocess
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from bench.containers.compose import compose_command, docker
from bench.containers.scenarios import ROOT
from bench.results import store
from bench.results.store import LoadedSet


class Progress:
    """One line per phase: which target, what it does, time spent and an estimate of what is left."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.started = total, 0, time.monotonic()

    def show(self, label: str, phase: str) -> None:
        elapsed = time.monotonic() - self.started
        left = f", ~{elapsed / self.done * (self.total - self.done) / 60:.0f} min left" if self.done else ""
        print(f"[{self.done + 1}/{self.total} {elapsed / 60:4.1f} min{left}] {label}: {phase}", flush=True)


FILES_WANTED = 65536


def raise_file_limit() -> int:
    """A load generator holds a file per client, a slow connection is one too: the usual default of 1024 files
    stops short of the sweep's, latency's and slowclients' loads. Up to the hard limit, at most 65536; where the
    system refuses that (macOS caps a process at kern.maxfilesperproc, and says so only with a ValueError), the
    highest limit it accepts, said in one line. Returns the limit now in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = FILES_WANTED if hard == resource.RLIM_INFINITY else min(FILES_WANTED, hard)
    if soft != resource.RLIM_INFINITY and soft >= wanted:
        return soft

    def accepted(limit: int) -> bool:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
        except (ValueError, OSError):
            return False
        return True

    if accepted(wanted):
        return wanted
    # The highest limit between the current one and the one refused: at most 17 tries.
    low, high = soft, wanted
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if accepted(middle) else (low, middle)
    resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))
    print(f"open files: this system allows {low} per process, not {wanted}: loads of more clients will fail")
    return low


def cpu_model() -> str | None:
    """The CPU's model name as the kernel gives it (/proc/cpuinfo): figures from two models are not set side by side."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return None
    return next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), None)


def metadata(program: str, arguments: list[str], mode: str) -> dict[str, Any]:
    """What every set records about its run: when, which commit, the machine, Docker and Compose, the command."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    # Result sets (this run's own folder among them) are output, not code: they do not make the tree dirty.
    status = ["git", "status", "--porcelain", "--", ".", ":(exclude)results"]
    dirty = subprocess.run(status, cwd=ROOT, capture_output=True, text=True).stdout.strip()
    compose = subprocess.run([*compose_command(), "version", "--short"], capture_output=True, text=True)
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_commit": commit.stdout.strip() + ("-dirty" if dirty else ""),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "kernel": platform.release(),
        "docker_version": docker("version", "--format", "{{.Server.Version}}").strip(),
        "compose_version": compose.stdout.strip(),
        "command": " ".join([program, *arguments]),
        "mode": mode,
        "packages": {},
    }


class Record(Protocol):
    def to_json(self) -> dict[str, Any]: ...


class ResultSet:
    """OUT (or results/<UTC time><suffix>) made, the file limit raised, the metadata taken; then `add` each record
    as it is measured, written at once (a run stopped half-way keeps what it measured), `update` every record where a
    mode learnt more of them after (the re-runs, the same-run reference), `finish` to write the last of it and load
    the set back for the mode's renderer, and `say` where it is."""

    def __init__(self, program: str, mode: str, arguments: list[str], out: Path | None, suffix: str = "") -> None:
        self.out = out or ROOT / "results" / (datetime.now(UTC).strftime("%Y-%m-%dT%H%M%SZ") + suffix)
        self.out.mkdir(parents=True, exist_ok=True)
        raise_file_limit()
        self.metadata = metadata(program, arguments, mode)  # a mode adds to it as it learns more
        self.written: list[dict[str, Any]] = []  # the records as results.json holds them now
        self.started = time.monotonic()

    @property
    def minutes(self) -> float:
        return round((time.monotonic() - self.started) / 60, 1)

    def add(self, record: Record | dict[str, Any]) -> None:
        self.written.append(record if isinstance(record, dict) else record.to_json())
        self.save()

    def update(self, records: Sequence[Record]) -> None:
        """The set's records, all of them, in their order, as the mode now knows them."""
        self.written = [record.to_json() for record in records]
        self.save()

    def save(self) -> None:
        store.write(self.out, self.metadata, self.written)

    def finish(self) -> LoadedSet:
        """The last write, with how long the run took; then the set as it loads from results.json, which is all
        its renderer may draw from: what a committed set renders from again."""
        self.metadata["minutes"] = self.minutes
        self.save()
        return store.load(self.out)

    def say(self, failures: list[str], files: str) -> int:
        """One line: where the set is, its files, and what was not OK; the mode's exit status."""
        print(f"\nresults in {self.out}: {files}" + (f"; NOT OK: {', '.join(failures)}" if failures else ""))
        return 1 if failures else 0
