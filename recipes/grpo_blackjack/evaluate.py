"""Greedy evaluation of a BlackJack policy on fresh seeded hands, beside the baselines.

The policy plays in-process on ``blackjack_env.game`` (the same rules module the env server runs,
dealt with the same seeds), so a 20k-hand eval takes seconds instead of minutes of round trips.
Hands run through the same episode loop and ``TokenCodec`` as training: the model sees the same
contexts. ``evaluate_via_servers`` plays the same hands through the real servers and the rollout
engine instead (slower; it proves the two agree). ``TrainingEval`` is the bookkeeping of one
training run (evals before, during and after, the best weights, the summary);
``evaluate_saved_model`` is the recipe's evaluator for ``openenv-train eval``.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from blackjack_env.game import HIT, STAND, BlackjackGame, basic_strategy, rank_label
from blackjack_env.text_spec import decision_text, game_view, parse_answer
from rich.console import Console
from rich.table import Table

from openenv_train.client.sync import run_blocking
from openenv_train.policy.base import Generation
from openenv_train.rollout.batcher import GenerationBatcher
from openenv_train.rollout.episode import Reply, RolloutConfig, play_episode
from openenv_train.rollout.tokens import TokenCodec
from openenv_train.training.evals import RunEvals
from openenv_train.training.evals import results_table as common_results_table

#: The eval table's columns: (header, key, format).
COLUMNS = (
    ("win", "win", ".1%"),
    ("push", "push", ".1%"),
    ("lose rate", "lose_rate", ".1%"),
    ("mean return", "mean_return", "+.3f"),
    ("invalid", "invalid", ".1%"),
)

EVAL_BATCH = 4096
#: Periodic (validation) evals deal from seed + this, apart from the final eval's hands.
VALIDATION_OFFSET = 10_000_000
console = Console()


def summarize(rewards: Sequence[float], invalid: int = 0) -> dict[str, float]:
    n = max(1, len(rewards))
    return {
        "win": sum(r > 0 for r in rewards) / n,
        "push": sum(r == 0 for r in rewards) / n,
        "lose_rate": sum(r < 0 for r in rewards) / n,
        "mean_return": sum(rewards) / n,
        "invalid": invalid / n,
        "hands": len(rewards),
    }


def play_scripted(
    choose: Callable[[BlackjackGame, random.Random], int], hands: int, seed: int
) -> dict[str, float]:
    """Play ``hands`` seeded hands with a Python policy (the baselines)."""
    rng = random.Random(seed ^ 0x5EED)
    rewards = []
    for k in range(hands):
        game = BlackjackGame.deal(seed=seed + k)
        while not game.done:
            game.apply(choose(game, rng))
        rewards.append(game.reward)
    return summarize(rewards)


BASELINES: dict[str, Callable[[BlackjackGame, random.Random], int]] = {
    "random": lambda g, rng: rng.choice((HIT, STAND)),
    "always stand": lambda g, rng: STAND,
    "basic strategy": lambda g, rng: basic_strategy(
        g.player_total, g.player_soft, rank_label(g.dealer_upcard)
    ),
}


def baselines(hands: int, seed: int) -> dict[str, dict[str, float]]:
    """Random, always-stand and basic-strategy results on the same seeded hands."""
    return {name: play_scripted(fn, hands, seed) for name, fn in BASELINES.items()}


def evaluate_policy(
    policy: Any,
    hands: int,
    seed: int,
    *,
    max_turns: int = 8,
    max_new_tokens: int = 4,
    system_prompt: str | None = None,
) -> dict[str, float]:
    """Greedy play of ``policy`` on seeded hands, through the same episode loop as training.

    Hands are played ``EVAL_BATCH`` at a time; every turn of the hands still in play is one
    batched policy call. An unparsable answer ends the hand with -1 (as in training) and counts
    as ``invalid``; running out of turns is -1 too (the engine's truncation reward).
    """
    config = RolloutConfig(
        max_turns=max_turns,
        max_new_tokens=max_new_tokens,
        temperature=0.0,
        max_batch_size=EVAL_BATCH,
        system_prompt=system_prompt,
    )

    async def play(hand: int, batcher: GenerationBatcher, codec: TokenCodec) -> tuple[float, str]:
        game = BlackjackGame.deal(seed=seed + hand)

        async def respond(gen: Generation) -> Reply:
            action = parse_answer(gen.text)
            if action is None:
                return Reply(stop="invalid")
            game.apply(action)
            if game.done:
                return Reply(stop="done")
            return Reply([{"role": "user", "content": decision_text(game_view(game))}])

        system = [{"role": "system", "content": system_prompt}] if system_prompt else []
        batcher.register()
        try:
            episode = await play_episode(
                [*system, {"role": "user", "content": decision_text(game_view(game))}],
                generate=batcher.generate,
                codec=codec,
                config=config,
                respond=respond,
            )
        finally:
            batcher.unregister()
        return (float(game.reward) if episode.stop == "done" else -1.0), episode.stop

    async def play_all() -> list[tuple[float, str]]:
        codec = TokenCodec(policy.tokenizer)
        batcher = GenerationBatcher(policy, max_batch_size=EVAL_BATCH, max_wait_s=60.0)
        results: list[tuple[float, str]] = []
        try:
            for start in range(0, hands, EVAL_BATCH):
                chunk = range(start, min(hands, start + EVAL_BATCH))
                results += await asyncio.gather(*(play(k, batcher, codec) for k in chunk))
        finally:
            await batcher.aclose()
        return results

    results = run_blocking(play_all())  # also from a notebook's running loop
    return summarize([r for r, _ in results], sum(stop == "invalid" for _, stop in results))


def evaluate_via_servers(
    policy: Any, servers: Sequence[Any], hands: int, seed: int, **rollout_kw: Any
) -> dict[str, float]:
    """The same greedy eval through the real env servers and the rollout engine."""

    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.rollout.engine import RolloutConfig, RolloutEngine

    spec = BlackjackTextSpec(seed=seed)
    config = RolloutConfig(temperature=0.0, **rollout_kw)

    async def run() -> list[float]:
        async with RolloutEngine(spec, policy, servers, config) as engine:
            batch = await engine.run(["eval"] * hands, 1)
        return [r.reward for r in batch.records]

    rewards = run_blocking(run())
    return summarize(rewards)


def results_table(title: str, rows: dict[str, dict[str, float]]) -> Table:
    """Win / push / lose rate / mean return / invalid of each named result, as a rich table."""
    return common_results_table(title, rows, COLUMNS)


def evaluate_saved_model(
    model_dir: str | Path, *, episodes: int | None = None, seed: int | None = None
) -> dict[str, dict[str, float]]:
    """The recipe's evaluator (``openenv-train eval``): greedy play of a saved model on fresh
    hands beside the baselines (defaults: the config's 20,000 hands and eval seed)."""
    import torch

    from openenv_train.policy.tiny import load_tiny_model
    from openenv_train.policy.transformers_policy import TransformersPolicy

    from .config import EvalSection

    hands = episodes or EvalSection().hands
    seed = EvalSection().seed if seed is None else seed
    torch.set_num_threads(1)  # tiny models: more threads only spin
    model, tokenizer = load_tiny_model(model_dir)
    rows = {"model": evaluate_policy(TransformersPolicy(model, tokenizer), hands, seed)}
    rows.update(baselines(hands, seed))
    console.print(results_table(f"{model_dir} ({hands} fresh hands, greedy)", rows))
    return rows


class TrainingEval(RunEvals):
    """The evaluation bookkeeping of one BlackJack training run (``openenv_train.training.evals``).

    Greedy evals on ``eval.hands`` fresh hands before and after training beside the baselines;
    periodic greedy evals on validation hands (the learning curve; seeded apart from the final
    hands, so watching them selects nothing); the best periodic weights (``eval.keep_best``).
    """

    score_key = "mean_return"
    panels = (("win", "greedy win rate"), ("mean_return", "mean return"))

    def __init__(
        self, cfg: Any, model: Any, tokenizer: Any, metrics: Any, *, started: float | None = None
    ) -> None:
        from openenv_train.policy.transformers_policy import TransformersPolicy

        super().__init__(cfg, model, tokenizer, metrics, started=started)
        device = str(next(model.parameters()).device)
        self.policy = TransformersPolicy(model, tokenizer, device=device)
        ev = cfg.eval
        self.val_seed = ev.seed + VALIDATION_OFFSET
        self.baselines = baselines(ev.hands, ev.seed)
        self.val_baselines = baselines(ev.periodic_hands, self.val_seed)
        self.curve_baselines = {
            k: self.val_baselines[k] for k in ("always stand", "basic strategy")
        }

    def greedy(self, n: int | None = None, seed: int | None = None) -> dict[str, float]:
        r = self.cfg.rollout
        return evaluate_policy(
            self.policy,
            self.cfg.eval.hands if n is None else n,
            self.cfg.eval.seed if seed is None else seed,
            max_turns=r.max_turns,
            max_new_tokens=r.max_new_tokens,
            system_prompt=r.system_prompt,
        )

    def validate(self) -> dict[str, float]:
        return self.greedy(self.cfg.eval.periodic_hands, self.val_seed)

    def table(self, title: str, rows: dict[str, dict[str, float]]) -> Table:
        return results_table(f"{title}, {self.cfg.eval.hands} fresh hands", rows)

    def line(self, step: int, m: dict[str, float]) -> str:
        return f"step {step}: greedy win {m['win']:.1%}, mean return {m['mean_return']:+.3f}"

    def status(self, m: dict[str, float]) -> dict[str, float]:
        return {"win": m["win"], "ret": m["mean_return"]}

    def set_model(self, model: Any) -> None:
        self.model = model
        self.policy.set_model(model)

    def after(self, trainer: Any, servers: Any = ()) -> None:
        super().after(trainer, servers)
        ev = self.cfg.eval
        if ev.final_via_servers and servers:
            self.rows["model after (via servers)"] = row = evaluate_via_servers(
                self.policy, servers, ev.hands, ev.seed
            )
            console.print(results_table("after training, via the servers", {"model": row}))

    def summary_extra(self) -> dict[str, Any]:
        extra: dict[str, Any] = {"validation_baselines": self.val_baselines}
        if "model after (via servers)" in self.rows:
            extra["after_via_servers"] = self.rows["model after (via servers)"]
        return extra

    def title(self) -> str:
        return (
            f"GRPO BlackJack ({self.cfg.name}): greedy play on "
            f"{self.cfg.eval.periodic_hands:,} validation hands"
        )
