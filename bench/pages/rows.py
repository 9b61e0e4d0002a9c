"""A set's rows as a page's tables and prose show them: each cell as the set's own results.md prints it, and the
facts about several rows at once (their spreads' extremes, how many pairs overlap, the CPU probe's loop), so that
docs/every-way.md states none of them by hand."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any

from bench.bench_run.render import throughput_cell
from bench.models.spread import Spread
from bench.modes.recommend.render import Way, cpu_ms_of
from bench.pages.facts import FactError, Facts, comparison, fixed
from bench.render import shared


def way_of(found: Facts, target: str, clients: int) -> Way:
    """The target's row at a load (every core, no CPU work); a page asks only for rows the set has."""
    way = found.row(target, clients)
    if way is None:
        raise FactError(f"no row of {target} at {clients} clients in {found.set_name}")
    return way


def throughput(way: Way) -> str:
    """Requests per second, the median (lowest–highest) of the repeats; FAILED and why where a run failed."""
    return throughput_cell(way.row)


def rps(way: Way) -> str:
    """The median requests per second of the repeats, as the set's page prints it."""
    if way.row.spread is None:
        raise FactError(f"{way.label} failed at {way.load[0]} clients")
    return shared.rps(way.row.spread.median)


def efficiency_percent(way: Way) -> str:
    """The median throughput's share of the load generator's ceiling, in % without the sign: "89"."""
    if way.row.efficiency is None:
        raise FactError(f"{way.label} failed at {way.load[0]} clients")
    return f"{100 * way.row.efficiency:.0f}"


def share_percent(way: Way) -> str:
    """The median throughput's share of slow_api alone, in % without the sign: "93"."""
    if way.row.vs_reference is None:
        raise FactError(f"{way.label} failed at {way.load[0]} clients")
    return f"{100 * way.row.vs_reference:.0f}"


def highest(found: Facts, targets: list[str], metric: str = "rps") -> str:
    """The target of the highest median among `targets`."""
    return max(targets, key=lambda target: found.median(target, metric))


def spread_percent(way: Way) -> float:
    """How far the repeats' throughputs lie apart, as a share of their median, in %."""
    if way.row.spread is None:
        raise FactError(f"{way.label} failed at {way.load[0]} clients: no spread")
    spread = way.row.spread
    return 100 * (spread.high - spread.low) / spread.median


def efficiency(way: Way) -> str:
    """The median throughput's share of the load generator's ceiling, in %."""
    return "–" if way.row.efficiency is None else f"{way.row.efficiency:.0%}"


def share_range(found: Facts, way: Way) -> str:
    """The share of slow_api alone: the median of the repeats (lowest–highest), "0.93 (0.93–0.95)"."""
    runs = found.where(f"c={way.load[0]}").spread(way.record.target)
    return f"{fixed(runs.median)} ({fixed(runs.low)}–{fixed(runs.high)})"


def with_share(way: Way) -> str:
    """Requests per second with the share of slow_api alone beside it, "164.5 (0.93)"; the reference's alone."""
    if way.row.vs_reference is None:
        raise FactError(f"{way.label} failed at {way.load[0]} clients")
    said = rps(way)
    return said if way.record.target == "slow_api-alone" else f"{said} ({fixed(way.row.vs_reference)})"


def threads(way: Way) -> str:
    """The OS threads of the median run, idle → peak."""
    return f"{way.record.threads_idle} → {way.record.threads_peak}"


def steady(way: Way) -> str:
    """In how many of the repeats the CPU kept its speed (shared.steady_cell)."""
    return shared.steady_cell(way.row.steadiness)


def cpu_ms(way: Way) -> float:
    """The app's CPU per request in the median run."""
    spent = cpu_ms_of(way.record)
    if spent is None:
        raise FactError(f"no CPU per request of {way.label}")
    return spent


