"""Every scenario end to end: build, start healthy, answer exactly, behave as the tutorial teaches, expose
nothing more than it documents, answer hostile input, keep serving beside slow clients, and last, stop gracefully.

Each scenario is started once for all of these (the module-scoped `scenario` fixture, whose instances pytest
groups the tests by): the hostile-input and slow-client checks live in tests/hostile_input.py and
tests/test_slow_clients.py and run here.

Timings assert behaviour with wide margins (serialised against concurrent), never a speed target.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
import yaml

from bench.containers.compose import RunningScenario, compose_command, docker
from bench.containers.scenarios import REGISTRY, ROOT, SCENARIOS, Target, load_targets
from bench.measure.server_facts import cpu_ms_per_unit, image_packages
from bench.modes.slowclients.run import KINDS
from tests.conftest import fetch, load
from tests.cpu_share import PremiseNotMet, where_the_cpu_was_there
from tests.hostile_framing import TUTORIAL_APP, assert_framing_answered
from tests.hostile_input import assert_hostile_requests_answered
from tests.test_slow_clients import PRODUCTION_SCENARIOS, assert_slow_clients_do_not_stop

pytestmark = pytest.mark.docker

BAD_QUERIES = [
    "delay=abc", "delay=-1", "delay=31", "delay=nan", "delay=inf", "delay=%ff%fe",
    "delay=0&cpu=abc", "delay=0&cpu=-1", "delay=0&cpu=1001", "delay=0&cpu=1.5",
]  # fmt: skip


# A lone request takes its delay and little more: async-view-gevent on Python 3.14 once took up to a second more, its
# event loop woken by a timer instead of by the name lookup that had ended (flask_app/async_view_gevent.py).
LONE_REQUEST_SLACK = 0.5


STOPPED: set[str] = set()  # the scenarios whose stack a test stopped (the graceful stop)


@pytest.fixture(autouse=True)
def stack_up(request: pytest.FixtureRequest) -> None:
    """A stack a test stopped is started again for the next test of its scenario: the graceful stop need not be the
    last test of its group, whatever order pytest runs them in."""
    if "scenario" in request.fixturenames:
        up_again_if_stopped(request.getfixturevalue("scenario"))


def up_again_if_stopped(running: RunningScenario) -> None:
    if running.scenario in STOPPED:
        running.compose("up", "--detach")
        running.wait_healthy()
        STOPPED.discard(running.scenario)


def test_answers_exactly_after_the_delay(scenario: RunningScenario) -> None:
    for target in load_targets(scenario.scenario):

        def answers_after_the_delay(target: Target = target) -> None:
            answers = [fetch(f"{target.url}?delay=0.4") for _ in range(2)]  # the faster of two: not a cold first one
            for answer in answers:
                assert (answer.status, answer.body) == (200, target.expected_body(0.4)), target.name
                assert answer.seconds >= 0.4, target.name
            fastest = min(answer.seconds for answer in answers)
            assert fastest < 0.4 + LONE_REQUEST_SLACK, (target.name, [round(a.seconds, 3) for a in answers])

        where_the_cpu_was_there(answers_after_the_delay)


def test_bad_input_is_a_400_with_a_message(scenario: RunningScenario) -> None:
    for target in load_targets(scenario.scenario):
        for query in BAD_QUERIES:
            answer = fetch(f"{target.url}?{query}")
            assert answer.status == 400, (target.name, query, answer)
            wanted = "cpu must be" if "cpu=" in query else "delay must be"
            assert wanted in answer.body and "Traceback" not in answer.body, (target.name, query)


def test_cpu_units_are_cpu_time_in_the_server(scenario: RunningScenario) -> None:
    """?cpu= costs the server's processes CPU time, about units x what a unit takes in its image (wide margins)."""
    # Every app container of the scenario: behind Nginx, the request may go to another copy of the target's app
    # (nginx-deploy.yml), and the others are idle meanwhile.
    apps = scenario.app_services()
    for target in load_targets(scenario.scenario):
        # 100 units measured, 150 asked for: tens of scheduler ticks each (a unit is 1 to 3 ms), few enough to be quick.
        unit_ms = cpu_ms_per_unit(scenario, target.service, units=100)
        before = {pid: facts.cpu_ticks for app in apps for pid, facts in scenario.processes(app).items()}
        answer = fetch(f"{target.url}?delay=0&cpu=150")
        after = {pid: facts.cpu_ticks for app in apps for pid, facts in scenario.processes(app).items()}
        # A process that started meanwhile (a worker replaced) counts from nothing.
        spent_ms = sum(ticks - before.get(pid, 0) for pid, ticks in after.items()) * 1000 / os.sysconf("SC_CLK_TCK")
        assert (answer.status, answer.body) == (200, target.expected_body(0)), target.name
        assert spent_ms >= 0.5 * 150 * unit_ms, (target.name, spent_ms, unit_ms)


