"""The two verifiers APIs behind one adapter: v0 (verifiers 0.3: ``load_environment``, a dataset
and a ``Rubric``) and v1 (verifiers 0.4: ``verifiers.v1``, a ``Taskset`` of typed ``Task``s
scored on a ``Trace``). Each gives rows (prompt messages, answer) and an async scorer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

#: ``score(row index, answer) -> (reward, per-function scores)``
Scorer = Callable[[int, str], Awaitable[tuple[float, dict[str, float]]]]


def api_version() -> str:
    """``"v0"`` while the installed verifiers has its classic ``load_environment`` (0.3.x, which
    also ships an early ``verifiers.v1``), else ``"v1"`` (0.4+: ``verifiers.v1`` only)."""
    import verifiers

    return "v0" if hasattr(verifiers, "load_environment") else "v1"


def load_v0(env_id: str) -> tuple[list[dict[str, Any]], Scorer]:
    """``verifiers.load_environment(env_id)``: its dataset rows, scored by its rubric."""
    import verifiers as vf

    env = vf.load_environment(env_id)
    dataset = env.get_dataset() if hasattr(env, "get_dataset") else env.dataset
    rows = [dict(row) for row in dataset or []]

    async def score(index: int, answer: str) -> tuple[float, dict[str, float]]:
        from verifiers.types import State
        from verifiers.utils.message_utils import normalize_messages

        row = rows[index]
        state = State(input=dict(row))
        state["task"] = dict(row)
        state["prompt"] = normalize_messages(row.get("prompt") or [], field_name="prompt")
        state["completion"] = normalize_messages(
            [{"role": "assistant", "content": answer}], field_name="completion"
        )
        state["trajectory"] = []
        await env.rubric.score_rollout(state)
        metrics = state.get("metrics") or {}
        scores = {str(k): float(v) for k, v in metrics.items() if isinstance(v, (int, float))}
        return float(state["reward"]), scores

    return rows, score


def _messages_v1(data: Any) -> list[dict[str, str]]:
    from verifiers.v1.types import content_text

    out = [{"role": "system", "content": data.system_prompt}] if data.system_prompt else []
    if isinstance(data.prompt, str):
        return [*out, {"role": "user", "content": data.prompt}]
    for message in data.prompt or []:
        out.append({"role": str(message.role), "content": content_text(message.content) or ""})
    return out


def load_v1(env_id: str) -> tuple[list[dict[str, Any]], Scorer]:
    """The ``Taskset`` that ``env_id`` names (verifiers' own plugin lookup): one row per task
    (a bounded taskset only), scored by the task's rewards on a one-reply trace."""
    from verifiers.v1.configs.agent import AgentConfig
    from verifiers.v1.configs.taskset import TasksetConfig
    from verifiers.v1.graph import MessageNode
    from verifiers.v1.trace import AgentInfo, Trace, TraceTask
    from verifiers.v1.types import AssistantMessage
    from verifiers.v1.utils.generic import concrete_type
    from verifiers.v1.utils.loaders import taskset_class

    cls = taskset_class(env_id)
    config_type = concrete_type(cls, TasksetConfig) or TasksetConfig
    taskset = cls(config_type(id=env_id))
    if not taskset.bounded:
        raise ValueError(f"verifiers taskset {env_id!r} is unbounded: serve a bounded one")
    tasks = list(taskset)
    rows = []
    for i, task in enumerate(tasks):
        answer = getattr(task.data, "answer", None)
        rows.append(
            {
                "prompt": _messages_v1(task.data),
                "answer": None if answer is None else str(answer),
                "example_id": task.data.idx if task.data.idx is not None else i,
            }
        )

    async def score(index: int, answer: str) -> tuple[float, dict[str, float]]:
        task = tasks[index]
        trace = Trace(
            task=TraceTask(type=type(task).__name__, data=task.data, key=task.key, hash=task.hash),
            agent=AgentInfo(config=AgentConfig()),
            nodes=[MessageNode(message=AssistantMessage(content=answer), sampled=True)],
        )
        await task.score(trace)  # no runtime: rewards that need a sandbox are skipped
        scores = {k: float(r.score) for k, r in trace.rewards.items() if r is not None}
        scores.update({k: float(v) for k, v in trace.metrics.items() if v is not None})
        return float(trace.reward), scores

    return rows, score
