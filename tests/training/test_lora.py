"""LoRA in the training paths: the config section, adapter-only weight publishing, a LoRA run's
folder (adapter + base) merged by ``openenv-train export``, and TRL's environment_factory training a
random-initialised Qwen3 with its real chat template on a real env server."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from blackjack_env.text_spec import VOCABULARY

from openenv_train.cli.main import main as cli
from openenv_train.policy import lora
from openenv_train.policy.tiny import build_tiny_model, load_tiny_model
from openenv_train.recipes.grpo_blackjack.config import load_config, parse_config
from openenv_train.training.config import ConfigError
from openenv_train.training.overlap import WeightMailbox

ROOT = Path(__file__).resolve().parents[2]


def test_lora_section_is_off_by_default_and_checked(capsys: pytest.CaptureFixture[str]) -> None:
    assert not parse_config({}).lora.enabled
    cfg = load_config(ROOT / "configs" / "grpo_blackjack_lora_cpu.yaml")
    assert cfg.lora.enabled and cfg.lora.target_modules == "all-linear"
    with pytest.raises(ConfigError, match="lora.r"):
        parse_config({"lora": {"r": -1}})
    with pytest.raises(ConfigError, match="lora.rank: unknown key"):
        parse_config({"lora": {"rank": 8}})
    assert cli(["config-keys", "grpo_guess_number"]) == 0
    keys = capsys.readouterr().out
    assert all(f"`lora.{k}`" in keys for k in ("r", "alpha", "dropout", "target_modules"))


def wrapped(r: int = 4) -> Any:
    model, _ = build_tiny_model(VOCABULARY, seed=3)
    return lora.wrap(model, lora.lora_config(r, 8.0, 0.0, ["q_proj", "v_proj"]))


def test_the_mailbox_publishes_only_the_adapter_and_the_copy_plays_alike() -> None:
    model = wrapped()
    producer_copy = copy.deepcopy(model).eval()
    with torch.no_grad():  # a "training step": the adapter moves, the base does not
        for p in model.parameters():
            if p.requires_grad:
                p.add_(torch.randn_like(p) * 0.1)
    box = WeightMailbox()
    box.publish(model, 1)
    full = model.base_model.model.state_dict()
    assert 0 < box.last_bytes < lora.state_bytes(full) / 5  # adapter tensors only
    assert box.apply(producer_copy, 0) == 1
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        assert torch.equal(model.eval()(ids).logits, producer_copy(ids).logits)


def test_full_fine_tuning_still_publishes_everything() -> None:
    model, _ = build_tiny_model(VOCABULARY, seed=3)
    state, partial = lora.trainable_state(model)
    assert not partial and set(state) == set(model.state_dict())


@pytest.mark.slow
def test_a_lora_run_saves_the_adapter_and_export_merges_it(tmp_path: Path) -> None:
    from openenv_train.recipes.grpo_blackjack.train import run

    data = yaml.safe_load((ROOT / "configs" / "grpo_blackjack_lora_cpu.yaml").read_text())
    data.update(output_dir=str(tmp_path), progress=False)
    data["model"].update(warmup_steps=20)
    data["grpo"].update(max_steps=2, per_device_train_batch_size=32)
    data["eval"].update(hands=200, periodic_hands=200, every=1)
    summary = run(parse_config(data))
    run_dir = tmp_path / data["name"]
    assert summary["steps"] == 2
    assert lora.is_adapter_dir(run_dir / "model") and (run_dir / "base" / "config.json").is_file()
    assert not (run_dir / "model" / "model.safetensors").exists()  # the adapter only

    assert cli(["export", str(run_dir), "--merge"]) == 0
    merged, tok = load_tiny_model(run_dir / "merged")
    assert not lora.is_peft(merged)
    adapted = lora.load_adapter_model(run_dir / "model", merge=False).eval()
    ids = torch.tensor([tok.encode("player 15 dealer 10", add_special_tokens=False)])
    with torch.no_grad():
        assert torch.allclose(merged(ids).logits, adapted(ids).logits, atol=1e-5)
    assert cli(["export", str(tmp_path / "nowhere"), "--merge"]) == 2


@pytest.mark.slow
def test_environment_factory_trains_a_qwen3_with_lora_on_a_real_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """model.path = a saved random Qwen3 (BPE tokenizer, Qwen3's own template): the recipe keeps
    the template, TRL parses the model's <tool_call> JSON and calls the env's tool."""
    from openenv_train.policy.chat_models import build_chat_model, save_chat_model
    from openenv_train.recipes.grpo_guess_number import train as recipe
    from openenv_train.recipes.grpo_guess_number.config import load_config as load_gn
    from openenv_train.recipes.grpo_guess_number.tool_model import corpus

    model, tok = build_chat_model("qwen3", corpus(1, 16, 5, True, games=50), seed=0)
    save_chat_model(model, tok, tmp_path / "qwen3")
    calls: list[int] = []
    make = recipe.environment_class

    def counting(urls: list[str]) -> Any:
        base = make(urls)

        class Counted(base):  # type: ignore[misc, valid-type]
            def guess(self, number: int) -> str:
                """Guess the hidden number.

                Args:
                    number: The guess.
                """
                calls.append(number)
                return super().guess(number)

        return Counted

    monkeypatch.setattr(recipe, "environment_class", counting)
    # a 2-core-sized warm-up cannot teach a random Qwen3 the JSON call format in general; one
    # fixed game, learned by heart, makes its first turn a well-formed call for TRL to parse
    import random

    game = recipe.random_conversation(random.Random(0), 1, 16, 5, True, "in_range")
    monkeypatch.setattr(recipe, "random_conversation", lambda *args: game)
    cfg = load_gn(ROOT / "configs" / "grpo_guess_number_cpu.yaml")
    cfg.output_dir, cfg.progress, cfg.model.path = str(tmp_path), False, str(tmp_path / "qwen3")
    cfg.model.warmup_steps, cfg.model.warmup_batch_size = 200, 2
    cfg.model.warmup_learning_rate = 1e-2
    cfg.lora.r = 4
    cfg.grpo.max_steps, cfg.grpo.per_device_train_batch_size, cfg.grpo.num_generations = 2, 8, 4
    cfg.grpo.max_new_tokens_per_turn, cfg.grpo.max_completion_length = 24, 200
    cfg.eval.games, cfg.eval.periodic_games, cfg.eval.every = 8, 8, 2
    summary = recipe.run(cfg)
    assert summary["steps"] == 2
    assert calls, "TRL never called the env's tool: the Qwen3 tool calls were not parsed"
    assert lora.is_adapter_dir(tmp_path / cfg.name / "model")
    from openenv_train.policy.chat_models import family_of

    saved = load_tiny_model(tmp_path / cfg.name / "model")[1]
    assert family_of(saved.chat_template) == "qwen3"  # Qwen3's own template did the tool calls


def test_the_gpu_configs_load_and_name_a_gpu() -> None:
    import importlib

    gpu = [
        p for p in sorted((ROOT / "configs").glob("*.yaml")) if "vllm" in p.name or "gpu" in p.name
    ]
    assert len(gpu) >= 3
    for path in gpu:
        recipe = yaml.safe_load(path.read_text())["recipe"]
        cfg = importlib.import_module(f"openenv_train.recipes.{recipe}.config").load_config(path)
        assert cfg.recipe == recipe, path.name


def test_the_forge_trainer_actor_trains_adapters_and_pushes_merged_weights(tmp_path: Path) -> None:
    import asyncio

    from openenv_train.training.forge.actors import TrainerActor

    _, _ = build_tiny_model(VOCABULARY, tmp_path / "m", seed=3)
    plain = load_tiny_model(tmp_path / "m")[0]
    spec = {"r": 4, "alpha": 8.0, "dropout": 0.0, "target_modules": ["q_proj", "v_proj"]}
    trainer = TrainerActor(str(tmp_path / "m"), lora=spec)
    trained = [p for g in trainer.optimizer.param_groups for p in g["params"]]
    assert 0 < sum(p.numel() for p in trained) < sum(p.numel() for p in plain.parameters()) / 5
    pushed = asyncio.run(TrainerActor.push_weights._method(trainer, 1))
    assert set(pushed) == set(plain.state_dict())  # merged: the generator's plain model loads it
    assert lora.is_peft(trainer.model)  # merging a copy leaves the trainer's adapters in place


def test_the_async_worker_asks_for_the_adapter_of_each_version() -> None:
    """Adapter-only sync to vLLM: TRL loads ``trl-policy-vN`` per sync; requests must name it."""
    from types import SimpleNamespace

    from openenv_train.training.async_grpo.worker import EngineRolloutWorker

    worker = EngineRolloutWorker(lambda: None, lambda p: None, num_generations=2)  # type: ignore[arg-type, return-value]
    policy = SimpleNamespace(model="policy")
    worker._serve_version(policy)
    assert policy.model == "policy"  # no adapter sync: the served base model
    worker.adapter_name, worker._policy = "trl-policy", policy
    worker.update_model_version(3)
    assert policy.model == "trl-policy-v3"
