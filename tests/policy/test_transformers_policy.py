"""TransformersPolicy on the real tiny Llama: batching, logprobs, stopping, live weights."""

from __future__ import annotations

import asyncio

import pytest
import torch
from blackjack_env.text_spec import VOCABULARY
from tiny_models import bj_prompts, reference_logprobs

from openenv_train.policy import SamplingSettings, TransformersPolicy
from openenv_train.policy.tiny import build_tiny_model

GREEDY = SamplingSettings(max_new_tokens=6, temperature=0.0)


@pytest.fixture()
def policy(tiny_pair):
    model, tok = tiny_pair
    return TransformersPolicy(model, tok, max_batch_size=64)


async def test_batched_equals_one_by_one_greedy(policy, tiny_pair):
    _, tok = tiny_pair
    prompts = bj_prompts(tok, 12)
    prompts += prompts[:4]  # duplicates take the shared-prefill path
    assert len({len(p) for p in prompts}) > 1
    batched = await policy.generate(prompts, GREEDY)
    for prompt, gen in zip(prompts, batched, strict=True):
        [single] = await policy.generate([prompt], GREEDY)
        assert single.token_ids == gen.token_ids
        assert single.logprobs == pytest.approx(gen.logprobs, abs=1e-4)


async def test_greedy_matches_model_generate(policy, tiny_pair):
    model, tok = tiny_pair
    prompts = bj_prompts(tok, 8, seed=3)
    ours = await policy.generate(prompts, GREEDY)
    enc = tok.pad([{"input_ids": p} for p in prompts], return_tensors="pt", padding_side="left")
    ref = model.generate(
        **enc, max_new_tokens=6, do_sample=False, pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
    )[:, enc["input_ids"].shape[1] :].tolist()  # fmt: skip
    for gen, row in zip(ours, ref, strict=True):
        assert gen.token_ids == row[: len(gen.token_ids)]


@pytest.mark.parametrize("temperature,top_k", [(1.0, 0), (0.7, 0), (1.3, 5), (0.0, 0)])
async def test_logprobs_equal_manual_forward(policy, tiny_pair, temperature, top_k):
    model, tok = tiny_pair
    prompts = bj_prompts(tok, 6, seed=5)
    prompts = prompts + prompts[::2] * 3  # duplicated prompts: one prefill, rows sampled apart
    sampling = SamplingSettings(max_new_tokens=4, temperature=temperature, top_k=top_k, seed=1)
    gens = await policy.generate(prompts, sampling)
    for prompt, gen in zip(prompts, gens, strict=True):
        expected = reference_logprobs(model, prompt, gen.token_ids, temperature or 1.0, top_k)
        assert gen.logprobs == pytest.approx(expected, abs=1e-4)
        assert all(lp <= 0 for lp in gen.logprobs)


async def test_max_new_tokens_respected_and_text_decoded(policy, tiny_pair):
    _, tok = tiny_pair
    gens = await policy.generate(bj_prompts(tok, 20), SamplingSettings(max_new_tokens=3, seed=0))
    for gen in gens:
        assert 1 <= len(gen.token_ids) <= 3
        assert gen.finish_reason == ("stop" if gen.token_ids[-1] == tok.eos_token_id else "length")
        assert gen.text == tok.decode(gen.token_ids, skip_special_tokens=True)


async def test_stop_token_ids_cut_inclusive(policy, tiny_pair):
    _, tok = tiny_pair
    prompt = bj_prompts(tok, 1)[0]
    [free] = await policy.generate([prompt], GREEDY)
    stop = free.token_ids[1]
    [cut] = await policy.generate(
        [prompt], SamplingSettings(max_new_tokens=6, temperature=0, stop_token_ids=(stop,))
    )
    first = free.token_ids.index(stop)
    assert cut.token_ids == free.token_ids[: first + 1]
    assert cut.finish_reason == "stop"


async def test_seed_reproducible_and_group_members_differ(policy, tiny_pair):
    _, tok = tiny_pair
    group = [bj_prompts(tok, 1)[0]] * 16
    sampling = SamplingSettings(max_new_tokens=3, temperature=1.0, seed=7)
    a = await policy.generate(group, sampling)
    b = await policy.generate(group, sampling)
    assert [g.token_ids for g in a] == [g.token_ids for g in b]
    assert len({tuple(g.token_ids) for g in a}) > 1  # one seed per batch, not per prompt


