"""What the tests of ``rt_apps`` share: the environment its servers need, and its ``/info``."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

from child_env import with_pythonpath

HERE = Path(__file__).parent
#: a server's environment with this folder on its path (``rt_apps`` and the other test apps)
ENV = with_pythonpath(HERE)


def info(base_url: str) -> dict:
    """The server's pid, parent pid and ``RT_MARK``, as ``rt_apps``' ``/info`` reports them."""
    with urllib.request.urlopen(base_url + "/info", timeout=10) as r:
        return json.loads(r.read())
