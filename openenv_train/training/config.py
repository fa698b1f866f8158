"""The one config schema of the recipes: strict sections and a run base (no I/O: loading is
``config_loader.py``, the checks that reach servers or the filesystem run at start, ``checks.py``).

A recipe's ``config.py`` subclasses what it needs: a section to change a default or add a key,
:class:`RunConfig` to declare its ``recipe`` name and sections. Unknown keys are rejected; a
wrong value fails with a :class:`ConfigError` that names the YAML key (``grpo.num_generations``)
and the fix. A key is documented by the ``#:`` comment above it (``openenv-train config-keys``
reads those for the README tables).

Sections come in two sizes where a recipe cannot honor every key: :class:`LocalModelSection`
(a folder or the tiny Llama) under :class:`ModelSection` (also hub models and chat templates),
:class:`LocalEnvSection` (local servers) under :class:`EnvSection` (containers, Ray),
:class:`EngineSection` under :class:`RolloutSection`, :class:`CoreGRPOSection` under
:class:`GRPOSection`. The defaults are the BlackJack CPU demo's. A new section is one class here
and one field on the recipes that take it; :class:`LoraSection` is on :class:`RunConfig`, so every
recipe takes it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StringConstraints,
    model_validator,
)

from openenv_train.runtime.ray_cluster import RaySettings

from .checks import ConfigError as ConfigError  # re-exported: the error every config check raises
from .checks import ReportTo, check_reporters, import_target


class StrictModel(BaseModel):
    """A config section: unknown keys are errors, and so are wrong values set after loading."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class TinyModel(StrictModel):
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


class LocalModelSection(StrictModel):
    """``path``: a folder saved with ``save_pretrained``; ``null`` builds the tiny model here."""

    #: a folder saved with save_pretrained, or null to build the tiny Llama
    path: str | None = None
    #: the tiny Llama built when model.path is null
    tiny: TinyModel = Field(default_factory=TinyModel)
    #: format warm-up batches of random-action games before GRPO (0: none)
    warmup_steps: int = Field(300, ge=0)
    #: games per format warm-up batch
    warmup_batch_size: int = Field(64, ge=1)
    #: learning rate of the format warm-up
    warmup_learning_rate: float = Field(3e-3, gt=0)


class ModelSection(LocalModelSection):
    """Also a hub id (``hub: true``), with chat-template arguments (``training/model.py`` loads it)."""

    #: true: model.path is a hub id loaded with AutoModelForCausalLM / AutoTokenizer
    hub: bool = False
    #: "all": the warm-up also predicts the env's text, so the model learns to read the state
    #: (openenv_train.training.format_warmup); "answers": answer tokens only.
    warmup_loss_on: Literal["all", "answers"] = "all"
    #: extra arguments of every apply_chat_template call (chat models)
    chat_template_kwargs: dict[str, Any] = Field(
        default_factory=dict
    )  # e.g. {enable_thinking: false}


class LoraSection(StrictModel):
    """LoRA adapters (peft) on the policy instead of full fine-tuning; ``r: 0`` (the default) is off.
    The run folder then holds the adapter (``model/``) beside its base (``base/``);
    ``openenv-train export RUN --merge`` writes one merged model."""

    #: adapter rank (0: off, full fine-tuning)
    r: int = Field(0, ge=0)
    #: LoRA scaling numerator (the update is scaled by alpha / r)
    alpha: float = Field(16.0, gt=0)
    #: dropout on the adapter's input while training
    dropout: float = Field(0.0, ge=0, lt=1)
    #: module names that get adapters ("all-linear": every linear layer but the output head)
    target_modules: list[str] | Literal["all-linear"] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"]
    )

    @property
    def enabled(self) -> bool:
        return self.r > 0


class LocalEnvSection(StrictModel):
    """``num_servers`` local processes of ``app``, or existing ``base_urls``."""

    #: the env server app as module:attribute, started env.num_servers times
    app: str = "blackjack_env.server.app:app"
    #: env servers to start; sessions are spread over them
    num_servers: int = Field(2, ge=1)
    #: use these running servers instead of starting any
    base_urls: list[str] = Field(default_factory=list)
    #: seconds each server may take to answer /health
    startup_timeout_s: float = Field(60.0, gt=0)

    def server_options(self) -> dict[str, Any]:
        """Keyword arguments of ``openenv_train.runtime.start_servers`` for this section."""
        return {"runtime": "local", "startup_timeout": self.startup_timeout_s}


def build_command(app: str) -> str:
    """``openenv-train build FOLDER --tag IMAGE`` for the env package of ``app``: FOLDER holds
    ``<package>/server/app.py`` (found without importing the package)."""
    import importlib.util

    package = app.split(":")[0].split(".")[0]
    folder = "ENV_FOLDER"
    try:
        found = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        found = None
    if found is not None and found.origin:
        where = os.path.relpath(Path(found.origin).parent.parent)
        folder = where if not where.startswith("..") else str(Path(found.origin).parent.parent)
    return f"openenv-train build {folder} --tag openenv-train/{package}:latest"


