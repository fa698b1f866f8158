"""Config of the torchforge-style GRPO BlackJack app, in forge's vocabulary; strict keys.

forge's GRPO configs name ``group_size``, ``local_batch_size``, ``off_by_n`` (the replay buffer's
``max_policy_age``), ``max_req_tokens`` / ``max_res_tokens`` and per-service resources
(``services.<name>.procs`` / ``num_replicas``, ``actors.<name>.procs``); so does this one. The
model and env sections and the top-level keys are the shared ones (``openenv_train.training.config``).
``backend: monarch`` runs our actors on local processes (CPU); ``backend: forge`` uses forge's own
``Generator`` and ``TitanTrainer`` (needs torchforge and GPUs; untested here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from openenv_train.training import config, config_loader
from openenv_train.training.config import EnvSection, ModelSection, RunName, StrictModel


class Resources(StrictModel):
    """forge's per-actor resources (``ForgeActor.options``)."""

    #: processes per replica
    procs: int = Field(1, ge=1)
    #: replicas of the service or actor
    num_replicas: int = Field(1, ge=1)
    #: give each process a GPU (backend: forge)
    with_gpus: bool = False
    #: forge host mesh to place it on (null: the role's name, e.g. trainer)
    mesh_name: str | None = None


class RolloutSection(config.EngineSection):
    """Rollout engine knobs; each rollout call plays ``groups_per_rollout`` groups."""

    #: groups per rollout call (one call fills one train batch)
    groups_per_rollout: int = Field(32, ge=1)
    #: sampling temperature of the rollouts
    temperature: float = Field(1.0, gt=0)
    #: true: the rollouts of a group play the same hand
    same_deal_per_group: bool = False
    #: reward of an episode whose answer is not a legal action
    invalid_action_reward: float = -1.0


class EvalSection(config.EvalSection):
    """Greedy evaluation on fresh seeded hands, in-process (``blackjack_env``'s game rules)."""

    #: fresh seeded hands of the greedy evals before and after training
    hands: int = Field(20000, ge=1)
    #: validation hands per periodic eval (keep_best picks on these)
    periodic_hands: int = Field(10000, ge=1)


class LossSection(StrictModel):
    #: KL penalty towards the reference model (0: none)
    beta: float = Field(0.0, ge=0)
    #: lower clip of the ratio to the generator's logprobs
    epsilon: float = Field(0.2, gt=0)
    #: upper clip (null: epsilon)
    epsilon_high: float | None = Field(None, gt=0)


class EntropySection(StrictModel):
    """TRL's adaptive entropy control (without it the tiny model collapses to "always stand")."""

    #: adaptive entropy bonus on (plain GRPO collapses to always stand)
    enabled: bool = True
    #: entropy the adaptive bonus steers towards
    target: float = 0.15
    #: how fast the entropy coefficient moves per step
    delta: float = Field(0.005, ge=0)


class TrainerSection(StrictModel):
    #: AdamW learning rate
    learning_rate: float = Field(5e-4, gt=0)
    #: learning-rate schedule over `steps`
    lr_schedule: Literal["cosine", "constant"] = "cosine"
    #: gradient clipping norm
    max_norm: float = Field(1.0, gt=0)
    loss: LossSection = Field(default_factory=LossSection)
    entropy: EntropySection = Field(default_factory=EntropySection)
    #: torch CPU threads of the trainer
    threads: int = Field(1, ge=1)


class ReplayBufferSection(StrictModel):
    #: most episodes kept (null: unbounded)
    max_buffer_size: int | None = Field(None, ge=1)
    #: times an episode may be trained on again (0: once)
    max_resample_count: int = Field(0, ge=0)


class ActorsSection(StrictModel):
    rollout: Resources = Field(default_factory=Resources)
    trainer: Resources = Field(default_factory=Resources)
    replay_buffer: Resources = Field(default_factory=Resources)


class ServicesSection(StrictModel):
    generator: Resources = Field(default_factory=Resources)


