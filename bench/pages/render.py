"""README.md and the pages of docs/ in PAGES rendered from their templates in pages/ and the result sets they
cite: each figure, range, ratio, count and comparison word about a set is a call of bench/pages/facts.py (or,
for a set's rows, bench/pages/rows.py) in the template."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from bench.models.spread import Spread
from bench.pages import asserted, bookstore, events, facts, grid, latency, loadgens, rows, words

ROOT = Path(__file__).resolve().parents[2]
PAGES = (
    "README.md",
    "docs/recommend.md",
    "docs/every-way.md",
    "docs/walkthrough.md",
    "docs/slow-clients.md",
    "docs/bonus.md",
    "docs/glossary.md",
    "docs/yourapp.md",
    "docs/latency.md",
    "docs/labs.md",
    "docs/map.md",
    "docs/incidents.md",
    "docs/several-machines.md",
    "docs/benchmark.md",
    "docs/bookstore.md",
    "docs/load-generators.md",
    "docs/reliability.md",
    "docs/hosts.md",
    "docs/alternatives.md",
)  # each rendered from pages/<page>.j2


def environment(root: Path, finalize: Callable[[Any], Any] | None = None) -> jinja2.Environment:
    """The templates' environment: an undefined name fails the rendering rather than printing nothing; `finalize`
    (tests/test_pages_mutation.py) sees every value a template prints."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(root / "pages"),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        finalize=finalize,
    )

    @cache
    def result_set(name: str) -> facts.Facts:
        return facts.Facts.of(root / "results" / name)

    env.globals.update(
        result_set=result_set,
        comparison=facts.comparison,
        quantifier=facts.quantifier,
        require=facts.require,
        quantified=facts.quantified,
        spread_of=Spread.of,
        share_cell=facts.share_cell,
        at_once=facts.at_once,
        standing=facts.standing,
        bound_verdict=facts.bound_verdict,
        one_to_every=facts.one_to_every,
        rows=rows,
        latency=latency,
        grid=grid,
        events=events,
        loadgens=loadgens,
        bookstore=bookstore,
        words=words,
        asserted=asserted,
    )
    env.filters.update(
        fixed=facts.fixed,
        times=facts.times,
        span=facts.span,
        at_most=facts.at_most,
        range=facts.spread_span,
        times_range=facts.times_span,
        seconds=facts.seconds,
        number_word=facts.number_word,
    )
    return env


def render(root: Path = ROOT, finalize: Callable[[Any], Any] | None = None) -> dict[str, str]:
    """Each page's text as its template renders it from the sets under root/results."""
    env = environment(root, finalize)
    return {page: env.get_template(f"{page}.j2").render() for page in PAGES}


def write(root: Path = ROOT) -> list[str]:
    """Each page written where it lives; the pages whose text changed."""
    changed = []
    for page, text in render(root).items():
        path = root / page
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            changed.append(page)
    return changed
