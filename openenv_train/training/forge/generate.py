"""Generate through anything that answers forge's ``generate(prompt) -> list[Completion]``.

``GeneratorPolicy`` turns such a generator into our ``Policy``, so the rollout engine (batching,
multi-turn episodes, retries) runs unchanged on top of it. The generator may be forge's vLLM
``Generator`` service (called with ``.route()``), a Monarch actor (``.call_one()``) or a plain
object with an async ``generate``. A generator that also has ``generate_ids`` (our
``GeneratorActor``) gets a whole engine batch in one message instead of one per prompt.

Each completion carries the generator's weight version; :meth:`GeneratorPolicy.versions` reports
the oldest version used since a mark, which tags the episodes for the replay buffer's
``max_policy_age``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from typing import Any

from ...policy.interface import Generation, Policy, SamplingSettings
from ..errors import TokenMismatchError as TokenMismatchError


def _endpoint(target: Any, name: str) -> Callable[..., Awaitable[Any]] | None:
    """``target.<name>`` as an async call: a service's ``.route``, an actor's ``.call_one``, or a
    coroutine method; ``None`` when ``target`` has no such endpoint."""
    fn = getattr(target, name, None)
    if fn is None:
        return None
    for how in ("route", "call_one"):
        call = getattr(fn, how, None)
        if call is not None:
            return call
    if not callable(fn):
        raise TypeError(f"generator.{name} is neither callable nor a forge/Monarch endpoint")
    return fn


def _ids(tensor_or_list: Any) -> list[int]:
    return [
        int(t)
        for t in (tensor_or_list.tolist() if hasattr(tensor_or_list, "tolist") else tensor_or_list)
    ]


def completion_to_generation(completion: Any, prompt_ids: list[int] | None = None) -> Generation:
    """A forge ``Completion`` as our ``Generation`` (version in ``extra['generator_version']``)."""
    if completion.logprobs is None:
        raise ValueError(
            "generator returned a Completion without logprobs; ask the generator for the sampled "
            "token's logprob (vLLM: SamplingParams(logprobs=0))"
        )
    if prompt_ids is not None and _ids(completion.prompt_ids) != prompt_ids:
        raise TokenMismatchError(
            "the generator re-tokenized the prompt into other ids than the episode's context "
            f"(ours ends {prompt_ids[-8:]}, its ends {_ids(completion.prompt_ids)[-8:]}); use a "
            "tokenizer whose decode/encode round-trips these contexts, or a generator that takes ids"
        )
    return Generation(
        token_ids=_ids(completion.token_ids),
        logprobs=[float(x) for x in _ids_f(completion.logprobs)],
        text=completion.text,
        finish_reason="stop" if completion.stop_reason in (None, "stop") else "length",
        extra={"generator_version": completion.generator_version},
    )


def _ids_f(values: Any) -> list[float]:
    return values.tolist() if hasattr(values, "tolist") else list(values)


class GeneratorPolicy(Policy):
    """Our ``Policy`` on top of a forge-style generator (see the module docstring).

    ``sampling_params``: optional factory ``SamplingSettings -> object`` passed to the generator
    as ``sampling_params=`` (e.g. a vLLM ``SamplingParams`` with ``n=1`` for forge's Generator);
    without it the generator's own configured sampling is used and must yield one completion.
    ``batched=False`` keeps to forge's one-prompt ``generate`` even when ``generate_ids`` exists.
    """

    def __init__(
        self,
        generator: Any,
        tokenizer: Any,
        *,
        sampling_params: Callable[[SamplingSettings], Any] | None = None,
        check_tokens: bool = True,
        batched: bool = True,
    ) -> None:
        self.tokenizer = tokenizer
        self.generator = generator
        self.sampling_params = sampling_params
        self.check_tokens = check_tokens
        self._generate = _endpoint(generator, "generate")
        self._generate_ids = _endpoint(generator, "generate_ids") if batched else None
        if self._generate is None and self._generate_ids is None:
            raise TypeError(
                f"generator: {type(generator).__name__} has no generate endpoint; pass forge's "
                "Generator service, a GeneratorActor mesh, or an object with async generate(prompt)"
            )
        self._oldest: int | None = None
        self.calls = 0

    def mark(self) -> None:
        """Start a new window for :meth:`oldest_version`."""
        self._oldest = None

    def oldest_version(self) -> int | None:
        """The oldest generator version of any completion since the last :meth:`mark`."""
        return self._oldest

    def _seen(self, gens: list[Generation]) -> None:
        for g in gens:
            v = g.extra.get("generator_version")
            if v is not None and (self._oldest is None or v < self._oldest):
                self._oldest = int(v)

    async def generate(
        self, prompts: list[list[int]], sampling: SamplingSettings
    ) -> list[Generation]:
        if not prompts:
            return []
        self.calls += 1
        if self._generate_ids is not None:
            completions = await self._generate_ids(prompts, asdict(sampling))
            gens = [
                completion_to_generation(c, p if self.check_tokens else None)
                for c, p in zip(completions, prompts, strict=True)
            ]
        else:
            gens = list(await asyncio.gather(*(self._one(p, sampling) for p in prompts)))
        self._seen(gens)
        return gens

    async def _one(self, prompt_ids: list[int], sampling: SamplingSettings) -> Generation:
        text = self.tokenizer.decode(prompt_ids, skip_special_tokens=False)
        kwargs = {}
        if self.sampling_params is not None:
            kwargs["sampling_params"] = self.sampling_params(sampling)
        assert self._generate is not None
        completions = await self._generate(text, **kwargs)
        if len(completions) != 1:
            raise ValueError(
                f"generator returned {len(completions)} completions for one prompt; each episode "
                "samples its own turn, so configure the generator with n=1 (sampling_params.n)"
            )
        return completion_to_generation(completions[0], prompt_ids if self.check_tokens else None)
