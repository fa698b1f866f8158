"""``TextEnvSpec``: the small piece of env-specific glue the rollout engine needs.

The engine is generic over envs; a spec says how to open a client, how to turn an observation into
text for the model, and how to turn the model's text back into an action. A parse failure is an
*invalid action* with its own reward (the agent's fault), never an infrastructure error.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ..core.models import Action, StepResult


class TextEnvSpec(ABC):
    """Text glue between one reset/step env and a token-level policy.

    Subclasses set ``client_cls`` (an ``EnvClient`` subclass) or override :meth:`make_client`,
    and implement :meth:`initial_prompt`, :meth:`render` and :meth:`parse_action`.
    """

    #: ``EnvClient`` subclass used by the default :meth:`make_client`.
    client_cls: Any = None
    #: Reward of an episode whose model answer could not be parsed (the game ends there).
    invalid_action_reward: float = -1.0
    #: Reward of an episode cut by ``max_turns`` / the episode token budget before ``done``.
    truncation_reward: float = -1.0
    #: Role used for env text appended after a model turn when a chat template is applied.
    env_role: str = "user"
    #: Every word the env's text and the valid answers use: enough for a word-level tokenizer
    #: (``openenv_train.policy.tiny.build_tiny_model``). Empty when the spec does not say.
    vocabulary: tuple[str, ...] = ()

    def make_client(
        self, base_url: str, *, timeout: float = 30.0, connect_timeout: float = 10.0
    ) -> Any:
        """An unconnected client for ``base_url`` (the pool calls ``connect()`` on it)."""
        if self.client_cls is None:
            raise TypeError(
                f"{type(self).__name__}.client_cls is not set; set it to your EnvClient subclass "
                "or override make_client(base_url, ...)"
            )
        return self.client_cls(base_url, timeout=timeout, connect_timeout=connect_timeout)

    def begin_run(self) -> None:
        """Called once at the start of every ``RolloutEngine.run`` (e.g. to advance seeds)."""
        return None

    def reset_kwargs(self, prompt: Any, group: int, row: int) -> dict[str, Any]:
        """Keyword arguments for ``client.reset`` (e.g. a seed). ``group``/``row`` index the call."""
        return {}

    @abstractmethod
    def initial_prompt(self, result: StepResult[Any], prompt: Any) -> str:
        """The first user text, from the reset result and the trainer's dataset prompt (a string or,
        for conversational datasets, a list of messages)."""

    @abstractmethod
    def render(self, result: StepResult[Any]) -> str:
        """The env text appended after a model turn when the episode goes on (env_mask 0)."""

    @abstractmethod
    def parse_action(self, text: str) -> Action | None:
        """The action in the model's answer, or ``None`` when it is not a valid action."""

    def final_reward(self, result: StepResult[Any]) -> float | None:
        """Reward of a finished episode; ``None`` means the env gave none (a protocol error)."""
        return None if result.reward is None else float(result.reward)


class SeededTextSpec(TextEnvSpec):
    """A ``TextEnvSpec`` whose episodes are repeatable: with ``seed`` set, the ``c``-th run resets
    with ``seed + c * 1_000_003 + k`` where ``k`` is the GRPO group (``same_task_per_group``: the
    group's episodes answer the same task, as GRPO compares them) or else the row. Fresh tasks
    every run, the same ones on every machine; ``seed=None`` lets the env draw."""

    def __init__(self, seed: int | None = None, same_task_per_group: bool = True) -> None:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"seed must be an integer >= 0 or None, got {seed!r}")
        self.seed = seed
        self.same_task_per_group = bool(same_task_per_group)
        self._calls = -1

    def begin_run(self) -> None:
        self._calls += 1

    def reset_kwargs(self, prompt: Any, group: int, row: int) -> dict[str, Any]:
        if self.seed is None:
            return {}
        k = group if self.same_task_per_group else row
        return {"seed": self.seed + max(self._calls, 0) * 1_000_003 + k}