class VenvSettings(StrictModel):
    """``env.runtime: venv``: the env servers run under a venv of the env package's own
    requirements (built once, cached by their hash), beside the trainer's interpreter."""

    #: requirements that replace the env package's own (null: its pyproject/metadata ones)
    requirements: list[str] | None = None
    #: where venvs are cached (null: $OPENENV_TRAIN_CACHE, else ~/.cache/openenv-train)
    cache_dir: str | None = None


class EnvSection(LocalEnvSection):
    """Env servers on ``runtime``: local processes, hardened containers of ``image`` (``openenv-train
    build ENV_FOLDER --tag IMAGE``; ``relax`` turns hardening defaults off) or a Ray fleet."""

    #: where servers run: local processes (venv: under the env's own venv), hardened
    #: docker/podman containers, or a Ray fleet
    runtime: Literal["local", "venv", "docker", "podman", "ray"] = "local"
    ray: RaySettings = Field(default_factory=RaySettings)  # used when runtime: ray
    venv: VenvSettings = Field(default_factory=VenvSettings)  # used when runtime: venv
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
                f"`{build_command(self.app)}`"
            )
        return self

    def server_options(self) -> dict[str, Any]:
        opts = {**super().server_options(), "runtime": self.runtime}
        if self.runtime == "ray":
            opts.update(self.ray.fleet_options())
        elif self.runtime == "venv":
            opts.update(requirements=self.venv.requirements, cache_dir=self.venv.cache_dir)
        elif self.runtime != "local":
            opts.update(image=self.image, relax=self.relax, engine=self.engine or self.runtime)
        return opts


#: An env's name in a mixture: its ``env/<name>/<metric>`` keys and trajectory records.
EnvName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]+$")]


