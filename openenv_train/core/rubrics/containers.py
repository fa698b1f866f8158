"""Rubrics that combine other rubrics: ``Sequential``, ``Gate``, ``WeightedSum``, and the
``RubricList``/``RubricDict`` holders (OpenEnv 0.10 names and semantics).

Each container calls its children and, only if one of them answers with an awaitable, continues
asynchronously (``WeightedSum`` awaits its async children concurrently).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Iterable, Iterator, Mapping
from typing import Any

from .rubric import Rubric, Score


class Sequential(Rubric):
    """Run children in order and stop at the first 0 (returns 0); else the last child's score.

    The gating pattern: cheap checks first (it parses, it compiles), costly ones only if they pass.
    An empty ``Sequential`` scores 1.0.
    """

    def __init__(self, *rubrics: Rubric) -> None:
        super().__init__()
        for i, rubric in enumerate(rubrics):
            setattr(self, f"rubric_{i}", rubric)
        self._rubric_list = list(rubrics)

    def forward(self, action: Any, observation: Any) -> Score | Awaitable[Score]:
        result: Score = 1.0
        for i, rubric in enumerate(self._rubric_list):
            score = rubric(action, observation)
            if inspect.isawaitable(score):
                return self._rest_async(score, i + 1, action, observation)
            if score == 0.0:
                return 0.0
            result = score
        return result

    async def _rest_async(
        self, pending: Awaitable[Score], start: int, action: Any, observation: Any
    ) -> Score:
        score = await pending
        if score == 0.0:
            return 0.0
        for rubric in self._rubric_list[start:]:
            score = rubric(action, observation)
            if inspect.isawaitable(score):
                score = await score
            if score == 0.0:
                return 0.0
        return score

    def __len__(self) -> int:
        return len(self._rubric_list)

    def __getitem__(self, index: int) -> Rubric:
        return self._rubric_list[index]


class Gate(Rubric):
    """The child's score if it reaches ``threshold``, else 0 (a hard constraint)."""

    def __init__(self, rubric: Rubric, threshold: float = 1.0) -> None:
        super().__init__()
        self.rubric = rubric
        self.threshold = threshold

    def forward(self, action: Any, observation: Any) -> Score | Awaitable[Score]:
        score = self.rubric(action, observation)
        if inspect.isawaitable(score):
            return self._gate_async(score)
        return self._gate(score)

    def _gate(self, score: Score) -> Score:
        return 0.0 if score < self.threshold else score

    async def _gate_async(self, pending: Awaitable[Score]) -> Score:
        return self._gate(await pending)


class WeightedSum(Rubric):
    """``sum(w_i * score_i)``; the weights must sum to 1 (checked at construction)."""

    def __init__(self, rubrics: list[Rubric], weights: list[float]) -> None:
        super().__init__()
        if len(rubrics) != len(weights):
            raise ValueError(
                f"WeightedSum: number of rubrics ({len(rubrics)}) must match number of weights "
                f"({len(weights)})"
            )
        if abs(sum(weights) - 1.0) > 1e-6:
            raise ValueError(f"WeightedSum: weights must sum to 1.0, got {sum(weights)}")
        for i, rubric in enumerate(rubrics):
            setattr(self, f"rubric_{i}", rubric)
        self._rubric_list = list(rubrics)
        self._weights = [float(w) for w in weights]

    @property
    def weights(self) -> list[float]:
        return list(self._weights)

    def forward(self, action: Any, observation: Any) -> Score | Awaitable[Score]:
        scores = [rubric(action, observation) for rubric in self._rubric_list]
        if any(inspect.isawaitable(s) for s in scores):
            return self._sum_async(scores)
        return self._sum(scores)

    def _sum(self, scores: list[Score]) -> Score:
        return sum(s * w for s, w in zip(scores, self._weights, strict=True))

    async def _sum_async(self, scores: list[Any]) -> Score:
        slots = [i for i, s in enumerate(scores) if inspect.isawaitable(s)]
        done = await asyncio.gather(*(scores[i] for i in slots))
        for i, value in zip(slots, done, strict=True):
            scores[i] = value
        return self._sum(scores)


class RubricList(Rubric):
    """An indexable list of child rubrics (like ``nn.ModuleList``); a parent defines the math."""

    def __init__(self, rubrics: Iterable[Rubric] | None = None) -> None:
        super().__init__()
        self._rubrics: list[Rubric] = []
        self.extend(rubrics or [])

    def forward(self, action: Any, observation: Any) -> Score:
        raise NotImplementedError(
            "RubricList does not aggregate; use it inside a parent rubric whose forward() does"
        )

    def append(self, rubric: Rubric) -> None:
        setattr(self, f"rubric_{len(self._rubrics)}", rubric)
        self._rubrics.append(rubric)

    def extend(self, rubrics: Iterable[Rubric]) -> None:
        for rubric in rubrics:
            self.append(rubric)

    def __len__(self) -> int:
        return len(self._rubrics)

    def __getitem__(self, index: int) -> Rubric:
        return self._rubrics[index]

    def __iter__(self) -> Iterator[Rubric]:
        return iter(self._rubrics)


class RubricDict(Rubric):
    """Child rubrics by key (like ``nn.ModuleDict``), e.g. one rubric per task of a multi-task env."""

    def __init__(self, rubrics: Mapping[str, Rubric] | None = None) -> None:
        super().__init__()
        self._rubric_dict: dict[str, Rubric] = {}
        self.update(rubrics or {})

    def forward(self, action: Any, observation: Any) -> Score:
        raise NotImplementedError(
            "RubricDict does not aggregate; use it inside a parent rubric whose forward() does"
        )

    def __setitem__(self, key: str, rubric: Rubric) -> None:
        setattr(self, key, rubric)
        self._rubric_dict[key] = rubric

    def __getitem__(self, key: str) -> Rubric:
        return self._rubric_dict[key]

    def __contains__(self, key: object) -> bool:
        return key in self._rubric_dict

    def __len__(self) -> int:
        return len(self._rubric_dict)

    def __iter__(self) -> Iterator[str]:
        return iter(self._rubric_dict)

    def keys(self) -> Iterator[str]:
        return iter(self._rubric_dict.keys())

    def values(self) -> Iterator[Rubric]:
        return iter(self._rubric_dict.values())

    def items(self) -> Iterator[tuple[str, Rubric]]:
        return iter(self._rubric_dict.items())

    def update(self, rubrics: Mapping[str, Rubric]) -> None:
        for key, rubric in rubrics.items():
            self[key] = rubric
