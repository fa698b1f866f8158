"""``NotesEnv``: notes, a calculator and a submit tool; the agent inside must use all three."""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

from openenv_train import tool
from openenv_train.agents import react_agent
from openenv_train.agents.agentic import (
    HarnessConfig,
    HarnessResponse,
    ProcessHarnessAdapter,
    python_command,
)
from openenv_train.agents.harness_env import HarnessAction, HarnessEnvironment

ITEMS = ("apples", "pears", "plums", "figs", "limes")


@dataclass(frozen=True)
class NotesTask:
    item: str
    price: int
    quantity: int
    notes: dict[str, str]

    @property
    def question(self) -> str:
        return (
            f"What does the order cost? Read the notes {sorted(self.notes)} and submit the total."
        )

    @property
    def answer(self) -> int:
        return self.price * self.quantity


def notes_task(seed: int | None) -> NotesTask:
    """The task for a seed: a price note, an order note and a distractor."""
    rng = random.Random(seed)
    item, other = rng.sample(ITEMS, 2)
    price, quantity = rng.randint(2, 9), rng.randint(2, 9)
    notes = {
        item: f"price {price}",
        "order": f"{quantity} {item}",
        other: f"price {rng.randint(2, 9)}",
    }
    return NotesTask(item, price, quantity, notes)


def react_adapter() -> ProcessHarnessAdapter:
    """The reference ReAct agent as this env's harness (settings from ``NOTES_*`` variables)."""
    config = HarnessConfig(
        name="react",
        command=python_command("openenv_train.agents.react_agent"),
        preload=react_agent.PRELOAD,
        env_vars={
            "REACT_MAX_STEPS": os.environ.get("NOTES_MAX_STEPS", "6"),
            "REACT_MAX_TOKENS": os.environ.get("NOTES_MAX_TOKENS", "128"),
        },
        startup_timeout_s=float(os.environ.get("NOTES_STARTUP_TIMEOUT_S", "60")),
        turn_timeout_s=float(os.environ.get("NOTES_TURN_TIMEOUT_S", "120")),
    )
    return ProcessHarnessAdapter(config)


class NotesEnv(HarnessEnvironment):
    """Read notes, multiply, submit. The verifier credits each step of the solution (0.25 each:
    the order note read, the item's price note read, the right product computed, the right
    answer submitted), so 1.0 means solved and partial work is told apart from none."""

    def __init__(self) -> None:
        super().__init__(react_adapter())
        self.task = notes_task(0)
        self.submitted: float | None = None
        self.milestones: set[str] = set()

    def on_reset(self, seed: int | None, **kwargs: object) -> str:
        self.task = notes_task(seed)
        self.submitted = None
        self.milestones = set()
        return self.task.question

    async def score_turn(self, action: HarnessAction, response: HarnessResponse) -> float:
        if self.submitted == self.task.answer:
            self.milestones.add("submitted")
        return 0.25 * len(self.milestones)

    @tool
    def read_note(self, title: str) -> str:
        """Read one note.

        Args:
            title: the note's title
        """
        if title not in self.task.notes:
            raise KeyError(f"no note {title!r}; notes: {sorted(self.task.notes)}")
        if title in ("order", self.task.item):
            self.milestones.add(f"read:{title}")
        return self.task.notes[title]

    @tool
    def multiply(self, a: float, b: float) -> float:
        """Multiply two numbers.

        Args:
            a: first factor
            b: second factor
        """
        if {a, b} == {self.task.price, self.task.quantity}:
            self.milestones.add("multiplied")
        return a * b

    @tool
    def submit(self, answer: float) -> str:
        """Submit the final answer (the last submission counts).

        Args:
            answer: the total
        """
        self.submitted = answer
        return "submitted"
