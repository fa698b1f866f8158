"""Helpers for the ecosystem adapter tests: serve a catalog env on loopback, play it with our
rollout engine and a scripted policy.

(A uniquely named module, not conftest: test directories share one ``conftest`` module name.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from server_helpers import ServerThread
from uvicorn.importer import import_from_string

from openenv_train.catalog import get_entry
from openenv_train.policy.tiny import build_chatml_tokenizer
from openenv_train.rollout import RolloutConfig, RolloutEngine, ScriptedPolicy


@contextmanager
def serve(name: str) -> Iterator[str]:
    """The catalog env ``name`` served by real uvicorn on 127.0.0.1; yields its base URL."""
    server = ServerThread(import_from_string(get_entry(name).app)).start()
    try:
        yield server.url
    finally:
        server.stop()


def tokenizer(corpus: list[str]) -> Any:
    """A byte-level tokenizer: any question and answer text encodes losslessly."""
    return build_chatml_tokenizer(corpus, vocab_size=300)


async def play(
    spec: Any, url: str, respond: Callable[[str], str], episodes: int, group_size: int = 1
) -> Any:
    """``episodes`` episodes of ``spec`` on the server at ``url``; the policy answers with
    ``respond(prompt text)``."""
    tok = tokenizer(["0 1 2 3 4 5 6 7 8 9 [ ] What is the number"])
    policy = ScriptedPolicy(tok, respond)
    config = RolloutConfig(max_turns=12, max_new_tokens=64, max_concurrency=8)
    async with RolloutEngine(spec, policy, [url], config) as engine:
        return await engine.run([""] * episodes, group_size)
