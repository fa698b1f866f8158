"""Typed config of the GRPO guess-the-number recipe: the shared sections (``openenv_train.training
.config``) with the games' range, the tool model's warm-up and TRL's per-turn token cap."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from openenv_train.training import config, config_loader
from openenv_train.training.config import RunName


class GameSection(config.StrictModel):
    """The games trained and evaluated on (``reset`` options of guess_number_env)."""

    #: smallest secret number
    low: int = Field(1, ge=0)
    #: largest secret number (1..16: binary search needs at most 5 guesses)
    high: int = Field(16, ge=1)
    #: guesses per game before it ends unsolved
    max_turns: int = Field(5, ge=1, le=64)
    #: the env's answer also says which range is still possible
    show_range: bool = True

    @model_validator(mode="after")
    def _range(self) -> GameSection:
        if self.low >= self.high:
            raise ValueError(f"game.low={self.low} must be < game.high={self.high}")
        return self


class ModelSection(config.LocalModelSection):
    """``path: null`` builds the tiny Llama and its word-level tool tokenizer here."""

    #: tool-format warm-up batches on random guesses before GRPO (0: none)
    warmup_steps: int = Field(200, ge=0)
    #: games per warm-up batch
    warmup_batch_size: int = Field(32, ge=1)
    #: warm-up guesses: "uniform" over the whole range (format only) or "in_range": uniform over
    #: what the env's text says is still possible (needs game.show_range; no search strategy)
    warmup_guesses: Literal["uniform", "in_range"] = "in_range"


class EnvSection(config.LocalEnvSection):
    #: the env server app as module:attribute
    app: str = "guess_number_env.server.app:app"
    #: env servers to start
    num_servers: int = Field(1, ge=1)


class GRPOSection(config.CoreGRPOSection):
    #: GRPO optimizer steps (openenv-train train --max-steps overrides)
    max_steps: int = Field(150, ge=1)
    #: rollouts per group, compared with each other (>= 2)
    num_generations: int = 8
    #: games per step; a multiple of num_generations
    per_device_train_batch_size: int = Field(64, ge=2)
    #: transformers scheduler name (constant, cosine, linear, ...)
    lr_scheduler_type: str = "constant"
    #: longest completion in tokens: every tool call and the env's answers
    max_completion_length: int = Field(144, ge=8)
    #: one model turn is ``<call> guess number N <eos>``: capping each generate call keeps a turn
    #: that never emits <eos> from running the whole batch to max_completion_length
    max_new_tokens_per_turn: int = Field(6, ge=1)


class EvalSection(config.EvalSection):
    #: optimizer steps between periodic greedy evals (the learning curve)
    every: int = Field(25, ge=1)
    #: fresh seeded games of the greedy evals before and after training
    games: int = Field(2000, ge=1)
    #: validation games per periodic eval (keep_best picks on these)
    periodic_games: int = Field(500, ge=1)


class RecipeConfig(config.RunConfig):
    """``openenv-train train configs/grpo_guess_number_cpu.yaml`` loads this from YAML."""

    example: ClassVar[str] = "configs/grpo_guess_number_cpu.yaml"
    #: the recipe that runs this config
    recipe: Literal["grpo_guess_number"] = "grpo_guess_number"
    #: run name: everything lands in output_dir/name (--name overrides)
    name: RunName = "grpo_guess_number"
    #: the secret numbers and the env's answers
    game: GameSection = Field(default_factory=GameSection)
    #: the policy model (a tiny tool model, or a saved one)
    model: ModelSection = Field(default_factory=ModelSection)
    #: the env servers
    env: EnvSection = Field(default_factory=EnvSection)
    #: TRL GRPOConfig settings
    grpo: GRPOSection = Field(default_factory=GRPOSection)
    #: greedy evaluation
    eval: EvalSection = Field(default_factory=EvalSection)

    @model_validator(mode="after")
    def _warmup_reads_the_range(self) -> RecipeConfig:
        if self.model.warmup_guesses == "in_range" and not self.game.show_range:
            raise ValueError(
                "model.warmup_guesses: 'in_range' reads the range from the env's text; set "
                "game.show_range: true or use 'uniform'"
            )
        return self


def parse_config(data: Any) -> RecipeConfig:
    """A checked config from a dict; raises ``ConfigError`` naming the key."""
    return config_loader.parse_config(data, RecipeConfig)


def load_config(path: str | Path) -> RecipeConfig:
    """Load and check ``configs/grpo_guess_number_cpu.yaml``-style YAML."""
    return config_loader.load_config(path, RecipeConfig)
