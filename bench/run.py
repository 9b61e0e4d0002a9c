"""`make bench` and `make sweep`: each target started fresh, verified, warmed up, loaded with ab while its
processes are sampled, and torn down; one record per target in OUT/results.json, rendered to Markdown and
charts from that file alone."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import requests
import yaml

from bench import report, roles
from bench.ceiling import cpu_bound_rps, efficiency, naive_ceiling_rps
from bench.compose import (
    RunningScenario,
    ScenarioError,
    compose_command,
    docker,
    os_threads,
    remove_replaced_images,
    server_pids,
)
from bench.loadgens import LOADGENS, LoadGenerator
from bench.sampler import Sampler, alive, docker_proxy_pids
from bench.scenarios import LOADS, REFERENCE, ROOT, SCENARIOS, Target, compose_file, load_targets

SWEEP_CONCURRENCIES = (10, 50, 200, 500, 1000)
# The app's settings that change its speed; each record keeps their values as the container had them.
APP_SETTINGS = (
    "SLOW_API_CLIENT", "GEVENT_RESOLVER", "POSTGRES_CONNECTIONS", "POSTGRES_POOL_MAX", "POSTGRES_POOL_TIMEOUT",
    "PYPY_GC_NURSERY", "SLOW_API_CONNECTIONS",
)  # fmt: skip


@dataclass(frozen=True)
class Load:
    """One load of a target: n requests from c clients, each waiting `delay` seconds on I/O and doing `cpu` units
    of CPU work (flask_app/cpu_work.py)."""

    n: int
    c: int
    delay: float
    cpu: int = 0


class Progress:
    """One line per phase: which target, what it does, time spent and an estimate of what is left."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self.started = total, 0, time.monotonic()

    def show(self, label: str, phase: str) -> None:
        elapsed = time.monotonic() - self.started
        left = f", ~{elapsed / self.done * (self.total - self.done) / 60:.0f} min left" if self.done else ""
        print(f"[{self.done + 1}/{self.total} {elapsed / 60:4.1f} min{left}] {label}: {phase}", flush=True)


def query(delay: float, cpu: int = 0) -> str:
    """The request every load generator sends: the I/O wait, and the CPU work only when there is some."""
    return f"?delay={delay:g}" + (f"&cpu={cpu}" if cpu else "")


def verify(target: Target, delay: float, cpu: int = 0) -> str | None:
    """Why the target cannot be trusted, or None. A fast answer is a broken server, not a fast one."""
    started = time.monotonic()
    try:
        response = requests.get(target.url + query(delay, cpu), timeout=delay + 30 + cpu / 100)
    except requests.RequestException as error:
        return f"no answer: {error.__class__.__name__}"
    took = time.monotonic() - started
    if response.status_code != 200:
        return f"status {response.status_code}"
    if response.text != target.expected_body(delay):
        return f"unexpected body {response.text[:60]!r}"
    if took < delay:
        return f"answered in {took:.2f} s, before the {delay:g} s delay"
    return None


class Client(str):
    """Where the load generator runs, "host" or "container" (what records and comparisons see), and which one it
    is: one value, so that every step given the client runs and describes the same tool."""

    loadgen: LoadGenerator

    def __new__(cls, place: str, loadgen: str = "ab") -> Client:
        client = super().__new__(cls, place)
        client.loadgen = LOADGENS[loadgen]
        return client


def loadgen_of(client: str) -> LoadGenerator:
    return client.loadgen if isinstance(client, Client) else LOADGENS["ab"]


def run_ab(
    target: Target,
    running: RunningScenario,
    client: str,
    requests_total: int,
    concurrency: int,
    delay: float,
    cpu: int = 0,
) -> tuple[list[str], str]:
    """The client's load generator (ab unless the client says otherwise) against the target: command and output."""
    loadgen = loadgen_of(client)
    if client == "host":
        command = loadgen.command(target.url + query(delay, cpu), requests_total, concurrency, delay)
    else:
        inside = loadgen.command(target.url_inside + query(delay, cpu), requests_total, concurrency, delay)
        command = [*running.loadgen_run(loadgen.image), *inside]
    finished = subprocess.run(command, capture_output=True, text=True)
    return command, finished.stdout + finished.stderr


