"""Overlapped rollouts (``max_staleness`` > 0) on real BlackJack servers and a real TRL trainer."""

from __future__ import annotations

import pytest
import torch
from trainers_helpers import tiny_grpo_trainer


def _trainer(model, tok, rollout_func, tmp_path, **kw):
    from openenv_train.training.offpolicy import OffPolicyGRPOTrainer

    return tiny_grpo_trainer(
        model,
        tok,
        rollout_func,
        tmp_path,
        cls=OffPolicyGRPOTrainer,
        use_adaptive_entropy=False,
        vllm_importance_sampling_correction=True,
        vllm_importance_sampling_mode="token_truncate",
        **kw,
    )


@pytest.mark.parametrize("overlap", ["process", "thread"])
def test_rows_carry_versions_weights_follow_and_stale_batches_are_dropped(
    blackjack_servers, warmed, tmp_path, overlap
) -> None:
    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.training import make_rollout_func

    model, tok = warmed
    f = make_rollout_func(
        BlackjackTextSpec(seed=1), blackjack_servers, max_staleness=1, overlap=overlap
    )
    prompts = ["blackjack"] * 16
    try:
        trainer = _trainer(model, tok, f, tmp_path)
        out0 = f(prompts, trainer)  # step 0: played now with version 0
        assert out0["policy_version"] == [0] * 16
        runner = f.runner  # None: the process producer's runner lives in the child
        producer_model = runner.policy.model if runner is not None else None
        assert producer_model is not model  # the producer samples its own copy
        with torch.no_grad():  # an "optimizer step": the trainer's weights move
            for p in model.parameters():
                p.add_(0.01)
        trainer.state.global_step = 1
        out1 = f(prompts, trainer)  # prefetched while "step 0 trained": version 0, lag 1
        assert out1["policy_version"] == [0] * 16
        assert f.last_batch.metrics["staleness"] == 1
        assert all(r.metrics["policy_version"] == 0 for r in f.last_batch.records)
        trainer.state.global_step = (
            4  # three steps with no rollout: the prefetched batch is too old
        )
        out4 = f(prompts, trainer)
        assert f.stats.stale_batches_dropped == 1 and f.stats.stale_rows_dropped == 16
        assert f.stats.batches == 3 and f.stats.episodes == 48  # dropped batches not counted
        assert f.last_batch.metrics["stale_rows_dropped"] == 16
        assert out4["policy_version"][0] >= 1  # played after the newer weights were published
        if producer_model is not None:
            for mine, theirs in zip(producer_model.parameters(), model.parameters(), strict=True):
                assert torch.equal(mine, theirs)  # the copy holds the published weights
        assert len(out4["completion_ids"]) == 16 and all(out4["completion_ids"])
    finally:
        f.close()


def test_max_staleness_0_is_the_synchronous_path_on_the_live_model(
    blackjack_servers, warmed, tmp_path
) -> None:
    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.training import make_rollout_func

    model, tok = warmed
    f = make_rollout_func(BlackjackTextSpec(seed=1), blackjack_servers, max_staleness=0)
    try:
        out = f(["blackjack"] * 8, _trainer(model, tok, f, tmp_path))
        assert f.runner.policy.model is model  # no copy, no producer
        assert "policy_version" not in out
        assert f.stats.batches == 1 and f.stats.episodes == 8 and f.stats.staleness == []
    finally:
        f.close()
    with pytest.raises(ValueError, match="max_staleness"):
        make_rollout_func(BlackjackTextSpec(seed=1), blackjack_servers, max_staleness=-1)


