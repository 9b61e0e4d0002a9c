"""OUT/index.html, the page every mode's renderer writes: one page that opens from disk with no network, the charts
inside it, every table sortable by any column. The pieces are here (a sortable table from rows and the records
behind them, a chart inline, the commands, the packages); each renderer puts its own in `write`. Knows no mode."""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from string import Template
from typing import Protocol, TypeVar

from bench.results.records import Metadata


def inline(markdown: str) -> str:
    """A cell or line of results.md as HTML: escaped, and its only markup, **bold**, kept."""
    return re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", html.escape(markdown))


class Judged(Protocol):
    """A row of a records' table: a failed one shows in red."""

    @property
    def ok(self) -> bool: ...


Row = TypeVar("Row", bound=Judged)
# What a numeric column sorts by: the number behind a row's cell, never its text ("4 x 50 threads").
SortKeys = Mapping[str, Callable[[Row], float | None]]


def record_cell(column: str, text: str, record: Row, sort_keys: SortKeys[Row]) -> str:
    # "–" (not measured) and FAILED cells carry no sort value: the script puts them last either way.
    if text == "–":
        return f"<td>{inline(text)}</td>"
    if text.startswith("**FAILED**"):
        return f'<td class="problem">{inline(text)}</td>'
    if column not in sort_keys:
        return f'<td data-sort="{html.escape(text)}">{inline(text)}</td>'
    key = sort_keys[column](record)
    if key is None:
        return f'<td class="number">{inline(text)}</td>'
    # JSON writes an unbounded "at once" as Infinity, which is what JavaScript's Number() reads.
    return f'<td class="number" data-sort="{json.dumps(key)}">{inline(text)}</td>'


def leading_number(text: str) -> float | None:
    """The number a summary cell starts with ("x1.07 (a tie)", "20 ms", "**25** (5.0 s)"), or None."""
    match = re.match(r"[*x]*(-?\d+(?:\.\d+)?)", text.strip())
    return float(match.group(1)) if match else None


NUMBER = ' class="number"'


def summary_cell(text: str, numeric: bool) -> str:
    if not numeric:
        return f'<td data-sort="{html.escape(text)}">{inline(text)}</td>'
    value = leading_number(text)
    if value is None:  # "–", "none", NOT OK: no sort value, last either way
        return f'<td class="number">{inline(text)}</td>'
    return f'<td class="number" data-sort="{json.dumps(value)}">{inline(text)}</td>'


def table(
    columns: tuple[str, ...],
    rows: list[list[str]],
    records: Sequence[Row] | None = None,
    sort_keys: SortKeys[Row] | None = None,
) -> str:
    """Every table sorts (a button per header). The records' table sorts by the numbers behind its cells; a summary
    table without records by the number each cell starts with, in a column where most cells start with one."""
    if records is None:
        numeric = []
        for index in range(len(columns)):
            filled = [row[index] for row in rows if row[index].strip() not in ("", "–")]
            numeric.append(bool(filled) and 2 * sum(leading_number(text) is not None for text in filled) > len(filled))
        header = "".join(
            f'<th{NUMBER if numbers else ""}><button type="button">{html.escape(column)}</button></th>'
            for column, numbers in zip(columns, numeric, strict=True)
        )
        body = "".join(
            "<tr>" + "".join(summary_cell(text, numbers) for text, numbers in zip(row, numeric, strict=True)) + "</tr>"
            for row in rows
        )
        return f'<table class="sortable"><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>'
    sort_keys = sort_keys or {}
    header = ""
    for column in columns:
        kind = ' class="number"' if column in sort_keys else ""
        header += f'<th{kind}><button type="button">{html.escape(column)}</button></th>'
    body = ""
    for row, record in zip(rows, records, strict=True):
        cells = "".join(record_cell(column, text, record, sort_keys) for column, text in zip(columns, row, strict=True))
        body += f"<tr>{cells}</tr>" if record.ok else f'<tr class="failed">{cells}</tr>'
    return f'<table class="sortable"><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>'