async def test_live_model_updates_are_seen_and_eos_stops():
    """Train the policy's own model object in place: the policy must follow without a copy."""
    model, tok = build_tiny_model(VOCABULARY, seed=99)
    policy = TransformersPolicy(model, tok)
    prompt = tok.encode("player 15 soft dealer A action:")
    target = tok.encode("player 15 soft dealer A action: stand<eos>")
    optim = torch.optim.Adam(model.parameters(), lr=2e-2)
    model.train()
    for _ in range(40):
        ids = torch.tensor([target])
        loss = model(input_ids=ids, labels=ids).loss
        optim.zero_grad()
        loss.backward()
        optim.step()
    [gen] = await policy.generate([prompt], SamplingSettings(max_new_tokens=8, temperature=0))
    assert gen.token_ids == tok.encode("stand<eos>")
    assert (gen.text, gen.finish_reason) == ("stand", "stop")
    assert model.training  # train/eval mode restored for the trainer


async def test_does_not_block_event_loop(policy, tiny_pair):
    _, tok = tiny_pair
    ticks = 0
    stop = asyncio.Event()

    async def ticker():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0)
    before = ticks
    await policy.generate(bj_prompts(tok, 64), SamplingSettings(max_new_tokens=4, seed=0))
    during = ticks - before
    stop.set()
    await task
    assert during > 1


async def test_bad_input_names_the_field(policy, tiny_pair):
    _, tok = tiny_pair
    with pytest.raises(ValueError, match=r"prompts\[1\] is empty"):
        await policy.generate([[3, 4], []], GREEDY)
    with pytest.raises(ValueError, match=r"prompts\[0\].*outside"):
        await policy.generate([[3, 999]], GREEDY)
    with pytest.raises(ValueError, match="max_new_tokens"):
        await policy.generate([[3]], SamplingSettings(max_new_tokens=0))
    with pytest.raises(ValueError, match="temperature"):
        await policy.generate([[3]], SamplingSettings(temperature=-1))
    with pytest.raises(ValueError, match="max_position_embeddings"):
        await policy.generate([[3]], SamplingSettings(max_new_tokens=10_000))
    with pytest.raises(TypeError, match="prompts"):
        await policy.generate("player 15", GREEDY)
    assert await policy.generate([], GREEDY) == []


async def test_num_threads_applies_to_the_worker_only(tiny_pair):
    model, tok = tiny_pair
    main_threads = torch.get_num_threads()
    policy = TransformersPolicy(model, tok, num_threads=1)
    assert policy._executor.submit(torch.get_num_threads).result() == 1
    assert torch.get_num_threads() == main_threads
    [gen] = await policy.generate([tok.encode("player 15 dealer A action:")], GREEDY)
    assert gen.token_ids
    with pytest.raises(ValueError, match="num_threads"):
        TransformersPolicy(model, tok, num_threads=0)
    await policy.aclose()


async def test_row_seeds_sample_alike_whatever_else_shares_the_batch(policy, tiny_pair):
    _, tok = tiny_pair
    prompts = bj_prompts(tok, 12, seed=3)
    seeds = list(range(100, 112))
    sampling = SamplingSettings(max_new_tokens=4, temperature=1.0)
    together = await policy.generate(prompts, sampling, seeds)
    alone = [
        (await policy.generate([p], sampling, [s]))[0] for p, s in zip(prompts, seeds, strict=True)
    ]
    reordered = await policy.generate(prompts[::-1], sampling, seeds[::-1])
    for a, b, c in zip(together, alone, reordered[::-1], strict=True):
        assert a.token_ids == b.token_ids == c.token_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)
    other = await policy.generate(prompts, sampling, [s + 1000 for s in seeds])
    assert [g.token_ids for g in other] != [g.token_ids for g in together]
    with pytest.raises(ValueError, match="seeds"):
        policy.generate_sync(prompts, sampling, seeds[:3])


async def test_row_seed_sampling_follows_the_model_distribution(policy, tiny_pair):
    """Inverse-CDF draws from per-row streams: token frequencies match exp(logprob)."""
    _, tok = tiny_pair
    prompt = bj_prompts(tok, 1, seed=5)[0]
    n = 4000
    sampling = SamplingSettings(max_new_tokens=1, temperature=1.0)
    gens = policy.generate_sync([prompt] * n, sampling, seeds=list(range(n)))
    probs: dict[int, float] = {}
    counts: dict[int, int] = {}
    for g in gens:
        probs[g.token_ids[0]] = float(torch.tensor(g.logprobs[0]).exp())
        counts[g.token_ids[0]] = counts.get(g.token_ids[0], 0) + 1
    for token, p in probs.items():
        if p > 0.02:
            sd = (p * (1 - p) / n) ** 0.5
            assert abs(counts[token] / n - p) < 5 * sd, (token, counts[token] / n, p)
