"""The charts of a `make bookstore` set: each target's share of the database alone, where its CPU per request goes,
where each way queues as the clients grow (a swept set), and where the app's CPU goes by py-spy's samples (a
profiled set)."""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from bench.modes.bookstore.record import BookstoreResult
from bench.modes.bookstore.rows import Row, rps
from bench.render import shared
from bench.results.records import Metadata


def colors_for(targets: list[str]) -> dict[str, str]:
    palette = matplotlib.color_sequences["tab10"]
    return {target: matplotlib.colors.to_hex(palette[i % len(palette)]) for i, target in enumerate(targets)}


def panels_for(headings: list[str], targets: list[str], width: float) -> tuple[plt.Figure, list[Axes]]:
    """A panel per heading (a load), tall enough for every target."""
    size = (width, 0.42 * len(targets) * len(headings) + 1.2 * len(headings))
    figure, axes = plt.subplots(len(headings), 1, figsize=size)
    return figure, list(axes) if len(headings) > 1 else [axes]


def panels_of(rows: list[Row]) -> tuple[list[str], list[str]]:
    """The rows' panels and targets, each in the order they come."""
    return list(dict.fromkeys(row.panel for row in rows)), list(dict.fromkeys(row.record.target for row in rows))


def share_chart(rows: list[Row], metadata: Metadata, path: Path) -> None:
    """Per load, each target's requests per second as a share of the database alone (1 = pgbench's rate)."""
    loads, targets = panels_of(rows)
    figure, panels = panels_for(loads, targets, 11)
    colors = colors_for(targets)
    for axes, load in zip(panels, loads, strict=True):
        mine = {row.record.target: row.record for row in rows if row.panel == load}
        for place, target in enumerate(targets[::-1]):
            record = mine.get(target)
            if record is None:
                continue
            share = record.vs_database
            if share is None:
                axes.text(0.01, place, f" {record.problem}"[:110], va="center", color="tab:red", fontsize=7)
                continue
            axes.barh(place, share, color=colors[target], hatch="" if record.ok else "//")
            text = f" {rps(record.rps)} of {rps(record.pgbench_tps)} requests/s: {share:.2f}"
            axes.text(share, place, text + ("" if record.ok else " (NOT OK)"), va="center", fontsize=7)
        axes.axvline(1, color="black", linewidth=1.5)
        axes.set_yticks(range(len(targets)), targets[::-1], fontsize=8)
        request = next(row.record.request for row in rows if row.panel == load)
        axes.set_title(f"{load}: {request}", fontsize=9, loc="left")
        axes.set_xlim(0, max(1.3, *(1.25 * (row.record.vs_database or 0) for row in rows)))
    panels[-1].set_xlabel("requests per second as a share of the database alone (pgbench, same SQL, same clients)")
    figure.suptitle("The bookstore served each way, against what Postgres alone does with the same SQL", fontsize=10)
    shared.save(figure, metadata, path)


def cpu_chart(rows: list[Row], metadata: Metadata, path: Path) -> None:
    """Where each request's time goes: the app's CPU and Postgres's, per request; a tick for Postgres alone."""
    loads, targets = panels_of(rows)
    figure, panels = panels_for(loads, targets, 11)
    for axes, load in zip(panels, loads, strict=True):
        mine = {row.record.target: row.record for row in rows if row.panel == load}
        for place, target in enumerate(targets[::-1]):
            record = mine.get(target)
            if record is None:
                continue
            app, database = record.app_cpu_ms_per_request, record.pg_cpu_ms_per_request
            if app is None or database is None:
                continue
            axes.barh(place, app, color="tab:blue", label="app" if place == 0 else None)
            axes.barh(place, database, left=app, color="tab:purple", label="Postgres" if place == 0 else None)
            alone = record.pgbench_pg_cpu_ms_per_transaction
            if alone is not None:
                axes.plot([app + alone] * 2, [place - 0.4, place + 0.4], color="black", linewidth=2,
                          label="Postgres alone (pgbench)" if place == 0 else None)  # fmt: skip
            axes.text(app + database, place, f" app {app:.2f} + Postgres {database:.2f} ms", va="center", fontsize=7)
    xlabel, title = (
        "CPU milliseconds per request (all cores)",
        "Where the time goes: CPU per request in the app and in Postgres",
    )
    finish(figure, panels, targets, loads, (xlabel, title), metadata, path)


