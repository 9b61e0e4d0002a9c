"""A `make bench`, `make sweep` or `make overload` set rendered from OUT/results.json alone: the table (one row per
target and load, the median of the repeats with their spread), the charts, and index.html."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

import matplotlib.pyplot as plt

from bench.bench_run.record import BenchResult
from bench.bench_run.rows import Row, counted, summarise
from bench.loadgen import wrk
from bench.loadgen.closed_loop import LOADGENS
from bench.render import html_page, shared
from bench.render.shared import STEADY
from bench.results.records import Metadata
from bench.results.store import LoadedSet

COLUMNS = (
    "scenario", "target", "server", "mode", "at once", "n / c / delay", "requests/s", "ceiling", "efficiency",
    "vs reference", "within spread of", "P50 ms", "P99 ms", "failed", "non-2xx", "OS threads idle → peak",
    "peak RSS MB", "app CPU ms / request", "other CPU ms / request", "machine busy",
)  # fmt: skip
# Short names for the other processes on a request's path, in the order they appear in the table.
OTHERS = {
    "nginx": "nginx", "httpd": "httpd", "slow_api": "api", "postgres": "pg", "docker-proxy": "proxy",
    "ab": "ab", "hey": "hey", "wrk": "wrk",  # the load generator, when it runs on the host
}  # fmt: skip


# The bars' colours: how the server holds many requests at once.
MODE_COLORS = {"sync": "tab:orange", "gevent": "tab:blue", "asyncio": "tab:green"}


def label(record: BenchResult) -> str:
    name = f"{record.scenario} / {record.target}" if record.scenario != record.target else record.target
    return f"{name}, {record.c} clients"


def per_request_ms(seconds: float | None, record: BenchResult) -> str:
    # CPU time comes in ticks of 10 ms: over fewer than 100 requests, a share per request means nothing.
    # wrk runs for a time: what it completed, not the requests asked for.
    if seconds is None or record.n < 100:
        return "–"
    return f"{1000 * seconds / record.requests_completed:.2f}"


def others(record: BenchResult) -> str:
    spent = record.cpu_seconds_others or {}
    if record.n < 100:
        return "–"
    return ", ".join(
        f"{short} {per_request_ms(spent[name], record)}" for name, short in OTHERS.items() if name in spent
    )


def columns(records: list[BenchResult]) -> tuple[str, ...]:
    """The table's columns: "CPU steady" only for a set whose runs were probed."""
    return COLUMNS + (STEADY,) if any(shared.steadiness_known(record.cpu_probe) for record in records) else COLUMNS


def requests_cell(record: BenchResult) -> str:
    # wrk runs for a duration, not a number of requests: the table says how long, as its command does.
    if record.loadgen == "wrk":
        return f"{wrk.duration_seconds(record.n, record.c, record.delay)} s"
    return str(record.n)


def throughput_cell(row: Row) -> str:
    if not row.ok:
        return f"**FAILED**: {row.record.problem}"
    if row.runs > 1 and row.spread is not None:
        median, low, high = (shared.rps(value) for value in (row.spread.median, row.spread.low, row.spread.high))
        return f"{median} ({low}–{high})"
    return shared.rps(row.record.throughput)


def row(summarised: Row, steady_column: bool = False) -> list[str]:
    """One table row; with the set's "CPU steady" column, a target that was never probed (it did not start) shows
    a dash there, so every row has as many cells as the header."""
    record = summarised.record
    measured = record.measured
    spread = summarised.within_spread_of

    def value(figure: float | None, form: str = "{}") -> str:
        return form.format(figure) if measured and figure is not None else "–"

    threads = f"{record.threads_idle} → {record.threads_peak}" if measured else "–"
    return [
        record.scenario, record.target, record.server, record.mode, shared.at_once(record),
        f"{requests_cell(record)} / {record.c} / {record.delay:g} s", throughput_cell(summarised),
        shared.rps(record.ceiling_rps),
        value(summarised.efficiency, "{:.0%}") if record.ok else "–", value(summarised.vs_reference, "{:.0%}"),
        "–" if spread is None else ", ".join(spread) or "none", value(record.p50_ms, "{:.0f}"),
        value(record.p99_ms, "{:.0f}"), value(record.failed), value(record.non2xx), threads,
        value(record.rss_mb_peak, "{:.0f}"), per_request_ms(record.cpu_seconds, record) if measured else "–",
        others(record) if measured else "–", value(record.machine_busy, "{:.0%}"),
    ] + ([shared.steady_cell(summarised.steadiness)] if steady_column else [])  # fmt: skip


