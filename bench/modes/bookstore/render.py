"""A `make bookstore` set rendered from OUT/results.json alone: results.md (each target and load beside the database
alone), its charts (bookstore_charts.py), and index.html through the harness's page (bench/render/html_page.py)."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

from bench.loadgen.pgbench import PROTOCOL
from bench.modes.bookstore import charts as bookstore_charts
from bench.modes.bookstore.record import BookstoreResult
from bench.modes.bookstore.rows import Row, number, ordered, rps, summarise
from bench.render import html_page, shared
from bench.results.records import Metadata
from bench.results.store import LoadedSet

COLUMNS = (
    "load", "target", "server", "mode", "clients → database", "requests/s", "database alone, tps",
    "share of the database", "P50 ms", "P99 ms", "app CPU ms / request", "Postgres CPU ms / request",
    "Postgres CPU ms / tx alone", "DB connections busy / open, peak", "errors (503s)",
)  # fmt: skip
DETAIL_COLUMNS = (
    "load", "target", "Postgres statements / request", "Postgres CPU ms / tx, app → alone", "app RSS MB, peak",
    "Postgres memory MB, peak", "app threads, peak", "writes 201 / found / lost", "CPU probe s, before → after",
    "machine busy",
)  # fmt: skip
CHARTS = ("bookstore_share.png", "bookstore_cpu.png")
SWEEP_CHART = "bookstore_sweep.png"  # only for a set with a load at several numbers of clients
PROFILE_CHART = "bookstore_profile.png"  # only for a set with profiles
STEADY = shared.STEADY  # only for a set whose measurements were probed around wrk and pgbench
METHOD = (
    "Each target ran alone (the other app services stopped). Per load: one request of each kind verified against"
    " the data (every value derives from the row number), a warm-up, then wrk for the set's seconds from a"
    " container on the scenario's network (bench/modes/bookstore.lua: random ids over the whole table, random"
    " pages near the offset, writes each with a unique marker). Right after, pgbench ran the same SQL, captured"
    " from the target"
    " for that endpoint, for as long, from a container of the postgres image on the same network, with as many"
    " clients as the database could see from the target at once (its pool, fewer clients or fewer threads):"
    " 'database alone'. Share of the database: the target's requests per second over pgbench's transactions per"
    " second, one transaction being one request's SQL. App CPU: the server's processes, from /proc. Postgres CPU: its"
    " container's cgroup, every backend, ended ones too. DB connections: Postgres's client backends by their process"
    " titles, busy (in a query or a transaction) / open. CPU probe: a fixed Python loop on the host (best of 3),"
    " before wrk and after pgbench: a longer time after means a slower machine during the pair."
)

# Sets made since Postgres's idle work is measured (records with pg_idle_cpu_ms_per_s) say how it is taken off.
NET_OF_IDLE = (
    "Per request means per request answered 2xx: a fast 503 is not a request's work. Postgres's CPU and statements"
    " are less what it did in as long with only the healthchecks running, measured for a few seconds before each"
    " load; its statements are counted by Postgres itself (pg_stat_statements), by their first word."
)


# Sets made in rounds (records with a repeat): the targets side by side, all but one paused.
METHOD_ROUNDS = (
    "Every target's containers ran together, all but the one measured paused (no CPU, no healthcheck; each keeps"
    " its pool and its JIT's work). A round: one load at one number of clients, each target in turn (one request of"
    " each kind verified against the data, a warm-up, then wrk for the set's seconds from a container on the"
    " scenario's network, bench/modes/bookstore.lua drawing random ids over the whole table, random pages near the"
    " offset, writes each with a unique marker), then, every app paused, pgbench running the same SQL, captured from"
    " the targets, for as long, from a container of the postgres image on the same network, with as many clients as"
    " the database could see from a target at once (its pool, fewer clients or fewer threads), once for all the"
    " targets with the same scripts, clients and protocol: 'database alone'. Share of the database: the target's"
    " requests served (2xx) per second over pgbench's transactions per second, one transaction being one request's"
    " SQL; a 503 (the pool had no connection in time) is a request refused. App CPU: the server's processes, from"
    " /proc. Postgres CPU: its container's cgroup, every backend, ended ones too. DB connections: the target's"
    " client backends by their process titles, busy (in a query or a transaction) / open. CPU probe: a fixed Python"
    " loop on the host (best of 3), before and after each wrk and each pgbench; steady when all four of a"
    " measurement kept within 1.25x."
)


def method(records: list[BookstoreResult]) -> str:
    text = METHOD_ROUNDS if any(record.repeat is not None for record in records) else METHOD
    net_of_idle = any(record.pg_idle_cpu_ms_per_s is not None for record in records)
    return text + (" " + NET_OF_IDLE if net_of_idle else "")


def errors(record: BookstoreResult) -> str:
    if not record.measured:
        return "–"
    return f"{(record.failed or 0) + (record.non2xx or 0)} ({record.status_503})"


def columns(rows: list[Row]) -> tuple[str, ...]:
    return COLUMNS + (STEADY,) if any(row.steadiness is not None for row in rows) else COLUMNS


def table_row(row: Row, steady_column: bool = False) -> list[str]:
    record = row.record
    head = [record.load, record.target, record.server, record.mode, f"{record.clients} → {record.db_clients}"]
    tail = [shared.steady_cell(row.steadiness)] if steady_column else []
    if not record.measured:
        return head + [f"**FAILED**: {record.problem}"] + ["–"] * (len(COLUMNS) - len(head) - 1) + tail
    throughput = rps(record.rps)
    share = number(record.vs_database, "{:.0%}")
    if row.runs > 1 and record.ok and row.rps_range:
        throughput += f" ({rps(row.rps_range[0])}–{rps(row.rps_range[1])})"
        if row.share_range:
            share += f" ({row.share_range[0]:.0%}–{row.share_range[1]:.0%})"
    if not record.ok:
        throughput = f"**FAILED**: {record.problem} ({rps(record.rps)})"
    return head + [
        throughput, rps(record.pgbench_tps), share,
        number(record.p50_ms, "{:.0f}"), number(record.p99_ms, "{:.0f}"),
        number(record.app_cpu_ms_per_request), number(record.pg_cpu_ms_per_request),
        number(record.pgbench_pg_cpu_ms_per_transaction),
        f"{record.pg_busy_peak} / {record.pg_sessions_peak}", errors(record),
    ] + tail  # fmt: skip


def detail_row(row: Row) -> list[str]:
    record = row.record
    head = [record.load, record.target]
    if not record.measured:
        return head + ["–"] * (len(DETAIL_COLUMNS) - len(head))
    writes = (
        f"{record.writes_acknowledged} / {record.writes_found} / {record.writes_lost}"
        if record.writes_found is not None
        else "–"
    )
    host = record.cpu_probe.seconds.get("host", {}) if record.cpu_probe else {}
    before, after = (number(host.get(when), "{:.3f}") for when in ("before", "after"))
    statements = record.pg_statements_per_request
    kinds = ", ".join(f"{kind} {calls:g}" for kind, calls in statements.items()) if statements else "–"
    per_transaction = f"{number(record.pg_cpu_ms_per_transaction)} → {number(record.pgbench_pg_cpu_ms_per_transaction)}"
    return head + [
        kinds, per_transaction,
        number(record.rss_mb_peak, "{:.0f}"), number(record.pg_memory_mb_peak, "{:.0f}"),
        number(record.threads_peak, "{:.0f}"), writes, f"{before} → {after}", number(record.machine_busy, "{:.0%}"),
    ]  # fmt: skip


def verdict_line(rows: list[Row]) -> str:
    """The set's verdict in one line of Markdown, for results.md and the page: what was not OK, in bold, or that
    everything was."""
    failed = [f"{row.record.target} / {row.panel}" for row in rows if not row.ok]
    if failed:
        return f"**Not OK: {', '.join(failed)}**"
    refused = sum(1 for row in rows if row.record.status_503)
    if refused:  # past a pool, a 503 is the app's answer by design: counted, shown, not a failure
        return (
            "Every target and load verified; no failed or lost request; pgbench had no failed transaction;"
            f" {refused} of {len(rows)} rows had requests refused with the pool's 503."
        )
    return "Every target and load verified; no failed, non-2xx or lost request; pgbench had no failed transaction."


def database_line(metadata: Metadata) -> str:
    facts, seconds = metadata.extra.get("database") or {}, metadata.extra.get("seconds")
    if not facts:
        return ""
    return (
        f"Data: SCALE {metadata.extra['scale']}: {facts['authors']} authors, {facts['books']} books, database"
        f" {facts['size']}. {seconds} s of wrk and {seconds} s of pgbench per measurement."
        + rounds_line(metadata)
        + reads_line(metadata)
    )


def rounds_line(metadata: Metadata) -> str:
    repeat = metadata.extra.get("repeat") or 1
    if repeat == 1:
        return ""
    return (
        f" Every load {repeat} times, in rounds (each target in turn, then the database alone): a row is the median"
        " run, with the range of its throughput and share."
    )


def reads_line(metadata: Metadata) -> str:
    """How the app's reads ended, and so how pgbench sent the same SQL (sets made before the setting: rollback)."""
    endings = metadata.extra.get("reads_end_with") or []
    said = [f"with a {ending.upper()} (pgbench --protocol {PROTOCOL[ending]})" for ending in endings]
    if not said:
        return ""
    rungs = " The ladder's rungs from 1 on end theirs with a COMMIT (pgbench --protocol prepared)."
    return f" The app's reads ended {' or, where a target is named READS_END_WITH=commit, '.join(said)}." + (
        rungs if metadata.extra.get("ladder") else ""
    )


