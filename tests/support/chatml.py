"""The tests' ChatML tokenizer: the library's byte-level ChatML BPE trained on a few sentences
(tool calls, BlackJack words), built in well under a second."""

from __future__ import annotations

from typing import Any

from openenv_train.policy.tiny import build_chatml_tokenizer

CORPUS = [
    'call the echo tool with a message <tool_call>{"name": "echo_message", "arguments": {"message": "hello"}}</tool_call>',
    "the tool answered hello world, done. player 15 soft dealer A action: hit stand",
    "system user assistant tool Tools: type function name description parameters properties",
]


def chatml_tokenizer() -> Any:
    return build_chatml_tokenizer(CORPUS)
