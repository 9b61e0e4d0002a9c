"""What builds leave behind: a cold build (`make bench` with --cold-build, the legacy builder, every stage kept as
an image) removes the project's images it replaced, found by the project's label, and nothing else."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.containers.compose import PROJECT_LABEL, docker
from bench.containers.images import app_images, build_command, cold_build, run_build

UNLABELLED = "flask-playground-test/unlabelled"


def project_images() -> set[str]:
    """Every image with the project's label, tagged or not, layers and build stages included."""
    return set(docker("images", "--all", "--quiet", "--no-trunc", "--filter", f"label={PROJECT_LABEL}").split())


@pytest.fixture
def unrelated_dangling_image(tmp_path: Path) -> Iterator[str]:
    """An image of someone else's, without the label, left dangling: built twice under one tag, no cache."""
    (tmp_path / "Dockerfile").write_text("FROM python:3.14-slim\nRUN date +%s%N > /built\n")
    build = ["docker", "build", "--no-cache", "--quiet", "--tag", UNLABELLED, str(tmp_path)]
    legacy = {**os.environ, "DOCKER_BUILDKIT": "0"}  # as cold_build builds
    first = subprocess.run(build, check=True, capture_output=True, text=True, env=legacy).stdout.strip()
    subprocess.run(build, check=True, capture_output=True, text=True, env=legacy)
    assert docker("image", "inspect", "--format", "{{.RepoTags}}", first).strip() == "[]"  # dangling
    yield first
    subprocess.run(["docker", "image", "rm", "--force", UNLABELLED, first], capture_output=True)


@pytest.fixture
def built_again_from_the_cache() -> Iterator[None]:
    """After the test, the cold-built images removed and built again with the cache. Left in place, each layer of
    theirs is a second match for the first steps of every image of the same base, and the legacy builder may take it
    for the next: a `make images` after this test built most images again (mod_wsgi's compile too), 70 s, where the
    cache alone takes 3 s."""
    yield
    images = app_images(["sync-devserver"])
    docker("image", "rm", *images)
    for image, recipe in images.items():
        run_build(image, build_command(image, recipe))


@pytest.mark.docker
def test_two_cold_builds_leave_no_more_project_images_than_one(
    unrelated_dangling_image: str, built_again_from_the_cache: None
) -> None:
    cold_build(["sync-devserver"])  # flask-playground/devserver:py3.14, every layer of it an image
    after_one = project_images()
    first = docker("image", "inspect", "--format", "{{.Id}}", "flask-playground/devserver:py3.14").strip()
    assert first in after_one
    cold_build(["sync-devserver"])
    after_two = project_images()
    assert len(after_two) <= len(after_one), f"left behind: {sorted(after_two - after_one)}"
    assert first not in after_two  # replaced by the second build, and removed
    docker("image", "inspect", unrelated_dangling_image)  # fails if the unlabelled dangling image went too
