"""Batched sampling from an in-process transformers causal LM (the CPU backend).

``model.generate`` costs several milliseconds of Python per step (logits processors, stopping
criteria, cache and mask bookkeeping), which dominates for tiny models that answer in 1-3 tokens.
So this backend runs its own lean loop: one left-padded prefill, then one cached forward per new
token, sampling on the whole batch at once. It matches ``model.generate`` token for token when
greedy (tested), and ``benchmarks/policy_speed.py`` measures both.

Logprobs: the log-probability of each sampled token under the distribution it was actually drawn
from: ``log_softmax(filter(logits / T))`` where ``filter`` applies top-k then top-p (masked tokens
get -inf, the rest renormalise). With ``temperature == 0`` (greedy) it is the plain
``log_softmax(logits)``. This matches TRL's training-side logprobs (logits / T) and vLLM's
``logprobs_mode="processed_logprobs"``.

Row seeds (``supports_row_seeds``): ``generate_sync(..., seeds=[...])`` draws each row's tokens by
inverse CDF from uniforms of that row's own ``torch.Generator``, so a row samples the same tokens
whichever other rows share its batch (deterministic training whatever the batching timing).
"""

from __future__ import annotations

import inspect
import threading
from typing import Any

from ._common import ThreadedPolicy, make_generation, stop_ids, validate_request
from .interface import Generation, SamplingSettings

#: the token sequences one row's answer may be (a legal-move mask)
Answers = frozenset[tuple[int, ...]]


def _filter_logits(logits: Any, top_k: int, top_p: float) -> Any:
    """Mask (to -inf) the tokens outside top-k and outside the top-p nucleus."""
    import torch

    if top_k and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        before = torch.cumsum(probs, dim=-1) - probs  # mass of strictly more likely tokens
        sorted_logits = sorted_logits.masked_fill(before >= top_p, float("-inf"))
        logits = torch.empty_like(logits).scatter_(-1, order, sorted_logits)
    return logits


def _cache_kwarg(model: Any) -> str:
    """``cache`` in transformers >= 5.2x, ``past_key_values`` before (vLLM's venv pins 5.17)."""
    params = inspect.signature(type(model).forward).parameters
    return "cache" if "cache" in params else "past_key_values"


