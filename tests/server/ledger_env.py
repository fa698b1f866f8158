"""A small tool env for the MCP transport tests (uniquely named module, importable by name)."""

from __future__ import annotations

from openenv_train.core import Observation
from openenv_train.server import MCPEnvironment, tool


class Ledger(MCPEnvironment):
    """A stateful tool env: each session banks its own total."""

    def __init__(self) -> None:
        self.total = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None) -> Observation:
        self.total = 0
        return Observation(metadata={"ready": True})

    @tool
    def deposit(self, amount: int) -> int:
        """Add an amount to this session's total and return the new total.

        Args:
            amount: how much to add
        """
        self.total += amount
        return self.total

    @tool
    def balance(self) -> dict:
        """This session's total."""
        return {"total": self.total}

    @tool
    def explode(self) -> None:
        """Always raises."""
        raise ValueError("boom")
