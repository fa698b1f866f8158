"""Typed config of an ``AsyncGRPOTrainer`` run on our engine, loaded from YAML.

Unknown keys are rejected; ``rollout`` keys are ``RolloutConfig`` fields and ``trainer`` keys are
``AsyncGRPOConfig`` fields, both checked by name at load time, so a typo fails before any server
starts and the error names the key (``trainer.max_stalenes``) and the fix.
``configs/grpo_blackjack_async_vllm.yaml`` is the GPU setting (``recipe: async_grpo_blackjack``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from openenv_train.rollout.episode import RolloutConfig

#: Trainer keys the runner sets itself (from ``output_dir``/``name`` and the vLLM section).
RUNNER_SETS = {"output_dir": "output_dir and name", "vllm_server_base_url": "vllm.base_url"}


class ConfigError(ValueError):
    """A config value is wrong; the message names the key and the fix."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSection(_Strict):
    """A local model folder (tokenizer.json: loaded as a word-level tiny model) or a hub id."""

    path: str
    hub: bool = False


class EnvSection(_Strict):
    """``num_servers`` local servers of ``app``, played through the ``TextEnvSpec`` ``spec``
    (``module:Class``, built with ``spec_kwargs``)."""

    app: str
    spec: str
    spec_kwargs: dict[str, Any] = Field(default_factory=dict)
    num_servers: int = Field(2, ge=1)


class VLLMSection(_Strict):
    """``base_url``: a running server (required on GPU, started as the README says); ``null``
    starts one here on CPU (``VLLMServer(reloadable=True)``) and stops it at the end."""

    base_url: str | None = None
    served_model_name: str = "policy"
    max_model_len: int = Field(512, ge=16)
    max_num_seqs: int = Field(64, ge=1)
    startup_timeout_s: float = Field(600.0, gt=0)


class WorkerSection(_Strict):
    max_inflight_groups: int = Field(2, ge=1)
    prompts: list[Any] = Field(default_factory=lambda: [""])


class AsyncRunConfig(_Strict):
    #: the recipe that runs this config
    recipe: Literal["async_grpo_blackjack"] = "async_grpo_blackjack"
    name: str
    output_dir: str = "runs"
    seed: int = 0
    #: torch threads of the trainer process (1 on small CPU machines: oversubscribed threads
    #: make tiny models' steps many times slower); null keeps torch's default
    torch_threads: int | None = Field(None, ge=1)
    model: ModelSection
    env: EnvSection
    vllm: VLLMSection = Field(default_factory=VLLMSection)
    worker: WorkerSection = Field(default_factory=WorkerSection)
    rollout: dict[str, Any] = Field(default_factory=dict)
    trainer: dict[str, Any] = Field(default_factory=dict)
    #: continue ``output_dir/name`` from its last trainer checkpoint (``openenv-train train --resume``)
    resume: bool = False

    @field_validator("rollout")
    @classmethod
    def _rollout_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        known = {f.name for f in dataclasses.fields(RolloutConfig)}
        for key in value:
            if key not in known:
                raise ValueError(
                    f"rollout.{key}: not a RolloutConfig field; use one of {sorted(known)}"
                )
        RolloutConfig(**value)  # its own range checks
        return value

    @field_validator("trainer")
    @classmethod
    def _trainer_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        from trl.experimental.async_grpo import AsyncGRPOConfig

        known = {f.name for f in dataclasses.fields(AsyncGRPOConfig)}
        for key in value:
            if key in RUNNER_SETS:
                raise ValueError(f"trainer.{key}: set by the runner; use {RUNNER_SETS[key]}")
            if key not in known:
                raise ValueError(
                    f"trainer.{key}: not an AsyncGRPOConfig field (trl.experimental.async_grpo)"
                )
        if value.get("max_steps", 0) <= 0:
            raise ValueError(
                "trainer.max_steps: set it > 0; the worker plays envs without end, so the "
                "trainer needs a step count"
            )
        return value

    def rollout_config(self) -> RolloutConfig:
        return RolloutConfig(**self.rollout)


def load_config(source: str | Path | dict[str, Any]) -> AsyncRunConfig:
    """The checked config from a YAML file (or an already parsed dict)."""
    if isinstance(source, dict):
        raw: Any = source
    else:
        path = Path(source)
        if not path.is_file():
            raise ConfigError(f"config: {path} does not exist")
        raw = yaml.safe_load(path.read_text())
    if not isinstance(raw, dict):
        raise ConfigError(f"config: expected a mapping of sections, got {type(raw).__name__}")
    try:
        return AsyncRunConfig.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{key}: {first['msg']}") from None


#: Trainer settings every CPU run needs (TRL's defaults assume a GPU: bf16, checkpointing).
CPU_TRAINER = {"use_cpu": True, "bf16": False, "gradient_checkpointing": False, "token_budget": 0}


def cpu_config(
    model_dir: str | Path,
    *,
    app: str,
    spec: str,
    spec_kwargs: dict[str, Any] | None = None,
    base_url: str | None = None,
    served_model_name: str = "policy",
    name: str = "async_grpo_cpu",
    output_dir: str | Path = "runs",
    **trainer: Any,
) -> AsyncRunConfig:
    """A checked config for a CPU run of a saved (tiny) model: one torch thread, fp32, the
    ``CPU_TRAINER`` settings, then ``trainer`` (``AsyncGRPOConfig`` fields; ``max_steps`` needed)."""
    return load_config(
        {
            "name": name,
            "output_dir": str(output_dir),
            "torch_threads": 1,
            "model": {"path": str(model_dir)},
            "env": {"app": app, "spec": spec, "spec_kwargs": dict(spec_kwargs or {})},
            "vllm": {"base_url": base_url, "served_model_name": served_model_name},
            "trainer": {**CPU_TRAINER, **trainer},
        }
    )
