"""Greedy evaluation of a tool-calling model on fresh seeded guess-the-number games, in-process.

The games are played with the env's own rules (``guess_number_env.game``) and rendered with the
same chat template TRL trains with, all games of a batch in lockstep (one ``generate`` per turn).
A turn without a parsable ``<call> guess number N`` ends the game unsolved, as in training.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from guess_number_env.game import BASELINES, GuessGame, play, render

from openenv_train.training.periodic_evals import results_table

#: The eval table's columns: (header, key, format).
COLUMNS = (
    ("solved", "solve_rate", ".1%"),
    ("mean guesses (solved)", "mean_guesses", ".2f"),
    ("mean reward", "mean_reward", ".3f"),
    ("malformed turns", "invalid", ".1%"),
)
#: Periodic (validation) evals play the games of seed + this, apart from the final eval's.
VALIDATION_OFFSET = 10_000_000
_CALL = re.compile(r"<call>\s+guess\s+number\s+(-?\d+)")


def evaluate_model(
    model: Any,
    tokenizer: Any,
    games: int,
    seed: int,
    low: int,
    high: int,
    max_turns: int,
    show_range: bool,
    batch_size: int = 256,
) -> dict[str, float]:
    """Solve rate, mean guesses of solved games, mean reward and the share of malformed turns."""
    import torch

    solved = guesses = invalid = turns = 0
    reward = 0.0
    model.eval()
    for start in range(0, games, batch_size):
        batch = [
            GuessGame.new(low, high, max_turns, seed=seed + i)
            for i in range(start, min(games, start + batch_size))
        ]
        convs = [[{"role": "user", "content": render(g, "start", show_range)}] for g in batch]
        live = list(range(len(batch)))
        while live:
            texts = [
                tokenizer.apply_chat_template(convs[i], tokenize=False, add_generation_prompt=True)
                for i in live
            ]
            enc = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
            with torch.no_grad():
                out = model.generate(
                    **enc, max_new_tokens=6, do_sample=False, pad_token_id=tokenizer.pad_token_id
                )
            answers = tokenizer.batch_decode(
                out[:, enc["input_ids"].shape[1] :], skip_special_tokens=False
            )
            still = []
            for i, answer in zip(live, answers, strict=True):
                game = batch[i]
                turns += 1
                found = _CALL.search(answer.split("<eos>")[0])
                if found is None:
                    invalid += 1
                    game.guesses.extend([0] * game.turns_left)  # the episode ends unsolved
                    continue
                number = int(found.group(1))
                call = {
                    "type": "function",
                    "function": {"name": "guess", "arguments": {"number": number}},
                }
                text = render(game, game.guess(number), show_range)
                convs[i] += [
                    {"role": "assistant", "content": "", "tool_calls": [call]},
                    {"role": "tool", "name": "guess", "content": text},
                ]
                if not game.done:
                    still.append(i)
            live = still
        for game in batch:
            solved += game.solved
            guesses += len(game.guesses) if game.solved else 0
            reward += game.reward
    return {
        "solve_rate": solved / games,
        "mean_guesses": guesses / solved if solved else float("nan"),
        "mean_reward": reward / games,
        "invalid": invalid / max(1, turns),
    }


def baselines(
    games: int, seed: int, low: int, high: int, max_turns: int
) -> dict[str, dict[str, float]]:
    """Random guesser, random among the still-possible numbers, binary search: on the same games."""
    return {name: play(fn, games, seed, low, high, max_turns) for name, fn in BASELINES.items()}


def evaluate_saved_model(
    model_dir: str | Path, *, episodes: int | None = None, seed: int | None = None
) -> dict[str, dict[str, float]]:
    """Greedy eval of ``runs/<name>/model`` beside the baselines (the recipe's evaluator).

    The game settings come from the run's ``config.json`` next to the model folder (the recipe
    defaults when it is missing); ``episodes``/``seed`` override the eval section's.
    """
    from rich.console import Console

    from openenv_train.policy.tiny import load_tiny_model

    from .config import RecipeConfig
    from .tool_model import TOOL_TEMPLATES

    path = Path(model_dir)
    run_config = path.parent / "config.json"
    cfg = (
        RecipeConfig.model_validate_json(run_config.read_text())
        if run_config.is_file()
        else RecipeConfig()
    )
    model, tokenizer = load_tiny_model(path)
    for name, value in TOOL_TEMPLATES.items():
        setattr(tokenizer, name, value)
    g = cfg.game
    n = episodes or cfg.eval.games
    s = cfg.eval.seed if seed is None else seed
    rows = {
        "model": evaluate_model(model, tokenizer, n, s, g.low, g.high, g.max_turns, g.show_range)
    }
    rows.update(baselines(n, s, g.low, g.high, g.max_turns))
    Console().print(results_table(f"{path} ({n} fresh games, greedy)", rows, COLUMNS))
    return rows
