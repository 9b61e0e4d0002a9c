"""A `make bench`, `make sweep` or `make overload` set rendered from OUT/results.json alone: the table (one row per
target and load, the median of the repeats with their spread), the charts, and index.html."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from bench.loadgen import wrk
from bench.loadgen.ceiling import efficiency
from bench.loadgen.closed_loop import LOADGENS
from bench.render import html_page, shared
from bench.render.document import Document
from bench.render.shared import STEADY

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


def per_request_ms(seconds: float, record: dict[str, Any]) -> str:
    # CPU time comes in ticks of 10 ms: over fewer than 100 requests, a share per request means nothing.
    # wrk runs for a time: what it completed, not the requests asked for.
    return f"{1000 * seconds / completed(record):.2f}" if record["n"] >= 100 else "–"


def others(record: dict[str, Any]) -> str:
    spent = record.get("cpu_seconds_others") or {}
    if record["n"] < 100:
        return "–"
    return ", ".join(
        f"{short} {per_request_ms(spent[name], record)}" for name, short in OTHERS.items() if name in spent
    )


def median_of(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def counted(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs the tables count: a run measured again because the CPU moved (RERUN=k) counts by its re-run, and
    the reference re-measured for that re-run is not a target's run."""
    return [record for record in records if not record.get("superseded") and not record.get("rerun_reference")]