def errors_count(record: BookstoreResult) -> float | None:
    return None if record.failed is None else record.failed + (record.non2xx or 0)


SORT_KEYS: dict[str, Callable[[Row], float | None]] = {
    "clients → database": lambda row: row.record.clients,
    "requests/s": lambda row: row.record.rps,
    "database alone, tps": lambda row: row.record.pgbench_tps,
    "share of the database": lambda row: row.record.vs_database,
    "P50 ms": lambda row: row.record.p50_ms,
    "P99 ms": lambda row: row.record.p99_ms,
    "app CPU ms / request": lambda row: row.record.app_cpu_ms_per_request,
    "Postgres CPU ms / request": lambda row: row.record.pg_cpu_ms_per_request,
    "Postgres CPU ms / tx alone": lambda row: row.record.pgbench_pg_cpu_ms_per_transaction,
    "DB connections busy / open, peak": lambda row: row.record.pg_busy_peak,
    "errors (503s)": lambda row: errors_count(row.record),
    "app RSS MB, peak": lambda row: row.record.rss_mb_peak,
    "Postgres memory MB, peak": lambda row: row.record.pg_memory_mb_peak,
    "app threads, peak": lambda row: row.record.threads_peak,
    "Postgres statements / request": lambda row: sum((row.record.pg_statements_per_request or {}).values()),
    "Postgres CPU ms / tx, app → alone": lambda row: row.record.pg_cpu_ms_per_transaction,
    "machine busy": lambda row: row.record.machine_busy,
    STEADY: lambda row: row.steadiness.steady_runs if row.steadiness else None,
}