def markdown(lines: list[str], out: Path) -> str:
    """The body of a results.md written by its own mode (the map, the labs) as HTML: headings, paragraphs, lists,
    its tables sortable and its charts inside the page."""
    parts, index = [], 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("|"):
            block = []
            while index < len(lines) and lines[index].startswith("|"):
                block.append([text.strip() for text in lines[index].strip().strip("|").split("|")])
                index += 1
            rows = [row + [""] * (len(block[0]) - len(row)) for row in block[2:]]  # a NOT OK row has fewer cells
            parts.append(table(tuple(block[0]), rows))
            continue
        if line.startswith("- "):
            items = []
            while index < len(lines) and lines[index].startswith("- "):
                items.append(f"<li>{code(lines[index][2:])}</li>")
                index += 1
            parts.append(f"<ul>{''.join(items)}</ul>")
            continue
        if image := re.fullmatch(r"!\[.*\]\((.+\.png)\)", line):
            parts.append(chart(out / image.group(1)) if (out / image.group(1)).exists() else "")
        elif line.startswith("## "):
            parts.append(f"<h2>{code(line[3:])}</h2>")
        elif line.strip():
            parts.append(f"<p>{code(line)}</p>")
        index += 1
    return "\n".join(parts)


def code(line: str) -> str:
    """A line of results.md with `code` and **bold** as HTML."""
    pieces = re.split(r"`([^`]*)`", line)  # every odd piece was between backticks
    return "".join(
        f"<code>{html.escape(piece)}</code>" if index % 2 else inline(piece) for index, piece in enumerate(pieces)
    )


def chart(path: Path) -> str:
    # Inside the page, so that index.html alone (mailed, downloaded from CI) shows everything.
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<figure><img alt="{html.escape(path.name)}" src="data:image/png;base64,{data}"></figure>'


def facts(metadata: Metadata, mode: str) -> str:
    listed = {
        "date": metadata.date,
        "git commit": metadata.git_commit,
        "cores": metadata.cpu_count,
        **({"CPU": metadata.cpu_model} if metadata.cpu_model else {}),
        "kernel": f"Linux {metadata.kernel}" if metadata.kernel else None,
        "Docker": metadata.docker_version,
        "Compose": metadata.compose_version,
        "mode": mode,
    }
    items = "".join(f"<dt>{name}</dt><dd>{html.escape(str(value or '–'))}</dd>" for name, value in listed.items())
    return f"<dl>{items}</dl>"


def commands(ran: Iterable[tuple[str, str | None, str | None]]) -> str:
    """The commands, one per row of the set: (what ran, its command or None where nothing ran, and then why)."""
    items = ""
    for label, command, problem in ran:
        if command:
            items += f"<li>{html.escape(label)}: <code>{html.escape(command)}</code></li>"
        else:
            items += f"<li>{html.escape(label)}: not run ({html.escape(str(problem))})</li>"
    return f"<h2>Commands, one per row</h2><ol>{items}</ol>"


def packages(metadata: Metadata) -> str:
    items = "".join(
        f"<li><code>{html.escape(image)}</code>: {html.escape(' '.join(names))}</li>"
        for image, names in metadata.packages.items()
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


def write(
    out: Path,
    metadata: Metadata,
    mode: str,
    *,
    heading: str,
    table: str,
    verdict: str = "",
    summary: str = "",
    note: str = "",
    charts: str = "",
    commands: str = "",
) -> None:
    """OUT/index.html: the set's name, command and machine, then what the renderer gives, in the page's order.
    The heading is text; every other part is HTML already (the renderer escapes its own text)."""
    page = PAGE.substitute(
        title=html.escape(out.resolve().name),
        heading=html.escape(heading),
        command=html.escape(metadata.command),
        metadata=facts(metadata, mode),
        verdict=verdict,
        summary=summary,
        sorting=SORTING,
        table=table,
        ceiling=note,
        charts=charts,
        commands=commands,
        packages=packages(metadata),
    )
    (out / "index.html").write_text(page)


def from_markdown(out: Path, metadata: Metadata, mode: str) -> None:
    """index.html for a set whose results.md is the page (the map, the labs): its heading, command and facts above,
    its tables, lists and charts below."""
    lines = (out / "results.md").read_text().splitlines()
    body = [line for line in lines[1:] if line != f"`{metadata.command}`"]
    write(out, metadata, mode, heading=lines[0].removeprefix("# "), table=markdown(body, out))