class TransformersPolicy(ThreadedPolicy):
    """Generate with a transformers ``*ForCausalLM`` in a worker thread (never on the event loop).

    The policy keeps a reference to ``model``, never a copy: a trainer that updates the weights
    in place is sampled from as it is at each call. :meth:`set_model` swaps in another object
    (e.g. the trainer's unwrapped model). Calls are serialised on one worker thread.

    ``num_threads`` sets torch's intra-op threads on that worker only. For tiny models on a
    shared 2-core machine 1 is much faster than the default (oversubscribed OpenMP threads spin).
    """

    supports_row_seeds = True
    #: ``allowed``: per row, the token sequences its answer may be (legal-move masks)
    supports_allowed_tokens = True

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        device: str | None = "cpu",
        max_batch_size: int = 512,
        num_threads: int | None = None,
    ) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size={max_batch_size}: must be >= 1")
        if tokenizer.pad_token_id is None and tokenizer.eos_token_id is None:
            raise ValueError("tokenizer: needs a pad_token or an eos_token to left-pad batches")
        self.tokenizer = tokenizer
        self.device = device
        self.max_batch_size = max_batch_size
        if num_threads is not None and num_threads < 1:
            raise ValueError(
                f"num_threads={num_threads}: must be >= 1 (or None for torch's default)"
            )
        self.num_threads = num_threads
        self._start_worker("transformers-policy", initializer=self._init_worker)
        self._lock = threading.Lock()
        self.model = None
        self.set_model(model)

    def _init_worker(self) -> None:
        if self.num_threads is not None:  # per-thread in torch: the trainer's count is untouched
            import torch

            torch.set_num_threads(self.num_threads)

    def set_model(self, model: Any) -> None:
        """Point the policy at ``model`` (by reference; moved to ``device`` if it is elsewhere)."""
        if self.device is not None and str(next(model.parameters()).device) != str(self.device):
            model.to(self.device)
        self.model = model

    @property
    def pad_id(self) -> int:
        pad = self.tokenizer.pad_token_id
        return int(pad if pad is not None else self.tokenizer.eos_token_id)

    def generate_sync(
        self,
        prompts: list[list[int]],
        sampling: SamplingSettings,
        seeds: list[int] | None = None,
        allowed: list[Answers | None] | None = None,
    ) -> list[Generation]:
        """Blocking version of :meth:`generate`, for scripts and benchmarks; ``seeds`` gives
        each row its own sampling stream (``sampling.seed`` is then unused); ``allowed`` limits
        each row's answer to one of those token sequences (None: any), e.g. a game's legal
        moves each followed by EOS. The logprobs are the model's own (unmasked), as the trainer
        computes them."""
        import torch

        validate_request(prompts, sampling, self.model.config.vocab_size)
        for name, given in (("seeds", seeds), ("allowed", allowed)):
            if given is not None and len(given) != len(prompts):
                raise ValueError(
                    f"{name}: {len(given)} given for {len(prompts)} prompts; pass one per prompt"
                )
        limit = getattr(self.model.config, "max_position_embeddings", None)
        longest = max((len(p) for p in prompts), default=0)
        if limit is not None and longest + sampling.max_new_tokens > limit:
            raise ValueError(
                f"sampling.max_new_tokens={sampling.max_new_tokens} + longest prompt ({longest}) "
                f"exceeds the model's max_position_embeddings={limit}; shorten one of them"
            )
        stops = stop_ids(self.tokenizer, sampling)
        generator = None
        if sampling.seed is not None:
            generator = torch.Generator(device=self._device())
            generator.manual_seed(sampling.seed)
        out: list[Generation] = []
        with self._lock:
            for start in range(0, len(prompts), self.max_batch_size):
                chunk = prompts[start : start + self.max_batch_size]
                if seeds is not None:
                    generator = _row_uniforms(
                        seeds[start : start + self.max_batch_size], sampling.max_new_tokens
                    )
                rows = allowed[start : start + self.max_batch_size] if allowed else None
                ids, lps = self._sample(chunk, sampling, stops, generator, rows)
                out.extend(
                    make_generation(i, lp, self.tokenizer, stops)
                    for i, lp in zip(ids, lps, strict=True)
                )
        return out

    def _device(self) -> Any:
        return next(self.model.parameters()).device

    def _sample(
        self,
        prompts: list[list[int]],
        sampling: SamplingSettings,
        stops: frozenset[int],
        generator: Any,
        allowed: list[Answers | None] | None = None,
    ) -> tuple[list[list[int]], list[list[float]]]:
        import torch

        model, device = self.model, self._device()
        batch = len(prompts)
        input_ids, mask, positions, expand = _left_padded(prompts, self.pad_id, device)
        stop_tensor = torch.tensor(sorted(stops), dtype=torch.long, device=device)
        done = torch.zeros(batch, dtype=torch.bool, device=device)
        tokens, logprobs = [], []
        cache_arg = _cache_kwarg(model)
        past = None
        was_training = model.training
        model.eval()
        try:
            with torch.inference_mode():
                for _ in range(sampling.max_new_tokens):
                    result = model(
                        input_ids=input_ids,
                        attention_mask=mask,
                        position_ids=positions,
                        use_cache=True,
                        logits_to_keep=1,
                        **{cache_arg: past},
                    )
                    past = getattr(result, cache_arg)
                    logits = result.logits[:, -1, :].float()
                    if expand is not None:  # after the prefill only
                        past.reorder_cache(expand)
                        logits, mask, positions = logits[expand], mask[expand], positions[expand]
                        expand = None
                    if allowed is not None:  # only the next tokens of an allowed answer
                        own = _logp(logits, sampling)
                        so_far = torch.stack(tokens, 1).tolist() if tokens else [[]] * batch
                        blocked = _disallowed(allowed, so_far, logits)
                        nxt, _ = _pick(
                            logits.masked_fill(blocked, float("-inf")),
                            sampling,
                            generator,
                            len(tokens),
                        )
                        logp = own
                    else:
                        nxt, logp = _pick(logits, sampling, generator, len(tokens))
                    nxt = nxt.masked_fill(done, self.pad_id)
                    tokens.append(nxt)
                    logprobs.append(logp.gather(-1, nxt[:, None]).squeeze(-1))
                    done = done | torch.isin(nxt, stop_tensor)
                    if bool(done.all()):
                        break
                    input_ids = nxt[:, None]
                    mask = torch.cat([mask, mask.new_ones((batch, 1))], dim=-1)
                    positions = positions[:, -1:] + 1
        finally:
            if was_training:
                model.train()
        token_rows = torch.stack(tokens, dim=1).tolist()
        logprob_rows = torch.stack(logprobs, dim=1).tolist()
        return token_rows, logprob_rows


