"""A record of make bookstore: one target under one load at one number of clients, one repeat, beside pgbench
running the same SQL against the database alone. bench/modes/bookstore/round.py builds it as it measures (each step a
dataclasses.replace, so a name no field has fails at once), the result store writes it (to_json) and reads it back
(from_json) as this same class."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.results.records import Loaded


@dataclass(frozen=True, kw_only=True)
class BookstoreResult(Loaded):
    # The load and the target's way to the database: in every record.
    load: str
    request: str  # what the load sends, in a few words
    clients: int
    db_clients: int  # as many as the database can see from the target at once: pgbench's clients
    db_pool: int | None
    scale: int  # authors in the database
    seconds: int  # of wrk, and of pgbench
    loadgen: str
    client: str
    rung: int | None = None  # the ladder's rung, for its targets
    reads_end_with: str | None = None  # how the app's reads end (sets from before the setting: rollback)
    pgbench_protocol: str | None = None
    repeat: int | None = None  # sets made in rounds
    pgbench_scripts: dict[str, str] | None = None  # file name -> the SQL of one request; None: not verified
    warm_up_s: float | None = None  # the target's first warm-up, in its first record
    warm_up_cpu_ms_per_request: list[float] | None = None
    # The target under wrk: none where it was not measured (`problem` says why).
    command: str | None = None
    rps_answered: float | None = None
    complete: int | None = None
    served: int | None = None  # answered 2xx
    p50_ms: float | None = None
    p99_ms: float | None = None
    failed: int | None = None
    failure_kinds: dict[str, int] = field(default_factory=dict)
    non2xx: int | None = None
    statuses: dict[str, int] = field(default_factory=dict)
    status_503: int | None = None  # refused by the app: its pool had no connection in time
    writes_acknowledged: int | None = None
    writes_found: int | None = None
    writes_lost: int | None = None
    writes_lost_markers: list[str] | None = None
    writes_unacknowledged: int | None = None
    app_cpu_ms_per_request: float | None = None
    app_container_cpu_ms_per_request: float | None = None
    db_via_cpu_ms_per_request: float | None = None  # pgbouncer's, where the target goes through it
    pg_cpu_ms_per_request: float | None = None  # less what Postgres does idle in as long
    pg_cpu_ms_per_request_gross: float | None = None
    pg_idle_cpu_ms_per_s: float | None = None
    pg_window_s: float | None = None
    pg_transactions_per_request: float | None = None
    pg_statements_per_request: dict[str, float] | None = None  # by the statement's first word
    pg_cpu_ms_per_transaction: float | None = None
    threads_peak: int | None = None  # the app server's
    rss_mb_peak: float | None = None  # the app server's
    pg_memory_mb_peak: float | None = None
    pg_sessions_peak: int | None = None
    pg_busy_peak: int | None = None
    pg_busy_s_after_wrk: float | None = None
    machine_busy: float | None = None
    sampled_on: str | None = None
    not_sampled: str | None = None
    # pgbench, the database alone, with the target's SQL and clients.
    pgbench_command: str | None = None
    pgbench_tps: float | None = None
    pgbench_transactions: int | None = None
    pgbench_failed: int | None = None
    pgbench_latency_ms: float | None = None
    pgbench_pg_cpu_ms_per_transaction: float | None = None
    pgbench_pg_cpu_ms_per_transaction_gross: float | None = None
    pgbench_statements_per_transaction: dict[str, float] | None = None
    pgbench_busy_peak: int | None = None
    pgbench_pg_memory_mb_peak: float | None = None
    pgbench_problem: str | None = None
    # pgbench paced to the target's own rate (--at-app-rate), in the first round.
    pgbench_at_app_rate_command: str | None = None
    pgbench_at_app_rate_tps: float | None = None
    pgbench_at_app_rate_pg_cpu_ms_per_transaction: float | None = None
    pgbench_at_app_rate_problem: str | None = None
    vs_database: float | None = None  # rps over pgbench_tps
    # py-spy on the server's processes (--profile-seconds), in each load's first round.
    profile: dict[str, float] | None = None  # category -> share of the samples
    profile_samples: int | None = None
    profile_stacks: str | None = None  # the samples, in the set's profiles/ folder
    profile_problem: str | None = None
    profile_first_try: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The record as results.json keeps it, key for key as the mode wrote it before it was typed: a key is absent
        where the step that writes it did not run (the target was not verified, wrk or pgbench did not finish, the
        load has no writes, no profile or pacing was asked for), and null where the step ran without a figure."""
        record = self.target_json() | {key: getattr(self, key) for key in TARGET_AND_LOAD}
        record |= self.present("repeat")
        if self.warm_up_s is not None:  # the target's first record
            record |= {"warm_up_s": self.warm_up_s, "warm_up_cpu_ms_per_request": self.warm_up_cpu_ms_per_request}
        record |= {"verified": self.verified, "problem": self.problem} | self.present("pgbench_scripts")
        if self.command is not None:  # wrk ran
            record["command"] = self.command
            if self.rps is not None:  # and finished
                record |= {key: getattr(self, key) for key in WRK} | self.present("not_sampled")
            record["pg_busy_s_after_wrk"] = self.pg_busy_s_after_wrk
        if self.writes_found is not None:
            record |= {key: getattr(self, key) for key in WRITES}
        record |= self.present(*PROFILE)
        if self.pgbench_command is not None:
            record["pgbench_command"] = self.pgbench_command
            if self.pgbench_tps is not None:
                record |= {key: getattr(self, key) for key in PGBENCH}
            record["pgbench_problem"] = self.pgbench_problem
        if self.pgbench_at_app_rate_command is not None:
            record |= {key: getattr(self, key) for key in AT_APP_RATE}
        record |= self.present("vs_database")
        if self.cpu_probe is not None:
            record["cpu_probe"] = self.cpu_probe.to_json()
        return record | {"ok": self.ok} | self.extra


