"""The ported echo env (OpenEnv's FastMCP tools, unchanged) scored for training.

The env only echoes; training needs a task. As an OpenEnv user adds a reward to an MCP env, this
subclass sets reward and done in ``on_tool_result`` (the hook after a tool call made through
``step``): one ``echo_with_length`` call is the episode, scored by the echoed length (capped at
``MAX_LENGTH``), so GRPO learns to send longer messages.
"""

from __future__ import annotations

from openenv_echo_env.server.echo_environment import EchoEnvironment

from openenv_train import CallToolAction, CallToolObservation
from openenv_train.openenv import create_app

MAX_LENGTH = 8


class ScoredEcho(EchoEnvironment):
    def on_tool_result(self, observation: CallToolObservation) -> CallToolObservation:
        echoed = getattr(observation.result, "data", None)  # FastMCP's structured result
        length = echoed.get("length", 0) if isinstance(echoed, dict) else 0
        observation.reward = min(length, MAX_LENGTH) / MAX_LENGTH
        observation.done = True
        return observation


app = create_app(ScoredEcho, CallToolAction, CallToolObservation, env_name="scored_echo")