def test_concurrency_is_what_the_server_promises(scenario: RunningScenario) -> None:
    targets = load_targets(scenario.scenario)
    if any(target.postgres for target in targets):
        where_the_cpu_was_there(lambda: patched_and_unpatched_apart(targets))
        return
    for target in targets:
        where_the_cpu_was_there(lambda target=target: holds_what_it_promises(target))


def patched_and_unpatched_apart(targets: list[Target]) -> None:
    """The bonus apps: the same gevent server, told apart only by how their Postgres half waits."""
    timings = {}
    for target in targets:
        elapsed, answers = load(f"{target.url}?delay=1", requests_total=10, concurrency=10)
        assert all(a.status == 200 for a in answers), target.name
        timings[target.name] = elapsed
    blocking = [timings[t.name] for t in targets if t.postgres == "blocking"]
    cooperative = [timings[t.name] for t in targets if t.postgres == "cooperative"]
    # Ten half-second pg_sleeps in turn take 5 s; side by side about 1 s in all.
    assert blocking and cooperative, timings
    assert min(blocking) >= 0.9 * 10 * 0.5, timings
    assert min(blocking) > 2.5 * max(cooperative), timings


def holds_what_it_promises(target: Target) -> None:
    if target.concurrency is not None and target.concurrency < 50:
        # A server that holds few at once (the single-threaded devserver, asgiref's WsgiToAsgi, waitress's default
        # 4 threads): four times as many clients take four rounds, and with more than one at once, not one request
        # after another.
        at_once = target.concurrency
        elapsed, answers = load(f"{target.url}?delay=0.5", requests_total=4 * at_once, concurrency=4 * at_once)
        assert elapsed >= 0.9 * 4 * 0.5, f"{target.name} should hold at most {at_once} at once: {elapsed:.2f} s"
        if at_once > 1:
            assert elapsed < 2 * 4 * 0.5, f"{target.name} should hold {at_once} at once: {elapsed:.2f} s"
    else:
        elapsed, answers = load(f"{target.url}?delay=1", requests_total=50, concurrency=50)
        # In turn, 50 one-second requests take 50 s; side by side, one or two.
        assert elapsed < 10, f"{target.name} should serve 50 clients at once: {elapsed:.2f} s"
    assert all(a.status == 200 for a in answers), target.name


def test_slow_api_stopped_gives_502_without_hanging(scenario: RunningScenario) -> None:
    scenario.stop("slow_api")
    try:
        # Three in a row: a proxy in front must pass the app's answer on each time, not count it against the app.
        for target, _ in itertools.product(load_targets(scenario.scenario), range(3)):
            answer = fetch(f"{target.url}?delay=0.2", timeout=15)
            assert answer.status == 502, (target.name, answer)
            assert answer.body.count("\n") == 1 and "slow_api" in answer.body, (target.name, answer.body)
            assert answer.seconds < 10, target.name
    finally:
        scenario.start("slow_api")
        scenario.wait_healthy()  # the next test's requests must find slow_api answering, not starting


def test_every_app_runs_the_pinned_interpreter(scenario: RunningScenario) -> None:
    """CPython 3.14 in every CPython image, PyPy 3.11 in the PyPy ones, as the result sets record it: the
    interpreter first in each image's package list."""
    packages = image_packages(scenario)
    assert packages, scenario.scenario
    for image, listed in packages.items():
        wanted = "PyPy==3.11." if image.endswith("-pypy") else "CPython==3.14."
        assert listed[0].startswith(wanted), (image, listed[:3])