def finish(
    figure: plt.Figure,
    panels: list[Axes],
    targets: list[str],
    headings: list[str],
    words: tuple[str, str],
    metadata: Metadata,
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


def sweep_chart(rows: list[Row], metadata: Metadata, path: Path) -> None:
    """Per load swept over clients: each target's throughput (median, and the range of the repeats) and P99, with
    the database alone's rate at the clients it saw."""
    swept = [load for load in dict.fromkeys(row.record.load for row in rows)
             if len({row.record.clients for row in rows if row.record.load == load}) > 1]  # fmt: skip
    targets = list(dict.fromkeys(row.record.target for row in rows))
    colors = colors_for(targets)
    figure, grid = plt.subplots(2, len(swept), figsize=(5.5 * len(swept), 7), squeeze=False)
    for column, load in enumerate(swept):
        throughput, latency = grid[0][column], grid[1][column]
        mine = [row for row in rows if row.record.load == load and row.record.rps is not None]
        for target in targets:
            points = sorted((row for row in mine if row.record.target == target), key=lambda row: row.record.clients)
            if not points:
                continue
            clients = [row.record.clients for row in points]
            rates = [row.record.rps or 0.0 for row in points]
            ranges = [row.rps_range or (rate, rate) for row, rate in zip(points, rates, strict=True)]
            spread = [[rate - low for rate, (low, _) in zip(rates, ranges, strict=True)],
                      [high - rate for rate, (_, high) in zip(rates, ranges, strict=True)]]  # fmt: skip
            throughput.errorbar(clients, rates, yerr=spread, marker="o", color=colors[target], label=target, capsize=3)
            latency.plot(clients, [row.record.p99_ms for row in points], marker="o", color=colors[target])
        alone = sorted({(row.record.clients, row.record.pgbench_tps) for row in mine if row.record.pgbench_tps})
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


def profiled(records: list[BookstoreResult]) -> list[BookstoreResult]:
    return [record for record in records if record.profile and record.app_cpu_ms_per_request]


def profile_categories(records: list[BookstoreResult]) -> list[str]:
    """The profile's categories in the order the records hold them (the measurement's own order)."""
    return list(dict.fromkeys(name for record in records for name in record.profile or {}))


def profile_chart(records: list[BookstoreResult], metadata: Metadata, path: Path) -> None:
    """Per load, each target's CPU per request as stacked bars: where py-spy found the server's processes."""
    shown = profiled(records)
    loads = list(dict.fromkeys(record.load for record in shown))
    targets = list(dict.fromkeys(record.target for record in shown))
    figure, panels = panels_for(loads, targets, 11)
    palette = matplotlib.color_sequences["tab10"]
    categories = profile_categories(shown)
    colors = {name: palette[i % len(palette)] for i, name in enumerate(categories)}
    for axes, load in zip(panels, loads, strict=True):
        mine = {record.target: record for record in shown if record.load == load}
        for place, target in enumerate(targets[::-1]):
            record = mine.get(target)
            if record is None:
                continue
            shares, total = record.profile or {}, record.app_cpu_ms_per_request or 0.0
            left = 0.0
            for name in categories:
                width = total * shares.get(name, 0)
                if width:
                    named = name if name not in axes.get_legend_handles_labels()[1] else None
                    axes.barh(place, width, left=left, color=colors[name], label=named)
                    left += width
            axes.text(left, place, f" {left:.2f} ms", va="center", fontsize=7)
    words = ("the app's CPU milliseconds per request, by where py-spy sampled it",
             "Where a request's CPU goes in the app (py-spy, samples of threads holding the GIL)")  # fmt: skip
    finish(figure, panels, targets, loads, words, metadata, path, widen=1.15)
