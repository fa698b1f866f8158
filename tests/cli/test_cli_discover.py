"""What a new user finds by asking the CLI: a version, help on every flag, every config key."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from openenv_train.cli.config_keys import config_keys, fill_tables, markdown_table, undocumented
from openenv_train.cli.main import build_parser, main, recipe_table
from openenv_train.cli.recipes import available_recipes

CONFIG_KEYS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "config-keys.md"


def every_action(parser: argparse.ArgumentParser, path: str = "openenv-train"):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from every_action(sub, f"{path} {name}")
        else:
            yield path, action


def test_every_flag_and_argument_of_every_command_has_help() -> None:
    actions = list(every_action(build_parser()))
    assert len({path for path, _ in actions}) >= 9  # train, eval, serve, ... were all walked
    missing = [f"{path} {a.option_strings or a.dest}" for path, a in actions if not a.help]
    assert not missing, "arguments without help text: " + ", ".join(missing)


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from openenv_train import __version__

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"openenv-train {__version__}\n"


def test_the_docs_config_tables_are_the_generated_ones() -> None:
    text = CONFIG_KEYS_PAGE.read_text()
    for recipe in available_recipes():  # every registered recipe has its table on the page
        assert f"<!-- config-keys: {recipe} -->" in text, (
            f"{CONFIG_KEYS_PAGE}: add {recipe}'s table"
        )
    assert fill_tables(text, recipe_table) == text, (
        "the config-key tables of the docs differ from the recipes' config classes: "
        "run make config-table"
    )


@pytest.mark.parametrize(
    "name", ["grpo_blackjack", "grpo_text", "grpo_guess_number", "forge_grpo_blackjack"]
)
def test_every_key_of_the_shipped_recipes_is_described(name: str) -> None:
    cls = available_recipes()[name].config_class
    assert not undocumented(cls), "describe these keys (a #: comment above the field)"


def test_the_keys_the_issue_found_only_in_code_are_in_the_table() -> None:
    keys = {k.key for k in config_keys(available_recipes()["grpo_blackjack"].config_class)}
    for named_in_the_issue in ("env.base_urls", "model.hub", "rollout.system_prompt", "progress"):
        assert named_in_the_issue in keys
    assert "grpo.use_vllm" in keys


class _Inner(BaseModel):
    #: how many
    n: int = Field(3, ge=1)


class _Demo(BaseModel):
    inner: _Inner = Field(default_factory=_Inner)
    mode: str = "a"  # which mode
    described: float | None = Field(None, description="from the Field")
    bare: bool = False


def test_the_table_reads_types_defaults_comments_and_nested_sections() -> None:
    rows = {k.key: k for k in config_keys(_Demo)}
    assert list(rows) == ["inner.n", "mode", "described", "bare"]
    assert (rows["inner.n"].type, rows["inner.n"].default) == ("int (>= 1)", "3")
    assert rows["inner.n"].description == "how many"
    assert rows["mode"].description == "which mode"
    assert rows["described"].type == "float | None" and rows["described"].default == "null"
    assert undocumented(_Demo) == ["bare"]
    table = markdown_table(_Demo)
    assert "| `described` | `float \\| None` | `null` | from the Field |" in table


def test_filling_a_stale_table_changes_it() -> None:
    stale = "x\n<!-- config-keys: demo -->\n| old |\n<!-- /config-keys -->\ny\n"
    new = fill_tables(stale, lambda name: markdown_table(_Demo))
    assert "| old |" not in new and "`inner.n`" in new and new.startswith("x\n")
    assert fill_tables(new, lambda name: markdown_table(_Demo)) == new
