"""Encoding of observations, states and ``/ws`` frames exactly as OpenEnv 0.10 puts them on the wire."""

from __future__ import annotations

from typing import Any

from .errors import ErrorCode
from .mcp import MCP_ACTION_TYPES
from .models import Action, Observation, State

_LIFTED = {"reward", "done"}


def observation_payload(obs: Observation) -> dict[str, Any]:
    """``{"observation": {...without reward/done}, "reward": ..., "done": ...}``."""
    return {
        "observation": obs.model_dump(exclude=_LIFTED),
        "reward": obs.reward,
        "done": obs.done,
    }


def parse_observation(payload: dict[str, Any], obs_cls: type[Observation]) -> Observation:
    """Inverse of :func:`observation_payload`."""
    data = dict(payload.get("observation") or {})
    data["reward"] = payload.get("reward")
    data["done"] = bool(payload.get("done", False))
    return obs_cls.model_validate(data)


def parse_action(data: dict[str, Any], action_cls: type[Action]) -> Action:
    """Validate an action dict; MCP ``list_tools``/``call_tool`` are recognised for MCP envs."""
    mcp_cls = MCP_ACTION_TYPES.get(data.get("type")) if isinstance(data, dict) else None
    if mcp_cls is not None and (action_cls is Action or action_cls in MCP_ACTION_TYPES.values()):
        return mcp_cls.model_validate(data)
    return action_cls.model_validate(data)


def state_payload(state: State) -> dict[str, Any]:
    return state.model_dump()


# ---- frames -------------------------------------------------------------------------------


def reset_frame(**kwargs: Any) -> dict[str, Any]:
    return {"type": "reset", "data": {k: v for k, v in kwargs.items() if v is not None}}


def step_frame(action: dict[str, Any]) -> dict[str, Any]:
    return {"type": "step", "data": action}


STATE_FRAME: dict[str, Any] = {"type": "state"}
CLOSE_FRAME: dict[str, Any] = {"type": "close"}


def mcp_frame(request: dict[str, Any]) -> dict[str, Any]:
    return {"type": "mcp", "data": request}


def observation_frame(obs: Observation) -> dict[str, Any]:
    return {"type": "observation", "data": observation_payload(obs)}


def state_frame(state: State) -> dict[str, Any]:
    return {"type": "state", "data": state_payload(state)}


def error_frame(code: ErrorCode, message: str, **extra: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code.value, **extra}}
