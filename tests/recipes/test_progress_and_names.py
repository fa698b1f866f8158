"""Plain progress lines where no terminal is, the shipped text config, and BlackJack's
``lose_rate`` (not ``loss``, which TRL users read as the training loss)."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

from cli_runs import ROOT

from openenv_train.training import RichProgressCallback
from openenv_train.training.callbacks import LogProgressCallback


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_the_bar_and_a_pipe_gets_lines(capsys) -> None:
    bar = RichProgressCallback("GRPO")
    assert LogProgressCallback.or_rich(bar, 5, stream=_Tty()) is bar
    lines = LogProgressCallback.or_rich(bar, 5, stream=io.StringIO())
    assert isinstance(lines, LogProgressCallback)
    state = SimpleNamespace(global_step=5, max_steps=20)
    lines.set_status(episodes=1280, win=0.41)
    lines.on_log(None, state, None, logs={"reward": -0.25, "entropy": 0.5, "loss": 0.1})
    state.global_step = 7
    lines.on_log(None, state, None, logs={"reward": -0.2})  # not a multiple of 5: quiet
    lines.on_train_end(None, state, None)  # the last step always gets its line
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("step 5/20 | episodes 1,280 | reward -0.250 | entropy 0.500 |")
    assert "last eval: win 0.410" in out[0] and out[0].endswith("elapsed")
    assert out[1].startswith("step 7/20 | episodes 1,280 | reward -0.200") and len(out) == 2


def test_the_text_recipe_defaults_are_the_shipped_countdown_config() -> None:
    from openenv_train.recipes.grpo_text.config import TextRecipeConfig, load_config

    cfg = load_config(ROOT / "configs" / "grpo_text_countdown.yaml")
    assert cfg.model_dump() == TextRecipeConfig(name="grpo_text_countdown").model_dump()


def test_blackjack_evals_say_lose_rate(tmp_path: Path) -> None:
    from blackjack_env.evaluation import COLUMNS, baselines, summarize

    from openenv_train.training.periodic_evals import results_table

    row = summarize([1.0, -1.0, -1.0, 0.0])
    assert row["lose_rate"] == 0.5 and "loss" not in row
    from rich.console import Console

    console = Console(file=io.StringIO(), width=200)
    console.print(results_table("t", baselines(200, 1), COLUMNS))
    assert "lose rate" in console.file.getvalue() and "loss" not in console.file.getvalue()
