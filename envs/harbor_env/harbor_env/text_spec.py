"""``HarborTextSpec``: the harbor env for token-level policies (the rollout engine, pass@k in
``openenv-train eval``): the instruction and the tool list are the prompt, each model answer is
one Hermes-style tool call (``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``), the
tool's output is the env's reply. An answer with no tool call means "done": it submits, so the
tests always grade the episode. A malformed call is an invalid action (reward 0, no tests)."""

from __future__ import annotations

from typing import Any

from openenv_train import Action, CallToolAction, StepResult
from openenv_train.rollout.spec import TextEnvSpec

from .client import HarborClient

TOOLS_TEXT = (
    "Tools (answer with one call per turn, "
    '<tool_call>{"name": NAME, "arguments": {...}}</tool_call>): '
    "run(command, timeout_s), read_file(path), write_file(path, content), submit(). "
    "Answer without a tool call when you are done."
)


class HarborTextSpec(TextEnvSpec):
    """Harbor tasks as text; ``instructions=False`` leaves the tool list out of the prompt.
    ``task_from_prompt=True``: the dataset prompt is the task id (a GRPO group shares its task);
    otherwise the env picks (``seed`` from the caller, as ``eval`` passes it)."""

    invalid_action_reward = 0.0  # a task's tests score in [0, 1]: a broken answer earns 0
    truncation_reward = 0.0
    env_role = "tool"

    def __init__(self, *, instructions: bool = True, task_from_prompt: bool = False) -> None:
        self.instructions, self.task_from_prompt = instructions, task_from_prompt

    def reset_kwargs(self, prompt: Any, group: int, row: int) -> dict[str, Any]:
        if self.task_from_prompt and isinstance(prompt, str) and prompt.strip():
            return {"task_id": prompt.strip()}
        return {}

    def make_client(
        self, base_url: str, *, timeout: float = 120.0, connect_timeout: float = 10.0
    ) -> Any:
        return HarborClient(base_url, timeout=max(timeout, 120.0), connect_timeout=connect_timeout)

    def initial_prompt(self, result: StepResult[Any], prompt: Any) -> str:
        text = result.observation.instruction.strip()
        return f"{text}\n\n{TOOLS_TEXT}" if self.instructions else text

    def render(self, result: StepResult[Any]) -> str:
        obs = result.observation
        if getattr(obs, "error", None) is not None:
            return f"error: {obs.error.message}"
        from openenv_train.client.mcp_client import unwrap_tool_result

        value = unwrap_tool_result(getattr(obs, "result", None))
        return value if isinstance(value, str) else str(value)

    def parse_action(self, text: str) -> Action | None:
        from openenv_train.harness import parse_tool_calls

        calls = parse_tool_calls(text)
        if not calls:
            return CallToolAction(tool_name="submit", arguments={})
        call = calls[0]
        if call.error or not call.name:
            return None
        return CallToolAction(tool_name=call.name, arguments=dict(call.arguments))
