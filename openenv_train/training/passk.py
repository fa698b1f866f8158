"""pass@k and mean@k evaluation of a saved policy, per env, with every episode's trajectory.

Each env deals ``tasks`` seeded games (task ``t`` is the game of seed ``seed + t``); the policy
samples ``k`` episodes of every task (temperature > 0) through the env's real servers and the
rollout engine, the same loop as training. A sample succeeds when its reward is above
``threshold``. ``pass@j`` is the unbiased estimator of Chen et al. (2021) over the ``k`` samples
(``1 - C(n-c, j) / C(n, j)``), averaged over tasks; ``mean@k`` is the mean reward of the
samples. Every episode is kept as one JSON line (``trajectory_rows``): env, app, spec, task,
sample, seed and reset arguments, prompt and turns with their token ids, reward: what
``openenv-train replay`` plays again (``training/replay.py``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from ..rollout.episode import RolloutConfig, token_turns
from ..rollout.records import EpisodeRecord
from ..rollout.spec import TextEnvSpec
from .checks import import_target


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of one task from ``n`` samples of which ``c`` succeeded: the chance
    that ``k`` samples drawn without replacement hold at least one success."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k(n={n}, c={c}, k={k}): need 0 <= c <= n and 1 <= k <= n")
    if n - c < k:
        return 1.0
    miss = 1.0
    for i in range(k):
        miss *= (n - c - i) / (n - i)
    return 1.0 - miss


def ks_up_to(k: int) -> list[int]:
    """The ``j`` of the pass@j columns: 1, 2, 4, ... below ``k``, and ``k``."""
    out, j = [], 1
    while j < k:
        out.append(j)
        j *= 2
    return out + [k]


@dataclass
class EvalTarget:
    """One env to evaluate: its name, server app, ``TextEnvSpec`` (``module:Class``) with
    keyword arguments, and the base URLs of running servers (empty: started for the eval)."""

    name: str
    app: str
    spec: str
    spec_kwargs: dict[str, Any] = field(default_factory=dict)
    urls: list[str] = field(default_factory=list)
    server_options: dict[str, Any] = field(default_factory=dict)

    def make_spec(self) -> TextEnvSpec:
        cls = import_target(self.spec, f"{self.name}: spec", "my_env.text_spec:MySpec")
        spec = cls(**self.spec_kwargs)
        if not isinstance(spec, TextEnvSpec):
            raise ValueError(f"{self.name}: spec {self.spec!r} is not a TextEnvSpec subclass")
        return spec


class TaskSeededSpec(TextEnvSpec):
    """``inner`` dealing task ``seed + group`` to every row of a GRPO group (its own seeding off),
    so the ``k`` samples of a task play the same game; ``resets[row]`` keeps each row's
    ``reset`` arguments for the trajectory."""

    def __init__(self, inner: TextEnvSpec, seed: int) -> None:
        if hasattr(inner, "seed"):
            cast(Any, inner).seed = None  # a spec that seeds itself: the task seeds it here
        self.inner, self.seed_base = inner, seed
        self.invalid_action_reward = inner.invalid_action_reward
        self.truncation_reward = inner.truncation_reward
        self.env_role = inner.env_role
        self.vocabulary = inner.vocabulary
        self.resets: dict[int, dict[str, Any]] = {}

    def make_client(self, base_url: str, **kw: Any) -> Any:
        return self.inner.make_client(base_url, **kw)

    def begin_run(self) -> None:
        self.inner.begin_run()

    def reset_kwargs(self, prompt: Any, group: int, row: int) -> dict[str, Any]:
        kwargs = {**self.inner.reset_kwargs(prompt, group, row), "seed": self.seed_base + group}
        self.resets[row] = kwargs
        return kwargs

    def initial_prompt(self, result: Any, prompt: Any) -> str:
        return self.inner.initial_prompt(result, prompt)

    def render(self, result: Any) -> str:
        return self.inner.render(result)

    def parse_action(self, text: str) -> Any:
        return self.inner.parse_action(text)

    def final_reward(self, result: Any) -> float | None:
        return self.inner.final_reward(result)


def score(records: Sequence[EpisodeRecord], k: int, threshold: float = 0.0) -> dict[str, float]:
    """``pass@j`` (j in :func:`ks_up_to`), ``mean@k`` and counts over records grouped by task."""
    by_task: dict[int, list[float]] = {}
    for r in records:
        by_task.setdefault(r.group, []).append(r.reward)
    if not by_task:
        return {"tasks": 0, "k": k}
    out: dict[str, float] = {"tasks": len(by_task), "k": k}
    for j in ks_up_to(k):
        passes = [
            pass_at_k(len(rs), sum(x > threshold for x in rs), j)
            for rs in by_task.values()
            if len(rs) >= j
        ]
        out[f"pass@{j}"] = sum(passes) / len(passes) if passes else float("nan")
    out[f"mean@{k}"] = sum(sum(rs) / len(rs) for rs in by_task.values()) / len(by_task)
    out["episodes"] = sum(len(rs) for rs in by_task.values())
    return out


def trajectory_rows(
    records: Sequence[EpisodeRecord],
    target: EvalTarget,
    spec: TaskSeededSpec,
    tokenizer: Any,
    k: int,
) -> list[dict[str, Any]]:
    """One JSON-ready row per episode, in task and sample order (see the module docstring)."""
    rows = []
    for r in sorted(records, key=lambda r: r.row):
        turns = token_turns(r, tokenizer)
        reset = spec.resets.get(r.row, {})
        rows.append(
            {
                "env": target.name,
                "app": target.app,
                "spec": target.spec,
                "spec_kwargs": target.spec_kwargs,
                "task": r.group,
                "sample": r.row % k,
                "seed": reset.get("seed"),
                "reset_kwargs": reset,
                "prompt": turns[0]["text"],
                "prompt_ids": list(r.prompt_ids),
                "turns": turns[1:],
                "num_turns": r.num_turns,
                "reward": r.reward,
                "invalid": int(r.metrics.get("invalid_actions", 0)),
                "truncated": int(r.metrics.get("truncated", 0)),
            }
        )
    return rows


def sample_env(
    policy: Any,
    target: EvalTarget,
    urls: Sequence[str],
    *,
    tasks: int,
    k: int,
    seed: int,
    config: RolloutConfig,
) -> tuple[list[EpisodeRecord], TaskSeededSpec]:
    """``k`` sampled episodes of each of ``tasks`` seeded tasks of one env."""
    from ..client.sync import run_blocking
    from ..rollout.engine import RolloutEngine

    spec = TaskSeededSpec(target.make_spec(), seed)

    async def play() -> Any:
        async with RolloutEngine(spec, policy, list(urls), config) as engine:
            return await engine.run(["eval"] * (tasks * k), k)

    batch = run_blocking(play())
    return batch.records, spec


def evaluate_passk(
    policy: Any,
    targets: Sequence[EvalTarget],
    *,
    tasks: int,
    k: int,
    seed: int,
    config: RolloutConfig,
    threshold: float = 0.0,
) -> tuple[dict[str, dict[str, float]], list[dict[str, Any]]]:
    """``({env: scores}, trajectory rows)`` of ``policy`` on every target (servers started
    here where a target has no ``urls``, stopped again)."""
    from ..runtime import start_servers

    if tasks < 1 or k < 1:
        raise ValueError(f"tasks={tasks}, k={k}: both must be >= 1")
    report: dict[str, dict[str, float]] = {}
    rows: list[dict[str, Any]] = []
    for target in targets:
        servers = None
        urls = list(target.urls)
        if not urls:
            servers = start_servers(target.app, 1, **target.server_options)
            urls = list(servers.base_urls)
        try:
            records, spec = sample_env(
                policy, target, urls, tasks=tasks, k=k, seed=seed, config=config
            )
        finally:
            if servers is not None:
                servers.stop()
        report[target.name] = score(records, k, threshold)
        rows += trajectory_rows(records, target, spec, policy.tokenizer, k)
    return report, rows


def write_jsonl(path: str | Path, rows: Sequence[dict[str, Any]]) -> Path:
    """One JSON object per line (the trajectory file)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return p


