"""`make incidents`: what each production server loses when something goes wrong under load (docs/incidents.md).

For each target and event, a fresh start of the scenario, a check that it answers right, a short warm-up, then a
steady closed-loop load (bench/loadgen/timeline.py: CLIENTS keep-alive clients, `?delay=` DELAY, SECONDS long) with
the event EVENT_AT seconds in, every request kept. One record per target, event and repeat in OUT/results.json
(mode "incidents"): requests sent, answered well, failed by kind, the failed ones that were in flight at the event,
answers per 100 ms, and the seconds until the 2xx rate was back; rendered by bench/render/incidents.py.

The events (bench/containers/events.py does them), where the server has them:
- reload: the server's own graceful reload, SIGHUP to its main process (gunicorn, uWSGI, granian; uvicorn only with
  a supervisor, so its target runs with 2 workers).
- proxy-reload: `nginx -s reload`, where Nginx is in front.
- kill-worker: SIGKILL to one worker process (the oldest), as the OOM killer does.
- kill-worker-respawn: the same on granian started with --respawn-failed-workers (without it, granian stops).
- kill-container: `docker kill` of the app's container; no restart policy, so it stays down.
- recreate: the app's container replaced the Compose way (`up -d --force-recreate --no-deps`).
- deploy: both copies of nginx-deploy.yml replaced one after the other, each once the last is healthy.
- max-requests, max-requests-jitter: no single moment; workers recycled after MAX_REQUESTS requests (+ up to the
  jitter) all through the load, the setting given in the environment (gunicorn.conf.py, uwsgi.ini, uvicorn's
  UVICORN_LIMIT_MAX_REQUESTS).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.containers import events
from bench.containers.compose import RunningScenario, ScenarioError
from bench.containers.scenarios import Target, load_targets
from bench.loadgen import timeline
from bench.measure.resultset import ResultSet
from bench.measure.target import image_packages, verify

# Recycling every 300 requests (+ up to 150): at 100 clients and 0.5 s, about 200 requests a second, so every worker
# recycles at least once within the load, and the one gevent process every 1.5 s or so.
MAX_REQUESTS, MAX_REQUESTS_JITTER = 300, 150


@dataclass(frozen=True)
class Event:
    name: str
    what: str  # one line for the page
    servers: tuple[str, ...]  # the `server:` values of x-targets that have it
    cause: Callable[[RunningScenario, Target], dict] | None = None  # None: a setting that acts all through the load
    environment: dict[str, str] = field(default_factory=dict)
    load_seconds: float | None = None  # when the event needs longer than the default load


GUNICORN_LIKE = ("gunicorn", "nginx+gunicorn")
EVENTS = {
    event.name: event
    for event in (
        Event("reload", "graceful reload: SIGHUP to the server's main process", (*GUNICORN_LIKE, "uwsgi", "granian",
              "uvicorn"), lambda running, target: events.send_signal(running, target.service, "HUP")),
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
        Event("recreate", "the app's container replaced: up -d --force-recreate --no-deps",
              (*GUNICORN_LIKE, "uwsgi", "granian", "uvicorn"),
              lambda running, target: events.recreate(running, target.service)),
        Event("deploy", "both app containers replaced one after the other behind Nginx", ("nginx+gunicorn",),
              lambda running, target: events.deploy(running, running.app_services()), load_seconds=20.0),
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
    "nginx-deploy-gevent": ("nginx-deploy", {}),
}
# The two-container deploy is there for what one container cannot do; the events of one container are the others'.
ONLY = {"nginx-deploy-gevent": ("deploy", "kill-container", "recreate")}


def events_of(target: Target) -> list[str]:
    names = [name for name, event in EVENTS.items() if target.server in event.servers]
    return [name for name in names if name in ONLY.get(target.name, names)]


def find_target(name: str, environment: dict[str, str]) -> Target:
    scenario, _ = TARGETS[name]
    (target,) = [target for target in load_targets(scenario, environment) if target.name == name]
    return target


def describe(target: Target, event: Event, args: argparse.Namespace, environment: dict[str, str]) -> dict:
    seconds = event.load_seconds or args.seconds
    return {
        **target.describe(),
        "event": event.name,
        "event_what": event.what,
        "environment": environment,
        "clients": args.clients,
        "delay": args.delay,
        "load_seconds": seconds,
        "event_planned_at_s": args.event_at if event.cause else None,
        "loadgen": "timeline (bench/loadgen/timeline.py)",
        "keepalive": True,
    }


# Every scenario publishes the same ports (3000, 8080): on a machine shared with other runs, a port may be taken for a
# while. A start that finds it taken waits and tries again, this many times, before the record says so.
PORT_TAKEN = "port is already allocated"
START_TRIES, START_PAUSE = 6, 10.0


def run_one(target_name: str, event: Event, args: argparse.Namespace, repeat: int, packages: dict) -> dict:
    """run_once, again after a pause while another run holds the scenario's port."""
    for _ in range(START_TRIES - 1):
        record = run_once(target_name, event, args, repeat, packages)
        if PORT_TAKEN not in (record.get("problem") or ""):
            return record
        print(f"    port taken, trying again in {START_PAUSE:g} s", flush=True)
        time.sleep(START_PAUSE)
    return run_once(target_name, event, args, repeat, packages)


