"""docs/load-generators.md's facts: the same targets under ab (a repeated set), hey and wrk (one run each), cell by
cell, what changed from ab to hey against each tool's own reference, which targets made hey reconnect, and why a
run under wrk failed, from its record; and each tool's ceiling at the tutorial's load, from its model in
bench/loadgen/."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime

from bench.bench_run.render import per_request_ms
from bench.loadgen import wrk
from bench.loadgen.closed_loop import LOADGENS
from bench.models.spread import Spread
from bench.modes.recommend.render import EVERY_CORE, Way
from bench.pages.facts import FactError, Facts, Record, comparison, fixed
from bench.pages.rows import spread_percent, throughput, way_of
from bench.render import shared

# A connection closed after every answer makes docker-proxy accept a new one per request: its CPU per request
# then comes to several times slow_api alone's (whose client, hey, keeps its connections). Twice is the line
# between the two kinds: the reused connections cost at most 1.8 times the reference here, the reconnects 3.8.
RECONNECTING_FACTOR = 2.0
# A change of a share of slow_api alone smaller than this is "level": a hundredth is a point of the reference, below
# what one run of hey can tell (ab's own runs spread by more).
LEVEL = 0.01
# wrk's report: the socket errors it counted by kind, as bench/loadgen/wrk.py writes them into a record's problem.
ERROR_KINDS = re.compile(r"connect (\d+), read (\d+), write (\d+), timeout (\d+)")


# Each tool's ceiling, from its model


def ceiling(tool: str, requests: int, clients: int, delay: float) -> float:
    """The best a perfect server holding every client could score under the tool at this load (its model in
    bench/loadgen/)."""
    return LOADGENS[tool].ceiling_rps(requests, clients, delay, None)


def rate(value: float) -> str:
    """Requests per second as the page's first table writes a ceiling: "181.8", "200"."""
    return f"{value:.1f}".removesuffix(".0")


def wrk_seconds(requests: int, clients: int, delay: float) -> int:
    """The whole seconds wrk runs for a load of `requests` from `clients` (bench/loadgen/wrk.py)."""
    return wrk.duration_seconds(requests, clients, delay)


def wrk_last_round(requests: int, clients: int, delay: float) -> str:
    """How far above its ceiling a server may score under wrk when its last round gets in before wrk stops: the
    rounds in its duration over the rounds the ceiling counts, "10 / 9"."""
    rounds = math.ceil(wrk_seconds(requests, clients, delay) / delay)
    return f"{rounds} / {rounds - 1}"


# The sets' metadata


def same(sets: list[Facts], key: str) -> str:
    """A field of the sets' metadata that is the same in each (the machine they ran on), else an error."""
    values = {str(found.metadata.get(key)) for found in sets}
    if len(values) != 1:
        raise FactError(f"the sets differ in {key}: {sorted(values)}")
    return values.pop()


def version(value: str) -> str:
    """A version as a package names it, without Debian's suffix: "20.10.24+dfsg1" -> "20.10.24"."""
    found = re.match(r"\d+(?:\.\d+)*", value)
    if not found:
        raise FactError(f"no version in {value!r}")
    return found.group()


def day(sets: list[Facts]) -> str:
    """The day the sets started on, where they share it."""
    days = {str(found.metadata["date"])[:10] for found in sets}
    if len(days) != 1:
        raise FactError(f"the sets started on {sorted(days)}")
    return days.pop()


def started_within_minutes(sets: list[Facts]) -> int:
    """The minutes between the first set's start and the last one's, rounded up: a set records when it started, not
    when it ended."""
    starts = [datetime.fromisoformat(str(found.metadata["date"])) for found in sets]
    return math.ceil((max(starts) - min(starts)).total_seconds() / 60)


def times_said(count: int) -> str:
    """How many times a set ran each target: "once", "twice", "3 times"."""
    return {1: "once", 2: "twice"}.get(count, f"{count} times")


# The cross-tool table


def ways(found: Facts) -> list[Way]:
    """The set's rows on every core, in the order it measured them: a target at a load."""
    return [way for way in found.rows if way.placement == EVERY_CORE]


def load(way: Way) -> str:
    """The load the row ran, requests / clients: "2000 / 200"."""
    return f"{way.record.n} / {way.record.c}"


def error_kinds(problem: str | None) -> dict[str, int]:
    """The socket errors the load generator counted, by kind, from a record's problem (wrk's report)."""
    counts = ERROR_KINDS.search(problem or "")
    if counts is None:
        return {}
    return dict(zip(("connect", "read", "write", "timeout"), map(int, counts.groups()), strict=True))


