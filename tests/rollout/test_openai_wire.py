"""The one OpenAI request model, as the policy endpoint speaks it: token-id prompts from
``OpenAICompatiblePolicy`` work end to end; text prompts, a wrong model or a bad field are refused
in OpenAI's error shape naming the field."""

from __future__ import annotations

import httpx
import pytest

from openenv_train.policy import OpenAICompatiblePolicy, SamplingSettings
from openenv_train.rollout import ScriptedPolicy
from openenv_train.rollout.openai_wire import (
    ChatRequest,
    CompletionRequest,
    OpenAIRequestError,
    parse_request,
)
from openenv_train.rollout.policy_endpoint import PolicyEndpoint

pytestmark = pytest.mark.timeout(60)


def test_one_model_takes_text_and_token_id_prompts() -> None:
    ids = parse_request(CompletionRequest, {"prompt": [[1, 2], [3]], "max_tokens": 4})
    assert ids.token_prompts() == [[1, 2], [3]]
    text = parse_request(CompletionRequest, {"prompt": ["hi"]})
    assert text.text_prompt() == "hi"
    with pytest.raises(OpenAIRequestError, match="prompt: send token-id lists") as info:
        text.token_prompts()
    assert info.value.body()["error"]["param"] == "prompt"
    with pytest.raises(OpenAIRequestError, match="prompt: send one prompt per call"):
        ids.text_prompt()
    with pytest.raises(OpenAIRequestError, match="prompt: send text"):
        parse_request(CompletionRequest, {"prompt": [[1, 2]]}).text_prompt()
    with pytest.raises(OpenAIRequestError, match="temperature") as bad:
        parse_request(ChatRequest, {"messages": [{"role": "user"}], "temperature": 7})
    assert bad.value.param == "temperature"


def test_sampling_takes_the_servers_defaults_and_cap() -> None:
    chat = parse_request(ChatRequest, {"messages": [{"role": "user", "content": "x"}]})
    assert chat.sampling(limit=64, temperature=0.5).max_new_tokens == 64
    assert chat.sampling(limit=64, temperature=0.5).temperature == 0.5
    asked = parse_request(
        CompletionRequest,
        {"prompt": [[1]], "max_tokens": 500, "top_k": 3, "stop_token_ids": [2], "seed": 9},
    )
    s = asked.sampling(limit=64)
    assert (s.max_new_tokens, s.top_k, s.stop_token_ids, s.seed) == (64, 3, (2,), 9)
    assert asked.sampling() == SamplingSettings(500, 1.0, 1.0, 3, (2,), 9)


async def test_the_policy_endpoint_serves_openai_compatible_policy(tokenizer) -> None:
    scripted = ScriptedPolicy(tokenizer, lambda prompt: "hit")
    with PolicyEndpoint(scripted, "tiny") as endpoint:
        client = OpenAICompatiblePolicy(endpoint.base_url, "tiny", tokenizer=tokenizer)
        prompt = tokenizer.encode("stand")
        try:
            gens = await client.generate([prompt, prompt], SamplingSettings(max_new_tokens=4))
        finally:
            await client.aclose()
        assert [g.text for g in gens] == [gens[0].text] * 2 and gens[0].token_ids
        url = endpoint.base_url + "/v1/completions"
        text = httpx.post(url, json={"model": "tiny", "prompt": "stand"})
        wrong = httpx.post(url, json={"model": "other", "prompt": [prompt]})
        bad = httpx.post(url, json={"model": "tiny", "prompt": [prompt], "max_tokens": 0})
    assert text.status_code == 400 and text.json()["error"]["param"] == "prompt"
    assert wrong.status_code == 404 and wrong.json()["error"]["type"] == "not_found_error"
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "max_tokens"
