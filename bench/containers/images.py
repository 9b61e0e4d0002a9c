"""The app images the harness builds: which ones (from the scenarios' compose files), and a cold build of them."""

from __future__ import annotations

import os
import subprocess
import time

import yaml

from bench.containers.compose import docker, remove_replaced_images
from bench.containers.scenarios import REFERENCE, ROOT, SCENARIOS, compose_file


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
