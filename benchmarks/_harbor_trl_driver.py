"""Run by ``benchmarks/harbor_throughput.py`` in an interpreter that has ``harbor`` and ``trl``
(Python >= 3.12): oracle episodes through TRL's ``trl.experimental.harbor.HarborBashEnv`` (one
sandbox per env object, Harbor's Docker environment), ``concurrency`` env objects on threads.
Prints one JSON line: episodes, seconds, rewards."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch from the internet


def main() -> None:
    from trl.experimental.harbor import HarborBashEnv

    tasks_dir, concurrency, episodes = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    tasks = sorted(p for p in tasks_dir.iterdir() if (p / "task.toml").is_file())
    queue = list(range(episodes))
    lock = threading.Lock()
    rewards: list[float] = []
    errors: list[str] = []

    def worker() -> None:
        env = HarborBashEnv()
        while True:
            with lock:
                if not queue:
                    break
                i = queue.pop()
            task = tasks[i % len(tasks)]
            try:
                env.reset(task_dir=str(task))
                solve = (task / "solution" / "solve.sh").read_text()
                env.bash(
                    f"cat > /tmp/solve.sh <<'SOLVE_EOF'\n{solve}\nSOLVE_EOF\nbash /tmp/solve.sh"
                )
                reward = env.reward
                with lock:
                    rewards.append(reward)
            except Exception as err:  # counted, not scored
                with lock:
                    errors.append(f"{type(err).__name__}: {err}"[:300])
        env._run(env._stop())

    start = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.monotonic() - start
    print(
        json.dumps(
            {"episodes": len(rewards), "seconds": seconds, "rewards": rewards, "errors": errors}
        )
    )


if __name__ == "__main__":
    main()
