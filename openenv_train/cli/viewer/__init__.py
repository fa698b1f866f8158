"""The run viewer: ``openenv-train view runs/NAME [runs/OTHER ...]``, a local page over run folders.

The page (static HTML/JS/CSS shipped in the package, charts drawn as plain SVG: no CDN, works
offline) reads the run folders through a small JSON API that re-reads the files on every request,
so it follows a run while it trains: ``metrics.jsonl`` (curves), ``trajectories/step_N.jsonl``
(the eval episodes ``eval.trajectories`` keeps), ``config.json``, ``summary.json`` and
``baselines.json``.
"""

from __future__ import annotations

from .viewer_app import create_viewer, run_files

__all__ = ["create_viewer", "run_files"]
