"""OUT/index.html: the results as one page that opens from disk with no network, the charts inside it, the table
sortable by any column. Rendered from OUT/results.json and the charts already drawn: `python -m bench.html_report OUT`
(`python -m bench.report OUT` renders it too, after results.md and the charts)."""

from __future__ import annotations

import base64
import html
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from string import Template

from bench import report


def _holds_at_once(record: dict) -> float:
    per_worker = record["threads_per_worker"] if record["mode"] == "sync" else record["gevent_cores"]
    return record["workers"] * per_worker if per_worker is not None else float("inf")


def _requests(record: dict) -> int:
    # wrk runs for a time: per request means per request it completed, as in results.md.
    return record.get("complete") or record["n"]


def _others_seconds(record: dict) -> float:
    return sum(seconds for name, seconds in (record.get("cpu_seconds_others") or {}).items() if name in report.OTHERS)


# What a numeric column sorts by: the number behind the cell, never its text ("4 x 50 threads", "api 0.20, ab 0.10").
# A column not named here sorts as text.
SORT_KEYS: dict[str, Callable[[dict], float | None]] = {
    "at once": _holds_at_once,
    "n / c / delay": lambda record: record["c"],
    "requests/s": lambda record: record.get("rps_median", record.get("rps")),
    "ceiling": lambda record: record["ceiling_rps"],
    "efficiency": lambda record: record.get("efficiency"),
    "vs reference": lambda record: record.get("vs_reference"),
    "P50 ms": lambda record: record.get("p50_ms"),
    "P99 ms": lambda record: record.get("p99_ms"),
    "failed": lambda record: record.get("failed"),
    "non-2xx": lambda record: record.get("non2xx"),
    "OS threads idle → peak": lambda record: record.get("threads_peak"),
    "peak RSS MB": lambda record: record.get("rss_mb_peak"),
    "app CPU ms / request": lambda record: 1000 * record["cpu_seconds"] / _requests(record),
    "other CPU ms / request": lambda record: 1000 * _others_seconds(record) / _requests(record),
    "machine busy": lambda record: record.get("machine_busy"),
}


# The same for a latency set (make latency): one row per target and offered rate.
LATENCY_SORT_KEYS: dict[str, Callable[[dict], float | None]] = {
    "at once": _holds_at_once,
    "base requests/s": lambda record: record.get("base_rps"),
    "offered requests/s": lambda record: record.get("offered_rps"),
    "sent": lambda record: record.get("sent_rps"),
    "achieved": lambda record: record.get("achieved_rps"),
    "answered well": lambda record: record.get("success_ratio"),
    # A percentile that fell on a failed request is None: last, like a FAILED cell.
    "P50 ms": lambda record: record.get("p50_ms"),
    "P90 ms": lambda record: record.get("p90_ms"),
    "P99 ms": lambda record: record.get("p99_ms"),
    "P99.9 ms": lambda record: record.get("p999_ms"),
}


def _inline(markdown: str) -> str:
    """A cell or line of results.md as HTML: escaped, and its only markup, **bold**, kept."""
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(markdown))


def _cell(column: str, text: str, record: dict, sort_keys: dict[str, Callable[[dict], float | None]]) -> str:
    # "–" (not measured) and FAILED cells carry no sort value: the script puts them last either way.
    if text == "–":
        return f"<td>{_inline(text)}</td>"
    if text.startswith("**FAILED**"):
        return f'<td class="problem">{_inline(text)}</td>'
    if column not in sort_keys:
        return f'<td data-sort="{html.escape(text)}">{_inline(text)}</td>'
    key = sort_keys[column](record)
    if key is None:
        return f'<td class="number">{_inline(text)}</td>'
    # JSON writes an unbounded "at once" as Infinity, which is what JavaScript's Number() reads.
    return f'<td class="number" data-sort="{json.dumps(key)}">{_inline(text)}</td>'


def _number(text: str) -> float | None:
    """The number a summary cell starts with ("x1.07 (a tie)", "20 ms", "**25** (5.0 s)"), or None."""
    match = re.match(r"[*x]*(-?\d+(?:\.\d+)?)", text.strip())
    return float(match.group(1)) if match else None


