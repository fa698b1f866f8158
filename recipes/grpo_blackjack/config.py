"""Typed config of the GRPO BlackJack recipe, loaded from YAML; every mistake fails at start.

Unknown keys are rejected (``extra="forbid"``), batch and group sizes are checked against each
other, and a model path that does not exist is named before anything heavy starts. Every error
names the YAML key (``grpo.num_generations``) and says how to fix it. The defaults are the
shipped CPU config (``configs/grpo_blackjack_cpu.yaml``; a test keeps the two equal).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from openenv_train.runtime.ray_cluster import RaySettings
from openenv_train.training.checks import ReportTo, check_reporters, import_target


class ConfigError(ValueError):
    """A recipe config value is wrong; the message names the key and the fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class TinyModel(_Strict):
    """The locally built tiny Llama (``openenv_train.policy.tiny``)."""

    #: width of the tiny Llama (>= 32 keeps head_dim usable by vLLM's CPU backend)
    hidden_size: int = Field(64, ge=32)
    #: transformer layers of the tiny Llama
    num_layers: int = Field(2, ge=1)
    #: attention heads (hidden_size / num_heads is the head size)
    num_heads: int = Field(2, ge=1)
    #: MLP width (null: transformers' default for hidden_size)
    intermediate_size: int | None = Field(128, ge=1)
    #: std of the random initial weights (transformers' ``initializer_range``; its default 0.02
    #: left GRPO stuck longer at "always stand" in our runs)
    init_std: float = Field(0.1, gt=0)
    #: seed of the random initial weights
    seed: int = 0


class ModelSection(_Strict):
    """``path``: a local model folder or a hub id (``hub: true``); ``null`` builds the tiny model."""

    #: a folder saved with save_pretrained, a hub id (with hub: true), or null to build the tiny Llama
    path: str | None = None
    #: true: model.path is a hub id loaded with AutoModelForCausalLM / AutoTokenizer
    hub: bool = False
    #: the tiny Llama built when model.path is null
    tiny: TinyModel = Field(default_factory=TinyModel)
    #: format warm-up batches of random-action games before GRPO (0: none)
    warmup_steps: int = Field(300, ge=0)
    #: games per format warm-up batch
    warmup_batch_size: int = Field(64, ge=1)
    #: learning rate of the format warm-up
    warmup_learning_rate: float = Field(3e-3, gt=0)
    #: "all": the warm-up also predicts the env's text, so the model learns to read the state
    #: (openenv_train.training.format_warmup); "answers": answer tokens only.
    warmup_loss_on: Literal["all", "answers"] = "all"
    #: extra arguments of every apply_chat_template call (chat models)
    chat_template_kwargs: dict[str, Any] = Field(
        default_factory=dict
    )  # e.g. {enable_thinking: false}


class EnvSection(_Strict):
    """Env servers: ``num_servers`` of ``app`` on ``runtime``, or existing ``base_urls``.

    ``runtime: docker`` / ``podman`` runs hardened containers of ``image`` (``openenv-train
    build envs/blackjack_env --tag IMAGE``); ``relax`` names hardening defaults to turn off.
    """

    #: the env server app as module:attribute, started env.num_servers times
    app: str = "blackjack_env.server.app:app"
    #: env servers to start; sessions are spread over them
    num_servers: int = Field(2, ge=1)
    #: use these running servers instead of starting any
    base_urls: list[str] = Field(default_factory=list)
    #: seconds each server may take to answer /health
    startup_timeout_s: float = Field(60.0, gt=0)
    #: where servers run: local processes, hardened docker/podman containers, or a Ray fleet
    runtime: Literal["local", "docker", "podman", "ray"] = "local"
    ray: RaySettings = Field(default_factory=RaySettings)  # used when runtime: ray
    #: container image for runtime docker/podman (openenv-train build envs/blackjack_env)
    image: str | None = None
    engine: str | None = None  # an engine API URL; default: the runtime's own socket
    #: container hardening defaults to turn off (e.g. [read_only])
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

    #: model turns per episode before it is cut
    max_turns: int = Field(8, ge=1)
    #: tokens the model may generate per turn
    max_new_tokens: int = Field(4, ge=1)
    #: env sessions open at once
    max_concurrency: int = Field(512, ge=1)
    #: most sessions batched into one model call
    max_batch_size: int = Field(512, ge=1)
    #: true: the rollouts of a GRPO group play the same hand
    same_deal_per_group: bool = False
    #: reward of an episode whose answer is not a legal action
    invalid_action_reward: float = -1.0
    system_prompt: str | None = None  # e.g. "Answer hit or stand." for chat models (tiny: none)
    #: > 0: rollouts overlap training, played by weights at most this many optimizer steps old
    #: (the loss corrects with TRL's truncated importance ratio); 0: on-policy, synchronous
    max_staleness: int = Field(0, ge=0)


