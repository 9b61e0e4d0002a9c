"""The page of a make yourapp set, results.md (and index.html, which shows it): the answer for the reader's app,
computed from its figures, then the table per client count, the requests that got anything but their expected
status, the writes looked up after each load, what each request type costs alone, what gevent's monitor caught, and
the ways left out. A set from before 2026-11-28 kept neither statuses per request nor writes: its page is as it was."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from bench.models.spread import Spread, median_of
from bench.modes.yourapp.answer import GEVENT_FIX, bound_by, by_way, decision, dominant, seen_column
from bench.modes.yourapp.record import SAID_ERRORS, YourAppResult, outcome
from bench.render import html_page
from bench.render.shared import head, markdown_table, took
from bench.results.records import Metadata
from bench.results.store import LoadedSet

WAITING = 0.5  # a mix whose requests spend at least this share of their time waiting is "mostly waiting"


def spread(records: list[YourAppResult]) -> Spread:
    """The requests per second of a way's repeats."""
    return Spread.of(record.rps or 0.0 for record in records)


def mix_cost(metadata: Metadata) -> tuple[float, float, float] | None:
    """The mix's CPU and wall milliseconds per request, weighted as the file weighs its requests, and the share of
    the wall time spent waiting; None where the costs were not measured."""
    costs: dict[str, dict[str, Any]] = metadata.extra.get("request_costs") or {}
    weighed = [
        (cost["weight"], cost["cpu_ms"], cost["wall_ms"]) for cost in costs.values() if cost["cpu_ms"] is not None
    ]
    total = sum(weight for weight, _, _ in weighed)
    if not total:
        return None
    cpu = sum(weight * value for weight, value, _ in weighed) / total
    wall = sum(weight * value for weight, _, value in weighed) / total
    return cpu, wall, max(0.0, wall - cpu) / wall if wall else 0.0


def answer(records: list[YourAppResult], metadata: Metadata) -> list[str]:
    """A few sentences, each computed from the set's figures."""
    lines = []
    cost = mix_cost(metadata)
    if cost:
        cpu, wall, waiting = cost
        kind = "mostly waiting" if waiting >= WAITING else "mostly computing"
        lines.append(
            f"- Alone, a request of this mix takes {wall:.1f} ms, {cpu:.1f} ms of it the app's CPU: {kind} "
            f"({waiting:.0%} of its time waiting; the line is drawn at {WAITING:.0%})."
        )
    top = max((record.clients for record in records if record.measured), default=None)
    if top is None:
        return lines
    ways = {name: spread(found) for name, found in by_way(records, top).items()}
    best = max(ways, key=lambda name: ways[name].median)
    close = [name for name, found in ways.items() if name != best and found.high >= ways[best].low]
    repeats = max(len(found) for found in by_way(records, top).values())
    within = f"; within its spread: {', '.join(sorted(close))}" if close else "; no other way within its spread"
    errors = sum(record.errors or 0 for record in by_way(records, top)[best])
    lines.append(
        f"- At {top} clients, {best} answered the most: {ways[best].median:g} requests/s"
        + (f", {errors} of them without their expected status" if errors else "")
        + (within if repeats > 1 else " (one repeat: no spread measured)")
        + "."
    )
    one, per_core = ways.get("gunicorn-gevent"), ways.get("gunicorn-gevent-per-core")
    if one and per_core and one.median:
        lines.append(
            f"- gunicorn's gevent worker, one process per core against one: x{per_core.median / one.median:.2f} "
            f"at {top} clients, on this machine's {metadata.cpu_count} cores."
        )
    gevent_cpu = [r.cpu_ms_per_request for r in records if r.target == "gunicorn-gevent" and r.cpu_ms_per_request]
    if gevent_cpu:
        per_request = median_of(gevent_cpu)
        lines.append(
            f"- Under load, one gevent process spends {per_request:g} ms of CPU per request: one such "
            f"process answers at most {1000 / per_request:.0f} requests/s of this mix (1000 / its CPU ms), whatever"
            " its clients."
        )
    blocked = [r for r in records if r.blocked_reports]
    if blocked:
        worst = max(blocked, key=lambda r: r.blocked_reports or 0)
        said = f"- gevent's monitor saw the event loop held over 0.1 s {worst.blocked_reports} times on {worst.target}"
        if worst.blocked_where and worst.blocked_where.startswith("/app/"):
            lines.append(f"{said}, in the app's own code at {worst.blocked_where}: every other request of that "
                         f"process waited meanwhile (its stack below). {GEVENT_FIX}")  # fmt: skip
        else:
            lines.append(f"{said}, with no frame of the app in its stack (innermost {worst.blocked_where}): gevent's "
                         "own work held it, not a call of the app's (its stack below).")  # fmt: skip
    for name, fix in (metadata.extra.get("unpatchable") or {}).items():
        lines.append(f"- {name} waits in C, where gevent's patches do not reach: {fix}.")
    return lines + writes_answer(records)


