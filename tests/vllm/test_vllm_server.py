"""OpenAICompatiblePolicy against a real vLLM OpenAI server (started and stopped by PID)."""

from __future__ import annotations

import pytest
from tiny_models import bj_prompts, reference_logprobs
from vllm_helpers import EOS_PROMPT

from openenv_train.policy import OpenAICompatiblePolicy, SamplingSettings

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def vllm_server(tiny_dir, tmp_path_factory):
    from openenv_train.policy.vllm_server import VLLMServer

    log_path = tmp_path_factory.mktemp("vllm_server") / "server.log"
    with VLLMServer(tiny_dir, served_model_name="tiny", dev_mode=False, log_path=log_path) as srv:
        yield srv.base_url


async def test_openai_policy_against_vllm_server(vllm_server, hf_pair, engine):
    model, tok = hf_pair
    policy = OpenAICompatiblePolicy(vllm_server, "tiny", tokenizer=tok)
    prompts = [tok.encode(EOS_PROMPT)] + bj_prompts(tok, 11, seed=8)
    try:
        greedy = await policy.generate(prompts, SamplingSettings(max_new_tokens=4, temperature=0))
        sampled = await policy.generate(
            prompts, SamplingSettings(max_new_tokens=3, temperature=0.8)
        )
    finally:
        await policy.aclose()
    local = await engine.generate(prompts, SamplingSettings(max_new_tokens=4, temperature=0))
    for prompt, g, loc in zip(prompts, greedy, local, strict=True):
        assert g.token_ids == loc.token_ids
        assert g.finish_reason == loc.finish_reason
        assert g.logprobs == pytest.approx(reference_logprobs(model, prompt, g.token_ids), abs=2e-3)
    assert greedy[0].token_ids == tok.encode("stand<eos>")  # vLLM keeps the EOS id
    assert (greedy[0].text, greedy[0].finish_reason) == ("stand", "stop")
    for prompt, s in zip(prompts, sampled, strict=True):
        assert 1 <= len(s.token_ids) <= 3
        assert s.logprobs == pytest.approx(
            reference_logprobs(model, prompt, s.token_ids, 0.8), abs=2e-3
        )