# What a scenario exposes on the machine that runs it: no app as root, only the documented ports and only
# on 127.0.0.1, Postgres never published, credentials from the environment, no version advertised.
# Official images start their server as root and drop to an unprivileged user for the work itself.
DROPS_PRIVILEGES = {"nginx", "httpd"}


def container(running: RunningScenario, service: str) -> dict:
    return json.loads(docker("inspect", running.container_ids()[service]))[0]


def test_no_app_runs_as_root(scenario: RunningScenario) -> None:
    for service in scenario.container_ids():
        # A process that ended since it was listed (a healthcheck's, a Postgres backend) is not in it: gone is not root.
        uids = {pid: facts.uid for pid, facts in scenario.processes(service).items()}
        if service in DROPS_PRIVILEGES:
            # Its master keeps root to bind the port; every process that handles a request does not.
            uids.pop(scenario.main_pid(service))
        assert uids and 0 not in uids.values(), (service, uids)


def test_only_the_documented_ports_on_loopback(scenario: RunningScenario) -> None:
    documented = {target.port for target in load_targets(scenario.scenario)}
    published = set()
    for service in scenario.container_ids():
        bindings = container(scenario, service)["NetworkSettings"]["Ports"] or {}
        for host_side in (binding for bound in bindings.values() if bound for binding in bound):
            assert host_side["HostIp"] == "127.0.0.1", (service, host_side)
            published.add(int(host_side["HostPort"]))
        if service == "postgres":
            assert not any(bindings.values()), "Postgres is never published"
    assert published == documented


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if REGISTRY[s].uses_postgres], indirect=True)
def test_credentials_come_from_the_environment(scenario: RunningScenario) -> None:
    apps = [target.service for target in load_targets(scenario.scenario)]
    for service in (*apps, "postgres"):
        image = container(scenario, service)["Config"]["Image"]
        baked = docker("image", "inspect", "--format", "{{json .Config.Env}}", image)
        assert "playground" not in baked and "DATABASE_URL" not in baked, (image, baked)
    # Without DATABASE_URL the app stops with a message: no default password hides in its code.
    app_image = container(scenario, apps[0])["Config"]["Image"]
    started = subprocess.run(
        ["docker", "run", "--rm", app_image, "python", "-c", "import app"],
        capture_output=True,
        text=True,
    )
    assert started.returncode != 0 and "DATABASE_URL must be set" in started.stderr, started.stderr
    # One variable sets the password on both sides.
    config = subprocess.run(
        [*compose_command(), "--file", str(scenario.file), "config"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "POSTGRES_PASSWORD": "another-example"},
    )
    services = yaml.safe_load(config.stdout)["services"]
    assert services["postgres"]["environment"]["POSTGRES_PASSWORD"] == "another-example"
    for app in apps:
        assert ":another-example@" in services[app]["environment"]["DATABASE_URL"]


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if REGISTRY[s].behind_nginx], indirect=True)
def test_nginx_does_not_advertise_its_version(scenario: RunningScenario) -> None:
    proxied = [target for target in load_targets(scenario.scenario) if target.via == "nginx"]
    assert proxied, "a scenario with Nginx publishes its targets through it"
    for target in proxied:
        for path in ("?delay=0", "nowhere", "x" * 20_000):  # an answer from the app, a 404, a 414
            response = requests.get(f"{target.url}{path}", timeout=10)
            assert response.headers.get("Server") in ("nginx", None), response.headers
            assert "nginx/" not in response.text, (path, response.text[:200])


def apache_targets(scenario: str) -> list[Target]:
    """The targets Apache httpd answers: through an `httpd` proxy service, or mod_wsgi's own Apache."""
    return [target for target in load_targets(scenario) if target.via == "httpd" or target.server == "mod_wsgi"]


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if apache_targets(s)], indirect=True)
def test_apache_does_not_advertise_its_version(scenario: RunningScenario) -> None:
    for target in apache_targets(scenario.scenario):
        # An answer from the app, a 404 from the app, a 414 and a 400 from Apache itself.
        for path in ("?delay=0", "nowhere", "x" * 20_000, "%2e%2e/%00"):
            response = requests.get(f"{target.url}{path}", timeout=10)
            assert response.headers.get("Server") == "Apache", (path, response.headers)
            # Apache's own error pages are one line of text, not an HTML page naming the server.
            assert "Apache" not in response.text and "<" not in response.text, (path, response.text[:200])
            assert response.text.count("\n") <= 1, (path, response.text[:200])


