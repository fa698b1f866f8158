"""make_rollout_func on real BlackJack servers, the rollout engine and a real TRL GRPOTrainer."""

from __future__ import annotations

import pytest
import torch
from trainers_helpers import tiny_grpo_trainer as _trainer


def test_rollout_output_is_what_the_trainer_needs(blackjack_servers, warmed, tmp_path) -> None:
    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.training import make_rollout_func

    model, tok = warmed
    rollout_func = make_rollout_func(BlackjackTextSpec(seed=1), blackjack_servers)
    try:
        trainer = _trainer(model, tok, rollout_func, tmp_path)
        model.train()
        prompts = ["blackjack"] * 16
        out = rollout_func(prompts, trainer)
        assert model.training  # train mode restored after generation in eval mode
    finally:
        rollout_func.close()
    assert {"prompt_ids", "completion_ids", "logprobs", "env_mask", "env_reward"} <= set(out)
    for key in ("prompt_ids", "completion_ids", "logprobs", "env_mask", "env_reward"):
        assert len(out[key]) == len(prompts), key
    hit, stand, eos = (tok.convert_tokens_to_ids(w) for w in ("hit", "stand", "<eos>"))
    multi_turn = 0
    for p, c, lp, m, r in zip(
        out["prompt_ids"],
        out["completion_ids"],
        out["logprobs"],
        out["env_mask"],
        out["env_reward"],
        strict=True,
    ):
        assert tok.decode(p).startswith("player ") and tok.decode(p).endswith("action:")
        assert len(c) == len(lp) == len(m) and c
        model_tokens = [t for t, k in zip(c, m, strict=True) if k == 1]
        env_tokens = [t for t, k in zip(c, m, strict=True) if k == 0]
        assert set(model_tokens) <= {hit, stand, eos}  # the warmed model answers in format
        assert not (
            {hit, stand, eos} & set(env_tokens)
        )  # env text is the next decision, masked out
        assert all(x < 0 for x, k in zip(lp, m, strict=True) if k == 1) and all(
            x == 0 for x, k in zip(lp, m, strict=True) if k == 0
        )
        assert r in (-1.0, 0.0, 1.0)
        multi_turn += 0 in m
    assert multi_turn > 0


def test_short_grpo_run_through_the_whole_stack_changes_weights(
    blackjack_servers, warmed, tmp_path
) -> None:
    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.training import make_rollout_func

    model, tok = warmed
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    batches = []
    rollout_func = make_rollout_func(
        BlackjackTextSpec(seed=2), blackjack_servers, on_batch=batches.append
    )
    try:
        trainer = _trainer(model, tok, rollout_func, tmp_path, max_steps=3)
        trainer.train()
    finally:
        rollout_func.close()
    assert len(batches) == 3 and all(len(b.rows) == 16 for b in batches)
    servers_used = {r.metrics["server"] for b in batches for r in b.records}
    assert servers_used == set(blackjack_servers)  # episodes really ran on both env servers
    changed = [k for k, v in model.named_parameters() if not torch.equal(v.detach(), before[k])]
    assert len(changed) >= len(before) // 2, changed
    assert any("reward" in h for h in trainer.state.log_history)


def test_bad_rollout_setup_is_named(blackjack_servers, warmed, tmp_path) -> None:
    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.training import make_rollout_func

    with pytest.raises(ValueError, match="servers"):
        make_rollout_func(BlackjackTextSpec(), [])
    model, tok = warmed
    rollout_func = make_rollout_func(BlackjackTextSpec(), blackjack_servers)
    try:
        trainer = _trainer(model, tok, rollout_func, tmp_path)
        with pytest.raises(ValueError, match="not a multiple of group_size=4"):
            rollout_func(["blackjack"] * 6, trainer)
    finally:
        rollout_func.close()


class _CountingRunner:
    """Any object with ``run``, ``aclose`` and ``policy`` plugs into ``RunnerStrategy`` (the agents'
    runner does), not only an ``EpisodeRunner`` subclass."""

    def __init__(self, drop_group: int | None = None) -> None:
        self.policy = None
        self.calls: list[tuple[list, int]] = []
        self.closed = False
        self.drop_group = drop_group

    async def run(self, prompts, group_size):
        from openenv_train.rollout.records import EpisodeRecord, RolloutBatch

        self.calls.append((list(prompts), group_size))
        rows = [
            None
            if i // group_size == self.drop_group
            else EpisodeRecord(i, i // group_size, p, [1], [2, 3], [-0.5, 0.0], [1, 0], 1.0, 1)
            for i, p in enumerate(prompts)
        ]
        dropped = [] if self.drop_group is None else [self.drop_group]
        return RolloutBatch(rows, group_size, dropped_groups=dropped)

    async def aclose(self) -> None:
        self.closed = True


def test_rollout_func_binds_one_trainer_counts_batches_and_closes_its_runner() -> None:
    from openenv_train.rollout.records import GroupsDroppedError
    from openenv_train.training import RolloutFunc, RunnerStrategy

    runner = _CountingRunner()
    built_for = []

    def make(trainer):
        built_for.append(trainer)
        return runner

    seen = []
    trainer = type("Trainer", (), {"num_generations": 2})()
    with RolloutFunc(RunnerStrategy(make), on_batch=seen.append) as f:
        assert f.runner is None and f.last_batch is None
        out = f(["a", "a", "b", "b"], trainer)
        assert out["env_reward"] == [1.0] * 4 and "policy_version" not in out
        f(("c", "c"), trainer)  # any sequence of prompts
        assert built_for == [trainer] and f.runner is runner  # built once, at the first call
        assert runner.calls == [(["a", "a", "b", "b"], 2), (["c", "c"], 2)]  # num_generations
        assert f.stats.batches == 2 and f.stats.episodes == 6 and f.stats.staleness == []
        assert len(seen) == 2 and seen[-1] is f.last_batch
        with pytest.raises(RuntimeError, match="one rollout_func per trainer"):
            f(["a", "a"], type("Other", (), {"num_generations": 2})())
        runner.drop_group = 1
        with pytest.raises(GroupsDroppedError, match=r"group\(s\) \[1\]"):
            f(["a", "a", "b", "b"], trainer)  # never invents rows for the dropped group
        assert f.last_batch.dropped_groups == [1] and f.stats.episodes == 8
    assert runner.closed and f.strategy.loop.loop.is_closed()
    f.close()  # twice is fine


def test_rollout_func_needs_a_group_size() -> None:
    from openenv_train.training import RolloutFunc, RunnerStrategy

    with RolloutFunc(RunnerStrategy(lambda _t: _CountingRunner())) as f:
        with pytest.raises(ValueError, match="group_size: not given"):
            f(["a"], object())
        assert f.runner is None  # nothing built before the error
