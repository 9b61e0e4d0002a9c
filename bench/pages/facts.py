"""What the pages say about a result set, computed from its records: the templates of pages/ state a figure, a range,
a ratio, a count or a comparison word only as the value of one of these functions, so that the words follow the
data and an edit of a rendered page shows (tests/test_pages.py).

Records are selected as tests/claims.py selects them for the claims: `field=value`, `field!=value` and
`field~=part`, a space in a value written `_`; a target is named by its record's `label`, else its `target`; a
target's value is the median over its repeats, its range their lowest and highest; only the records whose `ok` is
true and that no re-run superseded count."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from bench.bench_run.record import BenchResult
from bench.models.scaling import Bound, Demand, bound
from bench.models.spread import Spread
from bench.modes.recommend.render import EVERY_CORE, Way, cpu_ms_of, demand_of, machine_bound, served, ways
from bench.render import shared
from bench.results import store

Record = dict[str, Any]


class FactError(ValueError):
    """A fact asked of a set that does not hold what it names: a target, a field, a load."""


@dataclass(frozen=True)
class ModelCheck:
    """One way of Facts.from_one_core: its row on a core of its own, the model's bound on the machine's cores from
    that row alone, its row on every core, and the two rows' median throughputs."""

    one: Way
    bound: Bound
    every: Way
    one_rps: float
    every_rps: float


def counted(records: list[Record]) -> list[Record]:
    """The runs a claim counts: those that served every request (`ok`) and that no re-run superseded."""
    return [r for r in records if r.get("ok") and not r.get("superseded") and not r.get("rerun_reference")]


def select(records: list[Record], selection: str) -> list[Record]:
    """The records matching every condition of `selection` ("c=200 cpu_units=3 placement=every_core")."""
    chosen = records
    for condition in selection.split():
        match = re.fullmatch(r"(\w+)([!~]?=)(.+)", condition)
        if not match:
            raise FactError(f"a selection is field=value, field!=value or field~=part: {condition!r}")
        field, sign, written = match.groups()
        if sign == "~=":
            chosen = [r for r in chosen if written in str(r.get(field))]
            continue
        spellings = (written, written.replace("_", " "))
        chosen = [r for r in chosen if (str(r.get(field)) in spellings) == (sign == "=")]
    if not chosen:
        raise FactError(f"no record matches {selection!r}")
    return chosen


def name_of(record: Record) -> str:
    return str(record.get("label") or record["target"])


def runs_of(records: list[Record], metric: str, target: str) -> list[float]:
    """The target's value of `metric` in each of its runs."""
    values = [r.get(metric) for r in records if name_of(r) == target]
    if not values:
        raise FactError(f"no target {target!r} among {sorted({name_of(r) for r in records})}")
    numbers = [float(v) for v in values if isinstance(v, int | float)]
    if len(numbers) != len(values):
        raise FactError(f"{target} has no {metric} in some run")
    return numbers


def ratio(first: Spread, second: Spread) -> float:
    """The first's median over the second's."""
    return first.median / second.median


def comparison(first: Spread, second: Spread) -> str:
    """How the first stands against the second, from their ranges: "ahead of" (its lowest run above the other's
    highest), "behind" (its highest below the other's lowest), else "within the spread of" (the ranges overlap, and
    this run does not tell them apart)."""
    if first.low > second.high:
        return "ahead of"
    if first.high < second.low:
        return "behind"
    return "within the spread of"


def require(holds: bool, what: str) -> str:
    """Nothing, where a sentence's premise computed in its template holds; otherwise a FactError that says `what` does
    not: for a word no named function computes ("no", "does not hold")."""
    if not holds:
        raise FactError(f"not so: {what}")
    return ""


def quantifier(meeting: int, total: int) -> str:
    """How many of `total` things: "every", "none", else "N of M"."""
    if meeting == total:
        return "every"
    if meeting == 0:
        return "none"
    return f"{meeting} of {total}"


def quantified(meeting: int, total: int, noun: str) -> str:
    """A quantifier with its noun: "every run", "no run", "2 of 3 runs"."""
    word = quantifier(meeting, total)
    return {"every": f"every {noun}", "none": f"no {noun}"}.get(word, f"{word} {noun}s")


def fixed(value: float, decimals: int = 2) -> str:
    """A figure printed with its decimals: 0.883 -> "0.88"."""
    return f"{value:.{decimals}f}"


def times(value: float, decimals: int = 2) -> str:
    """A ratio as a multiplier: 1.695 -> "x1.70"."""
    return f"x{value:.{decimals}f}"


