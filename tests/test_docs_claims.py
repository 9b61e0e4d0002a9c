"""Comparative claims in README.md and docs/*.md checked against their sets (tests/claims.py says how a claim is
written): each claim holds; the comparisons that earlier text got wrong fail as claims, so the check would have
caught them; and in the pages the check covers, no comparative sentence goes without its claim."""

from __future__ import annotations

import re

import pytest

from tests.claims import ROOT, Claim, ClaimError, check, claims_in

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# The pages whose every comparative sentence carries its claim (docs/tests.md): the others are being brought in
# as they are rewritten from the newest sets.
FULLY_CLAIMED = ("README.md", "docs/recommend.md")
COMPARATIVE = re.compile(
    r"\b(first|last|best|worst|leads?|led|ahead|beats?|wins?|overlap\w*|within (?:the |its |each other's )?spread"
    r"|halves?|halved|a third|twice|(?:\d+|two|three|four|five|six) of (?:the )?(?:\d+|two|three|four|five|six|seven)"
    r"|every|all|none)\b|\bx\d+(?:\.\d+)?\b",
    re.I,
)


def page_claims() -> list[tuple[str, Claim]]:
    return [(str(page.relative_to(ROOT)), claim) for page in PAGES for claim in claims_in(page.read_text())]


@pytest.mark.parametrize(("page", "claim"), page_claims(), ids=lambda value: getattr(value, "text", value))
def test_every_claim_in_the_pages_holds(page: str, claim: Claim) -> None:
    assert check(claim), f"{page}: {claim.text}"


# What earlier text said, as claims on the sets it cited, each false there: the check fails on each.
WRONG_BEFORE = (
    (
        "granian's 2 x 8 threads first on fast queries (it led at 32 clients, fifth at 8)",
        "2026-11-25-bookstore | first rps bookstore-granian | load=author clients=8",
    ),
    (
        "three of the six CPython ways within 1.3 x pgbench's 0.78 ms (two were)",
        "2026-11-25-bookstore | count 3 pg_cpu_ms_per_request <= 1.014"
        " | load=author clients=32 target!=bookstore-gunicorn-gevent-pypy",
    ),
    (
        "committed reads halve Postgres's work (1.25 to 0.81 ms: a third)",
        "2026-11-25-bookstore-ladder | ratio pg_cpu_ms_per_request bookstore-ladder-prepared"
        " bookstore-gunicorn-gevent 0.45..0.55 | load=author",
    ),
    (
        "gevent and asyncio answer 503s on the slow page (uWSGI's gevent loop answered none)",
        "2026-11-25-bookstore | count all status_503 > 0 | load=slow clients=256 mode!=sync",
    ),
    (
        "two gevent processes better than the threads in every other cell of the map (x0.85 in one, x1.00 in another)",
        "2026-11-23-map | each delay,cpu_units,c ratio rps gunicorn-gevent-2-workers gunicorn-sync 1.001..100"
        " | cpu_units!=10",
    ),
    (
        "uWSGI's two gevent processes ahead of gunicorn's one at 1000 clients (their ranges overlap)",
        "2026-11-25-repeat3 | ahead rps uwsgi-gevent gunicorn-gevent | c=1000",
    ),
)


@pytest.mark.parametrize(("said", "claim"), WRONG_BEFORE, ids=[said for said, _ in WRONG_BEFORE])
def test_what_earlier_text_got_wrong_fails_as_a_claim(said: str, claim: str) -> None:
    assert not check(Claim.parse(claim)), said


# And what the sets do show, for the same comparisons: the predicates are not false on everything.
RIGHT_NOW = (
    "2026-11-25-bookstore | first rps bookstore-granian | load=author clients=32",
    "2026-11-25-bookstore | count 2 pg_cpu_ms_per_request <= 1.014 | load=author clients=32"
    " target!=bookstore-gunicorn-gevent-pypy",
    "2026-11-25-bookstore-ladder | ratio pg_cpu_ms_per_request bookstore-ladder-prepared bookstore-gunicorn-gevent"
    " 0.6..0.7 | load=author",
    "2026-11-23-map | each delay,cpu_units,c ratio rps gunicorn-gevent-2-workers gunicorn-sync 0.85..2.1",
    "2026-11-25-repeat3 | overlap rps uwsgi-gevent gunicorn-gevent | c=1000",
)


@pytest.mark.parametrize("claim", RIGHT_NOW)
def test_what_the_sets_show_holds_as_a_claim(claim: str) -> None:
    assert check(Claim.parse(claim)), claim


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-25-repeat3 | first rps no-such-target | c=1000",
        "2026-11-25-repeat3 | first rps gunicorn-gevent | c=7",
        "no-such-set | first rps gunicorn-gevent",
        "2026-11-25-repeat3 | best rps gunicorn-gevent",
        "2026-11-25-repeat3 | first no_such_field gunicorn-gevent | c=1000",
        "2026-11-25-repeat3",
    ],
)
def test_a_claim_that_names_what_its_set_lacks_is_an_error_not_a_pass(text: str) -> None:
    with pytest.raises(ClaimError):
        check(Claim.parse(text))


# A block that states a measurement: a figure with decimals, a percentage, or a result set named.
MEASURED = re.compile(r"\d\.\d|\d ?%|results/\d{4}-")


def paragraphs(text: str) -> list[str]:
    """Its paragraphs and list items, less code blocks, tables and headings."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    blocks = re.split(r"\n\s*\n|\n(?=- )", text)
    return [b for b in blocks if b.strip() and not b.lstrip().startswith(("|", "#"))]


@pytest.mark.parametrize("page", FULLY_CLAIMED)
def test_every_comparative_sentence_of_a_claimed_page_carries_its_claim(page: str) -> None:
    """A paragraph that states a measurement and compares (tests/claims.py lists the words) names its claim."""
    unclaimed = []
    for block in paragraphs((ROOT / page).read_text()):
        said = re.sub(r"<!--.*?-->|`[^`]*`|\]\([^)]*\)", "", block, flags=re.S)
        if MEASURED.search(said) and COMPARATIVE.search(said) and not claims_in(block):
            unclaimed.append(block.strip()[:120])
    assert not unclaimed, unclaimed
