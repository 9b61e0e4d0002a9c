"""The database's own limit for the bookstore: the SQL an endpoint sends, captured from the app, replayed by pgbench.

A capture (`python -m bookstore.capture GET /author/123` in the app's container) lists every statement the ORM
sent for one request, with its parameters. Two captures of the same endpoint with different values of its one
varying input (an author's id, a page's offset) must give the same statements; every parameter equal to that
input becomes a pgbench variable, drawn at random for each transaction as the load generator draws it for each
request, and every other parameter is written into the SQL as a literal.

pgbench then runs the script from a container of the postgres image on the scenario's network, so that its
own CPU is not counted as Postgres's, at the concurrency the database sees from the target.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# psycopg's placeholders (named and positional), its escaped percent sign, and asyncpg's numbered ones.
_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%s|%%|\$(\d+)")
# In pgbench's prepared mode every `:name` in a statement is a variable, inside a string literal too.
_PGBENCH_VARIABLE = re.compile(r":[A-Za-z0-9_]")


class TemplateError(ValueError):
    """The captures cannot be turned into one script: said in one line, with what differs."""


@dataclass(frozen=True)
class Variable:
    """What pgbench draws for each transaction: `\\set name random(low, high)`, a multiple of `step` above low
    when step > 1 (a page's offset moves by whole pages)."""

    name: str
    low: int
    high: int
    step: int = 1

    def set_line(self) -> str:
        if self.step == 1:
            return f"\\set {self.name} random({self.low}, {self.high})"
        pages = (self.high - self.low) // self.step
        return f"\\set {self.name} {self.low} + {self.step} * random(0, {pages})"


def sql_literal(value: object) -> str:
    """A captured parameter written into the SQL, as Postgres would read it from the driver."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "ARRAY[" + ", ".join(sql_literal(item) for item in value) + "]"
    text = value if isinstance(value, str) else json.dumps(value)
    if _PGBENCH_VARIABLE.search(text):
        raise TemplateError(f"a parameter holds a colon that pgbench would read as a variable: {text[:60]!r}")
    return "'" + text.replace("'", "''") + "'"


def _statement(sql: str, parameters: object, variable: str, value: int | None) -> str:
    """One statement with its parameters in place: the varying one (if any) as `:variable`, the others as
    literals."""
    positional = iter(parameters) if isinstance(parameters, list) else None

    def substitute(match: re.Match[str]) -> str:
        if match[0] == "%%":
            return "%"
        if match[1] is not None:
            parameter = parameters[match[1]]  # type: ignore[index]
        elif match[2] is not None:
            parameter = parameters[int(match[2]) - 1]  # type: ignore[index]
        else:
            parameter = next(positional)  # type: ignore[arg-type]
        # The varying input, as an int or as the text of one: the driver may send an id either way.
        if value is not None and not isinstance(parameter, bool) and parameter in (value, str(value)):
            return f":{variable}"
        return sql_literal(parameter)

    if parameters in (None, [], {}):
        return sql.replace("%%", "%") if "%%" in sql else sql
    return _PLACEHOLDER.sub(substitute, sql)


def statements(capture: dict[str, Any], variable: str, value: int | None) -> list[str]:
    """The capture's statements as pgbench reads them, each one line ending in a semicolon."""
    lines = []
    for statement in capture["statements"]:
        text = _statement(statement["sql"], statement.get("parameters"), variable, value)
        lines.append(" ".join(text.split()).rstrip(";") + ";")
    return lines


def template(captures: list[tuple[int, dict[str, Any]]], variable: str) -> list[str]:
    """The statements of one endpoint, from two or more captures each made at its own value of the input.

    Fails when a capture was not a success or when the captures differ once the variable is in place: the
    endpoint then sends other SQL for other inputs, and no single script stands for it."""
    templates = []
    for value, capture in captures:
        if not 200 <= capture.get("status", 0) < 300:
            raise TemplateError(f"the captured request at {variable}={value} answered {capture.get('status')}")
        if not capture.get("statements"):
            raise TemplateError(f"the captured request at {variable}={value} sent no SQL")
        templates.append(statements(capture, variable, value))
    (first_value, _), first = captures[0], templates[0]
    for (value, _), other in zip(captures[1:], templates[1:], strict=True):
        if other != first:
            pairs = enumerate(zip(first, other, strict=False), start=1)
            unequal = (f"statement {n}: {a[:150]!r} vs {b[:150]!r}" for n, (a, b) in pairs if a != b)
            differ = next(unequal, f"{len(first)} statements vs {len(other)}")
            raise TemplateError(f"{variable}={first_value} and {variable}={value} send different SQL ({differ})")
    if not any(f":{variable}" in line for line in first):
        raise TemplateError(f"no parameter equals the captured {variable}: the script would not vary it")
    return first


def in_transaction(capture: dict[str, Any], lines: list[str], end: str) -> list[str]:
    """The statements as the database gets them: psycopg sends BEGIN before a session's first statement, and the
    session ends with COMMIT (a write, or a read that commits) or ROLLBACK (a read's session closed without one),
    below SQLAlchemy's events, so that a capture lists neither and says "transaction": true instead."""
    return ["BEGIN;", *lines, f"{end};"] if capture.get("transaction") else lines


def script(variable: Variable, lines: list[str]) -> str:
    """A pgbench script: the variable drawn, then the statements."""
    return "\n".join([variable.set_line(), *lines]) + "\n"


def fixed(capture: dict[str, Any]) -> list[str]:
    """The statements of a request whose SQL does not depend on its input (a write), every parameter a literal."""
    if not 200 <= capture.get("status", 0) < 300 or not capture.get("statements"):
        raise TemplateError(f"the captured write answered {capture.get('status')} and sent no SQL")
    return statements(capture, "unused", None)


@dataclass(frozen=True)
class PgbenchResult:
    transactions: int
    failed: int
    tps: float
    latency_ms: float


def parse(text: str) -> PgbenchResult:
    """pgbench's summary; ValueError when it has none, or when a client aborted (a failed statement ends its
    client for good, and the summary then counts only what the others did)."""
    errors = re.findall(r"^pgbench: error: (.+)$", text, re.MULTILINE)
    if errors:
        raise ValueError(f"pgbench: {errors[0][:200]} ({len(errors)} errors)")
    tps = re.search(r"^tps = ([\d.]+) \(without initial connection time\)", text, re.MULTILINE)
    done = re.search(r"^number of transactions actually processed: (\d+)", text, re.MULTILINE)
    if not tps or not done:
        last = [line for line in text.strip().splitlines() if line.strip()][-1:] or ["nothing"]
        raise ValueError(f"no summary in pgbench's output: {last[0][:200]}")
    failed = re.search(r"^number of failed transactions: (\d+)", text, re.MULTILINE)
    latency = re.search(r"^latency average = ([\d.]+) ms", text, re.MULTILINE)
    return PgbenchResult(
        transactions=int(done[1]),
        failed=int(failed[1]) if failed else 0,
        tps=float(tps[1]),
        latency_ms=float(latency[1]) if latency else math.nan,
    )


# What psycopg 3 sends, as pgbench's --protocol, by how the app's reads end (bookstore/db.py, READS_END_WITH).
# psycopg prepares a statement once a connection has run it 5 times (its prepare_threshold), but every ROLLBACK
# makes it forget its counts: reads that end in one send unnamed statements of the extended protocol, parsed and
# planned every time. Reads that commit keep their counts, and a warm app sends prepared statements.
PROTOCOL = {"rollback": "extended", "commit": "prepared"}


def command(
    scripts: dict[str, int], clients: int, seconds: int, database: str, protocol: str, rate: float | None = None
) -> list[str]:
    """pgbench's arguments: each script (a path) with its weight, sent the way the app sends them (PROTOCOL).
    Two threads, one per core, or one for one client. With a rate, pgbench paces its transactions to that many a
    second (spread over the clients) instead of sending each as soon as the last one ended."""
    weighted = [part for path, weight in scripts.items() for part in ("--file", f"{path}@{weight}")]
    paced = ["--rate", f"{rate:.1f}"] if rate else []
    return [
        "pgbench", "--no-vacuum", "--protocol", protocol, "--client", str(clients),
        "--jobs", str(min(2, clients)), "--time", str(seconds), *paced, *weighted, database,
    ]  # fmt: skip


def container_command(arguments: list[str], network: str, scripts: Path, password: str, image: str) -> list[str]:
    """pgbench from a container of the postgres image on the scenario's network, the scripts mounted at /scripts:
    its own CPU is not counted as Postgres's. The password is passed in the environment, never shown (shown())."""
    return [
        "docker", "run", "--rm", "--network", network, "--volume", f"{scripts}:/scripts:ro",
        "--env", f"PGPASSWORD={password}", "--env", "PGHOST=postgres", "--env", "PGUSER=postgres",
        "--entrypoint", "pgbench", image, *arguments[1:],
    ]  # fmt: skip


def shown(command: list[str]) -> str:
    """The command as a record may show it: the password left out."""
    return " ".join(part if not part.startswith("PGPASSWORD=") else "PGPASSWORD=…" for part in command)
