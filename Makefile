# jupyter_air — `make run` starts JupyterLab with the extension; `make test` installs and runs every test suite.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD := 1
# torch is pinned so pip takes the CPU wheel; a loose range can pull a multi-GB CUDA build.
TORCH := torch==2.13.0
PORT ?= 8888
# JupyterLab refuses to start as root without --allow-root (containers and CI machines often run as root).
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
# Tests send traffic to loopback only: MLflow's usage telemetry (a DNS lookup, then HTTPS off the machine, from
# every process that imports MLflow outside pytest or CI) is off for them (benchmarks/__main__.py does the same);
# `make run` leaves it be.
check test test-%: export MLFLOW_DISABLE_TELEMETRY := true

.PHONY: run demo hub dist docs check test test-py test-py-ray test-py-local test-py-alone test-other test-js test-ui test-dist lint lint-py lint-js bench install install-dev frontend chromium check-auth clean

$(PY):
	python3 -m venv $(VENV)
	$(PIP) install -q -U pip

# Build tools for `--no-build-isolation` editable installs, then the project and its test extras.
$(VENV)/.air-deps: pyproject.toml | $(PY)
	$(PIP) install -q hatchling hatch-nodejs-version hatch-jupyter-builder editables build 'jupyterlab>=4.6,<5'
	$(PIP) install -q $(TORCH)
	touch $@

node_modules/.air-stamp: package.json yarn.lock $(VENV)/.air-deps
	jlpm install
	touch $@

frontend: node_modules/.air-stamp
	jlpm build

# jsonschema's optional IRI format checker, rfc3987-syntax (jupyter-events asks for jsonschema[format-nongpl]), builds
# its grammars at import: 1.2 CPU-seconds in every process that imports Ray, nbformat, JupyterHub or a Jupyter server,
# about 250 of them in the Python suites. No schema of Jupyter's, Ray's or ours has an IRI format; so it goes
# (docs/how-to/install.md, "Start Ray workers and Jupyter servers faster").
# The editable install builds the frontend itself (hatch-jupyter-builder runs `jlpm install:extension`). It also
# puts install.json into the environment's labextension folder, which `labextension develop` made a link to the
# built extension: a reinstall (after a change to pyproject.toml) would pack that copy twice and fail, so it goes.
$(VENV)/.air-installed: $(VENV)/.air-deps node_modules/.air-stamp
	rm -f jupyter_air/labextension/install.json
	$(PIP) install -q --no-build-isolation -e ".[test,distributed,ray,team,docs]"
	$(PIP) uninstall -q -y rfc3987-syntax
	jupyter labextension develop --overwrite .
	touch $@

install: $(VENV)/.air-installed frontend

run: install
	jupyter lab --port=$(PORT) $(LAB_ROOT) $(LAB_ARGS)

# The examples folder, opened on its quickstart notebook, with the clearly labelled simulated GPUs. A notebook that
# ran a .distributed() call and then sits idle for DEMO_IDLE_MINUTES (not the usual 30) gets the idle GPU holder
# notification; the server checks every 10 s.
DEMO_IDLE_MINUTES ?= 2
demo: install
	JUPYTER_AIR_GPU_SOURCE=simulated jupyter lab --port=$(PORT) $(LAB_ROOT) --ServerApp.root_dir=examples \
		--LabApp.default_url=/lab/tree/quickstart.ipynb --JupyterAir.idle_holder_minutes=$(DEMO_IDLE_MINUTES) \
		--JupyterAir.idle_holder_check_seconds=10 $(LAB_ARGS)

# A team's stack on 127.0.0.1 for trying it, NOT for production: JupyterHub (alice, bob, carol; one shared password),
# the air-jobs service and an MLflow server that takes hub tokens; prints where hub-demo.json (tokens) is.
hub: install
	$(PY) -m jupyter_air.team.demo $(if $(HUB_DIR),--dir $(HUB_DIR))

chromium:
	@command -v chromium >/dev/null || (apt-get update -q && apt-get install -y -q chromium)

