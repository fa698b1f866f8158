"""Our episodes in torchforge's data shapes: ``Completion``, the GRPO ``Episode``, advantages, collate.

torchforge (``forge``) cannot be installed from PyPI, so when it is missing these mirror the field
names and tensor shapes of forge's own classes (``forge.data_models.completion.Completion`` and the
``Episode`` / ``collate`` of its GRPO app); when it is importable, forge's ``Completion`` is used.
A multi-turn episode is one completion: ``token_ids`` holds every model turn and the env text
between them, and ``response_mask`` (1 model token, 0 env token) keeps env text out of the loss.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F

from ...rollout.records import EpisodeRecord

try:  # the real class when torchforge is installed (GPU machines)
    from forge.data_models.completion import Completion  # type: ignore[import-not-found]

    FORGE_AVAILABLE = True
except ImportError:
    FORGE_AVAILABLE = False

    @dataclass
    class Completion:  # type: ignore[no-redef]
        """Mirror of forge's ``Completion`` (same fields, same order) for machines without forge."""

        prompt: Any
        text: str
        prompt_ids: torch.Tensor
        token_ids: torch.Tensor
        logprobs: torch.Tensor | None = None
        stop_reason: str | None = None
        generator_version: int | None = None
        metadata: dict[str, Any] | None = None


@dataclass
class Episode:
    """One GRPO episode in forge's shape (its GRPO app's ``Episode``) plus a response mask.

    ``request_tensor`` is left-padded to ``request_len`` and ``response_tensor`` right-padded to
    ``response_len`` with ``pad_id``; ``response_mask_tensor`` and ``logprobs_tensor`` are padded
    with 0 to the same length.
    """

    episode_id: str
    pad_id: int
    request_len: int
    response_len: int
    target: Any | None = None
    completion: Completion | None = None
    ref_logprobs: torch.Tensor | None = None
    reward: float | None = None
    advantage: float | None = None
    response_mask: torch.Tensor | None = None  # 1 = model token, 0 = env token
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def policy_version(self) -> int | None:
        return None if self.completion is None else self.completion.generator_version

    def _completion(self) -> Completion:
        if self.completion is None:
            raise ValueError(f"episode {self.episode_id}: completion is not set")
        return self.completion

    @property
    def request_tensor(self) -> torch.Tensor:
        tensor = self._completion().prompt_ids.to(torch.long)
        if tensor.shape[0] < self.request_len:  # left pad
            tensor = F.pad(tensor, (self.request_len - tensor.shape[0], 0), value=self.pad_id)
        return tensor

    @property
    def response_tensor(self) -> torch.Tensor:
        tensor = self._completion().token_ids.to(torch.long)
        if tensor.shape[0] < self.response_len:  # right pad
            tensor = F.pad(tensor, (0, self.response_len - tensor.shape[0]), value=self.pad_id)
        return tensor

    @property
    def response_mask_tensor(self) -> torch.Tensor:
        mask = self.response_mask
        if mask is None:  # single-turn: every generated token is the model's
            mask = torch.ones(self._completion().token_ids.shape[0], dtype=torch.long)
        return F.pad(mask.to(torch.long), (0, self.response_len - mask.shape[0]), value=0)

    @property
    def logprobs_tensor(self) -> torch.Tensor:
        lp = self._completion().logprobs
        if lp is None:
            raise ValueError(f"episode {self.episode_id}: the completion has no logprobs")
        return F.pad(lp.to(torch.float32), (0, self.response_len - lp.shape[0]), value=0.0)


#: A GRPO group: the episodes whose rewards are compared with each other.
Group = list[Episode]


def group_advantages(rewards: Sequence[float]) -> list[float]:
    """forge's group-relative advantage: ``(r - mean) / (std + 1e-4)`` (unbiased std, as torch)."""
    r = torch.tensor([float(x) for x in rewards], dtype=torch.float64)
    if r.numel() < 2:
        raise ValueError(f"a GRPO group needs >= 2 episodes to compare, got {r.numel()}")
    return ((r - r.mean()) / (r.std() + 1e-4)).tolist()


