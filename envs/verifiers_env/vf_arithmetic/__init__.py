"""``vf-arithmetic``: a small verifiers environment whose data is generated, not downloaded.

A verifiers environment is a module with ``load_environment(**args)``; this one asks for the
sum of two small integers and its rubric rewards the exact answer. It lets the verifiers adapter
(and its tests) run where no dataset hub is reachable. verifiers 0.3 (the v0 API) calls
``load_environment``; 0.4 (v1) loads the ``Taskset`` this package exports through ``__all__``
(``vf_arithmetic.v1``, imported only there).
"""

from __future__ import annotations

import random
from typing import Any

SYSTEM_PROMPT = "Answer with the number only."


def arithmetic_rows(num_examples: int, seed: int, max_operand: int) -> list[dict[str, str]]:
    """``num_examples`` questions ``a + b`` with their answers, the same for the same seed."""
    rng = random.Random(seed)
    rows = []
    for _ in range(num_examples):
        a, b = rng.randint(0, max_operand), rng.randint(0, max_operand)
        rows.append({"question": f"What is {a} + {b}?", "answer": str(a + b)})
    return rows


def load_environment(num_examples: int = 200, seed: int = 0, max_operand: int = 9):
    """A verifiers ``SingleTurnEnv``: sum two integers; reward 1 for the exact sum, else 0."""
    import verifiers as vf
    from datasets import Dataset

    def exact_answer(completion, answer, **kwargs) -> float:
        text = completion[-1]["content"] if isinstance(completion, list) else str(completion)
        return 1.0 if is_exact(text, answer) else 0.0

    rows = arithmetic_rows(num_examples, seed, max_operand)
    return vf.SingleTurnEnv(
        dataset=Dataset.from_list(rows),
        system_prompt=SYSTEM_PROMPT,
        rubric=vf.Rubric(funcs=[exact_answer], weights=[1.0]),
    )


def is_exact(text: str, answer: str) -> bool:
    """The reply's last word is the answer."""
    return text.strip().split()[-1:] == [answer]


def __getattr__(name: str) -> Any:
    """verifiers 0.4 (v1) finds the taskset through ``__all__``; 0.3 has no such lookup."""
    if name in ("__all__", "ArithmeticTaskset"):
        import verifiers

        if not hasattr(verifiers, "load_environment"):  # the v1-only API
            from .v1 import ArithmeticTaskset

            return ["ArithmeticTaskset"] if name == "__all__" else ArithmeticTaskset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
