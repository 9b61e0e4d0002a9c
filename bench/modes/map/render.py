"""A `make map` set rendered from OUT/results.json alone: per cell of the grid (I/O delay x CPU units x clients)
the winner and by how much, the load that favours async beside the one that favours processes, gevent against
threads cell by cell, every cell, and the two charts; results.md is the page (index.html shows it)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.pyplot as plt

from bench.bench_run.record import BenchResult
from bench.render import html_page, shared
from bench.results.records import Metadata
from bench.results.store import LoadedSet

# A lead below 5 % is no lead: repeated runs of one target differ by about that much (make bench REPEAT=3).
TIE = 1.05

Cell = tuple[float, int, int]  # I/O delay (s), CPU units, clients
Summary = dict[Cell, dict[str, Any]]  # per cell: its ranking, winner and lead (winners below)


def cell_of(record: BenchResult) -> Cell:
    return record.delay, record.cpu_units, record.c


def name_of(record: BenchResult) -> str:
    """The target's name on the map (make map labels every target it runs)."""
    return record.label or record.target


def grid(cells: Iterable[Cell]) -> tuple[list[float], list[int], list[int]]:
    """The grid's axes: its delays, CPU units and clients, each sorted."""
    listed = list(cells)
    return sorted({c[0] for c in listed}), sorted({c[1] for c in listed}), sorted({c[2] for c in listed})


def winners(records: list[BenchResult]) -> Summary:
    """Per cell: the ranking (label, rps) best first, the winner and its lead over the runner-up."""
    cells: dict[Cell, list[BenchResult]] = {}
    for record in records:
        cells.setdefault(cell_of(record), []).append(record)
    summary: Summary = {}
    for cell, entries in sorted(cells.items()):
        scores = ((name_of(r), r.throughput if r.ok else 0.0) for r in entries)
        ranking = sorted(scores, key=lambda pair: -pair[1])
        best, second = ranking[0][1], ranking[1][1] if len(ranking) > 1 else 0.0
        summary[cell] = {
            "ranking": ranking,
            "winner": ranking[0][0],
            "lead": round(best / second, 2) if second else math.inf,
        }
    return summary


def cell_name(cell: Cell) -> str:
    delay, cpu, clients = cell
    return f"{delay * 1000:g} ms I/O, {cpu} CPU units, {clients} clients"


def rigged(summary: Summary) -> tuple[Cell, Cell]:
    """The two loads of "the benchmark game is rigged": the most I/O and clients with no CPU work (for async)
    and the least I/O and clients with the most CPU work (for processes)."""
    delays, cpus, clients = grid(summary)
    return (delays[-1], cpus[0], clients[-1]), (delays[0], cpus[-1], clients[0])


def rigged_table(summary: Summary) -> list[str]:
    for_async, for_sync = rigged(summary)
    left, right = summary[for_async]["ranking"], summary[for_sync]["ranking"]
    lines = [
        f"| rank | {cell_name(for_async)} | requests/s | {cell_name(for_sync)} | requests/s |",
        "|---|---|---|---|---|",
    ]
    for rank, ((a, a_rps), (b, b_rps)) in enumerate(zip(left, right, strict=False), start=1):
        lines.append(f"| {rank} | {a} | {a_rps:.0f} | {b} | {b_rps:.0f} |")
    return lines


def versus_threads(records: list[BenchResult]) -> list[str]:
    """Each gevent target's throughput as a multiple of the tutorial's threaded gunicorn in the same cell: where
    it drops below 1, gevent stops paying off."""
    rps = {(name_of(r), *cell_of(r)): r.throughput for r in records if r.ok}
    delays, cpus, clients = grid(cell_of(r) for r in records)
    gevent = list(dict.fromkeys(name_of(r) for r in records if r.mode == "gevent"))
    if "gunicorn-sync" not in {name_of(r) for r in records} or not gevent:
        return []
    lines = [
        "| target | I/O delay | clients | " + " | ".join(f"{cpu} CPU units" for cpu in cpus) + " |",
        "|---|---|---|" + "---|" * len(cpus),
    ]
    for label in gevent:
        for delay in delays:
            for c in clients:
                ratios = []
                for cpu in cpus:
                    mine, threads = rps.get((label, delay, cpu, c)), rps.get(("gunicorn-sync", delay, cpu, c))
                    ratios.append(f"x{mine / threads:.2f}" if mine and threads else "–")
                lines.append(f"| {label} | {delay * 1000:g} ms | {c} | " + " | ".join(ratios) + " |")
    return lines


def colors_for(labels: list[str]) -> dict[str, str]:
    palette = matplotlib.color_sequences["tab10"]
    return {label: matplotlib.colors.to_hex(palette[i % len(palette)]) for i, label in enumerate(labels)}