NUMBER = ' class="number"'


def _summary_cell(text: str, numeric: bool) -> str:
    if not numeric:
        return f'<td data-sort="{html.escape(text)}">{_inline(text)}</td>'
    number = _number(text)
    if number is None:  # "–", "none", NOT OK: no sort value, last either way
        return f'<td class="number">{_inline(text)}</td>'
    return f'<td class="number" data-sort="{json.dumps(number)}">{_inline(text)}</td>'


def _table(
    columns: tuple[str, ...],
    rows: list[list[str]],
    records: list[dict] | None = None,
    sort_keys: dict[str, Callable[[dict], float | None]] = SORT_KEYS,
) -> str:
    """Every table sorts (a button per header). The records' table sorts by the numbers behind its cells; a summary
    table without records by the number each cell starts with, in a column where most cells start with one."""
    if records is None:
        numeric = []
        for index in range(len(columns)):
            cells = [row[index] for row in rows if row[index].strip() not in ("", "–")]
            numeric.append(bool(cells) and 2 * sum(_number(cell) is not None for cell in cells) > len(cells))
        header = "".join(
            f'<th{NUMBER if number else ""}><button type="button">{html.escape(column)}</button></th>'
            for column, number in zip(columns, numeric, strict=True)
        )
        body = "".join(
            "<tr>" + "".join(_summary_cell(cell, number) for cell, number in zip(row, numeric, strict=True)) + "</tr>"
            for row in rows
        )
        return f'<table class="sortable"><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>'
    header = ""
    for column in columns:
        kind = ' class="number"' if column in sort_keys else ""
        header += f'<th{kind}><button type="button">{html.escape(column)}</button></th>'
    body = ""
    for row, record in zip(rows, records, strict=True):
        cells = "".join(_cell(column, cell, record, sort_keys) for column, cell in zip(columns, row, strict=True))
        body += f"<tr>{cells}</tr>" if record["ok"] else f'<tr class="failed">{cells}</tr>'
    return f'<table class="sortable"><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>'


def _markdown(lines: list[str], out: Path) -> str:
    """The body of a results.md written by its own mode (the map, the labs) as HTML: headings, paragraphs, lists,
    its tables sortable and its charts inside the page."""
    parts, index = [], 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("|"):
            block = []
            while index < len(lines) and lines[index].startswith("|"):
                block.append([cell.strip() for cell in lines[index].strip().strip("|").split("|")])
                index += 1
            rows = [row + [""] * (len(block[0]) - len(row)) for row in block[2:]]  # a NOT OK row has fewer cells
            parts.append(_table(tuple(block[0]), rows))
            continue
        if line.startswith("- "):
            items = []
            while index < len(lines) and lines[index].startswith("- "):
                items.append(f"<li>{_code(lines[index][2:])}</li>")
                index += 1
            parts.append(f"<ul>{''.join(items)}</ul>")
            continue
        if chart := re.fullmatch(r"!\[.*\]\((.+\.png)\)", line):
            parts.append(_chart(out / chart.group(1)) if (out / chart.group(1)).exists() else "")
        elif line.startswith("## "):
            parts.append(f"<h2>{_code(line[3:])}</h2>")
        elif line.strip():
            parts.append(f"<p>{_code(line)}</p>")
        index += 1
    return "\n".join(parts)


def _code(markdown: str) -> str:
    """A line of results.md with `code` and **bold** as HTML."""
    pieces = re.split(r"`([^`]*)`", markdown)  # every odd piece was between backticks
    return "".join(
        f"<code>{html.escape(piece)}</code>" if index % 2 else _inline(piece) for index, piece in enumerate(pieces)
    )


def _chart(path: Path) -> str:
    # Inside the page, so that index.html alone (mailed, downloaded from CI) shows everything.
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<figure><img alt="{html.escape(path.name)}" src="data:image/png;base64,{data}"></figure>'


