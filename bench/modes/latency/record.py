"""A record of make latency: one target at one offered rate, open loop. bench/modes/latency/run.py builds it as it
measures, the result store writes it (to_json) and reads it back (from_json) as this same class."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.results.records import Checked


@dataclass(frozen=True, kw_only=True)
class LatencyResult(Checked):
    delay: float
    client: str
    loadgen: str
    keepalive: bool | None = None
    # The closed loop that measured the target's base rate, before its first offered rate.
    base_command: str | None = None
    base_rps: float | None = None
    base_failed: int | None = None
    # One offered rate: none where the target was not loaded (`problem` says why).
    fraction: float | None = None  # of the base rate; None for a rate given as such
    command: str | None = None
    offered_rps: float | None = None
    duration_s: float | None = None
    requests: int | None = None
    sent_rps: float | None = None
    achieved_rps: float | None = None
    success_ratio: float | None = None
    keeps_up: bool | None = None
    status_codes: dict[str, int] | None = None
    failure_kinds: dict[str, int] | None = None
    # From the scheduled send to the end of the answer; None where a failed request falls on the percentile.
    p50_ms: float | None = None
    p90_ms: float | None = None
    p99_ms: float | None = None
    p999_ms: float | None = None
    max_ms: float | None = None
    send_lag_ms_max: float | None = None

    @property
    def loaded(self) -> bool:
        return self.requests is not None

    def to_json(self) -> dict[str, Any]:
        """The record as results.json keeps it, key for key as the mode wrote it before it was typed. A key is absent
        where the step that writes it did not run (the base rate; a rate, or its load, not parsed), and null where
        the step ran without a figure (a percentile on a failure, a rate given as such): readers tell the two apart
        (`loaded`, a rate's row in the table)."""
        record = self.target_json() | {
            "delay": self.delay,
            "loadgen": self.loadgen,
            "keepalive": self.keepalive,
            "client": self.client,
            "verified": self.verified,
            "problem": self.problem,
        }
        if self.base_command is not None:
            record["base_command"] = self.base_command
        if self.base_rps is not None:  # hey's output parsed
            record |= {"base_rps": self.base_rps, "base_failed": self.base_failed}
        if self.offered_rps is not None:
            record["fraction"] = self.fraction
            record |= self.load_json() if self.loaded else {"offered_rps": self.offered_rps}
        return record | {"ok": self.ok} | self.extra

    def load_json(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "offered_rps": self.offered_rps,
            "duration_s": self.duration_s,
            "requests": self.requests,
            "sent_rps": self.sent_rps,
            "achieved_rps": self.achieved_rps,
            "success_ratio": self.success_ratio,
            "keeps_up": self.keeps_up,
            "status_codes": self.status_codes,
            "failure_kinds": self.failure_kinds,
            "p50_ms": self.p50_ms,
            "p90_ms": self.p90_ms,
            "p99_ms": self.p99_ms,
            "p999_ms": self.p999_ms,
            "max_ms": self.max_ms,
            "send_lag_ms_max": self.send_lag_ms_max,
        }