def run_once(target_name: str, event: Event, args: argparse.Namespace, repeat: int, packages: dict) -> dict:
    """A fresh start of the target's scenario, a check, a warm-up, the load with the event, the check again."""
    scenario, settings = TARGETS[target_name]
    environment = {**settings, **event.environment}
    target = find_target(target_name, environment)
    record = describe(target, event, args, environment) | {"repeat": repeat}
    try:
        with RunningScenario(scenario, environment=environment) as running:
            packages |= image_packages(running)
            problem = verify(target, args.delay)
            record |= {"verified": problem is None, "problem": problem}
            if problem:
                return record
            body = target.expected_body(args.delay)
            # Connections, pools and threads opened before the measurement, as every mode does.
            timeline.run(f"{target.url}?delay=0", args.clients, 1.0, target.expected_body(0))
            load = timeline.run(
                f"{target.url}?delay={args.delay:g}", args.clients, record["load_seconds"], body,
                event_at=args.event_at if event.cause else None,
                event=(lambda: event.cause(running, target)) if event.cause else None,
            )  # fmt: skip
            record["event_result"] = load.event
            # What the page lists as this row's command: the event, as it was caused.
            record["command"] = load.event.get("did", f"{event.name}: {event.what}")
            record |= timeline.summarize(load)
            record["problem"] = load.event.get("problem")
            # After the load: does the target answer right again (a killed container does not: that is the finding)?
            record["serves_after"] = verify(target, args.delay) is None
    except ScenarioError as error:
        record |= {"verified": False, "problem": f"did not start: {error.in_one_line()}"}
    return record


def spread(records: list[dict], key: str) -> dict:
    values = [record[key] for record in records if record.get(key) is not None]
    if not values:
        return {}
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.modes.incidents", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--targets", nargs="*", default=list(TARGETS), choices=TARGETS, metavar="TARGET")
    parser.add_argument("--events", nargs="*", default=list(EVENTS), choices=EVENTS, metavar="EVENT")
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--seconds", type=float, default=12.0, help="of load per event")
    parser.add_argument("--event-at", type=float, default=4.0, help="seconds into the load")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", type=Path)
    arguments = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(arguments)
    results = ResultSet("python -m bench.modes.incidents", "incidents", arguments, args.out, suffix="-incidents")
    plan = [
        (name, event)
        for name in args.targets
        for event in args.events
        if event in events_of(find_target(name, TARGETS[name][1]))
    ]
    for index, (name, event_name) in enumerate(plan):
        for repeat in range(1, args.repeat + 1):
            print(f"[{index + 1}/{len(plan)}] {name}, {event_name}, repeat {repeat}/{args.repeat}", flush=True)
            record = run_one(name, EVENTS[event_name], args, repeat, results.metadata["packages"])
            record["ok"] = bool(record.get("verified")) and not record["problem"] and "sent" in record
            results.add(record)
            if "sent" in record:
                kinds = ", ".join(f"{kind} {count}" for kind, count in record["failed_by_kind"].items()) or "none"
                recovery = record.get("recovery_s", "–")
                print(
                    f"    sent {record['sent']}, 2xx {record['answered']}, failed: {kinds}; recovered: {recovery}",
                    flush=True,
                )
            if record["problem"]:
                print(f"    PROBLEM: {record['problem']}", flush=True)
    if args.repeat > 1:
        # How much the counts move from one repeat to the next, per target and event: in the metadata, beside them.
        groups: dict[str, list[dict]] = {}
        for record in results.document.results:
            groups.setdefault(f"{record['target']} / {record['event']}", []).append(record)
        results.metadata["spread_across_repeats"] = {
            label: {key: spread(members, key) for key in ("sent", "answered", "failed", "recovery_s")}
            for label, members in groups.items()
        }
    failures = [f"{r['target']} / {r['event']}" for r in results.document.results if not r["ok"]]
    return results.finish_and_say(failures, "results.json, results.md, incidents-*.png")


if __name__ == "__main__":
    sys.exit(main())
