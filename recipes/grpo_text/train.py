"""GRPO on your own text env: the env app, its ``TextEnvSpec`` and the vocabulary come from the
config; the rest is the BlackJack recipe's pipeline: env servers, a tiny model (or a saved/hub
one) with the format warm-up on the spec's ``random_episode``, TRL's GRPOTrainer with the batched
rollout engine, greedy evals through the servers, and the run's lifecycle (checkpoints, Ctrl-C,
--resume: ``openenv_train.training.lifecycle``).

With ``env.mixture`` one model learns several envs at once: each GRPO group plays one env drawn
by weight, and the evals, ``metrics.jsonl`` and ``curve.png`` report every env apart
(``env/<name>/<metric>``).

Run: ``openenv-train train configs/grpo_text_countdown.yaml`` (one env) or
``openenv-train train configs/grpo_mixture_cpu.yaml`` (three).
"""

from __future__ import annotations

import sys
from typing import Any

from openenv_train.rollout.episode import EpisodeRecorder
from openenv_train.rollout.mixture_engine import MixtureMember, env_metric
from openenv_train.training.grpo import (
    grpo_args,
    placeholder_dataset,
    reward_funcs,
    start_servers,
    trainer_class,
)
from openenv_train.training.lifecycle import finish, main, open_run, train
from openenv_train.training.model import apply_lora, load_model, warm_up
from openenv_train.training.periodic_evals import Evals, EvalSpec
from openenv_train.training.rollout_builders import rollout_func_from_config

from .config import Member, TextRecipeConfig, load_config
from .evaluate import (
    COLUMNS,
    VALIDATION_OFFSET,
    evaluate_on_servers,
    mixture_baseline,
    per_env,
    random_baseline,
    seeded_spec,
)


def training_spec(cfg: TextRecipeConfig, member: Member) -> Any:
    """The member's spec dealing the training games (seeded by ``cfg.seed`` where it can be)."""
    spec = cfg.make_spec(member)
    return cfg.make_spec(member, seed=cfg.seed) if hasattr(spec, "seed") else spec


def report_layout(cfg: TextRecipeConfig, tokenizer: Any, urls: dict[str, list[str]]) -> tuple:
    """A random player's scores on the eval and validation games (the line the curve must rise
    above), the table's columns, the curve's panels and the run's one-line description: per env
    for a mixture."""
    ev, members = cfg.eval, cfg.members()
    val_seed = ev.seed + VALIDATION_OFFSET
    if not cfg.mixture:
        url = urls[members[0].name]
        baselines = random_baseline(cfg, tokenizer, url, ev.episodes, ev.seed)
        val_baselines = random_baseline(cfg, tokenizer, url, ev.periodic_episodes, val_seed)
        panels = (("mean_reward", "mean reward"), ("win_rate", "share of games won"))
        return baselines, val_baselines, COLUMNS, panels, cfg.env.app
    baselines = mixture_baseline(cfg, tokenizer, urls, ev.episodes, ev.seed)
    val_baselines = mixture_baseline(cfg, tokenizer, urls, ev.periodic_episodes, val_seed)
    columns = (
        ("mean reward (envs' mean)", "mean_reward", "+.3f"),
        *((m.name, env_metric(m.name, "mean_reward"), "+.3f") for m in members),
        ("won", "win_rate", ".1%"),
    )
    panels = tuple((env_metric(m.name, "mean_reward"), f"{m.name}: mean reward") for m in members)
    what = "mixture of " + ", ".join(f"{m.name} ({m.weight:g})" for m in members)
    return baselines, val_baselines, columns, panels, what


def plays(cfg: TextRecipeConfig, urls: dict[str, list[str]]) -> tuple[Any, list[str]]:
    """What the trainer's rollout function plays, and on which URLs: one env's spec, or the
    mixture's members (groups dealt by weight; each member has its own URLs)."""
    members = cfg.members()
    if not cfg.mixture:
        return training_spec(cfg, members[0]), urls[members[0].name]
    mixture = [
        MixtureMember(m.name, training_spec(cfg, m), urls[m.name], m.weight) for m in members
    ]
    return mixture, []


def run(cfg: TextRecipeConfig) -> dict[str, Any]:
    """Train and evaluate as ``cfg`` says; returns the summary also written to summary.json."""
    from openenv_train.policy.transformers_policy import TransformersPolicy

    ev = cfg.eval
    members = cfg.members()
    with open_run(cfg) as run:  # runs/<name>/, seeds, Ctrl-C, metrics.jsonl
        urls: dict[str, list[str]] = {}
        for member in members:
            servers, urls[member.name] = start_servers(cfg, member.section)
            if servers is not None:
                run.close_at_end(servers.stop)
        model, tokenizer = load_model(cfg, cfg.vocabulary())  # every member env's words
        if not run.resume:
            warm_up(model, tokenizer, cfg.model, cfg.seed, run.metrics.write, cfg.warmup_sampler())
        model = apply_lora(model, tokenizer, cfg, run.path, resume=run.resume)  # lora.r > 0

        # greedy play through the servers: the same games at every eval when the spec seeds them
        policy = TransformersPolicy(model, tokenizer, device=str(model.device))

        def play(
            member: Member, n: int, seed: int, recorder: EpisodeRecorder | None
        ) -> dict[str, float]:
            spec = seeded_spec(cfg, seed, member)
            return evaluate_on_servers(policy, spec, urls[member.name], n, cfg, recorder)

        def greedy(
            live: Any, validation: bool, recorder: EpisodeRecorder | None
        ) -> dict[str, float]:
            policy.set_model(live)
            n, seed = (
                (ev.periodic_episodes, ev.seed + VALIDATION_OFFSET)
                if validation
                else (ev.episodes, ev.seed)
            )
            if not cfg.mixture:
                return play(members[0], n, seed, recorder)
            return per_env({m.name: play(m, n, seed, recorder) for m in members})

        baselines, val_baselines, columns, panels, what = report_layout(cfg, tokenizer, urls)
        evals = Evals(
            run,
            model,
            tokenizer,
            EvalSpec(
                greedy,
                score_key="mean_reward",
                columns=columns,
                table_title=f"{{}} (greedy), {ev.episodes} games per env",
                line="greedy mean reward {mean_reward:+.3f}, won {win_rate:.1%}",
                status={"greedy": "mean_reward", "won": "win_rate"},
                panels=panels,
                curve_title=f"GRPO on {what} ({cfg.name}): greedy play on {ev.periodic_episodes} validation games",
                baselines=baselines,
                validation_baselines=val_baselines,
            ),
        )
        evals.begin()  # the eval before training (or, resuming, the run so far)

        what, play_urls = plays(cfg, urls)
        rollout_func = rollout_func_from_config(cfg, what, servers, play_urls, evals.on_batch)
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
