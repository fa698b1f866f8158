"""Run attack rounds in this process and print their outcomes as JSON (one object per line).

The non-root mode of the attack suite runs this file under another uid:
``setpriv --reuid U --regid U --clear-groups python attack_driver.py NAME...``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from attacks import ATTACKS, run_round  # noqa: E402


def main(names: list[str]) -> None:
    for name in names or sorted(ATTACKS):
        print(json.dumps(run_round(name).as_dict()), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