def throughput_chart(rows: list[Row], metadata: Metadata, path: Path) -> None:
    # Each target against its own ceiling: loads differ (2000 x 200, 10 x 5), so percentages compare, rps don't.
    # Wide enough that a bar of 90 % holds its label: throughput, spread, and both shares.
    figure, axes = plt.subplots(figsize=(14, 0.5 * len(rows) + 1.6))
    labels = [label(summarised.record) for summarised in rows][::-1]
    for place, summarised in enumerate(rows[::-1]):
        record = summarised.record
        ceiling = record.ceiling_rps
        if summarised.ok:
            color = MODE_COLORS.get(record.mode, "tab:grey")
            fraction = summarised.efficiency or 0.0
            axes.barh(place, 100 * fraction, color=color)
            spread = summarised.spread
            if summarised.runs > 1 and spread is not None:  # the spread of the repeats, around the median
                low, high = (100 * value / ceiling for value in (spread.low, spread.high))
                axes.plot([low, high], [place, place], color="black", linewidth=1.5, marker="|", markersize=8)
            vs = summarised.vs_reference
            share = f", {vs:.2f} of slow_api alone" if vs else ""
            text = f" {throughput_cell(summarised)} of {shared.rps(ceiling)} requests/s: {fraction:.0%}{share}"
            # Inside a long bar in white; after a short one in black, where white would not show.
            inside = fraction >= 0.6
            end = 100 * max(fraction, (spread.high if spread else 0) / ceiling)  # past the spread's whisker
            axes.text(1 if inside else end + 1, place, text, va="center", fontsize=8,
                      color="white" if inside else "black", fontweight="bold")  # fmt: skip
        else:
            axes.barh(place, 100, color="none", edgecolor="tab:red", hatch="//")
            axes.text(
                1, place, f" FAILED: {record.problem}", va="center", color="tab:red", fontweight="bold", fontsize=8
            )
        naive = 100 * record.ceiling_naive_rps / ceiling
        axes.plot([naive] * 2, [place - 0.4, place + 0.4], color="grey", linestyle=":")
    axes.axvline(100, color="black", linewidth=2)
    axes.set_yticks(range(len(labels)), labels, fontsize=8)
    naive_most = max(100 * r.record.ceiling_naive_rps / r.record.ceiling_rps for r in rows)
    axes.set_xlim(0, max(125, naive_most + 10))
    tool = rows[0].record.loadgen
    axes.set_xlabel(
        f"% of {tool}'s ceiling (orange: threads, blue: gevent, green: asyncio; dotted: the naive c / delay)"
    )
    axes.set_title(f"Throughput against the best {tool} can measure for the same load")
    shared.save(figure, metadata, path)


def latency_chart(rows: list[Row], metadata: Metadata, path: Path) -> None:
    measured = [
        (summarised.record, p50, p99)
        for summarised in rows
        if (p99 := summarised.record.p99_ms) is not None and (p50 := summarised.record.p50_ms) is not None
    ]
    figure, axes = plt.subplots(figsize=(10, 0.5 * len(measured) + 1.6))
    places = range(len(measured))
    labels = [label(record) + ("" if record.ok else " (FAILED)") for record, _, _ in measured][::-1]
    axes.barh([p + 0.2 for p in places], [p50 for _, p50, _ in measured[::-1]], height=0.4, label="P50")
    axes.barh([p - 0.2 for p in places], [p99 for _, _, p99 in measured[::-1]], height=0.4, label="P99")
    for delay in sorted({record.delay for record, _, _ in measured}):
        axes.axvline(delay * 1000, color="black", linestyle="--", linewidth=1)
    axes.set_yticks(list(places), labels, fontsize=8)
    for tick, (record, _, _) in zip(axes.get_yticklabels(), measured[::-1], strict=True):
        tick.set_color("black" if record.ok else "tab:red")
    axes.set_xlabel("latency, ms (dashed: the delay every request waits)")
    axes.set_title("Latency per target")
    axes.legend(loc="lower right")
    shared.save(figure, metadata, path)


