"""Typed base models shared by env servers and clients (OpenEnv 0.10 compatible on the wire)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field


class Action(BaseModel):
    """What an agent sends to ``step``. Unknown fields are rejected so typos never pass silently."""

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, arbitrary_types_allowed=True
    )

    metadata: dict[str, Any] = Field(default_factory=dict)


class Observation(BaseModel):
    """What ``reset``/``step`` return; ``reward`` and ``done`` are lifted to the top level on the wire."""

    model_config = ConfigDict(
        extra="forbid", validate_assignment=True, arbitrary_types_allowed=True
    )

    done: bool = False
    reward: bool | int | float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class State(BaseModel):
    """Episode bookkeeping; envs may add fields freely."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, arbitrary_types_allowed=True)

    episode_id: str | None = None
    step_count: int = Field(default=0, ge=0)


ObsT = TypeVar("ObsT", bound=Observation)
ActT = TypeVar("ActT", bound=Action)
StateT = TypeVar("StateT", bound=State)


@dataclass
class StepResult(Generic[ObsT]):
    """A client's view of one ``reset``/``step`` answer."""

    observation: ObsT
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


class EnvironmentMetadata(BaseModel):
    """Served at ``GET /metadata``."""

    name: str
    description: str = ""
    readme_content: str | None = None
    version: str | None = None
    author: str | None = None
    documentation_url: str | None = None
