"""Steps per minute of GRPO BlackJack with overlapped rollouts (``rollout.max_staleness``) vs 0.

One warmed-up tiny model and one set of env servers; then, interleaved ``--repeats`` times, the
same ``--steps`` GRPO steps from a fresh copy of the model with max_staleness 0 (the anchor) and
with each ``--staleness`` value. Prints median steps/min (after ``--skip`` steps of each run) and
the ratio to the anchor. Timings here are noisy: read the ratio, and say what else ran.

Usage: python benchmarks/overlap_speed.py [--steps 30] [--repeats 3] [--staleness 1]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402
from step_time import load, train_steps  # noqa: E402

console = Console()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/grpo_blackjack_cpu.yaml")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--skip", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--staleness", type=int, nargs="+", default=[1])
    ap.add_argument("--warmup-steps", type=int, default=None)
    ap.add_argument("--out", default="/tmp/overlap_speed_run")
    args = ap.parse_args()
    cfg, model, tokenizer, servers = load(args)
    modes = [0, *args.staleness]
    per_min: dict[int, list[float]] = {m: [] for m in modes}
    try:
        for rep in range(args.repeats):
            for m in modes:
                samples = train_steps(
                    cfg, copy.deepcopy(model), tokenizer, servers, m, Path(args.out)
                )
                walls = [s["step wall"] for s in samples[args.skip :]]
                per_min[m].append(60 * len(walls) / sum(walls))
                console.print(
                    f"repeat {rep + 1}, max_staleness {m}: {per_min[m][-1]:.1f} steps/min"
                )
    finally:
        servers.stop()
    anchor = statistics.median(per_min[0])
    table = Table(title=f"{args.config}: {args.steps} steps x {args.repeats} repeats, interleaved")
    for col in ("max_staleness", "steps/min (median)", "runs", "ratio vs 0"):
        table.add_column(col, justify="right")
    for m in modes:
        med = statistics.median(per_min[m])
        runs = " ".join(f"{v:.0f}" for v in per_min[m])
        table.add_row(str(m), f"{med:.1f}", runs, f"{med / anchor:.2f}x")
    console.print(table)


if __name__ == "__main__":
    main()
