"""The CLI's recipe interface: registered recipes by name, the contract checked with clear errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from openenv_train.cli.recipes import Recipe, RecipeError, available_recipes, get_recipe


def test_the_blackjack_recipe_is_registered_with_an_evaluator() -> None:
    recipe = get_recipe("grpo_blackjack")
    assert recipe == available_recipes()["grpo_blackjack"]
    assert recipe.package == "recipes.grpo_blackjack" and recipe.can_evaluate
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