def failure(way: Way) -> str:
    """Why a failed row failed, from its record: what it answered and the errors counted ("178.6 answered per s,
    1800 read errors"), or that no answer came in the tool's run."""
    record = way.record
    if record.rps is None or not record.complete:
        within = f" in its {wrk_seconds(record.n, record.c, record.delay)} s" if record.loadgen == "wrk" else ""
        return f"no answer{within}"
    said = [f"{shared.rps(record.rps)} answered per s"]
    said += [f"{count} {kind} errors" for kind, count in error_kinds(record.problem).items() if count]
    said += [f"{record.non2xx} non-2xx"] if record.non2xx else []
    return ", ".join(said)


def cell(found: Facts, target: str, clients: int) -> str:
    """A tool's cell of the table: requests per second (the median, lowest–highest, of a repeated set), its share of
    the tool's ceiling, in bold its share of slow_api alone in the same run; FAILED and why where a run failed."""
    way = way_of(found, target, clients)
    if not way.row.ok or way.row.efficiency is None or way.row.vs_reference is None:
        return f"**FAILED**: {failure(way)}"
    return f"{throughput(way)}: {way.row.efficiency:.0%}, **{fixed(way.row.vs_reference)}**"


def cpu_ms(found: Facts, target: str, process: str, clients: int) -> str:
    """The CPU one process on the request's path (docker-proxy, the load generator) spent per request answered, in
    ms; "–" at a load too small to tell (bench/bench_run/render.py)."""
    way = way_of(found, target, clients)
    return per_request_ms((way.record.cpu_seconds_others or {}).get(process), way.record)


# What changed from ab to hey


@dataclass(frozen=True)
class Change:
    """A target's share of slow_api alone under ab (its repeats) and under hey (one run)."""

    target: str
    ab: Spread
    hey: float

    @property
    def drop(self) -> float:
        """How far the share fell from ab's median to hey's, in shares of the reference (to the stored precision)."""
        return round(self.ab.median - self.hey, 3)

    @property
    def word(self) -> str:
        """hey's run against ab's: "behind" every ab run, "ahead of" every one, else "within the spread of"."""
        return comparison(Spread.of([self.hey]), self.ab)


def changes(ab: Facts, hey: Facts, clients: int) -> list[Change]:
    """Each target but the reference at a load, in the order of ab's set."""
    at_ab, at_hey = ab.where(f"c={clients}"), hey.where(f"c={clients}")
    return [
        Change(target, at_ab.spread(target), at_hey.median(target))
        for target in at_ab.names()
        if target != "slow_api-alone"
    ]


def ahead(found: list[Change]) -> list[Change]:
    """The targets that did better under hey than every ab run of theirs."""
    return [change for change in found if change.word == "ahead of"]


def level(found: list[Change]) -> list[str]:
    """The targets whose share moved by less than a point (LEVEL) from ab's median to hey."""
    return [change.target for change in found if abs(change.drop) < LEVEL]


def fell(found: list[Change]) -> list[Change]:
    """The others, which fell, most first."""
    return sorted((change for change in found if change.drop >= LEVEL), key=lambda change: -change.drop)


def points(changed: list[Change]) -> Spread:
    """How far they fell, in points of the reference (hundredths), as one spread."""
    return Spread.of([100 * change.drop for change in changed])


def below_every_run(changed: list[Change]) -> str:
    """Whether hey's run fell below the lowest ab run of each: "each", else "N of them", "none of them"."""
    behind = sum(change.word == "behind" for change in changed)
    if behind == len(changed):
        return "each"
    return "none of them" if behind == 0 else f"{behind} of them"


def widest_spread(found: Facts, clients: int) -> float:
    """How far apart the repeats of the set's widest row at a load lie, as a share of its median, in %."""
    return max(spread_percent(way) for way in ways(found) if way.load == (clients, 0) and way.row.spread)


def named(targets: list[str], groups: list[tuple[list[str], str]]) -> str:
    """The targets as the prose names them: each group of `groups` (targets and their name) wholly among `targets`,
    joined "A, B and C"; an error where a target is in no group, or a group only partly among them."""
    chosen = set(targets)
    said = []
    for members, name in groups:
        inside = chosen & set(members)
        if inside and inside != set(members):
            raise FactError(f"{name}: only {sorted(inside)} of {members}")
        if inside:
            said.append(name)
            chosen -= inside
    if chosen:
        raise FactError(f"no name for {sorted(chosen)}")
    return ", ".join(said[:-1]) + (" and " if len(said) > 1 else "") + said[-1]


# Who made hey reconnect


def proxy_ms(found: Facts, clients: int) -> dict[str, float]:
    """docker-proxy's CPU per request answered, in ms, of each target at a load, the reference first."""
    return {
        way.label: 1000 * (way.record.cpu_seconds_others or {})["docker-proxy"] / way.record.requests_completed
        for way in ways(found)
        if way.load == (clients, 0)
    }


