"""Greedy evaluation of a policy on any text env, through its real servers and the rollout
engine (the same episode loop as training): mean reward, the share of games won (reward > 0),
invalid answers and turns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from openenv_train.client.sync import run_blocking
from openenv_train.training.evals import RunEvals
from openenv_train.training.evals import results_table as common_results_table

#: The eval table's columns: (header, key, format).
COLUMNS = (
    ("mean reward", "mean_reward", "+.3f"),
    ("won (reward > 0)", "win_rate", ".1%"),
    ("invalid", "invalid", ".1%"),
    ("turns", "turns", ".2f"),
)

#: Periodic (validation) evals use seed + this, apart from the final eval's games.
VALIDATION_OFFSET = 10_000_000
console = Console()


def evaluate_on_servers(
    policy: Any, spec: Any, urls: list[str], episodes: int, cfg: Any
) -> dict[str, float]:
    """Greedy play of ``episodes`` games of ``spec`` on the servers at ``urls``."""
    from openenv_train.rollout.engine import RolloutConfig, RolloutEngine

    r = cfg.rollout
    config = RolloutConfig(
        temperature=0.0,
        max_turns=r.max_turns,
        max_new_tokens=r.max_new_tokens,
        max_concurrency=r.max_concurrency,
        max_batch_size=r.max_batch_size,
        system_prompt=r.system_prompt,
    )

    async def play() -> Any:
        async with RolloutEngine(spec, policy, urls, config) as engine:
            return await engine.run(["eval"] * episodes, 1)

    records = [rec for rec in run_blocking(play()).rows if rec is not None]
    n = max(1, len(records))
    return {
        "mean_reward": sum(rec.reward for rec in records) / n,
        "win_rate": sum(rec.reward > 0 for rec in records) / n,
        "invalid": sum(rec.metrics.get("invalid_actions", 0) for rec in records) / n,
        "turns": sum(rec.num_turns for rec in records) / n,
        "episodes": len(records),
    }


def results_table(title: str, rows: dict[str, dict[str, float]]) -> Table:
    """Mean reward / won / invalid / turns of each named result, as a rich table."""
    return common_results_table(title, rows, COLUMNS)


class TextEnvEval(RunEvals):
    """The evaluation bookkeeping of a ``grpo_text`` run; the score is the mean reward."""

    score_key = "mean_reward"
    panels = (("mean_reward", "mean reward"), ("win_rate", "share of games won"))

    def __init__(
        self,
        cfg: Any,
        model: Any,
        tokenizer: Any,
        metrics: Any,
        urls: list[str],
        *,
        started: float | None = None,
    ) -> None:
        from openenv_train.policy.transformers_policy import TransformersPolicy

        super().__init__(cfg, model, tokenizer, metrics, started=started)
        self.urls = urls
        self.policy = TransformersPolicy(model, tokenizer, device=str(model.device))

    def _spec(self, seed: int) -> Any:
        spec = self.cfg.make_spec()
        if hasattr(spec, "seed"):
            spec.seed = seed  # the same games at every eval, when the spec can seed them
        return spec

    def greedy(self, n: int | None = None, seed: int | None = None) -> dict[str, float]:
        ev = self.cfg.eval
        spec = self._spec(ev.seed if seed is None else seed)
        return evaluate_on_servers(
            self.policy, spec, self.urls, ev.episodes if n is None else n, self.cfg
        )

    def validate(self) -> dict[str, float]:
        ev = self.cfg.eval
        return self.greedy(ev.periodic_episodes, ev.seed + VALIDATION_OFFSET)

    def table(self, title: str, rows: dict[str, dict[str, float]]) -> Table:
        return results_table(f"{title}, {self.cfg.eval.episodes} games", rows)

    def line(self, step: int, m: dict[str, float]) -> str:
        return f"step {step}: greedy mean reward {m['mean_reward']:+.3f}, won {m['win_rate']:.1%}"

    def status(self, m: dict[str, float]) -> dict[str, float]:
        return {"greedy": m["mean_reward"], "won": m["win_rate"]}

    def set_model(self, model: Any) -> None:
        self.model = model
        self.policy.set_model(model)

    def title(self) -> str:
        return (
            f"GRPO on {self.cfg.env.app} ({self.cfg.name}): greedy play on "
            f"{self.cfg.eval.periodic_episodes} validation games"
        )


def evaluate_saved_model(
    model_dir: str | Path, *, episodes: int | None = None, seed: int | None = None
) -> dict[str, dict[str, float]]:
    """``openenv-train eval runs/<name>/model``: greedy play on servers of the run's env."""
    import torch

    from openenv_train.policy.tiny import load_tiny_model
    from openenv_train.policy.transformers_policy import TransformersPolicy
    from openenv_train.runtime import start_servers

    from .config import parse_config

    run_config = Path(model_dir).parent / "config.json"
    cfg = parse_config(json.loads(run_config.read_text()))
    torch.set_num_threads(1)
    model, tokenizer = load_tiny_model(model_dir)
    spec = cfg.make_spec()
    if hasattr(spec, "seed"):
        spec.seed = cfg.eval.seed if seed is None else seed
    n = episodes or cfg.eval.episodes
    servers = start_servers(cfg.env.app, 1, **cfg.env.server_options())
    try:
        row = evaluate_on_servers(
            TransformersPolicy(model, tokenizer), spec, list(servers.base_urls), n, cfg
        )
    finally:
        servers.stop()
    console.print(results_table(f"{model_dir} ({n} games, greedy)", {"model": row}))
    return {"model": row}