def loads(records: list[YourAppResult]) -> list[tuple[str, int, list[YourAppResult]]]:
    """Each way at each client count, its repeats together, in the page's order."""
    found = []
    for clients in sorted({record.clients for record in records if record.measured}):
        found += [(way, clients, repeats) for way, repeats in sorted(by_way(records, clients).items())]
    return found


def looked_up(found: list[YourAppResult]) -> dict[str, Counter[str]]:
    """Each write's counts over a way's repeats, those whose writes were looked up (the others say why: problems)."""
    summed: dict[str, Counter[str]] = defaultdict(Counter)
    for record in found:
        for label, entry in (record.writes or {}).items():
            if "problem" not in entry:
                summed[label].update({key: value for key, value in entry.items() if isinstance(value, int)})
    return summed


def problems(records: list[YourAppResult]) -> list[str]:
    return [
        f"- {record.target} at {record.clients} clients, repeat {record.repeat}, `{label}`: {entry['problem']}"
        for record in records
        for label, entry in (record.writes or {}).items()
        if "problem" in entry
    ]


def writes_answer(records: list[YourAppResult]) -> list[str]:
    """A sentence on the writes looked up and one on SQLite's lock, where the set has them."""
    lines = []
    if any(record.writes for record in records):
        summed = {(way, clients): looked_up(found) for way, clients, found in loads(records)}
        acknowledged = sum(total["acknowledged"] for writes in summed.values() for total in writes.values())
        lost = {key: sum(total["lost"] for total in writes.values()) for key, writes in summed.items()}
        if not any(lost.values()):
            lines.append(f"- Every write acknowledged under load ({acknowledged}) was found on its page afterwards.")
        else:
            where = ", ".join(f"{way} at {clients} clients: {count}" for (way, clients), count in lost.items() if count)
            lines.append(f"- {sum(lost.values())} of {acknowledged} writes acknowledged under load were not found on "
                         f"their page afterwards: {where}.")  # fmt: skip
        if problems(records):
            lines.append(f"- {len(problems(records))} loads' writes could not be looked up: see below why.")
    locked = {
        (way, clients): sum(sum((r.locked or {}).values()) for r in found) for way, clients, found in loads(records)
    }
    if any(locked.values()):
        where = ", ".join(f"{way} at {clients} clients: {count}" for (way, clients), count in locked.items() if count)
        lines.append(f"- SQLite's \"database is locked\" failed {sum(locked.values())} requests (the app's log): "
                     f"{where}. SQLite lets one writer in at a time: these waited out their connection's timeout "
                     "for it.")  # fmt: skip
    return lines


