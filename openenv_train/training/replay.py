"""Replay stored eval trajectories against an env: the same seeds and ``reset`` arguments, the
stored model answers (parsed by the env's text spec, as in the rollout) and the reward
recomputed the way the rollout engine scores an episode (invalid answer, truncation, the env's
final reward). A reward that differs from the stored one means the env changed between
versions or is not deterministic.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .passk import EvalTarget


@dataclass
class Difference:
    """One episode whose replayed reward is not the stored one."""

    env: str
    task: int
    sample: int
    seed: int | None
    stored: float
    replayed: float | None
    why: str = ""


@dataclass
class ReplayReport:
    episodes: int = 0
    differences: list[Difference] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "episodes": self.episodes,
            "differing": len(self.differences),
            "differences": [d.__dict__ for d in self.differences],
        }


def read_trajectories(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a trajectory file; a line that is not a trajectory names its number."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(
            f"trajectories: {str(path)!r} is not a file; pass the JSONL that `openenv-train "
            "eval --k K` wrote"
        )
    rows = []
    for n, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{p}:{n}: not JSON ({err})") from None
        missing = [
            k for k in ("env", "app", "spec", "reset_kwargs", "turns", "reward") if k not in row
        ]
        if missing:
            raise ValueError(f"{p}:{n}: trajectory lacks {missing}; was it written by eval --k?")
        rows.append(row)
    return rows


async def replay_episode(client: Any, spec: Any, row: dict[str, Any]) -> float | None:
    """The reward of ``row``'s stored answers played again on ``client``'s env."""
    await client.reset(**row["reset_kwargs"])
    answers = [t["text"] for t in row["turns"] if t.get("role") == "model"]
    for text in answers:
        action = spec.parse_action(text)
        if action is None:
            return float(spec.invalid_action_reward)
        step = await client.step(action)
        if step.done:
            return spec.final_reward(step)
    return float(spec.truncation_reward)  # answers ran out before the env finished


async def replay_rows(
    rows: Sequence[dict[str, Any]], urls: dict[str, str], *, tolerance: float = 1e-9
) -> ReplayReport:
    """Replay every row on the server of its env (``urls``: env name -> base URL)."""
    report = ReplayReport()
    specs: dict[str, Any] = {}
    clients: dict[str, Any] = {}
    try:
        for row in rows:
            env = row["env"]
            if env not in specs:
                specs[env] = EvalTarget(
                    env, row["app"], row["spec"], row.get("spec_kwargs") or {}
                ).make_spec()
                clients[env] = await specs[env].make_client(urls[env]).connect()
            replayed = await replay_episode(clients[env], specs[env], row)
            report.episodes += 1
            stored = float(row["reward"])
            if replayed is None or abs(replayed - stored) > tolerance:
                report.differences.append(
                    Difference(
                        env,
                        int(row.get("task", -1)),
                        int(row.get("sample", -1)),
                        row.get("seed"),
                        stored,
                        replayed,
                        "no reward at the end" if replayed is None else "",
                    )
                )
    finally:
        for client in clients.values():
            await client.close()
    return report


def replay_file(
    path: str | Path,
    *,
    urls: dict[str, str] | None = None,
    apps: dict[str, str] | None = None,
    tolerance: float = 1e-9,
) -> ReplayReport:
    """Replay a trajectory file. Each env's server: ``urls[env]`` if given, else a local server
    of ``apps[env]`` (an env variant) or of the stored app, started here and stopped again."""
    from ..client.sync import run_blocking
    from ..runtime import start_servers

    rows = read_trajectories(path)
    urls = dict(urls or {})
    started = []
    try:
        for env, app in envs_of(rows).items():
            if env not in urls:
                group = start_servers((apps or {}).get(env, app), 1)
                started.append(group)
                urls[env] = group.base_urls[0]
        return run_blocking(replay_rows(rows, urls, tolerance=tolerance))
    finally:
        for group in started:
            group.stop()


def envs_of(rows: Iterable[dict[str, Any]]) -> dict[str, str]:
    """env name -> stored app, in first-seen order."""
    out: dict[str, str] = {}
    for row in rows:
        out.setdefault(row["env"], row["app"])
    return out
