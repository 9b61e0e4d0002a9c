"""The decision at the top of a make yourapp page, computed from its records: which way to run for this app (at the
most clients the reader asked for, and where the other client counts differ), the request type that costs the mix
the most CPU and what it does to each way, and how much of each request's CPU py-spy saw.

The rule, said on the page too: a way is a candidate at a client count only where every repeat answered every
request with its expected status, lost no write and kept its container up; among the candidates, those within
AS_FAST of the most requests per second are as fast, and of those the lowest P99 is the answer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.models.spread import median_of
from bench.modes.yourapp.record import YourAppResult
from bench.results.records import Metadata

AS_FAST = 0.10  # within a tenth of the most requests per second: as fast, and the tail decides
DOMINATES = 2.0  # a request type dominates where its share of the CPU is at least twice its share of the requests
GEVENT_FIX = (
    "The fix: run that call in gevent's thread pool (`gevent.get_hub().threadpool.apply(function, arguments)`), where "
    "it no longer holds the loop (and C code that lets go of the GIL runs on another core), or make it cheaper; or "
    "serve the app with threads."
)
SEEN_LITTLE = 0.5  # a profile that saw less than half a request's CPU says so beside that request
SETS_SAMPLE_RATE = 200  # py-spy's samples a second where a set does not say (before 2026-11-28: bench/measure/profile)


@dataclass(frozen=True)
class WayAt:
    """One way at one client count, its repeats together."""

    name: str
    clients: int
    rps: float  # the median of its repeats
    p99_ms: float | None
    errors: int
    lost_writes: int
    down: bool  # its container restarted or was not healthy after a load
    rss_mb: float | None
    records: tuple[YourAppResult, ...]

    @property
    def clean(self) -> bool:
        return not self.errors and not self.lost_writes and not self.down

    @property
    def shape(self) -> str:
        """Its processes and threads (or greenlets), in words."""
        first = self.records[0]
        processes = f"{first.workers} process" + ("es" if first.workers != 1 else "")
        if first.mode == "gevent":
            inside = f"up to {first.gevent_cores} greenlets each"
        elif first.threads_per_worker:
            inside = f"{first.threads_per_worker} threads each"
        else:
            inside = "one request at a time each"
        nginx = " behind Nginx" if self.name.startswith("nginx-") else ""
        return f"{processes}, {inside}{nginx}"


def by_way(records: list[YourAppResult], clients: int) -> dict[str, list[YourAppResult]]:
    """The records measured at a client count, each way's repeats together."""
    found: dict[str, list[YourAppResult]] = {}
    for record in records:
        if record.clients == clients and record.measured:
            found.setdefault(record.target, []).append(record)
    return found


def ways_at(records: list[YourAppResult], clients: int) -> list[WayAt]:
    ways = []
    for name, repeats in by_way(records, clients).items():
        p99s = [r.p99_ms for r in repeats if r.p99_ms is not None]
        rss = [r.rss_mb_peak for r in repeats if r.rss_mb_peak]
        lost = sum(entry.get("lost", 0) for r in repeats for entry in (r.writes or {}).values())
        ways.append(
            WayAt(
                name=name,
                clients=clients,
                rps=median_of(r.rps or 0.0 for r in repeats),
                p99_ms=median_of(p99s) if len(p99s) == len(repeats) else None,  # a rank that fell on a failure: none
                errors=sum(r.errors or 0 for r in repeats),
                lost_writes=lost,
                down=any((r.problem or "").startswith("the app's container") for r in repeats),
                rss_mb=max(rss) if rss else None,
                records=tuple(repeats),
            )
        )
    return sorted(ways, key=lambda way: -way.rps)


def chosen(ways: list[WayAt]) -> tuple[WayAt | None, list[WayAt]]:
    """The answer among one client count's ways, and the clean ways that were as fast as the fastest clean one."""
    clean = [way for way in ways if way.clean]
    if not clean:
        return None, []
    fastest = max(way.rps for way in clean)
    as_fast = [way for way in clean if way.rps >= (1 - AS_FAST) * fastest]
    best = min(as_fast, key=lambda way: (way.p99_ms is None, way.p99_ms or 0.0, -way.rps))
    return best, [way for way in as_fast if way is not best]