def describe(target: Target, load: Load, client: str, cpu_ms_per_unit: float | None = None) -> dict:
    """The record's fixed part: what was loaded, how, and the best a perfect server could score.

    With CPU work, a request holds its place for the delay plus its CPU time, and the CPU time alone bounds
    the throughput (bench/ceiling.py, cpu_bound_rps). The CPU time is the units times what one unit took in
    the target's own image just before (cpu_ms_per_unit): the server's and Flask's own CPU per request is not
    in it, so with CPU work the ceiling is an upper bound that no server reaches."""
    loadgen = loadgen_of(client)
    cpu_seconds = load.cpu * (cpu_ms_per_unit or 0) / 1000
    ceiling = loadgen.ceiling_rps(load.n, load.c, load.delay + cpu_seconds, target.concurrency)
    naive = naive_ceiling_rps(load.c, load.delay + cpu_seconds, target.concurrency)
    if cpu_seconds:
        bound = cpu_bound_rps(cpu_seconds, target.workers, os.cpu_count() or 1)
        ceiling, naive = min(ceiling, bound), min(naive, bound)
    return {
        **target.describe(),
        "n": load.n,
        "c": load.c,
        "delay": load.delay,
        "cpu_units": load.cpu,
        "cpu_ms_per_unit": cpu_ms_per_unit,
        "client": client,
        "loadgen": loadgen.name,
        "keepalive": loadgen.keepalive,
        "ceiling_rps": round(ceiling, 2),
        "ceiling_naive_rps": round(naive, 2),
    }


def cpu_ms_per_unit(running: RunningScenario, service: str) -> float:
    """What one `?cpu=` unit costs in this service's image on this machine now (flask_app/cpu_work.py), idle."""
    container = running.container_ids()[service]
    return float(running.docker(service, "exec", container, "python", "cpu_work.py").strip())


def measure(target: Target, running: RunningScenario, record: dict) -> dict:
    """The load generator's figures and the server's usage during the load, or the problem that spoiled them."""
    loadgen = LOADGENS[record["loadgen"]]
    services = running.container_ids()
    # The sampler reads /proc: it sees the processes of the engines on this machine (all of them without roles).
    here = {service for service in services if running.on_this_machine(service)}
    server_pid = running.main_pid(target.service) if target.service in here else None
    postgres_pid = running.main_pid("postgres") if "postgres" in here else None
    # Everything else on a request's path, whose CPU time is spent on the same two cores.
    others = {
        service: [running.main_pid(service)]
        for service in ("slow_api", "nginx", "postgres")
        if service in here and service != target.service
    }
    if record["client"] == "host":
        others["docker-proxy"] = docker_proxy_pids()
    loadgen_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    sampler = Sampler(server_pid, postgres_pid, others) if server_pid else None
    with sampler or contextlib.nullcontext():
        client = Client(record["client"], loadgen.name)
        command, output = run_ab(
            target, running, client, record["n"], record["c"], record["delay"], record.get("cpu_units", 0)
        )
    loadgen_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    usage = asdict(sampler.usage) if sampler else {"not_sampled": "the server is on another machine"}
    measured = {"command": " ".join(command), **usage}
    if record["client"] == "host":
        spent = loadgen_after.ru_utime + loadgen_after.ru_stime - loadgen_before.ru_utime - loadgen_before.ru_stime
        measured["cpu_seconds_others"][loadgen.name] = round(spent, 2)
    # Docker's userland proxy stops for good when accept() fails, e.g. out of file descriptors: from then on
    # no request reaches the server, however well it is doing.
    proxy_died = not all(alive(pid) for pid in others.get("docker-proxy", []))
    proxy_note = "; docker-proxy exited: the published port forwards nothing until restarted" if proxy_died else ""
    try:
        result = loadgen.parse(output)
    except ValueError as error:
        return measured | {"problem": f"{loadgen.name} did not finish: {error}{proxy_note}"}
    problem = None
    if result.failed or result.non2xx:
        # ab counts failure events (one reset can be a receive error, a length and an exception), not requests.
        kinds = ", ".join(f"{kind} {count}" for kind, count in result.failure_kinds.items())
        problem = f"{loadgen.name} counted {result.failed} failures ({kinds}) and {result.non2xx} non-2xx answers"
        problem += f" in {record['n']} requests"
    if proxy_died:
        problem = (problem or "no failure") + proxy_note
    return measured | {
        "rps": result.rps,
        "seconds": result.seconds,
        "complete": result.complete,  # wrk runs for a time: its count is the server's, not the one asked for
        "efficiency": round(efficiency(result.rps, record["ceiling_rps"]), 3),
        "p50_ms": result.p50_ms,
        "p99_ms": result.p99_ms,
        "failed": result.failed,
        "non2xx": result.non2xx,
        "problem": problem,
    }


