"""``CodingEnv``: the typed client of the coding env."""

from __future__ import annotations

from openenv_train import EnvClient

from .models import CodeAction, CodingObservation, CodingState


class CodingEnv(EnvClient[CodeAction, CodingObservation, CodingState]):
    """``async with CodingEnv(base_url=...) as env: await env.reset(task_id="add")``;
    ``await env.step(CodeAction(code=...))`` -> passed/total and reward."""

    action_cls = CodeAction
    observation_cls = CodingObservation
    state_cls = CodingState