class ForgeSection(StrictModel):
    """``backend: forge`` only: keyword arguments for forge's ``Generator`` / ``TitanTrainer``."""

    #: hub model of forge's Generator and TitanTrainer
    model: str = "Qwen/Qwen3-1.7B"
    #: keyword arguments of forge's Generator
    generator: dict[str, Any] = Field(default_factory=dict)
    #: keyword arguments of forge's TitanTrainer
    trainer: dict[str, Any] = Field(default_factory=dict)


class ForgeRecipeConfig(config.RunConfig):
    """``openenv-train train configs/forge_grpo_blackjack_cpu.yaml`` loads this from YAML."""

    example: ClassVar[str] = "configs/forge_grpo_blackjack_cpu.yaml"
    #: the recipe that runs this config
    recipe: Literal["forge_grpo_blackjack"] = "forge_grpo_blackjack"
    #: run name: everything lands in output_dir/name (--name overrides)
    name: RunName = "forge_grpo_blackjack"
    #: monarch: our actors on this machine's CPU; forge: forge's Generator and TitanTrainer (GPUs)
    backend: Literal["monarch", "forge"] = "monarch"
    #: episodes per GRPO group (advantages are computed within it)
    group_size: int = Field(16, ge=2)
    #: episodes per train step; a multiple of group_size
    local_batch_size: int = Field(512, ge=1)
    #: request tensor width (left-padded prompt tokens)
    max_req_tokens: int = Field(16, ge=1)
    #: response tensor width (right-padded): every turn, model and env tokens
    max_res_tokens: int = Field(64, ge=1)
    #: replay buffer max policy age: rows at most this many weight versions old
    off_by_n: int = Field(1, ge=0)
    #: train steps, each a weight push (openenv-train train --max-steps overrides)
    steps: int = Field(800, ge=1)
    #: continue output_dir/name from its last checkpoint (``openenv-train train --resume``)
    resume: bool = False
    model: ModelSection = Field(default_factory=ModelSection)
    env: EnvSection = Field(default_factory=EnvSection)
    rollout: RolloutSection = Field(default_factory=RolloutSection)
    trainer: TrainerSection = Field(default_factory=TrainerSection)
    replay_buffer: ReplayBufferSection = Field(default_factory=ReplayBufferSection)
    services: ServicesSection = Field(default_factory=ServicesSection)
    actors: ActorsSection = Field(default_factory=ActorsSection)
    eval: EvalSection = Field(default_factory=EvalSection)
    forge: ForgeSection = Field(default_factory=ForgeSection)

    @model_validator(mode="after")
    def _sizes(self) -> ForgeRecipeConfig:
        if self.local_batch_size % self.group_size:
            raise ValueError(
                f"local_batch_size={self.local_batch_size} is not a multiple of group_size="
                f"{self.group_size}; use e.g. {max(1, self.local_batch_size // self.group_size) * self.group_size}"
            )
        if self.backend == "monarch":
            for where, res in (
                ("services.generator", self.services.generator),
                ("actors.trainer", self.actors.trainer),
                ("actors.replay_buffer", self.actors.replay_buffer),
            ):
                if res.procs != 1 or res.num_replicas != 1 or res.with_gpus:
                    raise ValueError(
                        f"{where}: the monarch (CPU) backend runs one process, one replica, no GPU; "
                        "set procs: 1, num_replicas: 1, with_gpus: false (or backend: forge)"
                    )
            if self.actors.rollout.procs != 1:
                raise ValueError(
                    "actors.rollout.procs: use num_replicas for more rollout actors; procs must be 1"
                )
        return self


def parse_config(data: Any) -> ForgeRecipeConfig:
    """A checked config from a dict; raises ``ConfigError`` naming the key."""
    return config_loader.parse_config(data, ForgeRecipeConfig)


def load_config(path: str | Path) -> ForgeRecipeConfig:
    """Load and check a YAML config (``openenv-train train`` calls this)."""
    return config_loader.load_config(path, ForgeRecipeConfig)