# The wheel and sdist in dist/, the wheel carrying the production build of the JupyterLab extension.
dist: install
	rm -rf dist
	jlpm build:prod
	$(PY) -m build --no-isolation --outdir dist .

# The linters first: a finding fails `make test` (and CI) before any suite runs. Then, side by side, the Ray tests
# (one process, one Ray cluster), the other Python tests (on pytest-xdist workers), and the TypeScript and docs
# builds (each target's output shown whole once it ends); then the Python tests that must run alone; then the
# browser tests with the wheel's build beside them (the browser tests leave CPU idle, the Python suites none).
# Beside the Python suites the browser tests did not make the gate faster on a slower day's machine (23.5 minutes
# against 22.7-24.1 after them, every suite stretched to 18-21 minutes): they stay after them (docs/development.md).
test: install chromium
	$(MAKE) lint
	$(MAKE) -j 3 --output-sync=target test-py-ray test-py-local test-other
	$(MAKE) test-py-alone
	$(MAKE) -j 2 --output-sync=target test-ui test-dist

test-other: test-js docs

lint: lint-py lint-js

# ruff (rules and format settings in pyproject.toml) over the package, tests, benchmarks and ui-tests.
lint-py:
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(VENV)/bin/lint-imports --no-cache

# Every Python test: the Ray tests in one process (they share one Ray cluster) beside the others, which run on
# PYTEST_WORKERS pytest-xdist workers (2 beside the other suites on 2 cores; CHECK_WORKERS, 4, in `make check`,
# where they run alone: many tests wait on processes and servers), an idle worker taking tests queued for a busy one
# (`--dist worksteal`: the suite's last minute is its 50-second tests); then the tests that must run alone.
PYTEST_WORKERS ?= 2
CHECK_WORKERS ?= 4
PYTEST_SKIP := not gpu and not dist and not alone
test-py:
	$(MAKE) -j 2 --output-sync=target test-py-ray test-py-local
	$(MAKE) test-py-alone

test-py-ray:
	$(PY) -m pytest -q -m 'ray and $(PYTEST_SKIP)'

test-py-local:
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal -m 'not ray and $(PYTEST_SKIP)'

test-py-alone:
	$(PY) -m pytest -q -m alone

# The inner loop, for after each change: the linters, the TypeScript unit tests and the Python tests that need no
# Ray cluster, no browser and no wheel build, side by side; alone on the machine, those Python tests take 3 workers.
check: install
	$(MAKE) -j 3 --output-sync=target lint test-js test-py-local PYTEST_WORKERS=$(CHECK_WORKERS)

test-js:
	jlpm test

# The documentation site (Sphinx, MyST Markdown, the PyData theme) in docs/_build/html; any warning fails it. It needs
# the package installed, not the frontend built again (`make test` built it once, before the suites).
docs: $(VENV)/.air-installed
	$(PY) -m sphinx -W --keep-going -q -b html docs docs/_build/html

# Builds the wheel from a fresh clone of HEAD as `pip install git+...` does (its own production build of the
# frontend), installs it into a fresh venv outside the repository and checks it works there.
test-dist: $(VENV)/.air-installed
	$(PY) -m pytest -q -m dist

# ESLint, Prettier and Stylelint over src/, style/ and ui-tests/ (fails on any finding, warnings included).
lint-js:
	jlpm lint:check

# The servers keep their state (AIR_HOMEs, stores, the team's hub, Galata's folders) in one new temp folder:
# removed after a passing run, kept (and named) after a failing one.
test-ui:
	cd ui-tests && jlpm install
	cd ui-tests && root=$$(mktemp -d -t jupyter-air-ui-XXXXXX) && \
	  if JUPYTER_AIR_UI_ROOT=$$root jlpm test; then rm -rf $$root; \
	  else echo "the browser tests' servers left their state in $$root"; exit 1; fi

# Baselines, not dependencies of jupyter_air: Ray Train for bench_cluster, jupyter-resource-usage for bench_polls.
bench: install
	$(PIP) install -q "ray[train]==2.60.0" "jupyter-resource-usage==1.3.0"
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) node_modules lib jupyter_air/labextension ui-tests/node_modules *.tsbuildinfo docs/_build
