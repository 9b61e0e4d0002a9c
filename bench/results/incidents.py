"""A record of make incidents: one target under a steady closed loop with one event in it, one repeat
(bench/modes/incidents.py writes it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.results.records import Checked


@dataclass(frozen=True, kw_only=True)
class IncidentResult(Checked):
    event: str
    event_what: str | None = None  # the event in a few words
    environment: dict[str, str] = field(default_factory=dict)
    clients: int
    delay: float
    load_seconds: float
    event_planned_at_s: float | None = None  # None: a setting that acts all through the load
    loadgen: str | None = None
    keepalive: bool | None = None
    repeat: int = 1
    scale: int | None = None  # the bookstore's authors, for its targets
    # The load with its event: none where the target did not start or was not verified (`problem` says why).
    event_result: dict[str, Any] | None = None
    command: str | None = None  # what caused the event
    sent: int | None = None
    resent_on_closed_connection: int | None = None
    answered: int | None = None
    failed: int | None = None
    failed_by_kind: dict[str, int] = field(default_factory=dict)
    longest_s: float | None = None
    bin_seconds: float | None = None
    bins: dict[str, list[int]] | None = None  # per kind of answer ("ok", or a failure), its count per bin
    # Around the event's moment: none for a setting that acts all through the load.
    event_at_s: float | None = None
    event_done_at_s: float | None = None
    in_flight_at_event: int | None = None
    failed_in_flight_at_event: int | None = None
    failed_before_event: int | None = None
    failed_after_event: int | None = None
    ok_per_second_before: float | None = None
    first_ok_after_event_s: float | None = None
    recovery_s: float | None = None  # None, with an event: the 2xx rate was not back within the load
    serves_after: bool | None = None
    # The bookstore's writes, looked up one by one after the load.
    writes_acknowledged: int | None = None
    writes_found: int | None = None
    writes_lost: int | None = None
    writes_lost_markers: list[str] | None = None
    writes_unacknowledged: int | None = None

    @property
    def loaded(self) -> bool:
        return self.sent is not None

    @property
    def has_moment(self) -> bool:
        """An event at one moment (a reload, a kill), not a setting that acts all through the load."""
        return self.event_at_s is not None
