"""results.md, the charts and index.html, rendered from OUT/results.json alone: `python -m bench.report OUT`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from bench import wrk  # noqa: E402
from bench.ceiling import efficiency  # noqa: E402
from bench.loadgens import LOADGENS  # noqa: E402

COLUMNS = (
    "scenario", "target", "server", "mode", "at once", "n / c / delay", "requests/s", "ceiling", "efficiency",
    "vs reference", "within spread of", "P50 ms", "P99 ms", "failed", "non-2xx", "OS threads idle → peak",
    "peak RSS MB", "app CPU ms / request", "other CPU ms / request", "machine busy",
)  # fmt: skip
# Short names for the other processes on a request's path, in the order they appear in the table.
OTHERS = {
    "nginx": "nginx", "slow_api": "api", "postgres": "pg", "docker-proxy": "proxy",
    "ab": "ab", "hey": "hey", "wrk": "wrk",  # the load generator, when it runs on the host
}  # fmt: skip


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
    # wrk runs for a time: what it completed, not the requests asked for.
    return f"{1000 * seconds / (record.get('complete') or record['n']):.2f}" if record["n"] >= 100 else "–"


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
    spread of all k runs beside it. A load that failed in any run shows that failure. A run measured again
    because the CPU moved (RERUN=k) counts by its re-run only, and the reference re-measured for it is not a row."""
    records = [r for r in records if not r.get("superseded") and not r.get("rerun_reference")]
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


def _requests(record: dict) -> str:
    # wrk runs for a duration, not a number of requests: the table says how long, as its command does.
    if record.get("loadgen") == "wrk":
        return f"{wrk.duration_seconds(record['n'], record['c'], record['delay'])} s"
    return str(record["n"])


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
        f"{_requests(record)} / {record['c']} / {record['delay']:g} s", throughput, _rps(record["ceiling_rps"]),
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
    # Wide enough that a bar of 90 % holds its label: throughput, spread, and both shares.
    figure, axes = plt.subplots(figsize=(14, 0.5 * len(records) + 1.6))
    labels = [_label(record) for record in records][::-1]
    for row, record in enumerate(records[::-1]):
        ceiling = record["ceiling_rps"]
        if record["ok"]:
            color = MODE_COLORS.get(record["mode"], "tab:grey")
            axes.barh(row, 100 * record["efficiency"], color=color)
            if record.get("runs", 1) > 1:  # the spread of the repeats, around the median
                low, high = (100 * record[key] / ceiling for key in ("rps_min", "rps_max"))
                axes.plot([low, high], [row, row], color="black", linewidth=1.5, marker="|", markersize=8)
            share = f", {record['vs_reference']:.2f} of slow_api alone" if record.get("vs_reference") else ""
            text = f" {_throughput(record)} of {_rps(ceiling)} requests/s: {record['efficiency']:.0%}{share}"
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


LATENCY_COLUMNS = (
    "scenario", "target", "server", "at once", "base requests/s", "offered requests/s", "sent", "achieved",
    "answered well", "P50 ms", "P90 ms", "P99 ms", "P99.9 ms", "failures",
)  # fmt: skip


def _ms(value: float | None) -> str:
    return "failed" if value is None else f"{value:.0f}"


def _latency_row(record: dict) -> list[str]:
    base = _rps(record["base_rps"]) if record.get("base_rps") else "–"
    fraction = f" ({record['fraction']:.0%})" if record.get("fraction") else ""
    offered = f"{record['offered_rps']:g}{fraction}" if "offered_rps" in record else "–"
    head = [record["scenario"], record["target"], record["server"], _at_once(record), base, offered]
    if "requests" not in record or not record["ok"]:
        return head + [f"**FAILED**: {record['problem']}"] + ["–"] * (len(LATENCY_COLUMNS) - len(head) - 1)
    # A target that does not keep up is the finding, not a failure of the run: its achieved rate says so in bold.
    achieved = _rps(record["achieved_rps"]) if record["keeps_up"] else f"**{_rps(record['achieved_rps'])}**"
    failures = ", ".join(f"{kind} {count}" for kind, count in record["failure_kinds"].items()) or "–"
    return head + [
        _rps(record["sent_rps"]), achieved, f"{record['success_ratio']:.1%}", _ms(record["p50_ms"]),
        _ms(record["p90_ms"]), _ms(record["p99_ms"]), _ms(record["p999_ms"]), failures,
    ]  # fmt: skip


