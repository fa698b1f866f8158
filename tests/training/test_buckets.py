"""Per-length-bucket forward passes give TRL's per-token logprobs, entropies and gradients."""

from __future__ import annotations

import torch
from trainers_helpers import tiny_grpo_trainer
from trl import GRPOTrainer

from openenv_train.training.buckets import length_buckets


def test_buckets_group_by_length_and_fill_up() -> None:
    lengths = [2, 9, 2, 16, 2, 9, 3]
    assert length_buckets(lengths, min_rows=2) == [[0, 2, 4], [6, 1, 5], [3]]
    assert sorted(i for b in length_buckets(lengths, min_rows=1) for i in b) == list(range(7))
    assert length_buckets(lengths, min_rows=100) == [[0, 2, 4, 6, 1, 5, 3]]


def test_bucketed_logps_equal_trl_on_a_real_multi_turn_batch(blackjack_servers, warmed, tmp_path):
    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.training import make_rollout_func
    from openenv_train.training.buckets import LengthBucketedGRPOTrainer

    model, tok = warmed
    f = make_rollout_func(BlackjackTextSpec(seed=4), blackjack_servers)
    try:
        trainer = tiny_grpo_trainer(
            model, tok, f, tmp_path, cls=LengthBucketedGRPOTrainer, per_device_train_batch_size=64
        )
        trainer.bucket_min_rows = 4
        batch = trainer._generate_and_score_completions([{"prompt": "blackjack"}] * 64)
    finally:
        f.close()
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], dim=1)
    am = torch.cat([batch["prompt_mask"], batch["completion_mask"]], dim=1)
    width = batch["completion_ids"].size(1)
    mask = batch["completion_mask"].bool()
    lengths = batch["completion_mask"].sum(1)
    assert lengths.max() > 2 * lengths.float().mean()  # multi-turn rows: padding to cut
    model.train()

    def run(fn):
        model.zero_grad()
        logps, ent, _ = fn(trainer, model, ids, am, width, compute_entropy=True)
        (logps * mask).sum().backward()
        grads = [p.grad.clone() for p in model.parameters()]
        return logps.detach()[mask], ent.detach()[mask], grads

    ref = run(GRPOTrainer._get_per_token_logps_and_entropies)
    mine = run(LengthBucketedGRPOTrainer._get_per_token_logps_and_entropies)
    torch.testing.assert_close(mine[0], ref[0], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(mine[1], ref[1], atol=1e-5, rtol=1e-4)
    for a, b in zip(mine[2], ref[2], strict=True):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-3)