def span(low: float, high: float, decimals: int = 2) -> str:
    """A range, "0.92 to 0.98"; one figure where both ends print the same."""
    ends = fixed(low, decimals), fixed(high, decimals)
    return ends[0] if ends[0] == ends[1] else f"{ends[0]} to {ends[1]}"


def at_most(value: float, unit: str = "") -> str:
    """A bound worded as one: what a way can reach, not what it will."""
    return f"at most {value:.0f}" + (f" {unit}" if unit else "")


@dataclass(frozen=True)
class Facts:
    """A result set's records, narrowed by a selection, and the facts the templates ask of them."""

    set_name: str
    out: Path
    every_record: tuple[Record, ...]  # the runs that failed too
    selection: str = ""

    @classmethod
    def of(cls, out: Path) -> Facts:
        _, records = store.read_json(out)
        return cls(out.name, out, tuple(records))

    def where(self, selection: str) -> Facts:
        """These facts narrowed to the records that also match `selection`."""
        narrowed = select(list(self.every_record), selection)
        return Facts(self.set_name, self.out, tuple(narrowed), f"{self.selection} {selection}".strip())

    @property
    def records(self) -> list[Record]:
        """The runs that count (counted)."""
        return counted(list(self.every_record))

    def names(self) -> list[str]:
        """The targets selected, in the order the set measured them."""
        return list(dict.fromkeys(name_of(r) for r in self.records))

    def spread(self, target: str, metric: str = "vs_reference") -> Spread:
        return Spread.of(runs_of(self.records, metric, target))

    def median(self, target: str, metric: str = "vs_reference") -> float:
        return self.spread(target, metric).median

    def ratio(self, first: str, second: str, metric: str = "rps") -> float:
        """The first target's median over the second's."""
        return ratio(self.spread(first, metric), self.spread(second, metric))

    def compare(self, first: str, second: str, metric: str = "rps") -> str:
        """The comparison word for the first target against the second (comparison)."""
        return comparison(self.spread(first, metric), self.spread(second, metric))

    def medians(self, metric: str = "vs_reference", targets: list[str] | None = None) -> Spread:
        """The targets' medians (every target selected by default) as one spread: their median, lowest, highest."""
        return Spread.of([self.median(target, metric) for target in targets or self.names()])

    def ratios(self, pairs: list[tuple[str, str]], metric: str = "rps") -> Spread:
        """The ratios of medians of several pairs as one spread."""
        return Spread.of([self.ratio(first, second, metric) for first, second in pairs])

    def alone(self, metric: str = "rps") -> list[str]:
        """The targets whose range overlaps no other target's: those this run tells apart from all the rest."""
        found = {name: self.spread(name, metric) for name in self.names()}
        return [
            name
            for name, mine in found.items()
            if all(
                comparison(mine, theirs) != "within the spread of" for other, theirs in found.items() if other != name
            )
        ]

    def count(self, metric: str, least: float, targets: list[str] | None = None) -> str:
        """The quantifier of the targets whose median is at least `least`: "every", "N of M", "none"."""
        chosen = targets or self.names()
        return quantifier(sum(self.median(t, metric) >= least for t in chosen), len(chosen))

    def against_rest(self, target: str, metric: str = "rps") -> str:
        """Where a target stands against the rest, by the comparison word most of the others get: "behind every other
        way", "ahead of 12 of 13 other ways"."""
        others = [name for name in self.names() if name != target]
        words = [self.compare(target, other, metric) for other in others]
        word = max(("behind", "ahead of", "within the spread of"), key=words.count)
        return f"{word} {quantified(words.count(word), len(others), 'other way')}"

    def ratios_over(self, loads: list[Facts], first: str, second: str, metric: str = "rps") -> Spread:
        """The ratio of the first target's median over the second's at each of several selections, as one spread."""
        return Spread.of([found.ratio(first, second, metric) for found in loads])

    def failed_runs(self, target: str) -> str:
        """The target's runs that failed (not `ok`), as a quantified phrase: "every run", "1 of 3 runs"."""
        runs = [r for r in self.every_record if name_of(r) == target]
        if not runs:
            raise FactError(f"no target {target!r} in {self.selection!r}")
        return quantified(sum(not r.get("ok") for r in runs), len(runs), "run")

    def failed_field(self, target: str, metric: str) -> float:
        """A field of the target's failed runs, summed: the answers not 2xx, the failures."""
        return float(sum(r.get(metric) or 0 for r in self.every_record if name_of(r) == target and not r.get("ok")))

    def ratio_list(self, pairs: list[tuple[str, str]], metric: str = "rps") -> list[float]:
        """The ratio of medians of each pair, to gather over several selections (Spread.of)."""
        return [self.ratio(first, second, metric) for first, second in pairs]

    def field(self, metric: str, target: str | None = None) -> Spread:
        """A field over every run selected (of one target, if named), failed runs included: machine_busy,
        ceiling_rps, the set-wide fields."""
        runs = [r for r in self.every_record if target is None or name_of(r) == target]
        values = [float(r[metric]) for r in runs if isinstance(r.get(metric), int | float)]
        if not values:
            raise FactError(f"no {metric} in {self.selection!r}")
        return Spread.of(values)

    def loadgen_ceiling(self) -> float:
        """The load generator's own ceiling at the load selected: the highest `ceiling_rps` its records carry, that
        of a server holding every client (bench/models/ceiling.py); no server under it can answer more."""
        return self.field("ceiling_rps").high

    @cached_property
    def metadata(self) -> dict[str, Any]:
        metadata, _ = store.read_json(self.out)
        return metadata

    @cached_property
    def rows(self) -> list[Way]:
        """The set's rows as its page renders them (bench/modes/recommend/render.py): a configuration, placement and
        load with its repeats summarised, the median run its record."""
        return ways(store.load(self.out).records_of(BenchResult))

    def row(self, target: str, clients: int, cpu_units: int = 0, placement: str = EVERY_CORE) -> Way | None:
        """The row of a target at a load, as its page renders it; None where the run did not measure it there."""
        return next(
            (
                way
                for way in self.rows
                if way.label == target and way.placement == placement and way.load == (clients, cpu_units)
            ),
            None,
        )

    def bound(self, target: str, clients: int, cores: int, cpu_units: int = 0) -> Bound:
        """The model's bound on `cores` cores (bench/models/scaling.py) from what the target needed here."""
        return bound(self.demand(target, clients, cpu_units)[1], cores)

    def demand(self, target: str, clients: int, cpu_units: int = 0) -> tuple[Way, Demand]:
        """A target's row at a load on every core, and what the model reads from it (recommend.demand_of)."""
        found = self.row(target, clients, cpu_units)
        demand = demand_of(found) if found else None
        if found is None or demand is None:
            raise FactError(f"no measurement of {target} at {clients} clients to bound")
        return found, demand

    def clients_alone(self, target: str, clients: int, cpu_units: int = 0) -> float:
        """What the clients would allow without their load generator's rounds (Demand.clients_alone_rps)."""
        return self.demand(target, clients, cpu_units)[1].clients_alone_rps

    def from_one_core(self, clients: int) -> list[ModelCheck]:
        """The model checked on this machine: per way also run on a core of its own at `clients`, that row, the
        bound on this machine's cores computed from it alone, and the way's row on every core at the same load."""
        checked = []
        for way in self.rows:
            if way.placement == EVERY_CORE or way.load != (clients, 0) or not served(way):
                continue
            demand, every_core = demand_of(way), self.row(way.label, clients)
            if demand is not None and every_core is not None and every_core.row.spread is not None:
                found = bound(demand, self.cores)
                checked.append(ModelCheck(way, found, every_core, demand.measured_rps, every_core.row.spread.median))
        return checked

    def share_of_bound(self, target: str, clients: int, cpu_units: int = 0) -> float:
        """The median throughput as a share of the model's bound on the machine the set ran on (its page's last
        column)."""
        _, demand = self.demand(target, clients, cpu_units)
        return demand.measured_rps / bound(demand, self.cores).rps

    def share_of_machine_bound(self, target: str, clients: int, cpu_units: int = 0) -> float:
        """The same, with the CPU of everything else on a request's path counted (recommend.machine_bound)."""
        found, demand = self.demand(target, clients, cpu_units)
        return demand.measured_rps / machine_bound(found, demand, self.cores)

    def median_run(self, target: str, clients: int, cpu_units: int = 0, placement: str = EVERY_CORE) -> BenchResult:
        """The run a row shows: the median throughput's (a failed row's, its failed run)."""
        found = self.row(target, clients, cpu_units, placement)
        if found is None:
            raise FactError(f"no row of {target} at {clients} clients, cpu {cpu_units}, {placement}")
        return found.record

    def cpu_ms(self, target: str, clients: int, cpu_units: int = 0, placement: str = EVERY_CORE) -> float:
        """The app's CPU per request in the median run (bench/modes/recommend/render.py's cpu_ms)."""
        spent = cpu_ms_of(self.median_run(target, clients, cpu_units, placement))
        if spent is None:
            raise FactError(f"no CPU per request of {target} at {clients} clients")
        return spent

    def cpu_ms_span(self, clients: int, cpu_units: int = 0, placement: str = EVERY_CORE) -> Spread:
        """The app's CPU per request over every way served at a load (slow_api alone left out)."""
        spent = [
            cpu_ms_of(way.record)
            for way in self.rows
            if way.load == (clients, cpu_units) and way.placement == placement and served(way) and way.row.ok
        ]
        return Spread.of([ms for ms in spent if ms is not None])

    def share_of_cpu_bound(self, target: str, clients: int, cpu_units: int = 0, placement: str = EVERY_CORE) -> float:
        """The median throughput as a share of what its CPU per request allows one process: 1000 / CPU ms."""
        return (
            self.where(f"c={clients} cpu_units={cpu_units} placement={placement.replace(' ', '_')}").median(
                target, "rps"
            )
            * self.cpu_ms(target, clients, cpu_units, placement)
            / 1000
        )

    @property
    def cores(self) -> int:
        return int(self.metadata.get("cpu_count") or 1)


