"""The policy endpoint speaks the one OpenAI wire format: token-id prompts from
``OpenAICompatiblePolicy`` work end to end; text prompts, a wrong model or a bad field are refused
in OpenAI's error shape naming the field."""

from __future__ import annotations

import httpx
import pytest

from openenv_train.policy import OpenAICompatiblePolicy, SamplingSettings
from openenv_train.rollout import ScriptedPolicy
from openenv_train.rollout.policy_endpoint import PolicyEndpoint

pytestmark = pytest.mark.timeout(60)


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
        not_json = httpx.post(url, content=b"{", headers={"content-type": "application/json"})
        plain = httpx.post(url, json={"model": "tiny", "prompt": [prompt, prompt], "max_tokens": 2})
        models = httpx.get(endpoint.base_url + "/v1/models")
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["error"]["message"]
    reply = plain.json()  # no logprobs or token_ids asked: none sent; usage counts both prompts
    assert [c["logprobs"] for c in reply["choices"]] == [None, None]
    assert "token_ids" not in reply["choices"][0] and reply["object"] == "text_completion"
    assert reply["usage"]["prompt_tokens"] == 2 * len(prompt)
    assert reply["usage"]["total_tokens"] == 2 * len(prompt) + reply["usage"]["completion_tokens"]
    assert models.json()["data"][0]["id"] == "tiny"
    assert text.status_code == 400 and text.json()["error"]["param"] == "prompt"
    assert wrong.status_code == 404 and wrong.json()["error"]["type"] == "not_found_error"
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "max_tokens"
