"""The CLI's recipe interface: registered recipes by name, the contract checked with clear errors."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from openenv_train.cli.recipes import Recipe, RecipeError, available_recipes, get_recipe


def test_the_blackjack_recipe_is_registered_with_an_evaluator() -> None:
    recipe = get_recipe("grpo_blackjack")
    assert recipe == available_recipes()["grpo_blackjack"]
    assert recipe.package == "openenv_train.recipes.grpo_blackjack" and recipe.can_evaluate
    with pytest.raises(RecipeError, match="no recipe named 'nope'.*grpo_blackjack"):
        get_recipe("nope")


@pytest.fixture
def toy_recipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Recipe:
    """A real package that follows the contract, without evaluate.py."""
    pkg = tmp_path / "toy_recipe_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "config.py").write_text("def load_config(path):\n    return {'path': str(path)}\n")
    (pkg / "train.py").write_text("def run(cfg):\n    return {'trained': cfg['path']}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield Recipe("toy", "toy_recipe_pkg")
    for name in [m for m in sys.modules if m.startswith("toy_recipe_pkg")]:
        del sys.modules[name]


def test_a_recipe_without_an_evaluator_says_so(toy_recipe: Recipe) -> None:
    assert toy_recipe.run(toy_recipe.load_config("x.yaml")) == {"trained": "x.yaml"}
    assert not toy_recipe.can_evaluate
    with pytest.raises(RecipeError, match="has no evaluate.py"):
        toy_recipe.evaluate("runs/x/model")


def test_recipes_command_lists_every_registered_recipe_with_its_first_docstring_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from openenv_train.cli.main import main

    assert main(["recipes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    names = [line.split()[0] for line in lines]
    assert names == sorted(available_recipes()) and "async_grpo_blackjack" in names
    assert {"grpo_blackjack", "forge_grpo_blackjack", "grpo_text"} <= set(names)
    for line in lines:
        name, summary = line.split(maxsplit=1)
        first = importlib.import_module(get_recipe(name).package).__doc__.strip().splitlines()[0]
        assert summary == first


def test_recipes_command_names_a_recipe_that_cannot_import(
    toy_recipe: Recipe, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openenv_train.cli import recipes

    assert toy_recipe.summary == "(toy_recipe_pkg has no docstring)"
    (tmp_path / "toy_recipe_pkg" / "__init__.py").write_text(
        '"""Toy: trains nothing.\n\nMore."""\n'
    )
    del sys.modules["toy_recipe_pkg"]
    assert toy_recipe.summary == "Toy: trains nothing."
    broken = Recipe("broken", "no_such_recipe_pkg")
    monkeypatch.setattr(recipes, "available_recipes", lambda: {"toy": toy_recipe, "broken": broken})
    lines = recipes.recipe_lines()
    assert lines[0].startswith("broken  (cannot import no_such_recipe_pkg")
    assert lines[1] == "toy     Toy: trains nothing."