class GRPOSection(_Strict):
    """``trl.GRPOConfig`` settings; ``extra`` passes any other field."""

    #: GRPO optimizer steps (openenv-train train --max-steps overrides)
    max_steps: int = Field(800, ge=1)
    #: rollouts per group, compared with each other (>= 2)
    num_generations: int = 16
    #: episodes per step; a multiple of num_generations
    per_device_train_batch_size: int = 512
    #: batches accumulated per optimizer step
    gradient_accumulation_steps: int = Field(1, ge=1)
    #: AdamW learning rate (GRPOConfig's 1e-6 default barely moves a tiny model)
    learning_rate: float = Field(5e-4, gt=0)
    #: transformers scheduler name (cosine, linear, constant, ...)
    lr_scheduler_type: str = "cosine"
    #: KL penalty towards the reference model (0: none, no reference model kept)
    beta: float = Field(0.0, ge=0)
    #: sampling temperature of the rollouts
    temperature: float = Field(1.0, gt=0)
    #: TRL GRPO loss (dapo, grpo, dr_grpo, bnpo, ...)
    loss_type: str = "dapo"
    #: TRL advantage scaling: group, batch or none
    scale_rewards: str = "group"
    #: gradient clipping norm
    max_grad_norm: float = Field(1.0, gt=0)
    #: TRL's adaptive entropy bonus: keeps exploring instead of collapsing to always stand
    use_adaptive_entropy: bool = True
    #: entropy the adaptive bonus steers towards
    entropy_target: float = 0.15
    #: how fast the adaptive entropy coefficient moves per step
    entropy_coef_delta: float = 0.005
    #: longest completion (all turns of an episode) in tokens
    max_completion_length: int = Field(64, ge=1)
    #: train on the CPU (GRPOConfig.use_cpu)
    use_cpu: bool = True
    #: bfloat16 training (needs a GPU)
    bf16: bool = False
    #: recompute activations to save memory (off for tiny models)
    gradient_checkpointing: bool = False
    #: generate with vLLM (GPU, or the CPU backend in .venv-vllm)
    use_vllm: bool = False
    #: vLLM in the trainer's process (colocate) or a separate trl vllm-serve (server)
    vllm_mode: Literal["colocate", "server"] = "colocate"
    #: share of GPU memory vLLM may take (colocate)
    vllm_gpu_memory_utilization: float = Field(0.3, gt=0, le=1)
    #: steps between TRL log records (metrics.jsonl, report_to)
    logging_steps: int = Field(10, ge=1)
    #: torch CPU threads (1 is fastest for the tiny model; null: torch's default)
    torch_threads: int | None = Field(1, ge=1)
    #: forward/backward per completion-length bucket instead of padding every row to the
    #: longest (same loss up to float rounding; openenv_train.training.buckets)
    length_buckets: bool = True
    #: any other GRPOConfig field, passed as is (e.g. {warmup_ratio: 0.1})
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

    #: fresh seeded hands of the greedy evals before and after training
    hands: int = Field(20000, ge=1)
    #: optimizer steps between periodic greedy evals (the learning curve)
    every: int = Field(50, ge=1)
    #: validation hands per periodic eval (keep_best picks on these)
    periodic_hands: int = Field(10000, ge=1)
    #: seed of the evaluation hands (apart from the training deals)
    seed: int = 2_000_000_000
    #: also play the final eval through the env servers (checks the wire path)
    final_via_servers: bool = False
    #: Save the weights of the periodic eval with the best mean return (validation hands, seeded
    #: apart from the final eval's, so the final numbers stay unbiased) instead of the last step's.
    keep_best: bool = True


