"""Config of the torchforge-style GRPO BlackJack app, in forge's vocabulary; strict keys.

forge's GRPO configs name ``group_size``, ``local_batch_size``, ``off_by_n`` (the replay buffer's
``max_policy_age``), ``max_req_tokens`` / ``max_res_tokens`` and per-service resources
(``services.<name>.procs`` / ``num_replicas``, ``actors.<name>.procs``); so does this one. The
model, env and eval sections are the TRL recipe's (``recipes.grpo_blackjack.config``).
``backend: monarch`` runs our actors on local processes (CPU); ``backend: forge`` uses forge's own
``Generator`` and ``TitanTrainer`` (needs torchforge and GPUs; untested here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from recipes.grpo_blackjack.config import ConfigError, EnvSection, EvalSection, ModelSection


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Resources(_Strict):
    """forge's per-actor resources (``ForgeActor.options``)."""

    #: processes per replica
    procs: int = Field(1, ge=1)
    #: replicas of the service or actor
    num_replicas: int = Field(1, ge=1)
    #: give each process a GPU (backend: forge)
    with_gpus: bool = False
    #: forge host mesh to place it on (null: the role's name, e.g. trainer)
    mesh_name: str | None = None


class RolloutSection(_Strict):
    """Rollout engine knobs; each rollout call plays ``groups_per_rollout`` groups."""

    #: groups per rollout call (one call fills one train batch)
    groups_per_rollout: int = Field(32, ge=1)
    #: model turns per episode before it is cut
    max_turns: int = Field(8, ge=1)
    #: tokens the model may generate per turn
    max_new_tokens: int = Field(4, ge=1)
    #: env sessions open at once
    max_concurrency: int = Field(512, ge=1)
    #: most sessions batched into one model call
    max_batch_size: int = Field(512, ge=1)
    #: sampling temperature of the rollouts
    temperature: float = Field(1.0, gt=0)
    #: true: the rollouts of a group play the same hand
    same_deal_per_group: bool = False
    #: reward of an episode whose answer is not a legal action
    invalid_action_reward: float = -1.0


class LossSection(_Strict):
    #: KL penalty towards the reference model (0: none)
    beta: float = Field(0.0, ge=0)
    #: lower clip of the ratio to the generator's logprobs
    epsilon: float = Field(0.2, gt=0)
    #: upper clip (null: epsilon)
    epsilon_high: float | None = Field(None, gt=0)


class EntropySection(_Strict):
    """TRL's adaptive entropy control (without it the tiny model collapses to "always stand")."""

    #: adaptive entropy bonus on (plain GRPO collapses to always stand)
    enabled: bool = True
    #: entropy the adaptive bonus steers towards
    target: float = 0.15
    #: how fast the entropy coefficient moves per step
    delta: float = Field(0.005, ge=0)


class TrainerSection(_Strict):
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


class ReplayBufferSection(_Strict):
    #: most episodes kept (null: unbounded)
    max_buffer_size: int | None = Field(None, ge=1)
    #: times an episode may be trained on again (0: once)
    max_resample_count: int = Field(0, ge=0)


class ActorsSection(_Strict):
    rollout: Resources = Field(default_factory=Resources)
    trainer: Resources = Field(default_factory=Resources)
    replay_buffer: Resources = Field(default_factory=Resources)


class ServicesSection(_Strict):
    generator: Resources = Field(default_factory=Resources)


class ForgeSection(_Strict):
    """``backend: forge`` only: keyword arguments for forge's ``Generator`` / ``TitanTrainer``."""

    #: hub model of forge's Generator and TitanTrainer
    model: str = "Qwen/Qwen3-1.7B"
    #: keyword arguments of forge's Generator
    generator: dict[str, Any] = Field(default_factory=dict)
    #: keyword arguments of forge's TitanTrainer
    trainer: dict[str, Any] = Field(default_factory=dict)


class ForgeRecipeConfig(_Strict):
    #: the recipe that runs this config
    recipe: Literal["forge_grpo_blackjack"] = "forge_grpo_blackjack"
    #: run name: everything lands in output_dir/name (--name overrides)
    name: str = Field("forge_grpo_blackjack", pattern=r"^[A-Za-z0-9_.-]+$")
    #: folder of the run folders
    output_dir: str = "runs"
    #: seed of torch, the deals and the trainer
    seed: int = 0
    #: monarch: our actors on this machine's CPU; forge: forge's Generator and TitanTrainer (GPUs)
    backend: Literal["monarch", "forge"] = "monarch"
    #: a rich progress bar
    progress: bool = True
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

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.name


def _format(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            lines.append(
                f"{key}: unknown key; remove it or check its spelling "
                "(see configs/forge_grpo_blackjack_cpu.yaml)"
            )
        else:
            lines.append(f"{key}: {e['msg'].removeprefix('Value error, ')}")
    return "invalid forge recipe config:\n  " + "\n  ".join(lines)


def parse_config(data: Any, base: Path | None = None) -> ForgeRecipeConfig:
    if not isinstance(data, dict):
        raise ConfigError(f"a recipe config must be a YAML mapping, got {type(data).__name__}")
    try:
        cfg = ForgeRecipeConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format(err)) from None
    path = cfg.model.path
    if path and not cfg.model.hub:
        p = Path(path) if Path(path).is_absolute() or base is None else base / path
        if not (p / "config.json").is_file():
            raise ConfigError(f"model.path: {path!r} is not a model folder (no config.json at {p})")
        cfg.model.path = str(p)
    return cfg


def load_config(path: str | Path) -> ForgeRecipeConfig:
    """Load and check a YAML config (``openenv-train train`` calls this)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as err:
        raise ConfigError(f"{p}: not valid YAML: {err}") from None
    return parse_config(data or {}, base=Path.cwd())
