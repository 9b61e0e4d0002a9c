"""Comparative claims checked like figures: a sentence that says "first", "overlap", "within spread", "N of M",
"halves", "a third" or "xN" carries, in its paragraph, the predicate it makes about its set:

    <!-- claim: 2026-11-25-repeat3 | overlap rps uwsgi-gevent gunicorn-gevent | c=1000 -->

three parts split by `|`: the set (a folder of results/), the predicate, and the records it is about (`field=value`
pairs, `field!=value`, `field~=part` for a value that holds the part; a value with spaces written with `_` for
each space: `placement=one_core`). A target is named by its record's `label` (make map and make recommend name
their configurations) or else its `target`. A metric is a field of the records (`rps`, `p99_ms`, `vs_reference`,
`pg_cpu_ms_per_request`), or one field over another (`rps/reference_rps`). Each target's value is the median over
its repeats, its range their lowest and highest; the records counted are those whose `ok` is true and that no re-run
superseded.

Predicates:
- `first METRIC TARGET`, `last METRIC TARGET`: its median is the highest (the lowest) of the targets selected.
- `rank N METRIC TARGET`: the N-th highest.
- `overlap METRIC A B`, `apart METRIC A B`: their ranges overlap, or do not.
- `ahead METRIC A B`: A's lowest run above B's highest.
- `overlapping N METRIC TARGET`: the ranges of exactly N other targets overlap its range ("within the spread of").
- `ratio METRIC A B LOW..HIGH`: A's median over B's within LOW and HIGH ("halves": 0.45..0.55).
- `count N METRIC OP VALUE`: exactly N targets' medians satisfy OP (<, <=, >, >=) VALUE; N may be `all` or `none`.
- `runs N METRIC OP VALUE TARGET`: exactly N of the target's runs satisfy it ("one in three repeats").
- `each FIELD[,FIELD] PREDICATE`: the predicate holds in every group of the selected records with one value of
  those fields (each cell of a map).
"""

from __future__ import annotations

import json
import operator
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.pages.facts import FactError, select

ROOT = Path(__file__).resolve().parent.parent
CLAIM = re.compile(r"<!--\s*claim:\s*(.*?)\s*-->", re.S)
OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}  # fmt: skip


class ClaimError(ValueError):
    """A claim that cannot be read, or names what its set does not hold."""


@dataclass(frozen=True)
class Spread:
    median: float
    low: float
    high: float


@dataclass(frozen=True)
class Claim:
    set_name: str
    predicate: list[str]
    selection: list[str]
    text: str

    @classmethod
    def parse(cls, text: str) -> Claim:
        parts = [part.strip() for part in text.split("|")]
        if len(parts) not in (2, 3) or not parts[1]:
            raise ClaimError(f"a claim is `set | predicate | selection`: {text!r}")
        return cls(parts[0], parts[1].split(), parts[2].split() if len(parts) == 3 else [], text)


def records_of(set_name: str) -> list[dict[str, Any]]:
    path = ROOT / "results" / set_name / "results.json"
    if not path.exists():
        raise ClaimError(f"no set results/{set_name}")
    return [r for r in json.loads(path.read_text())["results"] if r.get("ok") and not r.get("superseded")]


def selected(records: list[dict[str, Any]], selection: list[str]) -> list[dict[str, Any]]:
    """The records matching every condition, as the rendered pages select them (bench/pages/facts.py)."""
    try:
        return select(records, " ".join(selection))
    except FactError as error:
        raise ClaimError(str(error)) from None


def name_of(record: dict[str, Any]) -> str:
    return str(record.get("label") or record["target"])


def value(record: dict[str, Any], metric: str) -> float:
    above, _, below = metric.partition("/")
    numbers = [record.get(field) for field in (above, below) if field]
    if any(not isinstance(number, int | float) for number in numbers):
        raise ClaimError(f"{name_of(record)} has no {metric}")
    return numbers[0] / numbers[1] if below else numbers[0]


def spreads(records: list[dict[str, Any]], metric: str) -> dict[str, Spread]:
    runs: dict[str, list[float]] = {}
    for record in records:
        runs.setdefault(name_of(record), []).append(value(record, metric))
    return {name: Spread(statistics.median(v), min(v), max(v)) for name, v in runs.items()}


def spread_of(found: dict[str, Spread], target: str) -> Spread:
    if target not in found:
        raise ClaimError(f"no target {target!r} among {sorted(found)}")
    return found[target]


def holds(predicate: list[str], records: list[dict[str, Any]]) -> bool:
    verb, arguments = predicate[0], predicate[1:]
    if verb == "each":
        fields = arguments[0].split(",")
        groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for record in records:
            groups.setdefault(tuple(record.get(f) for f in fields), []).append(record)
        return all(holds(arguments[1:], group) for group in groups.values())
    if verb in ("first", "last", "rank"):
        position = int(arguments.pop(0)) if verb == "rank" else 1
        metric, target = arguments
        found = spreads(records, metric)
        order = sorted(found, key=lambda name: found[name].median, reverse=verb != "last")
        spread_of(found, target)
        return order.index(target) + 1 == position
    if verb in ("overlap", "apart", "ahead"):
        metric, first, second = arguments
        found = spreads(records, metric)
        a, b = spread_of(found, first), spread_of(found, second)
        if verb == "ahead":
            return a.low > b.high
        return (a.low <= b.high and b.low <= a.high) == (verb == "overlap")
    if verb == "overlapping":
        wanted, metric, target = arguments
        found = spreads(records, metric)
        mine = spread_of(found, target)
        others = [s for name, s in found.items() if name != target and s.low <= mine.high and mine.low <= s.high]
        return len(others) == int(wanted)
    if verb == "ratio":
        metric, first, second, bounds = arguments
        found = spreads(records, metric)
        low, high = (float(end) for end in bounds.split(".."))
        return low <= spread_of(found, first).median / spread_of(found, second).median <= high
    if verb in ("count", "runs"):
        wanted, metric, sign, threshold = arguments[:4]
        if verb == "runs":
            values = [value(r, metric) for r in records if name_of(r) == arguments[4]]
            spread_of(spreads(records, metric), arguments[4])
        else:
            values = [spread.median for spread in spreads(records, metric).values()]
        meeting = sum(OPERATORS[sign](number, float(threshold)) for number in values)
        return meeting == {"all": len(values), "none": 0}.get(wanted, int(wanted) if wanted.isdigit() else None)
    raise ClaimError(f"unknown predicate {verb!r}")


def check(claim: Claim) -> bool:
    """Whether the claim holds of its set; ClaimError where it cannot be read or names what the set lacks."""
    try:
        return holds(list(claim.predicate), selected(records_of(claim.set_name), claim.selection))
    except (IndexError, KeyError, ValueError) as error:
        if isinstance(error, ClaimError):
            raise
        raise ClaimError(f"{claim.text!r}: {error}") from None


def claims_in(text: str) -> list[Claim]:
    """The claims of a page's text; one shown as code (an example, in backticks or a code block) is none."""
    text = re.sub(r"```.*?```|`[^`]*`", "", text, flags=re.S)
    return [Claim.parse(found) for found in CLAIM.findall(text)]
