"""Test setup every test directory shares (pytest loads this root conftest first).

Test directories have no ``__init__.py``: pytest puts each test's own directory on ``sys.path``,
so helpers beside a test import by name. Helpers that several directories use live in
``tests/support``, put on ``sys.path`` here. The library, the env packages and the recipes are
installed (``make setup``), so nothing else is added.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SUPPORT = Path(__file__).resolve().parent / "tests" / "support"
if str(SUPPORT) not in sys.path:
    sys.path.insert(0, str(SUPPORT))

# fixtures several directories share; each directory defines the inputs they take (``tiny_pair``)
pytest_plugins = ("tiny_models",)

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # TRL's rollout_func is "experimental"