def costs_more(found: Facts, first: str, second: str, clients: int) -> str:
    """Nothing, where the first target's median run took more threads, memory and CPU per request than the
    second's at `clients` (the sentence's "at more cost"); otherwise a FactError."""
    ours, theirs = way_of(found, first, clients), way_of(found, second, clients)
    costs = {
        "threads": (ours.record.threads_peak or 0, theirs.record.threads_peak or 0),
        "memory": (ours.record.rss_mb_peak or 0.0, theirs.record.rss_mb_peak or 0.0),
        "CPU per request": (cpu_ms(ours), cpu_ms(theirs)),
    }
    cheaper = [name for name, (mine, other) in costs.items() if mine <= other]
    if cheaper:
        raise FactError(f"{first} costs no more {' or '.join(cheaper)} than {second} at {clients} clients")
    return ""


def p99_ms(found: Facts, targets: list[str], clients: int) -> list[float]:
    """Each target's P99 at a load, in ms, of its median run."""
    return [float(way_of(found, target, clients).record.p99_ms or 0) for target in targets]


def thread_peaks(found: Facts, targets: list[str], clients: int) -> Spread:
    """The targets' OS threads at the peak, of their median runs, as one spread."""
    return Spread.of([float(way_of(found, target, clients).record.threads_peak or 0) for target in targets])


def counted_runs(found: Facts, target: str) -> list[dict[str, Any]]:
    """The target's runs that count (facts.counted), in the order the set measured them: to state each run."""
    runs = [r for r in found.records if r.get("target") == target]
    if not runs:
        raise FactError(f"no counted run of {target} in {found.set_name}")
    return runs


def of_failed_runs(found: Facts, target: str, metric: str) -> list[int]:
    """A field of each of the target's failed runs (its failures, its answers not 2xx), smallest first."""
    return sorted(int(r.get(metric) or 0) for r in found.every_record if r.get("target") == target and not r.get("ok"))


def fewest_delaying(found: Facts, target: str, kind: str) -> int:
    """Of a `make slowclients` set, the fewest slow connections of a kind (idle, head, body) that delayed the
    target's answer to a normal request."""
    delaying = [
        int(r["connections"]) for r in found.every_record if r.get("target") == target and r.get("kind") == kind
        if r.get("delayed")
    ]  # fmt: skip
    if not delaying:
        raise FactError(f"no {kind} connections delayed {target} in {found.set_name}")
    return min(delaying)


def slow_levels(found: Facts, target: str, kind: str) -> list[dict[str, Any]]:
    """Of a `make slowclients` set, a target's records of one kind of slow connection, fewest connections first."""
    levels = [r for r in found.every_record if r.get("target") == target and r.get("kind") == kind]
    if not levels:
        raise FactError(f"no {kind} connections to {target} in {found.set_name}")
    return sorted(levels, key=lambda r: int(r["connections"]))


def slow_cell(found: Facts, targets: list[str], kind: str) -> str:
    """A `make slowclients` table's cell, as its results.md says it: the fewest connections that delayed a normal
    request, bold (with the longest wait, where every probe got its answer); else "none up to" the most tried. Where
    a row names several targets, each must have the same cell."""
    cells = set()
    for target in targets:
        levels = slow_levels(found, target, kind)
        delayed = next((r for r in levels if r.get("delayed")), None)
        if delayed is None:
            cells.add(f"none up to {levels[-1]['connections']}")
        elif any(probe.get("problem") for probe in delayed.get("probes") or []):
            cells.add(f"**{delayed['connections']}**")
        else:
            cells.add(f"**{delayed['connections']}** ({float(delayed['worst_seconds']):.1f} s)")
    if len(cells) != 1:
        raise FactError(f"{kind}: {', '.join(targets)} differ: {sorted(cells)}")
    return cells.pop()