def commands(records: list[BookstoreResult]) -> str:
    items = ""
    for record in records:
        label = html.escape(f"{record.target} / {record.load}")
        for command in (record.command, record.pgbench_command):
            if command:
                items += f"<li>{label}: <code>{html.escape(command)}</code></li>"
        scripts = "\n".join(f"-- {name}\n{text}" for name, text in (record.pgbench_scripts or {}).items())
        if scripts:
            items += f"<li>{label}, pgbench's scripts:<pre>{html.escape(scripts)}</pre></li>"
    return f"<ol>{items}</ol>"


def charts(rows: list[Row], records: list[BookstoreResult]) -> tuple[str, ...]:
    swept = any(row.panel != row.record.load for row in rows)
    profiled = any(record.profile is not None for record in records)
    return CHARTS + ((SWEEP_CHART,) if swept else ()) + ((PROFILE_CHART,) if profiled else ())


PROFILE_HEADING = "Where the app's CPU per request goes (py-spy, in each load's first round)"


def profile_table(records: list[BookstoreResult]) -> tuple[list[str], list[list[str]]]:
    """Per target and load, the app's CPU per request split by where py-spy found it: ms (share)."""
    profiled = bookstore_charts.profiled(records)
    shown = bookstore_charts.profile_categories(profiled)
    rows = []
    for record in profiled:
        total, shares = record.app_cpu_ms_per_request or 0.0, record.profile or {}
        cells = [f"{total * shares.get(name, 0):.2f} ({shares.get(name, 0):.0%})" for name in shown]
        rows.append([record.load, record.target, f"{record.clients}", f"{total:.2f}", *cells,
                     str(record.profile_samples)])  # fmt: skip
    return ["load", "target", "clients", "app CPU ms / request", *shown, "samples"], rows


LADDER_HEADING = "The ladder: each rung one change more than the one above it"
LADDER_COLUMNS = (
    "rung", "target", "load", "requests/s", "× the rung above", "share of the database", "P99 ms",
    "app CPU ms / request", "pgbouncer CPU ms / request", "Postgres CPU ms / request", "Postgres CPU ms / tx alone",
    "Postgres CPU ms / tx alone at the app's rate", "Postgres statements / request",
)  # fmt: skip


def ladder_figures(record: BookstoreResult) -> list[str]:
    return [
        number(record.p99_ms, "{:.0f}"), number(record.app_cpu_ms_per_request),
        number(record.db_via_cpu_ms_per_request), number(record.pg_cpu_ms_per_request),
        number(record.pgbench_pg_cpu_ms_per_transaction),
        number(record.pgbench_at_app_rate_pg_cpu_ms_per_transaction),
    ]  # fmt: skip


