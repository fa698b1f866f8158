"""How the ported Connect4 env reads as text, for the generic text recipe (``grpo_text``).

The env itself is OpenEnv's, imports changed only (envs/connect4_env); this spec is the only
glue the trainer needs: the board as words, the answer a column digit.
"""

from __future__ import annotations

from typing import Any

from connect4_env import Connect4Env
from connect4_env.models import Connect4Action

from openenv_train.rollout import TextEnvSpec

CELLS = {0: "e", 1: "x", -1: "o"}
COLUMNS = tuple(str(c) for c in range(7))


def board_text(board: list[list[int]]) -> str:
    return "board " + " ".join(CELLS[v] for row in board for v in row) + " move"


class Connect4Spec(TextEnvSpec):
    client_cls = Connect4Env
    vocabulary = ("board", "move", *CELLS.values(), *COLUMNS)

    def initial_prompt(self, result: Any, prompt: Any) -> str:
        return board_text(result.observation.board)

    def render(self, result: Any) -> str:
        return " " + board_text(result.observation.board)

    def parse_action(self, text: str) -> Connect4Action | None:
        move = text.replace("<eos>", " ").strip()
        return Connect4Action(column=int(move)) if move in COLUMNS else None
