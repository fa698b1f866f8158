"""Fast JSON in and out for the per-frame path, and readable validation errors.

Observation and state frames are assembled around pydantic's Rust ``model_dump_json`` so no
intermediate dicts or wrapper models are built per frame. The bytes on the wire match
``openenv_train.core.wire`` (and OpenEnv 0.10's ``serialize_observation``).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from ..core.errors import ErrorCode
from ..core.models import Observation, State

try:  # orjson is optional; it only makes parsing and error frames faster
    import orjson

    def loads(text: str | bytes) -> Any:
        return orjson.loads(text)

    JSONDecodeError: tuple[type[Exception], ...] = (orjson.JSONDecodeError, ValueError)
except ImportError:  # pragma: no cover - exercised where orjson is absent
    loads = json.loads
    JSONDecodeError = (json.JSONDecodeError, ValueError)

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


def errors_list(exc: ValidationError) -> list[dict[str, Any]]:
    """Pydantic's error list made JSON-safe (custom validator errors carry exceptions in ctx)."""
    return json.loads(exc.json())


def describe_errors(errors: list[dict[str, Any]], limit: int = 5) -> str:
    """``'action': Field required; 'colour': Extra inputs are not permitted`` (field first)."""
    parts = []
    for err in errors[:limit]:
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        parts.append(f"{loc!r}: {err.get('msg', 'invalid')}")
    more = len(errors) - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)
