"""Command line behind the Makefile: `python -m bench up|down|targets|ab|threads SCENARIO`."""

from __future__ import annotations

import argparse
import subprocess
import sys

from bench.containers.compose import RunningScenario
from bench.containers.sampler import EngineSampler, os_threads, server_pids
from bench.containers.scenarios import LOADS, REGISTRY, load_targets
from bench.loadgen.ab import ab_command
from bench.measure.client import choose_client


def show_targets(scenario: str) -> None:
    for target in load_targets(scenario):
        limit = target.concurrency or "unbounded"
        print(f"{target.name:24} {target.url:26} {target.server} {target.mode}, at most {limit} at once")


def run_ab(scenario: str, requests: int | None, concurrency: int | None, delay: float) -> int:
    """ab from this machine where it is installed, else from its container on the scenario's network."""
    client = choose_client("auto", "ab")
    status = 0
    for target in load_targets(scenario):
        tutorial_requests, tutorial_concurrency = LOADS[target.load]
        if client.place == "host":
            url, prefix = target.url, []
        else:
            url, prefix = target.url_inside, RunningScenario(scenario).loadgen_run(client.loadgen.image)
        url += f"?delay={delay:g}"
        command = [*prefix, *ab_command(url, requests or tutorial_requests, concurrency or tutorial_concurrency)]
        print(f"\n== {target.name}: {' '.join(command)}", flush=True)
        status |= subprocess.run(command).returncode
    return status


def show_threads(scenario: str) -> None:
    running = RunningScenario(scenario)
    services = running.container_ids()
    if not services:
        raise SystemExit(f"{scenario} is not running: make up S={scenario}")
    for service in services:
        if running.sees_processes(service):
            pids = server_pids(running.main_pid(service))
            print(f"{service:16} {len(pids)} processes, {os_threads(pids)} OS threads")
            continue
        # The engine's processes are not this machine's (Docker Desktop's VM, another machine): read them there.
        with EngineSampler(running.docker_cli(service), running.main_pid(service)) as sampler:
            pass
        threads = sampler.problem or f"{sampler.usage.threads_peak} OS threads"
        print(f"{service:16} {threads} (read through the engine)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("command", choices=("up", "down", "targets", "ab", "threads"))
    parser.add_argument("scenario", choices=REGISTRY, help="any scenario `make help` lists, labs too")
    parser.add_argument("-n", "--requests", type=int, help="default: the tutorial's, 2000 or 10")
    parser.add_argument("-c", "--concurrency", type=int, help="default: the tutorial's, 200 or 5")
    parser.add_argument("--delay", type=float, default=1.0)
    args = parser.parse_args(argv)
    if args.command == "up":
        RunningScenario(args.scenario).up()
        show_targets(args.scenario)
    elif args.command == "down":
        RunningScenario(args.scenario).down()
    elif args.command == "targets":
        show_targets(args.scenario)
    elif args.command == "threads":
        show_threads(args.scenario)
    else:
        return run_ab(args.scenario, args.requests, args.concurrency, args.delay)
    return 0


if __name__ == "__main__":
    sys.exit(main())
