"""Where one GRPO BlackJack training step's time goes (the demo config, a few steps).

Runs the recipe's pieces (tiny model + format warm-up, local env servers, TRL GRPOTrainer with the
batched rollout engine) for ``--steps`` optimizer steps and prints, per step (medians after the
first ``--skip`` steps): the step's wall time split into rollout / TRL scoring / forward+backward /
optimizer+rest, the policy's generation time inside the rollout, the CPU seconds of each thread
(trainer, rollout client loop, policy worker) and of the env servers, and the padding TRL does
(padded completion tokens / real completion tokens). Ratios are against the step's wall time.

Usage: python benchmarks/step_time.py [--config configs/grpo_blackjack_cpu.yaml] [--steps 12]
       [--max-staleness 0] [--warmup-steps 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psutil  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

if TYPE_CHECKING:
    from openenv_train.training import RolloutFunc

console = Console()
TICK = os.sysconf("SC_CLK_TCK")


def thread_cpu(native_id: int | None) -> float:
    """CPU seconds (user + system) of one thread of this process."""
    if native_id is None:
        return 0.0
    try:
        fields = Path(f"/proc/self/task/{native_id}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (stat fields 14, 15)


def threads_by_role() -> dict[str, int | None]:
    found: dict[str, int | None] = {"trainer": threading.main_thread().native_id}
    for t in threading.enumerate():
        if t.name.startswith("openenv-train-rollout"):
            found["client loop"] = t.native_id
        elif t.name.startswith("transformers-policy"):
            found["policy worker"] = t.native_id
    return found


def procs_cpu(pids: list[int]) -> float:
    """CPU seconds of these processes and their children."""
    total = 0.0
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            for p in [proc, *proc.children(recursive=True)]:
                t = p.cpu_times()
                total += t.user + t.system
        except psutil.Error:
            pass
    return total


class StepClock:
    """Wraps the trainer's phases and the rollout function; one sample dict per optimizer step."""

    def __init__(self, server_pids: list[int]) -> None:
        self.server_pids = server_pids
        self.samples: list[dict[str, float]] = []
        self.cur: dict[str, float] = {}
        self._mark: dict[str, float] = {}

    def producer_pids(self) -> list[int]:
        """Child processes that are not env servers: the overlap producer (``max_staleness`` > 0)."""
        return [c.pid for c in psutil.Process().children() if c.pid not in self.server_pids]

    def wrap_rollout(self, rollout_func: RolloutFunc) -> Callable[..., dict[str, Any]]:
        def timed(prompts: list[Any], trainer: Any = None) -> dict[str, Any]:
            t0 = time.perf_counter()
            out = rollout_func(prompts, trainer)
            self.cur["rollout"] = self.cur.get("rollout", 0.0) + time.perf_counter() - t0
            runner = rollout_func.runner
            stats = getattr(getattr(runner, "batcher", None), "stats", None)
            if stats is not None:
                gen = stats.generate_s
                self.cur["generation"] = gen - self._mark.get("gen", 0.0)
                self._mark["gen"] = gen
            lens = [len(c) for c in out["completion_ids"]]
            plens = [len(p) for p in out["prompt_ids"]]
            model = sum(sum(m) for m in out["env_mask"])
            self.cur["completion padding"] = (len(lens) * max(lens) - sum(lens)) / sum(lens)
            self.cur["prompt padding"] = (len(plens) * max(plens) - sum(plens)) / sum(plens)
            self.cur["model token share"] = model / sum(lens)
            self.cur["longest / mean completion"] = max(lens) / (sum(lens) / len(lens))
            return out

        return timed

    def wrap_trainer(self, trainer: Any) -> None:
        score, step = trainer._generate_and_score_completions, trainer.training_step

        def timed_score(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return score(*a, **k)
            finally:
                self.cur["score+rollout"] = time.perf_counter() - t0

        def timed_step(*a: Any, **k: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return step(*a, **k)
            finally:
                self.cur["training_step"] = time.perf_counter() - t0

        trainer._generate_and_score_completions = timed_score
        trainer.training_step = timed_step

    def on_step_begin(self) -> None:
        self._mark["wall"] = time.perf_counter()
        self._mark["threads"] = {k: thread_cpu(v) for k, v in threads_by_role().items()}  # type: ignore[assignment]
        self._mark["servers"] = procs_cpu(self.server_pids)
        self._mark["producer"] = procs_cpu(self.producer_pids())

    def on_step_end(self) -> None:
        wall = time.perf_counter() - self._mark["wall"]
        cur, self.cur = self.cur, {}
        s: dict[str, float] = {"step wall": wall, **cur}
        s["TRL scoring (pad, old logps, rewards)"] = cur.get("score+rollout", 0.0) - cur.get(
            "rollout", 0.0
        )
        s["forward + backward"] = cur.get("training_step", 0.0) - cur.get("score+rollout", 0.0)
        s["optimizer + callbacks"] = wall - cur.get("training_step", 0.0)
        before: dict[str, float] = self._mark["threads"]  # type: ignore[assignment]
        for role, tid in threads_by_role().items():
            s[f"cpu: {role}"] = thread_cpu(tid) - before.get(role, 0.0)
        s["cpu: env servers"] = procs_cpu(self.server_pids) - self._mark["servers"]
        s["cpu: producer process"] = procs_cpu(self.producer_pids()) - self._mark["producer"]
        self.samples.append(s)


def report(samples: list[dict[str, float]], skip: int, title: str) -> Table:
    kept = samples[skip:] or samples
    med = {k: statistics.median(s.get(k, 0.0) for s in kept) for k in kept[0]}
    wall = med["step wall"]
    table = Table(title=f"{title}: medians of {len(kept)} steps (after {skip} skipped)")
    table.add_column("item")
    table.add_column("per step", justify="right")
    table.add_column("/ step wall", justify="right")
    rows = [
        "step wall",
        "rollout",
        "generation",
        "TRL scoring (pad, old logps, rewards)",
        "forward + backward",
        "optimizer + callbacks",
        "cpu: trainer",
        "cpu: client loop",
        "cpu: policy worker",
        "cpu: env servers",
        "cpu: producer process",
    ]
    for k in rows:
        if k in med:
            table.add_row(k, f"{med[k]:.3f} s", f"{med[k] / wall:.2f}")
    for k in (
        "completion padding",
        "prompt padding",
        "model token share",
        "longest / mean completion",
    ):
        if k in med:
            table.add_row(k, f"{med[k]:.2f}", "")
    return table


def load(args: argparse.Namespace) -> tuple[Any, Any, Any, Any]:
    """``(cfg, model, tokenizer, servers)``: the demo config with ``--steps``, its warmed-up tiny
    model and its started env servers."""
    import torch
    from blackjack_env.text_spec import VOCABULARY, random_episode

    from openenv_train.recipes.grpo_blackjack.config import load_config
    from openenv_train.training.grpo import start_servers
    from openenv_train.training.model import load_model, warm_up

    cfg = load_config(args.config)
    updates: dict[str, Any] = {"max_steps": args.steps, "logging_steps": 10**6}
    cfg = cfg.model_copy(update={"grpo": cfg.grpo.model_copy(update=updates)})
    if args.warmup_steps is not None:
        cfg.model.warmup_steps = args.warmup_steps
    if cfg.grpo.torch_threads:
        torch.set_num_threads(cfg.grpo.torch_threads)
    torch.manual_seed(cfg.seed)
    model, tokenizer = load_model(cfg, VOCABULARY)
    warm_up(model, tokenizer, cfg.model, cfg.seed, lambda *a, **k: None, random_episode)
    servers, _ = start_servers(cfg)
    return cfg, model, tokenizer, servers


def train_steps(
    cfg: Any, model: Any, tokenizer: Any, servers: Any, max_staleness: int, out: Path
) -> list[dict[str, float]]:
    """``cfg.grpo.max_steps`` timed GRPO steps of ``model`` (trained in place) with the given
    ``rollout.max_staleness``; one sample per step."""
    from blackjack_env.text_spec import BlackjackTextSpec
    from transformers import TrainerCallback

    from openenv_train.training import grpo as common
    from openenv_train.training import make_rollout_func

    cfg = cfg.model_copy(
        update={"rollout": cfg.rollout.model_copy(update={"max_staleness": max_staleness})}
    )
    clock = StepClock([p.pid for p in servers if getattr(p, "pid", None)])
    inner = make_rollout_func(
        BlackjackTextSpec(seed=cfg.seed),
        servers.base_urls,
        config=common.rollout_config(cfg),
        max_staleness=max_staleness,
    )
    rollout_func = clock.wrap_rollout(inner)

    class Clock(TrainerCallback):
        def on_step_begin(self, *a: Any, **k: Any) -> None:
            clock.on_step_begin()

        def on_step_end(self, *a: Any, **k: Any) -> None:
            clock.on_step_end()

    try:
        trainer = common.trainer_class(cfg)(
            model=model,
            reward_funcs=common.reward_funcs(cfg),
            args=common.grpo_args(cfg, out),
            train_dataset=common.placeholder_dataset(cfg, "blackjack"),
            processing_class=tokenizer,
            rollout_func=rollout_func,
            callbacks=[Clock()],
        )
        clock.wrap_trainer(trainer)
        trainer.train()
    finally:
        inner.close()
    return clock.samples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="configs/grpo_blackjack_cpu.yaml")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--skip", type=int, default=2, help="first steps left out (warm-up)")
    ap.add_argument("--warmup-steps", type=int, default=None, help="format warm-up override")
    ap.add_argument("--max-staleness", type=int, default=None, help="default: the config's")
    ap.add_argument("--out", default="/tmp/step_time_run")
    args = ap.parse_args()
    cfg, model, tokenizer, servers = load(args)
    staleness = cfg.rollout.max_staleness if args.max_staleness is None else args.max_staleness
    try:
        samples = train_steps(cfg, model, tokenizer, servers, staleness, Path(args.out))
    finally:
        servers.stop()
    console.print(report(samples, args.skip, f"{args.config}, max_staleness={staleness}"))


if __name__ == "__main__":
    main()
