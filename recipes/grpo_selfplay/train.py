"""GRPO by self-play: one model holds both seats of an OpenSpiel game on real env servers.

config -> ``openspiel/<game>`` servers -> tiny Llama (the game's words) + format warm-up on
random games (the answer's form, not a policy) -> evals (exact NashConv through OpenSpiel where
the tree is small; greedy win/draw/loss per seat against built-in opponents) ->
GRPOTrainer(rollout_func = the self-play runner: every seat's answer of every game in one
batched call, rows per seat, GRPO groups per seat and deal or one baseline per seat) -> train ->
save. ``selfplay.pool_share`` > 0 mixes in games against past checkpoints. The run's lifecycle
(run folder, Ctrl-C, checkpoints, --resume, best weights, curve.png, summary.json) is
``openenv_train.training.lifecycle``. Each periodic eval also plays ``eval.trajectories`` greedy
self-play games, recorded seat by seat for ``openenv-train view`` (``trajectories/``).

Run: ``openenv-train train configs/grpo_selfplay_kuhn_cpu.yaml``.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from openspiel_games_env.evaluation import (
    PolicyAverage,
    distill,
    exact_vs_random,
    greedy_choices,
    model_policy,
    nash_conv,
    uniform_nash_conv,
    win_draw_loss,
)
from openspiel_games_env.games import load
from openspiel_games_env.text_spec import VOCABULARIES, SeatTextSpec, random_turns

from openenv_train.rollout.episode import EpisodeRecorder, RolloutConfig
from openenv_train.rollout.selfplay import SelfPlayRunner
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
from openenv_train.training.rollout_func import RolloutFunc, RunnerStrategy
from openenv_train.training.selfplay_pool import CheckpointPool

from .config import RecipeConfig, load_config

POKER = ("kuhn_poker", "leduc_poker")


def columns(cfg: RecipeConfig) -> list[tuple[str, str, str]]:
    cols = []
    if cfg.eval.nash_conv:
        cols = [("NashConv", "nash_conv", ".3f"), ("NashConv (average)", "avg_nash_conv", ".3f")]
    for opp in cfg.eval.opponents:
        for seat in (0, 1):
            cols.append((f"seat {seat} vs {opp}: won", f"seat{seat}/{opp}/win", ".1%"))
            cols.append((f"seat {seat} vs {opp}: lost", f"seat{seat}/{opp}/loss", ".1%"))
    if cfg.eval.exact_random:
        for seat in (0, 1):
            cols.append((f"seat {seat} vs random, exact: lost", f"seat{seat}/exact/loss", ".2%"))
    return cols


def evaluate(
    cfg: RecipeConfig,
    model: Any,
    tokenizer: Any,
    url: str,
    seed: int,
    games: int,
    average: PolicyAverage | None = None,
    add: bool = False,
    recorder: EpisodeRecorder | None = None,
) -> dict[str, float]:
    """Exact NashConv (where asked; with ``average``, the policy joins it and the average's
    NashConv is reported too), exact win/draw/loss against random play (where asked) and greedy
    win/draw/loss per seat per built-in opponent. With
    ``recorder`` (a periodic eval's run-viewer sample), greedy self-play games are recorded too."""
    from openenv_train.policy.transformers_policy import TransformersPolicy

    out: dict[str, float] = {}
    game = cfg.game.name
    if cfg.eval.nash_conv:
        mp = model_policy(model, tokenizer, game)
        out["nash_conv"] = nash_conv(game, mp.policy)
        out["neg_nash_conv"] = -out["nash_conv"]
        out["illegal_mass"] = mp.illegal_mass
        if average is not None:
            if add:
                linear = cfg.eval.average_weighting == "linear"
                average.add(mp.policy, weight=average.count + 1 if linear else 1.0)
            avg = nash_conv(game, average.policy()) if average.count else out["nash_conv"]
            out["avg_nash_conv"] = avg
    if cfg.eval.exact_random:
        choose = greedy_choices(model, tokenizer, game)
        for seat in (0, 1):
            exact = exact_vs_random(game, seat, choose)
            out.update({f"seat{seat}/exact/{k}": v for k, v in exact.items()})
        out["neg_exact_loss"] = -(out["seat0/exact/loss"] + out["seat1/exact/loss"])
    policy = TransformersPolicy(model, tokenizer, device=str(model.device))
    try:
        for opp in cfg.eval.opponents:
            res = asyncio.run(
                win_draw_loss(
                    policy,
                    game,
                    url,
                    opponent=opp,
                    games=games,
                    seed=seed,
                    mask_illegal=cfg.selfplay.mask_illegal,
                )
            )
            for seat, m in res.items():
                for k, v in m.items():
                    out[f"{seat}/{opp}/{k}"] = v
        if recorder is not None:
            asyncio.run(record_selfplay(cfg, policy, url, seed, recorder))
    finally:
        asyncio.run(policy.aclose())
    out["mean_return"] = sum(v for k, v in out.items() if k.endswith("/mean_return")) / max(
        1, 2 * len(cfg.eval.opponents)
    )
    out["games"] = games  # per seat and opponent: the periodic evals play fewer
    return out


async def record_selfplay(
    cfg: RecipeConfig, policy: Any, url: str, seed: int, recorder: EpisodeRecorder
) -> None:
    """As many greedy self-play games as ``recorder`` keeps (the policy in both seats, game ``k``
    dealt with ``seed + k``: the same task at every eval), recorded seat by seat."""
    from openspiel_games_env.client import OpenSpielEnv

    r = cfg.rollout
    # unconnected, as the training runner's: each session opens at its first reset
    clients = [OpenSpielEnv(url) for _ in range(min(recorder.limit, cfg.selfplay.concurrency))]
    runner = SelfPlayRunner(
        policy,
        SeatTextSpec(cfg.game.name, mask_illegal=cfg.selfplay.mask_illegal),
        clients,
        config=RolloutConfig(
            max_turns=r.max_turns, max_new_tokens=r.max_new_tokens, temperature=0.0
        ),
        seed=seed,
        recorder=recorder,
    )
    try:
        await runner.play(recorder.limit)
    finally:
        await runner.aclose()


def eval_spec(cfg: RecipeConfig, greedy: Any) -> EvalSpec:
    """What the evals show: NashConv (the policy's and the average's) where the game's tree is
    walked, each seat's wins against each built-in opponent, uniform play as the baseline."""
    ev, game = cfg.eval, cfg.game.name
    baselines = {}
    if ev.nash_conv:
        uniform = uniform_nash_conv(game)
        baselines["uniform random"] = {"nash_conv": uniform, "avg_nash_conv": uniform}
    panels = [("nash_conv", "NashConv (exact)")] if ev.nash_conv else []
    if ev.nash_conv:
        panels.append(("avg_nash_conv", "NashConv of the average policy"))
    panels += [(f"seat{s}/{o}/win", f"seat {s} vs {o}: won") for o in ev.opponents for s in (0, 1)]
    if ev.exact_random:
        panels += [(f"seat{s}/exact/loss", f"seat {s} vs random, exact: lost") for s in (0, 1)]
    return EvalSpec(
        greedy,
        score_key="neg_nash_conv"
        if ev.nash_conv
        else "neg_exact_loss"
        if ev.exact_random
        else "mean_return",
        columns=columns(cfg),
        table_title=f"{{}} ({game}: {'exact NashConv, ' if ev.nash_conv else ''}{ev.games} "
        "greedy games per seat and opponent)",
        line=("NashConv {nash_conv:.3f}, " if ev.nash_conv else "")
        + "mean return vs built-ins {mean_return:+.3f}",
        status={"ret": "mean_return", **({"nashconv": "nash_conv"} if ev.nash_conv else {})},
        panels=panels,
        curve_title=f"GRPO self-play on {game} ({cfg.name}, advantages: {cfg.selfplay.advantages})",
        baselines=baselines,
        validation_baselines=baselines,
    )


def training_callbacks(
    cfg: RecipeConfig,
    run: Any,
    model: Any,
    tokenizer: Any,
    evals: Evals,
    average: PolicyAverage | None,
    step: dict[str, int],
    pool: CheckpointPool | None,
) -> list[Any]:
    """Ctrl-C, the step count the evals read, the periodic evals, the distillation of the
    average policy at the end (``eval.distill_average``) and the checkpoint pool's snapshots."""
    from transformers import TrainerCallback

    ev, game = cfg.eval, cfg.game.name

    class Steps(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            step["now"] = state.global_step

    class Distill(TrainerCallback):
        """At the end of training, before the final evals: the model learns the average."""

        def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
            if run.stop.requested or average is None or not average.count:
                return
            loss = distill(model, tokenizer, game, average.policy(), steps=ev.distill_steps)
            run.metrics.write("distill", step["now"], {"loss": loss, "policies": average.count})

    callbacks = [run.stop, Steps(), *evals.callbacks()]
    if ev.distill_average:
        callbacks.insert(2, Distill())
    if pool is not None:

        class Snapshots(TrainerCallback):
            def on_step_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
                if state.global_step % cfg.selfplay.pool_every == 0:
                    pool.snapshot(model, state.global_step)

        pool.snapshot(model, 0)
        callbacks.append(Snapshots())
    return callbacks


def prepare_model(cfg: RecipeConfig, run: Any) -> tuple[Any, Any]:
    """The model over the game's words, warmed up on random games (a new run), with its LoRA
    adapter where asked; with a KL term, the warmed-up weights saved as TRL's reference (TRL
    loads the reference by path)."""
    game = cfg.game.name
    model, tokenizer = load_model(cfg, VOCABULARIES.get(game, ()))
    if not run.resume:
        spiel = load(game)
        warm_up(
            model,
            tokenizer,
            cfg.model,
            cfg.seed,
            run.metrics.write,
            lambda rng: random_turns(spiel, game, rng),
        )
    model = apply_lora(model, tokenizer, cfg, run.path, resume=run.resume)
    if cfg.grpo.beta > 0:
        ref = run.path / "reference"
        model.save_pretrained(ref)
        tokenizer.save_pretrained(ref)
        model.config._name_or_path = str(ref)
    return model, tokenizer


def run(cfg: RecipeConfig) -> dict[str, Any]:
    """Train and evaluate as ``cfg`` says; returns the summary also written to summary.json."""
    from openspiel_games_env.client import OpenSpielEnv

    from openenv_train.policy.transformers_policy import TransformersPolicy

    ev, sp, r, g = cfg.eval, cfg.selfplay, cfg.rollout, cfg.grpo
    game = cfg.game.name
    with open_run(cfg) as run:  # runs/<name>/, seeds, Ctrl-C, metrics.jsonl
        servers, urls = start_servers(cfg)
        if servers is not None:
            run.close_at_end(servers.stop)
        model, tokenizer = prepare_model(cfg, run)
        average = PolicyAverage(game) if ev.nash_conv else None
        step = {"now": 0}

        def greedy(live: Any, validation: bool, recorder: EpisodeRecorder | None) -> dict:
            seed = ev.seed + (1_000_000 if validation else 0)
            games = ev.periodic_games if validation else ev.games
            averaging = validation and average is not None and step["now"] >= ev.average_from
            return evaluate(
                cfg, live, tokenizer, urls[0], seed, games, average, averaging, recorder
            )

        evals = Evals(run, model, tokenizer, eval_spec(cfg, greedy))
        evals.begin()

        pool = CheckpointPool(tokenizer, sp.pool_size) if sp.pool_share > 0 else None
        if pool is not None:
            run.close_at_end(pool.close)
        config = RolloutConfig(
            max_turns=r.max_turns,
            max_new_tokens=r.max_new_tokens,
            max_batch_size=r.max_batch_size,
            max_concurrency=r.max_concurrency,
            temperature=g.temperature,
            episode_seed=cfg.seed if sp.repeatable else None,
        )

        class Batched(OpenSpielEnv):
            batch_frames = True

        def make_runner(trainer: Any) -> SelfPlayRunner:
            n = min(sp.concurrency, g.per_device_train_batch_size)
            clients = [Batched(urls[i % len(urls)]) for i in range(n)]
            return SelfPlayRunner(
                TransformersPolicy(model, tokenizer, device=str(model.device)),
                SeatTextSpec(game, mask_illegal=sp.mask_illegal),
                clients,
                config=config,
                advantages=sp.advantages,
                seed=cfg.seed,
                opponents=pool.policies if pool is not None else None,
                pool_share=sp.pool_share,
                builtin_share=sp.builtin_share,
                builtin_opponents=tuple(sp.builtin_opponents),
                openings=sp.openings,
                replay_share=sp.replay_share,
                replay_size=sp.replay_size,
                loss_weight=sp.loss_weight,
                replay_explore=sp.replay_explore,
            )

        rollout_func = RolloutFunc(RunnerStrategy(make_runner), on_batch=evals.on_batch)
        run.close_at_end(rollout_func.close)
        callbacks = training_callbacks(cfg, run, model, tokenizer, evals, average, step, pool)
        fields = {}
        if sp.advantages == "role":  # one group per seat: the seat's rows of the whole batch
            fields["num_generations"] = g.per_device_train_batch_size // 2
        trainer = trainer_class(cfg)(
            model=model,
            reward_funcs=reward_funcs(cfg),
            args=grpo_args(cfg, run.path, **fields),
            train_dataset=placeholder_dataset(cfg, game),
            processing_class=tokenizer,
            rollout_func=rollout_func,
            callbacks=callbacks,
        )
        train(run, trainer, evals)
    return finish(run, evals, trainer, tokenizer)


if __name__ == "__main__":
    sys.exit(main(run, load_config))
