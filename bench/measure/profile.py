"""Where an app's CPU time goes under load: py-spy (a sampling profiler that reads a CPython process's memory from
outside it, so the app runs unchanged) samples the target's server processes while wrk loads it, from a container
in the app container's PID namespace (bench/measure/Dockerfile-py-spy). Each sample is put in the category of
the innermost frame that belongs to a known part (the driver, SQLAlchemy, marshmallow, JSON, Flask and Werkzeug,
the server); the shares, times the app's measured CPU per request, say what each request's milliseconds are made
of. Only the samples of a thread that holds the GIL count (py-spy --gil): Python at work. A thread waiting on the
database or the network has released it; py-spy's own test of whether a thread is idle took granian's threads
waiting in psycopg for work.

py-spy rather than pyinstrument or cProfile: it needs no change to the app or its server and costs the app little
(it reads memory without stopping the process, --nonblocking), and it sees every thread and every process a
server starts. It reads CPython only: PyPy is not profiled."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from bench.containers.images import build_on_first_use

IMAGE = "flask-playground/py-spy"
RATE = 200  # samples per second per thread: a few thousand in a few seconds, for shares to a percent or so

# By the path of a frame's file: the first category whose marker it holds. C code (psycopg's, the json encoder's)
# counts as the Python frame that called it.
CATEGORIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("driver (psycopg)", ("/psycopg/", "/psycopg_pool/", "/psycopg_binary/")),
    ("SQLAlchemy", ("/sqlalchemy/",)),
    ("marshmallow", ("/marshmallow/",)),
    ("JSON", ("/json/",)),
    ("Flask and Werkzeug", ("/flask/", "/werkzeug/", "/quart/", "/asgiref/")),
    (
        "server",
        (
            "/gunicorn/",
            "/gevent/",
            "/granian/",
            "/uvicorn/",
            "/hypercorn/",
            "/uwsgi",
            "/asyncio/",
            "/selectors.py",
            "/socket.py",
            "/socketserver.py",
            "/threading.py",
            "/concurrent/",
        ),
    ),  # fmt: skip
    ("the app's code", ("/app/",)),
)
OTHER = "other (the standard library, logging, ...)"


def category(frame: str) -> str | None:
    """A frame as py-spy writes it, `function (path:line)`: its category, or None."""
    path = frame.rsplit("(", 1)[-1]
    return next((name for name, markers in CATEGORIES if any(marker in path for marker in markers)), None)


def classify(stack: str) -> str:
    """A collapsed stack's category: its innermost frame's that has one."""
    for frame in reversed(stack.split(";")):
        found = category(frame)
        if found:
            return found
    return OTHER


def python_frames(stack: str) -> bool:
    """Whether a stack holds a Python frame: py-spy puts a process's and a thread's name first, as frames without a
    file (`process 9:"..."`)."""
    return any(frame.endswith(")") and ".py:" in frame for frame in stack.split(";"))


def sample_counts(collapsed: str, classifier: Callable[[str], str]) -> Counter[str]:
    """py-spy's collapsed stacks counted by what `classifier` makes of each stack, the samples with a Python frame
    only. A sample without one is a thread in native code only (granian's Rust threads): py-spy cannot tell its work
    from its waiting, so it is left out."""
    counts: Counter[str] = Counter()
    for line in collapsed.splitlines():
        stack, _, number = line.rpartition(" ")
        if stack and number.isdigit() and python_frames(stack):
            counts[classifier(stack)] += int(number)
    return counts


def shares(collapsed: str) -> tuple[dict[str, float], int]:
    """Each category's share of the samples with a Python frame, and how many those were."""
    counts = sample_counts(collapsed, classify)
    total = sum(counts.values())
    ordered = [name for name, _ in CATEGORIES] + [OTHER]
    return {name: round(counts[name] / total, 4) for name in ordered if counts[name]} if total else {}, total


def build_image() -> str:
    return build_on_first_use(
        IMAGE, "bench/measure/Dockerfile-py-spy", "bench/measure", ("bench/measure/profile_server.py",)
    )


def command(container: str, seconds: int, rate: int = RATE) -> list[str]:
    """The profiler's container, in the app container's PID namespace, allowed to read its processes' memory."""
    return ["docker", "run", "--rm", "--pid", f"container:{container}", "--cap-add", "SYS_PTRACE",
            "--network", "none", IMAGE, str(seconds), str(rate)]  # fmt: skip
