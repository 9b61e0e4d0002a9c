"""`make incidents` sets as docs/incidents.md shows them: per way of serving and event, the requests lost and the
seconds until the 2xx rate was back, lowest to highest over the repeats; the bookstore's writes lost."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from bench.modes.incidents.record import IncidentResult
from bench.pages.facts import Facts
from bench.results import store


@cache
def records(out: Path) -> list[IncidentResult]:
    return store.load(out).records_of(IncidentResult)


def runs(sets: list[Facts], target: str, event: str) -> list[IncidentResult]:
    """The repeats of one event on one way of serving, from whichever of the sets measured it."""
    return [r for found in sets for r in records(found.out) if r.target == target and r.event == event and r.loaded]


def span(values: list[int] | list[float], decimals: int = 0) -> str:
    """Lowest to highest, "17–33"; one figure where they print the same."""
    low, high = f"{min(values):.{decimals}f}", f"{max(values):.{decimals}f}"
    return low if low == high else f"{low}–{high}"


def lost(sets: list[Facts], target: str, event: str) -> str:
    """The requests lost, lowest to highest over the repeats; "–" where the way does not have the event."""
    found = runs(sets, target, event)
    return span([r.failed or 0 for r in found]) if found else "–"


def back_within(sets: list[Facts], target: str, event: str) -> str:
    """The seconds from the event until the 2xx rate was back, lowest to highest; "never" where it was not back
    within the load; "–" where the event has no single moment (recycling), or the way does not have it."""
    found = [r for r in runs(sets, target, event) if r.has_moment]
    if not found:
        return "–"
    seconds = [r.recovery_s for r in found if r.recovery_s is not None]
    if not seconds:
        return "never"
    said = span(seconds, 1)
    return said if len(seconds) == len(found) else f"{said}, never"


def writes(sets: list[Facts], target: str, event: str) -> str:
    """Acknowledged writes lost / writes stored whose 201 never reached the client, summed over the repeats."""
    found = runs(sets, target, event)
    if not found:
        return "–"
    return f"{sum(r.writes_lost or 0 for r in found)} / {sum(r.writes_unacknowledged or 0 for r in found)}"


def targets(found: Facts) -> list[str]:
    """The set's ways of serving, in the order it measured them."""
    return list(dict.fromkeys(r.target for r in records(found.out)))


def said(values: list[int] | list[float], decimals: int = 0) -> str:
    """Lowest to highest in prose, "1,209 to 1,210"; one figure where they print the same."""
    low, high = f"{min(values):,.{decimals}f}", f"{max(values):,.{decimals}f}"
    return low if low == high else f"{low} to {high}"


def lost_in(sets: list[Facts], targets: list[str], event: str) -> list[int]:
    """The requests each repeat of the event lost, on every way named."""
    return [r.failed or 0 for target in targets for r in runs(sets, target, event)]


def back_in(sets: list[Facts], targets: list[str], event: str) -> list[float]:
    """The seconds until back of each repeat of the event that came back, on every way named."""
    return [r.recovery_s for target in targets for r in runs(sets, target, event) if r.recovery_s is not None]