def sweep_chart(rows: list[Row], metadata: Metadata, path: Path) -> None:
    records = [summarised.record for summarised in rows]
    figure, axes = plt.subplots(figsize=(10, 6))
    for target in dict.fromkeys(record.target for record in records):
        points = [record for record in records if record.target == target]
        style = "--" if points[0].mode == "sync" else "-"  # dashed: the servers that saturate
        rps = [record.throughput if record.ok else float("nan") for record in points]
        axes.plot(
            [record.c for record in points], rps, style, marker="o", label=f"{target} ({shared.at_once(points[0])})"
        )
        if failed := [record.c for record in points if not record.ok]:
            # A failed load has no throughput to plot: a red cross at the foot of the chart marks its place.
            axes.plot(failed, [0.02] * len(failed), "x", color="tab:red", markersize=10, markeredgewidth=2,
                      transform=axes.get_xaxis_transform(), label=f"{target}: FAILED", clip_on=False)  # fmt: skip
    ceiling = sorted({(record.c, record.n, record.delay) for record in records})
    tool = LOADGENS[records[0].loadgen]
    axes.plot(
        [c for c, _, _ in ceiling], [tool.ceiling_rps(n, c, d, None) for c, n, d in ceiling], "k:",
        label=f"{tool.name}'s ceiling",
    )  # fmt: skip
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel(f"{tool.name}'s concurrent clients")
    axes.set_ylabel("requests per second")
    axes.set_title("Throughput against concurrency: sync servers saturate at workers x threads")
    axes.legend(fontsize=7)
    shared.save(figure, metadata, path)


OVERLOAD_COLUMNS = (
    "target", "holds at once", "most clients, none failed", "first failure at", "what failed", "answered after",
)  # fmt: skip


def overload_rows(records: list[BenchResult]) -> list[list[str]]:
    rows = []
    for target in dict.fromkeys(record.target for record in records):
        levels = [record for record in records if record.target == target]
        passed = [record.c for record in levels if record.ok]
        failed = next((record for record in levels if not record.ok), None)
        survived = {None: "–", True: "yes", False: "**no**"}[failed.survived if failed else None]
        cells = [
            target, shared.at_once(levels[0]), str(max(passed)) if passed else "none",
            str(failed.c) if failed else f"none up to {levels[-1].c}",
            str(failed.problem) if failed else "–", survived,
        ]  # fmt: skip
        rows.append(cells)
    return rows


def image_lines(metadata: Metadata) -> list[str]:
    images = metadata.extra.get("images")
    if not images:
        return []
    rows = [
        f"| `{name}` | {images['size_mb'][name]} | {seconds} |" for name, seconds in images["build_seconds"].items()
    ]
    return [
        f"Every app image built without cache, one after the other: {images['cold_build_seconds']} s in all.",
        "",
        "| image | size MB | build s |",
        "|---|---|---|",
        *rows,
        "",
    ]


CEILING_NOTE = LOADGENS["ab"].ceiling_note
# What each tool does to the server, in a few words: a reader of a title should know which client measured.
TOOL_WORDS = {
    "ab": "ab (HTTP/1.0, a new connection per request)",
    "hey": "hey (keep-alive, all connections opened at once)",
    "wrk": "wrk (keep-alive, for a duration)",
}


def tools_of(records: list[BenchResult]) -> list[str]:
    return list(dict.fromkeys(record.loadgen for record in records))


def ceiling_notes(records: list[BenchResult]) -> str:
    return " ".join(LOADGENS[name].ceiling_note for name in tools_of(records))


def title(metadata: Metadata, records: list[BenchResult]) -> str:
    """The set's heading: what was loaded, with which tool, and how many times."""
    tools = " and ".join(TOOL_WORDS.get(name, name) for name in tools_of(records))
    repeat = metadata.extra.get("repeat") or 1
    runs = f", every target {repeat} times, interleaved (the median run, min–max beside it)" if repeat > 1 else ""
    return f"Benchmark results: {tools}{runs}"


def charts_for(mode: str) -> dict[str, Callable[[list[Row], Metadata, Path], None]]:
    if mode == "bench":
        return {"throughput.png": throughput_chart, "latency.png": latency_chart}
    return {"sweep.png": sweep_chart}


def verdict_line(mode: str, records: list[BenchResult]) -> str:
    """The set's verdict in one line of Markdown, for results.md and the page: what was not OK, in bold, or that
    everything was, and how many measurements ran while the CPU changed speed; for overload, what the run did."""
    if mode == "overload":  # failures are what overload looks for; the summary says where each server's came
        return "Each target given more and more clients, one request each, until a request failed."
    not_ok = [record.target for record in records if not record.ok]
    said = f"**Not OK: {', '.join(not_ok)}**" if not_ok else "Every target verified, no failed or non-2xx request."
    probed = [record.cpu_probe for record in counted(records) if shared.steadiness_known(record.cpu_probe)]
    unsteady = [probe for probe in probed if probe is not None and not probe.steady]
    if unsteady:
        said += (
            f" {len(unsteady)} of {len(probed)} measurements ran while the CPU changed speed ({STEADY}: no): read"
            " their figures with more doubt than the rest."
        )
    return said


