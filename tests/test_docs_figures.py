"""Every figure in README.md and docs/*.md that names its result set matches that set's results.json.

The convention (docs/tests.md says it for writers):
- A table is checked against every result set linked (`[...](results/<set>/...)`) in the table itself or in the
  paragraph right above it, its caption. Every number in its cells is checked, except in the first column
  (the row's name) and in columns named by `<!-- figures: unchecked columns: <header>, ... -->` just above it;
  whole numbers only in cells of figures alone ("189", "205 → 205"), as in prose below.
- A paragraph (each list item is one) is checked against every set it links: its figures with decimals and its
  percentages. Whole numbers in prose are loads and settings ("200 clients", "4 x 50"), so they are not.
- `<!-- figures: results/<set> -->` under a heading checks every paragraph and table up to the next heading
  of the same or a higher level against that set too: a walkthrough whose steps all quote one run.
- `<!-- figures: unchecked (reason) -->` right above a paragraph or table leaves it out: figures derived by
  arithmetic across records, prose about several runs.
A figure matches when some value of the set, printed with the figure's decimals, is the figure: a number of
a record or of the metadata; for a percentage, a ratio; for a figure in seconds, also milliseconds; CPU seconds
per request as milliseconds, requests per second as a share of the ceiling, and the medians, extremes and
spread of repeated runs (as `make bench REPEAT=k` prints them). In a table row named after a target or
scenario of the set, only that one's records count; elsewhere the value may sit anywhere in the set, so a
figure changed to another value of the same set is not caught there.
"""

from __future__ import annotations

import bisect
import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.render.bench import summarise

ROOT = Path(__file__).resolve().parent.parent
# A Markdown link to a file of a set, `[...](results/<set>/...)` or `(../results/<set>/...)` from docs/.
SET_LINK = re.compile(r"\]\((?:\.\./)?results/(\d{4}-\d{2}-\d{2}-[A-Za-z0-9_-]+)/")
SCOPE = re.compile(r"<!--\s*figures:\s*results/([A-Za-z0-9_-]+)/?\s*-->")
UNCHECKED = re.compile(r"<!--\s*figures:\s*unchecked\b(?!\s+columns)")
UNCHECKED_COLUMNS = re.compile(r"<!--\s*figures:\s*unchecked columns:\s*(.*?)\s*-->")
# "1 054" (a space between thousands, as the latency tables print them) is one number.
NUMBER = re.compile(r"(?<![\w.])((?:\d{1,3}(?: \d{3})+|\d+)(?:\.\d+)?)(?![\w.]*\d)(\s?%|\s?s\b)?")
INLINE_CODE = re.compile(r"`[^`]*`")
RANGE_END = re.compile(r"\s*(?:to|-|–)\s*\d[\d.]*\s?(%|s\b)")
LINK_TARGET = re.compile(r"\]\([^)]*\)")
# A cell of figures alone ("189", "205 → 205", "581.4 (0.78)", "1.3 s"): its whole numbers are figures too.
FIGURES_ONLY = re.compile(r"[\d.,%()\s→–x*-]*(?:\s?(?:s|ms|MB))?[\d.,%()\s→–*-]*")
# A version (PyPy 3.11, gunicorn 26.0) or a multiplier derived from two records (x1.80) is no figure of a set.
NOT_A_FIGURE = re.compile(
    r"(?:\b[vx]|(?:Python|PyPy|gunicorn|Compose|Docker|Debian|HTTP|v2|ab|uvloop|Flask|gevent|requests|urllib3"
    r"|greenlet|granian|Quart|uWSGI|aiohttp|psycopg|Nginx) )$"
)


@dataclass
class Block:
    """A paragraph or a table of one Markdown file, with the result sets its figures must come from."""

    path: Path
    line: int
    kind: str  # "paragraph" or "table"
    lines: list[str]
    sets: set[str]
    unchecked_columns: set[str]


@dataclass
class Figure:
    text: str
    value: float
    decimals: int
    percent: bool
    seconds: bool = False
    row: str = ""  # a table row's name (its first cell), empty in prose


