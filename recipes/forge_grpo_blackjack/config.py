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

    procs: int = Field(1, ge=1)
    num_replicas: int = Field(1, ge=1)
    with_gpus: bool = False
    mesh_name: str | None = None


class RolloutSection(_Strict):
    """Rollout engine knobs; each rollout call plays ``groups_per_rollout`` groups."""

    groups_per_rollout: int = Field(32, ge=1)
    max_turns: int = Field(8, ge=1)
    max_new_tokens: int = Field(4, ge=1)
    max_concurrency: int = Field(512, ge=1)
    max_batch_size: int = Field(512, ge=1)
    temperature: float = Field(1.0, gt=0)
    same_deal_per_group: bool = False
    invalid_action_reward: float = -1.0


class LossSection(_Strict):
    beta: float = Field(0.0, ge=0)
    epsilon: float = Field(0.2, gt=0)
    epsilon_high: float | None = Field(None, gt=0)


class EntropySection(_Strict):
    """TRL's adaptive entropy control (without it the tiny model collapses to "always stand")."""

    enabled: bool = True
    target: float = 0.15
    delta: float = Field(0.005, ge=0)


class TrainerSection(_Strict):
    learning_rate: float = Field(5e-4, gt=0)
    lr_schedule: Literal["cosine", "constant"] = "cosine"
    max_norm: float = Field(1.0, gt=0)
    loss: LossSection = Field(default_factory=LossSection)
    entropy: EntropySection = Field(default_factory=EntropySection)
    threads: int = Field(1, ge=1)


class ReplayBufferSection(_Strict):
    max_buffer_size: int | None = Field(None, ge=1)
    max_resample_count: int = Field(0, ge=0)


class ActorsSection(_Strict):
    rollout: Resources = Field(default_factory=Resources)
    trainer: Resources = Field(default_factory=Resources)
    replay_buffer: Resources = Field(default_factory=Resources)


class ServicesSection(_Strict):
    generator: Resources = Field(default_factory=Resources)


class ForgeSection(_Strict):
    """``backend: forge`` only: keyword arguments for forge's ``Generator`` / ``TitanTrainer``."""

    model: str = "Qwen/Qwen3-1.7B"
    generator: dict[str, Any] = Field(default_factory=dict)
    trainer: dict[str, Any] = Field(default_factory=dict)


class ForgeRecipeConfig(_Strict):
    recipe: Literal["forge_grpo_blackjack"] = "forge_grpo_blackjack"
    name: str = Field("forge_grpo_blackjack", pattern=r"^[A-Za-z0-9_.-]+$")
    output_dir: str = "runs"
    seed: int = 0
    backend: Literal["monarch", "forge"] = "monarch"
    progress: bool = True
    group_size: int = Field(16, ge=2)
    local_batch_size: int = Field(512, ge=1)
    max_req_tokens: int = Field(16, ge=1)
    max_res_tokens: int = Field(64, ge=1)
    off_by_n: int = Field(1, ge=0)
    steps: int = Field(800, ge=1)
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