def roles_line(metadata: Metadata, records: list[BenchResult]) -> str:
    """Where the server, the load generator and the database ran: engines, cores, one machine or several; and where
    the servers' processes were read, when not on the harness's machine."""
    roles = metadata.extra.get("roles")
    if not roles:
        return ""
    sampled = shared.read_through_the_engine(records)
    placed = []
    for role in ("server", "client", "database"):
        facts = roles.get(role) or {}
        cores = f" (cores {facts['cpuset']})" if facts.get("cpuset") else ""
        placed.append(f"{role} on {facts.get('engine_name') or facts.get('engine', '?')}{cores}")
    first = roles.get("server") or {}
    machine = f"{first.get('cores')} cores, {first.get('cpu_model')}"
    if roles.get("one_machine"):
        where = f"all on one machine ({machine})"
    elif roles.get("shared_machine"):
        where = "two of them on one machine"
    else:
        where = "each on a machine of its own"
    return f"Roles: {', '.join(placed)}; {where}.{sampled}"


def others_seconds(record: BenchResult) -> float:
    return sum(seconds for name, seconds in (record.cpu_seconds_others or {}).items() if name in OTHERS)


def per_request(seconds: float | None, record: BenchResult) -> float | None:
    return None if seconds is None else 1000 * seconds / record.requests_completed


# What each numeric column sorts by in index.html: the number behind the cell, never its text ("4 x 50 threads",
# "api 0.20, ab 0.10"). A column not named here sorts as text.
SORT_KEYS: dict[str, Callable[[Row], float | None]] = {
    "at once": lambda row: shared.holds_at_once(row.record),
    "n / c / delay": lambda row: row.record.c,
    "requests/s": lambda row: row.spread.median if row.spread else row.record.rps,
    "ceiling": lambda row: row.record.ceiling_rps,
    "efficiency": lambda row: row.efficiency,
    "vs reference": lambda row: row.vs_reference,
    "P50 ms": lambda row: row.record.p50_ms,
    "P99 ms": lambda row: row.record.p99_ms,
    "failed": lambda row: row.record.failed,
    "non-2xx": lambda row: row.record.non2xx,
    "OS threads idle → peak": lambda row: row.record.threads_peak,
    "peak RSS MB": lambda row: row.record.rss_mb_peak,
    "app CPU ms / request": lambda row: per_request(row.record.cpu_seconds, row.record),
    "other CPU ms / request": lambda row: per_request(others_seconds(row.record), row.record),
    "machine busy": lambda row: row.record.machine_busy,
    STEADY: lambda row: row.steadiness.cpu_moved if row.steadiness else None,
}


def commands(records: list[BenchResult]) -> list[tuple[str, str | None, str | None]]:
    return [(label(record), record.command, record.problem) for record in records]


def render(out: Path, loaded: LoadedSet) -> None:
    metadata, mode = loaded.metadata, loaded.mode
    records = loaded.records_of(BenchResult)
    rows = summarise(records)  # with repeats, one row per target and load
    header = columns(records)
    table_rows = [row(summarised, STEADY in header) for summarised in rows]  # the same cells in both pages
    charts = charts_for(mode)
    for chart, draw in charts.items():
        draw(rows, metadata, out / chart)
    summary = [shared.markdown_table(OVERLOAD_COLUMNS, overload_rows(records)), ""] if mode == "overload" else []
    roles = roles_line(metadata, records)
    lines = [
        *shared.head(title(metadata, records), metadata, shared.took(metadata)),
        "",
        *([roles, ""] if roles else []),
        verdict_line(mode, records),
        "",
        *summary,
        shared.markdown_table(header, table_rows),
        "",
        ceiling_notes(records),
        "",
        *(f"![{chart}]({chart})" for chart in charts),
        "",
        *image_lines(metadata),
        *shared.packages(metadata),
    ]
    (out / "results.md").write_text("\n".join(lines))
    overload = html_page.table(OVERLOAD_COLUMNS, overload_rows(records)) if mode == "overload" else ""
    html_page.write(
        out, metadata, mode,
        heading=title(metadata, records),
        verdict=html_page.inline(verdict_line(mode, records)) + (f"<br>{html.escape(roles)}" if roles else ""),
        summary=overload,
        table=html_page.table(header, table_rows, rows, SORT_KEYS),
        note=html.escape(ceiling_notes(records)),
        charts="\n".join(html_page.chart(out / chart) for chart in charts if (out / chart).exists()),
        commands=html_page.commands(commands(records)),
    )  # fmt: skip
