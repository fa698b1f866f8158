"""Typed config of an ``AsyncGRPOTrainer`` run on our engine: the shared top-level keys and env
section (``openenv_train.training.config``), a vLLM server, and two pass-through dicts.

``rollout`` keys are ``RolloutConfig`` fields and ``trainer`` keys are ``AsyncGRPOConfig`` fields,
both checked by name at load time, so a typo fails before any server starts and the error names
the key (``trainer.max_stalenes``) and the fix. ``configs/grpo_blackjack_async_vllm.yaml`` is the
GPU setting (``recipe: async_grpo_blackjack``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from openenv_train.rollout.episode import RolloutConfig
from openenv_train.training import config, config_loader
from openenv_train.training.checks import check_reporters
from openenv_train.training.config import ConfigError, StrictModel

#: Trainer keys the runner sets itself (from the top-level keys and the vLLM section).
RUNNER_SETS = {
    "output_dir": "output_dir and name",
    "vllm_server_base_url": "vllm.base_url",
    "report_to": "the top-level report_to",
}


class ModelSection(StrictModel):
    """A saved model folder (tokenizer.json: loaded as a word-level tiny model) or a hub id."""

    #: a folder saved with save_pretrained, or a hub id (with hub: true)
    path: str
    #: true: model.path is a hub id
    hub: bool = False


class EnvSection(config.LocalEnvSection):
    """``num_servers`` local servers of ``app``, played through the ``TextEnvSpec`` ``spec``
    (``module:Class``, built with ``spec_kwargs``)."""

    #: the env server app as module:attribute
    app: str
    #: seconds each server may take to answer /health
    startup_timeout_s: float = Field(120.0, gt=0)
    #: the env's TextEnvSpec subclass, module:Class
    spec: str
    #: keyword arguments the spec class is built with
    spec_kwargs: dict[str, Any] = Field(default_factory=dict)


class VLLMSection(StrictModel):
    """``base_url``: a running server (required on GPU, started as the README says); ``null``
    starts one here on CPU (``VLLMServer(reloadable=True)``) and stops it at the end."""

    #: URL of a running vLLM server (null: start one here, CPU only)
    base_url: str | None = None
    #: the model name the server serves
    served_model_name: str = "policy"
    #: context length of a server started here
    max_model_len: int = Field(512, ge=16)
    #: sequences a server started here batches at once
    max_num_seqs: int = Field(64, ge=1)
    #: seconds a server started here may take to come up
    startup_timeout_s: float = Field(600.0, gt=0)


class WorkerSection(StrictModel):
    #: groups the rollout worker plays at once
    max_inflight_groups: int = Field(2, ge=1)
    #: the dataset's prompts (the env deals the games; placeholders)
    prompts: list[Any] = Field(default_factory=lambda: [""])


class AsyncRunConfig(config.RunConfig):
    """``openenv-train train configs/grpo_blackjack_async_vllm.yaml`` loads this from YAML."""

    example: ClassVar[str] = "configs/grpo_blackjack_async_vllm.yaml"
    #: the recipe that runs this config
    recipe: Literal["async_grpo_blackjack"] = "async_grpo_blackjack"
    #: torch threads of the trainer process (1 on small CPU machines: oversubscribed threads
    #: make tiny models' steps many times slower); null keeps torch's default
    torch_threads: int | None = Field(None, ge=1)
    #: the policy model
    model: ModelSection
    #: the env servers and the env's text spec
    env: EnvSection
    #: the vLLM server that generates
    vllm: VLLMSection = Field(default_factory=VLLMSection)
    #: the rollout worker
    worker: WorkerSection = Field(default_factory=WorkerSection)
    #: RolloutConfig fields (openenv_train.rollout), checked by name
    rollout: dict[str, Any] = Field(default_factory=dict)
    #: AsyncGRPOConfig fields (trl.experimental.async_grpo), checked by name; max_steps required
    trainer: dict[str, Any] = Field(default_factory=dict)

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

    def check_start(self) -> None:
        """Reporters only: the model and the env's modules are checked when the run starts."""
        check_reporters(self.report_to)

    def rollout_config(self) -> RolloutConfig:
        return RolloutConfig(**self.rollout)


def load_config(source: str | Path | dict[str, Any]) -> AsyncRunConfig:
    """The checked config from a YAML file (or an already parsed dict); raises
    :class:`ConfigError` naming the key."""
    if isinstance(source, dict):
        return config_loader.parse_config(source, AsyncRunConfig)
    return config_loader.load_config(source, AsyncRunConfig)


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


__all__ = ["AsyncRunConfig", "ConfigError", "cpu_config", "load_config"]
