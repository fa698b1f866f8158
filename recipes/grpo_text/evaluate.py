"""Greedy evaluation of a policy on any text env, through its real servers and the rollout
engine (the same episode loop as training): mean reward, the share of games won (reward > 0),
invalid answers and turns."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from openenv_train.client.sync import run_blocking
from openenv_train.rollout.episode import EpisodeRecorder
from openenv_train.training.periodic_evals import results_table

if TYPE_CHECKING:
    from .config import Member, TextRecipeConfig

#: The eval table's columns: (header, key, format).
COLUMNS = (
    ("mean reward", "mean_reward", "+.3f"),
    ("won (reward > 0)", "win_rate", ".1%"),
    ("lost (reward < 0)", "loss_rate", ".1%"),
    ("invalid", "invalid", ".1%"),
    ("turns", "turns", ".2f"),
)

#: Periodic (validation) evals use seed + this, apart from the final eval's games.
VALIDATION_OFFSET = 10_000_000


def seeded_spec(cfg: TextRecipeConfig, seed: int, member: Member | None = None) -> Any:
    """The config's spec dealing the games of ``seed``: through its own ``seed`` attribute, else
    by passing ``reset(seed=seed + row)`` (a spec written without one, as the README's), so the
    evals before, during and after training and ``openenv-train eval`` play the same games.

    The eval's seed wins: a ``seed`` the spec's own ``reset_kwargs`` returns is replaced (it
    would deal the training games, or one game, at every eval); its other keys are kept."""
    spec = cfg.make_spec() if member is None else cfg.make_spec(member)
    if hasattr(spec, "seed"):
        spec.seed = seed
        return spec
    given = spec.reset_kwargs

    def reset_kwargs(prompt: Any, group: int, row: int) -> dict[str, Any]:
        return {**given(prompt, group, row), "seed": seed + row}

    spec.reset_kwargs = reset_kwargs
    return spec


def random_answers(
    cfg: TextRecipeConfig, games: int = 64, member: Member | None = None
) -> list[str]:
    """The answers of the spec's ``random_episode`` games (the env's moves, in words); empty when
    the spec has none."""
    sample = cfg.warmup_episodes(cfg.make_spec() if member is None else cfg.make_spec(member))
    if sample is None:
        return []
    found: dict[str, None] = {}
    for i in range(games):
        found.update(
            (text, None)
            for role, text in sample(random.Random(cfg.seed + i))
            if role == "assistant"
        )
    return list(found)


def random_baseline(
    cfg: TextRecipeConfig,
    tokenizer: Any,
    urls: list[str],
    episodes: int,
    seed: int,
    member: Member | None = None,
) -> dict[str, dict[str, float]]:
    """``{"random": metrics}``: a policy answering uniformly among the env's moves (those of
    ``random_episode``) on the same games as the model; ``{}`` without ``random_episode``."""
    from openenv_train.rollout.scripted import ScriptedPolicy

    answers = random_answers(cfg, member=member)
    if not answers:
        return {}
    rng = random.Random(seed)
    policy = ScriptedPolicy(tokenizer, lambda _text: rng.choice(answers))
    spec = seeded_spec(cfg, seed, member)
    return {"random": evaluate_on_servers(policy, spec, urls, episodes, cfg)}


def per_env(rows: dict[str, dict[str, float]]) -> dict[str, float]:
    """One env's eval metrics under ``env/<name>/<metric>`` (``rows``: name -> metrics), with
    the unweighted means over the envs under the plain keys (keep-best and the summary)."""
    from openenv_train.rollout.mixture_engine import env_metric

    out: dict[str, float] = {}
    for name, metrics in rows.items():
        out.update({env_metric(name, k): v for k, v in metrics.items()})
    for key in ("mean_reward", "win_rate", "loss_rate", "invalid", "turns"):
        values = [m[key] for m in rows.values() if key in m]
        if values:
            out[key] = sum(values) / len(values)
    out["episodes"] = sum(m.get("episodes", 0) for m in rows.values())
    return out


def mixture_baseline(
    cfg: TextRecipeConfig, tokenizer: Any, urls: dict[str, list[str]], episodes: int, seed: int
) -> dict[str, dict[str, float]]:
    """The random baseline of every member env, as one ``{"random": per_env(...)}`` row."""
    rows = {}
    for member in cfg.members():
        found = random_baseline(cfg, tokenizer, urls[member.name], episodes, seed, member)
        if found:
            rows[member.name] = found["random"]
    return {"random": per_env(rows)} if rows else {}


def evaluate_on_servers(
    policy: Any,
    spec: Any,
    urls: list[str],
    episodes: int,
    cfg: TextRecipeConfig,
    recorder: EpisodeRecorder | None = None,
) -> dict[str, float]:
    """Greedy play of ``episodes`` games of ``spec`` on the servers at ``urls`` (``recorder``:
    keep the first ones turn by turn for the run viewer). A self-play spec (``selfplay_seats`` >
    1) is played seat by seat against the server's built-in random opponent: each seat's metrics
    under ``seat<s>/``, their means under the plain keys."""
    from openenv_train.rollout.engine import RolloutConfig, RolloutEngine
    from openenv_train.rollout.seated_game import seats_of

    seats = seats_of(spec)
    if seats > 1:
        by_seat = [
            evaluate_on_servers(policy, spec.holding_seat(s), urls, episodes, cfg, recorder)
            for s in range(seats)
        ]
        out = {f"seat{s}/{k}": v for s, m in enumerate(by_seat) for k, v in m.items()}
        out.update({k: sum(m[k] for m in by_seat) / seats for k in by_seat[0]})
        out["episodes"] = sum(m["episodes"] for m in by_seat)
        return out

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
        async with RolloutEngine(spec, policy, urls, config, recorder=recorder) as engine:
            return await engine.run(["eval"] * episodes, 1)

    records = [rec for rec in run_blocking(play()).rows if rec is not None]
    n = max(1, len(records))
    return {
        "mean_reward": sum(rec.reward for rec in records) / n,
        "win_rate": sum(rec.reward > 0 for rec in records) / n,
        "loss_rate": sum(rec.reward < 0 for rec in records) / n,
        "invalid": sum(rec.metrics.get("invalid_actions", 0) for rec in records) / n,
        "turns": sum(rec.num_turns for rec in records) / n,
        "episodes": len(records),
    }


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
    seed = cfg.eval.seed if seed is None else seed
    n = episodes or cfg.eval.episodes
    rows: dict[str, dict[str, float]] = {}
    for member in cfg.members():
        env = member.section
        servers = start_servers(env.app, 1, **env.server_options())
        try:
            urls = list(servers.base_urls)
            spec = seeded_spec(cfg, seed, member)
            policy = TransformersPolicy(model, tokenizer)
            label = f"{member.name}: " if cfg.mixture else ""
            rows[f"{label}model"] = evaluate_on_servers(policy, spec, urls, n, cfg)
            for name, row in random_baseline(cfg, tokenizer, urls, n, seed, member).items():
                rows[f"{label}{name}"] = row
        finally:
            servers.stop()
    Console().print(results_table(f"{model_dir} ({n} games per env, greedy)", rows, COLUMNS))
    return rows
