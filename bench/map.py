"""`make map`: where each way of serving wins. A few targets under a grid of loads, I/O delay x CPU units x
clients, each cell verified and measured as `make bench` measures (bench/run.py: same records, same JSON),
then for each cell the winner and by how much, from OUT/results.json alone.

Every figure compares targets within this one run: machines here differ by up to 2x from one session to
the next, so a cell's winner is meaningful, its requests per second are not.

Each cell sends about SECONDS_PER_CELL seconds of requests at the cell's ceiling (at least one request per
client, at most MAX_REQUESTS): the ceiling counts a CPU unit as 1 ms, the nominal cost (flask_app/cpu_work.py);
the records keep what a unit measured in each image.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from bench import report  # noqa: E402
from bench.ceiling import cpu_bound_rps  # noqa: E402
from bench.measure import Load, choose_client, run_scenario  # noqa: E402
from bench.resultset import Progress, ResultSet  # noqa: E402
from bench.scenarios import Target, load_targets  # noqa: E402

DELAYS = (0.02, 0.5)  # seconds of I/O wait: a quick database query, a slow API
CPUS = (0, 2, 10)  # units of about 1 ms of CPU each: none, a small template, a heavy serialisation
CLIENTS = (10, 500)  # fewer clients than any server has threads, and more than the sync ones have
SECONDS_PER_CELL = 4
MAX_REQUESTS = 3000
NOMINAL_UNIT_SECONDS = 0.001
# A lead below 5 % is no lead: repeated runs of one target differ by about that much (make bench REPEAT=3).
TIE = 1.05


@dataclass(frozen=True)
class MapTarget:
    """A target of the map: a scenario's target, started with these settings (e.g. WORKERS=2)."""

    scenario: str
    target: str
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        # gunicorn-gevent-2-workers for WORKERS=2: a name that also works on the command line.
        return "-".join([self.target, *(f"{value}-{name.lower()}" for name, value in self.settings.items())])

    def resolve(self) -> Target:
        (found,) = [t for t in load_targets(self.scenario, self.settings) if t.name == self.target]
        return found


# The tutorial's sync and gevent servers, and the 2026 ones where they exist. As many gevent processes as the
# machine has cores, once with gunicorn and once with uWSGI (its default here): with CPU work, one gevent
# process can use only one core.
TARGETS = (
    MapTarget("sync-gunicorn", "gunicorn-sync"),
    MapTarget("async-gevent-gunicorn", "gunicorn-gevent"),
    MapTarget("async-gevent-gunicorn", "gunicorn-gevent", {"WORKERS": "2"}),
    MapTarget("async-gevent-uwsgi", "uwsgi-gevent"),
    MapTarget("sync-granian", "granian-sync"),
    MapTarget("async-quart", "quart-uvicorn"),
)
BY_LABEL = {target.label: target for target in TARGETS}


def requests_for(target: Target, delay: float, cpu: int, clients: int, cores: int) -> int:
    """About SECONDS_PER_CELL seconds at the cell's ceiling; every client sends at least one request."""
    cpu_seconds = cpu * NOMINAL_UNIT_SECONDS
    at_once = min(clients, target.concurrency or clients)
    ceiling = min(at_once / (delay + cpu_seconds), cpu_bound_rps(cpu_seconds, target.workers, cores))
    return max(clients, min(MAX_REQUESTS, round(ceiling * SECONDS_PER_CELL)))


def cell_of(record: dict) -> tuple[float, int, int]:
    return record["delay"], record["cpu_units"], record["c"]


def winners(records: list[dict]) -> dict[tuple[float, int, int], dict]:
    """Per cell: the ranking (label, rps) best first, the winner and its lead over the runner-up."""
    cells: dict[tuple[float, int, int], list[dict]] = {}
    for record in records:
        cells.setdefault(cell_of(record), []).append(record)
    summary = {}
    for cell, entries in sorted(cells.items()):
        ranking = sorted(((r["label"], r["rps"] if r["ok"] else 0.0) for r in entries), key=lambda pair: -pair[1])
        best, second = ranking[0][1], ranking[1][1] if len(ranking) > 1 else 0.0
        summary[cell] = {
            "ranking": ranking,
            "winner": ranking[0][0],
            "lead": round(best / second, 2) if second else math.inf,
        }
    return summary


