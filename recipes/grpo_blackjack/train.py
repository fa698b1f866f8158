"""GRPO BlackJack: a model learns hit/stand through TRL's GRPOTrainer on real local env servers.

config -> model (tiny Llama built here + format warm-up, or a folder / hub model) -> N BlackJack
servers (local processes or docker/podman containers) -> GRPOTrainer(rollout_func=the batched
rollout engine over the servers) -> train -> save. The run (run folder, Ctrl-C, checkpoints,
resume) is ``openenv_train.training.grpo.train``; evaluation (greedy evals before, during and after beside
the baselines, the best weights, curve.png and summary.json) is ``evaluate.TrainingEval``.
Everything lands in ``runs/<name>/``.

Run: ``openenv-train train configs/grpo_blackjack_cpu.yaml`` (or ``python -m recipes.grpo_blackjack.train CONFIG``).
"""

from __future__ import annotations

import sys
from typing import Any

from openenv_train.training import model as common_model

from .config import RecipeConfig, load_config


def run(cfg: RecipeConfig) -> dict[str, Any]:
    """Train and evaluate as ``cfg`` says; returns the summary also written to summary.json."""
    from openenv_train.training.grpo import train

    from .evaluate import TrainingEval

    def make_spec() -> Any:
        from blackjack_env.text_spec import BlackjackTextSpec

        return BlackjackTextSpec(
            seed=cfg.seed,
            same_deal_per_group=cfg.rollout.same_deal_per_group,
            invalid_action_reward=cfg.rollout.invalid_action_reward,
        )

    return train(
        cfg,
        make_spec=make_spec,
        load_model=lambda log, warmup: load_model(cfg, log, warmup=warmup),
        make_evals=lambda model, tok, metrics, t0, _urls: TrainingEval(
            cfg, model, tok, metrics, started=t0
        ),
        prompt="blackjack",
    )


def load_model(cfg: RecipeConfig, log: Any, *, warmup: bool = True) -> tuple[Any, Any]:
    """The tiny Llama over BlackJack's words, a saved folder or a hub model; then the format
    warm-up (``model.warmup_steps``) on random-action games."""
    from blackjack_env.text_spec import VOCABULARY, random_episode

    return common_model.load_model(cfg, VOCABULARY, random_episode, log, warmup=warmup)


def build_tiny(t: Any) -> tuple[Any, Any]:
    """``(model, tokenizer)``: the tiny Llama of a ``model.tiny`` section over BlackJack's words."""
    from blackjack_env.text_spec import VOCABULARY

    return common_model.build_tiny(t, VOCABULARY)


def warm_up(model: Any, tokenizer: Any, m: Any, seed: int, log: Any) -> None:
    """The format warm-up of the ``model`` section on random-action BlackJack games."""
    from blackjack_env.text_spec import random_episode

    common_model.warm_up(model, tokenizer, m, seed, log, random_episode)


def main(argv: list[str] | None = None) -> int:
    from openenv_train.training.grpo import main as recipe_main

    return recipe_main(argv, "recipes.grpo_blackjack.train", load_config, run)


if __name__ == "__main__":
    sys.exit(main())
