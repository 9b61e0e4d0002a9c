"""`make bookstore` sets as docs/bookstore.md shows them: each target's row at a load and number of clients as the
set's results.md summarises it (bench/modes/bookstore/rows.py: with repeats the median run, its figures the medians
of all runs), cell by cell; the ladder's rungs and what each bought over the one above; the profiles' milliseconds;
and the checks that a sentence's words hold over the set (bench/pages/words.py says the words)."""

from __future__ import annotations

import itertools
from functools import cache
from pathlib import Path

from bench.models.spread import Spread
from bench.modes.bookstore import charts as bookstore_charts
from bench.modes.bookstore.record import BookstoreResult
from bench.modes.bookstore.rows import Row, number, ordered, summarise
from bench.pages.facts import FactError, Facts, comparison
from bench.pages.rows import probe_seconds
from bench.pages.words import ordinal
from bench.render.shared import Steadiness
from bench.results import store

_NO_PROBE = Steadiness(0, 0, None)  # a row whose runs had no CPU probe


@cache
def records(out: Path) -> tuple[BookstoreResult, ...]:
    return tuple(ordered(store.load(out).records_of(BookstoreResult)))


@cache
def summarised(out: Path) -> tuple[Row, ...]:
    """The set's rows, as its results.md prints them."""
    return tuple(summarise(list(records(out))))


def targets(found: Facts) -> list[str]:
    """The set's targets, in the order it measured them."""
    return list(dict.fromkeys(r.target for r in records(found.out)))


def clients_of(found: Facts, load: str) -> list[int]:
    """The numbers of clients the set measured a load at, fewest first."""
    return sorted({r.clients for r in records(found.out) if r.load == load})


def row(found: Facts, target: str, load: str, clients: int | None = None) -> Row:
    """A target's row at a load (at `clients`, where the set swept the load over several numbers of them)."""
    for candidate in summarised(found.out):
        record = candidate.record
        if record.target == target and record.load == load and clients in (None, record.clients):
            return candidate
    raise FactError(f"no row of {target} under {load} at {clients} clients in {found.set_name}")


def value(found: Facts, target: str, load: str, field: str, clients: int | None = None) -> float:
    """One figure of a target's row (a median over the repeats where the set has them)."""
    figure = getattr(row(found, target, load, clients).record, field)
    if not isinstance(figure, int | float):
        raise FactError(f"{target} has no {field} under {load} in {found.set_name}")
    return float(figure)


def cell(found: Facts, target: str, load: str, clients: int | None = None) -> str:
    """A table's cell: requests per second, (share of Postgres alone), P99: "324 (0.19), 263 ms"."""
    record = row(found, target, load, clients).record
    return f"{number(record.rps, '{:.0f}')} ({number(record.vs_database)}), {number(record.p99_ms, '{:.0f}')} ms"


def cpu_cell(found: Facts, target: str, load: str, clients: int | None = None) -> str:
    """A table's cell of CPU per request: the app's + Postgres's, in ms: "3.49 + 1.10"."""
    record = row(found, target, load, clients).record
    return f"{number(record.app_cpu_ms_per_request)} + {number(record.pg_cpu_ms_per_request)}"


def spread(found: Facts, field: str, load: str, chosen: list[str], clients: int | None = None) -> Spread:
    """A figure of several targets' rows at one load, as one spread: their median, lowest, highest."""
    return Spread.of([value(found, target, load, field, clients) for target in chosen])


def over_clients(found: Facts, target: str, load: str, field: str = "rps") -> Spread:
    """A figure of one target's rows at every number of clients the set swept the load over."""
    return Spread.of([value(found, target, load, field, clients) for clients in clients_of(found, load)])


def runs(found: Facts, target: str, load: str, field: str = "rps", clients: int | None = None) -> Spread:
    """A figure of each repeat of a target's row (not their median): its range over the repeats."""
    chosen = [
        getattr(r, field)
        for r in records(found.out)
        if r.target == target and r.load == load and clients in (None, r.clients)
    ]
    return Spread.of([float(v) for v in chosen if isinstance(v, int | float)])


def refused(found: Facts, chosen: list[str], load: str, clients: int) -> Spread:
    """The 503s (the pool had no connection in time) each target's repeats answered at a load: lowest to highest."""
    return Spread.of(
        [
            float(r.status_503 or 0)
            for r in records(found.out)
            if r.target in chosen and r.load == load and r.clients == clients and r.measured
        ]
    )


def steady(found: Facts) -> tuple[int, int]:
    """How many measurements kept the CPU probe within its bound, of how many probed."""
    probed = [r.cpu_probe for r in records(found.out) if r.cpu_probe is not None]
    return sum(1 for probe in probed if probe.steady), len(probed)


