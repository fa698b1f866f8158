"""``openenv-train curve RUN_A RUN_B [...] [--out compare.png]``: learning curves side by side.

Each RUN is a training run folder (``runs/<name>``); the plot has each score the runs' recipes
record (BlackJack's win rate and mean return, a text env's mean reward and share won, ...) against
optimizer steps (top) and wall-clock minutes (bottom), one line per run.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def cmd_curve(args: argparse.Namespace) -> int:
    from ..training.compare import compare_runs

    try:
        path, last, panels = compare_runs(args.runs, args.out)
    except ValueError as err:
        print(f"openenv-train curve: error: {err}", file=sys.stderr)
        return 2
    for name, (step, m) in last.items():
        wall = f", {m['wall_s'] / 60:.1f} min" if "wall_s" in m else ""
        scores = ", ".join(f"{label} {m[key]:.3g}" for key, label in panels if key in m)
        print(f"{name}: step {step}{wall}: {scores or 'no score at this step'}")
    print(f"wrote {path}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("curve", help="plot the learning curves of training runs side by side")
    p.add_argument("runs", nargs="+", help="run folders (runs/<name>), two or more")
    p.add_argument("--out", default="compare.png", help="PNG to write (default compare.png)")
    p.set_defaults(func=cmd_curve)