def _metadata(metadata: dict, mode: str) -> str:
    facts = {
        "date": metadata.get("date"),
        "git commit": metadata.get("git_commit"),
        "cores": metadata.get("cpu_count"),
        "kernel": f"Linux {metadata['kernel']}" if metadata.get("kernel") else None,
        "Docker": metadata.get("docker_version"),
        "Compose": metadata.get("compose_version"),
        "mode": mode,
    }
    items = "".join(f"<dt>{name}</dt><dd>{html.escape(str(value or '–'))}</dd>" for name, value in facts.items())
    return f"<dl>{items}</dl>"


def _command_label(record: dict) -> str:
    if "c" in record:
        return report._label(record)
    # A latency record: a target at an offered rate, not a number of clients.
    rate = f", {record['offered_rps']:g} requests/s" if "offered_rps" in record else ""
    return f"{record['scenario']} / {record['target']}{rate}"


def _commands(records: list[dict]) -> str:
    items, based = "", set()
    for record in records:
        label = html.escape(_command_label(record))
        if record.get("base_command") and record["target"] not in based:
            # The closed-loop run that measured a latency target's base rate, once, before its first rate.
            based.add(record["target"])
            base = html.escape(record["base_command"])
            items += f"<li>{html.escape(record['target'])}, base rate: <code>{base}</code></li>"
        if record.get("command"):
            items += f"<li>{label}: <code>{html.escape(record['command'])}</code></li>"
        else:
            items += f"<li>{label}: not run ({html.escape(str(record.get('problem')))})</li>"
    return f"<h2>Commands, one per row</h2><ol>{items}</ol>"


def _packages(metadata: dict) -> str:
    items = "".join(
        f"<li><code>{html.escape(image)}</code>: {html.escape(' '.join(names))}</li>"
        for image, names in (metadata.get("packages") or {}).items()
    )
    return f"<details><summary>Packages in the images</summary><ul>{items}</ul></details>" if items else ""


PAGE = Template("""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>$title</title>
<style>
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em; color: #222; }
code { font: 12px ui-monospace, monospace; background: #f3f3f3; padding: 0 0.2em; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0 1em; }
dt { font-weight: bold; }
dd { margin: 0; }
table { border-collapse: collapse; margin: 1em 0; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
th { background: #eee; position: sticky; top: 0; }
td[data-sort] { white-space: nowrap; }
td.number { text-align: right; }
td.problem { min-width: 20em; }
tbody tr:nth-child(even) { background: #fafafa; }
tr.failed td { color: #b00; }
th button { all: unset; cursor: pointer; display: block; min-width: 2em; min-height: 1em; }
th button:focus-visible { outline: 2px solid #36c; }
th[aria-sort=ascending] button::after { content: " ▲"; }
th[aria-sort=descending] button::after { content: " ▼"; }
figure { margin: 1em 0; }
img { max-width: 100%; }
</style>
</head>
<body>
<h1>$heading</h1>
<p>Result set <code>$title</code>.</p>
<p><code>$command</code></p>
$metadata
<p>$verdict</p>
$summary
$sorting
$table
<p>$ceiling</p>
$charts
$commands
$packages
<script>
// Sort the table by a column: ascending on the first click, descending on the next. Cells carry their sort value
// in data-sort (a number in numeric columns); a cell without one (– or FAILED) goes last in both directions.
for (const table of document.querySelectorAll("table.sortable")) {
  const headers = [...table.tHead.rows[0].cells];
  headers.forEach((header, column) => {
    header.querySelector("button").addEventListener("click", () => {
      const ascending = header.getAttribute("aria-sort") !== "ascending";
      headers.forEach((other) => other.removeAttribute("aria-sort"));
      header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      const numeric = header.classList.contains("number");
      const value = (row) => {
        const sort = row.cells[column].dataset.sort;
        return sort === undefined || !numeric ? sort : Number(sort);
      };
      const compare = (a, b) => (numeric ? (a > b) - (a < b) : a.localeCompare(b, undefined, { numeric: true }));
      const body = table.tBodies[0];
      const rows = [...body.rows].sort((rowA, rowB) => {
        const a = value(rowA), b = value(rowB);
        if (a === undefined || b === undefined) return (a === undefined) - (b === undefined);
        return ascending ? compare(a, b) : compare(b, a);
      });
      body.append(...rows);
    });
  });
}
</script>
</body>
</html>
""")


