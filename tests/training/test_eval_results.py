"""Eval outcomes are values: ``EvalResult`` is immutable, and a recipe's own eval reaches
``summary.json`` through ``finish(..., extra=[...])``, not by writing into ``Evals``."""

from __future__ import annotations

import dataclasses

import pytest

from openenv_train.training.periodic_evals import EvalResult


def test_an_eval_result_cannot_be_changed() -> None:
    row = {"win": 0.5}
    result = EvalResult("model after (via servers)", 10, row, "after_via_servers")
    row["win"] = 0.0  # the caller's dict: the result keeps what it was given
    assert result.metrics["win"] == 0.5 and result.as_dict() == {"win": 0.5}
    with pytest.raises(TypeError):
        result.metrics["win"] = 1.0  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.step = 11  # type: ignore[misc]
