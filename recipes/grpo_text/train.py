"""GRPO on your own text env: the env app, its ``TextEnvSpec`` and the vocabulary come from the
config; everything else (tiny model or a saved/hub one, format warm-up on the spec's
``random_episode``, env servers, TRL's GRPOTrainer with the batched rollout engine, greedy evals
through the servers, checkpoints, Ctrl-C, resume) is shared with the BlackJack recipe
(``recipes.common``).

Run: ``openenv-train train configs/grpo_text_countdown.yaml``.
"""

from __future__ import annotations

import sys
from typing import Any

from openenv_train.training import model as common_model

from .config import TextRecipeConfig, load_config


def run(cfg: TextRecipeConfig) -> dict[str, Any]:
    """Train and evaluate as ``cfg`` says; returns the summary also written to summary.json."""
    from openenv_train.training.grpo import train

    from .evaluate import TextEnvEval

    spec = cfg.make_spec()

    def load_model(log: Any, warmup: bool) -> tuple[Any, Any]:
        sample = cfg.warmup_episodes(spec)
        return common_model.load_model(cfg, cfg.vocabulary(), sample, log, warmup=warmup)

    return train(
        cfg,
        make_spec=lambda: cfg.make_spec(seed=cfg.seed) if hasattr(spec, "seed") else spec,
        load_model=load_model,
        make_evals=lambda model, tok, metrics, t0, urls: TextEnvEval(
            cfg, model, tok, metrics, urls, started=t0
        ),
    )


def main(argv: list[str] | None = None) -> int:
    from openenv_train.training.grpo import main as recipe_main

    return recipe_main(argv, "recipes.grpo_text.train", load_config, run)


if __name__ == "__main__":
    sys.exit(main())