def slow_every_kind(found: Facts, target: str) -> str:
    """The target's cell (slow_cell) where it is the same for every kind of slow connection."""
    cells = {slow_cell(found, [target], kind) for kind in ("head", "body", "idle")}
    if len(cells) != 1:
        raise FactError(f"{target}'s kinds of slow connection differ: {sorted(cells)}")
    return cells.pop()


def most_undelaying(found: Facts, target: str, kind: str) -> int:
    """The most slow connections of a kind tried that did not delay the target's normal request."""
    fine = [int(r["connections"]) for r in slow_levels(found, target, kind) if not r.get("delayed")]
    if not fine:
        raise FactError(f"every level of {kind} connections delayed {target}")
    return max(fine)


def slow_worst(found: Facts, targets: list[str], connections: int) -> Spread:
    """The longest wait of a normal request beside `connections` slow ones, over every kind and target named."""
    return Spread.of(
        [
            float(r["worst_seconds"])
            for target in targets
            for kind in ("head", "body", "idle")
            for r in slow_levels(found, target, kind)
            if r["connections"] == connections
        ]
    )


def slowest(found: Facts, targets: list[str], connections: int) -> str:
    """The target of the longest wait beside `connections` slow ones."""
    return max(targets, key=lambda target: slow_worst(found, [target], connections).high)


def field(found: Facts, target: str, name: str) -> Any:
    """A field of the set's one record of `target` (a lab's target, say)."""
    records = [r for r in found.every_record if r.get("target") == target]
    if len(records) != 1 or records[0].get(name) is None:
        raise FactError(f"{found.set_name}: {len(records)} records of {target}, {name} {'missing' if records else ''}")
    return records[0][name]


def writes(found: Facts, field: str) -> int:
    """Of a `make yourapp` set, a field of its writes summed over every load and request type: "acknowledged",
    "found", "lost"."""
    return sum(int(kind[field]) for r in found.every_record for kind in (r.get("writes") or {}).values())


def verified_ways(found: Facts) -> tuple[int, int]:
    """How many of the set's ways were verified in every one of their records, of how many ways."""
    ways: dict[str, bool] = {}
    for r in found.every_record:
        ways[r["target"]] = ways.get(r["target"], True) and bool(r.get("verified"))
    return sum(ways.values()), len(ways)


def blocked_by_way(found: Facts) -> dict[str, int]:
    """Of a `make yourapp` set, each gevent way's reports of gevent's monitor (a loop held past its threshold),
    summed over its loads, most first."""
    counts: dict[str, int] = {}
    for r in found.every_record:
        if r.get("blocked_reports") is not None:
            counts[r["target"]] = counts.get(r["target"], 0) + int(r["blocked_reports"])
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def failed_requests(found: Facts, target: str, clients: int, repeat: int) -> int:
    """Of a `make yourapp` set, the requests of one load that did not get their expected status."""
    for r in found.every_record:
        if r.get("target") == target and r.get("clients") == clients and r.get("repeat") == repeat:
            return int(r.get("errors") or 0)
    raise FactError(f"no load of {target} at {clients} clients, repeat {repeat}, in {found.set_name}")


@dataclass(frozen=True)
class Named:
    """A value and the target it belongs to: one end of a range said with its target."""

    target: str
    value: float


def spreads(found: Facts, targets: list[str], clients: int) -> list[Named]:
    """The targets' spreads at a load (spread_percent), smallest first."""
    return sorted((Named(t, spread_percent(way_of(found, t, clients))) for t in targets), key=lambda n: n.value)


def overlapping_pairs(found: Facts, targets: list[str], metric: str = "rps") -> tuple[int, int]:
    """Of every pair of the targets, how many this run does not tell apart (their ranges overlap), and how many
    pairs there are."""
    pairs = list(combinations(targets, 2))
    apart = sum(
        comparison(found.spread(a, metric), found.spread(b, metric)) == "within the spread of" for a, b in pairs
    )
    return apart, len(pairs)


