"""``NotesClient``: a typed client for a notes env server (one session = one agent process)."""

from __future__ import annotations

from openenv_train import EnvClient, State
from openenv_train.agents.harness_env import HarnessAction, HarnessObservation


class NotesClient(EnvClient[HarnessAction, HarnessObservation, State]):
    action_cls = HarnessAction
    observation_cls = HarnessObservation
    state_cls = State
