"""A record of make incidents: one target under a steady closed loop with one event in it, one repeat.
bench/modes/incidents/run.py builds it as it measures, the result store writes it (to_json) and reads it back
(from_json) as this same class.

Two parts stay dicts, as results.json has them: `event_result`, what the event's own code returned (bench/containers/
events.py: `did`, and per event its victim, workers, requests or problem: as many shapes as events, read by the page
and the tests by key), and `bins`, the answers per bin keyed by kind of answer, whose kinds are what the load met
("ok", "reset", "status 503", ...): a mapping, not a record."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bench.loadgen.timeline import TimelineSummary
from bench.models.spread import recorded
from bench.results.records import Checked, WritesChecked


@dataclass(frozen=True, kw_only=True)
class IncidentResult(Checked, TimelineSummary, WritesChecked):
    event: str
    event_what: str | None = None  # the event in a few words
    environment: dict[str, str] = field(default_factory=dict)
    clients: int
    delay: float
    # load_seconds: TimelineSummary's, the load's length, from the record's first step
    event_planned_at_s: float | None = None  # None: a setting that acts all through the load
    loadgen: str | None = None
    keepalive: bool | None = None
    repeat: int = 1
    scale: int | None = None  # the bookstore's authors, for its targets
    # The load with its event, and its summary (TimelineSummary's fields): none where the target did not start or
    # was not verified (`problem` says why).
    event_result: dict[str, Any] | None = None
    command: str | None = None  # what caused the event
    serves_after: bool | None = None
    # The bookstore's writes, looked up one by one after the load.
    writes_acknowledged: int | None = None

    @property
    def loaded(self) -> bool:
        return self.sent is not None

    @property
    def has_moment(self) -> bool:
        """An event at one moment (a reload, a kill), not a setting that acts all through the load."""
        return self.event_at_s is not None

    def to_json(self) -> dict[str, Any]:
        """The record as results.json keeps it, key for key as the mode wrote it before it was typed. A key is absent
        where the step that writes it did not run: the load's where the target did not start or was not verified,
        the moment's for a setting that acts all through the load, the writes' (and the scale) but on the
        bookstore's targets, the check after the load where the scenario failed before it; null where the step ran
        without a figure (no 2xx rate back within the load)."""
        record = self.target_json() | {
            "event": self.event,
            "event_what": self.event_what,
            "environment": self.environment,
            "clients": self.clients,
            "delay": self.delay,
            "load_seconds": self.load_seconds,
            "event_planned_at_s": self.event_planned_at_s,
            "loadgen": self.loadgen,
            "keepalive": self.keepalive,
            "repeat": self.repeat,
        }
        if self.scale is not None:
            record["scale"] = self.scale
        record |= {"verified": self.verified, "problem": self.problem}
        if self.loaded:
            record |= self.load_json()
        if self.writes_found is not None:  # looked up after the load
            record |= {
                "writes_found": self.writes_found,
                "writes_lost": self.writes_lost,
                "writes_lost_markers": self.writes_lost_markers,
                "writes_unacknowledged": self.writes_unacknowledged,
                "writes_acknowledged": self.writes_acknowledged,
            }
        if self.serves_after is not None:
            record["serves_after"] = self.serves_after
        return record | {"ok": self.ok} | self.extra

    def load_json(self) -> dict[str, Any]:
        """The load's keys, in timeline.summarize's order."""
        load = {
            "event_result": self.event_result,
            "command": self.command,
            "sent": self.sent,
            "resent_on_closed_connection": self.resent_on_closed_connection,
            "answered": self.answered,
            "failed": self.failed,
            "failed_by_kind": self.failed_by_kind,
            "longest_s": self.longest_s,
            "bin_seconds": self.bin_seconds,
            "bins": self.bins,
        }
        if not self.has_moment:
            return load
        load |= {"event_at_s": self.event_at_s, "event_done_at_s": self.event_done_at_s}
        if self.event_waited_for_in_flight_s is not None:
            load["event_waited_for_in_flight_s"] = self.event_waited_for_in_flight_s
        return load | {
            "in_flight_at_event": self.in_flight_at_event,
            "failed_in_flight_at_event": self.failed_in_flight_at_event,
            "failed_before_event": self.failed_before_event,
            "failed_after_event": self.failed_after_event,
            "ok_per_second_before": self.ok_per_second_before,
            "first_ok_after_event_s": self.first_ok_after_event_s,
            "recovery_s": self.recovery_s,
        }


def spread_across_repeats(records: list[IncidentResult]) -> dict[str, dict[str, dict[str, float]]]:
    """Per target and event, how much the counts moved from one repeat to the next."""
    groups: dict[str, list[IncidentResult]] = {}
    for record in records:
        groups.setdefault(f"{record.target} / {record.event}", []).append(record)
    return {
        label: {
            "sent": recorded(record.sent for record in members),
            "answered": recorded(record.answered for record in members),
            "failed": recorded(record.failed for record in members),
            "recovery_s": recorded(record.recovery_s for record in members),
        }
        for label, members in groups.items()
    }
