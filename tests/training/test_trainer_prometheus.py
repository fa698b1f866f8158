"""A real Prometheus scrapes a short overlapped training run's ``/metrics`` (the trainer's port,
``metrics_port``): episodes, staleness, weight-sync time and the ``metrics.jsonl`` numbers.

Needs the ``prometheus`` binary (``apt-get install -y prometheus``); `make test` installs it as root (scripts/prometheus.sh); a missing one fails with that fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prometheus_server import prometheus, prometheus_binary
from trainers_helpers import tiny_grpo_trainer


def _value(result: list[dict[str, Any]]) -> float:
    return float(result[0]["value"][1]) if result else float("nan")


def test_prometheus_scrapes_a_short_training_run(blackjack_servers, warmed, tmp_path: Path) -> None:
    prometheus_binary()
    from blackjack_env.text_spec import BlackjackTextSpec

    from openenv_train.training import JsonlMetricsCallback, make_rollout_func
    from openenv_train.training.offpolicy import OffPolicyGRPOTrainer
    from openenv_train.training.trainer_metrics import serve_trainer_metrics

    model, tok = warmed
    exporter = serve_trainer_metrics(0)
    f = make_rollout_func(BlackjackTextSpec(seed=4), blackjack_servers, max_staleness=1)
    try:
        trainer = tiny_grpo_trainer(
            model,
            tok,
            f,
            tmp_path,
            cls=OffPolicyGRPOTrainer,
            max_steps=3,
            use_adaptive_entropy=False,
            vllm_importance_sampling_correction=True,
            vllm_importance_sampling_mode="token_truncate",
        )
        trainer.add_callback(JsonlMetricsCallback(tmp_path / "metrics.jsonl"))
        with prometheus(tmp_path, [f"127.0.0.1:{exporter.port}"]) as prom:
            trainer.train()
            episodes = f.stats.episodes
            assert episodes > 0
            got = prom.wait_for("openenv_trainer_episodes_total", lambda r: _value(r) == episodes)
            assert got[0]["metric"]["job"] == "openenv"
            assert _value(prom.wait_for("openenv_trainer_step", lambda r: _value(r) == 3)) == 3
            staleness = prom.wait_for("openenv_trainer_staleness", lambda r: bool(r))
            assert _value(staleness) == list(f.stats.staleness)[-1]
            prom.wait_for("openenv_trainer_weight_sync_seconds_total", lambda r: _value(r) > 0)
            prom.wait_for("openenv_trainer_model_tokens_total", lambda r: _value(r) > 0)
            prom.wait_for('openenv_trainer_log{kind="train",key="loss"}', lambda r: bool(r))
    finally:
        f.close()
        exporter.close()
    assert (tmp_path / "metrics.jsonl").read_text().count('"kind": "train"') >= 3  # as before
