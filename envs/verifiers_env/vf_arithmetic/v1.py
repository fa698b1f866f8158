"""``vf-arithmetic`` for verifiers' v1 API (0.4+): a ``Taskset`` of the same generated sums,
each task rewarding the exact answer. verifiers finds it through the package's ``__all__``."""

from __future__ import annotations

from collections.abc import Iterable

import verifiers.v1 as vf

from . import SYSTEM_PROMPT, arithmetic_rows, is_exact


class ArithmeticData(vf.TaskData):
    answer: str


class ArithmeticTask(vf.Task[ArithmeticData]):
    @vf.reward
    async def exact_answer(self, task: ArithmeticData, trace: vf.Trace) -> float:
        return 1.0 if is_exact(trace.last_reply, task.answer) else 0.0


class ArithmeticTaskset(vf.Taskset[ArithmeticTask]):
    """200 sums of two digits (seed 0), the rows ``load_environment`` serves on 0.3."""

    def load(self) -> Iterable[ArithmeticTask]:
        for row in arithmetic_rows(200, 0, 9):
            data = ArithmeticData(
                prompt=row["question"], system_prompt=SYSTEM_PROMPT, answer=row["answer"]
            )
            yield ArithmeticTask(data)
