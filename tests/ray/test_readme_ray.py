"""The Ray tutorial's snippet runs as written (on the test cluster this session is connected to)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray
PAGE = Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "ray.md"


def test_readme_ray_snippet_runs_and_prints_what_it_promises(cluster, no_leaks, capsys):
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)
    block = next(b for b in blocks if "start_ray_servers" in b)
    exec(compile(block, "docs/tutorials/ray.md", "exec"), {"__name__": "__main__"})  # noqa: S102
    assert capsys.readouterr().out.splitlines() == ["2 2", "0 3"]