class MixtureMemberSection(EnvSection):
    """One env of ``env.mixture``: every key of a single-env ``env`` section (servers, runtime,
    image), its text spec, a ``name`` and a sampling ``weight``. A catalog env's name
    (``openenv-train envs``) fills ``app`` (and ``spec`` where the catalog entry names one)."""

    #: the env's name: metric keys env/<name>/<metric>; a catalog name fills app (and spec)
    name: EnvName
    #: share of GRPO groups dealt to this env (weights are normalised over the mixture)
    weight: float = Field(1.0, gt=0)
    #: the env server app, module:attribute (null: the catalog entry's app)
    app: str | None = None  # type: ignore[assignment]
    #: env server processes (or containers) to start for this env
    num_servers: int = Field(1, ge=1)
    #: the env's TextEnvSpec subclass, module:Class (null: the catalog entry's text_spec_path)
    spec: str | None = None
    #: keyword arguments the spec class is built with
    spec_kwargs: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _from_catalog(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            return data
        if data.get("app") and data.get("spec"):
            return data
        from openenv_train.catalog import BrokenEnvEntryError, UnknownEnvError, get_entry

        try:
            entry = get_entry(data["name"])
        except (UnknownEnvError, BrokenEnvEntryError):
            return data  # _complete names what is missing
        spec = getattr(entry, "text_spec_path", None)
        return {"app": entry.app, **({"spec": spec} if spec else {}), **data}

    @model_validator(mode="after")
    def _complete(self) -> MixtureMemberSection:
        for key, example in (("app", "my_env.server.app:app"), ("spec", "my_env.text_spec:MySpec")):
            if not getattr(self, key):
                raise ValueError(
                    f"env.mixture: member {self.name!r} has no {key}; set {key}: ({example}) "
                    "or name a catalog env that provides it (openenv-train envs)"
                )
        return self


class MixtureEnvSection(EnvSection):
    """An ``env`` section that may name several envs: ``mixture: [{name, weight, app, spec}, ...]``
    trains one model on all of them (each GRPO group plays one env, drawn by weight); empty: the
    section's own env alone."""

    #: several envs in one run, each {name, weight, app, spec, spec_kwargs, num_servers, ...}
    mixture: list[MixtureMemberSection] = Field(default_factory=list)

    @model_validator(mode="after")
    def _mixture(self) -> MixtureEnvSection:
        names = [m.name for m in self.mixture]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(
                f"env.mixture: env name(s) {dupes} appear more than once; give each member its own name"
            )
        if len(self.mixture) == 1:
            raise ValueError(
                "env.mixture: one member is no mixture; list two or more envs, or drop "
                "env.mixture and configure the env in the env section itself"
            )
        return self


class EngineSection(StrictModel):
    """The rollout engine's turn and batching limits (``openenv_train.rollout.RolloutConfig``)."""

    #: model turns per episode before it is cut
    max_turns: int = Field(8, ge=1)
    #: tokens the model may generate per turn
    max_new_tokens: int = Field(4, ge=1)
    #: env sessions open at once
    max_concurrency: int = Field(512, ge=1)
    #: most sessions batched into one model call
    max_batch_size: int = Field(512, ge=1)


class RolloutSection(EngineSection):
    """The engine under TRL's ``rollout_func`` (``training/grpo.py``), optionally overlapped."""

    system_prompt: str | None = None  # e.g. "Answer hit or stand." for chat models (tiny: none)
    #: > 0: rollouts overlap training, played by weights at most this many optimizer steps old
    #: (the loss corrects with TRL's truncated importance ratio); 0: on-policy, synchronous
    max_staleness: int = Field(0, ge=0)


#: the GRPO losses of TRL 1.16's ``GRPOConfig.loss_type``
LossType = Literal["grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo"]


class CoreGRPOSection(StrictModel):
    """The ``trl.GRPOConfig`` settings every GRPO recipe takes; ``extra`` passes any other field."""

    #: GRPO optimizer steps (openenv-train train --max-steps overrides)
    max_steps: int = Field(800, ge=1)
    #: rollouts per group, compared with each other (>= 2)
    num_generations: int = 16
    #: episodes per step; a multiple of num_generations
    per_device_train_batch_size: int = 512
    #: AdamW learning rate (GRPOConfig's 1e-6 default barely moves a tiny model)
    learning_rate: float = Field(5e-4, gt=0)
    #: transformers scheduler name (cosine, linear, constant, ...)
    lr_scheduler_type: str = "cosine"
    #: KL penalty towards the reference model (0: none, no reference model kept)
    beta: float = Field(0.0, ge=0)
    #: sampling temperature of the rollouts
    temperature: float = Field(1.0, gt=0)
    #: TRL GRPO loss: dapo (default; no length bias), grpo, dr_grpo, bnpo, cispo, sapo, luspo
    #: (with importance_sampling_level: sequence), vespo; docs/how-to/grpo-losses.md says which
    #: to pick for what. A loss a newer TRL adds: grpo.extra: {loss_type: NAME}
    loss_type: LossType = "dapo"
    #: where the policy ratio is taken: per token, or one per sequence (GSPO: with loss_type grpo)
    importance_sampling_level: Literal["token", "sequence"] = "token"
    #: longest completion (all turns of an episode) in tokens
    max_completion_length: int = Field(64, ge=1)
    #: train on the CPU (GRPOConfig.use_cpu)
    use_cpu: bool = True
    #: bfloat16 training (needs a GPU)
    bf16: bool = False
    #: steps between TRL log records (metrics.jsonl, report_to)
    logging_steps: int = Field(10, ge=1)
    #: torch CPU threads (1 is fastest for the tiny model; null: torch's default)
    torch_threads: int | None = Field(1, ge=1)
    #: any other GRPOConfig field, passed as is (e.g. {warmup_ratio: 0.1})
    extra: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _sizes(self) -> CoreGRPOSection:
        if self.num_generations < 2:
            tested = type(self).model_fields["num_generations"].default
            raise ValueError(
                f"grpo.num_generations={self.num_generations}: GRPO compares rollouts within a group, "
                f"so it needs >= 2 ({tested} is the tested value)"
            )
        accumulated = "gradient_accumulation_steps" in type(self).model_fields
        batch = self.per_device_train_batch_size * getattr(self, "gradient_accumulation_steps", 1)
        if batch % self.num_generations:
            named = "grpo.per_device_train_batch_size" + (
                " * gradient_accumulation_steps" if accumulated else ""
            )
            raise ValueError(
                f"{named} = {batch} is not divisible by grpo.num_generations={self.num_generations}; "
                f"use a multiple, e.g. {max(1, batch // self.num_generations) * self.num_generations}"
            )
        return self


class GRPOSection(CoreGRPOSection):
    """Also what the ``rollout_func`` trainer adds (``training/grpo.py``, ``offpolicy.py``):
    accumulation, adaptive entropy, vLLM generation, length buckets."""

    #: batches accumulated per optimizer step
    gradient_accumulation_steps: int = Field(1, ge=1)
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
    #: recompute activations to save memory (off for tiny models)
    gradient_checkpointing: bool = False
    #: generate with vLLM (GPU, or the CPU backend in .venv-vllm)
    use_vllm: bool = False
    #: vLLM in the trainer's process (colocate) or a separate trl vllm-serve (server)
    vllm_mode: Literal["colocate", "server"] = "colocate"
    #: share of GPU memory vLLM may take (colocate)
    vllm_gpu_memory_utilization: float = Field(0.3, gt=0, le=1)
    #: forward/backward per completion-length bucket instead of padding every row to the
    #: longest (same loss up to float rounding; openenv_train.training.buckets)
    length_buckets: bool = True


class EvalSection(StrictModel):
    """Greedy evals before, during (the curve; ``keep_best`` picks on them) and after training;
    a recipe adds how many games each plays, in its env's words (hands, games, episodes)."""

    #: optimizer steps between periodic greedy evals (the learning curve)
    every: int = Field(50, ge=1)
    #: seed of the evaluation games (apart from the training games)
    seed: int = 2_000_000_000
    #: Save the weights of the periodic eval with the best mean return (validation games, seeded
    #: apart from the final eval's, so the final numbers stay unbiased) instead of the last step's.
    keep_best: bool = True
    #: episodes of each periodic eval saved to ``trajectories/step_NNNNNN.jsonl`` for
    #: ``openenv-train view`` (the first ones played, decoded turn by turn); 0 saves none
    trajectories: int = Field(16, ge=0, le=1000)


#: A run name: a folder name under ``output_dir``.
RunName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.-]+$")]


