"""A `make bookstore` set rendered from OUT/results.json alone: results.md (each target and load beside the database
alone), two charts, and index.html through the harness's page (bench/render/html_page.py)."""

from __future__ import annotations

import html
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from bench.loadgen.pgbench import PROTOCOL
from bench.render import html_page, shared
from bench.render.document import Document

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


def method(records: list[dict[str, Any]]) -> str:
    text = METHOD_ROUNDS if any("repeat" in record for record in records) else METHOD
    return text + (" " + NET_OF_IDLE if any("pg_idle_cpu_ms_per_s" in record for record in records) else "")


def _number(value: float | None, form: str = "{:.2f}") -> str:
    return "–" if value is None else form.format(value)


def _rps(value: float | None) -> str:
    return "–" if value is None else shared.rps(value)


def _errors(record: dict[str, Any]) -> str:
    if "rps" not in record:
        return "–"
    errors = record["failed"] + record["non2xx"]
    return f"{errors} ({record['status_503']})"


# With repeats, a row is its runs' median: these figures as their medians, throughput and share with their range.
MEDIANS = (
    "rps", "vs_database", "pgbench_tps", "p50_ms", "p99_ms", "app_cpu_ms_per_request", "pg_cpu_ms_per_request",
    "pgbench_pg_cpu_ms_per_transaction", "pg_cpu_ms_per_transaction", "pgbench_at_app_rate_pg_cpu_ms_per_transaction",
    "db_via_cpu_ms_per_request",
)  # fmt: skip


