"""How close a trained BlackJack model is to basic strategy: the demo's targets, per run folder.

For each run folder (``runs/<name>``, as ``openenv-train train`` leaves it) this plays the saved
model greedily on the same fresh seeded hands as basic strategy (``blackjack_env.evaluation``:
hand ``k`` is dealt from ``seed + k``, so both policies see the same cards), prints win / mean
return / the return gap, and lists the states where the model's first decision differs from
basic strategy (24 player states: hard 5-20, soft 13-20; times 10 dealer up cards = 240). It also
reads the training's CPU seconds and wall time from ``/usr/bin/time -v`` logs when given.

Target of the demo (issue 26): mean return within 0.002 of basic strategy on 100k hands.

Usage: python benchmarks/demo_report.py RUN_DIR [RUN_DIR ...] [--hands 100000] [--time-log LOG ...]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

UPCARDS = ("2", "3", "4", "5", "6", "7", "8", "9", "10", "A")
#: (total, soft) of the 24 player states a first decision can be in, besides the trivial ones
PLAYER_STATES = [(t, False) for t in range(5, 21)] + [(t, True) for t in range(13, 21)]


def wrong_states(model: Any, tokenizer: Any) -> list[str]:
    """First-decision states (``player 16 hard dealer 10``) where greedy play is not basic strategy."""
    import torch
    from blackjack_env.game import HIT, basic_strategy
    from blackjack_env.text_spec import decision_text

    from openenv_train.rollout.tokens import TokenCodec

    codec = TokenCodec(tokenizer)
    hit, stand = (tokenizer.convert_tokens_to_ids(w) for w in ("hit", "stand"))
    states = [(t, s, up) for t, s in PLAYER_STATES for up in UPCARDS]
    prompts = [
        codec.prompt_ids(
            [
                {
                    "role": "user",
                    "content": decision_text({"player_total": t, "soft": s, "dealer_upcard": up}),
                }
            ]
        )
        for t, s, up in states
    ]
    if len({len(p) for p in prompts}) != 1:  # "player N soft dealer X action:": same length
        raise ValueError("first-decision prompts differ in length; this check assumes one length")
    with torch.no_grad():
        logits = model(input_ids=torch.tensor(prompts)).logits[:, -1, :]
    wrong = []
    for (t, s, up), row in zip(states, logits, strict=True):
        model_hits = bool(row[hit] > row[stand])
        if model_hits != (basic_strategy(t, s, up) == HIT):
            wrong.append(
                f"{'soft' if s else 'hard'} {t} v {up}: model {'hit' if model_hits else 'stand'}"
            )
    return wrong


def time_log(path: Path) -> dict[str, float]:
    """CPU seconds (user + sys, children included) and wall seconds from ``/usr/bin/time -v``."""
    text = path.read_text()
    if "User time (seconds)" not in text:
        raise ValueError(f"{path}: no /usr/bin/time -v figures (still running, or not such a log)")
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", text).group(1))
    sys_s = float(re.search(r"System time \(seconds\): ([\d.]+)", text).group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", text).group(1)
    seconds = 0.0
    for part in wall.split(":"):
        seconds = seconds * 60 + float(part)
    return {"cpu_s": user + sys_s, "wall_s": seconds}


def report(run_dir: Path, hands: int) -> dict[str, Any]:
    import torch
    from blackjack_env.evaluation import baselines, evaluate_policy

    from openenv_train.policy.tiny import load_tiny_model
    from openenv_train.policy.transformers_policy import TransformersPolicy

    torch.set_num_threads(1)
    config = json.loads((run_dir / "config.json").read_text())
    seed = config["eval"]["seed"]
    model, tokenizer = load_tiny_model(run_dir / "model")
    row = evaluate_policy(TransformersPolicy(model, tokenizer), hands, seed)
    basic = baselines(hands, seed)["basic strategy"]
    return {
        "run": run_dir.name,
        "hands": hands,
        "win": row["win"],
        "mean_return": row["mean_return"],
        "basic_win": basic["win"],
        "basic_return": basic["mean_return"],
        "gap": row["mean_return"] - basic["mean_return"],
        "invalid": row["invalid"],
        "wrong": wrong_states(model, tokenizer),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="run folders (runs/<name>)")
    p.add_argument("--hands", type=int, default=100_000)
    p.add_argument(
        "--time-log", nargs="*", type=Path, default=[], help="/usr/bin/time -v logs, one per run"
    )
    args = p.parse_args()
    logs = dict(zip(args.runs, args.time_log, strict=False))
    for run_dir in args.runs:
        r = report(run_dir, args.hands)
        timing = ""
        if run_dir in logs:
            t = time_log(logs[run_dir])
            timing = f"cpu {t['cpu_s']:.0f} s, wall {t['wall_s']:.0f} s, "
        print(
            f"{r['run']}: {timing}win {r['win']:.2%}, mean return {r['mean_return']:+.4f} "
            f"(basic strategy {r['basic_win']:.2%} / {r['basic_return']:+.4f} on the same "
            f"{r['hands']:,} hands, gap {r['gap']:+.4f}), invalid {r['invalid']:.2%}, "
            f"{len(r['wrong'])} of {len(PLAYER_STATES) * len(UPCARDS)} states off basic strategy"
        )
        for w in r["wrong"]:
            print(f"    {w}")


if __name__ == "__main__":
    main()
