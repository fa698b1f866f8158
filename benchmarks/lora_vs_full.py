"""LoRA against full fine-tuning on the GRPO BlackJack CPU recipe, side by side in one run.

Trains the recipe twice from the same seed, the same warm-up and the same games: once with every
weight trained (the anchor), once with ``lora.r`` adapters (``configs/grpo_blackjack_lora_cpu.yaml``'s
section). Prints one table: trainable parameters, optimizer state (the size of the AdamW state the
trainer checkpoints, ``optimizer.pt``), median step time, weight-sync bytes per step (what the
overlap producer / a weight sync must send: the whole ``state_dict`` against the adapter tensors),
greedy mean return before and after; writes both learning curves to one PNG.

Usage: python benchmarks/lora_vs_full.py [--steps 60] [--batch 128] [--every 10]
       [--out docs/img/lora_vs_full.png] [--runs /tmp/lora_bench]
       python benchmarks/lora_vs_full.py --from-runs FULL_RUN LORA_RUN   (no training: the table
       and the figure again from two finished run folders, e.g. two `openenv-train train` runs)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

console = Console(width=150)
ROOT = Path(__file__).resolve().parents[1]


def config(args: argparse.Namespace, lora: bool) -> Any:
    from openenv_train.recipes.grpo_blackjack.config import parse_config

    data = yaml.safe_load((ROOT / "configs/grpo_blackjack_lora_cpu.yaml").read_text())
    if not lora:
        data["lora"]["r"] = 0
        data["grpo"]["learning_rate"] = args.full_lr
    else:
        data["grpo"]["learning_rate"] = args.lora_lr
    data.update(name="full" if not lora else "lora", output_dir=args.runs, progress=False)
    data["grpo"].update(
        max_steps=args.steps, per_device_train_batch_size=args.batch, logging_steps=1
    )
    data["eval"].update(every=args.every, hands=args.hands, periodic_hands=args.hands)
    return parse_config(data)


def sync_bytes(cfg: Any) -> tuple[int, int, int]:
    """``(trainable parameters, all parameters, bytes a weight sync sends)`` of cfg's model."""
    from blackjack_env.text_spec import VOCABULARY

    from openenv_train.policy.lora import state_bytes, trainable_state
    from openenv_train.training.model import build_tiny

    model, tok = build_tiny(cfg.model.tiny, VOCABULARY)
    if cfg.lora.enabled:
        from openenv_train.policy import lora

        s = cfg.lora
        model = lora.wrap(model, lora.lora_config(s.r, s.alpha, s.dropout, s.target_modules))
    params = list(model.parameters())
    trainable = sum(p.numel() for p in params if p.requires_grad)
    return trainable, sum(p.numel() for p in params), state_bytes(trainable_state(model)[0])


def measure(run_dir: Path) -> dict[str, Any]:
    rows = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x]
    steps = [r["step_time"] for r in rows if r.get("kind") == "train" and "step_time" in r]
    summary = json.loads((run_dir / "summary.json").read_text())
    ckpt = Path(summary["checkpoint"]) if summary.get("checkpoint") else None
    if ckpt is not None and not ckpt.is_absolute():
        ckpt = run_dir.parent.parent / ckpt
    return {
        "step_s": statistics.median(steps[2:] or steps),
        "optimizer_bytes": (ckpt / "optimizer.pt").stat().st_size if ckpt else 0,
        "before": summary["before"]["mean_return"],
        "after": summary["after_last"]["mean_return"] if "after_last" in summary else None,
        "best": max(p["mean_return"] for p in summary["curve"]),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch", type=int, default=128, help="episodes per step")
    p.add_argument("--every", type=int, default=10, help="steps between greedy evals")
    p.add_argument("--hands", type=int, default=4000, help="hands per eval")
    p.add_argument("--full-lr", type=float, default=5e-4)
    p.add_argument("--lora-lr", type=float, default=4e-3)
    p.add_argument("--runs", default="/tmp/lora_bench")
    p.add_argument("--out", default=str(ROOT / "docs/img/lora_vs_full.png"))
    p.add_argument(
        "--from-runs",
        nargs=2,
        type=Path,
        metavar=("FULL_RUN", "LORA_RUN"),
        help="skip training: table and figure from these two finished run folders",
    )
    args = p.parse_args()
    from openenv_train.recipes.grpo_blackjack.config import parse_config
    from openenv_train.recipes.grpo_blackjack.train import run
    from openenv_train.training.compare import plot_compare, read_curve

    results = {}
    for k, (name, lora) in enumerate((("full fine-tuning", False), ("LoRA", True))):
        if args.from_runs:
            run_dir = args.from_runs[k]
            cfg = parse_config(json.loads((run_dir / "config.json").read_text()))
            cfg.output_dir, cfg.name = str(run_dir.parent), run_dir.name
        else:
            cfg = config(args, lora)
            console.rule(f"{name} ({args.steps} steps x {args.batch} episodes)")
            run(cfg)
        trainable, total, sync = sync_bytes(cfg)
        results[name] = {
            **measure(cfg.run_dir),
            "trainable": trainable,
            "total": total,
            "sync": sync,
            "dir": cfg.run_dir,
        }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    plot_compare(
        {n: read_curve(r["dir"]) for n, r in results.items()},
        args.out,
        title=f"GRPO BlackJack on CPU: LoRA (r={cfg.lora.r}) vs full fine-tuning",
    )
    g = cfg.grpo
    table = Table(
        title=f"LoRA vs full fine-tuning, {g.max_steps} GRPO steps x {g.per_device_train_batch_size} episodes"
    )
    for col in ("", "trainable params", "optimizer state", "step time (median)",
                "weight sync / step", "mean return before", "after", "best eval"):  # fmt: skip
        table.add_column(col, justify="right")
    for name, r in results.items():
        table.add_row(
            name,
            f"{r['trainable']:,} of {r['total']:,}",
            f"{r['optimizer_bytes'] / 1024:.0f} KiB",
            f"{r['step_s']:.2f} s",
            f"{r['sync'] / 1024:.0f} KiB",
            f"{r['before']:+.3f}",
            f"{r['after']:+.3f}",
            f"{r['best']:+.3f}",
        )
    console.print(table)
    console.print(f"curves -> {args.out}")


if __name__ == "__main__":
    main()