def _latency_table(records: list[dict]) -> str:
    lines = ["| " + " | ".join(LATENCY_COLUMNS) + " |", "|" + "---|" * len(LATENCY_COLUMNS)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in _latency_row(r)) + " |" for r in records]
    return "\n".join(lines)


# One panel per way of holding requests: sixteen targets on one chart repeat colours and hide each other.
MODE_TITLES = {"sync": "threads", "gevent": "gevent", "asyncio": "asyncio"}


def _hockey_stick_chart(records: list[dict], metadata: dict, path: Path) -> None:
    loaded = [record for record in records if "requests" in record and record["ok"]]
    modes = list(dict.fromkeys(record["mode"] for record in loaded)) or ["sync"]
    figure, panels = plt.subplots(len(modes), 1, figsize=(11, 4.2 * len(modes) + 0.6), sharey=True, squeeze=False)
    for mode, axes in zip(modes, panels[:, 0], strict=True):
        targets = dict.fromkeys(record["target"] for record in loaded if record["mode"] == mode)
        for index, target in enumerate(targets):
            points = sorted((r for r in loaded if r["target"] == target), key=lambda r: r["offered_rps"])
            color = f"C{index}"
            offered = [record["offered_rps"] for record in points]
            for key, style in (("p50_ms", "--"), ("p99_ms", "-")):
                values = [record[key] if record[key] is not None else float("nan") for record in points]
                label = f"{target} ({_at_once(points[0])})" if key == "p99_ms" else None
                axes.plot(offered, values, style, color=color, marker="o", markersize=4, label=label)
            # Where too many requests failed for a P99, a red cross at the top of the panel marks the rate.
            if failed := [record["offered_rps"] for record in points if record["p99_ms"] is None]:
                axes.plot(failed, [0.95] * len(failed), "x", color="tab:red", markersize=10, markeredgewidth=2,
                          transform=axes.get_xaxis_transform(), clip_on=False)  # fmt: skip
            slow = [record for record in points if not record["keeps_up"] and record["p99_ms"] is not None]
            axes.plot([r["offered_rps"] for r in slow], [r["p99_ms"] for r in slow], "o", color="tab:red",
                      fillstyle="none", markersize=10)  # fmt: skip
        for delay in sorted({record["delay"] for record in records}):
            axes.axhline(delay * 1000, color="black", linestyle=":", linewidth=1)
        axes.set_yscale("log")
        for axis in (axes.yaxis.set_major_formatter, axes.yaxis.set_minor_formatter):
            axis(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}"))  # 2000, not 2 x 10^3
        axes.set_title(f"{MODE_TITLES.get(mode, mode)}: dashed P50, solid P99", fontsize=10, loc="left")
        axes.set_ylabel("ms from the scheduled send")
        axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    panels[-1, 0].set_xlabel("offered requests per second (open loop: sent on schedule, whatever the server does)")
    figure.suptitle(
        "Latency against offered load (dotted: the delay; red ring: fewer answers than offered; red cross: P99 failed)",
        fontsize=10,
    )
    _footer(figure, metadata)
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    figure.savefig(path, dpi=110)
    plt.close(figure)


LATENCY_NOTE = (
    "Base: the answers per second a closed loop (hey, as many clients as the target holds at once, at most"
    " 1000, 3 rounds) got from the target just before; each offered rate is a share of it. vegeta then sends"
    " at that rate for the duration, open loop: on schedule, whatever the server does. Sent: the rate vegeta"
    " kept; achieved: good answers per second, from the first to the last; in bold when below 98 % of the"
    " offered rate or when a request failed. Each latency runs from the request's scheduled send to the end of"
    ' its answer; failed requests rank as slower than any answer, so a percentile reads "failed" when more'
    " requests failed than it leaves out."
)


def latency_verdict(records: list[dict]) -> str:
    not_ok = sorted({record["target"] for record in records if not record["ok"]})
    return f"**Not OK: {', '.join(not_ok)}**" if not_ok else "Every target verified and loaded at every rate."