def within_bounds(checked: list[ModelCheck]) -> int:
    """How many of Facts.from_one_core's ways did at most their bound on every core."""
    return sum(1 for check in checked if check.every_rps <= check.bound.rps)


def bound_verdict(checked: list[ModelCheck]) -> str:
    """Whether Facts.from_one_core's ways stayed within their bounds: "every way did at most its bound", or how many
    did more."""
    over = len(checked) - within_bounds(checked)
    if not over:
        return f"{quantified(len(checked), len(checked), 'way')} did at most its bound"
    return f"{quantified(over, len(checked), 'way')} did more than its bound"


def one_to_every(checked: list[ModelCheck]) -> list[float]:
    """Per way of Facts.from_one_core, what it did on every core over what it did on one (medians)."""
    return [check.every_rps / check.one_rps for check in checked]


def share_cell(way: Way | None) -> str:
    """A table's cell of a way at a load: its median share of slow_api alone, "failed" where a run failed, "–"
    where the run did not measure it."""
    if way is None:
        return "–"
    if not way.row.ok or way.row.vs_reference is None:
        return "failed"
    return fixed(way.row.vs_reference)


def at_once(way: Way | None) -> str:
    """What a way holds at once, as its settings say: "4 x 50 threads"."""
    return "–" if way is None else shared.at_once(way.record)


