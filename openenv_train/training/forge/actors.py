"""The actors of forge's GRPO app, on Monarch alone: rollouts, generator, trainer, replay buffer.

Each is a Monarch actor (a ``ForgeActor`` when torchforge is importable, so forge's
``.options(...).as_actor()`` works too) with only ``async`` endpoints (Monarch 0.7.0 refuses an
actor that mixes sync and async ones). The models are transformers models loaded from a folder
(``save_pretrained``), so nothing heavy travels in spawn messages.

- ``RolloutActor`` owns the env sessions (one rollout engine over our servers) and plays whole
  GRPO groups of multi-turn episodes, generating through any forge-style generator.
- ``GeneratorActor`` answers forge's ``generate(prompt) -> list[Completion]`` (and a batched
  ``generate_ids``) with our ``TransformersPolicy``; ``update_weights`` takes pushed weights.
- ``TrainerActor`` runs the GRPO loss (``loss.grpo_loss``) on forge's collated batches; its
  ``save_state`` / ``load_state`` keep and restore a run's training state (``--resume``).
- ``ReplayBufferActor`` serves ``buffer.ReplayBuffer`` (``max_policy_age``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import torch
from monarch.actor import Actor, endpoint

from ...policy.interface import SamplingSettings
from ...rollout.spec import TextEnvSpec
from .buffer import ReplayBuffer
from .loss import AdaptiveEntropy, grpo_loss
from .rollouts import Rollouts, load_tokenizer
from .shapes import Completion, Episode, Group, collate

try:
    from forge.controller.actor import ForgeActor as _Base  # type: ignore[import-not-found]
except ImportError:
    _Base = Actor


def _load(model_dir: str, threads: int | None) -> tuple[Any, Any]:
    from ...policy.tiny import load_tiny_model

    if threads:
        torch.set_num_threads(threads)
    return load_tiny_model(model_dir)


class GeneratorActor(_Base):
    """forge's generator contract on a transformers model (CPU); ``n`` completions per prompt."""

    def __init__(
        self,
        model_dir: str,
        *,
        n: int = 1,
        sampling: dict[str, Any] | None = None,
        threads: int = 1,
    ) -> None:
        super().__init__()
        from ...policy.transformers_policy import TransformersPolicy

        self.model, self.tokenizer = _load(model_dir, threads)
        self.policy = TransformersPolicy(self.model, self.tokenizer, num_threads=threads)
        self.n = n
        self.sampling = SamplingSettings(**(sampling or {}))
        self.generator_version = 0

    def _completions(
        self, prompts: list[list[int]], gens: list[Any], prompt: Any = None
    ) -> list[Any]:
        return [
            Completion(
                prompt=prompt,
                text=g.text,
                prompt_ids=torch.tensor(p, dtype=torch.long),
                token_ids=torch.tensor(g.token_ids, dtype=torch.long),
                logprobs=torch.tensor(g.logprobs, dtype=torch.float32),
                stop_reason=g.finish_reason,
                generator_version=self.generator_version,
            )
            for p, g in zip(prompts, gens, strict=True)
        ]

    @endpoint
    async def generate(
        self, prompt: str, sampling_params: dict[str, Any] | None = None
    ) -> list[Any]:
        """forge's contract: ``n`` completions of one text prompt, tagged with the weight version."""
        ids = self.tokenizer.encode(prompt, add_special_tokens=False)
        sampling = SamplingSettings(**sampling_params) if sampling_params else self.sampling
        prompts = [ids] * self.n
        return self._completions(prompts, await self.policy.generate(prompts, sampling), prompt)

    @endpoint
    async def generate_ids(self, prompts: list[list[int]], sampling: dict[str, Any]) -> list[Any]:
        """One completion per token-id prompt, all in one batch (one message per engine batch)."""
        gens = await self.policy.generate(prompts, SamplingSettings(**sampling))
        return self._completions(prompts, gens)

    @endpoint
    async def update_weights(self, version: int, state_dict: dict[str, torch.Tensor]) -> None:
        self.model.load_state_dict(state_dict)
        self.generator_version = version

    @endpoint
    async def get_version(self) -> int:
        return self.generator_version