def _render_latency(out: Path, metadata: dict, records: list[dict]) -> None:
    _hockey_stick_chart(records, metadata, out / "latency.png")
    packages = "\n".join(f"- `{image}`: {' '.join(names)}" for image, names in metadata["packages"].items())
    lines = [
        "# Latency at fixed request rates",
        "",
        f"`{metadata['command']}`",
        "",
        f"{metadata['date']}, git {metadata['git_commit']}: {metadata['cpu_count']} cores, Linux {metadata['kernel']},"
        f" Docker {metadata['docker_version']}, Compose {metadata['compose_version']}.",
        "",
        latency_verdict(records),
        "",
        _latency_table(records),
        "",
        LATENCY_NOTE,
        "",
        "![latency.png](latency.png)",
        "",
        "Packages in the images:",
        "",
        packages,
        "",
    ]
    (out / "results.md").write_text("\n".join(lines))


SLOW_KINDS = {
    "head": "half a request head",
    "body": "2 bytes of a 100 KB body",
    "idle": "idle after one request",
}


def _slow_cell(levels: list[dict]) -> str:
    """Where a normal request first waited past the threshold, and how long; or the longest wait of all."""
    delayed = next((record for record in levels if record["delayed"]), None)
    wedged = " **then wedged**" if any(record.get("recovered") is False for record in levels) else ""
    if delayed is None:
        return f"none up to {levels[-1]['connections']} (worst {max(r['worst_seconds'] for r in levels):.2f} s)"
    failed = [probe for probe in delayed["probes"] if probe["problem"]]
    worst = f"{len(failed)} of {len(delayed['probes'])} unanswered" if failed else f"{delayed['worst_seconds']:.1f} s"
    return f"**{delayed['connections']}** ({worst}){wedged}"


def _slowclients_summary(records: list[dict]) -> tuple[list[str], list[list[str]]]:
    kinds = [kind for kind in SLOW_KINDS if any(record.get("kind") == kind for record in records)]
    header = ["target", "holds at once", *(f"{kind}: {SLOW_KINDS[kind]}" for kind in kinds)]
    rows = []
    for target in dict.fromkeys(record["target"] for record in records):
        mine = [record for record in records if record["target"] == target]
        if "kind" not in mine[0]:
            cells = [f"**FAILED**: {mine[0]['problem']}"] * len(kinds)
        else:
            cells = [_slow_cell([r for r in mine if r.get("kind") == kind]) if any(r.get("kind") == kind for r in mine)
                     else "–" for kind in kinds]  # fmt: skip
        rows.append([target, _at_once(mine[0]), *cells])
    return header, rows


def _slowclients_level_rows(records: list[dict]) -> tuple[list[str], list[list[str]]]:
    header = ["target", "kind", "slow connections", "opened", "normal requests, s", "closed by the server",
              "answered again after"]  # fmt: skip
    rows = []
    for record in (record for record in records if "kind" in record):
        probes = ", ".join(
            f"{p['seconds']:.2f}" if not p["problem"] else f"**{p['problem']}**" for p in record["probes"]
        )
        closed = record["closed_by_server"]
        said = ", ".join(f"{count} {what}" for what, count in record.get("closed_with", {}).items())
        closed_text = f"{closed} ({said}), the first after {record['first_closed_after']:g} s" if closed else "0"
        recovered = f"{record['recovery_seconds']:g} s" if record["recovered"] else "**no: wedged**"
        opened = str(record["opened"]) + (f", {record['answered']} answered" if record["answered"] is not None else "")
        rows.append(
            [record["target"], record["kind"], str(record["connections"]), opened, probes, closed_text, recovered]
        )
    return header, rows


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    # A "|" in a cell (an unexpected body, a Docker error) would otherwise start a new column.
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _slowclients_table(records: list[dict]) -> str:
    return _markdown_table(*_slowclients_summary(records))


def _slowclients_levels(records: list[dict]) -> str:
    return _markdown_table(*_slowclients_level_rows(records))


def slowclients_verdict(records: list[dict]) -> str:
    not_ok = sorted({record["target"] for record in records if not record["ok"]})
    if not_ok:
        return f"**Not OK (unverified, or wedged after the slow clients left): {', '.join(not_ok)}**"
    return "Every target verified, and answered normally again once the slow clients had left."