SORTING = (
    "<p>Click a column's name to sort by it; click again to reverse. Cells with no value (–) and FAILED ones stay"
    " last.</p>"
)


def render(out: Path) -> None:
    document = json.loads((out / "results.json").read_text())
    metadata, records = document["metadata"], document["results"]
    mode = report._mode(metadata)
    if mode == "latency":
        page = PAGE.substitute(
            title=html.escape(out.resolve().name),
            heading="Latency at fixed request rates: vegeta, open loop",
            command=html.escape(str(metadata.get("command", "–"))),
            metadata=_metadata(metadata, mode),
            verdict=_inline(report.latency_verdict(records)),
            summary="",
            table=_table(report.LATENCY_COLUMNS, [report._latency_row(r) for r in records], records, LATENCY_SORT_KEYS),
            sorting=SORTING,
            ceiling=html.escape(report.LATENCY_NOTE),
            charts=_chart(out / "latency.png") if (out / "latency.png").exists() else "",
            commands=_commands(records),
            packages=_packages(metadata),
        )
        (out / "index.html").write_text(page)
        return
    if mode == "slowclients":
        summary, method = report.slowclients_notes(metadata)
        header, rows = report._slowclients_summary(records)
        level_header, level_rows = report._slowclients_level_rows(records)
        page = PAGE.substitute(
            title=html.escape(out.resolve().name),
            heading="Slow clients: how many slow connections delay a normal request",
            command=html.escape(str(metadata.get("command", "–"))),
            metadata=_metadata(metadata, mode),
            verdict=_inline(report.slowclients_verdict(records)),
            summary=f"<p>{_inline(summary)}</p>" + _table(tuple(header), rows),
            table=_table(tuple(level_header), level_rows),
            sorting=SORTING,
            ceiling=_inline(method),
            charts="",
            commands="<h2>Commands</h2><p>Every level of every target: <code>"
            + html.escape(str(metadata.get("command")))
            + "</code></p>",
            packages=_packages(metadata),
        )
        (out / "index.html").write_text(page)
        return
    if mode in ("map", "labs"):
        # Their results.md is the page: its heading, command and facts above it, its tables and charts below.
        lines = (out / "results.md").read_text().splitlines()
        heading = lines[0].removeprefix("# ")
        body = [line for line in lines[1:] if line != f"`{metadata.get('command')}`"]
        page = PAGE.substitute(
            title=html.escape(out.resolve().name),
            heading=html.escape(heading),
            command=html.escape(str(metadata.get("command", "–"))),
            metadata=_metadata(metadata, mode),
            verdict="",
            summary="",
            sorting=SORTING,
            table=_markdown(body, out),
            ceiling="",
            charts="",
            commands="",
            packages=_packages(metadata),
        )
        (out / "index.html").write_text(page)
        return
    rows = report.summarise(records)  # with repeats, one row per target and load
    charts = [out / chart for chart in report._charts(mode) if (out / chart).exists()]
    page = PAGE.substitute(
        title=html.escape(out.resolve().name),
        command=html.escape(str(metadata.get("command", "–"))),
        metadata=_metadata(metadata, mode),
        verdict=_inline(report._verdict(mode, records)),
        summary=_table(report.OVERLOAD_COLUMNS, report._overload_rows(records)) if mode == "overload" else "",
        table=_table(report.COLUMNS, [report._row(record) for record in rows], rows),
        heading=html.escape(report.title(metadata, records)),
        sorting=SORTING,
        ceiling=html.escape(report._ceiling_notes(records)),
        charts="\n".join(_chart(chart) for chart in charts),
        commands=_commands(records),
        packages=_packages(metadata),
    )
    (out / "index.html").write_text(page)


if __name__ == "__main__":
    render(Path(sys.argv[1]))