def ladder_table(rows: list[Row]) -> list[list[str]]:
    """The rungs in order, per load and clients: each row's median throughput over the rung above's."""
    table = []
    for panel in dict.fromkeys(row.panel for row in rows):
        rungs = sorted((row for row in rows if row.panel == panel and row.record.rung is not None),
                       key=lambda row: row.record.rung or 0)  # fmt: skip
        above: BookstoreResult | None = None
        for row in rungs:
            record = row.record
            gain = record.rps / above.rps if above and record.rps and above.rps else None
            statements = sum((record.pg_statements_per_request or {}).values()) or None
            cells = table_row(row)
            head = [str(record.rung), record.target, panel, cells[5], number(gain, "×{:.2f}"), cells[7]]
            table.append([*head, *ladder_figures(record), number(statements, "{:.1f}")])
            above = record
    return table


def warm_line(records: list[BookstoreResult]) -> str:
    """How long each target's first warm-up took until its CPU per request stopped falling."""
    warmed = [f"{r.target} {r.warm_up_s} s" for r in records if r.warm_up_s is not None]
    return f" Warm-up until the CPU per request stopped falling: {', '.join(warmed)}." if warmed else ""


def draw(out: Path, metadata: Metadata, rows: list[Row], records: list[BookstoreResult]) -> tuple[str, ...]:
    """The set's charts, drawn; their file names."""
    bookstore_charts.share_chart(rows, metadata, out / CHARTS[0])
    bookstore_charts.cpu_chart(rows, metadata, out / CHARTS[1])
    drawn = charts(rows, records)
    if SWEEP_CHART in drawn:
        bookstore_charts.sweep_chart(rows, metadata, out / SWEEP_CHART)
    if PROFILE_CHART in drawn:
        bookstore_charts.profile_chart(records, metadata, out / PROFILE_CHART)
    return drawn


def extra_tables(rows: list[Row], records: list[BookstoreResult], drawn: tuple[str, ...]) -> tuple[list[str], str]:
    """The ladder's table and the profiles', where the set has them: as results.md's lines and as HTML."""
    lines, tables = [], ""
    ladder = ladder_table(rows)
    if ladder:
        lines += [LADDER_HEADING + ":", "", shared.markdown_table(LADDER_COLUMNS, ladder), ""]
        tables += f"<h2>{LADDER_HEADING}</h2>" + html_page.table(LADDER_COLUMNS, ladder)
    if PROFILE_CHART in drawn:
        header, profile_rows = profile_table(records)
        lines += [PROFILE_HEADING + ":", "", shared.markdown_table(header, profile_rows), ""]
        tables += f"<h2>{PROFILE_HEADING}</h2>" + html_page.table(tuple(header), profile_rows)
    return lines, tables


def render(out: Path, loaded: LoadedSet) -> None:
    metadata = loaded.metadata
    records = ordered(loaded.records_of(BookstoreResult))
    rows = summarise(records)
    steady_column = STEADY in columns(rows)
    drawn = draw(out, metadata, rows, records)
    more, more_html = extra_tables(rows, records, drawn)
    about = database_line(metadata) + warm_line(records) + shared.read_through_the_engine(records)
    lines = [
        *shared.head("The bookstore against the database alone", metadata, shared.took(metadata)),
        "",
        about,
        "",
        verdict_line(rows),
        "",
        shared.markdown_table(columns(rows), [table_row(row, steady_column) for row in rows]),
        "",
        shared.markdown_table(DETAIL_COLUMNS, [detail_row(row) for row in rows]),
        "",
        *more,
        method(records),
        "",
        *(f"![{chart}]({chart})" for chart in drawn),
        "",
        *shared.packages(metadata),
    ]
    (out / "results.md").write_text("\n".join(lines))
    html_page.write(
        out, metadata, "bookstore",
        heading="The bookstore against the database alone",
        verdict=html_page.inline(verdict_line(rows)) + "<br>" + html.escape(about),
        table=html_page.table(columns(rows), [table_row(r, steady_column) for r in rows], rows, SORT_KEYS)
        + "<h2>Memory, writes and the machine</h2>"
        + html_page.table(DETAIL_COLUMNS, [detail_row(r) for r in rows], rows, SORT_KEYS)
        + more_html,
        note=html.escape(method(records)),
        charts="\n".join(html_page.chart(out / chart) for chart in drawn),
        commands=commands(records),
    )  # fmt: skip