def targets_of_run(cfg: Any) -> list[EvalTarget]:
    """The envs a training run's config trains on: its mixture members, its env section (with
    its ``spec``), or the catalog env whose app the section names (its ``text_spec_path``)."""
    members = cfg.members() if hasattr(cfg, "members") else None
    if members:
        return [
            EvalTarget(
                m.name,
                m.section.app,
                m.section.spec,
                dict(m.section.spec_kwargs),
                list(m.section.base_urls),
                m.section.server_options(),
            )
            for m in members
        ]
    env = cfg.env
    spec, kwargs = getattr(env, "spec", None), dict(getattr(env, "spec_kwargs", {}) or {})
    name = env.app.split(":")[0].split(".")[0]
    if spec is None:
        from ..catalog import env_names, get_entry

        for entry_name in env_names():
            entry = get_entry(entry_name)
            if entry.app == env.app and entry.text_spec_path:
                name, spec = entry.name, entry.text_spec_path
                break
    if spec is None:
        raise ValueError(
            f"env.app: {env.app!r} has no text spec to evaluate with; give the run's env a "
            "`spec:` (module:Class) or register a text_spec_path in its catalog entry"
        )
    return [EvalTarget(name, env.app, spec, kwargs, list(env.base_urls), env.server_options())]


def results_rows(report: dict[str, dict[str, float]]) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the pass@k table (one row per env)."""
    keys: list[str] = []
    for scores in report.values():
        keys += [key for key in scores if key.startswith(("pass@", "mean@")) and key not in keys]
    header = ["env", "tasks", "k", *keys]
    rows = [
        [
            env,
            str(int(s.get("tasks", 0))),
            str(int(s.get("k", 0))),
            *(f"{s[key]:.3f}" if key in s else "-" for key in keys),
        ]
        for env, s in report.items()
    ]
    return header, rows
