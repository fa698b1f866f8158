"""``GenericEnvClient``: drive any env server without its package (dict actions, dict observations)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from ..core.models import Observation, StepResult
from .env_client import EnvClient


class GenericObservation(Observation):
    """An observation that keeps whatever fields the server sends."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, arbitrary_types_allowed=True)


class GenericEnvClient(EnvClient[Any, Any, Any]):
    """Like OpenEnv's ``GenericEnvClient``: ``step({"action": 1})``; ``result.observation`` is the
    server's observation dict (without ``reward``/``done``, which are on the result); ``state()``
    is a dict.
    """

    observation_cls = GenericObservation

    def _step_payload(self, action: Any) -> dict[str, Any]:
        if isinstance(action, dict):
            return action
        if isinstance(action, BaseModel):
            return action.model_dump()
        raise TypeError(
            f"GenericEnvClient.step() expects a dict of action fields (or a pydantic model), "
            f"got {type(action).__name__}"
        )

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[Any]:
        obs = payload.get("observation")
        return StepResult(
            observation=obs if isinstance(obs, dict) else {},
            reward=payload.get("reward"),
            done=bool(payload.get("done", False)),
            metadata=payload.get("metadata") or {},
        )

    def _parse_state(self, payload: dict[str, Any]) -> dict[str, Any]:
        return payload


class GenericAction(dict[str, Any]):
    """OpenEnv's ``GenericAction``: a dict built from keywords, for ``GenericEnvClient.step``.

    ``env.step(GenericAction(code="print(1)"))`` is ``env.step({"code": "print(1)"})``.
    """

    def __init__(self, **fields: Any) -> None:
        super().__init__(fields)

    def __repr__(self) -> str:
        return "GenericAction(" + ", ".join(f"{k}={v!r}" for k, v in self.items()) + ")"
