"""Every TRL GRPO loss and importance-sampling level, set through our config, trains 3 steps
composed with our off-policy correction (``rollout.max_staleness`` 1) on real BlackJack servers.

The loss and its correction run in the trainer, whichever producer plays the batches ahead: the
config's own loss (dapo) plays them in the recipe's child process (``overlap="process"``), the
others on the rollout loop's thread (``overlap="thread"``: the same rows, policy versions and
sampling logprobs, without a fresh interpreter importing torch for each case)."""

from __future__ import annotations

import copy
import math
import typing
from pathlib import Path

import pytest
import torch

from openenv_train.training.config import LossType

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "grpo_blackjack_cpu.yaml"
# each loss at the level TRL recommends for it, plus GSPO (grpo at sequence level) and sapo at
# sequence level: the two levels go through the same config key
CASES = [(loss, "sequence" if loss == "luspo" else "token") for loss in typing.get_args(LossType)]
CASES += [("grpo", "sequence"), ("sapo", "sequence")]
RECIPE_CASE = ("dapo", "token")  # configs/grpo_blackjack_cpu.yaml's loss: the recipe's producer


@pytest.fixture(scope="module")
def warmed_once():
    """The tiny Llama after the quick format warm-up (both seeded): paid once per module."""
    from blackjack_env.text_spec import VOCABULARY, random_episode

    from openenv_train.policy.tiny import build_tiny_model
    from openenv_train.training import quick_format_warmup

    torch.set_num_threads(1)
    model, tok = build_tiny_model(VOCABULARY)
    quick_format_warmup(model, tok, random_episode)
    return model, tok


@pytest.fixture()
def warmed(warmed_once):
    """Each test trains its own copy of the warmed-up model and tokenizer (conftest's ``warmed``
    builds and warms the same seeded model again for every test)."""
    return copy.deepcopy(warmed_once)


def test_the_config_offers_every_loss_the_installed_trl_has() -> None:
    """A loss TRL's GRPOConfig documents but our config refuses (or the reverse) fails here."""
    import re
    from dataclasses import fields

    from trl import GRPOConfig

    help_text = next(f for f in fields(GRPOConfig) if f.name == "loss_type").metadata["help"]
    supported = help_text.split("Supported values are")[1].split(". ")[0]
    assert set(re.findall(r"'(\w+)'", supported)) == set(typing.get_args(LossType))


def _config(**grpo: object) -> typing.Any:
    """The CPU BlackJack recipe config with ``grpo`` keys replaced, through the config loader."""
    import yaml

    from openenv_train.recipes.grpo_blackjack.config import RecipeConfig
    from openenv_train.training.config_loader import parse_config

    data = yaml.safe_load(CONFIG.read_text())
    data["grpo"].update(grpo)
    data["rollout"]["max_staleness"] = 1
    return parse_config(data, RecipeConfig)


def test_an_unknown_loss_or_level_is_refused_with_its_field_named() -> None:
    with pytest.raises(Exception, match="loss_type"):
        _config(loss_type="ppo")
    with pytest.raises(Exception, match="importance_sampling_level"):
        _config(importance_sampling_level="sentence")


@pytest.mark.parametrize(("loss_type", "level"), CASES)
def test_each_loss_trains_3_steps_with_the_off_policy_correction(
    blackjack_servers, warmed, tmp_path, loss_type, level
) -> None:
    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.training import env_reward, make_rollout_func
    from openenv_train.training.grpo import grpo_args, placeholder_dataset, trainer_class

    cfg = _config(
        loss_type=loss_type,
        importance_sampling_level=level,
        max_steps=3,  # the 2nd and 3rd batches are one version behind: the correction runs
        num_generations=4,
        per_device_train_batch_size=8,
        learning_rate=1e-2,  # big on purpose: 2 steps must move the weights visibly
    )
    args = grpo_args(cfg, tmp_path, save_strategy="no", logging_steps=1, disable_tqdm=True)
    assert (args.loss_type, args.importance_sampling_level) == (loss_type, level)
    assert args.vllm_importance_sampling_correction  # the off-policy correction is on
    model, tok = warmed
    before = [p.detach().clone() for p in model.parameters()]
    overlap = "process" if (loss_type, level) == RECIPE_CASE else "thread"
    f = make_rollout_func(
        BlackjackTextSpec(seed=3), blackjack_servers, max_staleness=1, overlap=overlap
    )
    try:
        trainer = trainer_class(cfg)(
            model=model,
            reward_funcs=[env_reward],
            args=args,
            train_dataset=placeholder_dataset(cfg, "blackjack"),
            processing_class=tok,
            rollout_func=f,
        )
        trainer.train()
        staleness = list(f.stats.staleness)
    finally:
        f.close()
    assert trainer.state.global_step == 3
    assert staleness == [0, 1, 1], staleness  # whichever producer: the 2nd and 3rd are behind
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 3 and all(math.isfinite(x) for x in losses), losses
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    ratios = [
        h["sampling/importance_sampling_ratio/mean"]
        for h in trainer.state.log_history
        if "sampling/importance_sampling_ratio/mean" in h
    ]
    assert ratios, "the off-policy correction must run (its metrics are logged)"
