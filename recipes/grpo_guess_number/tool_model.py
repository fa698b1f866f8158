"""A tiny tool-calling model for guess-the-number: word-level tokenizer, tool chat template,
response template (how TRL parses a tool call back out of generated ids), random-guess games for
the chat-template warm-up (``openenv_train.training.warmup.chat_warmup``).

The chat template renders a conversation as plain words: the user's text, then per assistant
turn ``<bot> <call> guess number 8 <eos>`` (a tool call) or ``<bot> text <eos>``, per tool message its
text; ``add_generation_prompt`` appends ``<bot>``. It ignores the tool schema (the tiny model has
one tool and learns its format in the warm-up), is prefix-preserving (TRL requires that for
multi-turn training) and renders tool name, arguments and results (TRL's tool-support check).
"""

from __future__ import annotations

import random
from typing import Any

from guess_number_env.game import GuessGame, render

BOT, CALL = "<bot>", "<call>"
#: What the model answers (plain text, no tool call) once the game is over: TRL keeps looping
#: while the model calls tools, so the model must learn to stop; the warm-up shows it how.
DONE = "done"
#: What the environment class answers to a call after the game ended (in the vocabulary too).
OVER_TEXT = "The episode is over; no more tool calls are accepted."

CHAT_TEMPLATE = (
    "{%- for m in messages -%}"
    "{%- if m['role'] == 'assistant' -%}"
    "{{ ' <bot> ' }}"
    "{%- if m.get('tool_calls') -%}"
    "{%- for tc in m['tool_calls'] -%}"
    "{{ '<call> ' ~ tc['function']['name'] }}"
    "{%- set args = tc['function']['arguments'] -%}"
    "{%- if args is mapping -%}{%- for k, v in args.items() -%}{{ ' ' ~ k ~ ' ' ~ v }}{%- endfor -%}"
    "{%- else -%}{{ ' ' ~ args }}{%- endif -%}"
    "{%- endfor -%}"
    "{%- else -%}{{ m['content'] | trim }}{%- endif -%}"
    "{{ ' ' ~ eos_token }}"
    "{%- else -%}"
    "{{ ' ' ~ (m['content'] | trim) }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ ' <bot>' }}{%- endif -%}"
)

#: transformers' response template for the format above: ``<call> NAME ARG`` up to ``<eos>``.
RESPONSE_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": BOT,
    "fields": {
        "tool_calls": {
            "open_pattern": r"\s*<call>\s+(?P<name>\w+)\s+number\s+",
            "close_pattern": r"\s*<eos>\s*",
            "repeats": True,
            "content": "text",
            "transform": {
                "type": "function",
                "function": {"name": "{name}", "arguments": {"number": "{content}"}},
            },
        },
        "content": {"close_pattern": r"\s*<eos>\s*", "content": "text"},
    },
}


#: What a tokenizer needs to render and parse this recipe's tool calls.
TOOL_TEMPLATES: dict[str, Any] = {
    "chat_template": CHAT_TEMPLATE,
    "response_template": RESPONSE_TEMPLATE,
}


def corpus(low: int, high: int, max_turns: int, show_range: bool, games: int = 400) -> list[str]:
    """Every text the env can send for these settings (random games), for the vocabulary."""
    rng = random.Random(0)
    texts = [f"{BOT} {CALL} guess number {DONE}", OVER_TEXT, *(str(n) for n in range(0, high + 2))]
    for i in range(games):
        game = GuessGame.new(low, high, max_turns, seed=i)
        texts.append(render(game, "start", show_range))
        while not game.done:
            texts.append(render(game, game.guess(rng.randint(low - 1, high + 1)), show_range))
    return texts


def build_tool_model(
    low: int, high: int, max_turns: int, show_range: bool, **model_kwargs: Any
) -> tuple[Any, Any]:
    """Tokenizer (word level, tool template, response template) and a tiny Llama for it (the
    recipe builds the same from its config with ``openenv_train.training.model.load_model``)."""
    from openenv_train.policy.tiny import build_tiny_llama, build_word_tokenizer

    tokenizer = build_word_tokenizer(corpus=corpus(low, high, max_turns, show_range))
    for name, value in TOOL_TEMPLATES.items():
        setattr(tokenizer, name, value)
    return build_tiny_llama(tokenizer, **model_kwargs), tokenizer


def random_conversation(
    rng: random.Random,
    low: int,
    high: int,
    max_turns: int,
    show_range: bool,
    guesses: str = "uniform",
) -> list[dict[str, Any]]:
    """One game as chat messages with tool calls, with random guesses: ``"uniform"`` over the
    whole range (the format only), or ``"in_range"``: uniform over the range the env's text says
    is still possible (reading the state, still no search strategy: no preference for the middle)."""
    game = GuessGame.new(low, high, max_turns, seed=rng.getrandbits(32))
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": render(game, "start", show_range)}
    ]
    while not game.done:
        number = rng.randint(game.lo, game.hi) if guesses == "in_range" else rng.randint(low, high)
        call = {"type": "function", "function": {"name": "guess", "arguments": {"number": number}}}
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append(
            {
                "role": "tool",
                "name": "guess",
                "content": render(game, game.guess(number), show_range),
            }
        )
    messages.append({"role": "assistant", "content": DONE})
    return messages
