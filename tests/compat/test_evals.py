"""OpenEnv's evals types on our side: ``EvalConfig`` / ``EvalResult`` refuse bad input naming the
field, survive a JSON round trip unchanged, and ``InspectAIHarness`` checks its parameters and
says how to install Inspect AI when it is missing (it stays an optional dependency)."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any
from unittest.mock import patch

import pytest
from pydantic import ValidationError

from openenv_train.core.evals import (
    EvalConfig,
    EvalHarness,
    EvalResult,
    InspectAIHarness,
    installed_versions,
    scores_from_log,
)

CONFIG = dict(
    harness_name="lm_eval",
    harness_version="0.4.0",
    library_versions={"transformers": "4.36.0"},
    dataset="hellaswag",
    eval_parameters={"num_fewshot": 5, "model_args": {"batch_size": 16}},
)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("library_versions", "transformers==4.36"),  # a dict of versions, not a string
        ("library_versions", {"transformers": 4.36}),  # versions are strings
        ("eval_parameters", ["num_fewshot", 5]),
        ("dataset", None),
        ("harness_name", 3),
    ],
)
def test_a_bad_config_field_is_named(field: str, value: Any) -> None:
    with pytest.raises(ValidationError) as err:
        EvalConfig(**{**CONFIG, field: value})
    assert err.value.errors()[0]["loc"][0] == field
    assert field in str(err.value)


def test_missing_and_unknown_fields_are_named() -> None:
    with pytest.raises(ValidationError) as err:
        EvalConfig(**{k: v for k, v in CONFIG.items() if k != "dataset"})
    assert "dataset" in str(err.value) and "Field required" in str(err.value)
    with pytest.raises(ValidationError, match="seed"):
        EvalConfig(**CONFIG, seed=1)  # a parameter belongs in eval_parameters
    config = EvalConfig(**CONFIG)
    with pytest.raises(ValidationError, match="library_versions"):
        config.library_versions = "4.36"  # assignments are validated too
    with pytest.raises(ValidationError, match="scores"):
        EvalResult(config=config, scores=[0.85])


def test_a_result_round_trips_through_json_unchanged() -> None:
    result = EvalResult(
        config=EvalConfig(**CONFIG),
        scores={"acc": 0.85, "n": 1000, "passed": True, "error": None, "per_task": {"a": 0.9}},
    )
    text = result.model_dump_json()
    again = EvalResult.model_validate_json(text)
    assert again == result and again.model_dump_json() == text
    assert again.config == EvalConfig(**CONFIG)
    assert again.config != EvalConfig(**{**CONFIG, "harness_version": "0.4.1"})


def test_run_from_config_keeps_the_config_with_the_scores() -> None:
    class Constant(EvalHarness):
        def run(self, harness_version, library_versions, dataset, eval_parameters):
            return {"dataset": dataset, "fewshot": eval_parameters["num_fewshot"]}

    config = EvalConfig(**CONFIG)
    result = Constant().run_from_config(config)
    assert result.config is config and result.scores == {"dataset": "hellaswag", "fewshot": 5}
    assert Constant().name == "Constant"
    with pytest.raises(TypeError):
        EvalHarness()  # type: ignore[abstract]


def test_installed_versions_leaves_out_what_is_not_installed() -> None:
    versions = installed_versions("pydantic", "no-such-distribution-here")
    assert list(versions) == ["pydantic"] and versions["pydantic"][0].isdigit()


def run_inspect(eval_parameters: dict[str, Any]) -> dict[str, Any]:
    return InspectAIHarness().run("0.3.0", {}, "mmlu", eval_parameters)


def test_inspect_harness_without_inspect_ai_says_how_to_install_it() -> None:
    with patch.dict(sys.modules, {"inspect_ai": None}):  # absent even where it is installed
        with pytest.raises(ImportError, match="pip install inspect-ai"):
            run_inspect({"model": "openai/gpt-4o"})


def test_inspect_harness_names_bad_parameters_before_importing() -> None:
    with patch.dict(sys.modules, {"inspect_ai": None}):
        with pytest.raises(ValueError, match=r"eval_parameters\['model'\] is required"):
            run_inspect({"task": "gsm8k"})
        with pytest.raises(ValueError, match=r"unknown key\(s\) \['temprature'\].*temperature"):
            run_inspect({"model": "openai/gpt-4o", "temprature": 0.5})


def test_scores_from_log_flattens_every_scorer() -> None:
    metric = lambda value: SimpleNamespace(value=value)  # noqa: E731
    log = SimpleNamespace(
        results=SimpleNamespace(
            scores=[
                SimpleNamespace(metrics={"accuracy": metric(0.8), "stderr": metric(0.02)}),
                SimpleNamespace(metrics={"f1": metric(0.7)}),
            ]
        )
    )
    assert scores_from_log(log) == {"accuracy": 0.8, "stderr": 0.02, "f1": 0.7}
    assert scores_from_log(SimpleNamespace(results=None)) == {}
