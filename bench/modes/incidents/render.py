"""A `make incidents` set rendered from OUT/results.json alone: the table of every target and event (what was sent,
answered, lost by kind, lost of those in flight at the event, seconds until the 2xx rate was back), and a timeline
chart per event (answers and errors per 100 ms, one panel per target, the event marked), then index.html."""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path

import matplotlib.pyplot as plt

from bench.modes.incidents.record import IncidentResult
from bench.render import html_page, shared
from bench.results.records import Metadata
from bench.results.store import LoadedSet

COLUMNS = (
    "target", "server", "at once", "event", "repeat", "sent", "2xx", "lost", "lost by kind",
    "lost of those in flight at the event", "2xx back within s", "serves after",
)  # fmt: skip


def recovery(record: IncidentResult) -> str:
    if not record.has_moment:
        return "–"  # a setting that acts all through the load: no single moment to recover from
    return "never" if record.recovery_s is None else f"{record.recovery_s:.1f}"


def row(record: IncidentResult) -> list[str]:
    head = [record.target, record.server, shared.at_once(record), record.event, str(record.repeat)]
    if not record.loaded:
        return head + [f"**FAILED**: {record.problem}"] + ["–"] * (len(COLUMNS) - len(head) - 1)
    kinds = ", ".join(f"{kind} {count}" for kind, count in record.failed_by_kind.items()) or "–"
    in_flight = f"{record.failed_in_flight_at_event} of {record.in_flight_at_event}" if record.has_moment else "–"
    lost = f"**{record.failed}**" if record.failed else "0"
    return head + [
        str(record.sent), str(record.answered), lost, kinds, in_flight, recovery(record),
        "yes" if record.serves_after else "**no**",
    ]  # fmt: skip


WRITE_COLUMNS = ("target", "event", "repeat", "writes acknowledged", "found", "lost", "stored, 201 never read")


def write_row(record: IncidentResult) -> list[str]:
    lost = f"**{record.writes_lost}**" if record.writes_lost else "0"
    return [record.target, record.event, str(record.repeat), str(record.writes_acknowledged),
            str(record.writes_found), lost, str(record.writes_unacknowledged)]  # fmt: skip


WRITES_NOTE = (
    "The bookstore's targets ran its mixed load (90 % GET /author/<random id>, 10 % POST /author, each client pausing"
    " the set's delay between requests). After the load each write answered 201 was looked up in Postgres by its"
    " marker: lost ones are acknowledged writes not stored. Stored, 201 never read: a write Postgres committed whose"
    " answer never reached its client (its worker killed after the commit, or its connection cut): the client must"
    " assume it failed, and a retry would store it twice unless the write carries a key of its own."
)


def chart_name(event: str) -> str:
    return f"incidents-{event}.png"


def timeline_chart(event: str, records: list[IncidentResult], metadata: Metadata, path: Path) -> None:
    """One panel per target (its first repeat): 2xx per 100 ms as a line, errors stacked below by kind."""
    shown: dict[str, IncidentResult] = {}
    for record in records:
        shown.setdefault(record.target, record)
    figure, panels = plt.subplots(len(shown), 1, figsize=(11, 2.3 * len(shown) + 0.8), squeeze=False, sharex=True)
    for record, axes in zip(shown.values(), panels[:, 0], strict=True):
        bins = record.bins or {}
        width = record.bin_seconds or 0.0
        moments = [index * width for index in range(len(bins["ok"]))]
        axes.plot(moments, bins["ok"], color="tab:green", linewidth=1.2, label="2xx")
        bottom = [0] * len(moments)
        for index, (kind, counts) in enumerate(sorted((k, v) for k, v in bins.items() if k != "ok")):
            negative = [-count for count in counts]
            axes.bar(moments, negative, width=width, bottom=bottom, align="edge", color=f"C{index + 3}", label=kind)
            bottom = [low - count for low, count in zip(bottom, counts, strict=True)]
        at, done = record.event_at_s, record.event_done_at_s
        if at is not None:
            axes.axvline(at, color="black", linestyle="--", linewidth=1)
            if done and done - at > 0.2:
                axes.axvspan(at, done, color="grey", alpha=0.15)
        axes.axhline(0, color="black", linewidth=0.5)
        lost = record.failed
        axes.set_title(f"{record.target} ({shared.at_once(record)}): {record.sent} sent, {lost} lost",
                       fontsize=9, loc="left")  # fmt: skip
        axes.set_ylabel("per 100 ms")
        axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    panels[-1, 0].set_xlabel("seconds from the start of the load (dashed: the event; grey: while its command ran)")
    what = records[0].event_what if records[0].event_what is not None else event
    figure.suptitle(f"{event}: {what}. Answers up, errors down, per 100 ms", fontsize=10)
    shared.save(figure, metadata, path)


