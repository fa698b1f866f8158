"""The env examples of the README and the docs run as written: the quick start prints what it
promises, and the one-import env serves and plays (the TRL tutorial: test_trl_tutorial.py; every
other code block is checked by test_code_blocks.py)."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUICK_STARTS = ["README.md", "docs/getting-started.md"]
COIN_ENVS = ["README.md", "docs/tutorials/own-env.md"]


def python_block(page: str, marker: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), flags=re.S)
    found = [b for b in blocks if marker in b]
    assert found, f"{page}: no python block with {marker!r} any more"
    return found[0]


@pytest.mark.parametrize("page", QUICK_STARTS)
def test_env_quick_start_runs_and_prints_what_it_promises(page: str, capsys) -> None:
    block = python_block(page, "EchoEnv")
    exec(compile(block, f"{page}[quick start]", "exec"), {"__name__": "__main__"})  # noqa: S102
    out = capsys.readouterr().out.splitlines()
    assert out == ["Echo environment ready!", "Hello, World! 1.3"]


@pytest.mark.parametrize("page", COIN_ENVS)
def test_the_one_import_env_serves_and_plays_as_written(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openenv_train import EnvExecutionError
    from openenv_train.runtime import LocalProcessProvider

    block = python_block(page, "class CoinEnv")
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
