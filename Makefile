# Two commands set everything up on a fresh machine:
#   make demo   -> installs, then trains GRPO BlackJack on the embedded CPU default
#   make test   -> installs, then runs every test (the vLLM-on-CPU tests in their own venv)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONFIG ?= configs/grpo_blackjack_cpu.yaml
PYTEST_ARGS ?=

.PHONY: setup demo test test-main test-vllm lint bench clean

$(STAMP): pyproject.toml constraints.txt envs/echo_env/pyproject.toml envs/blackjack_env/pyproject.toml envs/notes_env/pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt torch==2.13.0
	$(BIN)/pip install -q -c constraints.txt -e ".[train,dev]" -e envs/echo_env -e envs/blackjack_env -e envs/notes_env
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/openenv-train train $(CONFIG)

test: test-main test-vllm

test-main: setup
	$(BIN)/python -m pytest tests $(PYTEST_ARGS)

test-vllm:
	bash scripts/ci_vllm.sh

lint: setup
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench: setup
	$(BIN)/python benchmarks/server_throughput.py
	$(BIN)/python benchmarks/rollout_throughput.py

clean:
	rm -rf $(VENV) .venv-vllm runs .pytest_cache
