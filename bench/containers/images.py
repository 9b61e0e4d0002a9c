"""The images the harness builds: the apps' (which ones, from the scenarios' compose files, and a cold build of
them), and the tools' (built on first use)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import yaml

from bench.containers.compose import compose_command, docker, remove_replaced_images
from bench.containers.scenarios import REFERENCE, REGISTRY, ROOT, SCENARIOS, compose_file


def app_images(scenarios: list[str] | None = None) -> dict[str, tuple[str, str, dict[str, str]]]:
    """Every image `make bench`'s scenarios build (or these scenarios'): name -> (build context, Dockerfile, build
    arguments), as Compose resolves their files: `extends` merged (common.yml's PYTHON_VERSION) and variables filled
    in from this process's environment (the image's tag names its Python)."""
    images = {}
    # common.yml builds slow_api, which every scenario extends.
    chosen = scenarios if scenarios is not None else [REFERENCE, *SCENARIOS]
    for scenario in chosen:
        # Every profile on (the bookstore's ladder): a service behind a profile is still one of the scenario's images.
        raw = yaml.safe_load(compose_file(scenario).read_text())
        profiles = {profile for service in raw.get("services", {}).values() for profile in service.get("profiles", [])}
        profile_options = [option for profile in sorted(profiles) for option in ("--profile", profile)]
        command = [
            *compose_command(),
            "--file",
            str(compose_file(scenario)),
            *profile_options,
            "config",
            "--format",
            "json",
        ]
        model = json.loads(subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=True).stdout)
        for service in model["services"].values():
            build = service.get("build")
            if build and "image" in service:
                images[service["image"]] = (
                    build["context"],
                    build.get("dockerfile", "Dockerfile"),
                    build.get("args", {}),
                )
    return images


def legacy_builder() -> dict[str, str]:
    """This process's environment with the legacy builder, as Compose on engine 20.10 builds: its layers are the
    cache a later `up --build` finds."""
    return {**os.environ, "DOCKER_BUILDKIT": "0"}


def build_command(image: str, recipe: tuple[str, str, dict[str, str]], *options: str) -> list[str]:
    """`docker build` of one app image from its build context, Dockerfile and arguments (app_images)."""
    context, dockerfile, arguments = recipe
    build_args = [option for name, value in arguments.items() for option in ("--build-arg", f"{name}={value}")]
    return [
        "docker",
        "build",
        *options,
        "--quiet",
        "--tag",
        image,
        *build_args,
        "--file",
        f"{context}/{dockerfile}",
        context,
    ]


def cold_build(scenarios: list[str] | None = None) -> dict[str, Any]:
    """Build every app image (or these scenarios') without cache, one after the other (the base images already
    here): the time a user waits on a first `up`, and each image's size. Then remove the images it replaced."""
    seconds, sizes = {}, {}
    for image, recipe in app_images(scenarios).items():
        started = time.monotonic()
        subprocess.run(
            build_command(image, recipe, "--no-cache"), cwd=ROOT, check=True, capture_output=True, env=legacy_builder()
        )
        seconds[image] = round(time.monotonic() - started, 1)
        sizes[image] = round(int(docker("image", "inspect", "--format", "{{.Size}}", image)) / 1e6)
    remove_replaced_images()
    return {"cold_build_seconds": round(sum(seconds.values()), 1), "build_seconds": seconds, "size_mb": sizes}


def build_every_image(parallel: int = 3) -> dict[str, float]:
    """Build (with the cache) every image of every scenario, labs and bookstore included, each once, `parallel` at a
    time: what `make images` runs before the tests start stacks without building (BUILD_IMAGES=0). Each image's
    seconds; a failed build stops it with the end of docker's output."""
    images = app_images(list(REGISTRY))

    def build(image: str) -> float:
        started = time.monotonic()
        for stage, tag in stage_tags(image, images[image]).items():
            run_build(image, build_command(tag, images[image], "--target", stage))
        run_build(image, build_command(image, images[image]))
        print(f"built {image} in {time.monotonic() - started:.0f} s", flush=True)
        return round(time.monotonic() - started, 1)

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        seconds = dict(zip(images, pool.map(build, images), strict=True))
    remove_replaced_images()
    return seconds


def run_build(image: str, command: list[str]) -> None:
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=legacy_builder())
    if done.returncode != 0:
        raise SystemExit(f"building {image} failed: {(done.stdout + done.stderr)[-2000:]}")


def stage_tags(image: str, recipe: tuple[str, str, dict[str, str]]) -> dict[str, str]:
    """A tag for each named stage of the image's Dockerfile (`FROM ... AS wheels`): `<image>-<stage>`. Untagged, the
    legacy builder leaves a stage as a dangling image, which remove_replaced_images prunes, and with it the cache of
    its layers: the PyPy images' stage compiled gevent again at every `make images` (80 s on two cores)."""
    context, dockerfile, _ = recipe
    text = (ROOT / context / dockerfile).read_text()
    name, _, version = image.partition(":")
    suffix = f":{version}" if version else ""
    return {stage: f"{name}-{stage}{suffix}" for stage in re.findall(r"(?im)^FROM\s+\S+\s+AS\s+(\S+)", text)}


# On a tool's image (a load generator's, the browser's): the hash of the Dockerfile it was built from.
SOURCE_LABEL = "org.flask-playground.dockerfile"


def build_on_first_use(image: str, dockerfile: str, context: str, copied: tuple[str, ...] = ()) -> str:
    """Build a tool's image unless the engine has it built from this very Dockerfile and these files of `context` it
    copies already: built once per engine, and a copy from another engine (one that reaches no package index) is used
    as it is. Its tag."""
    digest = hashlib.sha256(b"".join((ROOT / name).read_bytes() for name in (dockerfile, *copied))).hexdigest()[:16]
    label = '{{index .Config.Labels "' + SOURCE_LABEL + '"}}'
    found = subprocess.run(["docker", "image", "inspect", "--format", label, image], capture_output=True, text=True)
    if found.returncode == 0 and found.stdout.strip() == digest:
        return image
    build = ["docker", "build", "--quiet", "--label", f"{SOURCE_LABEL}={digest}", "--tag", image, "--file", dockerfile]
    subprocess.run([*build, context], cwd=ROOT, check=True, capture_output=True, env=legacy_builder())
    remove_replaced_images()
    return image


if __name__ == "__main__":
    started = time.monotonic()
    built = build_every_image(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
    print(f"{len(built)} images built in {time.monotonic() - started:.0f} s")