def why_not(way: WayAt) -> str:
    said = []
    if way.errors:
        total = sum(r.requests or 0 for r in way.records)
        said.append(f"{way.errors} of its {total} requests did not get their expected status")
    if way.lost_writes:
        said.append(f"{way.lost_writes} acknowledged writes were not found")
    if way.down:
        said.append("its container did not stay up")
    return ", ".join(said)


def p99(value: float | None) -> str:
    return "no P99 (a failure fell on its rank)" if value is None else f"P99 {value:g} ms"


def decision(records: list[YourAppResult]) -> list[str]:
    """What to run: the answer at the most clients, where the other counts differ, and the faster ways that are not
    the answer because of their errors."""
    counts = sorted({record.clients for record in records if record.measured})
    if not counts:
        return ["No way was measured: see below why."]
    top = counts[-1]
    best, as_fast = chosen(ways_at(records, top))
    lines = []
    if best is None:
        least = min(ways_at(records, top), key=lambda way: (way.errors, -way.rps))
        lines.append(
            f"No way served every request of the mix at {top} clients with its expected status: none is the answer "
            f"there. The fewest failures: {least.name}, {why_not(least)}."
        )
    else:
        first = best.records[0]
        memory = f", at most {best.rss_mb:g} MB" if best.rss_mb else ""
        lines += [
            f"**Run {best.name}** ({best.shape}):",
            "",
            f"    {first.server_command}",
            "",
            f"At {top} clients it answered {best.rps:g} requests/s, {p99(best.p99_ms)}{memory}, every request with "
            "its expected status"
            + (
                f"; as fast (within {AS_FAST:.0%}) but with a longer tail: "
                + ", ".join(f"{way.name} ({way.rps:g}/s, {p99(way.p99_ms)})" for way in as_fast)
                if as_fast
                else ""
            )
            + ".",
        ]
    for clients in counts:
        at = ways_at(records, clients)
        answer, _ = chosen(at)
        if clients != top and answer is not None and (best is None or answer.name != best.name):
            lines.append(f"- At {clients} clients the answer is {answer.name}: {answer.rps:g} requests/s, "
                         f"{p99(answer.p99_ms)}.")  # fmt: skip
        faster = [way for way in at if not way.clean and (answer is None or way.rps > answer.rps)]
        lines += [
            f"- {way.name} answered more at {clients} clients ({way.rps:g}/s) but is not the answer there: "
            f"{why_not(way)}."
            for way in faster
        ]
    lines += [
        "",
        f"The rule: only a way whose every repeat served every request with its expected status, lost no write and "
        f"stayed up; of those within {AS_FAST:.0%} of the most requests per second, the lowest P99.",
    ]
    return lines


@dataclass(frozen=True)
class RequestShare:
    label: str
    weight: int
    cpu_ms: float
    cpu_share: float  # of the mix's CPU, the requests alone weighted as the file weighs them
    request_share: float  # of the mix's requests
    seen: float | None  # the share of its CPU py-spy saw held by Python


def seen_share(cost: dict[str, Any]) -> float | None:
    """How much of a request's CPU py-spy saw: its samples (only a thread that holds the GIL is sampled, RATE a
    second per process) over the CPU the app's processes spent on the requests it was sent alone."""
    if not cost.get("cpu_ms") or not cost.get("requests"):
        return None
    seen_seconds = cost.get("samples", 0) / cost.get("sample_rate", SETS_SAMPLE_RATE)
    return seen_seconds / (cost["cpu_ms"] * cost["requests"] / 1000)


def request_shares(metadata: Metadata) -> list[RequestShare]:
    costs: dict[str, dict[str, Any]] = metadata.extra.get("request_costs") or {}
    measured = {label: cost for label, cost in costs.items() if cost.get("cpu_ms") is not None}
    cpu = sum(cost["weight"] * cost["cpu_ms"] for cost in measured.values())
    weights = sum(cost["weight"] for cost in measured.values())
    if not cpu:
        return []
    shares = [
        RequestShare(
            label,
            cost["weight"],
            cost["cpu_ms"],
            cost["weight"] * cost["cpu_ms"] / cpu,
            cost["weight"] / weights,
            seen_share(cost),
        )  # fmt: skip
        for label, cost in measured.items()
    ]
    return sorted(shares, key=lambda share: -share.cpu_share)