def app_settings(running: RunningScenario, service: str) -> dict[str, str]:
    container = running.container_ids()[service]
    environment = json.loads(running.docker(service, "inspect", "--format", "{{json .Config.Env}}", container))
    pairs = (variable.split("=", 1) for variable in environment)
    return {name: value for name, value in pairs if name in APP_SETTINGS}


def image_packages(running: RunningScenario) -> dict[str, list[str]]:
    """The Python packages as installed in each app image, read from the running containers."""
    packages = {}
    for service, container in running.container_ids().items():
        image = running.docker(service, "inspect", "--format", "{{.Config.Image}}", container).strip()
        try:
            freeze = running.docker(service, "exec", container, "pip", "freeze")
        except subprocess.CalledProcessError:
            continue  # no pip in it: Postgres, Nginx
        if service != "postgres":
            packages[image] = freeze.split()
    return packages


def metadata(arguments: list[str], mode: str) -> dict:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    # Result sets (this run's own folder among them) are output, not code: they do not make the tree dirty.
    status = ["git", "status", "--porcelain", "--", ".", ":(exclude)results"]
    dirty = subprocess.run(status, cwd=ROOT, capture_output=True, text=True).stdout.strip()
    compose = subprocess.run([*compose_command(), "version", "--short"], capture_output=True, text=True)
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "git_commit": commit.stdout.strip() + ("-dirty" if dirty else ""),
        "cpu_count": os.cpu_count(),
        "kernel": platform.release(),
        "docker_version": docker("version", "--format", "{{.Server.Version}}").strip(),
        "compose_version": compose.stdout.strip(),
        "command": " ".join(["python -m bench.run", *arguments]),
        "mode": mode,  # bench, sweep or overload
        "packages": {},
    }


def app_images(scenarios: list[str] | None = None) -> dict[str, tuple[str, str]]:
    """Every image `make bench`'s scenarios build (or these scenarios'): name -> (build context, Dockerfile), from
    their compose files."""
    images = {}
    # common.yml builds slow_api, which every scenario extends.
    chosen = (ROOT / "common.yml", *(compose_file(scenario) for scenario in (REFERENCE, *SCENARIOS)))
    if scenarios is not None:
        chosen = tuple(compose_file(scenario) for scenario in scenarios)
    for path in chosen:
        for service in yaml.safe_load(path.read_text()).get("services", {}).values():
            build = service.get("build")
            if build and "image" in service:
                context, dockerfile = (
                    (build, "Dockerfile")
                    if isinstance(build, str)
                    else (build["context"], build.get("dockerfile", "Dockerfile"))
                )
                images[service["image"]] = (context, dockerfile)
    return images


def cold_build(scenarios: list[str] | None = None) -> dict:
    """Build every app image (or these scenarios') without cache, one after the other (the base images already
    here): the time a user waits on a first `up`, and each image's size. Then remove the images it replaced."""
    seconds, sizes = {}, {}
    for image, (context, dockerfile) in app_images(scenarios).items():
        started = time.monotonic()
        path = f"{context}/{dockerfile}"
        command = ["docker", "build", "--no-cache", "--quiet", "--tag", image, "--file", path, context]
        subprocess.run(command, cwd=ROOT, check=True, capture_output=True, env={**os.environ, "DOCKER_BUILDKIT": "0"})
        seconds[image] = round(time.monotonic() - started, 1)
        sizes[image] = round(int(docker("image", "inspect", "--format", "{{.Size}}", image)) / 1e6)
    remove_replaced_images()
    return {"cold_build_seconds": round(sum(seconds.values()), 1), "build_seconds": seconds, "size_mb": sizes}


