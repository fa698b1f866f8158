"""Episode records, batch results, typed rollout errors and TRL output validation."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .errors import EpisodeTimeoutError as EpisodeTimeoutError
from .errors import GroupsDroppedError as GroupsDroppedError
from .errors import MissingRewardError as MissingRewardError
from .errors import RolloutOutputError as RolloutOutputError


@dataclass
class EpisodeRecord:
    """One finished episode, ready for a GRPO trainer.

    ``completion_ids`` holds every model turn and the env text between them, in order; ``env_mask``
    is 1 on model tokens and 0 on env tokens; ``logprobs`` are the sampling logprobs of model tokens
    (0.0 on env tokens). ``model_texts`` holds the text each model turn gave the env (what a
    trajectory stores and ``openenv-train replay`` plays again); empty when not recorded.
    """

    row: int
    group: int
    prompt: Any
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    env_mask: list[int]
    reward: float
    num_turns: int
    metrics: dict[str, Any] = field(default_factory=dict)
    model_texts: list[str] = field(default_factory=list)

    @classmethod
    def of(
        cls, attempt: Any, tokens: Any, *, reward: float, num_turns: int, metrics: dict[str, Any]
    ) -> EpisodeRecord:
        """The record of ``attempt`` (row, group, prompt) from anything holding the episode's
        ``prompt_ids``, ``completion_ids``, ``logprobs`` and ``env_mask``."""
        return cls(
            row=attempt.row,
            group=attempt.group,
            prompt=attempt.prompt,
            prompt_ids=tokens.prompt_ids,
            completion_ids=tokens.completion_ids,
            logprobs=tokens.logprobs,
            env_mask=tokens.env_mask,
            reward=reward,
            num_turns=num_turns,
            metrics=metrics,
            model_texts=list(getattr(tokens, "model_texts", None) or []),
        )


@dataclass
class RolloutBatch:
    """The result of one engine run: ``rows[i]`` is ``None`` when row ``i``'s group was dropped."""

    rows: list[EpisodeRecord | None]
    group_size: int
    dropped_groups: list[int] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def records(self) -> list[EpisodeRecord]:
        return [r for r in self.rows if r is not None]

    @property
    def complete(self) -> bool:
        return not self.dropped_groups

    def to_trl(self, reward_key: str = "env_reward") -> dict[str, Any]:
        """TRL ``rollout_func`` output (raises :class:`GroupsDroppedError` if rows are missing)."""
        if not self.complete:
            raise GroupsDroppedError(
                f"{len(self.dropped_groups)} GRPO group(s) {self.dropped_groups} failed on "
                f"infrastructure errors {dict(self.errors)}; no rows are invented for them",
                dropped=list(self.dropped_groups),
                errors=dict(self.errors),
            )
        recs = self.records
        out: dict[str, Any] = {
            "prompt_ids": [r.prompt_ids for r in recs],
            "completion_ids": [r.completion_ids for r in recs],
            "logprobs": [r.logprobs for r in recs],
            "env_mask": [r.env_mask for r in recs],
            reward_key: [r.reward for r in recs],
            "num_turns": [r.num_turns for r in recs],
            "episode_metrics": [r.metrics for r in recs],
        }
        validate_rollout_output(out, len(self.rows), reward_key=reward_key)
        return out


def validate_rollout_output(out: Any, num_rows: int, *, reward_key: str | None = None) -> None:
    """Check a ``rollout_func`` result before TRL sees it (TRL itself fails deep with IndexError)."""
    if not isinstance(out, dict):
        raise RolloutOutputError(
            f"rollout output must be a dict of per-row lists, got {type(out).__name__}"
        )
    required = ["prompt_ids", "completion_ids", "logprobs"] + ([reward_key] if reward_key else [])
    missing = [k for k in required if k not in out]
    if missing:
        raise RolloutOutputError(
            f"rollout output is missing key(s) {missing}; TRL needs prompt_ids, completion_ids "
            f"and logprobs (None allowed){', and the reward key ' + repr(reward_key) if reward_key else ''}"
        )
    for key, value in out.items():
        if value is None and key == "logprobs":
            continue
        if isinstance(value, list) and len(value) != num_rows:
            raise RolloutOutputError(
                f"rollout output[{key!r}] has {len(value)} rows but there are {num_rows} prompts; "
                "return exactly one row per prompt (prompts already repeat num_generations times)"
            )
    for key in ("prompt_ids", "completion_ids"):
        if not isinstance(out[key], list):
            raise RolloutOutputError(f"rollout output[{key!r}] must be a list of token-id lists")
    for i, ids in enumerate(out["completion_ids"]):
        if not ids:
            raise RolloutOutputError(
                f"rollout output['completion_ids'][{i}] is empty; TRL needs at least one completion "
                "token per row (drop or retry the episode instead)"
            )
    lengths = [len(ids) for ids in out["completion_ids"]]
    for key in ("logprobs", "env_mask"):
        rows = out.get(key)
        if rows is None:
            continue
        for i, (row, n) in enumerate(zip(rows, lengths, strict=False)):
            if len(row) != n:
                raise RolloutOutputError(
                    f"rollout output[{key!r}][{i}] has {len(row)} entries but completion_ids[{i}] "
                    f"has {n}; {key} needs one entry per completion token"
                )
    if "env_mask" in out and out["env_mask"] is not None:
        for i, row in enumerate(out["env_mask"]):
            if any(v not in (0, 1) for v in row):
                raise RolloutOutputError(
                    f"rollout output['env_mask'][{i}] holds values other than 0/1 "
                    "(1 = model token trained on, 0 = env/tool token)"
                )
            if not any(row):
                raise RolloutOutputError(
                    f"rollout output['env_mask'][{i}] is all 0: the row has no model token to train on"
                )
