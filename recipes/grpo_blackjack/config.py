"""Typed config of the GRPO BlackJack recipe: the shared sections (``openenv_train.training.config``)
with BlackJack's rollout knobs and eval hands. The shared defaults are the shipped CPU config
(``configs/grpo_blackjack_cpu.yaml``; a test keeps the two equal)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from openenv_train.training import config, config_loader
from openenv_train.training.config import EnvSection, GRPOSection, ModelSection, RunName


class RolloutSection(config.RolloutSection):
    #: true: the rollouts of a GRPO group play the same hand (same deck: they often end alike)
    same_deal_per_group: bool = False
    #: true: a GRPO group's rollouts start from the same state (player total, soft, dealer card)
    #: with different decks, so the group's mean is a per-state baseline
    same_state_per_group: bool = False
    #: with same_state_per_group, states are drawn by frequency ** this: 1 natural, 0.5 shows
    #: rare states (dealer ace, soft 18) more often, 0 all alike
    state_weight_power: float = Field(1.0, ge=0.0, le=1.0)
    #: seeds scanned once for their first state (same_state_per_group); ~1 s per 40k
    deal_pool_size: int = Field(40_000, ge=1000)
    #: reward of an episode whose answer is not a legal action
    invalid_action_reward: float = -1.0


class EvalSection(config.EvalSection):
    """Greedy evaluation on fresh seeded hands (game logic in-process; see evaluate.py)."""

    #: fresh seeded hands of the greedy evals before and after training
    hands: int = Field(20000, ge=1)
    #: validation hands per periodic eval (keep_best picks on these)
    periodic_hands: int = Field(10000, ge=1)
    #: also play the final eval through the env servers (checks the wire path)
    final_via_servers: bool = False


class RecipeConfig(config.RunConfig):
    """The whole recipe: ``openenv-train train CONFIG`` loads this from YAML."""

    #: the recipe that runs this config
    recipe: Literal["grpo_blackjack"] = "grpo_blackjack"
    #: run name: everything lands in output_dir/name (--name overrides)
    name: RunName = "grpo_blackjack"
    #: weight of a format reward (-1 for an answer that is not an action) beside the env's reward; 0: none
    format_reward_weight: float = 0.0
    #: the policy model
    model: ModelSection = Field(default_factory=ModelSection)
    #: the env servers
    env: EnvSection = Field(default_factory=EnvSection)
    #: the rollout engine
    rollout: RolloutSection = Field(default_factory=RolloutSection)
    #: TRL GRPOConfig settings
    grpo: GRPOSection = Field(default_factory=GRPOSection)
    #: greedy evaluation
    eval: EvalSection = Field(default_factory=EvalSection)

    @model_validator(mode="after")
    def _overlap(self) -> RecipeConfig:
        if self.rollout.same_state_per_group and self.rollout.same_deal_per_group:
            raise ValueError(
                "rollout.same_state_per_group and rollout.same_deal_per_group: choose one "
                "(a shared deal already shares the state)"
            )
        if self.rollout.max_staleness and (self.env.runtime == "ray" or self.grpo.use_vllm):
            raise ValueError(
                "rollout.max_staleness: overlap runs the in-process engine only; set it to 0 "
                "with env.runtime: ray or grpo.use_vllm (TRL's AsyncGRPOTrainer is the vLLM path)"
            )
        return self


def parse_config(data: Any) -> RecipeConfig:
    """A checked config from a dict; raises ``ConfigError`` naming the key."""
    return config_loader.parse_config(data, RecipeConfig)


def load_config(path: str | Path) -> RecipeConfig:
    """Load and check a YAML config (``configs/grpo_blackjack_cpu.yaml`` is the example)."""
    return config_loader.load_config(path, RecipeConfig)
