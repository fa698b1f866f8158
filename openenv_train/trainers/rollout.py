"""``make_rollout_func``: TRL's ``GRPOTrainer(rollout_func=...)`` on top of the batched rollout engine.

TRL calls ``rollout_func(prompts, trainer)`` synchronously once per generation batch. The engine is
async and keeps pooled WebSocket sessions, so it lives on one background event loop for the whole
run (``openenv_train.rollout.sync.LoopThread``). The policy is chosen from the trainer at the first
call: ``trainer.args.use_vllm`` -> the trainer's own vLLM (TRL syncs the weights before every call);
otherwise the trainer's live model through ``TransformersPolicy`` (no copy: each call samples the
current weights, in eval mode with no grad, and the train mode is restored afterwards).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ..policy.base import Policy
from ..rollout.engine import RolloutConfig, RolloutEngine
from ..rollout.records import RolloutBatch
from ..rollout.spec import TextEnvSpec
from ..rollout.sync import LoopThread

RolloutFunc = Callable[[list[Any], Any], dict[str, Any]]
_VLLM_POLICY_MODULES = ("openenv_train.policy.vllm_policy", "openenv_train.policy")


def _unwrap(trainer: Any) -> Any:
    model = trainer.model
    accelerator = getattr(trainer, "accelerator", None)
    if accelerator is not None:
        model = accelerator.unwrap_model(model)
    return model


def _tokenizer_of(trainer: Any) -> Any:
    tok = getattr(trainer, "processing_class", None)
    tok = getattr(tok, "tokenizer", tok)  # a processor wraps its tokenizer
    if tok is None:
        raise ValueError(
            "trainer: has no processing_class; pass processing_class=<tokenizer> to GRPOTrainer"
        )
    return tok


def _vllm_policy_cls() -> Any:
    for name in _VLLM_POLICY_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        cls = getattr(module, "TRLVLLMPolicy", None)
        if cls is not None:
            return cls
    raise ImportError(
        "use_vllm=True needs openenv_train's TRLVLLMPolicy (the policy layer's vLLM backend); "
        "install the vllm extra or pass policy_factory= to make_rollout_func"
    )


def policy_for_trainer(trainer: Any) -> Policy:
    """The generation backend a trainer implies: its vLLM when ``args.use_vllm``, else its model."""
    args = getattr(trainer, "args", None)
    if getattr(args, "use_vllm", False):
        return _vllm_policy_cls()(trainer)
    from ..policy.transformers_policy import TransformersPolicy

    model = _unwrap(trainer)
    device = str(next(model.parameters()).device)
    return TransformersPolicy(model, _tokenizer_of(trainer), device=device)


def _config_for(trainer: Any, config: RolloutConfig) -> RolloutConfig:
    """Align the engine's sampling with what the trainer's loss assumes."""
    args = getattr(trainer, "args", None)
    changes: dict[str, Any] = {}
    temperature = getattr(args, "temperature", None)
    if isinstance(temperature, (int, float)) and temperature > 0:
        changes["temperature"] = float(temperature)
    for ours, theirs in (("top_p", "top_p"), ("top_k", "top_k")):
        value = getattr(args, theirs, None)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            changes[ours] = (
                type(getattr(config, ours))(value or 0) if ours == "top_k" else float(value)
            )
    limit = getattr(args, "max_completion_length", None)
    if isinstance(limit, int) and limit > 0 and limit < config.max_episode_tokens:
        changes["max_episode_tokens"] = limit
    return replace(config, **changes)


def make_rollout_func(
    spec: TextEnvSpec,
    servers: Sequence[Any],
    *,
    config: RolloutConfig | None = None,
    policy_factory: Callable[[Any], Policy] | None = None,
    reward_key: str = "env_reward",
    on_batch: Callable[[RolloutBatch], None] | None = None,
) -> RolloutFunc:
    """A TRL ``rollout_func(prompts, trainer)`` that plays one episode per prompt on ``servers``.

    ``servers``: base URLs or started providers. ``policy_factory(trainer)`` overrides the backend
    choice (default :func:`policy_for_trainer`). The result holds ``prompt_ids``,
    ``completion_ids``, ``logprobs``, ``env_mask`` and ``reward_key`` (plus ``num_turns`` and
    ``episode_metrics``), validated before TRL sees it. ``on_batch`` sees every ``RolloutBatch``
    (for metrics). The function has ``.close()`` (closes sessions and the loop), ``.get_engine()``
    and ``.last_batch``.
    """
    if not servers:
        raise ValueError(
            "servers: empty; start env servers first (openenv_train.runtime.start_local_servers)"
        )
    base = config or RolloutConfig()
    runner = LoopThread(name="openenv-train-trl-rollout")
    state: dict[str, Any] = {"engine": None, "trainer": None}

    async def _make_engine(trainer: Any) -> RolloutEngine:
        policy = (policy_factory or policy_for_trainer)(trainer)
        return RolloutEngine(spec, policy, servers, _config_for(trainer, base))

    async def _run(prompts: list[str], group_size: int) -> RolloutBatch:
        return await state["engine"].run(prompts, group_size)

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, Any]:
        if state["engine"] is None:
            state["engine"] = runner.run(_make_engine(trainer))
            state["trainer"] = trainer
        elif trainer is not state["trainer"]:
            raise RuntimeError(
                "this rollout_func is bound to the trainer of its first call; make one rollout_func per trainer"
            )
        group_size = int(getattr(trainer.args, "num_generations", 1) or 1)
        if len(prompts) % group_size:
            raise ValueError(
                f"rollout_func got {len(prompts)} prompts, not a multiple of num_generations={group_size}"
            )
        model = _unwrap(trainer)
        was_training = bool(getattr(model, "training", False))
        if hasattr(model, "eval"):
            model.eval()
        try:
            import torch

            with torch.no_grad():
                batch = runner.run(_run([_text(p) for p in prompts], group_size))
        finally:
            if was_training:
                model.train()
        rollout_func.last_batch = batch  # type: ignore[attr-defined]
        if on_batch is not None:
            on_batch(batch)
        return batch.to_trl(
            reward_key
        )  # validated; raises GroupsDroppedError rather than invent rows

    def close() -> None:
        engine = state.pop("engine", None)
        if engine is not None:
            runner.run(engine.aclose())
            runner.run(engine.policy.aclose())
        runner.close()

    rollout_func.close = close  # type: ignore[attr-defined]
    rollout_func.last_batch = None  # type: ignore[attr-defined]
    rollout_func.get_engine = lambda: state.get("engine")  # type: ignore[attr-defined]
    return rollout_func


def _text(prompt: Any) -> str:
    """TRL passes raw dataset prompts: a string, or a list of chat messages (use the last text)."""
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt and isinstance(prompt[-1], dict):
        content = prompt[-1].get("content", "")
        return content if isinstance(content, str) else str(content)
    return str(prompt)
