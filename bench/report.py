"""results.md, the charts and index.html, rendered from OUT/results.json alone: `python -m bench.report OUT`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from bench.ceiling import ceiling_rps, efficiency  # noqa: E402

COLUMNS = (
    "scenario", "target", "server", "mode", "at once", "n / c / delay", "requests/s", "ceiling", "efficiency",
    "vs reference", "within spread of", "P50 ms", "P99 ms", "failed", "non-2xx", "OS threads idle → peak",
    "peak RSS MB", "app CPU ms / request", "other CPU ms / request", "machine busy",
)  # fmt: skip
# Short names for the other processes on a request's path, in the order they appear in the table.
OTHERS = {"nginx": "nginx", "slow_api": "api", "postgres": "pg", "docker-proxy": "proxy", "ab": "ab"}


def _label(record: dict) -> str:
    name = f"{record['scenario']} / {record['target']}" if record["scenario"] != record["target"] else record["target"]
    return f"{name}, {record['c']} clients"


# The bars' colours: how the server holds many requests at once.
MODE_COLORS = {"sync": "tab:orange", "gevent": "tab:blue", "asyncio": "tab:green"}


def _at_once(record: dict) -> str:
    per_worker = record["threads_per_worker"] if record["mode"] == "sync" else record["gevent_cores"]
    unit = {"sync": "threads", "gevent": "greenlets"}.get(record["mode"], "tasks")
    return f"{record['workers']} x {per_worker if per_worker is not None else 'unbounded'} {unit}"


def _rps(rps: float) -> str:
    return f"{rps:.2f}" if rps < 10 else f"{rps:.1f}"


def _per_request_ms(seconds: float, record: dict) -> str:
    # CPU time comes in ticks of 10 ms: over fewer than 100 requests, a share per request means nothing.
    return f"{1000 * seconds / record['n']:.2f}" if record["n"] >= 100 else "–"


def _others(record: dict) -> str:
    spent = record.get("cpu_seconds_others") or {}
    if record["n"] < 100:
        return "–"
    return ", ".join(
        f"{short} {_per_request_ms(spent[name], record)}" for name, short in OTHERS.items() if name in spent
    )


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def summarise(records: list[dict]) -> list[dict]:
    """One row per target and load: with repeats (REPEAT=k), the run with the median throughput, and the
    spread of all k runs beside it. A load that failed in any run shows that failure."""
    groups: dict[tuple, list[dict]] = {}
    for record in records:
        key = (record["scenario"], record["target"], record["n"], record["c"], record["delay"], record["client"])
        groups.setdefault(key, []).append(record)
    summary = []
    for runs in groups.values():
        failed = [run for run in runs if not run["ok"]]
        if failed:
            summary.append(failed[0] | {"runs": len(runs)})
            continue
        by_rps = sorted(runs, key=lambda run: run["rps"])
        row = by_rps[(len(by_rps) - 1) // 2] | {"runs": len(runs)}
        median = _median([run["rps"] for run in runs])
        row |= {"rps_median": median, "rps_min": by_rps[0]["rps"], "rps_max": by_rps[-1]["rps"]}
        row["efficiency"] = round(efficiency(median, row["ceiling_rps"]), 3)
        shares = [run["vs_reference"] for run in runs if "vs_reference" in run]
        if shares:
            row["vs_reference"] = round(_median(shares), 3)
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


def _throughput(record: dict) -> str:
    if not record["ok"]:
        return f"**FAILED**: {record['problem']}"
    if record.get("runs", 1) > 1:
        median, low, high = (_rps(record[key]) for key in ("rps_median", "rps_min", "rps_max"))
        return f"{median} ({low}–{high})"
    return _rps(record["rps"])


def _row(record: dict) -> list[str]:
    measured = "rps" in record
    throughput = _throughput(record)
    spread = record.get("within_spread_of")

    def value(key: str, form: str = "{}") -> str:
        return form.format(record[key]) if measured and record.get(key) is not None else "–"

    threads = f"{record['threads_idle']} → {record['threads_peak']}" if measured else "–"
    return [
        record["scenario"], record["target"], record["server"], record["mode"], _at_once(record),
        f"{record['n']} / {record['c']} / {record['delay']:g} s", throughput, _rps(record["ceiling_rps"]),
        value("efficiency", "{:.0%}") if record["ok"] else "–", value("vs_reference", "{:.0%}"),
        "–" if spread is None else ", ".join(spread) or "none", value("p50_ms", "{:.0f}"), value("p99_ms", "{:.0f}"),
        value("failed"), value("non2xx"), threads, value("rss_mb_peak", "{:.0f}"),
        _per_request_ms(record["cpu_seconds"], record) if measured else "–", _others(record) if measured else "–",
        value("machine_busy", "{:.0%}"),
    ]  # fmt: skip


def _table(records: list[dict]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    # A "|" in a cell (an unexpected body, a Docker error) would otherwise start a new column.
    lines += [
        "| " + " | ".join(cell.replace("|", "\\|") for cell in _row(record)) + " |" for record in summarise(records)
    ]
    return "\n".join(lines)


def _footer(figure: plt.Figure, metadata: dict) -> None:
    figure.text(0.01, 0.005, f"{metadata['date']}, {metadata['cpu_count']} cores: {metadata['command']}", fontsize=7)


def _throughput_chart(records: list[dict], metadata: dict, path: Path) -> None:
    # Each target against its own ceiling: loads differ (2000 x 200, 10 x 5), so percentages compare, rps don't.
    figure, axes = plt.subplots(figsize=(10, 0.5 * len(records) + 1.6))
    labels = [_label(record) for record in records][::-1]
    for row, record in enumerate(records[::-1]):
        ceiling = record["ceiling_rps"]
        if record["ok"]:
            color = MODE_COLORS.get(record["mode"], "tab:grey")
            axes.barh(row, 100 * record["efficiency"], color=color)
            if record.get("runs", 1) > 1:  # the spread of the repeats, around the median
                low, high = (100 * record[key] / ceiling for key in ("rps_min", "rps_max"))
                axes.plot([low, high], [row, row], color="black", linewidth=1.5, marker="|", markersize=8)
            text = f" {_throughput(record)} of {_rps(ceiling)} requests/s ({record['efficiency']:.0%})"
            axes.text(1, row, text, va="center", fontsize=8, color="white", fontweight="bold")
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
    axes.set_xlabel("% of ab's ceiling (orange: threads, blue: gevent, green: asyncio; dotted: the naive c / delay)")
    axes.set_title("Throughput against the best ab can measure for the same load")
    _footer(figure, metadata)
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _latency_chart(records: list[dict], metadata: dict, path: Path) -> None:
    measured = [record for record in records if "p99_ms" in record]
    figure, axes = plt.subplots(figsize=(10, 0.5 * len(measured) + 1.6))
    rows = range(len(measured))
    labels = [_label(record) + ("" if record["ok"] else " (FAILED)") for record in measured][::-1]
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
    _footer(figure, metadata)
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _sweep_chart(records: list[dict], metadata: dict, path: Path) -> None:
    figure, axes = plt.subplots(figsize=(10, 6))
    for target in dict.fromkeys(record["target"] for record in records):
        points = [record for record in records if record["target"] == target]
        style = "--" if points[0]["mode"] == "sync" else "-"  # dashed: the servers that saturate
        rps = [record["rps"] if record["ok"] else float("nan") for record in points]
        axes.plot([record["c"] for record in points], rps, style, marker="o", label=f"{target} ({_at_once(points[0])})")
        if failed := [record["c"] for record in points if not record["ok"]]:
            # A failed load has no throughput to plot: a red cross at the foot of the chart marks its place.
            axes.plot(failed, [0.02] * len(failed), "x", color="tab:red", markersize=10, markeredgewidth=2,
                      transform=axes.get_xaxis_transform(), label=f"{target}: FAILED", clip_on=False)  # fmt: skip
    ceiling = sorted({(record["c"], record["n"], record["delay"]) for record in records})
    axes.plot(
        [c for c, _, _ in ceiling], [ceiling_rps(n, c, d, None) for c, n, d in ceiling], "k:", label="ab's ceiling"
    )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("ab's concurrent clients")
    axes.set_ylabel("requests per second")
    axes.set_title("Throughput against concurrency: sync servers saturate at workers x threads")
    axes.legend(fontsize=7)
    _footer(figure, metadata)
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)


OVERLOAD_COLUMNS = (
    "target", "holds at once", "most clients, none failed", "first failure at", "what failed", "answered after",
)  # fmt: skip


def _overload_rows(records: list[dict]) -> list[list[str]]:
    rows = []
    for target in dict.fromkeys(record["target"] for record in records):
        levels = [record for record in records if record["target"] == target]
        passed = [record["c"] for record in levels if record["ok"]]
        failed = next((record for record in levels if not record["ok"]), None)
        survived = {None: "–", True: "yes", False: "**no**"}[failed.get("survived") if failed else None]
        cells = [
            target, _at_once(levels[0]), str(max(passed)) if passed else "none",
            str(failed["c"]) if failed else f"none up to {levels[-1]['c']}",
            failed["problem"] if failed else "–", survived,
        ]  # fmt: skip
        rows.append(cells)
    return rows


def _overload_table(records: list[dict]) -> str:
    lines = ["| " + " | ".join(OVERLOAD_COLUMNS) + " |", "|" + "---|" * len(OVERLOAD_COLUMNS)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in _overload_rows(records)]
    return "\n".join(lines)


def _images(metadata: dict) -> list[str]:
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


CEILING_NOTE = (
    "The ceiling is the best a perfect server could score under ab: ab sends its first request alone and opens"
    " its other connections only after that answer, so n requests take at least"
    " delay x (1 + ceil((n - 1) / c')), where c' is the smaller of ab's clients and what the server holds at"
    " once. Efficiency is requests per second over that ceiling."
)


def _mode(metadata: dict) -> str:
    # Result sets from before "mode" said "sweep": true or false.
    return metadata.get("mode") or ("sweep" if metadata.get("sweep") else "bench")


def _charts(mode: str) -> dict[str, Callable[[list[dict], dict, Path], None]]:
    if mode == "bench":
        return {"throughput.png": _throughput_chart, "latency.png": _latency_chart}
    return {"sweep.png": _sweep_chart}


def _verdict(mode: str, records: list[dict]) -> str:
    if mode == "overload":  # failures are what overload looks for; the summary says where each server's came
        return "Each target given more and more clients, one request each, until a request failed."
    not_ok = [record["target"] for record in records if not record["ok"]]
    return f"**Not OK: {', '.join(not_ok)}**" if not_ok else "Every target verified, no failed or non-2xx request."


def render(out: Path) -> None:
    document = json.loads((out / "results.json").read_text())
    metadata, records = document["metadata"], document["results"]
    mode = _mode(metadata)
    charts = _charts(mode)
    for chart, draw in charts.items():
        draw(summarise(records), metadata, out / chart)
    summary = [_overload_table(records), ""] if mode == "overload" else []
    packages = "\n".join(f"- `{image}`: {' '.join(names)}" for image, names in metadata["packages"].items())
    lines = [
        "# Benchmark results",
        "",
        f"`{metadata['command']}`",
        "",
        f"{metadata['date']}, git {metadata['git_commit']}: {metadata['cpu_count']} cores, Linux {metadata['kernel']},"
        f" Docker {metadata['docker_version']}, Compose {metadata['compose_version']}.",
        "",
        _verdict(mode, records),
        "",
        *summary,
        _table(records),
        "",
        CEILING_NOTE,
        "",
        *(f"![{chart}]({chart})" for chart in charts),
        "",
        *_images(metadata),
        "Packages in the images:",
        "",
        packages,
        "",
    ]
    (out / "results.md").write_text("\n".join(lines))
    # Imported here: bench.html_report reuses this module's table, rows and notes.
    from bench import html_report

    html_report.render(out)


if __name__ == "__main__":
    render(Path(sys.argv[1]))