NOTE = (
    "Each row: a fresh start of the target's scenario, a check, a 1 s warm-up, then a steady closed loop of keep-alive"
    " clients (each sends its next request as soon as the last ended, and waits 0.1 s after an error before it"
    " reconnects), with the event at the time given. Lost: every request that did not end in a 2xx with the expected"
    " body, by what the client saw (refused, reset, timed out, a status code). In flight at the event: requests sent"
    " before the event began and ended after it. 2xx back within: seconds from the event until the 2xx rate was back"
    " to 90 % of its rate over the 3 s before, for two 1 s windows in a row; never: not within the load. Serves"
    " after: whether the target answered right once the load was over."
)


def verdict_line(records: list[IncidentResult]) -> str:
    """The set's verdict in one line of Markdown, for results.md and the page: what was not OK, in bold, or that
    everything was."""
    not_ok = sorted({f"{r.target} / {r.event}" for r in records if not r.ok})
    return f"**Not OK: {', '.join(not_ok)}**" if not_ok else "Every target verified, loaded and its event caused."


SORT_KEYS: dict[str, Callable[[IncidentResult], float | None]] = {
    "at once": shared.holds_at_once,
    "sent": lambda record: record.sent,
    "2xx": lambda record: record.answered,
    "lost": lambda record: record.failed,
    "2xx back within s": lambda record: record.recovery_s,
}


def render(out: Path, loaded: LoadedSet) -> None:
    metadata, records = loaded.metadata, loaded.records_of(IncidentResult)
    measured = [record for record in records if record.bins is not None]
    writes = [record for record in measured if record.writes_acknowledged is not None]
    charts = []
    for event in dict.fromkeys(record.event for record in measured):
        path = out / chart_name(event)
        timeline_chart(event, [record for record in measured if record.event == event], metadata, path)
        charts.append(path)
    what = {record.event: record.event_what or "" for record in records}
    events = [f"- **{event}**: {text}" for event, text in what.items()]
    spread = metadata.extra.get("spread_across_repeats", {})
    spread_lines = [
        f"- {label}: " + "; ".join(f"{key} {v['min']:g} to {v['max']:g}" for key, v in figures.items() if v)
        for label, figures in spread.items()
    ]
    lines = [
        *shared.head("When something goes wrong under load", metadata, shared.took(metadata)),
        "",
        verdict_line(records),
        "",
        shared.markdown_table(COLUMNS, [row(record) for record in records]),
        "",
        NOTE,
        "",
        *(
            ["Writes:", "", shared.markdown_table(WRITE_COLUMNS, [write_row(r) for r in writes]), "", WRITES_NOTE, ""]
            if writes
            else []
        ),  # fmt: skip
        "Events:",
        "",
        *events,
        "",
        *(["How much the counts moved across repeats (lowest to highest):", "", *spread_lines, ""] if spread else []),
        *[f"![{path.name}]({path.name})\n" for path in charts],
        *shared.packages(metadata),
    ]
    (out / "results.md").write_text("\n".join(lines))
    html_page.write(
        out, metadata, loaded.mode,
        heading="When something goes wrong under load: reloads, killed workers, replaced containers",
        verdict=html_page.inline(verdict_line(records)),
        table=html_page.table(COLUMNS, [row(r) for r in records], records, SORT_KEYS),
        note=html.escape(NOTE),
        charts="".join(html_page.chart(path) for path in charts),
        commands=html_page.commands((f"{r.scenario} / {r.target}", r.command, r.problem) for r in records),
    )  # fmt: skip