def pairs_behind(found: Facts, firsts: list[str], seconds: list[str], metric: str = "rps") -> tuple[int, int]:
    """Of each of `firsts` against each of `seconds`, how many are behind (every run below every run of the
    other), and how many such pairs there are."""
    words = [comparison(found.spread(a, metric), found.spread(b, metric)) for a in firsts for b in seconds]
    return words.count("behind"), len(words)


def standing_against(found: Facts, first: str, others: list[tuple[str, str]], metric: str = "rps") -> str:
    """How `first` stands against each of `others` (each a target and what the prose calls it), the others of one
    comparison word together: "ahead of gunicorn's threads and mod_wsgi, and within the spread of granian"."""
    by_word: dict[str, list[str]] = {}
    for target, said in others:
        by_word.setdefault(found.compare(first, target, metric), []).append(said)
    parts = [
        f"{word} {', '.join(names[:-1])}{' and ' if len(names) > 1 else ''}{names[-1]}"
        for word, names in by_word.items()
    ]
    return ", and ".join(parts)


def probe_seconds(found: Facts) -> Spread:
    """The CPU probe's loop over every measurement of the set, before and after each, on every role: its seconds, one
    machine's speed moving as the run goes on."""
    times = [
        seconds
        for record in found.every_record
        for moments in (record.get("cpu_probe") or {}).get("seconds", {}).values()
        for seconds in moments.values()
        if seconds
    ]
    if not times:
        raise FactError(f"{found.set_name} has no CPU probe")
    return Spread.of(times)


def unsteady(found: Facts) -> tuple[int, int]:
    """How many of the set's measurements ran while the CPU changed speed (the probe judged them unsteady), of those
    the probe judged, failed runs included (bench.render.bench.verdict_line counts them alike)."""
    measured = [r for r in found.every_record if not r.get("superseded") and not r.get("rerun_reference")]
    judged = [
        probe["steady"] for probe in (r.get("cpu_probe") or {} for r in measured) if probe.get("steady") is not None
    ]
    return judged.count(False), len(judged)


@dataclass(frozen=True)
class Unsteady:
    """One measurement the CPU probe judged unsteady, beside the same target's steady repeats in its run."""

    set_name: str
    target: str
    role: str  # the role whose loop moved the most
    before: float  # its loop's seconds before the measurement
    after: float  # and after
    share: float  # of slow_api alone
    steady: Spread | None  # the steady repeats' shares; None where the run has none

    @property
    def standing(self) -> str:
        """Where its share stands against the steady repeats': "within the spread of", "ahead of", "behind"."""
        if self.steady is None:
            return "without steady repeats"
        return comparison(Spread(self.share, self.share, self.share), self.steady)

    @property
    def off_by(self) -> float:
        """How far its share lies outside the steady repeats' range, as a share of the nearer end (0 within it)."""
        if self.steady is None:
            raise FactError(f"{self.target} in {self.set_name} has no steady repeat")
        nearer = min(max(self.share, self.steady.low), self.steady.high)
        return abs(self.share - nearer) / nearer


def unsteady_beside_steady(found: Facts) -> list[Unsteady]:
    """Each measurement the probe judged unsteady, in the order measured, with its steady repeats."""
    measured = [r for r in found.every_record if r.get("cpu_probe") and r.get("vs_reference") is not None]
    said = []
    for record in measured:
        probe = record["cpu_probe"]
        if probe.get("steady") is not False:
            continue
        role = max(probe["moved"], key=lambda place: probe["moved"][place])
        steady = [
            float(other["vs_reference"])
            for other in measured
            if other["target"] == record["target"]
            and other.get("concurrency") == record.get("concurrency")
            and other["cpu_probe"].get("steady")
        ]
        moments = probe["seconds"][role]
        said.append(
            Unsteady(
                found.set_name,
                str(record["target"]),
                role,
                float(moments["before"]),
                float(moments["after"]),
                float(record["vs_reference"]),
                Spread.of(steady) if steady else None,
            )
        )
    return said