def status_lines(records: list[YourAppResult]) -> list[str]:
    """Per way and client count, the requests of the file that got anything but their expected status (a set
    before 2026-11-28 kept no statuses per request: none)."""
    lines = []
    for way, clients, found in loads(records):
        summed: dict[str, dict[str, Any]] = {}
        for record in found:
            for label, entry in record.per_type.items():
                if "statuses" in entry:
                    into = summed.setdefault(label, {"expect": entry["expect"], "statuses": Counter()})
                    into["statuses"].update(entry["statuses"])
        missed = [
            f"`{label}`: {outcome(entry | {'statuses': dict(sorted(entry['statuses'].items()))})}"
            for label, entry in summed.items()
            if set(entry["statuses"]) != {str(entry["expect"])}
        ]
        locked: Counter[str] = Counter()
        errors: Counter[str] = Counter()
        for record in found:
            locked.update(record.locked or {})
            errors.update(record.log_errors or {})
        if locked:
            named = ", ".join(f"{name or 'a request the log does not name'} {count}" for name, count in locked.items())
            missed.append(f"SQLite's \"database is locked\" in the app's log {sum(locked.values())} times ({named})")
        if missed and errors:
            named = ", ".join(f"`{error}` ({count})" for error, count in errors.most_common(SAID_ERRORS))
            missed.append(f"the app's log said {named}")
        if missed:
            together = f" ({len(found)} repeats together)" if len(found) > 1 else ""
            lines.append(f"- {way} at {clients} clients{together}: " + "; ".join(missed))
    return ["", "## Requests without their expected status", "", *lines] if lines else []


def writes_table(records: list[YourAppResult]) -> list[str]:
    """The writes of each load looked up on their page afterwards, per way and client count, repeats summed."""
    rows = []
    for way, clients, found in loads(records):
        for label, total in looked_up(found).items():
            page = next(writes[label]["lookup"] for record in found if label in (writes := record.writes or {}))
            counts = [str(total[key]) for key in ("acknowledged", "found", "lost", "found_unacknowledged")]
            rows.append([way, str(clients), f"`{label}`", f"`{page}`", *counts])
    if not rows and not problems(records):
        return []
    header = ["way", "clients", "write", "its page", "acknowledged", "found", "acknowledged, not found",
              "found, not acknowledged"]  # fmt: skip
    said = [markdown_table(header, rows)] if rows else []
    if problems(records):
        said += ([""] if rows else []) + problems(records)
    return ["", "## Writes, looked up after each load", "", *said]


def way_rows(records: list[YourAppResult], clients: int) -> list[list[str]]:
    rows = []
    for name, found in by_way(records, clients).items():
        runs = spread(found)
        first = found[0]
        peaks = [r.rss_mb_peak for r in found if r.rss_mb_peak]
        memory = f"{max(peaks):g} ({first.processes})" if peaks else "?"
        p99s = [r.p99_ms for r in found if r.p99_ms is not None]  # none where a failure fell on the rank
        cpu = median_of([r.cpu_ms_per_request for r in found if r.cpu_ms_per_request is not None] or [0])
        blocked = str(sum(r.blocked_reports or 0 for r in found)) if first.mode == "gevent" else ""
        # The measurement's own cost beside the app's: vegeta's CPU, where it ran on the harness's machine.
        loadgen = [r.loadgen_cpu_seconds * 1000 / r.requests for r in found if r.loadgen_cpu_seconds and r.requests]
        rows.append(
            [
                name,
                f"{runs.median:g}" + (f" ({runs.low:g} to {runs.high:g})" if len(found) > 1 else ""),
                f"{median_of(p99s):g}" if p99s else "?",
                f"{cpu:g}",
                f"{median_of(loadgen):.2f}" if loadgen else "?",
                memory,
                str(sum(r.errors or 0 for r in found)),
                blocked,
            ]
        )
        if any(r.db_cpu_ms_per_request is not None for r in records):
            db = [r.db_cpu_ms_per_request for r in found if r.db_cpu_ms_per_request is not None]
            rows[-1].insert(4, _figure(median_of(db) if db else None))
    return sorted(rows, key=lambda row: -float(row[1].split()[0]))


