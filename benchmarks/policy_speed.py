"""TransformersPolicy's lean sampling loop vs ``model.generate`` on the tiny BlackJack model.

Prints tokens/s for a batch of N prompts x T new tokens (sampling at temperature 1), both
measured interleaved in one run (medians over repeats; timings here are noisy).
Usage: python benchmarks/policy_speed.py [--batch 256] [--new-tokens 2] [--group 1] [--threads 1]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import torch
from blackjack_env.text_spec import VOCABULARY

from openenv_train.policy import SamplingSettings, TransformersPolicy
from openenv_train.policy.tiny import build_tiny_model


def blackjack_prompts(tok, n: int, seed: int = 0) -> list[list[int]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        text = f"player {rng.randint(4, 21)} {rng.choice(['soft', 'hard'])} dealer {rng.choice(['A', '7', '10'])} action:"
        if rng.random() < 0.5:
            text += f" hit<eos> player {rng.randint(12, 21)} hard dealer 5 action:"
        out.append(tok.encode(text))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--new-tokens", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument(
        "--group", type=int, default=1, help="copies of each distinct prompt (GRPO num_generations)"
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model, tok = build_tiny_model(VOCABULARY, seed=1)
    policy = TransformersPolicy(
        model, tok, max_batch_size=max(args.batch, 1), num_threads=args.threads
    )
    distinct = blackjack_prompts(tok, max(1, args.batch // args.group))
    prompts = [p for p in distinct for _ in range(args.group)][: args.batch]
    sampling = SamplingSettings(max_new_tokens=args.new_tokens, temperature=1.0, seed=0)
    # min_new_tokens forces the same number of steps as the lean loop (which runs until all stop).
    padded = tok.pad([{"input_ids": p} for p in prompts], return_tensors="pt", padding_side="left")

    def lean() -> None:
        policy.generate_sync(prompts, sampling)

    def hf_generate() -> None:
        with torch.inference_mode():
            model.generate(
                **padded, max_new_tokens=args.new_tokens, do_sample=True, temperature=1.0,
                top_k=0, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                output_scores=True, return_dict_in_generate=True,
            )  # fmt: skip

    times: dict[str, list[float]] = {"lean loop": [], "model.generate": []}
    for fn in (lean, hf_generate):
        fn()  # warm-up
    for _ in range(args.repeats):
        for name, fn in (("lean loop", lean), ("model.generate", hf_generate)):
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    tokens = args.batch * args.new_tokens
    print(f"batch {args.batch} ({len(distinct)} distinct) x {args.new_tokens} new tokens, {args.threads} torch thread(s), "
          f"{sum(p.numel() for p in model.parameters())} params")  # fmt: skip
    med = {k: statistics.median(v) for k, v in times.items()}
    for name, t in med.items():
        print(
            f"  {name:15s} {t * 1e3:8.1f} ms  {tokens / t:9.0f} tok/s (upper bound: EOS may stop early)"
        )
    print(f"  speedup lean/generate: {med['model.generate'] / med['lean loop']:.2f}x")


if __name__ == "__main__":
    main()
