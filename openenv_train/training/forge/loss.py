"""The GRPO loss on forge's collated targets, with the adaptive entropy bonus BlackJack needs.

Plain GRPO (no KL, no entropy control) collapses a tiny BlackJack model to "always stand" and it
never recovers; TRL 1.16's adaptive entropy control fixed that in our TRL recipe, so this loss
carries the same rule: the bonus ``coef * H`` applies only while the last step's mean entropy was
at or below ``target``, and ``coef`` moves by ``delta`` per step (up while at/below the target,
down above it). The policy term is TRL's ``dapo``: a clipped importance ratio against the
generator's logprobs, summed over model tokens and divided by their count in the batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


def response_logits(logits: torch.Tensor, response_len: int) -> torch.Tensor:
    """The logits that predict the ``response_len`` last tokens of ``tokens`` (forge's alignment)."""
    return logits[:, -response_len - 1 : -1, :]


def grpo_loss(
    logits: torch.Tensor,
    response: torch.Tensor,
    ref_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    padding_mask: torch.Tensor,
    generator_logprobs: torch.Tensor | None = None,
    *,
    beta: float = 0.0,
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    temperature: float = 1.0,
    entropy_coef: float = 0.0,
) -> tuple[torch.Tensor, dict[str, float]]:
    """``(loss, stats)`` for one collated batch; ``logits`` cover request + response tokens.

    Without ``generator_logprobs`` the ratio is 1 (on-policy, forge's simple loss). ``stats`` has
    the mean entropy of the model tokens, the policy loss and the clipped fraction.
    """
    resp_logits = response_logits(logits, response.shape[1]).float() / temperature
    logp_all = torch.log_softmax(resp_logits, dim=-1)
    logp = logp_all.gather(-1, response.unsqueeze(-1)).squeeze(-1)
    mask = padding_mask.to(logp.dtype)
    n_tokens = mask.sum().clamp(min=1.0)
    old = logp.detach() if generator_logprobs is None else generator_logprobs.to(logp.dtype)
    ratio = torch.exp(logp - old)
    hi = epsilon if epsilon_high is None else epsilon_high
    clipped = torch.clamp(ratio, 1 - epsilon, 1 + hi)
    per_token = -torch.min(ratio * advantages, clipped * advantages)
    if beta:
        delta = ref_logprobs.to(logp.dtype) - logp
        per_token = per_token + beta * (torch.exp(delta) - delta - 1)
    policy_loss = (per_token * mask).sum() / n_tokens
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    mean_entropy = (entropy * mask).sum() / n_tokens
    loss = policy_loss - entropy_coef * mean_entropy if entropy_coef else policy_loss
    stats = {
        "policy_loss": float(policy_loss.detach()),
        "entropy": float(mean_entropy.detach()),
        "clip_fraction": float(
            (((ratio - clipped).abs() > 0).to(mask.dtype) * mask).sum() / n_tokens
        ),
        "model_tokens": float(mask.sum()),
    }
    return loss, stats


@dataclass
class AdaptiveEntropy:
    """TRL 1.16's adaptive entropy controller (``use_adaptive_entropy``), one update per step."""

    target: float = 0.15
    delta: float = 0.005
    coef: float = 0.0
    coef_min: float = 0.0
    coef_max: float = 1.0
    last_entropy: float = math.inf

    @property
    def applied(self) -> float:
        """The coefficient this step uses: ``coef`` while the last entropy was at/below target."""
        return self.coef if self.last_entropy <= self.target else 0.0

    def update(self, entropy: float) -> None:
        if entropy <= self.target:
            self.coef = min(self.coef + self.delta, self.coef_max)
        else:
            self.coef = max(self.coef - self.delta, self.coef_min)
        self.last_entropy = entropy


def forge_loss(beta: float = 0.0, **kw: float):  # noqa: ANN201 - a loss callable for forge
    """A ``loss(logits, **targets) -> Tensor`` for forge's ``TitanTrainer(loss=...)``."""

    def loss(logits: torch.Tensor, **targets: torch.Tensor) -> torch.Tensor:
        return grpo_loss(logits, beta=beta, **targets, **kw)[0]

    return loss