def winners_chart(summary: Summary, labels: list[str], metadata: Metadata, path: Path) -> None:
    """One square per cell, coloured by its winner, with the winner's lead over the runner-up."""
    delays, cpus, clients = grid(summary)
    rows = [(delay, c) for delay in delays for c in clients]
    colors = colors_for(labels)
    figure, axes = plt.subplots(figsize=(2.2 * len(cpus) + 3.5, 0.9 * len(rows) + 1.8))
    for y, (delay, c) in enumerate(rows):
        for x, cpu in enumerate(cpus):
            cell = summary.get((delay, cpu, c))
            if cell is None:
                continue
            axes.add_patch(plt.Rectangle((x, y), 1, 1, color=colors[cell["winner"]], alpha=0.85))
            lead = "alone" if math.isinf(cell["lead"]) else f"x{cell['lead']:.2f} over #2"
            if cell["lead"] < TIE:
                lead += ": a tie"
            axes.text(x + 0.5, y + 0.5, f"{cell['winner']}\n{lead}", ha="center", va="center", fontsize=7)
    axes.set_xlim(0, len(cpus))
    axes.set_ylim(0, len(rows))
    axes.set_xticks([x + 0.5 for x in range(len(cpus))], [f"{cpu} units" for cpu in cpus])
    axes.set_yticks([y + 0.5 for y in range(len(rows))], [f"{d * 1000:g} ms I/O, {c} clients" for d, c in rows])
    axes.set_xlabel("CPU work per request (about 1 ms a unit)")
    axes.set_title("Which target serves the most requests per second, per load (same run)")
    shared.save(figure, metadata, path)


def throughput_chart(records: list[BenchResult], labels: list[str], metadata: Metadata, path: Path) -> None:
    """Small multiples: requests per second against CPU units, one panel per (delay, clients)."""
    delays, clients = sorted({r.delay for r in records}), sorted({r.c for r in records})
    colors = colors_for(labels)
    figure, panels = plt.subplots(
        len(delays), len(clients), figsize=(5 * len(clients), 3.4 * len(delays)), squeeze=False
    )
    for row, delay in enumerate(delays):
        for column, c in enumerate(clients):
            axes = panels[row][column]
            for label in labels:
                points = sorted(
                    (r.cpu_units, r.throughput)
                    for r in records
                    if (name_of(r), r.delay, r.c) == (label, delay, c) and r.ok
                )
                if points:
                    axes.plot(*zip(*points, strict=True), marker="o", label=label, color=colors[label])
            axes.set_yscale("log")
            axes.set_title(f"{delay * 1000:g} ms I/O, {c} clients", fontsize=9)
            axes.set_xlabel("CPU units per request")
            axes.set_ylabel("requests/s")
            axes.grid(alpha=0.3)
    panels[0][-1].legend(fontsize=7)
    shared.save(figure, metadata, path)


def every_cell(record: BenchResult) -> str:
    """One row of the table of every cell."""
    start = f"| {name_of(record)} | {record.delay * 1000:g} ms | {record.cpu_units} | {record.c} | {record.n} | "
    if not record.ok:
        return start + f"NOT OK: {record.problem} | | | | |"
    cpu_ms = 1000 * (record.cpu_seconds or 0.0) / record.n
    return start + (
        f"{record.throughput:.1f} | {record.ceiling_rps:.0f} | {record.efficiency:.0%} | {record.p99_ms:.0f} | "
        f"{cpu_ms:.2f} |"
    )


def render(out: Path, loaded: LoadedSet) -> None:
    """results.md, the two charts and index.html."""
    metadata, records = loaded.metadata, loaded.records_of(BenchResult)
    labels = list(dict.fromkeys(name_of(r) for r in records))
    summary = winners(records)
    winners_chart(summary, labels, metadata, out / "map_winners.png")
    throughput_chart(records, labels, metadata, out / "map_throughput.png")
    unit_ms = {name_of(r): r.cpu_ms_per_unit for r in records if r.cpu_ms_per_unit}
    failed = [f"{name_of(r)} at {cell_name(cell_of(r))}: {r.problem}" for r in records if not r.ok]
    lines = [
        *shared.head("The workload map", metadata, f" Took {metadata.minutes} min."),
        "",
        "One CPU unit measured, in each image: "
        + ", ".join(f"{label} {ms:.2f} ms" for label, ms in unit_ms.items())
        + ".",
        "",
        ("**Not OK:** " + "; ".join(failed)) if failed else "Every cell verified, no failed or non-2xx request.",
        "",
        "## Winner per cell",
        "",
        "| I/O delay | CPU units | clients | winner | lead over #2 | ranking (requests/s) |",
        "|---|---|---|---|---|---|",
        *(
            f"| {d * 1000:g} ms | {cpu} | {c} | {s['winner']} | x{s['lead']:.2f}"
            + (" (a tie)" if s["lead"] < TIE else "")
            + " | "
            + ", ".join(f"{label} {rps:.0f}" for label, rps in s["ranking"])
            + " |"
            for (d, cpu, c), s in summary.items()
        ),
        "",
        "## The ranking flips: a load for async and a load for processes",
        "",
        *rigged_table(summary),
        "",
        "## gevent against threads: throughput as a multiple of gunicorn-sync's in the same cell",
        "",
        *versus_threads(records),
        "",
        "## Every cell",
        "",
        "| target | I/O delay | CPU units | clients | n | requests/s | ceiling | efficiency | P99 ms"
        " | app CPU ms / request |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(every_cell(record) for record in records),
        "",
        "![map_winners.png](map_winners.png)",
        "",
        "![map_throughput.png](map_throughput.png)",
        "",
    ]
    (out / "results.md").write_text("\n".join(lines))
    html_page.from_markdown(out, metadata, loaded.mode)
