# The front door. `make help` lists what is here.
S ?= sync-gunicorn
VENV := .venv
PYTHON := $(VENV)/bin/python
VENV_READY := $(VENV)/.requirements-installed
# make ab's N, C and DELAY pass on only when set: unset, ab gets the tutorial's load for each target. The other
# modes declare their options (bench/options.py) and read the variables set themselves.
LOAD = $(if $(N),-n $(N)) $(if $(C),-c $(C)) $(if $(DELAY),--delay $(DELAY))

.PHONY: help doctor venv images up down ab threads bench sweep overload latency map recommend pages slowclients labs bookstore incidents yourapp test test-fast lint format

help: $(VENV_READY) ## list the targets with the variables of each (from each mode's declaration, bench/options.py), and the scenarios by group (from each compose file's x-scenario block)
	@$(PYTHON) -m bench.modes $(MAKEFILE_LIST)
	@echo "scenarios (make up S=<name>):"
	@$(PYTHON) -m bench.containers.scenarios

# A stamp of its own: .venv/bin/python is a link to the system's interpreter, whose time make would read (older than
# any clone, so every command would install again) and `touch` would change.
$(VENV_READY): requirements-dev.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet -r requirements-dev.txt
	touch $(VENV_READY)

doctor: $(VENV_READY) ## what this machine has: Docker, Compose v2, whether it sees the containers' processes, which tools run in a container instead, free ports, how long bench and test take
	$(PYTHON) -m bench.containers.doctor

venv: $(VENV_READY) ## create .venv with the host tools (tests, harness, ruff, mypy)

up: $(VENV_READY) ## build and start scenario S (default sync-gunicorn), wait until healthy
	$(PYTHON) -m bench up $(S)

down: $(VENV_READY) ## stop and remove scenario S
	$(PYTHON) -m bench down $(S)

ab: $(VENV_READY) ## the tutorial's ab command against each port of S (N=2000 C=200 DELAY=1)
	$(PYTHON) -m bench ab $(S) $(LOAD)

threads: $(VENV_READY) ## OS threads of each server of the running scenario S (the tutorial's `top -H`)
	$(PYTHON) -m bench threads $(S)

bench: $(VENV_READY) ## app images built cold, every scenario verified and loaded, into results/<time>/; each role on an engine and cores of its own: docs/several-machines.md
	$(PYTHON) -m bench.modes.bench

# make bench's mode behind two more targets: the word after the module names the target, whose options it takes.
sweep: $(VENV_READY) ## the concurrent targets at 10, 50, 200, 500, 1000 clients
	$(PYTHON) -m bench.modes.bench sweep

overload: $(VENV_READY) ## more and more clients (one request each) per concurrent target, until a request fails; ab from a container by default
	$(PYTHON) -m bench.modes.bench overload

latency: $(VENV_READY) ## open-loop load (vegeta) at fixed rates, 25 % to 150 % of what each concurrent target sustains: latency against load
	$(PYTHON) -m bench.modes.latency

map: $(VENV_READY) ## where each server wins: a grid of I/O delay x CPU units x clients over a few targets, winner per cell
	$(PYTHON) -m bench.modes.map

recommend: $(VENV_READY) ## the run behind the README's recommendation: each way at one process and one per core, at 200, 1000 and 5000 clients, with and without CPU work, again on one core of its own, and its bounds on more cores (docs/recommend.md)
	$(PYTHON) -m bench.modes.recommend

pages: $(VENV_READY) ## README.md and the pages of docs/ that pages/ holds a template of, rendered again from it and the result sets they cite (bench/pages/); docs/options.md from the modes' declarations
	$(PYTHON) -m bench.pages
	$(PYTHON) -m bench.modes --page docs/options.md Makefile

slowclients: $(VENV_READY) ## half-sent heads, trickled bodies, idle keep-alive: how many slow connections delay a normal request, per target
	$(PYTHON) -m bench.modes.slowclients

labs: $(VENV_READY) ## the failure labs: how gevent fails, each lab broken and fixed side by side (docs/labs.md)
	$(PYTHON) -m bench.modes.labs

bookstore: $(VENV_READY) ## the bookstore app served each way, each load beside pgbench running the same SQL: the database's own limit (READS_END_WITH="rollback commit" measures both; LADDER=1 LOADS=author: the ladder's rungs instead of the ways)
	$(PYTHON) -m bench.modes.bookstore

incidents: $(VENV_READY) ## what each production server loses to a reload, a killed worker or container, a replaced container, a deploy, recycled workers: every request on a timeline; the bookstore's targets with writes, each looked up (docs/incidents.md)
	$(PYTHON) -m bench.modes.incidents

yourapp: $(VENV_READY) ## your own Flask app served every way, verified, loaded, and what it is bound by (EXAMPLE=flaskr or ihatemoney; docs/yourapp.md)
	$(PYTHON) -m bench.modes.yourapp

# The tests that measure the scheduler or time run after the pool, one after another: beside its other workers (one
# autogroup of the kernel's) a busy loop got a third of what it gets alone.
test-fast: $(VENV_READY) ## the tests that need no Docker (where Chromium is not installed, the page tests run it in a container)
	$(PYTHON) -m pytest -m "not docker and not timing" -n auto
	$(PYTHON) -m pytest -m "timing and not docker"

# The tests without Docker first, on every core (pytest-xdist), stopping at the first failure; then every image built
# once, a few at a time, and the tests in Docker start each stack from them (BUILD_IMAGES=0) instead of building at
# every start; the scenarios' tests behind the others, on two more engines at a low CPU weight (tests/in_docker.py).
test: lint ## lint, the tests without Docker (stop at the first failure), every image built once (make images), then every test in Docker
	$(PYTHON) -m pytest -m "not docker and not timing" -x -n auto
	$(PYTHON) -m pytest -m "timing and not docker" -x
	$(PYTHON) -m bench.containers.images
	BUILD_IMAGES=0 $(PYTHON) -m tests.in_docker

images: $(VENV_READY) ## build every image of every scenario, labs and bookstore included, each once, three at a time
	$(PYTHON) -m bench.containers.images

lint: $(VENV_READY) ## ruff check, format check and mypy over bench/
	$(PYTHON) -m ruff check .
	$(PYTHON) -m ruff format --check .
	$(PYTHON) -m mypy

format: $(VENV_READY) ## format the Python code
	$(PYTHON) -m ruff format .
	$(PYTHON) -m ruff check --fix .
