"""Countdown with every final reward doubled: the env "changed between versions" that replay
must catch (served by the replay test as ``countdown_variant:app``)."""

from __future__ import annotations

from typing import Any

from openenv_train.server import create_app
from recipes.grpo_text.countdown import (
    CountdownAction,
    CountdownEnvironment,
    CountdownObservation,
    CountdownState,
)


class DoubledCountdown(CountdownEnvironment):
    async def step(self, action: CountdownAction, **kwargs: Any) -> CountdownObservation:
        obs = await super().step(action, **kwargs)
        return obs.model_copy(update={"reward": 2 * (obs.reward or 0.0)}) if obs.done else obs


app = create_app(DoubledCountdown, CountdownAction, CountdownObservation, CountdownState)
