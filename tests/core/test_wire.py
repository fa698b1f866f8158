"""The wire encoding matches OpenEnv 0.10's, checked against OpenEnv's own serializer.

``wire`` is the one encoder: the server writes every frame with it and the client reads with it.
"""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from openenv_train.core import (
    Action,
    ActionValidationError,
    CallToolAction,
    CapacityReachedError,
    EnvServerError,
    ErrorCode,
    InfrastructureError,
    ListToolsAction,
    Observation,
    State,
    error_from_frame,
    wire,
)


class CountObservation(Observation):
    count: int
    note: str = ""


class MoveAction(Action):
    direction: str


def test_observation_payload_lifts_reward_and_done_like_openenv() -> None:
    from openenv.core.env_server.serialization import serialize_observation
    from openenv.core.env_server.types import Observation as OEObservation

    class OECount(OEObservation):
        count: int
        note: str = ""

    for reward in (1.5, None, 2, True, -0.0):
        obs = CountObservation(count=3, note="x", reward=reward, done=True)
        ours = json.loads(wire.observation_json(obs))
        theirs = serialize_observation(OECount(count=3, note="x", reward=reward, done=True))
        assert ours["observation"] == theirs["observation"]
        assert (ours["reward"], ours["done"]) == (theirs["reward"], theirs["done"])
        assert "reward" not in ours["observation"] and "done" not in ours["observation"]
    frame = json.loads(wire.observation_frame_json(CountObservation(count=1)))
    assert frame["type"] == "observation" and frame["data"]["observation"]["count"] == 1


def test_parse_observation_round_trips() -> None:
    obs = CountObservation(count=7, reward=-1, done=True, metadata={"k": 1})
    back = wire.parse_observation(json.loads(wire.observation_json(obs)), CountObservation)
    assert back == obs


def test_action_rejects_unknown_fields_naming_them() -> None:
    with pytest.raises(ValidationError) as info:
        wire.parse_action({"direction": "up", "speed": 3}, MoveAction)
    assert "speed" in str(info.value)


def test_mcp_actions_are_recognised_only_for_mcp_envs() -> None:
    assert isinstance(wire.parse_action({"type": "list_tools"}, Action), ListToolsAction)
    call = wire.parse_action({"type": "call_tool", "tool_name": "t", "arguments": {"a": 1}}, Action)
    assert isinstance(call, CallToolAction) and call.arguments == {"a": 1}
    with pytest.raises(ValidationError):
        wire.parse_action({"type": "list_tools"}, MoveAction)


def test_state_allows_extra_fields() -> None:
    state = State(episode_id="e", step_count=2, score=9)
    assert json.loads(wire.state_frame_json(state)) == {
        "type": "state",
        "data": {"episode_id": "e", "step_count": 2, "score": 9},
    }
    with pytest.raises(ValidationError):
        State(step_count=-1)


def test_frames_have_openenv_shapes() -> None:
    assert wire.reset_frame(seed=3, episode_id=None) == {"type": "reset", "data": {"seed": 3}}
    assert wire.step_frame({"direction": "up"}) == {"type": "step", "data": {"direction": "up"}}
    err = json.loads(wire.error_frame_json(ErrorCode.UNKNOWN_TYPE, "Unknown message type: nope"))
    assert err == {
        "type": "error",
        "data": {"message": "Unknown message type: nope", "code": "UNKNOWN_TYPE"},
    }


def test_error_frames_map_to_typed_exceptions() -> None:
    exc = error_from_frame(
        {"code": "VALIDATION_ERROR", "message": "Invalid message", "errors": [{"loc": ["x"]}]}
    )
    assert isinstance(exc, ActionValidationError) and exc.errors == [{"loc": ["x"]}]
    cap = error_from_frame(
        {"code": "CAPACITY_REACHED", "message": "full", "active_sessions": 2, "max_sessions": 2}
    )
    assert isinstance(cap, CapacityReachedError) and isinstance(cap, InfrastructureError)
    assert cap.data == {"active_sessions": 2, "max_sessions": 2}
    unknown = error_from_frame({"code": "SOMETHING_NEW", "message": "?"})
    assert type(unknown) is EnvServerError and unknown.code == "SOMETHING_NEW"
    assert str(unknown) == "[SOMETHING_NEW] ?"
