"""Failures around AsyncGRPOTrainer's parts are typed, named and counted, never rewards: a weight
sync to a server that cannot take weights, and a rollout worker whose model server is down. Real
servers on loopback; needs trl (the train extra), not vLLM."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("trl.experimental.async_grpo")


def test_weight_sync_names_what_the_server_lacks(blackjack_url) -> None:
    from openenv_train.policy.vllm_server import free_port
    from openenv_train.training.async_grpo import ReloadWeightTransfer, WeightSyncError

    # a live server without vLLM's dev-mode endpoints (our env server answers /health)
    transfer = ReloadWeightTransfer(blackjack_url, server_timeout_s=5)
    with pytest.raises(WeightSyncError, match="VLLM_SERVER_DEV_MODE=1"):
        transfer.init_weight_transfer()
    transfer.destroy()
    nobody = ReloadWeightTransfer(f"http://127.0.0.1:{free_port()}", server_timeout_s=1)
    with pytest.raises(WeightSyncError, match="server_timeout_s"):
        nobody.init_weight_transfer()
    with pytest.raises(ValueError, match="base_url"):
        ReloadWeightTransfer("127.0.0.1:8000")


def test_worker_counts_groups_lost_to_a_dead_model_server(blackjack_url) -> None:
    from blackjack_env.text_spec import VOCABULARY, BlackjackTextSpec
    from trl.experimental.async_grpo import AsyncGRPOConfig

    from openenv_train.policy.tiny import build_word_tokenizer
    from openenv_train.policy.vllm_server import free_port
    from openenv_train.rollout import RolloutConfig
    from openenv_train.training.async_grpo import env_rollout_worker

    args = AsyncGRPOConfig(output_dir="unused", num_generations=2, use_cpu=True, bf16=False,
                           vllm_server_base_url=f"http://127.0.0.1:{free_port()}",
                           report_to="none")  # fmt: skip
    worker = env_rollout_worker(
        BlackjackTextSpec(seed=1),
        [blackjack_url],
        args=args,
        model="tiny",
        tokenizer=build_word_tokenizer(VOCABULARY),
        config=RolloutConfig(max_episode_retries=0, group_retries=0),
    )
    worker.start()
    try:
        deadline = time.monotonic() + 60
        while worker.stats["groups_dropped"] < 2:
            assert time.monotonic() < deadline, "no group was reported dropped"
            worker.check_health(stale_after_s=60)  # dropped groups are not a crash
            time.sleep(0.1)
    finally:
        worker.stop()
    assert worker.rollout_buffer.empty() and worker.stats["rows"] == 0  # no row, no reward 0
    metrics = [worker.metrics_queue.get_nowait() for _ in range(worker.metrics_queue.qsize())]
    assert sum(m["rollout/groups_dropped_total"] for m in metrics) >= 2
    assert all(m["rollout/infra_errors_total"] >= 1 for m in metrics)