def _left_padded(prompts: list[list[int]], pad_id: int, device: Any) -> tuple[Any, Any, Any, Any]:
    """``(input_ids, mask, positions, expand)`` for the distinct prompts, padded on the left.

    GRPO batches repeat each prompt num_generations times: each distinct prompt is prefilled once
    and ``expand`` (``None`` when all differ) copies its KV cache rows to every row that repeats it.
    """
    import torch

    first_row: dict[tuple[int, ...], int] = {}
    unique: list[list[int]] = []
    owner: list[int] = []
    for prompt in prompts:
        key = tuple(prompt)
        if key not in first_row:
            first_row[key] = len(unique)
            unique.append(list(prompt))
        owner.append(first_row[key])
    expand = torch.tensor(owner, device=device) if len(unique) < len(prompts) else None
    width = max(len(p) for p in unique)
    input_ids = torch.full((len(unique), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(unique), width), dtype=torch.long)
    for row, prompt in enumerate(unique):
        input_ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        mask[row, width - len(prompt) :] = 1
    input_ids, mask = input_ids.to(device), mask.to(device)
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    return input_ids, mask, positions, expand


def _disallowed(allowed: list[Answers | None], so_far: list[list[int]], logits: Any) -> Any:
    """``[rows, vocab]``: True where the token would leave every allowed answer of the row that
    starts with what it generated so far (rows with None, or past their answers: nothing)."""
    import torch

    out = torch.zeros(logits.shape, dtype=torch.bool, device=logits.device)
    for row, answers in enumerate(allowed):
        if not answers:
            continue
        done, t = so_far[row], len(so_far[row])
        nxt = {a[t] for a in answers if len(a) > t and list(a[:t]) == done}
        if nxt:
            out[row] = True
            out[row, sorted(nxt)] = False
    return out


def _logp(logits: Any, sampling: SamplingSettings) -> Any:
    """The log-probs the next token is drawn from (after temperature, top-k and top-p)."""
    import torch

    if sampling.temperature == 0:
        return torch.log_softmax(logits, dim=-1)
    scaled = _filter_logits(logits / sampling.temperature, sampling.top_k, sampling.top_p)
    return torch.log_softmax(scaled, dim=-1)


def _pick(logits: Any, sampling: SamplingSettings, generator: Any, step: int) -> tuple[Any, Any]:
    """``(next token per row, log-probs it was drawn from)``: greedy at temperature 0, else top-k/p
    sampling from ``generator`` (a torch generator, or per-row uniforms ``[rows, steps]``)."""
    import torch

    logp = _logp(logits, sampling)
    if sampling.temperature == 0:
        return logits.argmax(dim=-1), logp
    if isinstance(generator, torch.Tensor):  # row seeds: inverse CDF
        cdf = logp.exp().cumsum(-1)
        u = generator[:, step, None].to(logits.device) * cdf[:, -1:]
        nxt = torch.searchsorted(cdf, u, right=True).squeeze(-1).clamp(max=logits.shape[-1] - 1)
    else:
        nxt = torch.multinomial(logp.exp(), 1, generator=generator).squeeze(-1)
    return nxt, logp


def _row_uniforms(seeds: list[int], n: int) -> Any:
    """``[rows, n]`` uniforms in [0, 1), row ``i`` from a generator seeded with ``seeds[i]``."""
    import torch

    out = torch.empty((len(seeds), n))
    gen = torch.Generator()
    for i, seed in enumerate(seeds):
        gen.manual_seed(seed)
        torch.rand(n, generator=gen, out=out[i])
    return out
