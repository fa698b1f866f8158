"""Typed config of the GRPO guess-the-number recipe (YAML, strict keys, checked at start)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from openenv_train.training.checks import ReportTo, check_reporters, import_target

from ..grpo_blackjack.config import ConfigError, TinyModel


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class GameSection(_Strict):
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


class ModelSection(_Strict):
    """``path: null`` builds the tiny Llama and its word-level tool tokenizer here."""

    #: a folder saved with save_pretrained, or null to build the tiny tool model here
    path: str | None = None
    tiny: TinyModel = Field(default_factory=TinyModel)
    #: tool-format warm-up batches on random guesses before GRPO (0: none)
    warmup_steps: int = Field(200, ge=0)
    #: games per warm-up batch
    warmup_batch_size: int = Field(32, ge=1)
    #: learning rate of the warm-up
    warmup_learning_rate: float = Field(3e-3, gt=0)
    #: warm-up guesses: "uniform" over the whole range (format only) or "in_range": uniform over
    #: what the env's text says is still possible (needs game.show_range; no search strategy)
    warmup_guesses: Literal["uniform", "in_range"] = "in_range"


class EnvSection(_Strict):
    #: the env server app as module:attribute
    app: str = "guess_number_env.server.app:app"
    #: env servers to start
    num_servers: int = Field(1, ge=1)
    #: use these running servers instead of starting any
    base_urls: list[str] = Field(default_factory=list)
    #: seconds each server may take to answer /health
    startup_timeout_s: float = Field(60.0, gt=0)


class GRPOSection(_Strict):
    #: GRPO optimizer steps (openenv-train train --max-steps overrides)
    max_steps: int = Field(150, ge=1)
    #: rollouts per group, compared with each other
    num_generations: int = Field(8, ge=2)
    #: games per step; a multiple of num_generations
    per_device_train_batch_size: int = Field(64, ge=2)
    #: AdamW learning rate
    learning_rate: float = Field(5e-4, gt=0)
    #: transformers scheduler name (constant, cosine, linear, ...)
    lr_scheduler_type: str = "constant"
    #: KL penalty towards the reference model (0: none)
    beta: float = Field(0.0, ge=0)
    #: sampling temperature of the rollouts
    temperature: float = Field(1.0, gt=0)
    #: TRL GRPO loss (dapo, grpo, dr_grpo, bnpo, ...)
    loss_type: str = "dapo"
    #: longest completion in tokens: every tool call and the env's answers
    max_completion_length: int = Field(144, ge=8)
    #: one model turn is ``<call> guess number N <eos>``: capping each generate call keeps a turn
    #: that never emits <eos> from running the whole batch to max_completion_length
    max_new_tokens_per_turn: int = Field(6, ge=1)
    #: train on the CPU (GRPOConfig.use_cpu)
    use_cpu: bool = True
    #: bfloat16 training (needs a GPU)
    bf16: bool = False
    #: steps between TRL log records (metrics.jsonl, report_to)
    logging_steps: int = Field(10, ge=1)
    #: torch CPU threads (1 is fastest for the tiny model; null: torch's default)
    torch_threads: int | None = Field(1, ge=1)
    #: any other GRPOConfig field, passed as is
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _sizes(self) -> GRPOSection:
        if self.per_device_train_batch_size % self.num_generations:
            raise ValueError(
                f"grpo.per_device_train_batch_size={self.per_device_train_batch_size} is not divisible by "
                f"grpo.num_generations={self.num_generations}; use a multiple"
            )
        return self


class EvalSection(_Strict):
    #: fresh seeded games of the greedy evals before and after training
    games: int = Field(2000, ge=1)
    #: optimizer steps between periodic greedy evals (the learning curve)
    every: int = Field(25, ge=1)
    #: validation games per periodic eval (keep_best picks on these)
    periodic_games: int = Field(500, ge=1)
    #: seed of the evaluation games (apart from the training games)
    seed: int = 2_000_000_000
    #: save the weights of the periodic eval with the best mean reward (validation games, seeded
    #: apart from the final eval's, so the final numbers stay unbiased) instead of the last step's
    keep_best: bool = True


class RecipeConfig(_Strict):
    #: the recipe that runs this config
    recipe: str = Field("grpo_guess_number", pattern="^grpo_guess_number$")
    #: run name: everything lands in output_dir/name (--name overrides)
    name: str = Field("grpo_guess_number", pattern=r"^[A-Za-z0-9_.-]+$")
    #: folder of the run folders
    output_dir: str = "runs"
    #: seed of torch, the games and the trainer
    seed: int = 0
    #: TRL report_to backends, e.g. [tensorboard] (metrics.jsonl and curve.png are always written)
    report_to: ReportTo = Field(default_factory=list)
    #: a rich progress bar instead of TRL's printed log dicts
    progress: bool = True
    #: continue ``runs/<name>`` from its last trainer checkpoint (``openenv-train train --resume``)
    resume: bool = False
    game: GameSection = Field(default_factory=GameSection)
    model: ModelSection = Field(default_factory=ModelSection)
    env: EnvSection = Field(default_factory=EnvSection)
    grpo: GRPOSection = Field(default_factory=GRPOSection)
    eval: EvalSection = Field(default_factory=EvalSection)

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.name


def parse_config(data: Any) -> RecipeConfig:
    if not isinstance(data, dict):
        raise ConfigError(f"a recipe config must be a YAML mapping, got {type(data).__name__}")
    try:
        cfg = RecipeConfig.model_validate(data)
    except ValidationError as err:
        lines = []
        for e in err.errors():
            key = ".".join(str(p) for p in e["loc"]) or "(top level)"
            msg = (
                "unknown key; remove it or check its spelling"
                if e["type"] == "extra_forbidden"
                else e["msg"]
            )
            lines.append(f"{key}: {msg.removeprefix('Value error, ')}")
        raise ConfigError("invalid recipe config:\n  " + "\n  ".join(lines)) from None
    if cfg.model.warmup_guesses == "in_range" and not cfg.game.show_range:
        raise ConfigError(
            "model.warmup_guesses: 'in_range' reads the range from the env's text; set game.show_range: true "
            "or use 'uniform'"
        )
    try:  # what would otherwise fail after the warm-up
        check_reporters(cfg.report_to)
        if not cfg.env.base_urls:
            import_target(cfg.env.app, "env.app", "guess_number_env.server.app:app")
    except ValueError as err:
        raise ConfigError(str(err)) from None
    if cfg.model.path and not (Path(cfg.model.path) / "config.json").is_file():
        raise ConfigError(
            f"model.path: {cfg.model.path!r} is not a saved model folder (no config.json)"
        )
    return cfg


def load_config(path: str | Path) -> RecipeConfig:
    """Load and check ``configs/grpo_guess_number_cpu.yaml``-style YAML."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        return parse_config(yaml.safe_load(p.read_text()) or {})
    except yaml.YAMLError as err:
        raise ConfigError(f"{p}: not valid YAML: {err}") from None
