"""A `make bookstore` set rendered from OUT/results.json alone: results.md (each target and load beside the database
alone), two charts, and index.html through the harness's page (bench/render/html_page.py)."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt

from bench.loadgen.pgbench import PROTOCOL
from bench.render import html_page, shared
from bench.render.document import Document

COLUMNS = (
    "load", "target", "server", "mode", "clients → database", "requests/s", "database alone, tps",
    "share of the database", "P50 ms", "P99 ms", "app CPU ms / request", "Postgres CPU ms / request",
    "Postgres CPU ms / tx alone", "DB connections busy / open, peak", "errors (503s)",
)  # fmt: skip
DETAIL_COLUMNS = (
    "load", "target", "app RSS MB, peak", "Postgres memory MB, peak", "app threads, peak", "writes 201 / found / lost",
    "CPU probe s, before → after", "machine busy",
)  # fmt: skip
CHARTS = ("bookstore_share.png", "bookstore_cpu.png")
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


def _number(value: float | None, form: str = "{:.2f}") -> str:
    return "–" if value is None else form.format(value)


def _rps(value: float | None) -> str:
    return "–" if value is None else shared.rps(value)


def _errors(record: dict) -> str:
    if "rps" not in record:
        return "–"
    errors = record["failed"] + record["non2xx"]
    return f"{errors} ({record['status_503']})"


def _row(record: dict) -> list[str]:
    head = [record["load"], record["target"], record["server"], record["mode"],
            f"{record['clients']} → {record['db_clients']}"]  # fmt: skip
    if "rps" not in record:
        return head + [f"**FAILED**: {record['problem']}"] + ["–"] * (len(COLUMNS) - len(head) - 1)
    throughput = _rps(record["rps"]) if record["ok"] else f"**FAILED**: {record['problem']} ({_rps(record['rps'])})"
    share = record.get("vs_database")
    return head + [
        throughput, _rps(record.get("pgbench_tps")), _number(share, "{:.0%}"),
        _number(record["p50_ms"], "{:.0f}"), _number(record["p99_ms"], "{:.0f}"),
        _number(record["app_cpu_ms_per_request"]), _number(record["pg_cpu_ms_per_request"]),
        _number(record.get("pgbench_pg_cpu_ms_per_transaction")),
        f"{record['pg_busy_peak']} / {record['pg_sessions_peak']}", _errors(record),
    ]  # fmt: skip


def _detail_row(record: dict) -> list[str]:
    head = [record["load"], record["target"]]
    if "rps" not in record:
        return head + ["–"] * (len(DETAIL_COLUMNS) - len(head))
    writes = (
        f"{record['writes_acknowledged']} / {record['writes_found']} / {record['writes_lost']}"
        if "writes_found" in record
        else "–"
    )
    before, after = (_number(record.get(f"cpu_probe_s_{when}"), "{:.3f}") for when in ("before", "after"))
    probe = f"{before} → {after}"
    return head + [
        _number(record["app_rss_mb_peak"], "{:.0f}"), _number(record["pg_memory_mb_peak"], "{:.0f}"),
        _number(record["app_threads_peak"], "{:.0f}"), writes, probe, _number(record["machine_busy"], "{:.0%}"),
    ]  # fmt: skip


def ordered(records: list[dict]) -> list[dict]:
    """By load (in the run's order), then target: each load's targets next to each other."""
    loads = list(dict.fromkeys(record["load"] for record in records))
    return sorted(records, key=lambda record: loads.index(record["load"]))


def verdict(records: list[dict]) -> str:
    failed = [f"{record['target']} / {record['load']}" for record in records if not record["ok"]]
    if failed:
        return f"**Not OK: {', '.join(failed)}**"
    return "Every target and load verified; no failed, non-2xx or lost request; pgbench had no failed transaction."


def _colors(targets: list[str]) -> dict[str, str]:
    palette = plt.get_cmap("tab10").colors
    return {target: matplotlib.colors.to_hex(palette[i % len(palette)]) for i, target in enumerate(targets)}


def _panels(records: list[dict], width: float) -> tuple[plt.Figure, list, list[str], list[str]]:
    loads = list(dict.fromkeys(record["load"] for record in records))
    targets = list(dict.fromkeys(record["target"] for record in records))
    figure, axes = plt.subplots(len(loads), 1, figsize=(width, 0.42 * len(targets) * len(loads) + 1.2 * len(loads)))
    return figure, list(axes) if len(loads) > 1 else [axes], loads, targets


def _share_chart(records: list[dict], metadata: dict, path: Path) -> None:
    """Per load, each target's requests per second as a share of the database alone (1 = pgbench's rate)."""
    figure, panels, loads, targets = _panels(records, 11)
    colors = _colors(targets)
    for axes, load in zip(panels, loads, strict=True):
        mine = {record["target"]: record for record in records if record["load"] == load}
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
        request = next(record["request"] for record in records if record["load"] == load)
        axes.set_title(f"{load}: {request}", fontsize=9, loc="left")
        axes.set_xlim(0, max(1.3, *(1.25 * (r.get("vs_database") or 0) for r in records)))
    panels[-1].set_xlabel("requests per second as a share of the database alone (pgbench, same SQL, same clients)")
    figure.suptitle("The bookstore served each way, against what Postgres alone does with the same SQL", fontsize=10)
    shared.save(figure, metadata, path)


def _cpu_chart(records: list[dict], metadata: dict, path: Path) -> None:
    """Where each request's time goes: the app's CPU and Postgres's, per request; a tick for Postgres alone."""
    figure, panels, loads, targets = _panels(records, 11)
    for axes, load in zip(panels, loads, strict=True):
        mine = {record["target"]: record for record in records if record["load"] == load}
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
        axes.set_yticks(range(len(targets)), targets[::-1], fontsize=8)
        axes.set_title(load, fontsize=9, loc="left")
        axes.set_xlim(0, axes.get_xlim()[1] * 1.35)
    panels[0].legend(fontsize=7, loc="lower right")
    panels[-1].set_xlabel("CPU milliseconds per request (all cores)")
    figure.suptitle("Where the time goes: CPU per request in the app and in Postgres", fontsize=10)
    shared.save(figure, metadata, path)


