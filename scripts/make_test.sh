#!/usr/bin/env bash
# `make test`: the main suite (`make test-main`: install, engines, browser, then the tests) with
# the vLLM-on-CPU suite (`make test-vllm`) beside it. The vLLM suite runs in its own cached venv
# and needs nothing `make setup` installs, while setup's pip keeps only one of the two cores busy
# for about two minutes: started first, in the background and at a lower priority, it runs on
# the idle core and is done early in the main suite instead of adding its ~100 s after it. Its
# venv is made ready first, in the foreground, so its editable install of this checkout and the
# main suite's never write the same egg-info at once.
# Its output is kept in a log and shown once the main suite is done; the exit status is non-zero
# when either suite failed.
set -uo pipefail
MAKE="${MAKE:-make}"
VLLM_PREPARE_ONLY=1 $MAKE --no-print-directory test-vllm || exit 1
LOG="$(mktemp -t openenv-train-vllm.XXXXXX)"
echo "== the vLLM-on-CPU suite runs in the background beside the main suite (log: $LOG)"
# niced: pip is one process and must keep its core (CI: sharing it, setup took 258 s, not 115).
# A process group of its own (set -m): a background job ignores Ctrl-C, so the traps below stop
# the whole suite (its pytest workers and vLLM servers) when this script is interrupted.
set -m
nice -n 5 $MAKE --no-print-directory test-vllm >"$LOG" 2>&1 &
VLLM_PID=$!
set +m
stop_vllm() { kill -INT -- "-$VLLM_PID" 2>/dev/null; wait "$VLLM_PID" 2>/dev/null; rm -f "$LOG"; }
trap 'stop_vllm; exit 130' INT
trap 'stop_vllm; exit 143' TERM
$MAKE --no-print-directory test-main
MAIN_RC=$?
wait "$VLLM_PID"
VLLM_RC=$?
echo "== the vLLM-on-CPU suite (exit $VLLM_RC):"
cat "$LOG"
rm -f "$LOG"
[ "$MAIN_RC" -eq 0 ] && [ "$VLLM_RC" -eq 0 ]