def blocks(path: Path) -> Iterator[Block]:
    """Split a Markdown file into paragraphs and tables (code blocks left out), each with its sets."""
    lines = path.read_text(encoding="utf-8").splitlines()
    scopes: list[tuple[int, str]] = []  # (heading level, set) of each figures comment in force
    level = 0
    caption: set[str] = set()
    unchecked = False
    unchecked_columns: set[str] = set()
    in_code = False
    current: list[str] = []
    start = 0

    def flush() -> Iterator[Block]:
        nonlocal caption, unchecked, unchecked_columns
        if not current:
            return
        kind = "table" if current[0].lstrip().startswith("|") else "paragraph"
        linked = set(SET_LINK.findall("\n".join(current)))
        sets = linked | {name for _, name in scopes} | (caption if kind == "table" else set())
        if not unchecked and sets:
            yield Block(path, start + 1, kind, list(current), sets, unchecked_columns)
        caption = linked if kind == "paragraph" else set()
        unchecked, unchecked_columns = False, set()
        current.clear()

    for number, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("```"):
            yield from flush()
            in_code = not in_code
            continue
        if in_code:
            continue
        heading = re.match(r"(#+)\s", stripped)
        if heading:
            yield from flush()
            level = len(heading.group(1))
            scopes = [(at, name) for at, name in scopes if at < level]
            caption = set()
            continue
        if stripped.startswith("<!--"):
            yield from flush()
            if scope := SCOPE.search(stripped):
                scopes.append((level, scope.group(1)))
            elif columns := UNCHECKED_COLUMNS.search(stripped):
                unchecked_columns = {name.strip() for name in columns.group(1).split(",")}
            elif UNCHECKED.search(stripped):
                unchecked = True
            continue
        is_table = stripped.startswith("|")
        list_item = bool(re.match(r"(?:[-*]|\d+\.)\s", stripped))
        if not stripped or list_item or (current and is_table != current[0].lstrip().startswith("|")):
            yield from flush()
        if stripped:
            if not current:
                start = number
            current.append(line)
    yield from flush()


def figures_in(text: str, whole_numbers: bool) -> Iterator[Figure]:
    text = LINK_TARGET.sub("]", INLINE_CODE.sub(" ", text))
    for match in NUMBER.finditer(text):
        unit = (match.group(2) or "").strip()
        if not unit and (shared := RANGE_END.match(text, match.end())):
            unit = shared.group(1)  # "1.11 to 1.37 s": the unit after a range is both ends
        number, percent = match.group(1).replace(" ", ""), unit == "%"
        decimals = len(number.partition(".")[2])
        if not (decimals or percent or whole_numbers) or NOT_A_FIGURE.search(text[: match.start()]):
            continue
        yield Figure(match.group(1), float(number), decimals, percent, seconds=unit == "s")


def figures(block: Block) -> Iterator[Figure]:
    if block.kind == "paragraph":
        yield from figures_in(" ".join(block.lines), whole_numbers=False)
        return
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in block.lines]
    header = rows[0]
    skipped = {index for index, name in enumerate(header) if name in block.unchecked_columns}
    for row in rows[2:]:  # after the header and its |---| line
        for index, cell in enumerate(row):
            if index and index not in skipped:
                for figure in figures_in(cell, whole_numbers=bool(FIGURES_ONLY.fullmatch(cell))):
                    figure.row = row[0]
                    yield figure


