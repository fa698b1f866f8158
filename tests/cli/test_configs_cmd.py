"""``openenv-train configs`` and ``train NAME``: the shipped configs by name; a file always wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv_train.cli.configs_cmd import (
    SHIPPED,
    UnknownConfigError,
    resolve_config,
    shipped_configs,
    summary,
)
from openenv_train.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_every_config_of_the_repository_ships_with_a_summary() -> None:
    assert set(shipped_configs()) == {p.stem for p in (ROOT / "configs").glob("*.yaml")}
    assert all(summary(p) for p in shipped_configs().values())


def test_a_name_resolves_to_the_shipped_copy_and_a_file_wins(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    shipped = SHIPPED / "grpo_blackjack_cpu.yaml"
    assert resolve_config("grpo_blackjack_cpu") == shipped
    assert resolve_config("grpo_blackjack_cpu.yaml") == shipped
    assert resolve_config("configs/grpo_blackjack_cpu.yaml") == shipped  # the docs' spelling
    (tmp_path / "grpo_blackjack_cpu.yaml").write_text("recipe: grpo_blackjack\n")
    assert resolve_config("grpo_blackjack_cpu.yaml") == Path("grpo_blackjack_cpu.yaml")
    with pytest.raises(UnknownConfigError, match="does not exist.*grpo_blackjack_cpu_async"):
        resolve_config("grpo_blackjack_nope")
    with pytest.raises(UnknownConfigError, match="does not exist"):
        resolve_config("elsewhere/grpo_blackjack_cpu.yaml")


def test_copy_writes_one_to_edit_and_keeps_an_existing_file(tmp_path, capsys) -> None:
    assert main(["configs", "grpo_blackjack_cpu_async", "--copy", str(tmp_path)]) == 0
    copied = tmp_path / "grpo_blackjack_cpu_async.yaml"
    assert copied.read_text() == (ROOT / "configs" / copied.name).read_text()
    copied.write_text("mine")
    assert main(["configs", "grpo_blackjack_cpu_async", "--copy", str(tmp_path)]) == 2
    assert copied.read_text() == "mine" and "already exists" in capsys.readouterr().err
    assert main(["configs", "nope"]) == 2


def test_configs_lists_names_with_their_first_comment_line(capsys) -> None:
    assert main(["configs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(
        line.startswith("grpo_blackjack_cpu_async ") and "make demo" in line for line in lines
    )
    assert lines[-1].startswith("train with one: openenv-train train NAME")
