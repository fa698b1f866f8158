"""Typed config of the GRPO BlackJack recipe, loaded from YAML; every mistake fails at start.

Unknown keys are rejected (``extra="forbid"``), batch and group sizes are checked against each
other, and a model path that does not exist is named before anything heavy starts. Every error
names the YAML key (``grpo.num_generations``) and says how to fix it. The defaults are the
shipped CPU config (``configs/grpo_blackjack_cpu.yaml``; a test keeps the two equal).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from openenv_train.runtime.ray_cluster import RaySettings


class ConfigError(ValueError):
    """A recipe config value is wrong; the message names the key and the fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class TinyModel(_Strict):
    """The locally built tiny Llama (``openenv_train.policy.tiny``)."""

    hidden_size: int = Field(64, ge=32)
    num_layers: int = Field(2, ge=1)
    num_heads: int = Field(2, ge=1)
    intermediate_size: int | None = Field(128, ge=1)
    #: std of the random initial weights (transformers' ``initializer_range``; its default 0.02
    #: left GRPO stuck longer at "always stand" in our runs)
    init_std: float = Field(0.1, gt=0)
    seed: int = 0


class ModelSection(_Strict):
    """``path``: a local model folder or a hub id (``hub: true``); ``null`` builds the tiny model."""

    path: str | None = None
    hub: bool = False
    tiny: TinyModel = Field(default_factory=TinyModel)
    warmup_steps: int = Field(300, ge=0)
    warmup_batch_size: int = Field(64, ge=1)
    warmup_learning_rate: float = Field(3e-3, gt=0)
    #: "all": the warm-up also predicts the env's text, so the model learns to read the state
    #: (openenv_train.trainers.format_warmup); "answers": answer tokens only.
    warmup_loss_on: Literal["all", "answers"] = "all"
    chat_template_kwargs: dict[str, Any] = Field(
        default_factory=dict
    )  # e.g. {enable_thinking: false}


class EnvSection(_Strict):
    """Env servers: ``num_servers`` of ``app`` on ``runtime``, or existing ``base_urls``.

    ``runtime: docker`` / ``podman`` runs hardened containers of ``image`` (``openenv-train
    build envs/blackjack_env --tag IMAGE``); ``relax`` names hardening defaults to turn off.
    """

    app: str = "blackjack_env.server.app:app"
    num_servers: int = Field(2, ge=1)
    base_urls: list[str] = Field(default_factory=list)
    startup_timeout_s: float = Field(60.0, gt=0)
    runtime: Literal["local", "docker", "podman", "ray"] = "local"
    ray: RaySettings = Field(default_factory=RaySettings)  # used when runtime: ray
    image: str | None = None
    engine: str | None = None  # an engine API URL; default: the runtime's own socket
    relax: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _image(self) -> EnvSection:
        if self.runtime in ("docker", "podman") and not self.image and not self.base_urls:
            raise ValueError(
                f"env.image: env.runtime={self.runtime} needs an image; build one with "
                "`openenv-train build envs/blackjack_env --tag openenv-train/blackjack_env:latest`"
            )
        return self

    def server_options(self) -> dict[str, Any]:
        """Keyword arguments of ``openenv_train.runtime.start_servers`` for this section."""
        opts: dict[str, Any] = {"runtime": self.runtime, "startup_timeout": self.startup_timeout_s}
        if self.runtime == "ray":
            opts.update(self.ray.fleet_options())
        elif self.runtime != "local":
            opts.update(image=self.image, relax=self.relax, engine=self.engine or self.runtime)
        return opts


class RolloutSection(_Strict):
    """Engine knobs (``openenv_train.rollout.RolloutConfig``)."""

    max_turns: int = Field(8, ge=1)
    max_new_tokens: int = Field(4, ge=1)
    max_concurrency: int = Field(512, ge=1)
    max_batch_size: int = Field(512, ge=1)
    same_deal_per_group: bool = False
    invalid_action_reward: float = -1.0
    system_prompt: str | None = None  # e.g. "Answer hit or stand." for chat models (tiny: none)
    #: > 0: rollouts overlap training, played by weights at most this many optimizer steps old
    #: (the loss corrects with TRL's truncated importance ratio); 0: on-policy, synchronous
    max_staleness: int = Field(0, ge=0)


