"""Write tests/slow.txt: the slowest worker groups of a test run, slowest first.

The parallel run (``make test``) hands these groups to its workers before the others, so the
longest files start at once instead of being left for the end of the run, where one worker
would run them alone. Regenerate after the suite's shape changes:

    make test PYTEST_ARGS="--durations=0" | tee test.log
    python scripts/slow_tests.py test.log
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conftest import SLOW_LIST, test_group  # noqa: E402

LINE = re.compile(r"^([\d.]+)s (?:call|setup|teardown)\s+(\S+?)::", re.M)
SUMMARY = re.compile(r"^\d+ passed.* in [\d.]+s", re.M)
HEADER = (
    "# The slowest worker groups of a measured `make test` run, slowest first, with their seconds\n"
    "# (scripts/slow_tests.py writes this file; the parallel run starts these groups first).\n"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("log", type=Path, help="the output of a run with --durations=0")
    parser.add_argument("--top", type=int, default=30, help="how many groups to list")
    args = parser.parse_args()
    seconds: collections.Counter[str] = collections.Counter()
    text = args.log.read_text()
    summary = SUMMARY.search(text)  # the parallel suite's; the serial suites after it don't count
    for match in LINE.finditer(text[: summary.end()] if summary else text):
        seconds[test_group(match.group(2))] += float(match.group(1))
    if not seconds:
        sys.exit(f"{args.log}: no durations in it; run pytest with --durations=0")
    rows = [f"{group}  # {secs:.0f} s" for group, secs in seconds.most_common(args.top)]
    SLOW_LIST.write_text(HEADER + "\n".join(rows) + "\n")
    print(f"wrote {SLOW_LIST.relative_to(ROOT)}: {len(rows)} groups")


if __name__ == "__main__":
    main()