def test_training_with_max_staleness_1_learns_and_corrects(
    blackjack_servers, warmed, tmp_path
) -> None:
    """A reward for answering ``stand`` first: the overlapped, IS-corrected loss must learn it."""
    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.training import make_rollout_func

    model, tok = warmed
    stand = tok.convert_tokens_to_ids("stand")
    first_stand: list[float] = []

    def stand_first(completion_ids, **kwargs):
        return [1.0 if ids[0] == stand else 0.0 for ids in completion_ids]

    def record(batch):
        rows = batch.records
        first_stand.append(sum(r.completion_ids[0] == stand for r in rows) / len(rows))

    f = make_rollout_func(
        BlackjackTextSpec(seed=2), blackjack_servers, max_staleness=1, on_batch=record
    )
    try:
        trainer = _trainer(
            model,
            tok,
            f,
            tmp_path,
            max_steps=24,
            reward_funcs=[stand_first],
            per_device_train_batch_size=32,
        )
        trainer.train()
        staleness = list(f.stats.staleness)
    finally:
        f.close()
    assert staleness[0] == 0 and set(staleness[1:]) == {1}  # every later batch overlapped a step
    early, late = sum(first_stand[:3]) / 3, sum(first_stand[-3:]) / 3
    assert late > 0.9 and late > early + 0.2, first_stand
    logs = [h for h in trainer.state.log_history if "sampling/importance_sampling_ratio/mean" in h]
    assert logs, "the importance-sampling correction must run (its metrics are logged)"
    assert any(h["sampling/importance_sampling_ratio/mean"] != 1.0 for h in logs)


@pytest.mark.parametrize("mode", ["token_truncate", "sequence_mask"])
def test_in_loss_ratio_equals_trls_own_correction(
    blackjack_servers, warmed, tmp_path, mode
) -> None:
    """The ratio taken from the loss forward equals TRL's (extra forward pass) on stale rows."""
    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.training import make_rollout_func

    model, tok = warmed
    inner = make_rollout_func(BlackjackTextSpec(seed=5), blackjack_servers)

    def stale_rollout(prompts, trainer):  # the weights move after sampling: rows are "stale"
        out = inner(prompts, trainer)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.05)
        return out

    stale_rollout.close = inner.close
    try:
        trainer = _trainer(model, tok, stale_rollout, tmp_path)
        trainer.args.vllm_importance_sampling_mode = trainer.vllm_importance_sampling_mode = mode
        trainer._trl_path = lambda: True  # TRL's extra forward computes the reference ratio
        inputs = trainer._generate_and_score_completions([{"prompt": "blackjack"}] * 16)
    finally:
        inner.close()
    ref = inputs.pop("importance_sampling_ratio")
    ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
    am = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            model, ids, am, inputs["completion_ids"].size(1)
        )
    mine = trainer._ratio(logps, inputs)
    mask = (inputs["completion_mask"] * inputs["tool_mask"]).bool()
    if mode.startswith("token"):
        torch.testing.assert_close(mine[mask], ref[mask], atol=1e-5, rtol=1e-4)
        assert (ref[mask] != 1.0).any()
    else:
        torch.testing.assert_close(mine, ref, atol=1e-5, rtol=1e-4)


def test_the_async_cpu_config_is_the_default_plus_overlap() -> None:
    from pathlib import Path

    from openenv_train.recipes.grpo_blackjack.config import load_config

    configs = Path(__file__).resolve().parents[2] / "configs"
    base = load_config(configs / "grpo_blackjack_cpu.yaml").model_dump()
    mine = load_config(configs / "grpo_blackjack_cpu_async.yaml").model_dump()
    assert base["rollout"].pop("max_staleness") == 0 and mine["rollout"].pop("max_staleness") == 1
    assert base.pop("name") != mine.pop("name") and mine == base


def test_an_unpicklable_spec_is_named_for_the_process_producer(
    blackjack_servers, warmed, tmp_path
) -> None:
    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.training import make_rollout_func

    model, tok = warmed
    spec = BlackjackTextSpec(seed=1)
    spec.parse_action = lambda text: None  # a lambda: does not pickle
    f = make_rollout_func(spec, blackjack_servers, max_staleness=1)
    try:
        with pytest.raises(ValueError, match="overlap='thread'"):
            f(["blackjack"] * 8, _trainer(model, tok, f, tmp_path))
    finally:
        f.close()