def run_scenario(
    scenario: str,
    runs: list[tuple[Target, Load]],
    client: str,
    document: dict,
    progress: Progress,
    overload: bool = False,
    environment: dict[str, str] | None = None,
    placed: roles.Roles = roles.NO_ROLES,
):
    """Start one scenario (with these settings in its environment, on the engines and cores `placed` gives its
    roles) and yield a record for each (target, load) of `runs`, in order. Overload: a target's loads stop at
    the first that fails."""
    progress.show(scenario, "building and starting")
    services = [target.service for target, _ in runs]
    try:
        with (
            roles.RolesScenario(scenario, placed, services, environment=environment)
            if placed.active
            else RunningScenario(scenario, environment=environment)
        ) as running:
            document["metadata"]["packages"] |= image_packages(running)
            unit_ms: dict[str, float] = {}
            while runs:
                target, load = runs[0]
                label = f"{scenario} / {target.name}"
                if load.cpu and target.service not in unit_ms:
                    unit_ms[target.service] = cpu_ms_per_unit(running, target.service)
                record = describe(target, load, client, unit_ms.get(target.service) if load.cpu else None)
                record["app_settings"] = app_settings(running, target.service)
                # Before any request: what the server holds when nothing happens.
                if running.on_this_machine(target.service):
                    record["threads_idle"] = os_threads(server_pids(running.main_pid(target.service)))
                progress.show(label, "verifying")
                problem = verify(target, load.delay, load.cpu)
                record |= {"verified": problem is None, "problem": problem}
                if problem is None:
                    if not overload:  # overload is a sudden flood: no warm-up
                        # Without the delay, at the load's concurrency: connections, pools, threads.
                        warm = min(load.c, 1000)
                        run_ab(target, running, client, warm * 2, warm, 0)
                    tool = loadgen_of(client).name
                    progress.show(label, f"loading: {tool} -n {load.n} -c {load.c}, {query(load.delay, load.cpu)}")
                    before = roles.probe(placed)
                    record |= measure(target, running, record)
                    record |= roles.steadiness(before, roles.probe(placed))
                if overload and record["verified"] and record["problem"]:
                    # The first failing concurrency is the finding; what matters next is that the server lives.
                    progress.show(label, "overloaded: does it still answer?")
                    record["survived"] = verify(target, load.delay) is None
                    left = [other for t, other in runs if t == target]
                    progress.done += len(left) - 1
                    runs = [run for run in runs if run[0] != target]
                else:
                    runs = runs[1:]
                yield record
    except ScenarioError as error:
        # A scenario that does not start fails each of its targets, and the run goes on with the next.
        for target, load in runs:
            failed = {"verified": False, "problem": f"did not start: {str(error).splitlines()[0][:200]}"}
            yield describe(target, load, client) | failed


def compare_to_reference(records: list[dict]) -> None:
    """Each record's throughput as a share of slow_api alone under the same load, client and repeat."""
    # slow_api has no CPU knob: with ?cpu=, the reference is still slow_api alone at the same delay.
    reference = {
        (r["n"], r["c"], r["delay"], r["client"], r.get("repeat")): r["rps"]
        for r in records
        if r["scenario"] == REFERENCE and r["ok"]
    }
    for record in records:
        reference_rps = reference.get(
            (record["n"], record["c"], record["delay"], record["client"], record.get("repeat"))
        )
        if reference_rps and record["ok"]:
            record["reference_rps"] = reference_rps
            record["vs_reference"] = round(record["rps"] / reference_rps, 3)


def raise_file_limit() -> None:
    """A load generator holds a file per client, a slow connection is one too: the usual default of 1024 files
    stops short of the sweep's, latency's and slowclients' loads. Up to the hard limit, at most 65536."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(65536, hard), hard))


def choose_client(wanted: str, loadgen: str = "ab") -> Client:
    """From the host where the tool is installed (auto), else from a container on the scenario's network."""
    tool = LOADGENS[loadgen]
    installed = shutil.which(tool.name) is not None
    place = wanted if wanted != "auto" else ("host" if installed else "container")
    if place == "host" and not installed:
        raise SystemExit(f"CLIENT=host needs {tool.name} on this machine: apt-get install {tool.package}")
    if place == "container":
        dockerfile = f"bench/Dockerfile-{tool.name}"
        build = ["docker", "build", "--quiet", "--tag", tool.image, "--file", dockerfile, "bench"]
        subprocess.run(build, cwd=ROOT, check=True, capture_output=True, env={**os.environ, "DOCKER_BUILDKIT": "0"})
        remove_replaced_images()
    return Client(place, loadgen)


