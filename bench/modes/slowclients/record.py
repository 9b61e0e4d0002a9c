"""A record of make slowclients: one target, one kind of slow client, one number of them held open at once.
bench/modes/slowclients/run.py builds it as it measures, the result store writes it (to_json) and reads it back
(from_json) as this same class."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from bench.results.records import Checked


@dataclass(frozen=True)
class NormalRequest:
    """One normal request sent while the slow connections were open."""

    sent_after: float  # seconds after the last slow connection was in place
    seconds: float
    status: int | None  # None: no HTTP answer
    problem: str | None  # why it does not count as a normal answer; None when it does


@dataclass(frozen=True, kw_only=True)
class SlowClientResult(Checked):
    via: str | None = None  # the proxy in front of the server, if any
    # One level: none where the target was not verified or did not start (`problem` says why).
    kind: str | None = None  # head, body or idle
    connections: int | None = None
    opened: int | None = None
    answered: int | None = None  # idle only: how many of their one requests were answered
    setup_seconds: float | None = None
    probes: list[NormalRequest] = field(default_factory=list)
    closed_by_server: int | None = None
    first_closed_after: float | None = None
    closed_with: dict[str, int] = field(default_factory=dict)  # what the closed ones got first: a status, "nothing"
    worst_seconds: float | None = None
    delayed: bool | None = None  # a normal request took longer than the threshold, or got no answer
    recovered: bool | None = None  # a normal request was answered again once the slow clients had left
    recovery_seconds: float | None = None

    @classmethod
    def typed(cls, known: dict[str, Any]) -> dict[str, Any]:
        return known | {"probes": [NormalRequest(**probe) for probe in known.get("probes", [])]}

    def to_json(self) -> dict[str, Any]:
        """The record as results.json keeps it, key for key as the mode wrote it before it was typed: a target that
        was not verified or did not start has no level's keys at all."""
        record = self.target_json() | {"via": self.via, "verified": self.verified, "problem": self.problem}
        if self.kind is not None:
            record |= {
                "kind": self.kind,
                "connections": self.connections,
                "opened": self.opened,
                "answered": self.answered,
                "setup_seconds": self.setup_seconds,
                "probes": [asdict(probe) for probe in self.probes],
                "closed_by_server": self.closed_by_server,
                "first_closed_after": self.first_closed_after,
                "closed_with": self.closed_with,
                "worst_seconds": self.worst_seconds,
                "delayed": self.delayed,
                "recovered": self.recovered,
                "recovery_seconds": self.recovery_seconds,
            }
        return record | {"ok": self.ok} | self.extra
