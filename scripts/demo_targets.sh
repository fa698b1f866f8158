#!/usr/bin/env bash
# The CPU demo's targets, measured: for each seed (default 0 1 2 3) the whole `make demo` command
# (`openenv-train train` of the config with that seed), its wall time, and the greedy win / mean
# return on 20k fresh hands beside basic strategy on the same hands; then, per seed, the issue-26
# figures from benchmarks/demo_report.py: CPU seconds, and the saved model beside basic strategy
# on the same 100k hands with the states where they differ.
# Targets: < 2 min whole command (idle machine), mean return within 0.002 of basic strategy on 100k.
# Usage: bash scripts/demo_targets.sh [CONFIG] [SEEDS...]   (run on a quiet machine; one at a time)
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${1:-configs/grpo_blackjack_cpu_async.yaml}
shift || true
SEEDS=${*:-0 1 2 3}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
TIMER=() TIMELOG=()  # CPU seconds from GNU time (Debian package `time`) where it is installed
if [ -x /usr/bin/time ]; then TIMER=(/usr/bin/time -v); fi
for seed in $SEEDS; do
  cfg="$OUT/seed$seed.yaml"
  sed -e "s/^seed: .*/seed: $seed/" -e "s|^output_dir: .*|output_dir: $OUT/runs|" \
    -e "s/^name: .*/name: demo_seed$seed/" "$CONFIG" > "$cfg"
  start=$(date +%s.%N)
  "${TIMER[@]}" .venv/bin/openenv-train train "$cfg" > "$OUT/seed$seed.log" 2>&1 || { tail -20 "$OUT/seed$seed.log"; exit 1; }
  end=$(date +%s.%N)
  .venv/bin/python - "$OUT/runs/demo_seed$seed/summary.json" "$seed" "$start" "$end" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
seed, wall = sys.argv[2], float(sys.argv[4]) - float(sys.argv[3])
a, b = s["after"], s["baselines"]["basic strategy"]
gap = a["mean_return"] - b["mean_return"]
ok = wall < 120 and gap >= -0.002
print(f"seed {seed}: {wall / 60:.2f} min whole command, win {a['win']:.1%}, mean return "
      f"{a['mean_return']:+.3f} (basic strategy on the same hands {b['win']:.1%} / "
      f"{b['mean_return']:+.3f}, gap {gap:+.3f}) -> {'meets' if ok else 'MISSES'} the targets")
PY
  if [ ${#TIMER[@]} -gt 0 ]; then TIMELOG=(--time-log "$OUT/seed$seed.log"); fi
  .venv/bin/python benchmarks/demo_report.py "$OUT/runs/demo_seed$seed" "${TIMELOG[@]}"
done
