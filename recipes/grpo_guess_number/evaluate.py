"""Greedy evaluation of a tool-calling model on fresh seeded guess-the-number games, in-process.

The games are played with the env's own rules (``guess_number_env.game``) and rendered with the
same chat template TRL trains with, all games of a batch in lockstep (one ``generate`` per turn).
A turn without a parsable ``<call> guess number N`` ends the game unsolved, as in training.
"""

from __future__ import annotations

import re
from typing import Any

from guess_number_env.game import BASELINES, GuessGame, play, render

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
