"""A record of make yourapp: one way of serving the reader's app, verified, then (where it answered as the
development server did) its requests file's mix under one closed-loop load. bench/modes/yourapp/run.py builds it as it
measures, the result store writes it (to_json) and reads it back (from_json) as this same class. What the app costs
per request type, alone, and what its requirements hold is the set's (Metadata's extra: request_costs, unpatchable).
Sets before 2026-11-28 have no statuses per request, no writes and no locked: their per_type is keyed by METHOD path,
and counted any answer below 500 as answered where the file expected no status; the first sets of that day have no
log_errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.results.records import Loaded

SAID_ERRORS = 3  # the errors of an app's log a record keeps: the most frequent of each load


@dataclass(frozen=True, kw_only=True)
class YourAppResult(Loaded):
    clients: int
    repeat: int = 1
    seconds: float = 0.0
    server_command: str | None = None
    requests: int | None = None
    errors: int | None = None
    status_codes: dict[str, int] = field(default_factory=dict)
    failure_kinds: dict[str, int] = field(default_factory=dict)  # connect, timeout, closed, other; status
    p50_ms: float | None = None
    p99_ms: float | None = None  # a failed request ranked slowest; None where the rank falls on one
    # Per request of the file, by its label: requests, errors, p50_ms, p99_ms; and from 2026-11-28 its line,
    # expect, answered (with the expected status) and statuses (every status it got, "0": no answer).
    per_type: dict[str, dict[str, Any]] = field(default_factory=dict)
    cpu_ms_per_request: float | None = None  # the app's processes, over the requests answered
    rss_mb_peak: float | None = None  # the app's processes together, at their peak
    processes: int | None = None
    loadgen_cpu_seconds: float | None = None  # vegeta's own, in its container: the measurement's own cost
    command: list[str] = field(default_factory=list)  # vegeta's, as run
    # gevent's monitor (a gevent way only): how often a greenlet held the loop past 0.1 s, where, and its stack.
    blocked_reports: int | None = None
    blocked_where: str | None = None
    blocked_stack: list[str] = field(default_factory=list)
    # Per write of the file, by its label: lookup (its page), acknowledged, found, lost, found_unacknowledged; or
    # acknowledged and the problem that kept it from being looked up. None: a set that did not record writes.
    writes: dict[str, dict[str, Any]] | None = None
    locked: dict[str, int] | None = None  # SQLite's "database is locked" per request, from the log
    log_errors: dict[str, int] | None = None  # the log's SAID_ERRORS most frequent (session.py)
    # The reader's Postgres (SERVICES=), over the same requests: its container's CPU and its statements per request.
    db_cpu_ms_per_request: float | None = None
    db_statements_per_request: float | None = None

    @property
    def loaded(self) -> bool:
        return self.requests is not None

    def to_json(self) -> dict[str, Any]:
        """The record as results.json keeps it, key for key as the mode wrote it before it was typed: a way that did
        not start says so at once; a load that did not run has no figures; what a set did not record yet (writes and
        the database's figures, locked, log_errors, gevent's monitor on another server) is absent, not null."""
        record = self.target_json() | {"verified": self.verified}
        if not self.verified:
            said = {"ok": self.ok, "clients": self.clients, "server_command": self.server_command}
            return record | said | {"problem": self.problem} | self.extra
        record |= {"clients": self.clients, "repeat": self.repeat, "seconds": self.seconds}
        record["server_command"] = self.server_command
        if self.loaded:
            record |= {key: getattr(self, key) for key in LOADED}
            if self.writes is not None:
                record |= {key: getattr(self, key) for key in WRITES}
            record["cpu_probe"] = None if self.cpu_probe is None else self.cpu_probe.to_json()
            record |= self.present("locked", "log_errors")
            if self.blocked_reports is not None:
                record |= {key: getattr(self, key) for key in BLOCKED}
        return record | {"ok": self.ok, "problem": self.problem} | self.extra


# A load's figures, in the order its record has them (bench/modes/yourapp/load.py, MixResult's).
LOADED = (
    "requests", "rps", "errors", "status_codes", "failure_kinds", "p50_ms", "p99_ms", "per_type", "cpu_ms_per_request",
    "rss_mb_peak", "processes", "loadgen_cpu_seconds", "command",
)  # fmt: skip
WRITES = ("writes", "db_cpu_ms_per_request", "db_statements_per_request")
BLOCKED = ("blocked_reports", "blocked_where", "blocked_stack")


def outcome(entry: dict[str, Any]) -> str:
    """What one request of the file got under load, in words: "120 answered 302 as expected, 30 got 400"."""
    expect = str(entry["expect"])
    said = [f"{entry['statuses'].get(expect, 0)} answered {expect} as expected"]
    for status, count in entry["statuses"].items():
        if status != expect:
            said.append(f"{count} got no answer" if status == "0" else f"{count} got {status}")
    return ", ".join(said)
