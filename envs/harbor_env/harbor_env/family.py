"""A generated family of Harbor tasks with a small action space, for training a tiny model:
``create_<word>`` asks for an empty file ``/app/<word>``; the tests pass only when that file,
and no other word's, exists. One right call (``write_file`` with the word as the path) among
``len(words)`` paths: a random policy scores ``1 / len(words)``, a learner climbs from there.

``FamilyTextSpec`` is the family for the ``grpo_text`` recipe and the tiny model: the words of
its texts (``vocabulary``) and random episodes for the format warm-up (``random_episode``);
``harbor_env.server.family_app`` serves the family (``configs/grpo_harbor_family_cpu.yaml``)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from openenv_train.rollout import SeededTextSpec

from .text_spec import TOOLS_TEXT, HarborTextSpec

WORDS = ("apple", "river", "stone", "cloud")

_TOML = """version = "1.0"

[metadata]
category = "generated"

[verifier]
timeout_sec = 30.0

[agent]
timeout_sec = 120.0

[environment]
cpus = 0.5
memory_mb = 128
network_mode = "no-network"
"""

_DOCKERFILE = """ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
RUN mkdir -p /app && chown 10001:10001 /app
WORKDIR /app
USER 10001
"""


def instruction(word: str) -> str:
    return f"create the file {word}"


def write_family(folder: str | Path, words: tuple[str, ...] = WORDS) -> Path:
    """Write one task folder per word under ``folder`` (made); returns ``folder``."""
    folder = Path(folder)
    for word in words:
        others = " ".join(w for w in words if w != word)
        d = folder / f"create_{word}"
        (d / "environment").mkdir(parents=True, exist_ok=True)
        (d / "tests").mkdir(exist_ok=True)
        (d / "solution").mkdir(exist_ok=True)
        (d / "task.toml").write_text(_TOML)
        (d / "instruction.md").write_text(instruction(word) + "\n")
        (d / "environment" / "Dockerfile").write_text(_DOCKERFILE)
        test = (
            "#!/bin/bash\nmkdir -p /logs/verifier\nok=1\n"
            f"[ -f /app/{word} ] || ok=0\n"
            f"for w in {others}; do [ -e /app/$w ] && ok=0; done\n"
            "echo $ok > /logs/verifier/reward.txt\n"
        )
        (d / "tests" / "test.sh").write_text(test)
        (d / "tests" / "test.sh").chmod(0o755)
        (d / "solution" / "solve.sh").write_text(f"#!/bin/bash\ntouch /app/{word}\n")
        (d / "solution" / "solve.sh").chmod(0o755)
    return folder


# ---- the family as text for the tiny model (the grpo_text recipe) --------------------------------

#: The answer that ends an episode: no tool call, so it submits (``HarborTextSpec``).
DONE = "done"


def write_call(path: str) -> str:
    """The model's answer that writes an empty file at ``path`` (one Hermes-style tool call)."""
    call = {"name": "write_file", "arguments": {"path": path, "content": ""}}
    return f"<tool_call>{json.dumps(call)}</tool_call>"


def write_reply(path: str) -> str:
    """The env's reply to :func:`write_call` (``HarborEnv.write_file``)."""
    return f"wrote 0 bytes to {path}"


def prompt(word: str, instructions: bool = True) -> str:
    """The first user text of task ``create_<word>`` (``HarborTextSpec.initial_prompt``)."""
    return f"{instruction(word)}\n\n{TOOLS_TEXT}" if instructions else instruction(word)


def vocabulary(words: tuple[str, ...] = WORDS, instructions: bool = True) -> tuple[str, ...]:
    """Every word of the family's texts: prompts, the answers of ``random_episode`` and the env's
    replies to them, split as the tiny word tokenizer splits them."""
    texts = [prompt(w, instructions) for w in words]
    texts += [t for w in words for t in (write_call(w), write_reply(w))] + [DONE]
    return tuple(dict.fromkeys(word for text in texts for word in text.split()))


class FamilyTextSpec(SeededTextSpec, HarborTextSpec):
    """The generated family (:data:`WORDS`) for a token-level policy: ``HarborTextSpec``'s
    prompt and tool calls, with the words of its texts for the tiny model's tokenizer and random
    episodes for the format warm-up. ``seed`` deals tasks as ``SeededTextSpec`` does (the env
    plays the sorted tasks' ``seed % 4``-th): repeatable, each group on one task, every task in
    turn."""

    def __init__(
        self,
        *,
        seed: int | None = None,
        same_task_per_group: bool = True,
        instructions: bool = True,
    ) -> None:
        HarborTextSpec.__init__(self, instructions=instructions)
        SeededTextSpec.__init__(self, seed=seed, same_task_per_group=same_task_per_group)
        self.vocabulary = vocabulary(WORDS, instructions)

    def random_episode(self, rng: random.Random) -> list[tuple[str, str]]:
        """A task whose file is a random word's (the format, not the answer): the write call, the
        env's reply and the answer without a call that submits."""
        word, guess = rng.choice(WORDS), rng.choice(WORDS)
        return [
            ("user", prompt(word, self.instructions)),
            ("assistant", write_call(guess)),
            ("user", write_reply(guess)),
            ("assistant", DONE),
        ]
