"""`make incidents`: what each production server loses when something goes wrong under load (docs/incidents.md).

For each target and event, a fresh start of the scenario, a check that it answers right, a short warm-up, then a
steady closed-loop load (bench/loadgen/timeline.py: CLIENTS keep-alive clients, `?delay=` DELAY, SECONDS long) with
the event EVENT_AT seconds in, every request kept. One record per target, event and repeat in OUT/results.json
(mode "incidents"): requests sent, answered well, failed by kind, the failed ones that were in flight at the event,
answers per 100 ms, and the seconds until the 2xx rate was back; rendered by bench/modes/incidents/render.py.

The events (bench/containers/events.py does them), where the server has them:
- reload: the server's own graceful reload, SIGHUP to its main process (gunicorn, uWSGI, granian; uvicorn only with
  a supervisor, so its target runs with 2 workers).
- chain-reload: uWSGI's chain reload (`c` to its master FIFO, lazy-apps on): one worker replaced after the other.
- reload-long, reload-long-short-grace: the reload during requests of LONG_REQUEST s, with gunicorn's graceful
  timeout at its 30 s and at GRACE_SHORT s: what a graceful timeout shorter than the longest request cuts.
- proxy-reload: `nginx -s reload`, where Nginx is in front.
- kill-worker: SIGKILL to one worker process (the oldest), as the OOM killer does.
- kill-worker-respawn: the same on granian started with --respawn-failed-workers (without it, granian stops).
- kill-container: `docker kill` of the app's container; no restart policy, so it stays down.
- crash-container: SIGKILL to the container's main process from the host (its server stopped first until its
  clients read what it had sent), `restart: unless-stopped`: it dies as in a crash; its restart policy brings it back.
- recreate: the app's container replaced the Compose way (`up -d --force-recreate --no-deps`).
- deploy: both copies of nginx-deploy.yml replaced one after the other, each once the last is healthy;
  deploy-long, deploy-long-short-grace: the same during requests of LONG_REQUEST s, with the containers' stop grace
  period at 35 s and at GRACE_SHORT s.
- hog: requests of the app's largest CPU work (`?cpu=`) at once, HOG_TIMEOUTS times gunicorn's worker timeout of
  CPU in all, the timeout set to HOG_TIMEOUT s (WORKER_TIMEOUT): a gevent worker busy with CPU cannot report to its
  master, which kills it.
- max-requests, max-requests-jitter: no single moment; workers recycled after MAX_REQUESTS requests (+ up to the
  jitter) all through the load, the setting given in the environment (gunicorn.conf.py, uwsgi.ini, uvicorn's
  UVICORN_LIMIT_MAX_REQUESTS).

The bookstore's targets (bookstore.yml, named bookstore-*) get its mixed load instead: 90 % GET /author/<random id>
and 10 % POST /author, each write named by a marker of its own, every client pausing `--delay` between requests;
after the load each acknowledged write is looked up in Postgres (`writes_lost` must be 0), and a stored write
whose 201 never reached its client is counted apart (`writes_unacknowledged`).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from bench.containers import doctor, events
from bench.containers.compose import RunningScenario
from bench.containers.scenarios import Target, load_targets
from bench.loadgen import timeline
from bench.measure import bookstore
from bench.measure.client import verify
from bench.measure.resultset import ResultSet
from bench.measure.scenario_start import ScenarioStart
from bench.measure.server_facts import cpu_ms_per_unit
from bench.modes.incidents import render as renderer
from bench.modes.incidents.bookstore_mix import BookstoreMix
from bench.modes.incidents.record import IncidentResult, spread_across_repeats
from bench.options import Option, Options

# The hog: requests of the app's largest CPU work at once (about a second each, one after another in a gevent
# process), against a worker timeout of HOG_TIMEOUT s: gunicorn's master kills a worker that has not reported in
# for that long, which a gevent worker busy with CPU cannot do, and threads can. As many requests as hold one
# process for HOG_TIMEOUTS times the timeout at the CPU cost of a unit measured in the image just before (a faster
# CPU gets more of them), each after a wait of HOG_DELAY s that lines them up (events.hog).
HOG_UNITS, HOG_TIMEOUT, HOG_TIMEOUTS, HOG_DELAY = 1000, 5, 2, 1.0


# Recycling every 300 requests (+ up to 150): at 100 clients and 0.5 s, about 200 requests a second, so every worker
# recycles at least once within the load, and the one gevent process every 1.5 s or so.
MAX_REQUESTS, MAX_REQUESTS_JITTER = 300, 150
# Requests longer than a short grace (LONG_REQUEST s against GRACE_SHORT s): what a graceful timeout or a stop
# grace period shorter than the longest request cuts, and the defaults (30 s, 35 s) do not.
LONG_REQUEST, GRACE_SHORT = 3.0, 1


@dataclass(frozen=True)
class Event:
    name: str
    what: str  # one line for the page
    servers: tuple[str, ...]  # the `server:` values of x-targets that have it
    # What makes the event happen, and its record; None: a setting that acts all through the load.
    cause: Callable[[RunningScenario, Target], dict[str, Any]] | None = None
    environment: dict[str, str] = field(default_factory=dict)
    load_seconds: float | None = None  # when the event needs longer than the default load
    delay: float | None = None  # the requests' `?delay=` when the event is about long requests (default: --delay)


GUNICORN_LIKE = ("gunicorn", "nginx+gunicorn")


def reload(running: RunningScenario, target: Target) -> dict[str, Any]:
    return events.send_signal(running, target.service, "HUP")


def deploy(running: RunningScenario, target: Target) -> dict[str, Any]:
    return events.deploy(running, running.app_services())


def hog(running: RunningScenario, target: Target) -> dict[str, Any]:
    unit_ms = cpu_ms_per_unit(running, target.service)
    requests = math.ceil(HOG_TIMEOUTS * HOG_TIMEOUT * 1000 / (HOG_UNITS * unit_ms))
    burst = events.hog(target.url, requests, HOG_UNITS, HOG_DELAY)
    return burst | {"did": f"{burst['did']}, {unit_ms:.2f} ms of CPU a unit", "requests": requests}


EVENTS = {
    event.name: event
    for event in (
        Event("reload", "graceful reload: SIGHUP to the server's main process",
              (*GUNICORN_LIKE, "uwsgi", "nginx+uwsgi", "granian", "uvicorn"),
              reload),
        Event("chain-reload", "uWSGI's chain reload (lazy-apps): one worker replaced after the other",
              ("uwsgi", "nginx+uwsgi"), lambda running, target: events.chain_reload(running, target.service),
              environment={"LAZY_APPS": "true"}),
        Event("reload-long", f"graceful reload during requests of {LONG_REQUEST:g} s (graceful timeout 30 s)",
              ("gunicorn",), reload,
              load_seconds=20.0, delay=LONG_REQUEST),
        Event("reload-long-short-grace",
              f"graceful reload during requests of {LONG_REQUEST:g} s, graceful timeout {GRACE_SHORT} s",
              ("gunicorn",), reload,
              environment={"GRACEFUL_TIMEOUT": str(GRACE_SHORT)}, load_seconds=20.0, delay=LONG_REQUEST),
        Event("proxy-reload", "nginx -s reload in front", ("nginx+gunicorn",),
              lambda running, target: events.reload_nginx(running)),
        Event("kill-worker", "SIGKILL to one worker process", (*GUNICORN_LIKE, "uwsgi", "granian", "uvicorn"),
              lambda running, target: events.kill_worker(running, target.service)),
        Event("kill-worker-respawn", "SIGKILL to one worker, granian with --respawn-failed-workers", ("granian",),
              lambda running, target: events.kill_worker(running, target.service),
              environment={"RESPAWN_FAILED_WORKERS": "true"}),
        Event("kill-container", "docker kill of the app's container (no restart policy)",
              (*GUNICORN_LIKE, "uwsgi", "granian", "uvicorn"),
              lambda running, target: events.kill_container(running, target.service)),
        Event("crash-container", "the app's container dies (SIGKILL to its main process), restart: unless-stopped",
              (*GUNICORN_LIKE, "uwsgi", "granian", "uvicorn"),
              lambda running, target: events.crash_container(running, target.service),
              environment={"RESTART": "unless-stopped"}),
        Event("recreate", "the app's container replaced: up -d --force-recreate --no-deps",
              (*GUNICORN_LIKE, "uwsgi", "granian", "uvicorn"),
              lambda running, target: events.recreate(running, target.service)),
        Event("deploy", "both app containers replaced one after the other behind Nginx", ("nginx+gunicorn",),
              deploy, load_seconds=20.0),
        Event("deploy-long", f"the deploy during requests of {LONG_REQUEST:g} s (stop grace period 35 s)",
              ("nginx+gunicorn",), deploy,
              load_seconds=25.0, delay=LONG_REQUEST),
        Event("deploy-long-short-grace",
              f"the deploy during requests of {LONG_REQUEST:g} s, stop grace period {GRACE_SHORT} s",
              ("nginx+gunicorn",), deploy,
              environment={"STOP_GRACE_PERIOD": f"{GRACE_SHORT}s"}, load_seconds=25.0, delay=LONG_REQUEST),
        Event("hog", f"requests of {HOG_UNITS} CPU units at once, {HOG_TIMEOUTS} x the worker timeout of "
              f"{HOG_TIMEOUT} s of CPU in all", ("gunicorn",), hog,
              environment={"WORKER_TIMEOUT": str(HOG_TIMEOUT)}, load_seconds=20.0),
        Event("max-requests", f"workers recycled every {MAX_REQUESTS} requests", (*GUNICORN_LIKE, "uwsgi", "uvicorn"),
              environment={"MAX_REQUESTS": str(MAX_REQUESTS)}),
        Event("max-requests-jitter", f"workers recycled every {MAX_REQUESTS} + up to {MAX_REQUESTS_JITTER} requests",
              (*GUNICORN_LIKE, "uvicorn"),
              environment={"MAX_REQUESTS": str(MAX_REQUESTS), "MAX_REQUESTS_JITTER": str(MAX_REQUESTS_JITTER)}),
    )
}  # fmt: skip

# The production targets that matter for the choice (scenario, target), and the settings each runs with here.
TARGETS = {
    "gunicorn-sync": ("sync-gunicorn", {}),
    "gunicorn-gevent": ("async-gevent-gunicorn", {}),
    "uwsgi-gevent": ("async-gevent-uwsgi", {}),
    "granian-sync": ("sync-granian", {}),
    # One uvicorn process has no supervisor: SIGHUP or a recycled worker stops the server. Two, one per core here.
    "quart-uvicorn": ("async-quart", {"WORKERS": "2"}),
    "nginx-gunicorn-gevent": ("nginx-gunicorn", {}),
    "nginx-uwsgi-gevent": ("nginx-uwsgi", {}),
    "nginx-deploy-gevent": ("nginx-deploy", {}),
}
# The bookstore's targets, under its mixed load: the writes. Its thread server and its one gevent process.
BOOKSTORE_TARGETS = ("bookstore-gunicorn-sync", "bookstore-gunicorn-gevent")
TARGETS |= {name: (bookstore.SCENARIO, {}) for name in BOOKSTORE_TARGETS}
# The targets that have only some of their servers' events. The two-container deploy is there for what one container
# cannot do; the events of one container are the others'. Nginx in front of one gevent worker: the deploy, not its
# variants on long requests, which are the two containers'.
ONLY = {
    "nginx-deploy-gevent": ("deploy", "deploy-long", "deploy-long-short-grace", "kill-container", "recreate"),
    "nginx-gunicorn-gevent": (
        "reload",
        "proxy-reload",
        "kill-worker",
        "kill-container",
        "crash-container",
        "recreate",
        "deploy",
        "max-requests",
        "max-requests-jitter",
    ),
    # uWSGI behind Nginx: its reloads, where no HTTP router of uWSGI's own is in the way.
    "nginx-uwsgi-gevent": ("reload", "chain-reload"),
}
# The bookstore's app has no `?cpu=`: no hog there.
ONLY |= {name: ("reload", "kill-worker", "kill-container", "recreate", "max-requests", "max-requests-jitter")
         for name in BOOKSTORE_TARGETS}  # fmt: skip


def events_of(target: Target) -> list[str]:
    names = [name for name, event in EVENTS.items() if target.server in event.servers]
    return [name for name in names if name in ONLY.get(target.name, names)]


def find_target(name: str, environment: dict[str, str]) -> Target:
    scenario, _ = TARGETS[name]
    found = (
        bookstore.bookstore_targets(environment)
        if scenario == bookstore.SCENARIO
        else load_targets(scenario, environment)
    )
    (target,) = [target for target in found if target.name == name]
    return target


def incident_record(
    target: Target,
    event: Event,
    args: argparse.Namespace,
    environment: dict[str, str],
    repeat: int,
    scale: int | None = None,
    loadgen: str = "timeline (bench/loadgen/timeline.py)",
) -> IncidentResult:
    """The record before its scenario starts: the target, the event, the load; not yet verified (run_once says, or
    the start's problem), not judged (main does, once its problem is final)."""
    return IncidentResult(
        **target.record_fields(),
        event=event.name,
        event_what=event.what,
        environment=environment,
        clients=args.clients,
        delay=event.delay or args.delay,
        load_seconds=event.load_seconds or args.seconds,
        event_planned_at_s=args.event_at if event.cause else None,
        loadgen=loadgen,
        keepalive=True,
        repeat=repeat,
        scale=scale,
        verified=False,
        ok=False,
    )


# Every scenario publishes the same ports (3000, 8080): on a machine shared with other runs, a port may be taken for a
# while. A start that finds it taken waits and tries again, this many times, before the record says so.
PORT_TAKEN = "port is already allocated"
START_TRIES, START_PAUSE = 6, 10.0


def run_one(
    target_name: str, event: Event, args: argparse.Namespace, repeat: int, packages: dict[str, list[str]]
) -> IncidentResult:
    """run_once, again after a pause while another run holds the scenario's port."""
    for _ in range(START_TRIES - 1):
        record = run_once(target_name, event, args, repeat, packages)
        if PORT_TAKEN not in (record.problem or ""):
            return record
        print(f"    port taken, trying again in {START_PAUSE:g} s", flush=True)
        time.sleep(START_PAUSE)
    return run_once(target_name, event, args, repeat, packages)


def load_with_event(
    record: IncidentResult,
    running: RunningScenario,
    target: Target,
    event: Event,
    args: argparse.Namespace,
    url: str,
    expected_body: str,
    **how: Any,
) -> IncidentResult:
    """The steady load with the event in it (timeline.run; `how`: its requests and pause), for the record's
    load_seconds, and what the record says of both: the timeline in figures, what the event did (the page's command
    for the row) and its problem."""
    cause = event.cause
    # No single moment: the workers the load saw replaced are the event; it goes on until one was (737 in 12 s: none).
    workers_before = set(events.worker_pids(running, target.service)) if cause is None else set()

    def replaced() -> int:
        return len(workers_before - set(events.worker_pids(running, target.service)))

    load = timeline.run(
        url,
        args.clients,
        record.load_seconds,
        expected_body,
        event_at=args.event_at if cause else None,
        event=(lambda: cause(running, target)) if cause else None,
        in_flight=None if how.get("pause") else in_flight(event, args),
        until=(lambda: replaced() > 0) if cause is None else None,
        **how,
    )
    if cause is None:
        load.event |= {"workers": len(workers_before), "workers_replaced": replaced()}
    # The summary's fields are the record's (IncidentResult is made of TimelineSummary); those around the event's
    # moment are none for a setting that acts all through the load.
    command = load.event.get("did", f"{event.name}: {event.what}")
    measured = record.with_measured(timeline.summarize(load))
    return replace(measured, event_result=load.event, command=command, problem=load.event.get("problem"))


def keeps_alive(warm: timeline.Timeline) -> bool:
    """Whether the load keeps its connections alive: not where the warm-up found the server closing them right after
    its answers without saying so, as uWSGI's HTTP router does after every answer. A client that reuses one races
    that close: its next request fails within milliseconds, before the server read it (measured on uwsgi-gevent,
    50 clients for 8 s: 147 of 923 requests), and the client's resend of those (timeline.STALE_SECONDS) misses the
    ones a busy machine delays; they were counted as failures before the event. Such a server gets a connection per
    request, `Connection: close` said, and keep-alive where it keeps them (a worker recycled in the warm-up closes a
    few: a quarter of its answers at least is a server's way)."""
    return warm.closed_after_answers * 4 < len(warm.requests)


def in_flight(event: Event, args: argparse.Namespace) -> timeline.InFlight:
    """What the event waits for past EVENT_AT: half the clients' requests in flight; for long requests, a round just
    sent (within a sixth of a request), so that a grace period shorter than a request has them to cut."""
    if event.delay:
        return timeline.InFlight(args.clients // 2, sent_within=event.delay / 6, limit=2 * event.delay + 5)
    return timeline.InFlight(args.clients // 2, limit=2 * args.delay + 5)


def run_once(
    target_name: str, event: Event, args: argparse.Namespace, repeat: int, packages: dict[str, list[str]]
) -> IncidentResult:
    """A fresh start of the target's scenario, a check, a warm-up, the load with the event, the check again."""
    scenario, settings = TARGETS[target_name]
    environment = {**settings, **event.environment}
    if scenario == bookstore.SCENARIO:
        return run_bookstore_once(target_name, event, args, repeat, packages, environment)
    target = find_target(target_name, environment)
    record = incident_record(target, event, args, environment, repeat)
    with ScenarioStart(packages) as start:
        running = start.up(RunningScenario(scenario, environment=environment))
        delay = record.delay  # the event's own, or --delay
        problem = verify(target, delay)
        record = replace(record, verified=problem is None, problem=problem)
        if problem:
            return record
        body = target.expected_body(delay)
        # Connections, pools and threads opened before the measurement, as every mode does; and whether the server
        # keeps connections alive at all (keeps_alive).
        warm = timeline.run(f"{target.url}?delay=0", args.clients, 1.0, target.expected_body(0))
        record = replace(record, keepalive=keeps_alive(warm))
        url = f"{target.url}?delay={delay:g}"
        record = load_with_event(record, running, target, event, args, url, body, keep_alive=record.keepalive)
        # After the load: does the target answer right again (a killed container does not: that is the finding)?
        record = replace(record, serves_after=verify(target, delay) is None)
    if start.problem:
        record = replace(record, verified=False, problem=start.problem)
    return record


MIXED = bookstore.BY_NAME["mixed"]


def run_bookstore_once(
    target_name: str,
    event: Event,
    args: argparse.Namespace,
    repeat: int,
    packages: dict[str, list[str]],
    environment: dict[str, str],
) -> IncidentResult:
    """run_once for a bookstore target: its service and Postgres (the data volume of `--scale` authors), the mixed
    load with its writes, then every acknowledged write looked up, and all of the load's writes removed."""
    environment = {**environment, "BOOKSTORE_SCALE": str(args.scale)}
    target = find_target(target_name, environment)
    mixed = "timeline (bench/loadgen/timeline.py), the bookstore's mixed load (BookstoreMix)"
    record = incident_record(target, event, args, environment, repeat, args.scale, mixed)
    token = uuid.uuid4().hex[:8]
    with ScenarioStart(packages) as start:
        running = start.up(bookstore.BookstoreScenario(environment, [target.service]))
        problem = bookstore.verify(target, MIXED, args.scale)
        record = replace(record, verified=problem is None, problem=problem)
        if problem:
            return record
        url = target.url
        warm = BookstoreMix(args.scale, args.clients, f"{token}w")
        timeline.run(url, args.clients, 1.0, "", requests=warm, pause=args.delay)
        mix = BookstoreMix(args.scale, args.clients, token, seed=repeat)
        record = load_with_event(record, running, target, event, args, url, "", requests=mix, pause=args.delay)
        # The writes one by one, once every request has ended (a stopped container's requests too).
        writes = bookstore.check_writes(running, token, mix.all_acknowledged())
        record = replace(record.with_measured(writes), writes_acknowledged=len(mix.all_acknowledged()))
        if record.writes_lost:
            record = replace(record, problem=f"{record.writes_lost} acknowledged writes not in the database")
        bookstore.remove_writes(running)
        record = replace(record, serves_after=bookstore.verify(target, MIXED, args.scale) is None)
    if start.problem:
        record = replace(record, verified=False, problem=start.problem)
    return record


OPTIONS = Options(
    "incidents",
    "python -m bench.modes.incidents",
    (
        Option.some_of("--targets", "TARGETS", TARGETS, "TARGET"),
        Option.some_of("--events", "EVENTS", EVENTS, "EVENT"),
        Option("--repeat", "REPEAT", "rounds of every target and event", {"type": int, "default": 1}),
        Option("--clients", "CLIENTS", "clients at once", {"type": int, "default": 100}),
        Option("--seconds", "SECONDS", "of load per event", {"type": float, "default": 12.0}),
        Option("--scale", "SCALE", "authors (bookstore-* targets)", {"type": int, "default": bookstore.DEFAULT_SCALE}),
        Option.out("-incidents"),
        Option("--delay", None, "seconds each request waits on slow_api", {"type": float, "default": 0.5}),
        Option("--event-at", None, "seconds into the load", {"type": float, "default": 4.0}),
    ),
)


def main(argv: list[str] | None = None) -> int:
    arguments = OPTIONS.arguments(argv)
    args = OPTIONS.parser(__doc__, argparse.RawDescriptionHelpFormatter).parse_args(arguments)
    seen, how = doctor.sees_processes()
    if seen is False:  # the events signal and watch the servers' processes from here (bench/containers/events.py)
        raise SystemExit(f"make incidents needs a machine that sees the engine's processes; this one: {how}")
    results = ResultSet("python -m bench.modes.incidents", "incidents", arguments, args.out, suffix="-incidents")
    plan = [
        (name, event)
        for name in args.targets
        for event in args.events
        if event in events_of(find_target(name, TARGETS[name][1]))
    ]
    kept: list[IncidentResult] = []
    for index, (name, event_name) in enumerate(plan):
        for repeat in range(1, args.repeat + 1):
            print(f"[{index + 1}/{len(plan)}] {name}, {event_name}, repeat {repeat}/{args.repeat}", flush=True)
            record = run_one(name, EVENTS[event_name], args, repeat, results.metadata["packages"])
            record = record.judged(record.loaded)
            kept.append(record)
            results.add(record)
            if record.loaded:
                kinds = ", ".join(f"{kind} {count}" for kind, count in record.failed_by_kind.items()) or "none"
                recovery = record.recovery_s if record.has_moment else "–"
                line = f"    sent {record.sent}, 2xx {record.answered}, failed: {kinds}; recovered: {recovery}"
                print(line, flush=True)
            if record.problem:
                print(f"    PROBLEM: {record.problem}", flush=True)
    if args.repeat > 1:  # how much the counts move from one repeat to the next: in the metadata, beside them
        results.metadata["spread_across_repeats"] = spread_across_repeats(kept)
    failures = [f"{record.target} / {record.event}" for record in kept if not record.ok]
    renderer.render(results.out, results.finish())
    return results.say(failures, "results.json, results.md, incidents-*.png")


if __name__ == "__main__":
    sys.exit(main())
