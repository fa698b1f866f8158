"""The TRL side every GRPO recipe shares: env servers, the one ``GRPOConfig`` builder, the
trainer class (off-policy correction, length buckets), the rollout limits and the placeholder
dataset. The rollout function is ``rollout_builders.rollout_func_from_config``; the run around
them is ``lifecycle.py``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

if TYPE_CHECKING:
    from openenv_train.rollout.episode import RolloutConfig

    from .config import EngineRun, GRPORun, LocalEnvSection

console = Console()


def start_servers(cfg: GRPORun, env: LocalEnvSection | None = None) -> tuple[Any, list[str]]:
    """``(server group or None, base URLs)``: ``env.base_urls`` as given, or servers of
    ``env.runtime`` (the local-only section's servers are local processes). ``env``: an env
    section (a mixture member's); default ``cfg.env``."""
    from openenv_train.runtime import start_servers as start_env_servers

    env = cfg.env if env is None else env
    if env.base_urls:
        return None, list(env.base_urls)
    t0 = time.perf_counter()
    options = env.server_options()  # every env section has them (local: runtime "local")
    servers = start_env_servers(env.app, env.num_servers, **options)
    console.print(
        f"started {len(servers.base_urls)} {options['runtime']} env server(s) of {env.app} in {time.perf_counter() - t0:.1f}s"
    )
    return servers, list(servers.base_urls)


def rollout_config(cfg: EngineRun) -> RolloutConfig:
    """The engine's limits from the ``rollout`` section, every turn seeded from ``cfg.seed``."""
    from openenv_train.rollout import RolloutConfig

    r = cfg.rollout
    return RolloutConfig(
        max_turns=r.max_turns,
        max_new_tokens=r.max_new_tokens,
        max_concurrency=r.max_concurrency,
        max_batch_size=r.max_batch_size,
        # every episode turn draws from its own stream seeded from (seed, batch, row, turn):
        # two runs with one seed sample alike however the batcher groups the model calls
        episode_seed=cfg.seed,
        system_prompt=r.system_prompt,
    )


def reward_funcs(cfg: GRPORun) -> list[Any]:
    """The env's reward, plus the format reward where the config weights it."""
    from openenv_train.training import env_reward, format_reward

    return [env_reward] + ([format_reward] if getattr(cfg, "format_reward_weight", 0) else [])


def placeholder_dataset(cfg: GRPORun, prompt: str = "env") -> Any:
    """The ``rollout_func`` recipes' dataset: placeholder prompts (the env deals the games),
    enough rows for a few batches."""
    from datasets import Dataset

    rows = max(cfg.grpo.per_device_train_batch_size * 4, 64)
    return Dataset.from_dict({"prompt": [prompt] * rows})


#: ``grpo`` section fields passed to ``GRPOConfig`` under their own name, where a section has them
GRPO_FIELDS = (
    "max_steps",
    "num_generations",
    "per_device_train_batch_size",
    "gradient_accumulation_steps",
    "learning_rate",
    "lr_scheduler_type",
    "beta",
    "temperature",
    "loss_type",
    "importance_sampling_level",
    "scale_rewards",
    "max_grad_norm",
    "use_adaptive_entropy",
    "entropy_target",
    "entropy_coef_delta",
    "max_completion_length",
    "use_cpu",
    "bf16",
    "gradient_checkpointing",
    "use_vllm",
    "logging_steps",
)


def grpo_args(cfg: GRPORun, out: Path, **fields: Any) -> Any:
    """``trl.GRPOConfig`` from the ``grpo`` section, then ``fields`` (what only one recipe sets),
    then ``grpo.extra`` (any other GRPOConfig field, overriding).

    A trainer checkpoint (weights, optimizer, scheduler, step) is saved at every periodic eval,
    keeping the latest only: what ``--resume`` continues from."""
    from trl import GRPOConfig

    g = cfg.grpo
    if getattr(g, "use_vllm", False):
        from openenv_train.policy.vllm_cpu import patch_vllm_for_cpu_weight_sync

        patch_vllm_for_cpu_weight_sync()  # no-op on GPU
    kwargs: dict[str, Any] = {k: getattr(g, k) for k in GRPO_FIELDS if hasattr(g, k)}
    kwargs.update(
        output_dir=str(out / "trainer"),
        report_to=cfg.report_to or "none",
        save_strategy="steps",
        save_steps=cfg.eval.every,
        save_total_limit=1,
        seed=cfg.seed,
        disable_tqdm=cfg.progress,
        dataloader_num_workers=0,
    )
    rollout = getattr(cfg, "rollout", None)
    if getattr(rollout, "max_staleness", 0):  # TRL's correction, per token, truncated
        kwargs.update(
            vllm_importance_sampling_correction=True,
            vllm_importance_sampling_mode="token_truncate",
        )
    format_weight = getattr(cfg, "format_reward_weight", 0)
    if format_weight:
        kwargs["reward_weights"] = [1.0, format_weight]
    if getattr(g, "use_vllm", False):
        kwargs.update(
            vllm_mode=g.vllm_mode, vllm_gpu_memory_utilization=g.vllm_gpu_memory_utilization
        )
    kwargs.update(fields)
    overlap = set(kwargs) & set(g.extra)
    if overlap:
        console.print(f"[yellow]grpo.extra overrides {sorted(overlap)}[/]")
    kwargs.update(g.extra)
    try:
        return GRPOConfig(**kwargs)
    except TypeError as err:
        raise ValueError(f"grpo.extra: {err}; use GRPOConfig field names (trl 1.16)") from None


def trainer_class(cfg: GRPORun) -> Any:
    """TRL's ``GRPOTrainer``, subclassed for ``grpo.length_buckets`` (no forward pass over
    padding) and ``rollout.max_staleness`` > 0 (the loss corrects rows of older weights)."""
    from openenv_train.training.offpolicy import grpo_trainer_class

    staleness = getattr(getattr(cfg, "rollout", None), "max_staleness", 0)
    return grpo_trainer_class(
        off_policy=staleness > 0, length_buckets=getattr(cfg.grpo, "length_buckets", False)
    )
