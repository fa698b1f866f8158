"""GRPO BlackJack: a model learns hit/stand through TRL's GRPOTrainer on real local env servers.

config -> N BlackJack servers (local processes or docker/podman containers) -> model (tiny Llama
built here + format warm-up, or a folder / hub model) -> evals (greedy, in-process, beside the
baselines) -> GRPOTrainer(rollout_func=the batched rollout engine over the servers) -> train ->
save. The run's lifecycle (run folder, Ctrl-C, checkpoints, --resume, best weights, curve.png,
summary.json) is ``openenv_train.training.lifecycle``; everything lands in ``runs/<name>/``.

Run: ``openenv-train train configs/grpo_blackjack_cpu.yaml`` (or ``python -m openenv_train.recipes.grpo_blackjack.train CONFIG``).
"""

from __future__ import annotations

import sys
from typing import Any

from blackjack_env.evaluation import (
    COLUMNS,
    VALIDATION_OFFSET,
    baselines,
    evaluate_policy,
    evaluate_via_servers,
)
from blackjack_env.text_spec import VOCABULARY, BlackjackTextSpec, random_episode

from openenv_train.rollout.episode import EpisodeRecorder
from openenv_train.training.grpo import (
    grpo_args,
    placeholder_dataset,
    reward_funcs,
    start_servers,
    trainer_class,
)
from openenv_train.training.lifecycle import finish, main, open_run, train
from openenv_train.training.model import apply_lora, load_model, warm_up
from openenv_train.training.periodic_evals import (
    EvalResult,
    Evals,
    EvalSpec,
    console,
    results_table,
)
from openenv_train.training.rollout_builders import rollout_func_from_config

from .config import RecipeConfig, load_config


def run(cfg: RecipeConfig) -> dict[str, Any]:
    """Train and evaluate as ``cfg`` says; returns the summary also written to summary.json."""
    from openenv_train.policy.transformers_policy import TransformersPolicy

    ev, r = cfg.eval, cfg.rollout
    with open_run(cfg) as run:  # runs/<name>/, seeds, Ctrl-C, metrics.jsonl
        servers, urls = start_servers(cfg)
        if servers is not None:
            run.close_at_end(servers.stop)
        model, tokenizer = load_model(cfg, VOCABULARY)
        if not run.resume:
            warm_up(model, tokenizer, cfg.model, cfg.seed, run.metrics.write, random_episode)
        model = apply_lora(model, tokenizer, cfg, run.path, resume=run.resume)  # lora.r > 0

        # greedy play on fresh seeded hands, in-process, beside the baselines on the same hands
        policy = TransformersPolicy(model, tokenizer, device=str(model.device))
        val_seed = ev.seed + VALIDATION_OFFSET  # the curve's hands, apart from the final ones

        def greedy(
            live: Any, validation: bool, recorder: EpisodeRecorder | None
        ) -> dict[str, float]:
            policy.set_model(live)
            hands, seed = (ev.periodic_hands, val_seed) if validation else (ev.hands, ev.seed)
            return evaluate_policy(
                policy,
                hands,
                seed,
                max_turns=r.max_turns,
                max_new_tokens=r.max_new_tokens,
                system_prompt=r.system_prompt,
                recorder=recorder,
            )

        val_baselines = baselines(ev.periodic_hands, val_seed)
        evals = Evals(
            run,
            model,
            tokenizer,
            EvalSpec(
                greedy,
                score_key="mean_return",
                columns=COLUMNS,
                table_title=f"{{}} (greedy), {ev.hands} fresh hands",
                line="greedy win {win:.1%}, mean return {mean_return:+.3f}",
                status={"win": "win", "ret": "mean_return"},
                panels=(("win", "greedy win rate"), ("mean_return", "mean return")),
                curve_title=f"GRPO BlackJack ({cfg.name}): greedy play on {ev.periodic_hands:,} validation hands",
                baselines=baselines(ev.hands, ev.seed),
                validation_baselines=val_baselines,
                curve_baselines={k: val_baselines[k] for k in ("always stand", "basic strategy")},
            ),
        )
        evals.begin()  # the eval before training (or, resuming, the run so far)

        spec = BlackjackTextSpec(
            seed=cfg.seed,
            same_deal_per_group=r.same_deal_per_group,
            invalid_action_reward=r.invalid_action_reward,
            same_state_per_group=r.same_state_per_group,
            state_weight_power=r.state_weight_power,
            deal_pool_size=r.deal_pool_size,
        )
        rollout_func = rollout_func_from_config(cfg, spec, servers, urls, evals.on_batch)
        run.close_at_end(rollout_func.close)
        trainer = trainer_class(cfg)(
            model=model,
            reward_funcs=reward_funcs(cfg),
            args=grpo_args(cfg, run.path),
            train_dataset=placeholder_dataset(cfg, "blackjack"),
            processing_class=tokenizer,
            rollout_func=rollout_func,
            callbacks=[run.stop, *evals.callbacks()],
        )
        extra: list[EvalResult] = []
        if train(run, trainer, evals) and ev.final_via_servers:  # the wire path agrees
            row = evaluate_via_servers(policy, urls, ev.hands, ev.seed)
            step = trainer.state.global_step
            extra.append(EvalResult("model after (via servers)", step, row, "after_via_servers"))
            console.print(results_table("after training, via the servers", {"model": row}, COLUMNS))
    return finish(run, evals, trainer, tokenizer, extra)


if __name__ == "__main__":
    sys.exit(main(run, load_config))
