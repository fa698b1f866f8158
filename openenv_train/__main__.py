"""``python -m openenv_train``: the ``openenv-train`` command, for when the script is not on PATH."""

from __future__ import annotations

import sys

from .cli.main import main

if __name__ == "__main__":
    sys.exit(main())
