"""A record of make bookstore: one target under one load at one number of clients, one repeat, beside pgbench
running the same SQL against the database alone. bench/modes/bookstore/round.py builds it as it measures: each step's
findings typed where they are measured (WarmUp, AppUnderWrk, Profile, DatabaseAlone and AtAppRate below, whose fields
are the record's; bench/results/records.py's WritesChecked) and taken in whole (Record.with_measured). The result
store writes it (to_json) and reads it back (from_json) as this same class."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from bench.results.records import Loaded, WritesChecked

# What each step of a round finds, a class of its own: the record is made of them (it inherits their fields, each
# declared once, here), and takes each in whole as it is measured. A field left at its default is one the step did
# not read. Each step's fields stand in the order results.json has them.


@dataclass(frozen=True, kw_only=True)
class WarmUp:
    """The target's first warm-up (wrk_load.warm_up), said in its first record only."""

    warm_up_s: float | None = None
    warm_up_cpu_ms_per_request: list[float] | None = None


@dataclass(frozen=True, kw_only=True)
class AppUnderWrk:
    """The target under wrk (wrk_load.measure_app): its figures per request served, Postgres's less what it does
    idle, or, where wrk did not finish, its command and why (`problem`)."""

    command: str | None = None
    rps: float | None = None  # served: 2xx answers
    rps_answered: float | None = None  # every answer, 503s too
    complete: int | None = None
    p50_ms: float | None = None
    p99_ms: float | None = None
    failed: int | None = None
    failure_kinds: dict[str, int] = field(default_factory=dict)
    non2xx: int | None = None
    statuses: dict[str, int] = field(default_factory=dict)
    status_503: int | None = None  # refused by the app: its pool had no connection in time
    writes_acknowledged: int | None = None
    served: int | None = None  # answered 2xx
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
    rss_mb_peak: float | None = None  # the app server's
    threads_peak: int | None = None  # the app server's
    pg_memory_mb_peak: float | None = None
    pg_sessions_peak: int | None = None
    pg_busy_peak: int | None = None
    machine_busy: float | None = None
    sampled_on: str | None = None
    not_sampled: str | None = None
    problem: str | None = None


@dataclass(frozen=True, kw_only=True)
class Profile:
    """py-spy on the target's server processes under wrk (--profile-seconds, round.profile_target), in each load's
    first round, or why there is none."""

    profile: dict[str, float] | None = None  # category -> share of the samples
    profile_samples: int | None = None
    profile_stacks: str | None = None  # the samples, in the set's profiles/ folder
    profile_problem: str | None = None
    profile_first_try: str | None = None


@dataclass(frozen=True, kw_only=True)
class DatabaseAlone:
    """pgbench on the target's SQL and clients against Postgres alone (pgbench_replay.measure_database), or why it
    did not finish."""

    pgbench_command: str | None = None
    pgbench_tps: float | None = None
    pgbench_transactions: int | None = None
    pgbench_failed: int | None = None
    pgbench_latency_ms: float | None = None
    pgbench_statements_per_transaction: dict[str, float] | None = None
    pgbench_pg_cpu_ms_per_transaction: float | None = None
    pgbench_pg_cpu_ms_per_transaction_gross: float | None = None
    pgbench_busy_peak: int | None = None
    pgbench_pg_memory_mb_peak: float | None = None
    pgbench_problem: str | None = None


@dataclass(frozen=True, kw_only=True)
class AtAppRate:
    """pgbench paced to the target's own rate (--at-app-rate, pgbench_replay.at_app_rate), in the first round."""

    pgbench_at_app_rate_command: str | None = None
    pgbench_at_app_rate_tps: float | None = None
    pgbench_at_app_rate_pg_cpu_ms_per_transaction: float | None = None
    pgbench_at_app_rate_problem: str | None = None


@dataclass(frozen=True, kw_only=True)
class BookstoreResult(Loaded, WarmUp, AppUnderWrk, WritesChecked, Profile, DatabaseAlone, AtAppRate):
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
    pg_busy_s_after_wrk: float | None = None
    vs_database: float | None = None  # rps over pgbench_tps

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


def names(step: type[Any], *but: str) -> tuple[str, ...]:
    return tuple(member.name for member in fields(step) if member.name not in but)


# Each step's keys, in the order its record has them.
TARGET_AND_LOAD = (
    "rung", "reads_end_with", "pgbench_protocol", "db_pool", "load", "request", "clients", "db_clients", "scale",
    "seconds", "loadgen", "client",
)  # fmt: skip
WRK = names(AppUnderWrk, "command", "not_sampled", "problem")
WRITES = names(WritesChecked)
PROFILE = names(Profile)
PGBENCH = names(DatabaseAlone, "pgbench_command", "pgbench_problem")
AT_APP_RATE = names(AtAppRate)
