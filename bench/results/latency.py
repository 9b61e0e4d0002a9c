"""A record of make latency: one target at one offered rate, open loop (bench/modes/latency.py writes it)."""

from __future__ import annotations

from dataclasses import dataclass

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
