"""GRPO on your own text env: the env app, its ``TextEnvSpec`` and the vocabulary come from the
config; the rest is the BlackJack recipe's pipeline: env servers, a tiny model (or a saved/hub
one) with the format warm-up on the spec's ``random_episode``, TRL's GRPOTrainer with the batched
rollout engine, greedy evals through the servers, and the run's lifecycle (checkpoints, Ctrl-C,
--resume: ``openenv_train.training.lifecycle``).

Run: ``openenv-train train configs/grpo_text_countdown.yaml``.
"""

from __future__ import annotations

import sys
from typing import Any

from openenv_train.training.evals import Evals, EvalSpec
from openenv_train.training.grpo import (
    grpo_args,
    placeholder_dataset,
    reward_funcs,
    start_servers,
    trainer_class,
    trainer_rollout_func,
)
from openenv_train.training.lifecycle import finish, main, open_run, train
from openenv_train.training.model import apply_lora, load_model, warm_up

from .config import TextRecipeConfig, load_config
from .evaluate import (
    COLUMNS,
    VALIDATION_OFFSET,
    evaluate_on_servers,
    random_baseline,
    seeded_spec,
)


def run(cfg: TextRecipeConfig) -> dict[str, Any]:
    """Train and evaluate as ``cfg`` says; returns the summary also written to summary.json."""
    from openenv_train.policy.transformers_policy import TransformersPolicy

    ev = cfg.eval
    spec = cfg.make_spec()
    with open_run(cfg) as run:  # runs/<name>/, seeds, Ctrl-C, metrics.jsonl
        servers, urls = start_servers(cfg)
        if servers is not None:
            run.close_at_end(servers.stop)
        model, tokenizer = load_model(cfg, cfg.vocabulary())
        if not run.resume:
            sample = cfg.warmup_episodes(spec)
            warm_up(model, tokenizer, cfg.model, cfg.seed, run.metrics.write, sample)
        model = apply_lora(model, tokenizer, cfg, run.path, resume=run.resume)  # lora.r > 0

        # greedy play through the servers: the same games at every eval when the spec seeds them
        policy = TransformersPolicy(model, tokenizer, device=str(model.device))

        def greedy(live: Any, validation: bool) -> dict[str, float]:
            policy.set_model(live)
            n, seed = (
                (ev.periodic_episodes, ev.seed + VALIDATION_OFFSET)
                if validation
                else (ev.episodes, ev.seed)
            )
            return evaluate_on_servers(policy, seeded_spec(cfg, seed), urls, n, cfg)

        # a random player on the same games: the line the curve must rise above
        baselines = random_baseline(cfg, tokenizer, urls, ev.episodes, ev.seed)
        val_baselines = random_baseline(
            cfg, tokenizer, urls, ev.periodic_episodes, ev.seed + VALIDATION_OFFSET
        )
        evals = Evals(
            run,
            model,
            tokenizer,
            EvalSpec(
                greedy,
                score_key="mean_reward",
                columns=COLUMNS,
                table_title=f"{{}} (greedy), {ev.episodes} games",
                line="greedy mean reward {mean_reward:+.3f}, won {win_rate:.1%}",
                status={"greedy": "mean_reward", "won": "win_rate"},
                panels=(("mean_reward", "mean reward"), ("win_rate", "share of games won")),
                curve_title=f"GRPO on {cfg.env.app} ({cfg.name}): greedy play on {ev.periodic_episodes} validation games",
                baselines=baselines,
                validation_baselines=val_baselines,
            ),
        )
        evals.begin()  # the eval before training (or, resuming, the run so far)

        train_spec = cfg.make_spec(seed=cfg.seed) if hasattr(spec, "seed") else spec
        rollout_func = trainer_rollout_func(cfg, train_spec, servers, urls, evals.on_batch)
        run.close_at_end(rollout_func.close)
        trainer = trainer_class(cfg)(
            model=model,
            reward_funcs=reward_funcs(cfg),
            args=grpo_args(cfg, run.path),
            train_dataset=placeholder_dataset(cfg),
            processing_class=tokenizer,
            rollout_func=rollout_func,
            callbacks=[run.stop, *evals.callbacks()],
        )
        train(run, trainer, evals)
    return finish(run, evals, trainer, tokenizer)


if __name__ == "__main__":
    sys.exit(main(run, load_config))