def crop_batch(
    tokens: torch.Tensor, targets: dict[str, torch.Tensor], pad_id: int
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Drop the all-padding columns of forge's fixed-width batch (leading request padding,
    trailing response padding): the same loss at a fraction of the compute."""
    response = targets["response"]
    req_len = tokens.shape[1] - response.shape[1]
    used = (response != pad_id) | targets["padding_mask"]
    keep_res = int(used.any(0).nonzero().max()) + 1 if bool(used.any()) else 1
    real_req = (tokens[:, :req_len] != pad_id).any(0).nonzero()
    first = int(real_req.min()) if real_req.numel() else req_len - 1
    out = {
        k: (v[:, :keep_res] if v.dim() == 2 and v.shape[1] == response.shape[1] else v)
        for k, v in targets.items()
    }
    return torch.cat([tokens[:, first:req_len], tokens[:, req_len : req_len + keep_res]], 1), out


class TrainerActor(_Base):
    """GRPO on forge's ``(inputs, targets)`` batches; AdamW, cosine/constant lr, grad clipping."""

    def __init__(
        self,
        model_dir: str,
        *,
        learning_rate: float = 5e-4,
        lr_schedule: str = "cosine",
        steps: int = 800,
        max_norm: float = 1.0,
        loss: dict[str, Any] | None = None,
        entropy: dict[str, Any] | None = None,
        threads: int = 1,
        seed: int = 0,
        lora: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if lr_schedule not in ("cosine", "constant"):
            raise ValueError(f"trainer.lr_schedule={lr_schedule!r}: use 'cosine' or 'constant'")
        torch.manual_seed(seed)
        self.model, self.tokenizer = _load(model_dir, threads)
        if lora:  # the run's lora section (r, alpha, dropout, target_modules): adapters only train
            from ...policy.lora import lora_config, wrap

            self.model = wrap(self.model, lora_config(**lora))
        self.model.train()
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(trainable, lr=learning_rate)
        total = max(1, steps)
        factor = (
            (lambda s: 0.5 * (1 + math.cos(math.pi * min(s, total) / total)))
            if lr_schedule == "cosine"
            else (lambda s: 1.0)
        )
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, factor)
        self.max_norm = max_norm
        self.loss_kw = dict(loss or {})
        self.entropy = AdaptiveEntropy(**entropy) if entropy is not None else None
        self.threads = threads
        self.step = 0

    @endpoint
    async def train_step(
        self, inputs: list[dict[str, torch.Tensor]], targets: list[dict[str, torch.Tensor]]
    ) -> dict[str, float]:
        t0 = time.perf_counter()
        torch.set_num_threads(self.threads)  # per thread in torch; endpoints may run elsewhere
        tokens, target = crop_batch(inputs[0]["tokens"], targets[0], self.tokenizer.pad_token_id)
        pad = self.tokenizer.pad_token_id
        req_len = tokens.shape[1] - target["response"].shape[1]
        attention = torch.ones_like(tokens)
        attention[:, :req_len] = (tokens[:, :req_len] != pad).long()  # the left padding
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        logits = self.model(
            input_ids=tokens, attention_mask=attention, position_ids=positions
        ).logits
        coef = self.entropy.applied if self.entropy is not None else 0.0
        loss, stats = grpo_loss(logits, **target, **self.loss_kw, entropy_coef=coef)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_norm)
        lr = self.scheduler.get_last_lr()[0]
        self.optimizer.step()
        self.scheduler.step()
        if self.entropy is not None:
            self.entropy.update(stats["entropy"])
        self.step += 1
        return {
            **stats,
            "loss": float(loss.detach()),
            "grad_norm": float(grad_norm),
            "learning_rate": lr,
            "entropy_coef": coef,
            "train_s": time.perf_counter() - t0,
        }

    @endpoint
    async def save_state(self, path: str) -> None:
        """Everything a resumed run needs (weights, AdamW, lr schedule, entropy control, step)."""
        entropy = dataclasses.asdict(self.entropy) if self.entropy is not None else None
        state = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                 "scheduler": self.scheduler.state_dict(), "entropy": entropy, "step": self.step}  # fmt: skip
        torch.save(state, path)

    @endpoint
    async def load_state(self, path: str) -> int:
        """Continue from :meth:`save_state`'s file; returns its step."""
        state = torch.load(path, weights_only=True)
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        if self.entropy is not None and state["entropy"] is not None:
            self.entropy = AdaptiveEntropy(**state["entropy"])
        self.step = int(state["step"])
        return self.step

    @endpoint
    async def push_weights(self, policy_version: int) -> dict[str, torch.Tensor]:
        """The weights of ``policy_version`` (forge pushes to torchstore; here the controller relays);
        a LoRA trainer pushes them merged, so generators keep a plain model."""
        from ...policy.lora import is_peft

        model = self.model
        if is_peft(model):
            import copy

            model = copy.deepcopy(model).merge_and_unload()
        return {k: v.detach().clone() for k, v in model.state_dict().items()}


class ReplayBufferActor(_Base):
    """forge's replay buffer endpoints (``add``, ``sample``, ``evict``) over ``ReplayBuffer``."""

    def __init__(self, batch_size: int, **kw: Any) -> None:
        super().__init__()
        gen_lp = kw.pop("generator_logprobs", True)
        self.buffer = ReplayBuffer(
            batch_size, collate_fn=lambda b: collate(b, generator_logprobs=gen_lp), **kw
        )

    @endpoint
    async def add(self, episodes: Episode | list[Episode]) -> None:
        self.buffer.add(episodes)

    @endpoint
    async def sample(self, curr_policy_version: int) -> Any:
        return self.buffer.sample(curr_policy_version)

    @endpoint
    async def evict(self, curr_policy_version: int) -> None:
        self.buffer.evict(curr_policy_version)

    @endpoint
    async def stats(self) -> dict[str, Any]:
        ages = self.buffer.last_sample_ages
        return {
            **self.buffer.stats,
            "size": len(self.buffer),
            "max_sampled_age": max(ages, default=0),
        }


class RolloutActor(_Base):
    """Owns env sessions on our servers and plays GRPO groups through a forge-style generator
    (``rollouts.Rollouts``); ``tokenizer`` is a tiny-model folder or a hub id."""

    def __init__(
        self, spec: TextEnvSpec, base_urls: list[str], generator: Any, tokenizer: str, **kw: Any
    ) -> None:
        super().__init__()
        self.impl = Rollouts(spec, base_urls, generator, load_tokenizer(tokenizer), **kw)

    @endpoint
    async def rollout(self, num_groups: int, group_size: int) -> tuple[list[Group], dict[str, Any]]:
        """``num_groups`` groups of ``group_size`` episodes with advantages, and batch metrics."""
        return await self.impl.rollout(num_groups, group_size)

    @endpoint
    async def close(self) -> None:
        await self.impl.close()
