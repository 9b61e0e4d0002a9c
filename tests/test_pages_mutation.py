"""The reviewer's test, run on every figure and comparison word: each number in the prose and tables of the rendered
pages (README.md and those of docs/ in PAGES), and each comparison word, changed in turn on an in-memory
copy of the page; the docs checks decide whether the mutant is caught (killed): the page equals its rendering from
the sets (tests/test_pages.py), every claim holds (tests/test_docs_claims.py), every figure is in its set
(tests/test_docs_figures.py).

It prints the kill rate, what the claims and figures checks alone catch (what the pages had before they were
rendered), and the survivors; and, from a rendering that marks what the templates compute, which figures and words
a template still writes by hand: an edit there would be rendered into the page and pass."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from bench.pages.render import PAGES, ROOT, render
from tests.claims import Claim, ClaimError, check, claims_in
from tests.test_docs_figures import blocks, unmatched

# What a mutant may not touch: code (fenced and inline), comments (the claims and markers), link targets.
PROTECTED = re.compile(r"```.*?```|<!--.*?-->|`[^`\n]*`|\]\([^)\n]*\)", re.S)
NUMBER = re.compile(r"(?<![\d.])\d+(?:\.\d+)?")
# Each comparison word and what the reviewer turned it into.
WORDS = {
    "ahead of": "behind",
    "behind": "ahead of",
    "within the spread of": "ahead of",
    "overlap": "are apart",
    "every": "no",
    "none": "all",
    "all": "none",
    "both": "neither",
    "first": "last",
    "halves": "doubles",
    "at most": "at least",
    "only": "also",
}
WORD = re.compile(r"\b(" + "|".join(sorted(map(re.escape, WORDS), key=len, reverse=True)) + r")\b")
COMPUTED_START, COMPUTED_END = "\x02", "\x03"
MOST_BY_HAND = 2377  # what the templates write by hand (loads, settings, step numbers, versions, dates): 1337 before
# docs/bookstore.md and docs/load-generators.md were rendered, 480 more with them (their settings, versions, the
# ladder's table of settings), 125 more with docs/reliability.md and docs/hosts.md (status codes, versions, the
# servers' settings, and the words of what a test asserts: "at most", "every", "none"; their measured figures were
# dropped, their bounds are read from the tests), 593 more with docs/alternatives.md (its settings, versions, dates,
# commands and status codes, the prose's "every", "only", "first"; every figure and comparison of its five sets is
# computed), then 158 fewer (2535 to 2377) when what docs/alternatives.md said measured by hand and kept in no set (its
# blocks marked `figures: unchecked` and the like outside them) moved to dated pages of docs/history/, which the page
# links instead of stating a figure or comparison


@dataclass(frozen=True)
class Mutant:
    page: str
    start: int
    end: int
    replacement: str

    def applied(self, text: str) -> str:
        return text[: self.start] + self.replacement + text[self.end :]

    def said(self, text: str) -> str:
        line = text.count("\n", 0, self.start) + 1
        return f"{self.page}:{line} {text[self.start : self.end]!r} -> {self.replacement!r}"


def bigger(number: str) -> str:
    """The reviewer's kind of edit: the leading digit up by one ("1.70" -> "2.70", "980" -> "1980")."""
    first = number[0]
    return ("1" + number) if first == "9" else str(int(first) + 1) + number[1:]


def mutants(page: str, text: str) -> Iterator[Mutant]:
    protected = [match.span() for match in PROTECTED.finditer(text)]

    def free(start: int) -> bool:
        return not any(low <= start < high for low, high in protected)

    for match in NUMBER.finditer(text):
        if free(match.start()):
            yield Mutant(page, match.start(), match.end(), bigger(match.group()))
    for match in WORD.finditer(text):
        if free(match.start()):
            yield Mutant(page, match.start(), match.end(), WORDS[match.group()])


@cache
def claim_holds(text: str) -> bool:
    try:
        return check(Claim.parse(text))
    except ClaimError:
        return False


def claims_fail(text: str) -> bool:
    return not all(claim_holds(claim.text) for claim in claims_in(text))


def figures_fail(page: str, text: str, folder: Path, line: int | None = None) -> bool:
    """Whether the figures check fails on the page's text: on every block, or on the block holding `line`."""
    # blocks() reads a file; the copy keeps the page's name and depth so that its links and checks read the same.
    path = folder / page
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return any(
        unmatched(block)
        for block in blocks(path, ROOT)
        if line is None or block.line <= line < block.line + len(block.lines)
    )


def computed_spans(page: str) -> tuple[str, list[tuple[int, int]]]:
    """The page rendered with what its template computes marked: its text, and the spans of computed values."""

    def mark(value: Any) -> str:
        # a macro's value holds the marks of its own values: one span for the whole
        inner = str(value).replace(COMPUTED_START, "").replace(COMPUTED_END, "")
        return f"{COMPUTED_START}{inner}{COMPUTED_END}"

    marked = render(finalize=mark)[page]
    text, spans, offset = [], [], 0
    for piece in re.split(f"({COMPUTED_START}[^{COMPUTED_END}]*{COMPUTED_END})", marked):
        if piece.startswith(COMPUTED_START):
            value = piece[1:-1]
            spans.append((offset, offset + len(value)))
            piece = value
        text.append(piece)
        offset += len(piece)
    return "".join(text), spans


def test_nearly_every_changed_figure_and_comparison_word_is_caught(tmp_path: Path) -> None:
    rendered = render()
    killed, by_checks, survivors, by_hand, total = 0, 0, [], [], 0
    for page in PAGES:
        text = (ROOT / page).read_text()
        assert text == rendered[page], f"{page} is not its rendering: run `make pages` first"
        assert not claims_fail(text) and not figures_fail(page, text, tmp_path), f"{page} fails its checks as is"
        clean, spans = computed_spans(page)
        assert clean == text
        for mutant in mutants(page, text):
            total += 1
            changed = mutant.applied(text)
            line = text.count("\n", 0, mutant.start) + 1
            caught_by_checks = claims_fail(changed) or figures_fail(page, changed, tmp_path, line)
            by_checks += caught_by_checks
            if changed != rendered[page] or caught_by_checks:
                killed += 1
            else:
                survivors.append(mutant.said(text))
            if not caught_by_checks and not any(low <= mutant.start < high for low, high in spans):
                by_hand.append(mutant.said(text))
    rate = killed / total
    print(f"\n{total} mutants of {', '.join(PAGES)}: {killed} killed ({rate:.1%}); the claims and figures checks alone"
          f" {by_checks} ({by_checks / total:.1%})")  # fmt: skip
    print("survivors:", *survivors or ["none"], sep="\n  ")
    print(f"written by hand in the templates and caught by no check: {len(by_hand)}", *by_hand, sep="\n  ")
    assert rate >= 0.95, survivors
    # What the templates still write by hand (loads and settings, dates, the map's and the bookstore's figures) may
    # shrink as more becomes computed, never grow: a new figure or comparison word comes from the sets.
    assert len(by_hand) <= MOST_BY_HAND, by_hand


@pytest.mark.parametrize(("number", "bigger_one"), [("1.70", "2.70"), ("980", "1980"), ("0.88", "1.88")])
def test_a_number_is_changed_as_the_reviewer_did(number: str, bigger_one: str) -> None:
    assert bigger(number) == bigger_one