def slowclients_notes(metadata: dict) -> tuple[str, str]:
    """What the summary table shows, and how each level was run."""
    probes = metadata["probes"]
    summary = (
        f"Per target and kind of slow client, the number of slow connections at which a normal request"
        f" (`GET /?delay=0`, on a new connection) first took longer than {metadata['threshold_seconds']:g} s or got"
        f" no answer (in bold, with the worst wait), or the longest wait up to the last level"
        f" ({', '.join(map(str, metadata['levels']))})."
    )
    method = (
        f"Each level opens its slow connections from the host to the published port (docker-proxy in between, for"
        f" every target alike), waits {probes['settle_seconds']:g} s, sends {probes['per_level']} normal requests"
        f" {probes['spacing_seconds']:g} s apart (each given {probes['timeout_seconds']:g} s), then closes them all"
        f" and waits for a normal answer. The levels of a kind stop at the first delayed one."
    )
    return summary, method


def _render_slowclients(out: Path, metadata: dict, records: list[dict]) -> None:
    packages = "\n".join(f"- `{image}`: {' '.join(names)}" for image, names in metadata["packages"].items())
    summary, method = slowclients_notes(metadata)
    lines = [
        "# Slow clients",
        "",
        f"`{metadata['command']}`",
        "",
        f"{metadata['date']}, git {metadata['git_commit']}: {metadata['cpu_count']} cores, Linux {metadata['kernel']},"
        f" Docker {metadata['docker_version']}, Compose {metadata['compose_version']}.",
        "",
        slowclients_verdict(records),
        "",
        summary,
        "",
        _slowclients_table(records),
        "",
        method,
        "",
        _slowclients_levels(records),
        "",
        "Packages in the images:",
        "",
        packages,
        "",
    ]
    (out / "results.md").write_text("\n".join(lines))


CEILING_NOTE = LOADGENS["ab"].ceiling_note
# What each tool does to the server, in a few words: a reader of a title should know which client measured.
TOOL_WORDS = {
    "ab": "ab (HTTP/1.0, a new connection per request)",
    "hey": "hey (keep-alive, all connections opened at once)",
    "wrk": "wrk (keep-alive, for a duration)",
}


def _tools(records: list[dict]) -> list[str]:
    # Result sets from before LOADGEN= have no "loadgen": they are ab's.
    return list(dict.fromkeys(record.get("loadgen", "ab") for record in records))


def _ceiling_notes(records: list[dict]) -> str:
    return " ".join(LOADGENS[name].ceiling_note for name in _tools(records))


def title(metadata: dict, records: list[dict]) -> str:
    """The set's heading: what was loaded, with which tool, and how many times."""
    tools = " and ".join(TOOL_WORDS.get(name, name) for name in _tools(records))
    repeat = metadata.get("repeat") or 1
    runs = f", every target {repeat} times, interleaved (the median run, min–max beside it)" if repeat > 1 else ""
    return f"Benchmark results: {tools}{runs}"


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
    # Imported here: bench.html_report reuses this module's tables, rows and notes.
    from bench import html_report

    if mode == "latency":
        _render_latency(out, metadata, records)
        html_report.render(out)
        return
    if mode == "slowclients":
        _render_slowclients(out, metadata, records)
        html_report.render(out)
        return
    if mode == "map":
        from bench import map as workload_map  # it draws its own: a grid of cells, not a list of targets

        workload_map.render(out)
        html_report.render(out)
        return
    if mode == "labs":
        from bench import labs  # its own tables, one per lab

        (out / "results.md").write_text(labs.render(document))
        html_report.render(out)
        return
    if mode == "bookstore":
        from bench import bookstore_report  # each target beside the database alone, per load

        bookstore_report.render(out)
        return
    charts = _charts(mode)
    for chart, draw in charts.items():
        draw(summarise(records), metadata, out / chart)
    summary = [_overload_table(records), ""] if mode == "overload" else []
    packages = "\n".join(f"- `{image}`: {' '.join(names)}" for image, names in metadata["packages"].items())
    lines = [
        f"# {title(metadata, records)}",
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
        _ceiling_notes(records),
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
    html_report.render(out)


if __name__ == "__main__":
    render(Path(sys.argv[1]))
