"""Learning curves of several training runs side by side (``openenv-train curve RUN_A RUN_B``).

A run folder holds ``summary.json`` (its ``curve``: the periodic greedy evals, step 0 included)
or, for a run still going or interrupted, ``metrics.jsonl`` (its ``eval`` records). Curves are
drawn against optimizer steps and against wall-clock minutes, so an overlapped run
(``rollout.max_staleness``) and a synchronous one compare on both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

Curve = list[tuple[int, dict[str, float]]]


def read_curve(run_dir: str | Path) -> Curve:
    """``[(step, metrics)]`` of a run folder's periodic evals (``ValueError`` names what is missing)."""
    run = Path(run_dir)
    summary, metrics = run / "summary.json", run / "metrics.jsonl"
    if summary.is_file():
        points = json.loads(summary.read_text()).get("curve") or []
        if points:
            return [(int(p["step"]), {k: v for k, v in p.items() if k != "step"}) for p in points]
    if metrics.is_file():
        rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
        curve = [(int(r["step"]), r) for r in rows if r.get("kind") == "eval"]
        if curve:
            return curve
    raise ValueError(
        f"run: {run} has no learning curve (no summary.json curve and no eval records in "
        "metrics.jsonl); pass a run folder written by `openenv-train train` (runs/<name>)"
    )


#: The recipes' curve panels (metric key, axis label): a run whose summary.json does not name its
#: own panels (an older or still running run) is plotted on those of these its curve carries.
KNOWN_PANELS: tuple[tuple[str, str], ...] = (
    ("win", "greedy win rate"),
    ("mean_return", "mean return"),
    ("mean_reward", "mean reward"),
    ("win_rate", "share of games won"),
    ("solve_rate", "solve rate"),
    ("mean_guesses", "mean guesses (solved games)"),
)


def run_panels(run_dir: str | Path, curve: Curve) -> list[tuple[str, str]]:
    """The panels of a run: those its summary.json names (``panels``: the recipe's score keys),
    else the known ones its curve carries."""
    summary = Path(run_dir) / "summary.json"
    named = json.loads(summary.read_text()).get("panels") if summary.is_file() else None
    candidates = [tuple(p) for p in named] if named else list(KNOWN_PANELS)
    keys = {k for _, m in curve for k in m}
    return [(k, label) for k, label in candidates if k in keys]


def plot_compare(
    runs: Mapping[str, Curve],
    path: str | Path,
    *,
    panels: Sequence[tuple[str, str]] = (
        ("win", "greedy win rate"),
        ("mean_return", "mean return"),
    ),
    baselines: Mapping[str, Mapping[str, float]] | None = None,
    title: str = "learning curves",
) -> Path:
    """PNG with one column per panel; top row against optimizer steps, bottom row against
    wall-clock minutes (where the points carry ``wall_s``), one line per run."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, axes = plt.subplots(2, len(panels), figsize=(5 * len(panels), 7.5), squeeze=False)
    for col, (key, label) in enumerate(panels):
        for row, x_label in enumerate(("optimizer step", "wall-clock minutes")):
            ax = axes[row][col]
            for i, (name, curve) in enumerate(runs.items()):
                xs, ys = _series(curve, key, by_time=row == 1)
                if xs:
                    ax.plot(xs, ys, marker="o", markersize=3, color=f"C{i}", label=name)
            for j, (bname, base) in enumerate((baselines or {}).items()):
                if key in base:
                    ax.axhline(
                        base[key],
                        linestyle="--",
                        linewidth=1,
                        color=f"C{len(runs) + j}",
                        label=bname,
                    )
            ax.set_xlabel(x_label)
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8, loc="lower right")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _series(curve: Curve, key: str, *, by_time: bool) -> tuple[list[float], list[float]]:
    xs: list[float] = []
    ys: list[float] = []
    for step, m in curve:
        if key not in m:
            continue
        if by_time:
            if "wall_s" not in m:
                continue
            xs.append(float(m["wall_s"]) / 60)
        else:
            xs.append(step)
        ys.append(float(m[key]))
    return xs, ys


def compare_runs(
    run_dirs: Sequence[str | Path], out: str | Path
) -> tuple[Path, dict[str, Any], list[tuple[str, str]]]:
    """Read each run's curve and plot them together into ``out``, one panel per score the runs
    carry (``ValueError`` when they carry none); returns the path, per run its last point, and the
    panels (printed by the CLI)."""
    if len(run_dirs) < 2:
        raise ValueError("runs: pass at least two run folders to compare (runs/<a> runs/<b>)")
    runs: dict[str, Curve] = {}
    panels: list[tuple[str, str]] = []
    for d in run_dirs:
        name = Path(d).resolve().name
        while name in runs:
            name += "'"
        runs[name] = read_curve(d)
        panels += [p for p in run_panels(d, runs[name]) if p not in panels]
    if not panels:
        raise ValueError(
            f"runs: {', '.join(map(str, run_dirs))} carry no score to plot (none of "
            f"{', '.join(k for k, _ in KNOWN_PANELS)} in their evals); pass run folders written by "
            "`openenv-train train`"
        )
    path = plot_compare(runs, out, panels=panels, title=" vs ".join(runs))
    return path, {name: curve[-1] for name, curve in runs.items()}, panels
