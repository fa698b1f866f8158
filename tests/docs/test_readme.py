"""The README's environment quick start and its one-import env run as written (the TRL snippet:
test_readme_trl.py)."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_env_quick_start_runs_and_prints_what_it_promises(capsys) -> None:
    block = next(b for b in _python_blocks() if "EchoEnv" in b)
    exec(compile(block, "README.md[quick start]", "exec"), {"__name__": "__main__"})  # noqa: S102
    out = capsys.readouterr().out.splitlines()
    assert out == ["Echo environment ready!", "Hello, World! 1.3"]


def test_the_one_import_env_serves_and_plays_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openenv_train import EnvExecutionError
    from openenv_train.runtime import LocalProcessProvider

    block = next(b for b in _python_blocks() if "class CoinEnv" in b)
    assert "from openenv_train import (" in block and "openenv_train." not in block
    (tmp_path / "coin.py").write_text(block)  # "saved as coin.py"
    monkeypatch.syspath_prepend(str(tmp_path))
    coin = importlib.import_module("coin")
    with LocalProcessProvider("coin:app", env={"PYTHONPATH": str(tmp_path)}) as server:
        with coin.CoinClient(base_url=server.base_url).sync() as env:
            env.reset(seed=1)
            result = env.step(coin.CoinAction(call="heads"))
            assert result.done and result.reward in (0.0, 1.0)
            assert result.observation.flip in ("heads", "tails")
            with pytest.raises(EnvExecutionError, match="call reset"):
                env.step(coin.CoinAction(call="tails"))
    monkeypatch.delitem(sys.modules, "coin")
