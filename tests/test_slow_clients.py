"""Slow clients, end to end: a few hundred connections that send slowly, or nothing at all, must not keep a
production server from answering a normal request, and once they leave every server answers as before.

Three kinds (bench/modes/slowclients/run.py): half a request head, 2 bytes of an announced 100 KB body, and connections
kept open and silent after one answered request. CONNECTIONS of one kind are opened to a target, then one normal
request (`GET /?delay=0` on a new connection) must be answered within ANSWER_SECONDS. The targets this stops are
listed in AFFECTED, as the README says, each with its defence in DEFENCES: Nginx, a buffering proxy, in front of
the same gunicorn, tested here like every other target. An affected target is checked to be affected still, so
that the list stays true and this test can be seen to fail. The check runs in tests/test_scenarios.py, on each
scenario started once for all its end-to-end checks. Flask's development server is not for production
(README) and not tested. `make slowclients` finds, per target and kind, how many slow connections it takes.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bench.containers.compose import RunningScenario
from bench.containers.scenarios import SCENARIOS, Target, load_targets
from bench.measure.resultset import raise_file_limit
from bench.modes.slowclients.run import KINDS, Hold, hold, recover
from bench.sets import render

CONNECTIONS = 300  # above every thread pool here (200 at most), far below what an event loop holds
ANSWER_SECONDS = 3.0  # a normal request takes 0.01 to 0.1 s here; a server the slow clients stop never answers it
RECOVERY_SECONDS = 15.0
SETTLE = 0.5  # seconds from the last slow connection to the normal request: enough for docker-proxy to pass them on
IDLE_WAIT = 2.0  # seconds the idle kind waits for its answers; a server that holds fewer is stuck already

# The (target, kind) pairs that CONNECTIONS slow clients stop, measured; the README and docs/slow-clients.md say
# why. gunicorn's threaded workers read a request head in a thread with no time limit, so a half-sent head holds a
# thread for as long as the client wants; and with --worker-connections equal to --threads, gunicorn 27 answers
# with `Connection: close` and then lingers up to 2 s on each closed connection for the client's own close, on the
# worker's only event-loop thread: clients that keep their end open (an idle keep-alive client, or one still
# owing its body) stall the worker's accepts for 2 s each. flask-async-view's two targets run the same gunicorn
# with the same settings.
GUNICORN_THREADS = ("gunicorn-sync", "sync-view", "async-view")
AFFECTED = {(target, kind) for target in GUNICORN_THREADS for kind in KINDS}
# granian with --backpressure equal to its threads takes at most that many connections per worker, and a half-sent
# head or an idle keep-alive connection keeps its place until --http1-header-read-timeout (30 s). Its body kind is
# answered (405) and closed at once.
AFFECTED |= {("granian-sync", "head"), ("granian-sync", "idle")}
# mod_wsgi in daemon mode: Apache's threads read each request head whole, but the body goes on to the app's daemon
# process as it arrives, so a slow body holds one of the app's 4 x 50 threads; in sync-mod-wsgi-subinterpreters one
# of its 1 x 200 (measured inside its container: 300 slow bodies, a normal request unanswered after 3 s).
AFFECTED |= {("mod-wsgi-sync", "body"), ("mod-wsgi-subinterpreters", "body")}
# The defence, tested like every target: the same gunicorn with Nginx in front, which holds every connection in its
# event loop and passes a request on only once its head and body have fully arrived. Nginx in front of granian or
# of mod_wsgi would do the same.
DEFENCES = dict.fromkeys({target for target, _ in AFFECTED}, "nginx-gunicorn-sync")


def production_targets(scenario: str) -> list[Target]:
    # Flask's development server is a tool for development, not for production: not tested here.
    return [target for target in load_targets(scenario) if not target.development_server]


PRODUCTION_SCENARIOS = [scenario for scenario in SCENARIOS if production_targets(scenario)]


def test_every_affected_target_has_a_defence_that_is_tested_too() -> None:
    names = {target.name for scenario in PRODUCTION_SCENARIOS for target in production_targets(scenario)}
    affected = {target for target, _ in AFFECTED}
    assert affected <= names, affected - names
    assert set(DEFENCES) == affected
    for defended, defence in DEFENCES.items():
        assert defence in names, f"{defended}'s defence {defence} is not a tested target"
        assert all((defence, kind) not in AFFECTED for kind in KINDS), f"{defence} is affected itself"


async def slow_then_normal(target: Target, kind: str) -> tuple[Hold, float | None]:
    """CONNECTIONS slow clients of this kind and one normal request among them; then, once they have left,
    the seconds until the target answers normally again (None: it did not within RECOVERY_SECONDS)."""
    held = await hold(
        target, kind, CONNECTIONS, probes=1, probe_timeout=ANSWER_SECONDS, settle=SETTLE, answer_wait=IDLE_WAIT
    )
    return held, await recover(target, RECOVERY_SECONDS)


def assert_slow_clients_do_not_stop(scenario: RunningScenario, kind: str) -> None:
    """CONNECTIONS slow clients of this kind to each production target of the running scenario (tests/test_scenarios.py
    runs it on each scenario it has started): the AFFECTED stopped, the others answering, all serving after."""
    raise_file_limit()
    targets = production_targets(scenario.scenario)
    if kind == "idle":
        # The idle kind's connections each send one whole request first. A target given the small load (one request
        # at a time, or a few: asgiref's WsgiToAsgi, waitress's default 4 threads) serves those 300 in turn, and what
        # delays the normal request is that queue, not idle connections; `make slowclients` leaves such targets out.
        targets = [target for target in targets if target.load == "full"]

    async def every_target() -> list[tuple[Hold, float | None]]:
        # The targets of one scenario are separate servers on separate ports: side by side, to save time.
        return await asyncio.gather(*(slow_then_normal(target, kind) for target in targets))

    for target, (held, recovered_after) in zip(targets, asyncio.run(every_target()), strict=True):
        (normal,) = held.probes
        seen = (
            f"{target.name}, {held.opened} of {CONNECTIONS} slow connections ({kind}) open: a normal request"
            f" {normal.problem or 'answered'} after {normal.seconds:.2f} s; the server closed {held.closed_with}"
        )
        print(f"{seen}; answered again after {recovered_after} s")
        assert held.opened == CONNECTIONS, seen
        if (target.name, kind) in AFFECTED:
            assert held.delayed(ANSWER_SECONDS), f"no longer affected, take it off AFFECTED: {seen}"
        else:
            assert not held.delayed(ANSWER_SECONDS), seen
        # Once they leave, the target serves again: no thread, worker or router stays stuck with them.
        assert recovered_after is not None, f"{target.name} still wedged {RECOVERY_SECONDS:g} s after: {seen}"


def test_the_report_names_the_first_delayed_level_per_kind(tmp_path: Path) -> None:
    def level(kind: str, connections: int, seconds: float, problem: str | None = None, recovered: bool = True) -> dict:
        probe = {"sent_after": 1.0, "seconds": seconds, "status": None if problem else 200, "problem": problem}
        return {
            "scenario": "sync-gunicorn", "target": "gunicorn-sync", "server": "gunicorn", "mode": "sync",
            "workers": 4, "threads_per_worker": 50, "gevent_cores": None, "concurrency": 200, "via": None,
            "verified": True, "problem": None, "kind": kind, "connections": connections, "opened": connections,
            "answered": connections if kind == "idle" else None, "setup_seconds": 0.1, "probes": [probe],
            "closed_by_server": 0, "first_closed_after": None, "closed_with": {}, "worst_seconds": seconds,
            "delayed": problem is not None or seconds > 3, "recovered": recovered,
            "recovery_seconds": 0.01 if recovered else None, "ok": recovered,
        }  # fmt: skip

    records = [
        level("head", 100, 0.01),
        level("head", 200, 7.0, "no answer within 7 s"),
        level("body", 50, 5.01),
        level("idle", 100, 0.02),
        level("idle", 200, 0.04),
    ]
    metadata = {
        "date": "2026-11-23T00:00:00+00:00", "git_commit": "abc", "cpu_count": 2, "kernel": "6", "docker_version": "20",
        "compose_version": "2", "command": "python -m bench.modes.slowclients", "mode": "slowclients", "packages": {},
        "threshold_seconds": 3.0, "levels": [100, 200],
        "probes": {"per_level": 1, "settle_seconds": 1.0, "spacing_seconds": 1.0, "timeout_seconds": 7.0},
    }  # fmt: skip
    (tmp_path / "results.json").write_text(json.dumps({"metadata": metadata, "results": records}))
    render(tmp_path)
    markdown = (tmp_path / "results.md").read_text()
    cells = [
        "gunicorn-sync",
        "4 x 50 threads",
        "**200** (1 of 1 unanswered)",
        "**50** (5.0 s)",
        "none up to 200 (worst 0.04 s)",
    ]
    row = "| " + " | ".join(cells) + " |"
    assert row in markdown
    assert "Not OK" not in markdown  # being delayed is the finding, not a failure of the run