class RecipeConfig(_Strict):
    """The whole recipe: ``openenv-train train CONFIG`` loads this from YAML."""

    example: ClassVar[str] = "configs/grpo_blackjack_cpu.yaml"

    #: the recipe that runs this config
    recipe: Literal["grpo_blackjack"] = "grpo_blackjack"
    #: run name: everything lands in output_dir/name (--name overrides)
    name: str = Field("grpo_blackjack", pattern=r"^[A-Za-z0-9_.-]+$")
    #: folder of the run folders
    output_dir: str = "runs"
    #: seed of torch, the deals and the trainer
    seed: int = 0
    #: TRL report_to backends, e.g. [tensorboard] or [wandb] (metrics.jsonl and curve.png are always written)
    report_to: ReportTo = Field(default_factory=list)
    #: weight of a format reward (-1 for an answer that is not an action) beside the env's reward; 0: none
    format_reward_weight: float = 0.0
    #: a rich progress bar instead of TRL's printed log dicts
    progress: bool = True
    #: continue ``runs/<name>`` from its last trainer checkpoint (``openenv-train train --resume``)
    resume: bool = False
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

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.name

    def check_start(self) -> None:
        """What would otherwise fail after the warm-up: reporters and their packages, the env app."""
        try:
            check_reporters(self.report_to)
            if self.rollout.max_staleness and (self.env.runtime == "ray" or self.grpo.use_vllm):
                raise ValueError(
                    "rollout.max_staleness: overlap runs the in-process engine only; set it to 0 "
                    "with env.runtime: ray or grpo.use_vllm (TRL's AsyncGRPOTrainer is the vLLM path)"
                )
            if not self.env.base_urls and self.env.runtime in ("local", "ray"):
                import_target(self.env.app, "env.app", "blackjack_env.server.app:app")
        except ValueError as err:
            raise ConfigError(str(err)) from None

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


def _format(err: ValidationError, example: str = "configs/grpo_blackjack_cpu.yaml") -> str:
    lines = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            lines.append(f"{key}: unknown key; remove it or check its spelling (see {example})")
        else:
            msg = e["msg"].removeprefix("Value error, ")
            lines.append(msg if msg.startswith(key.split(".")[0]) else f"{key}: {msg}")
    return "invalid recipe config:\n  " + "\n  ".join(lines)


def parse_config(
    data: dict[str, Any], base: Path | None = None, schema: type[RecipeConfig] = RecipeConfig
) -> RecipeConfig:
    """A checked ``schema`` config from a dict; raises :class:`ConfigError` naming the key."""
    if not isinstance(data, dict):
        raise ConfigError(f"a recipe config must be a YAML mapping, got {type(data).__name__}")
    try:
        cfg = schema.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_format(err, schema.example)) from None
    cfg.check_paths(base)
    cfg.check_start()
    return cfg


def load_config(path: str | Path, schema: type[RecipeConfig] = RecipeConfig) -> RecipeConfig:
    """Load and check a YAML config; a relative model.path resolves against the working directory."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(
            f"config file {str(path)!r} does not exist; pass a YAML file like {schema.example}"
        )
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as err:
        raise ConfigError(f"{p}: not valid YAML: {err}") from None
    return parse_config(data or {}, base=Path.cwd(), schema=schema)
