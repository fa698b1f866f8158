"""The trainer's ``/metrics``: rollout batches and ``metrics.jsonl`` records on a port of its own."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from blackjack_env.models import BlackjackAction, BlackjackObservation, BlackjackState
from blackjack_env.server.environment import BlackjackEnvironment
from blackjack_env.text_spec import VOCABULARY, BlackjackTextSpec, basic_strategy_answer
from prometheus_client.parser import text_string_to_metric_families
from server_helpers import ServerThread

from openenv_train import create_app
from openenv_train.policy.tiny import build_word_tokenizer
from openenv_train.rollout import RolloutConfig, RolloutEngine, ScriptedPolicy
from openenv_train.training.trainer_metrics import record_batch, serve_trainer_metrics

pytest.importorskip("transformers")
from openenv_train.training.callbacks import JsonlMetricsCallback  # noqa: E402


@pytest.fixture
def server() -> Iterator[ServerThread]:
    app = create_app(BlackjackEnvironment, BlackjackAction, BlackjackObservation, BlackjackState)
    srv = ServerThread(app).start()
    yield srv
    srv.stop()


def _scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        text = r.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_batches_and_log_records_show_on_the_trainer_port(
    server: ServerThread, tmp_path: Path
) -> None:
    tokenizer = build_word_tokenizer(VOCABULARY)
    policy = ScriptedPolicy(tokenizer, basic_strategy_answer)
    exporter = serve_trainer_metrics(0)
    try:
        assert exporter.port
        async with RolloutEngine(
            BlackjackTextSpec(seed=1), policy, [server.url], RolloutConfig()
        ) as engine:
            batch = await engine.run(["play"] * 8, group_size=4)
        record_batch(batch, 0.5)
        record_batch(batch, 0.5)
        log = JsonlMetricsCallback(tmp_path / "metrics.jsonl")
        log.write("train", 3, {"loss": 0.25, "reward": 0.5, "note": "text is skipped"})
        got = _scrape(exporter.port)
        turns = sum(r.num_turns for r in batch.records)
        assert got[("openenv_trainer_episodes_total", ())] == 16
        assert got[("openenv_trainer_turns_total", ())] == 2 * turns
        assert got[("openenv_trainer_batches_total", ())] == 2
        assert got[("openenv_trainer_groups_dropped_total", ())] == 0
        assert got[("openenv_trainer_policy_calls_total", ())] == 2 * batch.metrics["policy_calls"]
        assert got[("openenv_trainer_mean_batch_size", ())] == batch.metrics["mean_batch_size"]
        assert got[("openenv_trainer_tokens_per_second", ())] > 0
        assert got[("openenv_trainer_step", ())] == 3
        assert got[("openenv_trainer_log", (("key", "loss"), ("kind", "train")))] == 0.25
        assert not any(k[0] == "openenv_trainer_log" and ("key", "note") in k[1] for k in got)
        assert (tmp_path / "metrics.jsonl").read_text().count("\n") == 1  # as today
    finally:
        exporter.close()
    record_batch(batch, 0.5)  # no exporter: nothing happens


def test_open_run_serves_metrics_port_while_the_run_lasts(tmp_path: Path, capsys) -> None:
    """``metrics_port: 0`` in a config: ``open_run`` serves the trainer's /metrics on a free
    port (printed), shows what the run logs, and stops it when the run ends."""
    import re
    import urllib.error

    from openenv_train.recipes.grpo_blackjack.config import parse_config
    from openenv_train.training.lifecycle import open_run

    cfg = parse_config({"output_dir": str(tmp_path / "runs"), "metrics_port": 0})
    assert cfg.metrics_port == 0
    with open_run(cfg) as run:
        printed = capsys.readouterr().err
        port = int(re.search(r"trainer metrics: http://127\.0\.0\.1:(\d+)/metrics", printed)[1])
        run.metrics.write("train", 2, {"loss": 0.75})
        got = _scrape(port)
        assert got[("openenv_trainer_log", (("key", "loss"), ("kind", "train")))] == 0.75
        assert got[("openenv_trainer_step", ())] == 2
        run.folder.started = True  # keep the folder (a run that trained)
    with pytest.raises(urllib.error.URLError):
        _scrape(port)
    assert '"loss": 0.75' in (run.path / "metrics.jsonl").read_text()
