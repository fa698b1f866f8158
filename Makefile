# Two commands set everything up on a fresh machine:
#   make demo   -> installs, then trains GRPO BlackJack on the embedded CPU default  (rollouts overlap training)
#   make test   -> installs, sets up the container engines (as root), then runs every test
#                  (the vLLM-on-CPU tests in their own venv)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONFIG ?= configs/grpo_blackjack_cpu_async.yaml
PYTEST_ARGS ?=
# every env package under envs/ (editable), so the catalog lists them all
ENV_PACKAGES = $(foreach p,$(sort $(wildcard envs/*/pyproject.toml)),-e $(patsubst %/,%,$(dir $(p))))

.PHONY: setup demo test test-main test-vllm lint bench fuzz clean engines engines-ready config-table \
	docs docs-gen browser-ready screenshots dist

$(STAMP): pyproject.toml constraints.txt $(wildcard envs/*/pyproject.toml)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt torch==2.13.0
	$(BIN)/pip install -q -c constraints.txt -e ".[train,dev]" $(ENV_PACKAGES)
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/openenv-train train $(CONFIG)

test: test-main test-vllm

test-main: setup engines-ready browser-ready
	$(BIN)/python -m pytest tests $(PYTEST_ARGS)

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