class RunConfig(StrictModel):
    """The top-level keys of every recipe; a recipe narrows ``recipe`` and adds its sections."""

    #: the shipped config shown when a key is unknown
    example: ClassVar[str] = "configs/grpo_blackjack_cpu.yaml"

    #: the recipe that runs this config
    recipe: str
    #: run name: everything lands in output_dir/name (--name overrides)
    name: RunName
    #: folder of the run folders
    output_dir: str = "runs"
    #: seed of torch, the env's games and the trainer
    seed: int = 0
    #: TRL report_to backends, e.g. [tensorboard] or [wandb] (metrics.jsonl and curve.png are always written)
    report_to: ReportTo = Field(default_factory=list)
    #: serve the trainer's Prometheus /metrics on 127.0.0.1:PORT while the run lasts (0: a free port, printed; unset: none)
    metrics_port: int | None = Field(None, ge=0, le=65535)
    #: a rich progress bar instead of printed log lines
    progress: bool = True
    #: continue ``runs/<name>`` from its last trainer checkpoint (``openenv-train train --resume``)
    resume: bool = False
    #: LoRA adapters instead of full fine-tuning (off while lora.r is 0)
    lora: LoraSection = Field(default_factory=LoraSection)

    #: the YAML file this config was loaded from (the resume hint names it)
    _source: str | None = PrivateAttr(default=None)

    @property
    def source(self) -> str | None:
        """How this config was given: its YAML path (and ``--set`` flags); the resume hint."""
        return self._source

    def given_as(self, source: str) -> None:
        """Record how the config was given (``openenv-train train`` adds its ``--set`` flags)."""
        self._source = source

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.name

    def check_start(self) -> None:
        """That what the config names can be imported here (``config_loader.parse_config`` runs
        it after validation): the reporters' packages, the env app (unless it runs elsewhere:
        given ``base_urls``, a container runtime). A recipe extends it for its own names. No
        network, no files: those checks run when the run starts (``checks.start_checks``)."""
        check_reporters(self.report_to)
        env = getattr(self, "env", None)
        if not isinstance(env, LocalEnvSection) or env.base_urls:
            return
        if getattr(env, "runtime", "local") in ("local", "ray"):
            example = type(env).model_fields["app"].default
            import_target(env.app, "env.app", example if isinstance(example, str) else "my_env:app")


class GRPORun(Protocol):
    """What the shared GRPO helpers (``grpo.py``, ``model.py``, ``lifecycle.py``, ``evals.py``)
    read of a recipe's config: a :class:`RunConfig` with ``model``, ``env``, ``grpo`` and
    ``eval`` sections (any subclass of each). Read-only, so a recipe's narrower sections fit."""

    @property
    def name(self) -> str: ...
    @property
    def seed(self) -> int: ...
    @property
    def report_to(self) -> list[str]: ...
    @property
    def progress(self) -> bool: ...
    @property
    def resume(self) -> bool: ...
    @property
    def run_dir(self) -> Path: ...
    @property
    def source(self) -> str | None: ...
    @property
    def lora(self) -> LoraSection: ...
    @property
    def model(self) -> LocalModelSection: ...
    @property
    def env(self) -> LocalEnvSection: ...
    @property
    def grpo(self) -> CoreGRPOSection: ...
    @property
    def eval(self) -> EvalSection: ...
    def model_dump_json(self, *, indent: int | None = None) -> str: ...


class EngineRun(GRPORun, Protocol):
    """A :class:`GRPORun` whose rollouts run on the engine: it also has a ``rollout`` section."""

    @property
    def rollout(self) -> RolloutSection: ...