def _cell_name(cell: tuple[float, int, int]) -> str:
    delay, cpu, clients = cell
    return f"{delay * 1000:g} ms I/O, {cpu} CPU units, {clients} clients"


def rigged(summary: dict) -> tuple[tuple, tuple]:
    """The two loads of "the benchmark game is rigged": the most I/O and clients with no CPU work (for async)
    and the least I/O and clients with the most CPU work (for processes)."""
    delays, cpus, clients = (sorted({cell[i] for cell in summary}) for i in range(3))
    return (delays[-1], cpus[0], clients[-1]), (delays[0], cpus[-1], clients[0])


def _rigged_table(summary: dict) -> list[str]:
    for_async, for_sync = rigged(summary)
    left, right = summary[for_async]["ranking"], summary[for_sync]["ranking"]
    lines = [
        f"| rank | {_cell_name(for_async)} | requests/s | {_cell_name(for_sync)} | requests/s |",
        "|---|---|---|---|---|",
    ]
    for rank, ((a, a_rps), (b, b_rps)) in enumerate(zip(left, right, strict=False), start=1):
        lines.append(f"| {rank} | {a} | {a_rps:.0f} | {b} | {b_rps:.0f} |")
    return lines


def _versus_threads(records: list[dict]) -> list[str]:
    """Each gevent target's throughput as a multiple of the tutorial's threaded gunicorn in the same cell: where
    it drops below 1, gevent stops paying off."""
    rps = {(r["label"], *cell_of(r)): r["rps"] for r in records if r["ok"]}
    delays, cpus, clients = (sorted({cell_of(r)[i] for r in records}) for i in range(3))
    gevent = list(dict.fromkeys(r["label"] for r in records if r["mode"] == "gevent"))
    if "gunicorn-sync" not in {r["label"] for r in records} or not gevent:
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


def _colors(labels: list[str]) -> dict[str, str]:
    palette = plt.get_cmap("tab10").colors
    return {label: matplotlib.colors.to_hex(palette[i % len(palette)]) for i, label in enumerate(labels)}


def _winners_chart(summary: dict, labels: list[str], metadata: dict, path: Path) -> None:
    """One square per cell, coloured by its winner, with the winner's lead over the runner-up."""
    delays, cpus, clients = (sorted({cell[i] for cell in summary}) for i in range(3))
    rows = [(delay, c) for delay in delays for c in clients]
    colors = _colors(labels)
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
    report._footer(figure, metadata)
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _throughput_chart(records: list[dict], labels: list[str], metadata: dict, path: Path) -> None:
    """Small multiples: requests per second against CPU units, one panel per (delay, clients)."""
    delays, clients = sorted({r["delay"] for r in records}), sorted({r["c"] for r in records})
    colors = _colors(labels)
    figure, panels = plt.subplots(
        len(delays), len(clients), figsize=(5 * len(clients), 3.4 * len(delays)), squeeze=False
    )
    for row, delay in enumerate(delays):
        for column, c in enumerate(clients):
            axes = panels[row][column]
            for label in labels:
                points = sorted(
                    (r["cpu_units"], r["rps"])
                    for r in records
                    if (r["label"], r["delay"], r["c"]) == (label, delay, c)
                    if r["ok"]
                )
                if points:
                    axes.plot(*zip(*points, strict=True), marker="o", label=label, color=colors[label])
            axes.set_yscale("log")
            axes.set_title(f"{delay * 1000:g} ms I/O, {c} clients", fontsize=9)
            axes.set_xlabel("CPU units per request")
            axes.set_ylabel("requests/s")
            axes.grid(alpha=0.3)
    panels[0][-1].legend(fontsize=7)
    report._footer(figure, metadata)
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)


