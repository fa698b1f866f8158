"""Generate through an OpenAI-compatible ``/v1/completions`` server (vLLM, SGLang, ...).

One HTTP request per batch: the prompts go as token-id lists, and the request asks for
``"logprobs": 1, "return_token_ids": true`` so the reply carries each choice's sampled
``token_ids`` and ``logprobs.token_logprobs`` (vLLM's extensions to the OpenAI API). The body and
the reply's checks are the one wire format (``openai_wire``) our own servers speak too.
Which logprobs a server reports is its own setting: vLLM's default ``raw_logprobs`` is the
model's distribution before temperature/top-k/top-p; start it with
``--logprobs-mode processed_logprobs`` to get the sampling distribution.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import InfrastructureError, RequestTimeoutError
from ._common import make_generation, stop_ids, validate_request
from .interface import Generation, Policy, SamplingSettings
from .openai_wire import completion_body, read_completion_choices


class OpenAICompatiblePolicy(Policy):
    """Async client for ``POST {base_url}/v1/completions`` with token-id prompts.

    ``text`` is decoded locally from the token ids (as every backend does: vLLM's incremental
    detokenizer would prefix a space here); the server's own text is in ``extra["server_text"]``.
    ``sampling.seed`` is sent only for single-prompt batches: a server applies one request seed to
    every prompt, which would make the members of a GRPO group (identical prompts) identical.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        tokenizer: Any,
        timeout: float = 300.0,
        api_key: str | None = None,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        import httpx

        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url={base_url!r}: expected http(s)://host:port")
        self.base_url = base_url.rstrip("/").removesuffix("/v1")
        self.model = model
        self.tokenizer = tokenizer
        self.extra_body = dict(extra_body or {})
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.AsyncClient(
            base_url=self.base_url, timeout=httpx.Timeout(timeout, connect=10.0), headers=headers
        )

    def request_body(self, prompts: list[list[int]], sampling: SamplingSettings) -> dict[str, Any]:
        """The JSON body sent for one batch (public so tests and users can inspect it)."""
        return {**completion_body(self.model, prompts, sampling), **self.extra_body}

    async def generate(
        self, prompts: list[list[int]], sampling: SamplingSettings
    ) -> list[Generation]:
        """One request for the whole batch; choices are matched back to prompts by ``index``."""
        import httpx

        validate_request(prompts, sampling)
        if not prompts:
            return []
        try:
            response = await self._client.post(
                "/v1/completions", json=self.request_body(prompts, sampling)
            )
        except httpx.TimeoutException as exc:
            raise RequestTimeoutError(f"{self.base_url}/v1/completions timed out: {exc}") from exc
        except httpx.TransportError as exc:
            raise InfrastructureError(
                f"{self.base_url}/v1/completions unreachable: {exc!r}"
            ) from exc
        if response.status_code >= 500:
            raise InfrastructureError(
                f"{self.base_url}/v1/completions answered {response.status_code}: {response.text[:500]}"
            )
        if response.status_code != 200:
            raise ValueError(
                f"{self.base_url}/v1/completions rejected the request ({response.status_code}): "
                f"{response.text[:500]}"
            )
        return self.parse_response(response.json(), len(prompts), sampling)

    def parse_response(
        self, payload: dict[str, Any], n_prompts: int, sampling: SamplingSettings
    ) -> list[Generation]:
        """Turn a completions reply into Generations, checking it holds what we asked for."""
        stops = stop_ids(self.tokenizer, sampling)
        return [
            make_generation(
                c.token_ids,
                c.logprobs,
                self.tokenizer,
                stops,
                finish_reason=c.finish_reason,
                text=None if self.tokenizer is not None else c.text,
                extra={"prompt_token_ids": c.prompt_token_ids, "server_text": c.text},
            )
            for c in read_completion_choices(payload, n_prompts)
        ]

    async def aclose(self) -> None:
        await self._client.aclose()
