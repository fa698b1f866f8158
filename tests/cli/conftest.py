"""The CLI tests run the console script in real subprocesses from the repository root."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
if importlib.util.find_spec("blackjack_env") is None:  # not pip-installed yet: use the source tree
    src = str(ROOT / "envs" / "blackjack_env")
    sys.path.insert(0, src)
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p)
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
