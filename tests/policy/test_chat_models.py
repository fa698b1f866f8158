"""Real chat architectures (random Qwen3 / Llama 3 with BPE tokenizers trained here and their own
chat templates): the rollout engine's token records are exactly the sampled ids over 12 turns."""

from __future__ import annotations

from typing import Any

import pytest
from echo_env.client import EchoEnv

from openenv_train.core.mcp_types import CallToolAction
from openenv_train.policy.chat_models import FAMILIES, build_chat_model, chat_template
from openenv_train.policy.transformers_policy import TransformersPolicy
from openenv_train.rollout import RolloutConfig, RolloutEngine, TextEnvSpec

TURNS = 12


class EchoChatSpec(TextEnvSpec):
    """Every model answer is echoed back by the env's tool; the episode runs to max_turns."""

    client_cls = EchoEnv

    def initial_prompt(self, result: Any, prompt: Any) -> str:
        return "Say anything; the env echoes it."

    def render(self, result: Any) -> str:
        return f"echo: {result.observation.result}"

    def parse_action(self, text: str) -> Any:
        return CallToolAction(tool_name="echo_message", arguments={"message": text[:40]})


class RecordingPolicy(TransformersPolicy):
    """Remembers every (context, sampled ids) pair the engine asked for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[list[int], list[int]]] = []

    def generate_sync(self, prompts: list[list[int]], sampling: Any, seeds: Any = None) -> Any:
        gens = super().generate_sync(prompts, sampling, seeds)
        self.calls += [(list(p), list(g.token_ids)) for p, g in zip(prompts, gens, strict=True)]
        return gens


def segments(mask: list[int]) -> list[tuple[int, int, int]]:
    """``(start, end, mask value)`` runs of ``mask``."""
    runs, start = [], 0
    for i in range(1, len(mask) + 1):
        if i == len(mask) or mask[i] != mask[start]:
            runs.append((start, i, mask[start]))
            start = i
    return runs


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_records_are_the_sampled_ids_over_many_turns(family: str, echo_url: str) -> None:
    import asyncio

    model, tok = build_chat_model(family, ["Say anything; the env echoes it. echo:"], seed=3)
    policy = RecordingPolicy(model.eval(), tok, device="cpu", num_threads=1)
    config = RolloutConfig(
        max_turns=TURNS, max_new_tokens=6, max_episode_tokens=4096, episode_seed=0
    )

    async def play() -> Any:
        async with RolloutEngine(EchoChatSpec(), policy, [echo_url], config) as engine:
            return await engine.run(["You are a helpful assistant."] * 2, group_size=2)

    batch = asyncio.run(play())
    assert batch.complete and len(batch.records) == 2
    sampled: dict[tuple[int, ...], list[list[int]]] = {}  # a group's rows share turn 1's context
    for ctx, ids in policy.calls:
        sampled.setdefault(tuple(ctx), []).append(ids)
    non_canonical = 0
    for rec in batch.records:
        assert rec.metrics.get("turns", TURNS) == TURNS
        runs = segments(rec.env_mask)
        model_runs = [r for r in runs if r[2] == 1]
        assert len(model_runs) == TURNS
        for start, end, is_model in runs:
            piece = rec.completion_ids[start:end]
            if (
                not is_model
            ):  # env text: the template's next user turn, ending in the generation prompt
                assert all(lp == 0.0 for lp in rec.logprobs[start:end])
                text = tok.decode(piece)
                assert "echo:" in text and text.endswith(_generation_prompt(family)), text
                continue
            context = tuple(rec.prompt_ids + rec.completion_ids[:start])
            assert context in sampled, "the model was fed something other than the record"
            assert piece in sampled[context], "the trainer's ids are not the sampled ids"
            if tok.encode(tok.decode(piece), add_special_tokens=False) != piece:
                non_canonical += 1
    # the check has teeth: re-tokenising these turns' text gives other ids
    assert non_canonical > 0


def _generation_prompt(family: str) -> str:
    return (
        "<|im_start|>assistant\n"
        if family == "qwen3"
        else "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )


def test_templates_are_the_real_ones_trl_recognises() -> None:
    from trl.chat_template_utils import llama3_2_chat_template, qwen3_chat_template

    assert chat_template("qwen3") == qwen3_chat_template
    assert chat_template("llama3") == llama3_2_chat_template