def ladder(found: Facts) -> list[Row]:
    """The ladder's rungs in order, as the set's ladder table prints them."""
    rungs = [candidate for candidate in summarised(found.out) if candidate.record.rung is not None]
    return sorted(rungs, key=lambda candidate: candidate.record.rung or 0)


def rung(found: Facts, step: int) -> Row:
    for candidate in ladder(found):
        if candidate.record.rung == step:
            return candidate
    raise FactError(f"no rung {step} in {found.set_name}")


def gain(found: Facts, step: int) -> float:
    """A rung's median requests per second over the rung above's (the ladder table's "× the rung above")."""
    return (rung(found, step).record.rps or 0.0) / (rung(found, step - 1).record.rps or 1.0)


def largest_gain(found: Facts) -> int:
    """The rung that gained the most over the rung above it."""
    steps = [candidate.record.rung for candidate in ladder(found) if candidate.record.rung]
    return max(steps, key=lambda step: gain(found, step))


def ladder_cells(candidate: Row) -> list[str]:
    """A rung's figures as the page's ladder table prints them, after its number and target."""
    record = candidate.record
    return [
        number(record.rps, "{:.0f}"), number(record.vs_database, "{:.3f}"), number(record.p99_ms, "{:.0f}"),
        number(record.app_cpu_ms_per_request), number(record.db_via_cpu_ms_per_request),
        number(record.pg_cpu_ms_per_request), number(record.pgbench_pg_cpu_ms_per_transaction),
        number(record.pgbench_at_app_rate_pg_cpu_ms_per_transaction),
    ]  # fmt: skip


def profile_ms(found: Facts, target: str, part: str, load: str = "author") -> float:
    """The app's CPU per request py-spy found in one part (SQLAlchemy, the server, ...), in ms: the share of the
    samples times the app's CPU per request of the profiled run, as the set's profile table prints it."""
    for record in bookstore_charts.profiled(list(records(found.out))):
        if record.target == target and record.load == load:
            return (record.app_cpu_ms_per_request or 0.0) * (record.profile or {}).get(part, 0.0)
    raise FactError(f"no profile of {target} under {load} in {found.set_name}")


def profile_total(found: Facts, target: str, load: str = "author") -> float:
    """The app's CPU per request of the profiled run, in ms (the profile table's own column)."""
    for record in bookstore_charts.profiled(list(records(found.out))):
        if record.target == target and record.load == load:
            return record.app_cpu_ms_per_request or 0.0
    raise FactError(f"no profile of {target} under {load} in {found.set_name}")


def profile_shares(found: Facts, part: str, chosen: list[str], load: str = "author") -> Spread:
    """The share of the samples py-spy found in one part, over several targets' profiles, as one spread."""
    return Spread.of([profile_ms(found, target, part, load) / profile_total(found, target, load) for target in chosen])


def rank(found: Facts, target: str, load: str, field: str, chosen: list[str], clients: int | None = None) -> int:
    """Where a target's median stands among the chosen targets', highest first: 1 for the highest."""
    mine = value(found, target, load, field, clients)
    return 1 + sum(value(found, other, load, field, clients) > mine for other in chosen if other != target)


def lowest_at(found: Facts, target: str, load: str, chosen: list[str]) -> tuple[int, int]:
    """At how many of the numbers of clients the set swept a load over the target's median throughput was the
    lowest of the chosen targets', of how many."""
    swept = clients_of(found, load)
    lowest = sum(rank(found, target, load, "rps", chosen, clients) == len(chosen) for clients in swept)
    return lowest, len(swept)


def slowest_on(found: Facts, target: str, loads: list[tuple[str, int]]) -> tuple[int, int]:
    """On how many of the loads (each at its number of clients) the target's median throughput was the lowest of
    the set's targets, of how many."""
    every = targets(found)
    slowest = sum(rank(found, target, load, "rps", every, clients) == len(every) for load, clients in loads)
    return slowest, len(loads)


def most_steady(found: Facts, chosen: list[str], load: str, clients: int | None = None) -> int:
    """The most runs of any chosen target's row in which the CPU probe kept steady."""
    return max((row(found, t, load, clients).steadiness or _NO_PROBE).steady_runs for t in chosen)


def at_least(
    found: Facts, chosen: list[str], load: str, field: str, least: float, clients: int | None = None
) -> list[str]:
    """The chosen targets whose median `field` is at least `least`, in the order given."""
    return [target for target in chosen if value(found, target, load, field, clients) >= least]


def pg_over_alone(found: Facts, target: str, load: str, clients: int | None = None, alone: str = "") -> float:
    """Postgres's CPU per request under the target over its CPU per transaction under pgbench: at full speed
    (`alone` empty) or paced to the app's rate (`alone` "at_app_rate")."""
    field = f"pgbench_{alone}_pg_cpu_ms_per_transaction" if alone else "pgbench_pg_cpu_ms_per_transaction"
    return value(found, target, load, "pg_cpu_ms_per_request", clients) / value(found, target, load, field, clients)