def test_hostile_requests_get_200_or_4xx_and_the_server_keeps_serving(scenario: RunningScenario) -> None:
    # A refusal must come within REFUSAL_SECONDS: a check of time too (uWSGI's of 33 KB of headers on 1.3 cores).
    where_the_cpu_was_there(lambda: assert_hostile_requests_answered(scenario))


def test_hostile_framing_gets_2xx_4xx_or_a_close_never_a_5xx(scenario: RunningScenario) -> None:
    assert_framing_answered({target.name: target.url for target in load_targets(scenario.scenario)}, TUTORIAL_APP)


@pytest.mark.parametrize("scenario", PRODUCTION_SCENARIOS, indirect=True)
@pytest.mark.parametrize("kind", KINDS)
def test_slow_clients_do_not_stop_a_production_server(scenario: RunningScenario, kind: str) -> None:
    where_the_cpu_was_there(lambda: assert_slow_clients_do_not_stop(scenario, kind))


# Flask's development server has no graceful stop: SIGTERM ends it at once (see README). A stop lets the
# requests a server has accepted finish, and resets the connections still waiting in its listen backlog:
# a bonus app whose Postgres half blocks (psycopg2 unpatched, psycopg 3 imported before the patch) blocks its
# worker in libpq for each request and leaves most of them waiting there. The targets of one scenario are loaded
# together and stopped by one `docker compose stop`, each with requests of its own in flight.
GRACEFUL_TARGETS = {
    scenario: targets
    for scenario in SCENARIOS
    if (targets := [t for t in load_targets(scenario) if not t.development_server and t.postgres != "blocking"])
}


# It stops the stack: `stack_up` starts it again for any test of the scenario that pytest runs after it.
@pytest.mark.parametrize("scenario", list(GRACEFUL_TARGETS), indirect=True)
def test_stop_lets_requests_in_flight_finish(scenario: RunningScenario) -> None:
    # A check of time too: each request's answer needs slow_api's within the app's timeout (delay + 5 s). A CI run
    # behind, where the other parts had the CPU, got one 504 from waitress's default 4 threads after 7.5 s.
    where_the_cpu_was_there(lambda: assert_a_stop_lets_requests_finish(scenario))


def assert_a_stop_lets_requests_finish(scenario: RunningScenario) -> None:
    up_again_if_stopped(scenario)  # a try made again finds the stack the try before stopped
    delay, clients = 2.0, 10
    targets = GRACEFUL_TARGETS[scenario.scenario]
    with ThreadPoolExecutor(clients * len(targets)) as pool:
        sent = {
            target: [pool.submit(fetch, f"{target.url}?delay={delay:g}") for _ in range(clients)] for target in targets
        }
        # Part of the experiment, not a readiness wait: the requests must be accepted and well short of done.
        time.sleep(delay / 4)
        stopping = time.monotonic()
        STOPPED.add(scenario.scenario)
        scenario.compose("stop")
        stopped_in = time.monotonic() - stopping
        answers = {target: [future.result() for future in futures] for target, futures in sent.items()}
    # slow_api stops after the apps (they depend on it), so a stop that cut a request shows as no answer or a 502;
    # the app's 504 says that slow_api itself was slow, which is no claim about the stop.
    slow = [
        (t.name, a) for t, answered in answers.items() for a in answered if a.status == 504 and "slow_api" in a.body
    ]
    if slow:
        raise PremiseNotMet(f"slow_api did not answer within the app's timeout, {len(slow)} times: {slow[0]}")
    for target, answered in answers.items():
        for result in answered:
            assert (result.status, result.body) == (200, target.expected_body(delay)), (target.name, result)
        print(f"{target.name}: {clients} requests of {delay:g} s in flight, all answered")
    # It waited for them: a stop that cut them would have been over at once.
    assert stopped_in >= delay / 2, stopped_in
    print(f"{scenario.scenario}: stop took {stopped_in:.1f} s")