def _database_line(metadata: dict) -> str:
    facts = metadata.get("database") or {}
    if not facts:
        return ""
    return (
        f"Data: SCALE {metadata['scale']}: {facts['authors']} authors, {facts['books']} books, database"
        f" {facts['size']}. {metadata['seconds']} s of wrk and {metadata['seconds']} s of pgbench per measurement."
        + reads_line(metadata)
    )


def reads_line(metadata: dict) -> str:
    """How the app's reads ended, and so how pgbench sent the same SQL (sets made before the setting: rollback)."""
    endings = metadata.get("reads_end_with") or []
    said = [f"with a {ending.upper()} (pgbench --protocol {PROTOCOL[ending]})" for ending in endings]
    if not said:
        return ""
    return f" The app's reads ended {' or, where a target is named READS_END_WITH=commit, '.join(said)}."


def _requests(record: dict) -> int:
    return max(1, sum((record.get("statuses") or {}).values()))


SORT_KEYS: dict[str, Callable[[dict], float | None]] = {
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
    "app RSS MB, peak": lambda record: record.get("app_rss_mb_peak"),
    "Postgres memory MB, peak": lambda record: record.get("pg_memory_mb_peak"),
    "app threads, peak": lambda record: record.get("app_threads_peak"),
    "machine busy": lambda record: record.get("machine_busy"),
}


def _commands(records: list[dict]) -> str:
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


def render(out: Path, document: Document) -> None:
    metadata, records = document.metadata, ordered(document.results)
    _share_chart(records, metadata, out / CHARTS[0])
    _cpu_chart(records, metadata, out / CHARTS[1])
    lines = [
        *shared.head("The bookstore against the database alone", metadata, shared.took(metadata)),
        "",
        _database_line(metadata),
        "",
        verdict(records),
        "",
        shared.markdown_table(COLUMNS, [_row(record) for record in records]),
        "",
        shared.markdown_table(DETAIL_COLUMNS, [_detail_row(record) for record in records]),
        "",
        METHOD,
        "",
        *(f"![{chart}]({chart})" for chart in CHARTS),
        "",
        *shared.packages(metadata),
    ]
    (out / "results.md").write_text("\n".join(lines))
    html_page.write(
        out, metadata, "bookstore",
        heading="The bookstore against the database alone",
        verdict=html_page.inline(verdict(records)) + "<br>" + html.escape(_database_line(metadata)),
        table=html_page.table(COLUMNS, [_row(r) for r in records], records, SORT_KEYS)
        + "<h2>Memory, writes and the machine</h2>"
        + html_page.table(DETAIL_COLUMNS, [_detail_row(r) for r in records], records, SORT_KEYS),
        note=html.escape(METHOD),
        charts="\n".join(html_page.chart(out / chart) for chart in CHARTS),
        commands=_commands(records),
    )  # fmt: skip