def _values(record: dict) -> Iterator[float]:
    for value in record.values():
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            yield float(value)
        elif isinstance(value, dict):
            yield from _values(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    yield from _values(item)
                elif isinstance(item, int | float) and not isinstance(item, bool):
                    yield float(item)


def _derived(record: dict) -> Iterator[float]:
    """What the reports print from a record rather than store in it."""
    requests = record.get("complete") or record.get("n")
    if requests and isinstance(record.get("cpu_seconds"), int | float):
        yield 1000 * record["cpu_seconds"] / requests
        others = record.get("cpu_seconds_others") or {}
        yield 1000 * sum(others.values()) / requests
        yield from (1000 * spent / requests for spent in others.values())
    if record.get("rps") and record.get("ceiling_rps"):
        yield record["rps"] / record["ceiling_rps"]
    if record.get("rps_median"):
        yield (record["rps_max"] - record["rps_min"]) / record["rps_median"]
        if record.get("ceiling_rps"):
            yield record["rps_median"] / record["ceiling_rps"]


def set_values(name: str) -> dict[str, list[float]]:
    """Every value a set's figures may quote, in the units the JSON holds them: under "" all of them, and
    under each target's and scenario's name the values of its own records."""
    path = ROOT / "results" / name / "results.json"
    assert path.exists(), f"results/{name}/ is linked but has no results.json"
    data = json.loads(path.read_text())
    records = [record for record in data["results"] if isinstance(record, dict)]
    # Records of `make bench` also print as summarise() rows: medians, extremes and spread of repeats.
    bench_keys = {"scenario", "target", "n", "c", "delay", "client", "rps", "ok"}
    bench_records = [record for record in records if bench_keys <= set(record)]
    rows = summarise(bench_records) if bench_records else []
    # The metadata too: build times and image sizes are figures of the run.
    by_name: dict[str, list[float]] = {"": [*_values(data.get("metadata", {}))]}
    for record in (*records, *rows):
        values = [*_values(record), *_derived(record)]
        by_name[""] += values
        for key in ("target", "scenario", "label"):
            if isinstance(record.get(key), str):
                by_name.setdefault(record[key], []).extend(values)
    return by_name


_SETS: dict[str, dict[str, list[float]]] = {}


def matches(figure: Figure, values: list[float]) -> bool:
    """Whether a value rounds to the figure; `values` sorted, so each scale is one binary search."""
    tolerance = 0.5 * 10**-figure.decimals + 1e-9
    # A share prints as a percentage, milliseconds as seconds; a bare number is the value itself.
    scales = (100.0,) if figure.percent else (1.0, 0.001) if figure.seconds else (1.0,)
    for scale in scales:
        low = bisect.bisect_left(values, (figure.value - tolerance) / scale)
        if low < len(values) and values[low] * scale <= figure.value + tolerance:
            return True
    return False


def _candidates(block: Block, row: str) -> list[float]:
    return _candidates_for(tuple(sorted(block.sets)), row)


@functools.cache
def _candidates_for(set_names: tuple[str, ...], row: str) -> list[float]:
    """A table row named after targets or scenarios of its sets is checked against their records only."""
    sets = [_SETS.setdefault(name, set_values(name)) for name in set_names]
    named = [
        values
        for by_name in sets
        for name, values in by_name.items()
        if name and row and re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", row)
    ]
    chosen = [value for values in named for value in values] if named else [v for s in sets for v in s[""]]
    return sorted(chosen)


def unmatched(block: Block) -> list[str]:
    return [figure.text for figure in figures(block) if not matches(figure, _candidates(block, figure.row))]


DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CHECKED = [block for document in DOCUMENTS for block in blocks(document)]


@pytest.mark.parametrize("block", CHECKED, ids=lambda block: f"{block.path.name}:{block.line}")
def test_every_linked_figure_is_in_its_result_set(block: Block) -> None:
    missing = unmatched(block)
    assert not missing, (
        f"{block.path.relative_to(ROOT)}:{block.line}: {missing} not found in {sorted(block.sets)}: "
        "fix the figure, or mark it as docs/tests.md says"
    )


def test_the_convention_reaches_the_main_tables() -> None:
    # A check that silently checked nothing would pass forever: the README's results tables must be in it.
    readme_tables = [block for block in CHECKED if block.path.name == "README.md" and block.kind == "table"]
    assert len(readme_tables) >= 3
    assert sum(1 for block in readme_tables for _ in figures(block)) > 200


def test_a_changed_number_in_a_real_table_fails(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = next(
        b for b in CHECKED
        if b.path.name == "README.md" and b.kind == "table" and "2026-11-24-repeat3" in b.sets
        and b.lines[0].startswith("| way of serving")
    )  # fmt: skip
    caption_and_table = _caption(readme, table) + "\n".join(table.lines) + "\n"
    doctored_file = tmp_path / "doctored.md"
    doctored_file.write_text(caption_and_table, encoding="utf-8")
    [honest] = [b for b in blocks(doctored_file) if b.kind == "table"]
    assert not unmatched(honest)

    # Change one figure of the table by a few units in its last place, to a value the set does not hold.
    figure = next(f for f in figures(honest) if f.decimals == 1 and not f.percent)
    values = _candidates(honest, figure.row)
    wrong = next(
        f"{figure.value + step / 10:.1f}"
        for step in (3, -3, 7, -7, 13, -13)
        if not matches(Figure("", figure.value + step / 10, 1, False), values)
    )
    doctored_file.write_text(caption_and_table.replace(figure.text, wrong, 1), encoding="utf-8")
    [doctored] = [b for b in blocks(doctored_file) if b.kind == "table"]
    assert unmatched(doctored) == [wrong]


def _caption(text: str, table: Block) -> str:
    """The paragraph right above a table, which links its set."""
    lines = text.splitlines()[: table.line - 1]
    while lines and not lines[-1].strip():
        lines.pop()
    paragraph: list[str] = []
    while lines and lines[-1].strip() and not lines[-1].lstrip().startswith(("#", "|", "<!--")):
        paragraph.insert(0, lines.pop())
    return "\n".join(paragraph) + "\n\n"


def test_a_figure_in_a_paragraph_that_links_a_set_is_checked(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    source = "[the run](results/2026-11-23-all/results.md)"
    page.write_text(f"slow_api alone did 747.3 requests per second at 1000 clients in {source}.\n")
    assert [unmatched(block) for block in blocks(page)] == [[]]
    page.write_text(f"slow_api alone did 757.3 requests per second at 1000 clients in {source}.\n")
    assert [unmatched(block) for block in blocks(page)] == [["757.3"]]
    page.write_text("<!-- figures: unchecked (derived) -->\n" + f"It did 757.3 in {source}.\n")
    assert list(blocks(page)) == []


def _anchor(heading: str) -> str:
    # GitHub's rule: lower case, punctuation other than - and _ dropped, spaces to dashes.
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_glossary_link_names_a_term_it_defines() -> None:
    glossary = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    terms = {_anchor(line.lstrip("#")) for line in glossary.splitlines() if line.startswith("#")}
    linked = {
        (document.name, anchor)
        for document in DOCUMENTS
        for anchor in re.findall(r"glossary\.md#([\w-]+)", document.read_text(encoding="utf-8"))
    }
    assert linked, "the README and docs link the glossary's terms"
    assert not {link for link in linked if link[1] not in terms}


def test_a_row_named_after_a_target_takes_its_figures_from_that_target(tmp_path: Path) -> None:
    # gunicorn-sync's median share in the repeated run is 0.95; 0.94 is another target's, so only the row's
    # own records can tell the two apart.
    caption = "From [the repeated run](results/2026-11-23-repeat3/results.md):\n\n"
    header = "| target | of slow_api alone |\n|---|---|\n"
    page = tmp_path / "rows.md"
    page.write_text(caption + header + "| gunicorn-sync | 0.95 |\n", encoding="utf-8")
    assert [unmatched(block) for block in blocks(page) if block.kind == "table"] == [[]]
    page.write_text(caption + header + "| gunicorn-sync | 0.94 |\n", encoding="utf-8")
    assert [unmatched(block) for block in blocks(page) if block.kind == "table"] == [["0.94"]]
    page.write_text(caption + header + "| gunicorn-gevent | 0.94 |\n", encoding="utf-8")
    assert [unmatched(block) for block in blocks(page) if block.kind == "table"] == [[]]
