"""GRPO on Harbor tasks with the tiny CPU model through TRL's two paths: ``environment_factory``
(TRL runs the tool loop) and ``rollout_func`` (our harness runs it, batched). A few steps each:
the rows are the episodes' tokens, the rewards the tasks' tests', and the weights move; not that
the model learns (the docs' curve shows that)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from harbor_env import TaskRuntime
from harbor_env.family import WORDS, instruction, write_family
from harbor_support import BASE_IMAGE, containers_owned_by
from tiny_grpo import cpu_grpo_config

from openenv_train.runtime import LocalProcessProvider

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]

TASK_IDS = [f"create_{w}" for w in WORDS]


@pytest.fixture(scope="module")
def family_url(tmp_path_factory) -> Iterator[str]:
    folder = write_family(tmp_path_factory.mktemp("family"))
    TaskRuntime(folder, base_image=BASE_IMAGE).build_all()
    env = {"HARBOR_TASKS": str(folder), "HARBOR_BASE_IMAGE": BASE_IMAGE, "HARBOR_WARM": "2"}
    server = LocalProcessProvider(
        "harbor_env.server.app:app", env=env, startup_timeout=120, stop_timeout=60
    )
    with server:
        pid = server.pid
        yield server.base_url
    assert containers_owned_by(pid) == []


def grpo_args(tmp_path: Any, **extra: Any) -> Any:
    # the entropy term moves the weights even when a group's rewards tie
    return cpu_grpo_config(tmp_path, entropy_coef=0.01, **extra)


def snapshot(model: Any) -> dict[str, Any]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def moved(model: Any, before: dict[str, Any]) -> bool:
    import torch

    return any(not torch.equal(p.detach(), before[n]) for n, p in model.named_parameters())


# ---- environment_factory: TRL's tool loop, a word-level model ---------------------------------

RESPONSE_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<bot>",
    "fields": {
        "tool_calls": {
            "open_pattern": r"\s*<call>\s+(?P<name>\w+)\s+",
            "close_pattern": r"\s*<eos>\s*",
            "repeats": True,
            "content": "xml-inline",
            "content_args": {"tag_pattern": r"(?P<key>\w+)\s+(?P<value>\S+)"},
            "transform": {
                "type": "function",
                "function": {"name": "{name}", "arguments": "{content}"},
            },
        },
        "content": {"close_pattern": r"\s*<eos>\s*", "content": "text"},
    },
}


def word_episode(rng: random.Random) -> list[dict[str, Any]]:
    """A random episode (any word as the path: the format, not the answer)."""
    word, guess = rng.choice(WORDS), rng.choice(WORDS)
    call = {"name": "write_file", "arguments": {"path": guess, "content": "ok"}}
    return [
        {"role": "user", "content": instruction(word)},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"type": "function", "function": call}],
        },
        {"role": "tool", "name": "write_file", "content": f"wrote 2 bytes to {guess}"},
        {"role": "assistant", "content": "done"},
    ]


def test_grpo_through_environment_factory_on_harbor_tasks(family_url, tmp_path) -> None:
    import torch
    from datasets import Dataset
    from harbor_env.training import environment_class
    from trl import GRPOTrainer

    from openenv_train.policy.tiny import build_tiny_llama, build_word_tokenizer
    from openenv_train.recipes.grpo_guess_number.tool_model import CHAT_TEMPLATE
    from openenv_train.training import chat_warmup, release_callback

    torch.set_num_threads(1)
    texts = [instruction(w) for w in WORDS] + [f"wrote 2 bytes to {w}" for w in WORDS]
    texts += ["<bot> <call> write_file path content ok done run command read_file submit"]
    tok = build_word_tokenizer(corpus=texts)
    tok.chat_template, tok.response_template = CHAT_TEMPLATE, RESPONSE_TEMPLATE
    model = build_tiny_llama(tok, seed=0)
    chat_warmup(model, tok, word_episode, steps=60, batch_size=16, learning_rate=1e-2)

    env_cls = environment_class(family_url)
    rewards: list[float] = []

    class Counted(env_cls):  # type: ignore[misc, valid-type]
        def get_reward(self) -> float:
            rewards.append(super().get_reward())
            return rewards[-1]

    dataset = Dataset.from_dict(
        {
            "prompt": [[{"role": "user", "content": ""}]] * 8,
            "task_id": [TASK_IDS[i % len(TASK_IDS)] for i in range(8)],
        }
    )
    trainer = GRPOTrainer(
        model=model,
        args=grpo_args(tmp_path, max_completion_length=64),
        train_dataset=dataset,
        processing_class=tok,
        environment_factory=Counted,
        callbacks=[release_callback(Counted)],
    )
    before = snapshot(model)
    trainer.train()
    assert moved(model, before), "GRPO did not move any weight"
    assert len(rewards) == 16 and set(rewards) <= {0.0, 1.0}  # TRL asks once per row


# ---- rollout_func: our harness runs the tool loop, batched; a byte-level ChatML model ---------


def chatml_episode(word: str, guess: str) -> list[str]:
    call = {"name": "write_file", "arguments": {"path": guess, "content": "ok"}}
    return [
        instruction(word),
        f"<tool_call>{json.dumps(call)}</tool_call>",
        f"wrote 2 bytes to {guess}",
    ]


def test_grpo_through_rollout_func_on_harbor_tasks(family_url, tmp_path) -> None:
    import torch
    from datasets import Dataset
    from harbor_env.training import session_factory
    from trl import GRPOTrainer

    from openenv_train.harness import MCPHarnessAdapter
    from openenv_train.policy.tiny import build_chatml_tokenizer, build_tiny_llama
    from openenv_train.rollout import RolloutConfig
    from openenv_train.training import env_reward, make_harness_rollout_func

    torch.set_num_threads(1)
    corpus = [t for w in WORDS for g in WORDS for t in chatml_episode(w, g)]
    tok = build_chatml_tokenizer(corpus + ["graded: reward 1 0 submit run read_file"])
    model = build_tiny_llama(tok, max_position_embeddings=2048, seed=0)
    func = make_harness_rollout_func(
        session_factory=session_factory(family_url),
        harness_adapter=MCPHarnessAdapter(),
        config=RolloutConfig(max_turns=2, max_new_tokens=48),
        group_size=4,
    )
    dataset = Dataset.from_dict({"prompt": [TASK_IDS[i % len(TASK_IDS)] for i in range(8)]})
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[env_reward],
        args=grpo_args(tmp_path, max_completion_length=512),
        train_dataset=dataset,
        processing_class=tok,
        rollout_func=func,
    )
    before = snapshot(model)
    try:
        trainer.train()
        batch = func.last_batch
    finally:
        func.close()
    assert moved(model, before), "GRPO did not move any weight"
    assert len(batch.records) == 8 and batch.complete
    assert {r.reward for r in batch.records} <= {0.0, 1.0}
    for rec in batch.records:  # the row is the episode's tokens: model turns and env replies
        assert len(rec.completion_ids) == len(rec.env_mask) == len(rec.logprobs)
        assert any(rec.env_mask)
