"""OpenEnv's evals on our side (``openenv_train.openenv.evals``): ``EvalConfig`` / ``EvalResult``
refuse bad input naming the field, survive a JSON round trip unchanged, ``InspectAIHarness``
checks its parameters and says how to install Inspect AI when it is missing (it stays an optional
dependency), and ``PassAtKHarness`` runs the native pass@k as an ``EvalHarness`` against a real
guess-the-number server."""

from __future__ import annotations

import sys
from types import SimpleNamespace
from typing import Any
from unittest.mock import patch

import pytest
from pydantic import ValidationError

from openenv_train.catalog import installed_versions
from openenv_train.openenv.evals import (
    EvalConfig,
    EvalHarness,
    EvalResult,
    InspectAIHarness,
    PassAtKHarness,
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


# ---- PassAtKHarness: the native pass@k as OpenEnv's EvalHarness ------------------------------------

GUESS_APP = "guess_number_env.server.app:app"
GUESS_SPEC = "guess_number_env.text_spec:GuessNumberTextSpec"


def binary_search(text: str) -> str:
    words = text.replace("<eos>", " ").split()
    return str((int(words[-3]) + int(words[-1])) // 2)  # "... it is from LO to HI"


@pytest.mark.timeout(300)
def test_passk_harness_result_records_its_config_and_reproduces() -> None:
    from guess_number_env.text_spec import vocabulary

    from openenv_train.policy.tiny import build_word_tokenizer
    from openenv_train.rollout import RolloutConfig, ScriptedPolicy
    from openenv_train.runtime import LocalProcessProvider
    from openenv_train.training.passk import EvalTarget

    policy = ScriptedPolicy(build_word_tokenizer(list(vocabulary(16))), binary_search)
    rollout = RolloutConfig(max_turns=8, max_new_tokens=2, temperature=1.0, episode_seed=0)
    with LocalProcessProvider(GUESS_APP, startup_timeout=120) as server:
        target = EvalTarget("guess_number", GUESS_APP, GUESS_SPEC, {"high": 16}, [server.base_url])
        harness = PassAtKHarness(policy, [target])
        assert isinstance(harness, EvalHarness) and harness.policy is policy
        config = harness.config(tasks=2, k=2, seed=7, rollout=rollout, model="scripted")
        result = harness.run_from_config(config)

        assert isinstance(config, EvalConfig) and config.harness_name == "PassAtKHarness"
        assert isinstance(result, EvalResult) and result.config is config
        scores = result.scores["guess_number"]
        assert scores["pass@1"] == 1.0 and scores["episodes"] == 4
        assert len(harness.trajectories) == 4
        again = EvalResult.model_validate_json(result.model_dump_json())
        assert again == result
        assert harness.run_from_config(again.config).scores == result.scores
    with pytest.raises(ValueError, match="dataset: 'countdown'"):
        harness.run(config.harness_version, {}, "countdown", config.eval_parameters)
    with pytest.raises(ValueError, match="targets"):
        PassAtKHarness(policy, [])
