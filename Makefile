# Two commands set everything up on a fresh machine:
#   make demo   -> installs, then trains GRPO BlackJack on the embedded CPU default  (rollouts overlap training)
#   make test   -> installs, sets up the container engines (as root), then runs every test
#                  (the vLLM-on-CPU tests in their own venv, side by side with the others)
PYTHON ?= python3
# Bytecode caches are written even where PYTHONDONTWRITEBYTECODE is set: a fresh clone has none,
# so every test worker and server process would compile the checkout's modules again, and
# pytest rewrite every test file again in each worker (about 4 s of CPU a collection).
unexport PYTHONDONTWRITEBYTECODE
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONFIG ?= configs/grpo_blackjack_cpu_async.yaml
PYTEST_ARGS ?=
# test files run side by side in this many worker processes (pytest-xdist; most tests wait on
# servers, containers and subprocesses, so more workers than the 2 cores pay off)
TEST_WORKERS ?= 4
XDIST = -n $(TEST_WORKERS) --dist loadgroup
# the order plugin (pytest-randomly) is installed for `make test-random`; the other runs keep the
# files' order, so a failure reproduces by its test name alone
ORDERED = -p no:randomly
# every env package under envs/ (editable), so the catalog lists them all
ENV_PACKAGES = $(foreach p,$(sort $(wildcard envs/*/pyproject.toml)),-e $(patsubst %/,%,$(dir $(p))))

.PHONY: setup demo test test-main test-vllm check test-random coverage prometheus-ready lint bench fuzz clean engines engines-ready config-table \
	docs docs-gen browser-ready screenshots dist

# pip installs without compiling: compiling every module of every dependency was half of the
# install's time, and most are never imported (the first import compiles what is used; the tests
# compile it once, in $(COLLECTED) below). The editable builds use the venv's setuptools (the
# [build-system] requirement of every pyproject.toml here): an isolated build environment per
# package was another 30 s.
$(STAMP): pyproject.toml constraints.txt $(wildcard envs/*/pyproject.toml)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q --no-compile -c constraints.txt torch==2.13.0 "setuptools>=77"
	$(BIN)/pip install -q --no-compile --no-build-isolation -c constraints.txt \
		-e ".[train,dev]" $(ENV_PACKAGES)
	touch $(STAMP)

setup: $(STAMP)

# Once per install, before the side-by-side runs: one collection of every test compiles the
# modules the tests import and rewrites the test files' asserts into bytecode caches, which the
# workers then load (started at once, each of them compiled and rewrote the same files).
COLLECTED := $(VENV)/.collected
$(COLLECTED): $(STAMP)
	@echo "== compiling what the tests import (once per install)"
	@$(BIN)/python -m pytest tests --collect-only -q $(ORDERED) -p no:cacheprovider \
		> $(VENV)/collect.log 2>&1 || { tail -40 $(VENV)/collect.log; exit 1; }
	touch $(COLLECTED)

demo: setup
	$(BIN)/openenv-train train $(CONFIG)

# the main suite, with the vLLM suite beside it from the start (scripts/make_test.sh says why)
test:
	bash scripts/make_test.sh

# Every file runs side by side, the Ray tests too (one worker holds their multi-node cluster;
# run after the others, they kept one core idle for two minutes).
test-main: setup $(COLLECTED) engines-ready browser-ready prometheus-ready
	$(BIN)/python -m pytest tests $(XDIST) $(ORDERED) $(PYTEST_ARGS)

# The quick loop while editing (under 2 minutes): lint, then the tests that start no server
# process, container, browser or training run (the `quick` marker: tests/quick.txt lists them).
check: setup $(COLLECTED)
	$(BIN)/ruff check . && $(BIN)/ruff format --check .
	$(BIN)/python -m pytest tests -m quick $(XDIST) $(ORDERED) -q $(PYTEST_ARGS)

# The main suite in a random order (pytest-randomly; a seed is printed to replay an order).
test-random: setup $(COLLECTED) engines-ready browser-ready prometheus-ready
	$(BIN)/python -m pytest tests $(XDIST) $(PYTEST_ARGS)

# Line coverage of openenv_train/ over the main suite: the test workers and the Python processes
# they start (env servers, CLI runs; a server killed with SIGKILL leaves no data). Slower than
# `make test`; the total is the last line, the per-file table in coverage.txt.
coverage: setup $(COLLECTED) engines-ready browser-ready prometheus-ready
	rm -f .coverage .coverage.*
	-$(BIN)/python -m pytest tests $(XDIST) $(ORDERED) --cov=openenv_train --cov-report= $(PYTEST_ARGS)
	$(BIN)/coverage report > coverage.txt; tail -1 coverage.txt

test-vllm:
	bash scripts/ci_vllm.sh

# Docker + Podman + the local base image the container tests use (root; idempotent).
engines:
	bash scripts/container_engines.sh

# Before the suite: as root, set up the engines (each step of the script is skipped when done);
# otherwise stop here, with one line naming the fix, when an engine or the base image is missing.
engines-ready: setup
	@if [ "$$(id -u)" = 0 ]; then bash scripts/container_engines.sh; \
	else $(BIN)/python scripts/engines_ready.py; fi

# Before the suite: as root, install Debian's chromium for the browser tests (tests/web);
# otherwise stop here, with the fix, when there is none.
browser-ready:
	@if [ "$$(id -u)" = 0 ]; then bash scripts/browser.sh; \
	elif ! command -v chromium >/dev/null && [ -z "$$OPENENV_TRAIN_CHROMIUM" ]; then \
	echo "no chromium for tests/web: run 'sudo bash scripts/browser.sh'"; exit 1; fi

# Before the suite: as root, install Debian's prometheus for the scrape tests (tests/observe);
# otherwise stop here, with the fix, when there is none.
prometheus-ready:
	@if [ "$$(id -u)" = 0 ]; then bash scripts/prometheus.sh; \
	elif ! command -v prometheus >/dev/null; then \
	echo "no prometheus for tests/observe: run 'sudo bash scripts/prometheus.sh'"; exit 1; fi

# docs/img's pictures of the env playground and the run viewer, taken in headless Chromium.
screenshots: setup browser-ready
	$(BIN)/python scripts/screenshots.py

# The docs' config-key tables, regenerated from the recipes' config classes (tests/cli checks).
config-table: setup
	$(BIN)/openenv-train config-keys --readme docs/reference/config-keys.md

# The docs' generated pages (the CLI reference, the architecture picture; tests/docs checks),
# then the site into site/ (strict: a broken link, anchor or reference fails).
docs-gen: setup
	$(BIN)/python scripts/docs_gen.py

docs: docs-gen config-table
	$(BIN)/mkdocs build --strict

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

# The fuzzers' long profile (1,000 examples per target, about an hour on 2 cores; the test run
# uses a short one).
fuzz: setup
	$(BIN)/python -m pytest tests/fuzz tests/security -m fuzz --hypothesis-profile=long --timeout=7200 $(PYTEST_ARGS)

bench: setup
	$(BIN)/python benchmarks/server_throughput.py
	$(BIN)/python benchmarks/rollout_throughput.py

# sdist + wheel of openenv-train and of every env package under envs/ into dist/, checked by twine
# (offline: this venv's setuptools; a release: python scripts/dist.py --isolation).
dist: setup
	rm -rf dist
	$(BIN)/python scripts/dist.py --outdir dist

clean:
	rm -rf $(VENV) .venv-vllm runs .pytest_cache site dist build