def summarise(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per load, number of clients and target: a single run as it is; with repeats the run of median
    throughput, its figures replaced by the medians of all runs, with the range of throughput and share and how
    many runs kept the CPU steady. A load that failed in any run shows that failure."""
    groups: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for record in ordered(records):
        groups.setdefault((record["load"], record["clients"], record["target"]), []).append(record)
    clients_of: dict[str, set[int]] = {}
    for load, clients, _ in groups:
        clients_of.setdefault(load, set()).add(clients)
    rows = []
    for (load, clients, _), runs in groups.items():
        panel = load if len(clients_of[load]) == 1 else f"{load}, {clients} clients"
        failed = [run for run in runs if not run["ok"]]
        if len(runs) == 1 or failed:
            rows.append((failed or runs)[0] | {"runs": len(runs), "panel": panel} | shared.steadiness(runs))
            continue
        by_rps = sorted(runs, key=lambda run: run["rps"])
        row = by_rps[(len(runs) - 1) // 2] | {"runs": len(runs), "panel": panel} | shared.steadiness(runs)
        for key in MEDIANS:
            values = [run[key] for run in runs if run.get(key) is not None]
            if values:
                row[key] = round(statistics.median(values), 3)
        shares = sorted(run["vs_database"] for run in runs if run.get("vs_database") is not None)
        row |= {"rps_min": by_rps[0]["rps"], "rps_max": by_rps[-1]["rps"]}
        if shares:
            row |= {"share_min": shares[0], "share_max": shares[-1]}
        rows.append(row)
    return rows


def columns(rows: list[dict[str, Any]]) -> tuple[str, ...]:
    return COLUMNS + (STEADY,) if any("probed_runs" in row for row in rows) else COLUMNS


def _row(record: dict[str, Any], steady_column: bool = False) -> list[str]:
    head = [record["load"], record["target"], record["server"], record["mode"],
            f"{record['clients']} → {record['db_clients']}"]  # fmt: skip
    tail = [shared.steady_cell(record)] if steady_column else []
    if "rps" not in record:
        return head + [f"**FAILED**: {record['problem']}"] + ["–"] * (len(COLUMNS) - len(head) - 1) + tail
    throughput = _rps(record["rps"])
    share = _number(record.get("vs_database"), "{:.0%}")
    if record.get("runs", 1) > 1 and record["ok"]:
        throughput += f" ({_rps(record['rps_min'])}–{_rps(record['rps_max'])})"
        if "share_min" in record:
            share += f" ({record['share_min']:.0%}–{record['share_max']:.0%})"
    if not record["ok"]:
        throughput = f"**FAILED**: {record['problem']} ({_rps(record['rps'])})"
    return head + [
        throughput, _rps(record.get("pgbench_tps")), share,
        _number(record["p50_ms"], "{:.0f}"), _number(record["p99_ms"], "{:.0f}"),
        _number(record["app_cpu_ms_per_request"]), _number(record["pg_cpu_ms_per_request"]),
        _number(record.get("pgbench_pg_cpu_ms_per_transaction")),
        f"{record['pg_busy_peak']} / {record['pg_sessions_peak']}", _errors(record),
    ] + tail  # fmt: skip


def _detail_row(record: dict[str, Any]) -> list[str]:
    head = [record["load"], record["target"]]
    if "rps" not in record:
        return head + ["–"] * (len(DETAIL_COLUMNS) - len(head))
    writes = (
        f"{record['writes_acknowledged']} / {record['writes_found']} / {record['writes_lost']}"
        if "writes_found" in record
        else "–"
    )
    host = ((record.get("cpu_probe") or {}).get("seconds") or {}).get("host") or {}
    before, after = (_number(host.get(when), "{:.3f}") for when in ("before", "after"))
    probe = f"{before} → {after}"
    statements = record.get("pg_statements_per_request")
    kinds = ", ".join(f"{kind} {calls:g}" for kind, calls in statements.items()) if statements else "–"
    app, alone = record.get("pg_cpu_ms_per_transaction"), record.get("pgbench_pg_cpu_ms_per_transaction")
    per_transaction = f"{_number(app)} → {_number(alone)}"
    return head + [
        kinds, per_transaction,
        _number(record["rss_mb_peak"], "{:.0f}"), _number(record["pg_memory_mb_peak"], "{:.0f}"),
        _number(record["threads_peak"], "{:.0f}"), writes, probe, _number(record["machine_busy"], "{:.0%}"),
    ]  # fmt: skip


def ordered(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """By load (in the run's order), then clients, then target: each load's targets next to each other."""
    loads = list(dict.fromkeys(record["load"] for record in records))
    return sorted(records, key=lambda record: (loads.index(record["load"]), record["clients"]))


def verdict(rows: list[dict[str, Any]]) -> str:
    failed = [f"{row['target']} / {row['panel']}" for row in rows if not row["ok"]]
    if failed:
        return f"**Not OK: {', '.join(failed)}**"
    refused = sum(1 for row in rows if row.get("status_503"))
    if refused:  # past a pool, a 503 is the app's answer by design: counted, shown, not a failure
        return (
            "Every target and load verified; no failed or lost request; pgbench had no failed transaction;"
            f" {refused} of {len(rows)} rows had requests refused with the pool's 503."
        )
    return "Every target and load verified; no failed, non-2xx or lost request; pgbench had no failed transaction."


def _colors(targets: list[str]) -> dict[str, str]:
    palette = matplotlib.color_sequences["tab10"]
    return {target: matplotlib.colors.to_hex(palette[i % len(palette)]) for i, target in enumerate(targets)}


def _panels(records: list[dict[str, Any]], width: float) -> tuple[plt.Figure, list[Axes], list[str], list[str]]:
    loads = list(dict.fromkeys(record["panel"] for record in records))
    targets = list(dict.fromkeys(record["target"] for record in records))
    figure, axes = plt.subplots(len(loads), 1, figsize=(width, 0.42 * len(targets) * len(loads) + 1.2 * len(loads)))
    return figure, list(axes) if len(loads) > 1 else [axes], loads, targets


def _share_chart(records: list[dict[str, Any]], metadata: dict[str, Any], path: Path) -> None:
    """Per load, each target's requests per second as a share of the database alone (1 = pgbench's rate)."""
    figure, panels, loads, targets = _panels(records, 11)
    colors = _colors(targets)
    for axes, load in zip(panels, loads, strict=True):
        mine = {record["target"]: record for record in records if record["panel"] == load}
        for row, target in enumerate(targets[::-1]):
            record = mine.get(target)
            if record is None:
                continue
            if record.get("vs_database") is None:
                axes.text(0.01, row, f" {record['problem']}"[:110], va="center", color="tab:red", fontsize=7)
                continue
            share = record["vs_database"]
            axes.barh(row, share, color=colors[target], hatch="" if record["ok"] else "//")
            text = f" {_rps(record['rps'])} of {_rps(record['pgbench_tps'])} requests/s: {share:.2f}"
            axes.text(share, row, text + ("" if record["ok"] else " (NOT OK)"), va="center", fontsize=7)
        axes.axvline(1, color="black", linewidth=1.5)
        axes.set_yticks(range(len(targets)), targets[::-1], fontsize=8)
        request = next(record["request"] for record in records if record["panel"] == load)
        axes.set_title(f"{load}: {request}", fontsize=9, loc="left")
        axes.set_xlim(0, max(1.3, *(1.25 * (r.get("vs_database") or 0) for r in records)))
    panels[-1].set_xlabel("requests per second as a share of the database alone (pgbench, same SQL, same clients)")
    figure.suptitle("The bookstore served each way, against what Postgres alone does with the same SQL", fontsize=10)
    shared.save(figure, metadata, path)


def _cpu_chart(records: list[dict[str, Any]], metadata: dict[str, Any], path: Path) -> None:
    """Where each request's time goes: the app's CPU and Postgres's, per request; a tick for Postgres alone."""
    figure, panels, loads, targets = _panels(records, 11)
    for axes, load in zip(panels, loads, strict=True):
        mine = {record["target"]: record for record in records if record["panel"] == load}
        for row, target in enumerate(targets[::-1]):
            record = mine.get(target)
            if record is None or None in (record.get("pg_cpu_ms_per_request"), record.get("app_cpu_ms_per_request")):
                continue
            app, database = record["app_cpu_ms_per_request"], record["pg_cpu_ms_per_request"]
            axes.barh(row, app, color="tab:blue", label="app" if row == 0 else None)
            axes.barh(row, database, left=app, color="tab:purple", label="Postgres" if row == 0 else None)
            alone = record.get("pgbench_pg_cpu_ms_per_transaction")
            if alone is not None:
                axes.plot([app + alone] * 2, [row - 0.4, row + 0.4], color="black", linewidth=2,
                          label="Postgres alone (pgbench)" if row == 0 else None)  # fmt: skip
            axes.text(app + database, row, f" app {app:.2f} + Postgres {database:.2f} ms", va="center", fontsize=7)
    xlabel, title = (
        "CPU milliseconds per request (all cores)",
        "Where the time goes: CPU per request in the app and in Postgres",
    )
    _finish(figure, panels, targets, loads, (xlabel, title), metadata, path)


def _finish(
    figure: plt.Figure,
    panels: list[Axes],
    targets: list[str],
    headings: list[str],
    words: tuple[str, str],
    metadata: dict[str, Any],
    path: Path,
    widen: float = 1.35,
) -> None:
    """Each panel's targets down its side and its heading, room for the bars' labels; the legend, the x axis's
    label and the figure's title (`words`); saved."""
    for axes, heading in zip(panels, headings, strict=True):
        axes.set_yticks(range(len(targets)), targets[::-1], fontsize=8)
        axes.set_title(heading, fontsize=9, loc="left")
        axes.set_xlim(0, axes.get_xlim()[1] * widen)
    panels[0].legend(fontsize=7, loc="lower right")
    panels[-1].set_xlabel(words[0])
    figure.suptitle(words[1], fontsize=10)
    shared.save(figure, metadata, path)


def _database_line(metadata: dict[str, Any]) -> str:
    facts = metadata.get("database") or {}
    if not facts:
        return ""
    return (
        f"Data: SCALE {metadata['scale']}: {facts['authors']} authors, {facts['books']} books, database"
        f" {facts['size']}. {metadata['seconds']} s of wrk and {metadata['seconds']} s of pgbench per measurement."
        + _rounds(metadata)
        + reads_line(metadata)
    )


def _rounds(metadata: dict[str, Any]) -> str:
    repeat = metadata.get("repeat") or 1
    if repeat == 1:
        return ""
    return (
        f" Every load {repeat} times, in rounds (each target in turn, then the database alone): a row is the median"
        " run, with the range of its throughput and share."
    )


def reads_line(metadata: dict[str, Any]) -> str:
    """How the app's reads ended, and so how pgbench sent the same SQL (sets made before the setting: rollback)."""
    endings = metadata.get("reads_end_with") or []
    said = [f"with a {ending.upper()} (pgbench --protocol {PROTOCOL[ending]})" for ending in endings]
    if not said:
        return ""
    rungs = " The ladder's rungs from 1 on end theirs with a COMMIT (pgbench --protocol prepared)."
    return f" The app's reads ended {' or, where a target is named READS_END_WITH=commit, '.join(said)}." + (
        rungs if metadata.get("ladder") else ""
    )


def _requests(record: dict[str, Any]) -> int:
    return max(1, sum((record.get("statuses") or {}).values()))


SORT_KEYS: dict[str, Callable[[dict[str, Any]], float | None]] = {
    "clients → database": lambda record: record["clients"],
    "requests/s": lambda record: record.get("rps"),
    "database alone, tps": lambda record: record.get("pgbench_tps"),
    "share of the database": lambda record: record.get("vs_database"),
    "P50 ms": lambda record: record.get("p50_ms"),
    "P99 ms": lambda record: record.get("p99_ms"),
    "app CPU ms / request": lambda record: record.get("app_cpu_ms_per_request"),
    "Postgres CPU ms / request": lambda record: record.get("pg_cpu_ms_per_request"),
    "Postgres CPU ms / tx alone": lambda record: record.get("pgbench_pg_cpu_ms_per_transaction"),
    "DB connections busy / open, peak": lambda record: record.get("pg_busy_peak"),
    "errors (503s)": lambda record: (record["failed"] + record["non2xx"]) if "failed" in record else None,
    "app RSS MB, peak": lambda record: record.get("rss_mb_peak"),
    "Postgres memory MB, peak": lambda record: record.get("pg_memory_mb_peak"),
    "app threads, peak": lambda record: record.get("threads_peak"),
    "Postgres statements / request": lambda record: sum((record.get("pg_statements_per_request") or {}).values()),
    "Postgres CPU ms / tx, app → alone": lambda record: record.get("pg_cpu_ms_per_transaction"),
    "machine busy": lambda record: record.get("machine_busy"),
    STEADY: lambda record: record.get("steady_runs"),
}


def _commands(records: list[dict[str, Any]]) -> str:
    items = ""
    for record in records:
        label = html.escape(f"{record['target']} / {record['load']}")
        for key in ("command", "pgbench_command"):
            if record.get(key):
                items += f"<li>{label}: <code>{html.escape(record[key])}</code></li>"
        scripts = "\n".join(f"-- {name}\n{text}" for name, text in (record.get("pgbench_scripts") or {}).items())
        if scripts:
            items += f"<li>{label}, pgbench's scripts:<pre>{html.escape(scripts)}</pre></li>"
    return f"<ol>{items}</ol>"


def _sweep_chart(rows: list[dict[str, Any]], metadata: dict[str, Any], path: Path) -> None:
    """Per load swept over clients: each target's throughput (median, and the range of the repeats) and P99, with
    the database alone's rate at the clients it saw."""
    swept = [load for load in dict.fromkeys(row["load"] for row in rows)
             if len({row["clients"] for row in rows if row["load"] == load}) > 1]  # fmt: skip
    targets = list(dict.fromkeys(row["target"] for row in rows))
    colors = _colors(targets)
    figure, grid = plt.subplots(2, len(swept), figsize=(5.5 * len(swept), 7), squeeze=False)
    for column, load in enumerate(swept):
        throughput, latency = grid[0][column], grid[1][column]
        mine = [row for row in rows if row["load"] == load and row.get("rps") is not None]
        for target in targets:
            points = sorted((row for row in mine if row["target"] == target), key=lambda row: row["clients"])
            if not points:
                continue
            clients = [row["clients"] for row in points]
            rates = [row["rps"] for row in points]
            spread = [[row["rps"] - row.get("rps_min", row["rps"]) for row in points],
                      [row.get("rps_max", row["rps"]) - row["rps"] for row in points]]  # fmt: skip
            throughput.errorbar(clients, rates, yerr=spread, marker="o", color=colors[target], label=target, capsize=3)
            latency.plot(clients, [row["p99_ms"] for row in points], marker="o", color=colors[target])
        alone = sorted({(row["clients"], row["pgbench_tps"]) for row in mine if row.get("pgbench_tps")})
        if alone:
            throughput.plot(*zip(*alone, strict=True), linestyle="--", color="black", label="database alone")
        for axes in (throughput, latency):
            axes.set_xscale("log", base=2)
            axes.set_xlabel("clients")
        throughput.set_title(f"{load}: requests per second", fontsize=9, loc="left")
        latency.set_title(f"{load}: P99 ms", fontsize=9, loc="left")
        latency.set_yscale("log")
    grid[0][0].legend(fontsize=7)
    figure.suptitle("Where each way queues: throughput and P99 as the clients grow", fontsize=10)
    shared.save(figure, metadata, path)


def charts(rows: list[dict[str, Any]], records: list[dict[str, Any]]) -> tuple[str, ...]:
    swept = any(row["panel"] != row["load"] for row in rows)
    profiled = any("profile" in record for record in records)
    return CHARTS + ((SWEEP_CHART,) if swept else ()) + ((PROFILE_CHART,) if profiled else ())


def _profiled(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [record for record in records if record.get("profile") and record.get("app_cpu_ms_per_request")]


PROFILE_HEADING = "Where the app's CPU per request goes (py-spy, in each load's first round)"


def profile_categories(records: list[dict[str, Any]]) -> list[str]:
    """The profile's categories in the order the records hold them (the measurement's own order)."""
    return list(dict.fromkeys(name for record in records for name in record["profile"]))


def _profile_table(records: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Per target and load, the app's CPU per request split by where py-spy found it: ms (share)."""
    profiled = _profiled(records)
    shown = profile_categories(profiled)
    rows = []
    for record in profiled:
        total = record["app_cpu_ms_per_request"]
        cells = [
            f"{total * record['profile'].get(name, 0):.2f} ({record['profile'].get(name, 0):.0%})" for name in shown
        ]
        rows.append([record["load"], record["target"], f"{record['clients']}", f"{total:.2f}", *cells,
                     str(record["profile_samples"])])  # fmt: skip
    return ["load", "target", "clients", "app CPU ms / request", *shown, "samples"], rows


def _profile_chart(records: list[dict[str, Any]], metadata: dict[str, Any], path: Path) -> None:
    """Per load, each target's CPU per request as stacked bars: where py-spy found the server's processes."""
    profiled = [record | {"panel": record["load"]} for record in _profiled(records)]
    figure, panels, loads, targets = _panels(profiled, 11)
    palette = matplotlib.color_sequences["tab10"]
    categories = profile_categories(profiled)
    colors = {name: palette[i % len(palette)] for i, name in enumerate(categories)}
    for axes, load in zip(panels, loads, strict=True):
        mine = {record["target"]: record for record in profiled if record["load"] == load}
        for row, target in enumerate(targets[::-1]):
            record = mine.get(target)
            if record is None:
                continue
            left = 0.0
            for name in categories:
                width = record["app_cpu_ms_per_request"] * record["profile"].get(name, 0)
                if width:
                    axes.barh(
                        row,
                        width,
                        left=left,
                        color=colors[name],
                        label=name if name not in axes.get_legend_handles_labels()[1] else None,
                    )
                    left += width
            axes.text(left, row, f" {left:.2f} ms", va="center", fontsize=7)
    words = ("the app's CPU milliseconds per request, by where py-spy sampled it",
             "Where a request's CPU goes in the app (py-spy, samples of threads holding the GIL)")  # fmt: skip
    _finish(figure, panels, targets, loads, words, metadata, path, widen=1.15)


LADDER_HEADING = "The ladder: each rung one change more than the one above it"
LADDER_COLUMNS = (
    "rung", "target", "load", "requests/s", "× the rung above", "share of the database", "P99 ms",
    "app CPU ms / request", "pgbouncer CPU ms / request", "Postgres CPU ms / request", "Postgres CPU ms / tx alone",
    "Postgres CPU ms / tx alone at the app's rate", "Postgres statements / request",
)  # fmt: skip


LADDER_FIGURES = (
    "p99_ms", "app_cpu_ms_per_request", "db_via_cpu_ms_per_request", "pg_cpu_ms_per_request",
    "pgbench_pg_cpu_ms_per_transaction", "pgbench_at_app_rate_pg_cpu_ms_per_transaction",
)  # fmt: skip


def _ladder_table(rows: list[dict[str, Any]]) -> list[list[str]]:
    """The rungs in order, per load and clients: each row's median throughput over the rung above's."""
    table = []
    for panel in dict.fromkeys(row["panel"] for row in rows):
        rungs = sorted((row for row in rows if row["panel"] == panel and row.get("rung") is not None),
                       key=lambda row: row["rung"])  # fmt: skip
        above: dict[str, Any] | None = None
        for row in rungs:
            gain = row["rps"] / above["rps"] if above and row.get("rps") and above.get("rps") else None
            statements = sum((row.get("pg_statements_per_request") or {}).values()) or None
            figures = [_number(row.get(key), "{:.0f}" if key == "p99_ms" else "{:.2f}") for key in LADDER_FIGURES]
            head = [str(row["rung"]), row["target"], panel, _row(row)[5], _number(gain, "×{:.2f}"), _row(row)[7]]
            table.append([*head, *figures, _number(statements, "{:.1f}")])
            above = row
    return table


def _warm_line(records: list[dict[str, Any]]) -> str:
    """How long each target's first warm-up took until its CPU per request stopped falling."""
    warmed = [f"{r['target']} {r['warm_up_s']} s" for r in records if r.get("warm_up_s") is not None]
    return f" Warm-up until the CPU per request stopped falling: {', '.join(warmed)}." if warmed else ""


def render(out: Path, document: Document) -> None:
    metadata, records = document.metadata, ordered(document.results)
    rows = summarise(records)
    steady_column = STEADY in columns(rows)
    _share_chart(rows, metadata, out / CHARTS[0])
    _cpu_chart(rows, metadata, out / CHARTS[1])
    drawn = charts(rows, records)
    if SWEEP_CHART in drawn:
        _sweep_chart(rows, metadata, out / SWEEP_CHART)
    profiles, profile_html = [], ""
    if PROFILE_CHART in drawn:
        _profile_chart(records, metadata, out / PROFILE_CHART)
        header, profile_rows = _profile_table(records)
        profiles = [PROFILE_HEADING + ":", "", shared.markdown_table(header, profile_rows), ""]
        profile_html = f"<h2>{PROFILE_HEADING}</h2>" + html_page.table(tuple(header), profile_rows)
    about = _database_line(metadata) + _warm_line(records) + shared.read_through_the_engine(records)
    ladder = _ladder_table(rows)
    if ladder:
        profiles = [LADDER_HEADING + ":", "", shared.markdown_table(LADDER_COLUMNS, ladder), "", *profiles]
        profile_html = f"<h2>{LADDER_HEADING}</h2>" + html_page.table(LADDER_COLUMNS, ladder) + profile_html
    lines = [
        *shared.head("The bookstore against the database alone", metadata, shared.took(metadata)),
        "",
        about,
        "",
        verdict(rows),
        "",
        shared.markdown_table(columns(rows), [_row(row, steady_column) for row in rows]),
        "",
        shared.markdown_table(DETAIL_COLUMNS, [_detail_row(row) for row in rows]),
        "",
        *profiles,
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
        verdict=html_page.inline(verdict(rows)) + "<br>" + html.escape(about),
        table=html_page.table(columns(rows), [_row(r, steady_column) for r in rows], rows, SORT_KEYS)
        + "<h2>Memory, writes and the machine</h2>"
        + html_page.table(DETAIL_COLUMNS, [_detail_row(r) for r in rows], rows, SORT_KEYS)
        + profile_html,
        note=html.escape(method(records)),
        charts="\n".join(html_page.chart(out / chart) for chart in drawn),
        commands=_commands(records),
    )  # fmt: skip
