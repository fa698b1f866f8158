"""``openenv-train eval runs/<name>/model``: greedy play of a saved BlackJack model on fresh
seeded hands beside the baselines (the game-side evaluation is ``blackjack_env.evaluation``)."""

from __future__ import annotations

from pathlib import Path

from blackjack_env.evaluation import COLUMNS, baselines, evaluate_policy
from rich.console import Console

from openenv_train.training.periodic_evals import results_table

from .config import EvalSection


def evaluate_saved_model(
    model_dir: str | Path, *, episodes: int | None = None, seed: int | None = None
) -> dict[str, dict[str, float]]:
    """The recipe's evaluator: the model beside the baselines on the same hands (defaults: the
    config's 20,000 hands and eval seed)."""
    import torch

    from openenv_train.policy.tiny import load_tiny_model
    from openenv_train.policy.transformers_policy import TransformersPolicy

    hands = episodes or EvalSection().hands
    seed = EvalSection().seed if seed is None else seed
    torch.set_num_threads(1)  # tiny models: more threads only spin
    model, tokenizer = load_tiny_model(model_dir)
    rows = {"model": evaluate_policy(TransformersPolicy(model, tokenizer), hands, seed)}
    rows.update(baselines(hands, seed))
    title = f"{model_dir} ({hands} fresh hands, greedy)"
    Console().print(results_table(title, rows, COLUMNS))
    return rows
