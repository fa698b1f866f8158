"""The OpenEnv 0.10 wire format, both directions, in one place.

Server side: observation, state and error frames are written as text around pydantic's Rust
``model_dump_json``, so no intermediate dicts or wrapper models are built per frame (the bytes
match OpenEnv 0.10's ``serialize_observation``: ``reward`` and ``done`` lifted next to the
observation). Client side: request frames and the inverse of the observation encoding.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import ErrorCode
from .mcp_types import MCP_ACTION_TYPES
from .models import Action, Observation, State

_LIFTED = {"reward", "done"}
_float_repr = float.__repr__
_int_repr = int.__repr__


def _default(obj: Any) -> Any:
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    return str(obj)


#: Compact JSON; unknown objects become strings rather than failing the reply. (A shared encoder:
#: ``json.dumps`` with keyword arguments builds a new encoder on every call.)
dumps = json.JSONEncoder(separators=(",", ":"), default=_default).encode


# ---- server -> client ---------------------------------------------------------------------


def observation_json(obs: Observation) -> str:
    """``{"observation": {...}, "reward": r, "done": d[, "metadata": {...}]}`` as text."""
    body = obs.__pydantic_serializer__.to_json(obs, exclude=_LIFTED).decode()
    reward = obs.reward
    if reward is None:
        r = "null"
    elif reward is True:
        r = "true"
    elif reward is False:
        r = "false"
    elif type(reward) is float and reward - reward == 0.0:  # finite
        r = _float_repr(reward)
    elif type(reward) is int:
        r = _int_repr(reward)
    else:
        r = dumps(reward)
    d = "true" if obs.done else "false"
    if obs.metadata:
        return f'{{"observation":{body},"reward":{r},"done":{d},"metadata":{dumps(obs.metadata)}}}'
    return f'{{"observation":{body},"reward":{r},"done":{d}}}'


def observation_frame_json(obs: Observation) -> str:
    return f'{{"type":"observation","data":{observation_json(obs)}}}'


def state_json(state: State | dict[str, Any]) -> str:
    if isinstance(state, dict):
        return dumps(state)
    return state.model_dump_json()


def state_frame_json(state: State | dict[str, Any]) -> str:
    return f'{{"type":"state","data":{state_json(state)}}}'


def error_frame_json(code: ErrorCode, message: str, **extra: Any) -> str:
    return dumps({"type": "error", "data": {"message": message, "code": code.value, **extra}})


def parse_action(data: dict[str, Any], action_cls: type[Action]) -> Action:
    """Validate an action dict; MCP ``list_tools``/``call_tool`` are recognised for MCP envs."""
    kind = data.get("type") if isinstance(data, dict) else None
    mcp_cls = MCP_ACTION_TYPES.get(kind) if type(kind) is str else None  # a list is unhashable
    if mcp_cls is not None and (action_cls is Action or action_cls in MCP_ACTION_TYPES.values()):
        return mcp_cls.model_validate(data)
    return action_cls.model_validate(data)


#: OpenEnv's name for :func:`parse_action`.
deserialize_action = parse_action


def deserialize_action_with_preprocessing(
    action_data: dict[str, Any], action_cls: type[Action]
) -> Action:
    """:func:`parse_action` after OpenEnv's web-form conversions: a ``call_tool`` action's
    ``arguments`` given as a JSON string become an object, a string ``action_id`` of digits
    becomes an int, and ``tokens`` given as a JSON string become a list (a list, not a torch
    tensor: the core never imports torch)."""
    data = dict(action_data)
    if data.get("type") == "call_tool" and isinstance(data.get("arguments"), str):
        try:
            data["arguments"] = json.loads(data["arguments"])
        except ValueError:
            pass  # left as is: validation names the field
    if isinstance(data.get("action_id"), str):
        try:
            data["action_id"] = int(data["action_id"])
        except ValueError:
            pass
    if isinstance(data.get("tokens"), str):
        try:
            data["tokens"] = json.loads(data["tokens"])
        except ValueError:
            data["tokens"] = []
    return parse_action(data, action_cls)


# ---- client -> server, and reading replies ------------------------------------------------


def reset_frame(**kwargs: Any) -> dict[str, Any]:
    return {"type": "reset", "data": {k: v for k, v in kwargs.items() if v is not None}}


def step_frame(action: dict[str, Any]) -> dict[str, Any]:
    return {"type": "step", "data": action}


STATE_FRAME: dict[str, Any] = {"type": "state"}
CLOSE_FRAME: dict[str, Any] = {"type": "close"}


def parse_observation(payload: dict[str, Any], obs_cls: type[Observation]) -> Observation:
    """Inverse of :func:`observation_json` (given its decoded ``dict``)."""
    data = dict(payload.get("observation") or {})
    data["reward"] = payload.get("reward")
    data["done"] = bool(payload.get("done", False))
    return obs_cls.model_validate(data)
