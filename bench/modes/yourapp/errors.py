"""What a failed build or start of the reader's app said, in one line: the line that is the error among a command's
output (a set-up's, a server's, a service's), and the requirement pip could not install or build, by its name.

The last line is often not the error: Flask's command ends with "Error: No such command 'db'." when the app did not
import, the ImportError lines above it; pip ends with "See above for output."; Docker's legacy builder with "The
command ... returned a non-zero code: 1"."""

from __future__ import annotations

import re

TRACEBACK = "Traceback (most recent call last):"
# A line that says it is an error: `Error:`, `error:`, `ERROR:`, `[ERROR]`, `FATAL:` (Postgres), an exception's name,
# Docker's "Error response from daemon".
ERROR_WORD = re.compile(
    r"(?:\b\w*(?:Error|Exception)|\bERROR|\bFATAL|\bPANIC|\berror|\bfatal)(?::|\])|^Error response from daemon\b"
)
LIMIT = 300  # characters of a line kept: a record's problem is one line, not a page
# A terminal's control sequences: Compose's `logs --no-color` still starts a service's lines with "erase line".
TERMINAL_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def last_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1][:LIMIT] if lines else "no output"


def indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def exception_lines(lines: list[str]) -> list[str]:
    """Each traceback's exception line: the first line after its frames that is indented no deeper than its
    `Traceback` line (a multi-line message's other lines, SQLAlchemy's "(Background on this error ...)", follow it)."""
    found = []
    for at, line in enumerate(lines):
        if line.strip() != TRACEBACK:
            continue
        depth = indent(line)
        after = (other for other in lines[at + 1 :] if other.strip() and indent(other) <= depth)
        exception = next(after, None)
        if exception is not None and exception.strip() != TRACEBACK:
            found.append(exception.strip())
    return found


def error_line(output: str) -> str:
    """The line that is the error: the last traceback's exception line; else the last line that says Error (or
    ERROR, FATAL, an exception's name); else the last line."""
    output = TERMINAL_CONTROL.sub("", output)
    lines = output.splitlines()
    exceptions = exception_lines(lines)
    if exceptions:
        return exceptions[-1][:LIMIT]
    said = [line.strip() for line in lines if ERROR_WORD.search(line)]
    return said[-1][:LIMIT] if said else last_line(output)


# pip's block for a build step of a package that failed ("× Building wheel for psycopg2 (pyproject.toml) did not run
# successfully.", "× Getting requirements to build wheel ..."), its output between "╰─> [N lines of output]" and
# "[end of output]"; the package it was building named by the last "Collecting ..." (or "Obtaining file:///app", the
# app's own project) above it. pip 25 names the package nowhere else when a metadata step fails.
FAILED_STEP = re.compile(r"^\s*× (.+?) did not run successfully\.\s*$", re.MULTILINE)
STEP_OUTPUT = re.compile(r"╰─> \[\d+ lines? of output\]\n(.*?)\n\s*\[end of output\]", re.DOTALL)
BEING_BUILT = re.compile(r"^\s*(?:Collecting|Processing|Obtaining) (\S+)", re.MULTILINE)
WHEEL_STEP = re.compile(r"Building (?:editable |wheel |editable wheel )*for (\S+)")
NOT_FOUND = re.compile(r"No matching distribution found for (\S+)")
CONFLICT = re.compile(r"ERROR: Cannot install (.+?) because these package versions have conflicting dependencies\.")
CONFLICT_CAUSE = re.compile(r"The conflict is caused by:\n((?:\s{4}.+\n?)+)")
HASH_MISMATCH = re.compile(r"DO NOT MATCH THE HASHES.*?\n\s+(\S+) from ", re.DOTALL)
HASHES_NEEDED = re.compile(r"(?:must have their versions pinned with ==|but they are missing from some).*?\n\s+(\S+)")


def build_failure(output: str) -> str | None:
    """A package whose build step failed: itself (with its version where pip named it) and the error of the step's
    own output, "psycopg2==2.9.10 does not build: error: [Errno 2] No such file or directory: 'gcc'"."""
    failed = FAILED_STEP.search(output)
    if not failed:
        return None
    collected = BEING_BUILT.findall(output[: failed.start()])
    # A wheel is built once every package is collected, so the step names it; a metadata step runs right after the
    # package's "Collecting" line.
    wheel = WHEEL_STEP.match(failed[1])
    if wheel:
        same = [spec for spec in collected if re.split(r"[\s\[<>=!~;@(]", spec)[0].lower() == wheel[1].lower()]
        name = same[-1] if same else wheel[1]
    else:
        name = collected[-1] if collected else failed[1]
    what = "the app's own folder, as a project," if name.startswith("file:") else name
    step_output = STEP_OUTPUT.search(output, failed.end())
    cause = error_line(step_output[1]) if step_output else failed[1]
    return f"{what} does not build: {cause}"


def pip_failure(output: str, python: str) -> str | None:
    """What pip said it could not do, in one line naming the requirement; None where pip did not say."""
    built = build_failure(output)
    if built:
        return built.replace(" does not build:", f" does not build on Python {python}:", 1)
    found = NOT_FOUND.search(output)
    if found:
        return f"{found[1]} does not install on Python {python} (PYTHON_VERSION=)"
    conflict = CONFLICT.search(output)
    if conflict:
        causes = CONFLICT_CAUSE.search(output, conflict.end())
        because = "; ".join(line.strip() for line in causes[1].splitlines() if line.strip()) if causes else ""
        return f"the requirements conflict: {conflict[1]}" + (f" ({because})" if because else "")
    mismatch = HASH_MISMATCH.search(output)
    if mismatch:
        return f"{mismatch[1]} does not match its --hash in the requirements"
    unhashed = HASHES_NEEDED.search(output)
    if unhashed:
        return f"{unhashed[1]}: with a --hash on any line, pip needs every requirement pinned with == and hashed"
    return None


def docker_build_failure(output: str) -> str:
    """A failed `docker build`'s one line where pip did not say: its error line, not the builder's last line ("The
    command '/bin/sh -c ...' returned a non-zero code: 1")."""
    kept = [line for line in output.splitlines() if "returned a non-zero code" not in line]
    return error_line("\n".join(kept)) if any(line.strip() for line in kept) else last_line(output)