def _figure(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


def costs_table(metadata: Metadata) -> list[str]:
    costs: dict[str, dict[str, Any]] = metadata.extra.get("request_costs") or {}
    if not costs:
        return []
    database = any(cost.get("db_cpu_ms") is not None for cost in costs.values())
    rows = []
    for name, cost in costs.items():
        where = ", ".join(f"{part} {share:.0%}" for part, share in list(cost["profile"].items())[:4])
        rows.append(
            [
                f"`{name}`",
                str(cost["weight"]),
                f"{cost['wall_ms']:g}",
                str(cost["cpu_ms"]),
                str(cost["waiting_ms"]),
                seen_column(cost),
                where or "no samples",
                *([_figure(cost.get("db_cpu_ms")), _figure(cost.get("db_statements"))] if database else []),
            ]
        )
    header = ["request", "weight", "wall ms", "CPU ms", "waiting ms", "py-spy saw", "where what it saw went"]
    header += ["Postgres CPU ms", "statements"] if database else []
    on = metadata.extra.get("request_costs_on")
    return [
        "",
        f"## What each request costs alone (one after another, on {on})",
        "",
        markdown_table(header, rows),
        "",
        'py-spy samples only a thread that holds the GIL, Python at work: "py-spy saw" is the share of the '
        "request's CPU it saw so, and the shares beside it share out that part only. The rest is C code that lets go "
        "of the GIL (a password hash, compression, image codecs) and the kernel's work for the request's sockets: "
        "not explained here.",
    ]


def how_it_ran(metadata: Metadata) -> list[str]:
    """The reference every way was checked against, and the servers' versions every way ran (sets from before
    2026-11-28 recorded neither)."""
    lines = []
    reference = metadata.extra.get("reference")
    if reference:
        debug = {True: "on", False: "off"}.get(reference.get("debug"), "not said")
        lines.append(f"- The reference: {reference['how']}. The app's debug mode: {debug}.")
    servers = metadata.extra.get("servers")
    if servers:
        ran = ", ".join(f"{name} {version}" for name, version in sorted(servers["ran"].items()))
        lines.append(f"- The servers' versions every way ran: {ran}.")
        if servers["replaced"]:
            replaced = ", ".join(f"{name} {servers['pinned'][name]} -> {version}"
                                 for name, version in sorted(servers["replaced"].items()))  # fmt: skip
            lines.append(f"- The app's requirements replaced the servers' pins: {replaced}.")
    return lines


def render(out: Path, loaded: LoadedSet) -> None:
    records = loaded.records_of(YourAppResult)
    metadata = loaded.metadata
    title = f"Your app, every way: {metadata.extra.get('app')} (`{metadata.extra.get('callable')}`)"
    lines = [
        *head(title, metadata, took(metadata)),
        "",
        "## What to run, from the figures below",
        "",
        *decision(records),
        *dominant(records, metadata),
        *bound_by(records),
        "",
        "## More from the figures",
        "",
        *answer(records, metadata),
    ]
    header = [
        "way",
        "requests/s",
        "P99 ms",
        "CPU ms/request",
        "vegeta's CPU ms/request",
        "memory MB (processes)",
        "errors",
        "blocked",
    ]
    if any(record.db_cpu_ms_per_request is not None for record in records):
        header.insert(4, "Postgres CPU ms/request")
    for clients in sorted({record.clients for record in records if record.measured}):
        lines += ["", f"## {clients} clients", "", markdown_table(header, way_rows(records, clients))]
    lines += status_lines(records) + writes_table(records)
    lines += costs_table(metadata)
    left_out = [record for record in records if not record.verified]
    if left_out:
        lines += ["", "## Left out of the load", ""]
        lines += [f"- {record.target}: {record.problem}" for record in left_out]
    # The stack of the load the answer names: the one whose loop was held the most often.
    blocked = sorted((r for r in records if r.blocked_stack), key=lambda r: -(r.blocked_reports or 0))
    if blocked:
        lines += [
            "",
            f"## What held gevent's event loop ({blocked[0].target})",
            "",
            "```",
            *dict.fromkeys(blocked[0].blocked_stack),  # sets of 2026-11-26 kept a frame once per printing
            "```",
        ]
    lines += ["", "## The ways, as they ran", ""]
    seen = {record.target: record.server_command for record in records}
    lines += [f"- {name}: `{command}`" for name, command in seen.items()]
    lines += how_it_ran(metadata)
    (out / "results.md").write_text("\n".join(lines) + "\n")
    html_page.from_markdown(out, metadata, loaded.mode)
