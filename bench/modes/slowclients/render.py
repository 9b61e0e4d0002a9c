"""A `make slowclients` set rendered from OUT/results.json alone: per target and kind of slow client, where a
normal request was first delayed, then every level measured, as results.md and index.html."""

from __future__ import annotations

import html
from pathlib import Path

from bench.modes.slowclients.record import SlowClientResult
from bench.render import html_page, shared
from bench.results.records import Metadata
from bench.results.store import LoadedSet

KINDS = {
    "head": "half a request head",
    "body": "2 bytes of a 100 KB body",
    "idle": "idle after one request",
}


def kind_cell(levels: list[SlowClientResult]) -> str:
    """Where a normal request first waited past the threshold, and how long; or the longest wait of all."""
    delayed = next((record for record in levels if record.delayed), None)
    wedged = " **then wedged**" if any(record.recovered is False for record in levels) else ""
    if delayed is None:
        worst = max(record.worst_seconds or 0.0 for record in levels)
        return f"none up to {levels[-1].connections} (worst {worst:.2f} s)"
    failed = [probe for probe in delayed.probes if probe.problem]
    worst_said = f"{len(failed)} of {len(delayed.probes)} unanswered" if failed else f"{delayed.worst_seconds:.1f} s"
    return f"**{delayed.connections}** ({worst_said}){wedged}"


def summary(records: list[SlowClientResult]) -> tuple[list[str], list[list[str]]]:
    kinds = [kind for kind in KINDS if any(record.kind == kind for record in records)]
    header = ["target", "holds at once", *(f"{kind}: {KINDS[kind]}" for kind in kinds)]
    rows = []
    for target in dict.fromkeys(record.target for record in records):
        mine = [record for record in records if record.target == target]
        if mine[0].kind is None:
            cells = [f"**FAILED**: {mine[0].problem}"] * len(kinds)
        else:
            cells = [kind_cell([r for r in mine if r.kind == kind]) if any(r.kind == kind for r in mine) else "–"
                     for kind in kinds]  # fmt: skip
        rows.append([target, shared.at_once(mine[0]), *cells])
    return header, rows


def level_rows(records: list[SlowClientResult]) -> tuple[list[str], list[list[str]]]:
    header = ["target", "kind", "slow connections", "opened", "normal requests, s", "closed by the server",
              "answered again after"]  # fmt: skip
    rows = []
    for record in records:
        if record.kind is None:  # not verified, or did not start: the summary says why
            continue
        probes = ", ".join(f"{p.seconds:.2f}" if not p.problem else f"**{p.problem}**" for p in record.probes)
        closed = record.closed_by_server
        said = ", ".join(f"{count} {what}" for what, count in record.closed_with.items())
        closed_text = f"{closed} ({said}), the first after {record.first_closed_after:g} s" if closed else "0"
        recovered = f"{record.recovery_seconds:g} s" if record.recovered else "**no: wedged**"
        opened = str(record.opened) + (f", {record.answered} answered" if record.answered is not None else "")
        rows.append([record.target, record.kind, str(record.connections), opened, probes, closed_text, recovered])
    return header, rows


def verdict_line(records: list[SlowClientResult]) -> str:
    """The set's verdict in one line of Markdown, for results.md and the page: what was not OK, in bold, or that
    everything was."""
    not_ok = sorted({record.target for record in records if not record.ok})
    if not_ok:
        return f"**Not OK (unverified, or wedged after the slow clients left): {', '.join(not_ok)}**"
    return "Every target verified, and answered normally again once the slow clients had left."


def notes(metadata: Metadata) -> tuple[str, str]:
    """What the summary table shows, and how each level was run."""
    probes, threshold, levels = (metadata.extra[key] for key in ("probes", "threshold_seconds", "levels"))
    summary = (
        f"Per target and kind of slow client, the number of slow connections at which a normal request"
        f" (`GET /?delay=0`, on a new connection) first took longer than {threshold:g} s or got"
        f" no answer (in bold, with the worst wait), or the longest wait up to the last level"
        f" ({', '.join(map(str, levels))})."
    )
    method = (
        f"Each level opens its slow connections from the host to the published port (docker-proxy in between, for"
        f" every target alike), waits {probes['settle_seconds']:g} s, sends {probes['per_level']} normal requests"
        f" {probes['spacing_seconds']:g} s apart (each given {probes['timeout_seconds']:g} s), then closes them all"
        f" and waits for a normal answer. The levels of a kind stop at the first delayed one."
    )
    return summary, method


def render(out: Path, loaded: LoadedSet) -> None:
    metadata, records = loaded.metadata, loaded.records_of(SlowClientResult)
    what, method = notes(metadata)
    lines = [
        *shared.head("Slow clients", metadata, shared.took(metadata)),
        "",
        verdict_line(records),
        "",
        what,
        "",
        shared.markdown_table(*summary(records)),
        "",
        method,
        "",
        shared.markdown_table(*level_rows(records)),
        "",
        *shared.packages(metadata),
    ]
    (out / "results.md").write_text("\n".join(lines))
    header, rows = summary(records)
    level_header, levels = level_rows(records)
    command = html.escape(metadata.command)
    html_page.write(
        out, metadata, loaded.mode,
        heading="Slow clients: how many slow connections delay a normal request",
        verdict=html_page.inline(verdict_line(records)),
        summary=f"<p>{html_page.inline(what)}</p>" + html_page.table(tuple(header), rows),
        table=html_page.table(tuple(level_header), levels),
        note=html_page.inline(method),
        commands=f"<h2>Commands</h2><p>Every level of every target: <code>{command}</code></p>",
    )  # fmt: skip