def summarise(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per target and load: with repeats (REPEAT=k), the run with the median throughput, and the
    spread of all k runs beside it. A load that failed in any run shows that failure. A run measured again
    because the CPU moved (RERUN=k) counts by its re-run only, and the reference re-measured for it is not a row."""
    groups: dict[tuple[str, str, int, int, float, str], list[dict[str, Any]]] = {}
    for record in counted(records):
        key = (record["scenario"], record["target"], record["n"], record["c"], record["delay"], record["client"])
        groups.setdefault(key, []).append(record)
    summary = []
    for runs in groups.values():
        failed = [run for run in runs if not run["ok"]]
        if failed:
            summary.append(failed[0] | {"runs": len(runs)} | shared.steadiness(runs))
            continue
        by_rps = sorted(runs, key=lambda run: run["rps"])
        row = by_rps[(len(by_rps) - 1) // 2] | {"runs": len(runs)} | shared.steadiness(runs)
        median = median_of([run["rps"] for run in runs])
        row |= {"rps_median": median, "rps_min": by_rps[0]["rps"], "rps_max": by_rps[-1]["rps"]}
        row["efficiency"] = round(efficiency(median, row["ceiling_rps"]), 3)
        shares = [run["vs_reference"] for run in runs if "vs_reference" in run]
        if shares:
            row["vs_reference"] = round(median_of(shares), 3)
        summary.append(row)
    # Two targets under the same load whose ranges of throughput overlap are not told apart by this run.
    for row in summary:
        if row["ok"] and row["runs"] > 1:
            row["within_spread_of"] = [
                other["target"]
                for other in summary
                if other is not row and other["ok"] and (other["n"], other["c"]) == (row["n"], row["c"])
                and other["rps_min"] <= row["rps_max"] and row["rps_min"] <= other["rps_max"]
            ]  # fmt: skip
    return summary


def columns(records: list[dict[str, Any]]) -> tuple[str, ...]:
    """The table's columns: "CPU steady" only for a set whose runs were probed."""
    return COLUMNS + (STEADY,) if any(shared.probe_verdict(record) is not None for record in records) else COLUMNS


def requests_cell(record: dict[str, Any]) -> str:
    # wrk runs for a duration, not a number of requests: the table says how long, as its command does.
    if record.get("loadgen") == "wrk":
        return f"{wrk.duration_seconds(record['n'], record['c'], record['delay'])} s"
    return str(record["n"])


def throughput_cell(record: dict[str, Any]) -> str:
    if not record["ok"]:
        return f"**FAILED**: {record['problem']}"
    if record.get("runs", 1) > 1:
        median, low, high = (shared.rps(record[key]) for key in ("rps_median", "rps_min", "rps_max"))
        return f"{median} ({low}–{high})"
    return shared.rps(record["rps"])


def row(record: dict[str, Any], steady_column: bool = False) -> list[str]:
    """One table row; with the set's "CPU steady" column, a target that was never probed (it did not start) shows
    a dash there, so every row has as many cells as the header."""
    measured = "rps" in record
    throughput = throughput_cell(record)
    spread = record.get("within_spread_of")

    def value(key: str, form: str = "{}") -> str:
        return form.format(record[key]) if measured and record.get(key) is not None else "–"

    threads = f"{record['threads_idle']} → {record['threads_peak']}" if measured else "–"
    return [
        record["scenario"], record["target"], record["server"], record["mode"], shared.at_once(record),
        f"{requests_cell(record)} / {record['c']} / {record['delay']:g} s", throughput,
        shared.rps(record["ceiling_rps"]),
        value("efficiency", "{:.0%}") if record["ok"] else "–", value("vs_reference", "{:.0%}"),
        "–" if spread is None else ", ".join(spread) or "none", value("p50_ms", "{:.0f}"), value("p99_ms", "{:.0f}"),
        value("failed"), value("non2xx"), threads, value("rss_mb_peak", "{:.0f}"),
        per_request_ms(record["cpu_seconds"], record) if measured else "–", others(record) if measured else "–",
        value("machine_busy", "{:.0%}"),
    ] + ([shared.steady_cell(record)] if steady_column else [])  # fmt: skip


def throughput_chart(records: list[dict[str, Any]], metadata: dict[str, Any], path: Path) -> None:
    # Each target against its own ceiling: loads differ (2000 x 200, 10 x 5), so percentages compare, rps don't.
    # Wide enough that a bar of 90 % holds its label: throughput, spread, and both shares.
    figure, axes = plt.subplots(figsize=(14, 0.5 * len(records) + 1.6))
    labels = [shared.label(record) for record in records][::-1]
    for row, record in enumerate(records[::-1]):
        ceiling = record["ceiling_rps"]
        if record["ok"]:
            color = MODE_COLORS.get(record["mode"], "tab:grey")
            axes.barh(row, 100 * record["efficiency"], color=color)
            if record.get("runs", 1) > 1:  # the spread of the repeats, around the median
                low, high = (100 * record[key] / ceiling for key in ("rps_min", "rps_max"))
                axes.plot([low, high], [row, row], color="black", linewidth=1.5, marker="|", markersize=8)
            share = f", {record['vs_reference']:.2f} of slow_api alone" if record.get("vs_reference") else ""
            text = f" {throughput_cell(record)} of {shared.rps(ceiling)} requests/s: {record['efficiency']:.0%}{share}"
            # Inside a long bar in white; after a short one in black, where white would not show.
            inside = record["efficiency"] >= 0.6
            end = 100 * max(record["efficiency"], record.get("rps_max", 0) / ceiling)  # past the spread's whisker
            axes.text(1 if inside else end + 1, row, text, va="center", fontsize=8,
                      color="white" if inside else "black", fontweight="bold")  # fmt: skip
        else:
            axes.barh(row, 100, color="none", edgecolor="tab:red", hatch="//")
            axes.text(
                1, row, f" FAILED: {record['problem']}", va="center", color="tab:red", fontweight="bold", fontsize=8
            )
        naive = 100 * record["ceiling_naive_rps"] / ceiling
        axes.plot([naive] * 2, [row - 0.4, row + 0.4], color="grey", linestyle=":")
    axes.axvline(100, color="black", linewidth=2)
    axes.set_yticks(range(len(labels)), labels, fontsize=8)
    naive_most = max(100 * record["ceiling_naive_rps"] / record["ceiling_rps"] for record in records)
    axes.set_xlim(0, max(125, naive_most + 10))
    tool = records[0].get("loadgen", "ab")
    axes.set_xlabel(
        f"% of {tool}'s ceiling (orange: threads, blue: gevent, green: asyncio; dotted: the naive c / delay)"
    )
    axes.set_title(f"Throughput against the best {tool} can measure for the same load")
    shared.save(figure, metadata, path)


def latency_chart(records: list[dict[str, Any]], metadata: dict[str, Any], path: Path) -> None:
    measured = [record for record in records if "p99_ms" in record]
    figure, axes = plt.subplots(figsize=(10, 0.5 * len(measured) + 1.6))
    rows = range(len(measured))
    labels = [shared.label(record) + ("" if record["ok"] else " (FAILED)") for record in measured][::-1]
    axes.barh([r + 0.2 for r in rows], [record["p50_ms"] for record in measured[::-1]], height=0.4, label="P50")
    axes.barh([r - 0.2 for r in rows], [record["p99_ms"] for record in measured[::-1]], height=0.4, label="P99")
    for delay in sorted({record["delay"] for record in measured}):
        axes.axvline(delay * 1000, color="black", linestyle="--", linewidth=1)
    axes.set_yticks(list(rows), labels, fontsize=8)
    for tick, record in zip(axes.get_yticklabels(), measured[::-1], strict=True):
        tick.set_color("black" if record["ok"] else "tab:red")
    axes.set_xlabel("latency, ms (dashed: the delay every request waits)")
    axes.set_title("Latency per target")
    axes.legend(loc="lower right")
    shared.save(figure, metadata, path)


def sweep_chart(records: list[dict[str, Any]], metadata: dict[str, Any], path: Path) -> None:
    figure, axes = plt.subplots(figsize=(10, 6))
    for target in dict.fromkeys(record["target"] for record in records):
        points = [record for record in records if record["target"] == target]
        style = "--" if points[0]["mode"] == "sync" else "-"  # dashed: the servers that saturate
        rps = [record["rps"] if record["ok"] else float("nan") for record in points]
        axes.plot(
            [record["c"] for record in points], rps, style, marker="o", label=f"{target} ({shared.at_once(points[0])})"
        )
        if failed := [record["c"] for record in points if not record["ok"]]:
            # A failed load has no throughput to plot: a red cross at the foot of the chart marks its place.
            axes.plot(failed, [0.02] * len(failed), "x", color="tab:red", markersize=10, markeredgewidth=2,
                      transform=axes.get_xaxis_transform(), label=f"{target}: FAILED", clip_on=False)  # fmt: skip
    ceiling = sorted({(record["c"], record["n"], record["delay"]) for record in records})
    tool = LOADGENS[records[0].get("loadgen", "ab")]
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


def overload_rows(records: list[dict[str, Any]]) -> list[list[str]]:
    rows = []
    for target in dict.fromkeys(record["target"] for record in records):
        levels = [record for record in records if record["target"] == target]
        passed = [record["c"] for record in levels if record["ok"]]
        failed = next((record for record in levels if not record["ok"]), None)
        survived = {None: "–", True: "yes", False: "**no**"}[failed.get("survived") if failed else None]
        cells = [
            target, shared.at_once(levels[0]), str(max(passed)) if passed else "none",
            str(failed["c"]) if failed else f"none up to {levels[-1]['c']}",
            failed["problem"] if failed else "–", survived,
        ]  # fmt: skip
        rows.append(cells)
    return rows


def image_lines(metadata: dict[str, Any]) -> list[str]:
    images = metadata.get("images")
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


def tools_of(records: list[dict[str, Any]]) -> list[str]:
    # Result sets from before LOADGEN= have no "loadgen": they are ab's.
    return list(dict.fromkeys(record.get("loadgen", "ab") for record in records))


def ceiling_notes(records: list[dict[str, Any]]) -> str:
    return " ".join(LOADGENS[name].ceiling_note for name in tools_of(records))


def title(metadata: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """The set's heading: what was loaded, with which tool, and how many times."""
    tools = " and ".join(TOOL_WORDS.get(name, name) for name in tools_of(records))
    repeat = metadata.get("repeat") or 1
    runs = f", every target {repeat} times, interleaved (the median run, min–max beside it)" if repeat > 1 else ""
    return f"Benchmark results: {tools}{runs}"


def charts_for(mode: str) -> dict[str, Callable[[list[dict[str, Any]], dict[str, Any], Path], None]]:
    if mode == "bench":
        return {"throughput.png": throughput_chart, "latency.png": latency_chart}
    return {"sweep.png": sweep_chart}


def verdict(mode: str, records: list[dict[str, Any]]) -> str:
    if mode == "overload":  # failures are what overload looks for; the summary says where each server's came
        return "Each target given more and more clients, one request each, until a request failed."
    not_ok = [record["target"] for record in records if not record["ok"]]
    said = f"**Not OK: {', '.join(not_ok)}**" if not_ok else "Every target verified, no failed or non-2xx request."
    probed = [record for record in counted(records) if shared.probe_verdict(record) is not None]
    unsteady = [record for record in probed if not shared.probe_verdict(record)]
    if unsteady:
        said += (
            f" {len(unsteady)} of {len(probed)} measurements ran while the CPU changed speed ({STEADY}: no): read"
            " their figures with more doubt than the rest."
        )
    return said


def roles_line(metadata: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """Where the server, the load generator and the database ran: engines, cores, one machine or several; and where
    the servers' processes were read, when not on the harness's machine."""
    roles = metadata.get("roles")
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


# What each numeric column sorts by in index.html: the number behind the cell, never its text ("4 x 50 threads",
# "api 0.20, ab 0.10"). A column not named here sorts as text.
SORT_KEYS: dict[str, Callable[[dict[str, Any]], float | None]] = {
    "at once": shared.holds_at_once,
    "n / c / delay": lambda record: record["c"],
    "requests/s": lambda record: record.get("rps_median", record.get("rps")),
    "ceiling": lambda record: record["ceiling_rps"],
    "efficiency": lambda record: record.get("efficiency"),
    "vs reference": lambda record: record.get("vs_reference"),
    "P50 ms": lambda record: record.get("p50_ms"),
    "P99 ms": lambda record: record.get("p99_ms"),
    "failed": lambda record: record.get("failed"),
    "non-2xx": lambda record: record.get("non2xx"),
    "OS threads idle → peak": lambda record: record.get("threads_peak"),
    "peak RSS MB": lambda record: record.get("rss_mb_peak"),
    "app CPU ms / request": lambda record: 1000 * record["cpu_seconds"] / completed(record),
    "other CPU ms / request": lambda record: 1000 * others_seconds(record) / completed(record),
    "machine busy": lambda record: record.get("machine_busy"),
    STEADY: lambda record: record.get("cpu_moved"),
}


def completed(record: dict[str, Any]) -> int:
    # wrk runs for a time: per request means per request it completed, as in results.md.
    return record.get("complete") or record["n"]


def others_seconds(record: dict[str, Any]) -> float:
    return sum(seconds for name, seconds in (record.get("cpu_seconds_others") or {}).items() if name in OTHERS)


def render(out: Path, document: Document) -> None:
    metadata, records, mode = document.metadata, document.results, document.mode
    rows = summarise(records)  # with repeats, one row per target and load
    header = columns(records)
    table_rows = [row(record, STEADY in header) for record in rows]  # the same cells in results.md and index.html
    charts = charts_for(mode)
    for chart, draw in charts.items():
        draw(rows, metadata, out / chart)
    summary = [shared.markdown_table(OVERLOAD_COLUMNS, overload_rows(records)), ""] if mode == "overload" else []
    lines = [
        *shared.head(title(metadata, records), metadata, shared.took(metadata)),
        "",
        *([roles_line(metadata, records), ""] if metadata.get("roles") else []),
        verdict(mode, records),
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
        verdict=html_page.inline(verdict(mode, records))
        + (f"<br>{html.escape(roles_line(metadata, records))}" if metadata.get("roles") else ""),
        summary=overload,
        table=html_page.table(header, table_rows, rows, SORT_KEYS),
        note=html.escape(ceiling_notes(records)),
        charts="\n".join(html_page.chart(out / chart) for chart in charts if (out / chart).exists()),
        commands=html_page.commands(records),
    )  # fmt: skip
