"""Print where a test run's CPU went: the costliest tests and worker groups.

On a 2-core machine ``make test`` is CPU-bound (its wall time is about its CPU seconds over
two), so CPU seconds, not contended durations, say what to cut. Measure, then read:

    make test-main PYTEST_ARGS="--cpu-profile cpu.jsonl"
    python scripts/test_cpu.py cpu.jsonl
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conftest import test_group  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", type=Path, help="the file a --cpu-profile run wrote")
    parser.add_argument("--top", type=int, default=30, help="how many rows per table")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.profile.read_text().splitlines() if line.strip()]
    if not rows:
        sys.exit(f"{args.profile}: no rows; run pytest with --cpu-profile {args.profile}")
    tests: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    groups: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0.0])
    for row in rows:
        for key, table in ((row["test"], tests), (test_group(row["test"]), groups)):
            table[key][0] += row["cpu"]
            table[key][1] += row.get("engines", 0.0)
            table[key][2] += row["wall"]
    total_cpu = sum(c[0] for c in tests.values())
    print(
        f"{len(tests)} tests, {total_cpu:.0f} CPU s in their own processes; engine s: the CPU "
        "of containers and engine daemons while the test ran (any worker's)\n"
    )
    for title, table in (("test", tests), ("worker group", groups)):
        print(f"{'CPU s':>8} {'share':>6} {'engine s':>8} {'wall s':>8}  {title}")
        for key, (cpu, boxed, wall) in sorted(table.items(), key=lambda kv: -kv[1][0])[: args.top]:
            print(f"{cpu:8.1f} {cpu / total_cpu:6.1%} {boxed:8.1f} {wall:8.1f}  {key}")
        print()


if __name__ == "__main__":
    main()
