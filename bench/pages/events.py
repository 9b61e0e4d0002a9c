"""`make incidents` sets as docs/incidents.md shows them: per way of serving and event, the requests lost and the
seconds until the 2xx rate was back, lowest to highest over the repeats; the bookstore's writes lost; and the words
the page's sentences use for them ("nothing", "at most", "all 100 in flight"), each checked against every repeat."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from bench.modes.incidents.record import IncidentResult
from bench.pages.facts import FactError, Facts, number_word, quantified
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


def repeats(sets: list[Facts], targets: list[str], event: str) -> list[IncidentResult]:
    """Every repeat of the event on every way named."""
    found = [r for target in targets for r in runs(sets, target, event)]
    if not found:
        raise FactError(f"no repeat of {event} on {targets}")
    return found


def most(sets: list[Facts], targets: list[str], event: str) -> str:
    """The most requests any repeat of the event lost on the ways named, as a bound: "nothing", "at most one
    request", "at most 18 requests"."""
    top = max(r.failed or 0 for r in repeats(sets, targets, event))
    return "nothing" if top == 0 else f"at most {number_word(top)} request{'s' if top > 1 else ''}"


def in_flight(sets: list[Facts], targets: list[str], event: str) -> str:
    """What the repeats lost of the requests in flight at the event: "all 100 in flight" where each repeat lost all
    it had, "none of the 100 in flight" where none lost any, else "91 to 100 of the 100 in flight"."""
    found = repeats(sets, targets, event)
    held = [r.in_flight_at_event or 0 for r in found]
    lost = [r.failed_in_flight_at_event or 0 for r in found]
    if all(one == all_held for one, all_held in zip(lost, held, strict=True)):
        return f"all {said(held)} in flight"
    if max(lost) == 0:
        return f"none of the {said(held)} in flight"
    return f"{said(lost)} of the {said(held)} in flight"


def only_what_it_held(sets: list[Facts], targets: list[str], event: str) -> str:
    """Nothing, where each repeat lost only requests in flight at the event (none before it, none sent after it);
    otherwise a FactError: the sentence says "loses what it held, and no more"."""
    for r in repeats(sets, targets, event):
        if r.failed_before_event or r.failed != r.failed_in_flight_at_event:
            raise FactError(
                f"{r.target} {event}, repeat {r.repeat}: {r.failed} lost, {r.failed_in_flight_at_event} of them in "
                f"flight at the event, {r.failed_before_event} before it"
            )
    return ""


def beyond_in_flight(sets: list[Facts], targets: list[str], event: str) -> str:
    """Nothing, where each repeat lost more requests than it had in flight at the event; otherwise a FactError."""
    for r in repeats(sets, targets, event):
        if (r.failed or 0) <= (r.in_flight_at_event or 0):
            lost, held = r.failed, r.in_flight_at_event
            raise FactError(f"{r.target} {event}, repeat {r.repeat}: {lost} lost of {held} in flight")
    return ""


def with_losses(sets: list[Facts], targets: list[str], event: str) -> str:
    """In how many repeats the event lost a request: "every run", "1 of 2 runs", "no run"."""
    found = repeats(sets, targets, event)
    return quantified(sum(1 for r in found if r.failed), len(found), "run")


def around_the_event(sets: list[Facts], targets: list[str], event: str) -> str:
    """Nothing, where every repeat that lost a request lost some before the event and some after it (failures not
    the event's own); otherwise a FactError."""
    for r in repeats(sets, targets, event):
        if r.failed and not (r.failed_before_event and r.failed_after_event):
            raise FactError(f"{r.target} {event}, repeat {r.repeat}: {r.failed} lost, none before or none after it")
    return ""


def sent_in(sets: list[Facts], targets: list[str], event: str) -> list[int]:
    """The requests each repeat of the event sent in its load, on every way named."""
    return [r.sent or 0 for r in repeats(sets, targets, event)]


def longest_in(sets: list[Facts], targets: list[str], event: str) -> list[float]:
    """Each repeat's longest request, in seconds, on every way named."""
    return [r.longest_s or 0.0 for r in repeats(sets, targets, event)]


def requests_of(sets: list[Facts], targets: list[str], event: str) -> list[int]:
    """How many requests each repeat's event sent itself (the hog's burst), from its event_result."""
    return [int((r.event_result or {})["requests"]) for r in repeats(sets, targets, event)]


def never_back(sets: list[Facts], targets: list[str], event: str) -> str:
    """Nothing, where no repeat of the event got its 2xx rate back within the load; otherwise a FactError."""
    for r in repeats(sets, targets, event):
        if r.recovery_s is not None:
            raise FactError(f"{r.target} {event}, repeat {r.repeat}: back after {r.recovery_s} s")
    return ""


def all_back(sets: list[Facts], targets: list[str], event: str) -> str:
    """Nothing, where every repeat of the event got its 2xx rate back within the load; otherwise a FactError."""
    for r in repeats(sets, targets, event):
        if r.recovery_s is None:
            raise FactError(f"{r.target} {event}, repeat {r.repeat}: never back within the load")
    return ""


def writes_lost(sets: list[Facts], targets: list[str], events: list[str]) -> tuple[int, int]:
    """Over every repeat of the events: the acknowledged writes lost, and the writes stored whose 201 never reached
    the client."""
    found = [r for event in events for r in repeats(sets, targets, event)]
    return sum(r.writes_lost or 0 for r in found), sum(r.writes_unacknowledged or 0 for r in found)


def writes_acknowledged(sets: list[Facts], targets: list[str], event: str) -> list[int]:
    """The writes each repeat's load had acknowledged (a 201 read by the client)."""
    return [r.writes_acknowledged or 0 for r in repeats(sets, targets, event)]