class GRPOSection(_Strict):
    """``trl.GRPOConfig`` settings; ``extra`` passes any other field."""

    max_steps: int = Field(800, ge=1)
    num_generations: int = 16
    per_device_train_batch_size: int = 512
    gradient_accumulation_steps: int = Field(1, ge=1)
    learning_rate: float = Field(5e-4, gt=0)
    lr_scheduler_type: str = "cosine"
    beta: float = Field(0.0, ge=0)
    temperature: float = Field(1.0, gt=0)
    loss_type: str = "dapo"
    scale_rewards: str = "group"
    max_grad_norm: float = Field(1.0, gt=0)
    use_adaptive_entropy: bool = True
    entropy_target: float = 0.15
    entropy_coef_delta: float = 0.005
    max_completion_length: int = Field(64, ge=1)
    use_cpu: bool = True
    bf16: bool = False
    gradient_checkpointing: bool = False
    use_vllm: bool = False
    vllm_mode: Literal["colocate", "server"] = "colocate"
    vllm_gpu_memory_utilization: float = Field(0.3, gt=0, le=1)
    logging_steps: int = Field(10, ge=1)
    torch_threads: int | None = Field(1, ge=1)
    #: forward/backward per completion-length bucket instead of padding every row to the
    #: longest (same loss up to float rounding; openenv_train.trainers.buckets)
    length_buckets: bool = True
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _sizes(self) -> GRPOSection:
        if self.num_generations < 2:
            raise ValueError(
                f"grpo.num_generations={self.num_generations}: GRPO compares rollouts within a group, "
                "so it needs >= 2 (16 is the tested value)"
            )
        batch = self.per_device_train_batch_size * self.gradient_accumulation_steps
        if batch % self.num_generations:
            raise ValueError(
                f"grpo.per_device_train_batch_size * gradient_accumulation_steps = {batch} is not divisible by "
                f"grpo.num_generations={self.num_generations}; use a multiple, e.g. "
                f"{max(1, batch // self.num_generations) * self.num_generations}"
            )
        return self


class EvalSection(_Strict):
    """Greedy evaluation on fresh seeded hands (game logic in-process; see evaluate.py)."""

    hands: int = Field(20000, ge=1)
    every: int = Field(50, ge=1)
    periodic_hands: int = Field(10000, ge=1)
    seed: int = 2_000_000_000
    final_via_servers: bool = False
    #: Save the weights of the periodic eval with the best mean return (validation hands, seeded
    #: apart from the final eval's, so the final numbers stay unbiased) instead of the last step's.
    keep_best: bool = True


class RecipeConfig(_Strict):
    """The whole recipe: ``openenv-train train CONFIG`` loads this from YAML."""

    recipe: Literal["grpo_blackjack"] = "grpo_blackjack"
    name: str = Field("grpo_blackjack", pattern=r"^[A-Za-z0-9_.-]+$")
    output_dir: str = "runs"
    seed: int = 0
    report_to: list[str] = Field(default_factory=list)
    format_reward_weight: float = 0.0
    progress: bool = True
    model: ModelSection = Field(default_factory=ModelSection)
    env: EnvSection = Field(default_factory=EnvSection)
    rollout: RolloutSection = Field(default_factory=RolloutSection)
    grpo: GRPOSection = Field(default_factory=GRPOSection)
    eval: EvalSection = Field(default_factory=EvalSection)

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.name

    def check_paths(self, base: Path | None = None) -> None:
        """Fail now (not after warm-up) on a model folder that is not there."""
        path = self.model.path
        if path and not self.model.hub:
            p = Path(path) if Path(path).is_absolute() or base is None else base / path
            if not p.is_dir() or not (p / "config.json").is_file():
                raise ConfigError(
                    f"model.path: {path!r} is not a model folder (no config.json at {p}); give a folder saved "
                    "with save_pretrained, set model.hub: true for a hub id, or null to build the tiny model"
                )
            self.model.path = str(p)


def _format(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            lines.append(
                f"{key}: unknown key; remove it or check its spelling (see configs/grpo_blackjack_cpu.yaml)"
            )
        else:
            msg = e["msg"].removeprefix("Value error, ")
            lines.append(msg if msg.startswith(key.split(".")[0]) else f"{key}: {msg}")
    return "invalid recipe config:\n  " + "\n  ".join(lines)


def parse_config(data: dict[str, Any], base: Path | None = None) -> RecipeConfig:
    """A checked :class:`RecipeConfig` from a dict; raises :class:`ConfigError` naming the key."""
    if not isinstance(data, dict):
        raise ConfigError(f"a recipe config must be a YAML mapping, got {type(data).__name__}")
    try:
        cfg = RecipeConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format(err)) from None
    cfg.check_paths(base)
    return cfg


def load_config(path: str | Path) -> RecipeConfig:
    """Load and check a YAML config; a relative model.path resolves against the working directory."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(
            f"config file {str(path)!r} does not exist; pass a YAML file like configs/grpo_blackjack_cpu.yaml"
        )
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as err:
        raise ConfigError(f"{p}: not valid YAML: {err}") from None
    return parse_config(data or {}, base=Path.cwd())