def concurrencies(text: str) -> list[int]:
    return sorted(int(c) for c in text.replace(",", " ").split())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument("--scenarios", nargs="*", default=list(SCENARIOS), choices=SCENARIOS, metavar="SCENARIO")
    parser.add_argument("-n", "--requests", type=int, help="requests per target (default: the tutorial's)")
    parser.add_argument("-c", "--concurrency", type=int, help="ab's clients (default: the tutorial's)")
    parser.add_argument("--delay", type=float, default=1.0)
    parser.add_argument("--cpu", type=int, default=0, help="units of CPU work per request, about 1 ms each")
    parser.add_argument("--client", choices=("auto", "host", "container"), default="auto")
    parser.add_argument("--loadgen", choices=LOADGENS, default="ab", help="ab (the tutorial's), hey or wrk")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--sweep", type=concurrencies, help="these client counts, 5 x as many requests each")
    modes.add_argument("--overload", type=concurrencies, help="these client counts, one request each, up to a failure")
    parser.add_argument(
        "--also", type=concurrencies, default=[], help="bench: also these client counts for each concurrent target"
    )
    parser.add_argument("--repeat", type=int, default=1, help="run the whole matrix this many times, interleaved")
    parser.add_argument("--no-reference", action="store_true", help="leave out slow_api alone, the same-run reference")
    parser.add_argument("--cold-build", action="store_true", help="first time a no-cache build of every app image")
    parser.add_argument("--out", type=Path)
    roles.add_arguments(parser)
    arguments = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(arguments)
    out = args.out or ROOT / "results" / datetime.now(UTC).strftime("%Y-%m-%dT%H%M%SZ")
    out.mkdir(parents=True, exist_ok=True)
    raise_file_limit()
    placed = roles.from_arguments(args)
    # With roles, the load generator runs in a container on the client's engine, on its cores.
    client = choose_client("container" if placed.active else args.client, args.loadgen)
    if placed.active:
        roles.copy_images([client.loadgen.image], placed.client)

    levels = args.sweep or args.overload
    targets = [t for t in (t for s in args.scenarios for t in load_targets(s)) if not levels or t.load == "full"]
    targets = [placed.addressed(target) for target in targets]
    if args.sweep:
        loads_of = {
            t.name: [Load(args.requests or c * 5, c, args.delay, args.cpu) for c in args.sweep] for t in targets
        }
    elif args.overload:
        loads_of = {t.name: [Load(c, c, args.delay, args.cpu) for c in args.overload] for t in targets}
    else:
        # --also: the same target in the same run at more clients (5 x as many requests), so the two compare.
        loads_of = {
            t.name: [
                Load(args.requests or LOADS[t.load][0], args.concurrency or LOADS[t.load][1], args.delay, args.cpu)
            ]
            + ([Load(c * 5, c, args.delay, args.cpu) for c in args.also] if t.load == "full" else [])
            for t in targets
        }
    if not args.overload and not args.no_reference:
        # slow_api alone, first, at every load the targets get (it has no CPU work to do): the yardstick this
        # run's machine sets.
        (reference,) = map(placed.addressed, load_targets(REFERENCE))
        every_load = (replace(load, cpu=0) for loads in loads_of.values() for load in loads)
        loads_of[reference.name] = list(dict.fromkeys(every_load))
        targets.insert(0, reference)
    mode = "sweep" if args.sweep else "overload" if args.overload else "bench"
    document = {"metadata": metadata(arguments, mode) | {"repeat": args.repeat}, "results": []}
    # Where each role ran: its engine and its machine's cores, kernel and CPU model (all the local one by default).
    document["metadata"]["roles"] = where = roles.describe_roles(placed)
    if args.cold_build:
        print("building every app image without cache", flush=True)
        document["metadata"]["images"] = cold_build()
    progress = Progress(args.repeat * sum(len(loads) for loads in loads_of.values()))

    def keep(record: dict) -> None:
        record["ok"] = record["verified"] and not record["problem"]
        record["roles"] = where
        document["results"].append(record)
        progress.done += 1
        (out / "results.json").write_text(json.dumps(document, indent=2) + "\n")
        verdict = "ok" if record["ok"] else f"NOT OK: {record['problem']}"
        print(f"    {record.get('rps', '-')} requests/s, {verdict}", flush=True)

    # Repeats go round the whole matrix (a, b, c, a, b, c), so that the machine's drift hits every target alike.
    for repeat in range(args.repeat):
        for scenario in dict.fromkeys(t.scenario for t in targets):
            runs = [(t, load) for t in targets if t.scenario == scenario for load in loads_of[t.name]]
            overload = bool(args.overload)
            for record in run_scenario(scenario, runs, client, document, progress, overload=overload, placed=placed):
                keep(record | {"repeat": repeat})
    compare_to_reference(document["results"])
    (out / "results.json").write_text(json.dumps(document, indent=2) + "\n")
    report.render(out)
    failures = [r["target"] for r in document["results"] if not r["ok"]]
    if args.overload:
        # Overload looks for failures: only a server that was unusable before, or did not survive, is one.
        failures = [r["target"] for r in document["results"] if not r["verified"] or r.get("survived") is False]
    print(f"\nresults in {out}: results.json, results.md, charts" + (f"; NOT OK: {failures}" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
