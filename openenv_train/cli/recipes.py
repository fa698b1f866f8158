"""The recipes ``openenv-train train`` and ``eval`` can run, found by name.

A recipe is an importable package (``recipes/<name>/`` in this repository) with:

- ``config.py``: ``load_config(path)`` -> a checked config (pydantic, unknown keys rejected);
  the YAML's ``recipe:`` key names the recipe; its return annotation names the pydantic class,
  which ``openenv-train config-keys`` documents key by key;
- ``train.py``: ``run(cfg)`` trains as the config says;
- optionally ``evaluate.py``: ``evaluate_saved_model(model_dir, *, episodes=None, seed=None)``
  evaluates a saved model (``None``: the recipe's defaults), prints a report and returns its numbers.

Recipes register in the ``openenv_train.recipes`` entry point group, one line each in the
``pyproject.toml`` of the package that ships them (then reinstall it, e.g. ``make setup``)::

    [project.entry-points."openenv_train.recipes"]
    grpo_blackjack = "openenv_train.recipes.grpo_blackjack"
"""

from __future__ import annotations

import importlib
import typing
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

from .errors import RecipeError as RecipeError

GROUP = "openenv_train.recipes"


@dataclass(frozen=True)
class Recipe:
    """A registered recipe: ``name`` and the package that implements it."""

    name: str
    package: str

    def _module(self, part: str) -> ModuleType:
        try:
            return importlib.import_module(f"{self.package}.{part}")
        except ModuleNotFoundError as err:
            if err.name != f"{self.package}.{part}":
                raise
            raise RecipeError(
                f"recipe {self.name!r}: {self.package} has no {part}.py; a recipe needs config.py "
                "and train.py (evaluate.py for eval)"
            ) from None

    def _function(self, part: str, name: str) -> Any:
        fn = getattr(self._module(part), name, None)
        if not callable(fn):
            raise RecipeError(f"recipe {self.name!r}: {self.package}.{part} has no {name}()")
        return fn

    def load_config(self, path: str | Path) -> Any:
        """The recipe's checked config from a YAML file (raises ``ValueError`` naming the key)."""
        return self._function("config", "load_config")(path)

    @property
    def config_class(self) -> type:
        """The pydantic class ``load_config`` returns (read from its return annotation)."""
        load = self._function("config", "load_config")
        cls = typing.get_type_hints(load).get("return")
        if not (isinstance(cls, type) and hasattr(cls, "model_fields")):
            raise RecipeError(
                f"recipe {self.name!r}: {self.package}.config.load_config needs a return "
                "annotation naming its pydantic config class (-> RecipeConfig)"
            )
        return cls

    def run(self, cfg: Any) -> Any:
        """Train as ``cfg`` says."""
        return self._function("train", "run")(cfg)

    @property
    def summary(self) -> str:
        """The first line of the recipe package's docstring (``openenv-train recipes``)."""
        try:
            doc = (importlib.import_module(self.package).__doc__ or "").strip()
        except ImportError as err:  # one broken recipe must not hide the others
            return f"(cannot import {self.package}: {err})"
        return doc.splitlines()[0] if doc else f"({self.package} has no docstring)"

    @property
    def can_evaluate(self) -> bool:
        try:
            self._function("evaluate", "evaluate_saved_model")
        except RecipeError:
            return False
        return True

    def evaluate(
        self, model_dir: str | Path, *, episodes: int | None = None, seed: int | None = None
    ) -> Any:
        """Evaluate a saved model with the recipe's evaluator."""
        return self._function("evaluate", "evaluate_saved_model")(
            Path(model_dir), episodes=episodes, seed=seed
        )


def available_recipes() -> dict[str, Recipe]:
    """Every registered recipe by name."""
    return {ep.name: Recipe(ep.name, ep.value) for ep in entry_points(group=GROUP)}


def recipe_lines() -> list[str]:
    """``name  summary`` of every registered recipe, sorted by name, names aligned."""
    recipes = sorted(available_recipes().values(), key=lambda r: r.name)
    width = max((len(r.name) for r in recipes), default=0)
    return [f"{r.name:<{width}}  {r.summary}" for r in recipes]


def get_recipe(name: str) -> Recipe:
    """The recipe registered as ``name``; the error lists the registered ones."""
    recipes = available_recipes()
    if name not in recipes:
        raise RecipeError(
            f"recipe: no recipe named {name!r}; registered: {sorted(recipes) or 'none'} "
            f"(register one in the {GROUP!r} entry point group of pyproject.toml)"
        )
    return recipes[name]
