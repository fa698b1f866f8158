"""How the ported envs read as text, for the generic text recipe (``grpo_text``).

The envs are OpenEnv's, imports changed only (envs/connect4_env, envs/maze_env,
envs/openenv_echo_env); a spec is the only glue the trainer needs: the observation as words,
the model's answer as the env's action.
"""

from __future__ import annotations

from typing import Any

from connect4_env import Connect4Env
from connect4_env.models import Connect4Action
from maze_env import MazeAction, MazeEnv
from openenv_echo_env import EchoEnv

from openenv_train import CallToolAction
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


MAZE_MOVES = ("0", "1", "2", "3")  # the maze's action numbers (left, up, right, down)


class MazeSpec(TextEnvSpec):
    """The agent's cell and its legal moves as words; the answer a move number."""

    client_cls = MazeEnv
    vocabulary = ("at", "can", "move", *MAZE_MOVES)

    def initial_prompt(self, result: Any, prompt: Any) -> str:
        return self.render(result).strip()

    def render(self, result: Any) -> str:
        obs = result.observation
        col, row = obs.current_position
        return f" at {col} {row} can {' '.join(map(str, obs.legal_actions))} move"

    def parse_action(self, text: str) -> MazeAction | None:
        move = text.replace("<eos>", " ").strip()
        return MazeAction(action=int(move)) if move in MAZE_MOVES else None


ECHO_WORDS = ("a", "hi", "echo", "hello", "anything")


class EchoSpec(TextEnvSpec):
    """The ported FastMCP echo env: the answer is the message its ``echo_with_length`` tool
    echoes (sent as a step, so the reward the app's task sets comes back)."""

    client_cls = EchoEnv
    vocabulary = ("say", "something", *ECHO_WORDS)

    def make_client(
        self, base_url: str, *, timeout: float = 30.0, connect_timeout: float = 10.0
    ) -> EchoEnv:
        # simulation mode: tool calls are steps on /ws and carry the env's reward
        return EchoEnv(
            base_url, mode="simulation", timeout=timeout, connect_timeout=connect_timeout
        )

    def initial_prompt(self, result: Any, prompt: Any) -> str:
        return "say something"

    def render(self, result: Any) -> str:
        return " say something"

    def parse_action(self, text: str) -> CallToolAction | None:
        word = text.replace("<eos>", " ").strip()
        if word not in ECHO_WORDS:
            return None
        return CallToolAction(tool_name="echo_with_length", arguments={"message": word})