def render(out: Path) -> None:
    """results.md and the two charts, from OUT/results.json alone."""
    document = json.loads((out / "results.json").read_text())
    metadata, records = document["metadata"], document["results"]
    labels = list(dict.fromkeys(r["label"] for r in records))
    summary = winners(records)
    _winners_chart(summary, labels, metadata, out / "map_winners.png")
    _throughput_chart(records, labels, metadata, out / "map_throughput.png")
    unit_ms = {r["label"]: r["cpu_ms_per_unit"] for r in records if r.get("cpu_ms_per_unit")}
    failed = [f"{r['label']} at {_cell_name(cell_of(r))}: {r['problem']}" for r in records if not r["ok"]]
    lines = [
        "# The workload map",
        "",
        f"`{metadata['command']}`",
        "",
        f"{metadata['date']}, git {metadata['git_commit']}: {metadata['cpu_count']} cores, Linux {metadata['kernel']},"
        f" Docker {metadata['docker_version']}, Compose {metadata['compose_version']}. Took {metadata['minutes']} min.",
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
        *_rigged_table(summary),
        "",
        "## gevent against threads: throughput as a multiple of gunicorn-sync's in the same cell",
        "",
        *_versus_threads(records),
        "",
        "## Every cell",
        "",
        "| target | I/O delay | CPU units | clients | n | requests/s | ceiling | efficiency | P99 ms"
        " | app CPU ms / request |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(
            f"| {r['label']} | {r['delay'] * 1000:g} ms | {r['cpu_units']} | {r['c']} | {r['n']} | "
            + (
                f"{r['rps']:.1f} | {r['ceiling_rps']:.0f} | {r['efficiency']:.0%} | {r['p99_ms']:.0f} | "
                f"{1000 * r['cpu_seconds'] / r['n']:.2f} |"
                if r["ok"]
                else f"NOT OK: {r['problem']} | | | | |"
            )
            for r in records
        ),
        "",
        "![map_winners.png](map_winners.png)",
        "",
        "![map_throughput.png](map_throughput.png)",
        "",
    ]
    (out / "results.md").write_text("\n".join(lines))


def numbers(kind: Callable[[str], float]) -> Callable[[str], list]:
    return lambda text: [kind(value) for value in text.replace(",", " ").split()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.map", description=__doc__)
    parser.add_argument("--targets", nargs="*", default=list(BY_LABEL), choices=BY_LABEL, metavar="TARGET")
    parser.add_argument("--delays", type=numbers(float), default=list(DELAYS), help="seconds of I/O per request")
    parser.add_argument("--cpus", type=numbers(int), default=list(CPUS), help="CPU units per request")
    parser.add_argument("--clients", type=numbers(int), default=list(CLIENTS))
    parser.add_argument("--out", type=Path)
    parser.add_argument("--render", type=Path, help="only render this result set again")
    arguments = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(arguments)
    if args.render:
        report.render(args.render)
        return 0
    results = ResultSet("python -m bench.map", "map", arguments, args.out, suffix="-map")
    client = choose_client("auto")
    results.metadata |= {"delays": args.delays, "cpus": args.cpus, "clients": args.clients}
    cores = results.metadata["cpu_count"] or 1
    chosen = [BY_LABEL[label] for label in args.targets]
    cells = [(delay, cpu, c) for delay in args.delays for cpu in args.cpus for c in args.clients]
    progress = Progress(len(chosen) * len(cells))
    failures = []
    for mapped in chosen:
        target = mapped.resolve()
        runs = [(target, Load(requests_for(target, d, cpu, c, cores), c, d, cpu)) for d, cpu, c in cells]
        packages = results.metadata["packages"]
        for record in run_scenario(mapped.scenario, runs, client, packages, progress, environment=mapped.settings):
            record.extra |= {"label": mapped.label, "settings": mapped.settings}
            results.add(record)
            progress.done += 1
            print(f"    {record.rps or '-'} requests/s, {'ok' if record.ok else record.problem}", flush=True)
            failures += [] if record.ok else [mapped.label]
    results.metadata["minutes"] = results.minutes
    out = results.finish()  # results.md, the charts and index.html
    print(f"\nresults in {out}: results.json, results.md, index.html and the two charts")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