# Each step's fields, in the order its record has them.
TARGET_AND_LOAD = (
    "rung", "reads_end_with", "pgbench_protocol", "db_pool", "load", "request", "clients", "db_clients", "scale",
    "seconds", "loadgen", "client",
)  # fmt: skip
WRK = (
    "rps", "rps_answered", "complete", "p50_ms", "p99_ms", "failed", "failure_kinds", "non2xx", "statuses",
    "status_503", "writes_acknowledged", "served", "app_cpu_ms_per_request", "app_container_cpu_ms_per_request",
    "db_via_cpu_ms_per_request", "pg_cpu_ms_per_request", "pg_cpu_ms_per_request_gross", "pg_idle_cpu_ms_per_s",
    "pg_window_s", "pg_transactions_per_request", "pg_statements_per_request", "pg_cpu_ms_per_transaction",
    "rss_mb_peak", "threads_peak", "pg_memory_mb_peak", "pg_sessions_peak", "pg_busy_peak", "machine_busy",
    "sampled_on",
)  # fmt: skip
WRITES = ("writes_found", "writes_lost", "writes_lost_markers", "writes_unacknowledged")
PROFILE = ("profile", "profile_samples", "profile_stacks", "profile_problem", "profile_first_try")
PGBENCH = (
    "pgbench_tps", "pgbench_transactions", "pgbench_failed", "pgbench_latency_ms", "pgbench_statements_per_transaction",
    "pgbench_pg_cpu_ms_per_transaction", "pgbench_pg_cpu_ms_per_transaction_gross", "pgbench_busy_peak",
    "pgbench_pg_memory_mb_peak",
)  # fmt: skip
AT_APP_RATE = (
    "pgbench_at_app_rate_command", "pgbench_at_app_rate_tps", "pgbench_at_app_rate_pg_cpu_ms_per_transaction",
    "pgbench_at_app_rate_problem",
)  # fmt: skip