def reconnecting(found: Facts, clients: int) -> list[str]:
    """The targets for which docker-proxy spent more than twice (RECONNECTING_FACTOR) its CPU per request for slow_api
    alone: each request a new connection."""
    spent = proxy_ms(found, clients)
    line = RECONNECTING_FACTOR * spent["slow_api-alone"]
    return [target for target, ms in spent.items() if ms > line]


def reusing(found: Facts, clients: int) -> list[str]:
    """The other servers: those that kept hey's connections."""
    again = reconnecting(found, clients)
    return [target for target in proxy_ms(found, clients) if target not in again and target != "slow_api-alone"]


def proxy_span(found: Facts, clients: int, targets: list[str]) -> Spread:
    """docker-proxy's CPU per request for the targets, in ms, as one spread."""
    spent = proxy_ms(found, clients)
    return Spread.of([spent[target] for target in targets])


def most(part: int, whole: int) -> str:
    """How many of `whole` `part` is, in a word: "most" past half, else "N of M"."""
    return "most" if 2 * part > whole else f"{part} of {whole}"


def exactly(targets: list[str], named_ones: list[str]) -> str:
    """Nothing, where the targets are the ones the prose names (a list it explains item by item); else an error,
    so that the explanations cannot outlive the data."""
    if sorted(targets) != sorted(named_ones):
        raise FactError(f"the set has {sorted(targets)}, the page explains {sorted(named_ones)}")
    return ""


# What went wrong under wrk


def failed(found: Facts) -> list[str]:
    """The targets with a failed run, in the order the set measured them."""
    return list(dict.fromkeys(str(r["target"]) for r in found.every_record if not r.get("ok")))


def record_of(found: Facts, target: str) -> Record:
    """The set's one run of the target (a set of one run per target: hey's, wrk's)."""
    runs = [r for r in found.every_record if r.get("target") == target]
    if len(runs) != 1:
        raise FactError(f"{len(runs)} runs of {target} in {found.set_name}")
    return runs[0]


def rates(found: Facts, targets: list[str]) -> str:
    """Each target's answers per second, failed runs too: "178.6 and 179.6"."""
    said = [shared.rps(float(record_of(found, target)["rps"])) for target in targets]
    return ", ".join(said[:-1]) + (" and " if len(said) > 1 else "") + said[-1]


def field_span(found: Facts, targets: list[str], name: str) -> Spread:
    """A field of each target's run (failed runs too) as one spread: answers, errors."""
    return Spread.of([float(record_of(found, target).get(name) or 0) for target in targets])


def read_errors(found: Facts, targets: list[str]) -> Spread:
    """The read errors wrk counted in each target's run, as one spread."""
    return Spread.of([float(error_kinds(record_of(found, target).get("problem")).get("read", 0)) for target in targets])


def per_answer(found: Facts, targets: list[str], what: str = "") -> str:
    """How the read errors stand to the answers in each run: "one per answer" ("one read error per answer", with
    `what`) where they are as many."""
    pairs = [
        (error_kinds(record_of(found, t).get("problem")).get("read", 0), record_of(found, t).get("complete") or 0)
        for t in targets
    ]
    if all(errors == answers for errors, answers in pairs):
        return f"one {what} per answer".replace("  ", " ")
    return "fewer than its answers" if all(e < a for e, a in pairs) else "not one per answer"


def answered(found: Facts, targets: list[str]) -> str:
    """Whether each run answered every request the tool's rounds could count (its ceiling times its run time): "all
    their requests", else how many of those."""
    pairs = []
    for target in targets:
        record = record_of(found, target)
        rounds = round(float(record["ceiling_rps"]) * wrk_seconds(record["n"], record["c"], record["delay"]))
        pairs.append((int(record.get("complete") or 0), rounds))
    if all(done >= rounds for done, rounds in pairs):
        return "all their requests"
    return ", ".join(f"{done} of {rounds} requests" for done, rounds in pairs)


def errors_said(found: Facts, target: str) -> str:
    """The failures the tool counted in the target's run: "no error", "5 errors"."""
    count = int(record_of(found, target).get("failed") or 0)
    return "no error" if count == 0 else f"{count} errors"


def counted_none(found: Facts, targets: list[str]) -> str:
    """The failures the tool counted over the targets' runs: "none", else how many."""
    count = sum(int(record_of(found, target).get("failed") or 0) for target in targets)
    return "none" if count == 0 else str(count)


def no_answer(found: Facts, targets: list[str]) -> str:
    """Whether the targets' runs got no answer at all: "no answer at all", else how many answers each got."""
    answers = [int(record_of(found, target).get("complete") or 0) for target in targets]
    return "no answer at all" if not any(answers) else " and ".join(f"{count} answers" for count in answers)


def points_apart(first: Facts, second: Facts, target: str, clients: int) -> float:
    """How far the target's median share of slow_api alone in the first set lies above the second's, in points
    (hundredths of the reference); below it, negative."""
    return 100 * (first.where(f"c={clients}").median(target) - second.where(f"c={clients}").median(target))