def moved(found: Facts, first: str, second: str, load: str, clients: int | None = None) -> str:
    """Whether the second target's requests per second differ from the first's, from their runs' ranges: "did not
    change" where they overlap, else "raised" or "lowered"."""
    before, after = runs(found, first, load, "rps", clients), runs(found, second, load, "rps", clients)
    if after.low > before.high:
        return "raised"
    if after.high < before.low:
        return "lowered"
    return "did not change"


def minutes(found: Facts) -> float:
    """How long the set took, in minutes (its metadata)."""
    return float(found.metadata["minutes"])


def paced(found: Facts, load: str = "author") -> list[float]:
    """Per rung of the ladder, Postgres's CPU per request under it over pgbench's per transaction paced to the
    rung's own rate (the ladder table's last column): how far the app's Postgres work is from the paced yardstick."""
    return [pg_over_alone(found, step.record.target, load, alone="at_app_rate") for step in ladder(found)]


def warm_up(found: Facts, target: str) -> BookstoreResult:
    """The target's record that holds its first warm-up: how long it took and its CPU per request at each step."""
    for record in records(found.out):
        if record.target == target and record.warm_up_s is not None:
            return record
    raise FactError(f"no warm-up of {target} in {found.set_name}")


def ranks_said(found: Facts, chosen: list[str], load: str, field: str, among: list[str]) -> str:
    """Where the chosen targets' medians stand among several targets', highest first: "first and 4th of 6"."""
    places = sorted(rank(found, target, load, field, among) for target in chosen)
    return " and ".join("first" if place == 1 else ordinal(place) for place in places) + f" of {len(among)}"


def within(found: Facts, chosen: list[str], load: str, most: float, clients: int | None = None) -> list[str]:
    """The chosen targets under which Postgres spent at most `most` times its CPU per transaction under pgbench
    (full speed) per request."""
    return [target for target in chosen if pg_over_alone(found, target, load, clients) <= most]


def by_pg_over_alone(found: Facts, chosen: list[str], load: str, clients: int | None = None) -> list[str]:
    """The chosen targets by how much more Postgres spent per request under them than per transaction alone, least
    first."""
    return sorted(chosen, key=lambda target: pg_over_alone(found, target, load, clients))


def by_value(found: Facts, chosen: list[str], load: str, field: str, clients: int | None = None) -> list[str]:
    """The chosen targets by their median `field`, highest first."""
    return sorted(chosen, key=lambda target: -value(found, target, load, field, clients))


def in_order(found: Facts, groups: list[list[str]], load: str, field: str, clients: int | None = None) -> str:
    """Nothing, where each group's targets all have a higher median `field` than every target of the groups after it,
    the order a sentence names them in; otherwise a FactError that gives the set's order."""
    for higher, lower in itertools.pairwise(groups):
        if min(value(found, t, load, field, clients) for t in higher) <= max(
            value(found, t, load, field, clients) for t in lower
        ):
            order = by_value(found, [t for group in groups for t in group], load, field, clients)
            raise FactError(f"{found.set_name}, {load}: not in the order said, the set has {order}")
    return ""


def app_share_high(found: Facts, chosen: list[str], load: str, clients: int | None = None) -> float:
    """The most any chosen target's app took of the CPU per request, app and Postgres together."""
    return max(
        value(found, t, load, "app_cpu_ms_per_request", clients)
        / (
            value(found, t, load, "app_cpu_ms_per_request", clients)
            + value(found, t, load, "pg_cpu_ms_per_request", clients)
        )
        for t in chosen
    )


def spread_over(found: Facts, fields: list[str], load: str, chosen: list[str], clients: int | None = None) -> Spread:
    """Several figures of several targets' rows at one load, as one spread."""
    return Spread.of([value(found, t, load, field, clients) for t in chosen for field in fields])


def listed(found: Facts, chosen: list[str], load: str, field: str, clients: int | None = None) -> str:
    """The chosen targets with their median `field`, highest first, in prose: "bookstore-granian 0.97 and
    bookstore-gunicorn-sync 0.96"."""
    said = [
        f"{target} {value(found, target, load, field, clients):.2f}"
        for target in by_value(found, chosen, load, field, clients)
    ]
    return ", ".join(said[:-1]) + " and " + said[-1] if len(said) > 1 else "".join(said)


def machine(found: Facts) -> str:
    """The machine the set ran on as its metadata says it: "2-core AMD EPYC machine (Debian 12, Linux 6.18, Docker
    20.10, Compose v2 2.26.1)". The CPU's make and the distribution are not in the metadata: the page names them."""
    metadata = found.metadata
    kernel = ".".join(str(metadata["kernel"]).split(".")[:2])
    docker = ".".join(str(metadata["docker_version"]).split(".")[:2])
    compose = str(metadata["compose_version"]).split("-")[0]
    return f"{found.cores}-core AMD EPYC machine (Debian 12, Linux {kernel}, Docker {docker}, Compose v2 {compose})"


