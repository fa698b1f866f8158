"""VLLMEnginePolicy on the real vLLM CPU engine, checked against transformers in fp32."""

from __future__ import annotations

import math

import pytest
from tiny_models import bj_prompts, reference_logprobs
from vllm_helpers import EOS_PROMPT

from openenv_train.policy import SamplingSettings, TransformersPolicy


def test_vllm_tokenizes_like_ours(engine, hf_pair):
    _, tok = hf_pair
    theirs = engine.llm.get_tokenizer()
    for text in [
        "player 15 soft dealer A action: hit<eos>",
        "player 31 dealer 2 action: stand bogus",
    ]:
        assert theirs.encode(text, add_special_tokens=False) == tok.encode(text)


async def test_greedy_batch_matches_transformers(engine, hf_pair):
    model, tok = hf_pair
    prompts = bj_prompts(tok, 16)
    sampling = SamplingSettings(max_new_tokens=4, temperature=0)
    gens = await engine.generate(prompts, sampling)
    ref = await TransformersPolicy(model, tok).generate(prompts, sampling)
    assert len(gens) == 16
    for prompt, gen, r in zip(prompts, gens, ref, strict=True):
        assert 1 <= len(gen.token_ids) <= 4
        assert gen.finish_reason == ("stop" if gen.token_ids[-1] == tok.eos_token_id else "length")
        assert gen.token_ids == r.token_ids
        assert gen.logprobs == pytest.approx(
            reference_logprobs(model, prompt, gen.token_ids), abs=2e-3
        )


@pytest.mark.parametrize("temperature", [1.0, 0.7])
async def test_sampled_logprobs_are_real(engine, hf_pair, temperature):
    model, tok = hf_pair
    prompts = [bj_prompts(tok, 1, seed=2)[0]] * 8 + bj_prompts(tok, 8, seed=3)
    sampling = SamplingSettings(max_new_tokens=3, temperature=temperature, seed=11)
    gens = await engine.generate(prompts, sampling)
    again = await engine.generate(prompts, sampling)
    assert [g.token_ids for g in gens] == [g.token_ids for g in again]  # seeded
    for prompt, gen in zip(prompts, gens, strict=True):
        assert all(math.isfinite(lp) and lp <= 0 for lp in gen.logprobs)
        expected = reference_logprobs(model, prompt, gen.token_ids, temperature)
        assert gen.logprobs == pytest.approx(expected, abs=2e-3)


async def test_seeded_group_members_differ(engine, hf_pair):
    """One seed per batch becomes seed + index per prompt: identical prompts still vary."""
    _, tok = hf_pair
    group = [bj_prompts(tok, 1, seed=2)[0]] * 16
    gens = await engine.generate(group, SamplingSettings(max_new_tokens=3, temperature=2.0, seed=5))
    assert len({tuple(g.token_ids) for g in gens}) > 1


async def test_stop_token_ids(engine, hf_pair):
    _, tok = hf_pair
    prompt = bj_prompts(tok, 1, seed=4)[0]
    [free] = await engine.generate([prompt], SamplingSettings(max_new_tokens=4, temperature=0))
    stop = free.token_ids[1]
    cut_at = free.token_ids.index(stop)
    [cut] = await engine.generate(
        [prompt], SamplingSettings(max_new_tokens=4, temperature=0, stop_token_ids=(stop,))
    )
    assert cut.token_ids == free.token_ids[: cut_at + 1]
    assert cut.finish_reason == "stop"


async def test_eos_is_kept_and_stops(engine, hf_pair):
    _, tok = hf_pair
    prompt = tok.encode(EOS_PROMPT)
    [gen] = await engine.generate([prompt], SamplingSettings(max_new_tokens=8, temperature=0))
    assert gen.token_ids == tok.encode("stand<eos>")
    assert (gen.text, gen.finish_reason) == ("stand", "stop")
