"""The end of a run that does not go through ``grpo.train``: ``summary.json`` and the last word.

The recipes with trainers of their own (``async_grpo_blackjack``, ``forge_grpo_blackjack``) use
the same run folder (``lifecycle.RunFolder``) and stop signals (``lifecycle.GracefulStop``) as the
GRPO recipes, and end the same way: the summary written, then either the next command or, after
Ctrl-C / SIGTERM, the command that resumes the run and ``KeyboardInterrupt`` (exit status 130).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console

console = Console(stderr=True)


def write_summary(run_dir: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """``summary.json`` of the run (any JSON-able values; others as ``str``); returns ``summary``."""
    (Path(run_dir) / "summary.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary


def resume_command(run_dir: Path, config: str | None = None) -> str:
    """The command that continues ``run_dir``: its config as given (``config``: the YAML path and
    any ``--set`` flags), else the ``config.json`` the run folder keeps."""
    return f"openenv-train train {config or Path(run_dir) / 'config.json'} --resume {run_dir}"


def end_run(
    run_dir: Path, *, interrupted: bool, next_step: str = "", config: str | None = None
) -> None:
    """Say what comes next; after a stop request (the work is saved by now) raise
    ``KeyboardInterrupt`` so the command exits with status 130."""
    if interrupted:
        console.print(
            f"saved the work so far in {run_dir}; continue with `{resume_command(run_dir, config)}`"
        )
        raise KeyboardInterrupt
    console.print(next_step or f"done: {run_dir}")
