"""The guess-the-number recipe: the tool template passes TRL's checks, TRL parses the tool call
back, the environment class plays a real server, and the recipe runs end to end at tiny size."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from openenv_train.recipes.grpo_guess_number.config import load_config, parse_config
from openenv_train.recipes.grpo_guess_number.tool_model import build_tool_model, random_conversation
from openenv_train.training.config import ConfigError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tool_model():
    return build_tool_model(1, 16, 5, True)


def test_template_supports_tools_and_round_trips(tool_model) -> None:
    from trl.chat_template_utils import (
        is_chat_template_prefix_preserving,
        parse_response,
        supports_tool_calling,
    )

    _, tok = tool_model
    assert supports_tool_calling(tok) and is_chat_template_prefix_preserving(tok)
    conv = random_conversation(random.Random(1), 1, 16, 5, True)
    ids = tok.apply_chat_template(conv, tokenize=True, return_dict=False)
    assert tok.unk_token_id not in ids  # every word the env can say is in the vocabulary
    prefix = tok.apply_chat_template(
        conv[:1], tokenize=True, add_generation_prompt=True, return_dict=False
    )
    answer = tok.encode("<call> guess number 9 <eos>", add_special_tokens=False)
    parsed = parse_response(tok, answer, prefix=prefix)
    assert parsed["tool_calls"][0]["function"] == {
        "name": "guess",
        "arguments": {"number": "9"},
    } or parsed["tool_calls"][0]["function"] == {"name": "guess", "arguments": {"number": 9}}
    assert "tool_calls" not in parse_response(
        tok, tok.encode("9 <eos>", add_special_tokens=False), prefix=prefix
    )


def test_the_chat_warmup_teaches_the_tool_call_format() -> None:
    from openenv_train.recipes.grpo_guess_number.evaluate import evaluate_model
    from openenv_train.training import chat_warmup

    model, tok = build_tool_model(1, 16, 5, True, seed=0)
    before = evaluate_model(model, tok, 32, 7, 1, 16, 5, True)
    res = chat_warmup(
        model,
        tok,
        lambda rng: random_conversation(rng, 1, 16, 5, True),
        steps=40,
        batch_size=16,
        learning_rate=1e-2,
    )
    after = evaluate_model(model, tok, 32, 7, 1, 16, 5, True)
    assert res.steps == 40 and res.final_loss < res.first_loss / 2 and not model.training
    assert before["invalid"] > 0.5 and after["invalid"] < before["invalid"]


def test_environment_class_plays_a_real_server() -> None:
    from guess_number_env import GuessGame

    from openenv_train.recipes.grpo_guess_number.train import environment_class
    from openenv_train.runtime import LocalProcessProvider

    with LocalProcessProvider("guess_number_env.server.app:app", startup_timeout=120) as server:
        env = environment_class([server.base_url])()
        text = env.reset(prompt=[], seed=5, low=1, high=16, max_turns=5, show_range=True)
        assert text == "guess a number from 1 to 16 , you have 5 guesses , it is from 1 to 16"
        assert env.get_reward() == 0.0  # no tool call yet: the model's failure scores 0
        target = GuessGame.new(1, 16, 5, seed=5).target
        lo, hi = 1, 16
        while True:
            mid = (lo + hi) // 2
            reply = env.guess(mid)
            if reply.startswith("correct"):
                break
            lo, hi = (mid + 1, hi) if "higher" in reply else (lo, mid - 1)
        assert mid == target and env.get_reward() > 0.5


def test_config_errors_name_the_key(tmp_path: Path) -> None:
    cfg = load_config(ROOT / "configs" / "grpo_guess_number_cpu.yaml")
    assert cfg.game.high == 16 and cfg.recipe == "grpo_guess_number"
    with pytest.raises(ConfigError, match="game.low=9 must be < game.high=3"):
        parse_config({"game": {"low": 9, "high": 3}})
    with pytest.raises(ConfigError, match="grpo.learning_rat: unknown key"):
        parse_config({"grpo": {"learning_rat": 1}})
    with pytest.raises(ConfigError, match="divisible"):
        parse_config({"grpo": {"per_device_train_batch_size": 12, "num_generations": 8}})


@pytest.mark.slow
def test_recipe_runs_end_to_end_at_tiny_size(tmp_path: Path) -> None:
    from openenv_train.recipes.grpo_guess_number.train import run

    cfg = load_config(ROOT / "configs" / "grpo_guess_number_cpu.yaml")
    cfg.output_dir, cfg.progress = str(tmp_path), False
    cfg.model.warmup_steps, cfg.model.warmup_batch_size = 20, 8
    cfg.grpo.max_steps, cfg.grpo.per_device_train_batch_size, cfg.grpo.num_generations = 2, 8, 4
    cfg.eval.games, cfg.eval.periodic_games, cfg.eval.every = 16, 16, 1
    summary = run(cfg)
    assert summary["steps"] == 2 and [p["step"] for p in summary["curve"]] == [0, 1, 2]
    assert 0.0 <= summary["after"]["solve_rate"] <= 1.0
    assert summary["baselines"]["binary search"]["solve_rate"] == 1.0
    run_dir = tmp_path / cfg.name
    assert (run_dir / "curve.png").stat().st_size > 1000 and (
        run_dir / "model" / "tokenizer.json"
    ).is_file()
    assert (run_dir / "metrics.jsonl").read_text().count('"eval"') == 3
    from openenv_train.recipes.grpo_guess_number.evaluate import evaluate_saved_model

    rows = evaluate_saved_model(run_dir / "model", episodes=16)  # the game settings of the run
    assert rows["model"]["solve_rate"] == summary["after"]["solve_rate"]  # same 16 seeded games

    # the run's lifecycle: a trainer checkpoint at every periodic eval, and --resume goes on
    assert (run_dir / "trainer" / "checkpoint-2" / "optimizer.pt").is_file()
    cfg.resume, cfg.grpo.max_steps = True, 3
    resumed = run(cfg)
    assert resumed["steps"] == 3 and [p["step"] for p in resumed["curve"]] == [0, 1, 2, 3]
    assert (run_dir / "metrics.jsonl").read_text().count('"eval_before"') == 1
