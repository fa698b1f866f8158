"""The README's environment quick start runs as written (the TRL snippet: test_readme_trl.py)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_env_quick_start_runs_and_prints_what_it_promises(capsys) -> None:
    block = next(b for b in _python_blocks() if "EchoEnv" in b)
    exec(compile(block, "README.md[quick start]", "exec"), {"__name__": "__main__"})  # noqa: S102
    out = capsys.readouterr().out.splitlines()
    assert out == ["Echo environment ready!", "Hello, World! 1.3"]
