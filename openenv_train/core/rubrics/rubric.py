"""``Rubric``: a reward computed from ``(action, observation)``, composable like ``nn.Module``.

The API matches OpenEnv 0.10's rubrics (RFC 004): subclasses implement ``forward``; calling the
rubric runs pre-hooks, ``forward`` and post-hooks and records ``last_score``. Rubrics assigned as
attributes become children, so a composed reward can be inspected by name
(``named_rubrics()``, ``get_rubric("code.syntax")``).

Sync and async mix freely: a rubric whose ``forward`` (or any child) is async returns an awaitable
from ``__call__``; an all-sync tree returns a plain float, so sync envs pay nothing for async
support.
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

Score = float
PreHook = Callable[["Rubric", Any, Any], Any]
PostHook = Callable[["Rubric", Any, Any, float], Any]


async def _await_all(values: list[Any]) -> None:
    for value in values:
        if inspect.isawaitable(value):
            await value


class Rubric(ABC):
    """Base class of every reward component. Implement ``forward(action, observation) -> float``.

    ``forward`` may be ``async def`` (an LLM judge, a sandboxed test run); then calling the rubric
    returns an awaitable. Children assigned as attributes are registered automatically.
    """

    _rubric_children: dict[str, Rubric]
    _forward_hooks: list[PostHook]
    _forward_pre_hooks: list[PreHook]
    last_score: float | None

    def __init__(self) -> None:
        object.__setattr__(self, "_rubric_children", {})
        object.__setattr__(self, "_forward_hooks", [])
        object.__setattr__(self, "_forward_pre_hooks", [])
        object.__setattr__(self, "last_score", None)

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Rubric):
            if "_rubric_children" not in self.__dict__:
                raise AttributeError(
                    f"{type(self).__name__}: call super().__init__() before assigning child "
                    f"rubric {name!r}"
                )
            self._rubric_children[name] = value
        object.__setattr__(self, name, value)

    # ---- evaluation ---------------------------------------------------------------------

    def __call__(self, action: Any, observation: Any) -> Score | Awaitable[Score]:
        """Score one step: a float, or an awaitable of one when anything below is async."""
        pending = [hook(self, action, observation) for hook in self._forward_pre_hooks]
        if any(inspect.isawaitable(p) for p in pending):
            return self._call_after_hooks(pending, action, observation)
        result = self.forward(action, observation)
        if inspect.isawaitable(result):
            return self._finish_async(result, action, observation)
        return self._finish(result, action, observation)

    async def _call_after_hooks(self, pending: list[Any], action: Any, observation: Any) -> Score:
        await _await_all(pending)
        result = self.forward(action, observation)
        if inspect.isawaitable(result):
            result = await result
        out = self._finish(result, action, observation)
        return await out if inspect.isawaitable(out) else out

    async def _finish_async(self, result: Awaitable[Any], action: Any, observation: Any) -> Score:
        out = self._finish(await result, action, observation)
        return await out if inspect.isawaitable(out) else out

    def _finish(self, result: Any, action: Any, observation: Any) -> Any:
        self.last_score = result
        pending = [hook(self, action, observation, result) for hook in self._forward_hooks]
        if any(inspect.isawaitable(p) for p in pending):
            return self._after_post_hooks(pending, result)
        return result

    @staticmethod
    async def _after_post_hooks(pending: list[Any], result: Score) -> Score:
        await _await_all(pending)
        return result

    @abstractmethod
    def forward(self, action: Any, observation: Any) -> Score | Awaitable[Score]:
        """Compute the reward for one step (typically in [0, 1])."""

    # ---- hooks --------------------------------------------------------------------------

    def register_forward_hook(self, hook: PostHook) -> None:
        """Call ``hook(rubric, action, observation, score)`` after every evaluation."""
        self._forward_hooks.append(hook)

    def register_forward_pre_hook(self, hook: PreHook) -> None:
        """Call ``hook(rubric, action, observation)`` before every evaluation."""
        self._forward_pre_hooks.append(hook)

    # ---- the tree -----------------------------------------------------------------------

    def children(self) -> Iterator[Rubric]:
        yield from self._rubric_children.values()

    def named_children(self) -> Iterator[tuple[str, Rubric]]:
        yield from self._rubric_children.items()

    def rubrics(self) -> Iterator[Rubric]:
        """Every descendant, depth first."""
        for child in self._rubric_children.values():
            yield child
            yield from child.rubrics()

    def named_rubrics(self, prefix: str = "") -> Iterator[tuple[str, Rubric]]:
        """Every descendant with its dotted path (``"code.syntax"``), depth first."""
        for name, child in self._rubric_children.items():
            path = f"{prefix}.{name}" if prefix else name
            yield path, child
            yield from child.named_rubrics(path)

    def get_rubric(self, path: str) -> Rubric:
        """The descendant at a dotted path; ``KeyError`` naming the path when there is none."""
        node: Rubric = self
        for part in path.split("."):
            if part not in node._rubric_children:
                raise KeyError(f"Rubric path not found: {path}")
            node = node._rubric_children[part]
        return node

    def reset(self) -> None:
        """Clear per-episode state (the env calls this from ``reset``); resets children too."""
        for child in self._rubric_children.values():
            child.reset()

    def state_dict(self) -> dict[str, Any]:
        """Configuration to checkpoint (not per-episode data)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned (the base class keeps no configuration)."""
        return None
