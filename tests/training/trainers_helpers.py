"""A small real TRL GRPO trainer over a rollout function, shared by the trainer tests."""

from __future__ import annotations

from typing import Any


def tiny_grpo_trainer(
    model: Any,
    tok: Any,
    rollout_func: Any,
    tmp_path: Any,
    *,
    cls: type | None = None,
    max_steps: int = 2,
    reward_funcs: list[Any] | None = None,
    **overrides: Any,
) -> Any:
    """``cls`` (default ``GRPOTrainer``) on BlackJack placeholder prompts: 16 rows in groups of
    4, lr 1e-2 (big on purpose: a few steps must move the weights visibly); ``overrides`` go to
    ``GRPOConfig``."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from openenv_train.training import env_reward

    settings: dict[str, Any] = dict(
        output_dir=str(tmp_path / "trainer"),
        max_steps=max_steps,
        num_generations=4,
        per_device_train_batch_size=16,
        learning_rate=1e-2,
        beta=0.0,
        loss_type="dapo",
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        max_completion_length=64,
        report_to="none",
        save_strategy="no",
        logging_steps=1,
        disable_tqdm=True,
        use_adaptive_entropy=True,
        entropy_target=0.15,
    )
    settings.update(overrides)
    return (cls or GRPOTrainer)(
        model=model,
        reward_funcs=reward_funcs or [env_reward],
        args=GRPOConfig(**settings),
        train_dataset=Dataset.from_dict({"prompt": ["blackjack"] * 64}),
        processing_class=tok,
        rollout_func=rollout_func,
    )