def data(found: Facts) -> str:
    """The data the set was measured on, from its metadata: "1,000,000 authors and 9,999,991 books"."""
    database = found.metadata["database"]
    return f"{int(database['authors']):,} authors and {int(database['books']):,} books"


def over_every(found: Facts, field: str, load: str, chosen: list[str]) -> Spread:
    """A figure of several targets' rows at every number of clients the set swept the load over, as one spread."""
    return Spread.of([value(found, t, load, field, clients) for t in chosen for clients in clients_of(found, load)])


def interleaved(found: Facts, first: list[str], second: list[str], load: str, field: str, clients: int) -> bool:
    """Whether neither group's medians all stand above the other's: some target of each is beaten by one of the
    other (the article's "close": the order does not follow the groups)."""
    firsts = [value(found, t, load, field, clients) for t in first]
    seconds = [value(found, t, load, field, clients) for t in second]
    return not (min(firsts) > max(seconds) or min(seconds) > max(firsts))


def over(found: Facts, first: str, second: str, load: str, field: str = "rps") -> float:
    """The second target's median `field` over the first's: 1.11 for 11 % more."""
    return value(found, second, load, field) / value(found, first, load, field)


def within_probe(found: Facts, pairs: list[tuple[str, str]], load: str, field: str = "rps") -> str:
    """Nothing, where each pair's ratio (either way up) is smaller than the CPU probe's move over the run (its slowest
    reading over its fastest), so that the sentence may call it within the machine's drift; otherwise a FactError."""
    probe = probe_seconds(found)
    moved = probe.high / probe.low
    for first, second in pairs:
        ratio = over(found, first, second, load, field)
        if max(ratio, 1 / ratio) >= moved:
            raise FactError(
                f"{found.set_name}, {load}: {second}'s {field} x{ratio:.2f} {first}'s, "
                f"beyond the CPU probe's x{moved:.2f}"
            )
    return ""


def groups_compared(found: Facts, first: list[str], second: list[str], load: str, field: str, clients: int) -> str:
    """How each first target's runs stand against each second target's (facts.comparison of their ranges), as one
    word where all pairs agree: "within the spread of", "ahead of", "behind"; else "partly apart from"."""
    words = {
        comparison(runs(found, one, load, field, clients), runs(found, other, load, field, clients))
        for one in first
        for other in second
    }
    return words.pop() if len(words) == 1 else "partly apart from"


def as_much(found: Facts, first: list[str], second: list[str], load: str, field: str, clients: int) -> str:
    """groups_compared's word where the first targets got at least as much as the second ("within the spread of",
    "ahead of"), the claim "as much as the rest"; otherwise a FactError."""
    word = groups_compared(found, first, second, load, field, clients)
    if word not in ("within the spread of", "ahead of"):
        raise FactError(f"{found.set_name}, {load}: {first}'s runs are {word} {second}'s, not as much")
    return word


def refusing_repeats(found: Facts, target: str, load: str, clients: list[int]) -> tuple[int, int]:
    """In how many of the target's repeats at those numbers of clients the app answered a 503, of how many."""
    chosen = [
        r for r in records(found.out) if r.target == target and r.load == load and r.clients in clients and r.measured
    ]
    return sum(1 for r in chosen if r.status_503), len(chosen)


def reaching(found: Facts, chosen: list[str], load: str, field: str, clients: int, level: float) -> str:
    """Nothing, where each chosen target's runs reach `level` at best (its range spans the gap to it); otherwise a
    FactError."""
    short = [t for t in chosen if runs(found, t, load, field, clients).high < level]
    if short:
        raise FactError(f"{found.set_name}, {load}: no run of {short} reaches {level}")
    return ""


def under(found: Facts, chosen: list[str], load: str, field: str, clients: int, most: float) -> str:
    """Nothing, where each chosen target's median `field` is under `most`; otherwise a FactError."""
    over = [t for t in chosen if value(found, t, load, field, clients) >= most]
    if over:
        raise FactError(f"{found.set_name}, {load}: {over}'s {field} is not under {most}")
    return ""


def only_rung_beyond(found: Facts, rung: int, bound: float) -> str:
    """Nothing, where of the ladder's paced ratios (paced) the rung's alone is beyond `bound`; otherwise a
    FactError."""
    ratios = paced(found)
    beyond = [step for step, ratio in enumerate(ratios) if ratio > bound]
    if beyond != [rung]:
        raise FactError(f"{found.set_name}: beyond x{bound:g} are rungs {beyond}, not only rung {rung}")
    return ""
