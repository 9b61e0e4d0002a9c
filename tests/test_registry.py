"""The compose files are the registry of scenarios (bench/containers/scenarios.py): every root `*.yml` but common.yml,
and every `labs/*.yml`, must be a scenario that a mode of the harness runs, and follow docs/project.md's "Adding a
scenario" checklist, which this test keeps honest. No Docker: it reads the files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from bench.containers.roles import FACTS_IMAGE
from bench.containers.sampler import SAMPLER_IMAGE
from bench.containers.scenarios import (
    BOOKSTORE,
    GROUPS,
    LABS,
    REFERENCE,
    REGISTRY,
    ROOT,
    SCENARIO_KEYS,
    SCENARIOS,
    ScenarioFileError,
    load_targets,
    read_registry,
    read_scenario,
)

# Found here with a glob of their own, not through the registry: a file the registry missed must show up.
COMPOSE_FILES = sorted(path for path in [*ROOT.glob("*.yml"), *ROOT.glob("labs/*.yml")] if path.name != "common.yml")
COMMON_SERVICES = yaml.safe_load((ROOT / "common.yml").read_text())["services"]


def test_every_compose_file_is_a_scenario_that_a_mode_runs() -> None:
    run_by_a_mode = {*SCENARIOS, *LABS, REFERENCE, *BOOKSTORE}  # make bench and make test, make labs, make bookstore
    for path in COMPOSE_FILES:
        scenario = read_scenario(path)  # raises, naming the file, when its x-scenario block is missing or wrong
        assert scenario.name in run_by_a_mode, f"{path.name}: in no list the harness runs"
        assert REGISTRY[scenario.name].file == path
    assert len(REGISTRY) == len(COMPOSE_FILES)
    assert SCENARIOS[:9] == tuple(name for name in REGISTRY if REGISTRY[name].group == "tutorial")


def extended(service: dict) -> dict:
    """The common.yml service this one extends, or {}."""
    base = service.get("extends") or {}
    return COMMON_SERVICES[base["service"]] if Path(base.get("file", "")).name == "common.yml" else {}


def published_ports(service: dict) -> set[int]:
    ports = [*(service.get("ports") or ()), *(extended(service).get("ports") or ())]
    for port in ports:
        assert str(port).startswith("127.0.0.1:"), f"{port}: publish on 127.0.0.1 only"
    return {int(str(port).split(":")[1]) for port in ports}


@pytest.mark.parametrize("path", COMPOSE_FILES, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_scenario_follows_the_checklist(path: Path) -> None:
    services = yaml.safe_load(path.read_text())["services"]
    targets = load_targets(path.stem)  # an unknown or misspelt key in x-targets fails here
    assert targets, path.name
    published = {name: published_ports(service) for name, service in services.items()}
    for target in targets:
        # The service that answers on the target's port: the server itself, or the proxy in front of it.
        front = target.via or target.service
        assert target.service in services and front in services, (path.name, target.name)
        assert target.port in published[front], f"{path.name}: {target.name}'s port {target.port} is not published"
        # Every server has a healthcheck, so that `up --wait` and depends_on mean ready: from common.yml
        # (`extends:`), or, for an app that shares nothing with the Flask app's (the bookstore), its own.
        for service in {target.service, front}:
            settings = {**extended(services[service]), **services[service]}
            assert "healthcheck" in settings, f"{path.name}: {service} has no healthcheck (extend common.yml's)"
    every_published = {port for ports in published.values() for port in ports}
    assert every_published == {target.port for target in targets}, f"{path.name}: publishes a port no target lists"


BAD_BLOCKS = {
    "no block": "",
    "misspelt group": "x-scenario: {group: tutorail, order: 1}\n",
    "no order": "x-scenario: {group: tutorial}\n",
    "an unknown key": "x-scenario: {group: tutorial, order: 1, ordre: 2}\n",
    "order not a number": "x-scenario: {group: lab, order: first}\n",
    "order zero": "x-scenario: {group: lab, order: 0}\n",
}
TARGETS = "x-targets:\n  - {name: t, service: app, port: 3000, server: s, mode: sync, workers: 1}\n"


@pytest.mark.parametrize("block", BAD_BLOCKS.values(), ids=BAD_BLOCKS.keys())
def test_a_missing_or_invalid_block_is_an_error_naming_the_file(tmp_path: Path, block: str) -> None:
    path = tmp_path / "my-scenario.yml"
    path.write_text(f"name: my-scenario\n{block}{TARGETS}")
    with pytest.raises(ScenarioFileError, match="my-scenario.yml: "):
        read_scenario(path)


@pytest.mark.parametrize(
    "text",
    [
        f"name: other-name\nx-scenario: {{group: tutorial, order: 1}}\n{TARGETS}",
        "name: my-scenario\nx-scenario: {group: tutorial, order: 1}\n",
    ],
    ids=["name differs from the file's", "no x-targets"],
)
def test_a_wrong_name_or_no_targets_is_an_error_naming_the_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "my-scenario.yml"
    path.write_text(text)
    with pytest.raises(ScenarioFileError, match="my-scenario.yml: "):
        read_scenario(path)


def test_two_files_cannot_share_a_place_or_a_name(tmp_path: Path) -> None:
    def scenario(relative: str, group: str, order: int) -> None:
        path = tmp_path / relative
        path.parent.mkdir(exist_ok=True)
        path.write_text(f"name: {path.stem}\nx-scenario: {{group: {group}, order: {order}}}\n{TARGETS}")

    scenario("first.yml", "alternative", 1)
    scenario("second.yml", "alternative", 2)
    scenario("labs/third.yml", "lab", 1)
    scenario("common.yml", "lab", 1)  # common.yml is never read as a scenario
    assert list(read_registry(tmp_path)) == ["first", "second", "third"]
    scenario("labs/second.yml", "lab", 2)
    with pytest.raises(ScenarioFileError, match=r"second\.yml and .*second\.yml are both named second"):
        read_registry(tmp_path)
    (tmp_path / "labs" / "second.yml").unlink()
    scenario("fourth.yml", "alternative", 2)
    with pytest.raises(ScenarioFileError, match=r"fourth\.yml and .*second\.yml are both alternative number 2"):
        read_registry(tmp_path)


def test_the_checklist_in_docs_names_what_this_test_checks() -> None:
    page = (ROOT / "docs" / "project.md").read_text()
    checklist = re.search(r"^## Adding a scenario\n(.*?)(?=^## |\Z)", page, re.MULTILINE | re.DOTALL)
    assert checklist, "docs/project.md has no '## Adding a scenario' section"
    text = checklist[1]
    for word in (*GROUPS, *SCENARIO_KEYS, "x-scenario", "x-targets", "name:", "common.yml", "127.0.0.1"):
        assert word in text, f"the checklist does not say {word!r}"
    assert "tests/test_registry.py" in text


# The CPython every image runs: common.yml's PYTHON_VERSION default, passed on as a build argument by its
# python_app service; PYTHON_VERSION=3.13 builds on 3.13 instead, each image tagged with its interpreter.
PYTHON_DEFAULT = re.fullmatch(
    r"\$\{PYTHON_VERSION:-([\d.]+)\}", COMMON_SERVICES["python_app"]["build"]["args"]["PYTHON_VERSION"]
)[1]


def dockerfile_of(path: Path, build: str | dict) -> Path:
    context, dockerfile = (build, "Dockerfile") if isinstance(build, str) else (build["context"], build["dockerfile"])
    return path.parent / context / dockerfile


def reaches_python_app(service: dict) -> bool:
    """Whether the service extends common.yml's python_app, directly or through flask_app."""
    base = service.get("extends") or {}
    return Path(base.get("file", "")).name == "common.yml" and (
        base["service"] == "python_app" or COMMON_SERVICES[base["service"]].get("extends") == {"service": "python_app"}
    )


