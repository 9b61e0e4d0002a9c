"""A `make latency` set's records as docs/latency.md shows them: each target's step at a fraction of its base rate,
cell by cell, in milliseconds with a space between thousands."""

from __future__ import annotations

from bench.models.spread import Spread
from bench.modes.latency.record import LatencyResult
from bench.pages.facts import FactError, Facts
from bench.render import shared
from bench.results import store


def steps(found: Facts, fraction: float | None = None) -> list[LatencyResult]:
    """The set's steps in the order it measured them; only those at `fraction` of their base rate, where given."""
    records = store.load(found.out).records_of(LatencyResult)
    chosen = [r for r in records if fraction is None or r.fraction == fraction]
    if not chosen:
        raise FactError(f"no step at {fraction} of the base rate in {found.set_name}")
    return chosen


def step(found: Facts, target: str, fraction: float) -> LatencyResult:
    """One target's step at `fraction` of its base rate."""
    for record in steps(found, fraction):
        if record.target == target:
            return record
    raise FactError(f"no step of {target} at {fraction} in {found.set_name}")


def ms(value: float | None) -> str:
    """A latency in ms, "1 005"; "failed" where too few requests were answered to rank it."""
    return "failed" if value is None else f"{value:,.0f}".replace(",", " ")


def at_once(record: LatencyResult) -> str:
    """What the target holds at once, as its settings say."""
    return shared.at_once(record)


def achieved(record: LatencyResult) -> str:
    """The answers per second, in bold where the target did not keep up with the rate sent."""
    said = shared.rps(record.achieved_rps or 0.0)
    return said if record.keeps_up else f"**{said}**"


def offered(record: LatencyResult) -> str:
    """The rate offered with its share of the base rate: "209 (90%)"."""
    return f"{record.offered_rps:g} ({record.fraction:.0%})"


def failures(record: LatencyResult) -> str:
    """The requests not answered, by kind: "closed 1, connect 48"; "–" where none."""
    return ", ".join(f"{kind} {count}" for kind, count in (record.failure_kinds or {}).items()) or "–"


def p99_span(found: Facts, targets: list[str], fraction: float) -> Spread:
    """The targets' P99s at `fraction` of their base rates, in ms, as one spread."""
    return Spread.of([step(found, target, fraction).p99_ms or 0.0 for target in targets])


def offered_span(found: Facts, targets: list[str], fraction: float) -> Spread:
    """The rates offered to the targets at `fraction` of their bases, as one spread."""
    return Spread.of([float(step(found, target, fraction).offered_rps or 0) for target in targets])


def kept_up(found: Facts, fraction: float) -> tuple[int, int]:
    """How many targets kept up at `fraction` of their base rate (every request answered, as many as offered), of
    how many."""
    chosen = steps(found, fraction)
    return sum(bool(r.keeps_up) and r.success_ratio == 1.0 for r in chosen), len(chosen)


def lags(found: Facts) -> list[LatencyResult]:
    """The steps by how far vegeta fell behind its schedule, most first."""
    return sorted(steps(found), key=lambda r: -(r.send_lag_ms_max or 0.0))


def kept(found: Facts, target: str, fraction: float) -> str:
    """Whether the target kept up at `fraction` of its base rate, in words: "kept up" or "did not keep up"."""
    return "kept up" if step(found, target, fraction).keeps_up else "did not keep up"


def first_behind(found: Facts, target: str) -> float | None:
    """The lowest fraction of its base rate at which the target did not keep up; None where it kept up at every
    rate."""
    behind = [r.fraction for r in steps(found) if r.target == target and not r.keeps_up and r.fraction is not None]
    return min(behind, default=None)


def kept_up_at_every_rate(found: Facts, target: str) -> str:
    """Nothing, where the target kept up at every rate it was sent; otherwise a FactError."""
    behind = first_behind(found, target)
    if behind is not None:
        raise FactError(f"{target} did not keep up at {behind:.0%} of its base in {found.set_name}")
    return ""


def bent_first(found: Facts, first: str, second: str) -> str:
    """Nothing, where the first target fell behind at a lower fraction of its base than the second; otherwise a
    FactError."""
    ours, theirs = first_behind(found, first), first_behind(found, second)
    if ours is None or (theirs is not None and ours >= theirs):
        raise FactError(f"{first} did not fall behind before {second} in {found.set_name}")
    return ""


def with_failures(found: Facts, fraction: float) -> list[str]:
    """The targets that left requests unanswered (refused, closed, timed out) at `fraction` of their base."""
    return [r.target for r in steps(found, fraction) if r.failure_kinds]


def only_these_failed(found: Facts, fraction: float, said: list[str], aside: list[str]) -> str:
    """Nothing, where the targets a sentence names are exactly those with failures at `fraction`, leaving `aside`
    those the page names on their own; otherwise a FactError."""
    failed = set(with_failures(found, fraction)) - set(aside)
    if failed != set(said):
        raise FactError(f"at {fraction:.0%} of their base {sorted(failed)} failed requests, not {sorted(said)}")
    return ""


def lagged_most(found: Facts, target: str) -> str:
    """Nothing, where the step in which vegeta fell furthest behind its schedule is one of the target's; otherwise a
    FactError."""
    worst = lags(found)[0]
    if worst.target != target:
        raise FactError(f"vegeta fell furthest behind on {worst.target}, not {target}, in {found.set_name}")
    return ""