def episode_from_record(
    record: EpisodeRecord,
    *,
    pad_id: int,
    request_len: int,
    response_len: int,
    policy_version: int,
    prompt_text: str | None = None,
    text: str = "",
) -> Episode:
    """One engine ``EpisodeRecord`` as a forge ``Episode`` (advantage left for its group)."""
    n_req, n_res = len(record.prompt_ids), len(record.completion_ids)
    if n_req > request_len:
        raise ValueError(
            f"episode prompt has {n_req} tokens but request_len={request_len}; raise max_req_tokens"
        )
    if n_res > response_len:
        raise ValueError(
            f"episode response has {n_res} tokens but response_len={response_len}; raise "
            "max_res_tokens (the rollout engine's max_episode_tokens should equal it)"
        )
    completion = Completion(
        prompt=prompt_text if prompt_text is not None else record.prompt,
        text=text,
        prompt_ids=torch.tensor(record.prompt_ids, dtype=torch.long),
        token_ids=torch.tensor(record.completion_ids, dtype=torch.long),
        logprobs=torch.tensor(record.logprobs, dtype=torch.float32),
        stop_reason="stop",
        generator_version=policy_version,
        metadata={"num_turns": record.num_turns},
    )
    return Episode(
        episode_id=str(uuid.uuid4()),
        pad_id=pad_id,
        request_len=request_len,
        response_len=response_len,
        completion=completion,
        reward=float(record.reward),
        response_mask=torch.tensor(record.env_mask, dtype=torch.long),
        metrics={k: v for k, v in record.metrics.items() if isinstance(v, (int, float))},
    )


def groups_from_records(
    records: Sequence[EpisodeRecord], group_size: int, **episode_kw: Any
) -> list[Group]:
    """Engine records (groups of ``group_size`` in a row) -> forge groups with advantages set."""
    if len(records) % group_size:
        raise ValueError(
            f"{len(records)} records do not split into groups of group_size={group_size}"
        )
    groups = []
    for start in range(0, len(records), group_size):
        group = [episode_from_record(r, **episode_kw) for r in records[start : start + group_size]]
        for ep, adv in zip(group, group_advantages([e.reward for e in group]), strict=True):
            ep.advantage = adv
        groups.append(group)
    return groups


def collate(
    batches: list[Group], *, generator_logprobs: bool = False
) -> tuple[list[dict[str, torch.Tensor]], list[dict[str, torch.Tensor]]]:
    """forge's collate: one ``(inputs, targets)`` pair per data-parallel rank.

    ``inputs[i] = {"tokens": [b, request_len + response_len]}``; ``targets[i]`` has ``response``
    ``[b, response_len]``, ``ref_logprobs`` (zeros without a reference model), ``advantages``
    ``[b, 1]`` and ``padding_mask`` ``[b, response_len]``, which here is the response mask (env
    tokens and padding are 0), so forge's own loss leaves env text out unchanged.
    ``generator_logprobs=True`` adds the sampling logprobs (for an importance ratio off-policy).
    """
    inputs, targets = [], []
    for batch in batches:
        if not batch:
            raise ValueError("collate: an empty batch; every data-parallel rank needs episodes")
        request = torch.stack([e.request_tensor for e in batch])
        response = torch.stack([e.response_tensor for e in batch])
        ref = [e.ref_logprobs for e in batch]
        ref_logprobs = (
            torch.zeros(response.shape, dtype=torch.float32)
            if any(r is None for r in ref)
            else torch.stack(ref)
        )
        if any(e.advantage is None for e in batch):
            raise ValueError("collate: an episode has no advantage; compute group advantages first")
        target = {
            "response": response,
            "ref_logprobs": ref_logprobs,
            "advantages": torch.tensor([e.advantage for e in batch]).unsqueeze(-1),
            "padding_mask": torch.stack([e.response_mask_tensor for e in batch]).bool(),
        }
        if generator_logprobs:
            target["generator_logprobs"] = torch.stack([e.logprobs_tensor for e in batch])
        inputs.append({"tokens": torch.cat([request, response], dim=1)})
        targets.append(target)
    return inputs, targets
