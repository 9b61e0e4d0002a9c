"""A `make latency` set rendered from OUT/results.json alone: the table of every target and offered rate, the
"hockey stick" chart (latency against offered load, a panel per way of holding requests) and index.html."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt

from bench.modes.latency.record import LatencyResult
from bench.render import html_page, shared
from bench.results.records import Metadata
from bench.results.store import LoadedSet

COLUMNS = (
    "scenario", "target", "server", "at once", "base requests/s", "offered requests/s", "sent", "achieved",
    "answered well", "P50 ms", "P90 ms", "P99 ms", "P99.9 ms", "failures",
)  # fmt: skip


def ms(value: float | None) -> str:
    return "failed" if value is None else f"{value:.0f}"


def row(record: LatencyResult) -> list[str]:
    base = shared.rps(record.base_rps) if record.base_rps else "–"
    fraction = f" ({record.fraction:.0%})" if record.fraction else ""
    offered = f"{record.offered_rps:g}{fraction}" if record.offered_rps is not None else "–"
    head = [record.scenario, record.target, record.server, shared.at_once(record), base, offered]
    if not record.loaded or not record.ok:
        return head + [f"**FAILED**: {record.problem}"] + ["–"] * (len(COLUMNS) - len(head) - 1)
    # A target that does not keep up is the finding, not a failure of the run: its achieved rate says so in bold.
    achieved = shared.rps(record.achieved_rps or 0.0)
    failures = ", ".join(f"{kind} {count}" for kind, count in (record.failure_kinds or {}).items()) or "–"
    return head + [
        shared.rps(record.sent_rps or 0.0), achieved if record.keeps_up else f"**{achieved}**",
        f"{record.success_ratio:.1%}", ms(record.p50_ms), ms(record.p90_ms), ms(record.p99_ms), ms(record.p999_ms),
        failures,
    ]  # fmt: skip


# One panel per way of holding requests: sixteen targets on one chart repeat colours and hide each other.
MODE_TITLES = {"sync": "threads", "gevent": "gevent", "asyncio": "asyncio"}


def offered(record: LatencyResult) -> float:
    return record.offered_rps or 0.0  # every loaded record has its rate


def hockey_stick_chart(records: list[LatencyResult], metadata: Metadata, path: Path) -> None:
    loaded = [record for record in records if record.loaded and record.ok]
    modes = list(dict.fromkeys(record.mode for record in loaded)) or ["sync"]
    figure, panels = plt.subplots(len(modes), 1, figsize=(11, 4.2 * len(modes) + 0.6), sharey=True, squeeze=False)
    for mode, axes in zip(modes, panels[:, 0], strict=True):
        targets = dict.fromkeys(record.target for record in loaded if record.mode == mode)
        for index, target in enumerate(targets):
            points = sorted((r for r in loaded if r.target == target), key=offered)
            color = f"C{index}"
            rates = [offered(record) for record in points]
            for values, style, label in (
                ([record.p50_ms for record in points], "--", None),
                ([record.p99_ms for record in points], "-", f"{target} ({shared.at_once(points[0])})"),
            ):
                shown = [value if value is not None else float("nan") for value in values]
                axes.plot(rates, shown, style, color=color, marker="o", markersize=4, label=label)
            # Where too many requests failed for a P99, a red cross at the top of the panel marks the rate.
            if failed := [offered(record) for record in points if record.p99_ms is None]:
                axes.plot(failed, [0.95] * len(failed), "x", color="tab:red", markersize=10, markeredgewidth=2,
                          transform=axes.get_xaxis_transform(), clip_on=False)  # fmt: skip
            slow = [record for record in points if not record.keeps_up and record.p99_ms is not None]
            axes.plot([offered(r) for r in slow], [r.p99_ms for r in slow], "o", color="tab:red",
                      fillstyle="none", markersize=10)  # fmt: skip
        for delay in sorted({record.delay for record in records}):
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
    shared.save(figure, metadata, path)


NOTE = (
    "Base: the answers per second a closed loop (hey, as many clients as the target holds at once, at most"
    " 1000, 3 rounds) got from the target just before; each offered rate is a share of it. vegeta then sends"
    " at that rate for the duration, open loop: on schedule, whatever the server does. Sent: the rate vegeta"
    " kept; achieved: good answers per second, from the first to the last; in bold when below 98 % of the"
    " offered rate or when a request failed. Each latency runs from the request's scheduled send to the end of"
    ' its answer; failed requests rank as slower than any answer, so a percentile reads "failed" when more'
    " requests failed than it leaves out."
)


def verdict_line(records: list[LatencyResult]) -> str:
    """The set's verdict in one line of Markdown, for results.md and the page: what was not OK, in bold, or that
    everything was."""
    not_ok = sorted({record.target for record in records if not record.ok})
    return f"**Not OK: {', '.join(not_ok)}**" if not_ok else "Every target verified and loaded at every rate."


# What each numeric column sorts by in index.html: the number behind the cell.
SORT_KEYS: dict[str, Callable[[LatencyResult], float | None]] = {
    "at once": shared.holds_at_once,
    "base requests/s": lambda record: record.base_rps,
    "offered requests/s": lambda record: record.offered_rps,
    "sent": lambda record: record.sent_rps,
    "achieved": lambda record: record.achieved_rps,
    "answered well": lambda record: record.success_ratio,
    # A percentile that fell on a failed request is None: last, like a FAILED cell.
    "P50 ms": lambda record: record.p50_ms,
    "P90 ms": lambda record: record.p90_ms,
    "P99 ms": lambda record: record.p99_ms,
    "P99.9 ms": lambda record: record.p999_ms,
}


def commands(records: list[LatencyResult]) -> list[tuple[str, str | None, str | None]]:
    """Each target's base rate's closed loop, once before its first rate; then each rate's vegeta."""
    ran: list[tuple[str, str | None, str | None]] = []
    based = set()
    for record in records:
        if record.base_command and record.target not in based:
            based.add(record.target)
            ran.append((f"{record.target}, base rate", record.base_command, None))
        rate = f", {record.offered_rps:g} requests/s" if record.offered_rps is not None else ""
        ran.append((f"{record.scenario} / {record.target}{rate}", record.command, record.problem))
    return ran


def render(out: Path, loaded: LoadedSet) -> None:
    metadata, records = loaded.metadata, loaded.records_of(LatencyResult)
    hockey_stick_chart(records, metadata, out / "latency.png")
    lines = [
        *shared.head("Latency at fixed request rates", metadata, shared.took(metadata)),
        "",
        verdict_line(records),
        "",
        shared.markdown_table(COLUMNS, [row(record) for record in records]),
        "",
        NOTE,
        "",
        "![latency.png](latency.png)",
        "",
        *shared.packages(metadata),
    ]
    (out / "results.md").write_text("\n".join(lines))
    html_page.write(
        out, metadata, loaded.mode,
        heading="Latency at fixed request rates: vegeta, open loop",
        verdict=html_page.inline(verdict_line(records)),
        table=html_page.table(COLUMNS, [row(r) for r in records], records, SORT_KEYS),
        note=html.escape(NOTE),
        charts=html_page.chart(out / "latency.png") if (out / "latency.png").exists() else "",
        commands=html_page.commands(commands(records)),
    )  # fmt: skip
