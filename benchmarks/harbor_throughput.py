"""Oracle episodes per minute on Harbor task folders: our harbor env (a server of the tasks,
``concurrency`` sessions, a fresh container per episode from the warm pool, and without it) vs
TRL's ``HarborBashEnv`` vs Harbor's own runner (``harbor run -a oracle``), on the same tasks and
concurrency, measured in one run. Prints a table and the ratios; asserts nothing on time.

    python benchmarks/harbor_throughput.py --concurrency 4 --episodes 26 \
        --harbor-python /path/to/py312-venv/bin/python

The anchors need ``harbor`` (Python >= 3.12; ``trl`` beside it for TRL's env) and a working
``docker compose``; without ``--harbor-python`` only our two rows are measured. The tasks are the
shipped ones, copied with two changes every runner needs here: the Dockerfiles' ``BASE_IMAGE``
default is the local base image (Harbor passes no build arguments and nothing can be pulled),
and ``network_mode`` is dropped (Harbor 0.26's Docker environment enforces "no-network" only
through an egress-control sidecar pulled from a registry). Harbor's runner reads
``LITELLM_LOCAL_MODEL_COST_MAP`` so that it does not fetch a price list from the internet.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from harbor_env import SHIPPED_TASKS, HarborClient, TaskRuntime, load_tasks
from harbor_env.agents import oracle

from openenv_train.runtime import LocalProcessProvider

BASE_IMAGE = os.environ.get("OPENENV_TRAIN_BASE_IMAGE", "openenv-train-base:py3.11-bookworm")
HERE = Path(__file__).resolve().parent


def anchor_copy(dest: Path) -> Path:
    shutil.copytree(SHIPPED_TASKS, dest)
    for toml in dest.glob("*/task.toml"):
        toml.write_text(re.sub(r"(?m)^network_mode = .*\n", "", toml.read_text()))
    for df in dest.glob("*/environment/Dockerfile"):
        df.write_text(df.read_text().replace("python:3.11-slim", BASE_IMAGE))
    return dest


async def ours(tasks_dir: Path, warm: int, concurrency: int, episodes: int) -> dict:
    tasks = load_tasks(tasks_dir)
    names = sorted(tasks)
    env = {
        "HARBOR_TASKS": str(tasks_dir),
        "HARBOR_BASE_IMAGE": BASE_IMAGE,
        "HARBOR_WARM": str(warm),
    }
    with LocalProcessProvider(
        "harbor_env.server.app:app", env=env, startup_timeout=120, stop_timeout=60
    ) as p:
        async with HarborClient(base_url=p.base_url, timeout=300) as c:  # warm-up: pools start
            for name in names:
                await oracle(c, tasks[name])
        queue = list(range(episodes))
        rewards: list[float] = []

        async def worker() -> None:
            async with HarborClient(base_url=p.base_url, timeout=300) as c:
                while queue:
                    i = queue.pop()
                    rewards.append(await oracle(c, tasks[names[i % len(names)]]))

        start = time.monotonic()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        seconds = time.monotonic() - start
    return {"episodes": len(rewards), "seconds": seconds, "rewards": rewards, "errors": []}


def trl_env(python: str, tasks_dir: Path, concurrency: int, episodes: int) -> dict:
    out = subprocess.run(
        [
            python,
            str(HERE / "_harbor_trl_driver.py"),
            str(tasks_dir),
            str(concurrency),
            str(episodes),
        ],
        capture_output=True,
        text=True,
        timeout=3600,
    )
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"episodes": 0, "seconds": 0.0, "rewards": [], "errors": [out.stderr[-800:]]}
    return json.loads(lines[-1])


def harbor_runner(
    python: str, tasks_dir: Path, concurrency: int, episodes: int, jobs: Path
) -> dict:
    harbor = str(Path(python).parent / "harbor")
    attempts = max(1, round(episodes / len(load_tasks(tasks_dir))))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    start = time.monotonic()
    subprocess.run(
        [
            harbor,
            "run",
            "-p",
            str(tasks_dir),
            "-a",
            "oracle",
            "-n",
            str(concurrency),
            "-k",
            str(attempts),
            "-o",
            str(jobs),
            "-y",
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=3600,
        env=env,
    )
    seconds = time.monotonic() - start
    rewards, errors = [], []
    for result in jobs.glob("*/*/result.json"):
        d = json.loads(result.read_text())
        if d.get("exception_info"):
            errors.append(d["exception_info"].get("exception_type", "?"))
        else:
            rewards.append(
                float(((d.get("verifier_result") or {}).get("rewards") or {}).get("reward", 0.0))
            )
    return {"episodes": len(rewards), "seconds": seconds, "rewards": rewards, "errors": errors}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--episodes", type=int, default=26)
    ap.add_argument(
        "--harbor-python", default=None, help="a Python with harbor (and trl) installed"
    )
    ap.add_argument("--skip", action="append", default=[], help="ours, ours_cold, trl, harbor")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="harbor-bench-") as tmp:
        tasks_dir = anchor_copy(Path(tmp) / "tasks")
        TaskRuntime(tasks_dir, base_image=BASE_IMAGE).build_all()
        rows: dict[str, dict] = {}
        runs = [
            (
                "ours (warm pool, 2 spares a task)",
                "ours",
                lambda: asyncio.run(ours(tasks_dir, 2, args.concurrency, args.episodes)),
            ),
            (
                "ours (no pool: start per episode)",
                "ours_cold",
                lambda: asyncio.run(ours(tasks_dir, 0, args.concurrency, args.episodes)),
            ),
        ]
        if args.harbor_python:
            runs += [
                (
                    "TRL HarborBashEnv",
                    "trl",
                    lambda: trl_env(args.harbor_python, tasks_dir, args.concurrency, args.episodes),
                ),
                (
                    "Harbor runner (harbor run -a oracle)",
                    "harbor",
                    lambda: harbor_runner(
                        args.harbor_python,
                        tasks_dir,
                        args.concurrency,
                        args.episodes,
                        Path(tmp) / "jobs",
                    ),
                ),
            ]
        for label, key, run in runs:
            if key in args.skip:
                continue
            r = run()
            r["per_min"] = 60 * r["episodes"] / r["seconds"] if r["seconds"] else 0.0
            rows[label] = r
            print(
                f"{label}: {r['episodes']} episodes in {r['seconds']:.1f} s = {r['per_min']:.1f}/min, "
                f"mean reward {sum(r['rewards']) / max(1, len(r['rewards'])):.3f}, errors {len(r['errors'])}"
                + (f" ({r['errors'][0][:200]})" if r["errors"] else ""),
                flush=True,
            )
        print(
            f"\n{len(load_tasks(tasks_dir))} tasks, concurrency {args.concurrency}, {args.episodes} oracle episodes each"
        )
        print(
            "| runner | episodes | seconds | episodes/min | mean reward | errors |\n|---|---|---|---|---|---|"
        )
        for label, r in rows.items():
            mean = sum(r["rewards"]) / max(1, len(r["rewards"]))
            print(
                f"| {label} | {r['episodes']} | {r['seconds']:.1f} | {r['per_min']:.1f} | {mean:.3f} | {len(r['errors'])} |"
            )
        base = next(iter(rows.values()), None)
        for label, r in list(rows.items())[1:]:
            if base and r["per_min"]:
                print(f"ours (warm pool) / {label}: {base['per_min'] / r['per_min']:.2f}x")


if __name__ == "__main__":
    main()