def dominant(records: list[YourAppResult], metadata: Metadata) -> list[str]:
    """The request type with the most of the mix's CPU, where it dominates: what it does to each way at the most
    clients (its P99 against the mix's, each way's memory at its peak), and the fix where the playground knows one."""
    shares = request_shares(metadata)
    if not shares or shares[0].cpu_share < DOMINATES * shares[0].request_share:
        return []
    top = shares[0]
    lines = [
        "",
        f"## The request that costs the most: `{top.label}`",
        "",
        f"It is {top.request_share:.0%} of the mix's requests and {top.cpu_share:.0%} of its CPU: {top.cpu_ms:g} ms "
        f"each, alone, where the mix's average is {sum(s.cpu_ms * s.request_share for s in shares):.2g} ms.",
    ]
    if top.seen is not None and top.seen < SEEN_LITTLE:
        lines.append(
            f"py-spy saw Python hold the GIL for {top.seen:.0%} of it: the rest is C code that lets go of the GIL "
            "(hashlib's scrypt and PBKDF2, zlib, image codecs) or the kernel's work, which a Python profile cannot "
            "share out."
        )
    counts = sorted({record.clients for record in records if record.measured})
    if not counts:
        return lines
    rows = []
    for way in ways_at(records, counts[-1]):
        theirs = [r.per_type.get(top.label, {}).get("p99_ms") for r in way.records]
        known = [value for value in theirs if value is not None]
        rows.append((way, median_of(known) if len(known) == len(theirs) else None))
    lines += ["", f"At {counts[-1]} clients, each way:", ""]
    lines += [
        f"- {way.name} ({'gevent' if way.records[0].mode == 'gevent' else 'threads'}): this request's P99 "
        f"{'?' if its is None else f'{its:g} ms'}, the mix's {way.p99_ms if way.p99_ms is not None else '?'} ms; "
        f"memory at its peak {way.rss_mb if way.rss_mb else '?'} MB"
        for way, its in rows
    ]
    gevent = [its for way, its in rows if way.records[0].mode == "gevent" and its is not None]
    threads = [its for way, its in rows if way.records[0].mode != "gevent" and its is not None]
    if gevent and threads and median_of(gevent) > median_of(threads):
        lines += [
            "",
            f"Under gevent its P99 is {median_of(gevent):g} ms (the median of the gevent ways) against "
            f"{median_of(threads):g} ms in a thread pool: a greenlet that computes holds its process's one loop, and "
            f"every other request of that process waits meanwhile. {GEVENT_FIX}",
        ]
    return lines


def seen_column(cost: dict[str, Any]) -> str:
    seen = seen_share(cost)
    return "?" if seen is None else f"{min(seen, 1.0):.0%}"


def bound_by(records: list[YourAppResult]) -> list[str]:
    """Whether Python or the database binds the app, where its Postgres was measured: per request under load, at the
    most clients, the app's processes' CPU beside Postgres's, each way's median over its repeats."""
    counts = sorted({record.clients for record in records if record.measured})
    if not counts:
        return []
    rows = []
    for way in ways_at(records, counts[-1]):
        app = [r.cpu_ms_per_request for r in way.records if r.cpu_ms_per_request is not None]
        db = [r.db_cpu_ms_per_request for r in way.records if r.db_cpu_ms_per_request is not None]
        statements = [r.db_statements_per_request for r in way.records if r.db_statements_per_request is not None]
        if app and db:
            rows.append((way.name, median_of(app), median_of(db), median_of(statements) if statements else None))
    if not rows:
        return []
    python = [name for name, app, db, _ in rows if app > db]
    lines = ["", f"## Python or the database, at {counts[-1]} clients", ""]
    lines += [
        f"- {name}: the app's processes {app:g} ms of CPU a request, Postgres {db:g} ms"
        + ("" if statements is None else f" for {statements:g} statements")
        for name, app, db, statements in rows
    ]
    if len(python) == len(rows):
        said = "Python binds it on every way: its CPU per request is above the database's"
    elif not python:
        said = "the database binds it on every way: Postgres's CPU per request is above the app's"
    else:
        said = f"Python binds it on {len(python)} of {len(rows)} ways ({', '.join(python)}), the database on the others"
    return [*lines, "", said[0].upper() + said[1:] + " (both on this machine's cores)."]