def spread_span(spread: Spread, decimals: int = 2) -> str:
    """A spread's range, lowest to highest (span)."""
    return span(spread.low, spread.high, decimals)


def times_span(spread: Spread, decimals: int = 2) -> str:
    """A spread of ratios as multipliers: "x1.13 to x1.70"."""
    ends = times(spread.low, decimals), times(spread.high, decimals)
    return ends[0] if ends[0] == ends[1] else f"{ends[0]} to {ends[1]}"


def seconds(milliseconds: float | None, decimals: int = 1) -> str:
    """A time in ms printed in seconds: 1834 -> "1.8 s"; "–" where none was measured."""
    return "–" if milliseconds is None else f"{milliseconds / 1000:.{decimals}f} s"


def number_word(count: int) -> str:
    """A small count as a word, as prose writes it: 3 -> "three"."""
    words = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
    return words[count] if 0 <= count < len(words) else str(count)


def standing(loads: list[tuple[str, Facts]], first: str, second: str, name: str, metric: str = "rps") -> str:
    """How `first` stands against `second` (called `name` in the prose) at each load, the loads of one comparison
    word together: "ahead of one process's at 200 and 5000 clients; within the spread of it at 1000 clients", or
    "within the spread of the processes' at both loads"."""
    by_word: dict[str, list[str]] = {}
    for load, found in loads:
        by_word.setdefault(found.compare(first, second, metric), []).append(load)
    if len(by_word) == 1:
        word = next(iter(by_word))
        return f"{word} {name} at " + ("both loads" if len(loads) == 2 else f"all {len(loads)} loads")
    parts: list[str] = []
    for word, at in by_word.items():
        said = ", ".join(at[:-1]) + (" and " if len(at) > 1 else "") + at[-1]
        parts.append(f"{word} {name if not parts else 'it'} at {said}")
    return "; ".join(parts)