def test_every_cpython_image_is_on_one_python_and_takes_the_build_argument() -> None:
    assert PYTHON_DEFAULT == "3.14"
    for path in COMPOSE_FILES:
        for name, service in yaml.safe_load(path.read_text())["services"].items():
            if "build" not in service:
                continue
            text = dockerfile_of(path, service["build"]).read_text()
            image = service.get("image") or COMMON_SERVICES[name]["image"]
            if "FROM pypy:" in text or "FROM postgres:" in text:  # PyPy's own; pgbouncer on the postgres image
                assert "PYTHON_VERSION" not in image, (path.name, name, image)
                continue
            # a build stage may follow the base image: "FROM python:${PYTHON_VERSION}-slim AS wheels"
            assert re.search(
                rf"ARG PYTHON_VERSION={re.escape(PYTHON_DEFAULT)}\nFROM python:\$\{{PYTHON_VERSION\}}-slim[\n ]", text
            ), (
                path,
                name,
            )
            if name == "slow_api":  # the yardstick: its Dockerfile's Python whatever PYTHON_VERSION says
                assert image == f"flask-playground/slow_api:py{PYTHON_DEFAULT}", image
                continue
            # Tagged with its interpreter, so that a 3.13 build never replaces the image the other scenarios use.
            assert image.endswith(f":py${{PYTHON_VERSION:-{PYTHON_DEFAULT}}}"), (path.name, name, image)
            assert reaches_python_app(service), f"{path.name}: {name} does not get PYTHON_VERSION (extend python_app)"
    for loadgen in ROOT.glob("bench/loadgen/Dockerfile-*"):
        assert f"FROM python:{PYTHON_DEFAULT}-slim\n" in loadgen.read_text(), loadgen
    assert FACTS_IMAGE == SAMPLER_IMAGE == f"python:{PYTHON_DEFAULT}-slim"
