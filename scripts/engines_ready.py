"""Can the container tests run here? ``make test`` asks this for a user who is not root.

They need Docker and the Podman API service answering where the tests connect (``DOCKER_HOST``,
``OPENENV_TRAIN_PODMAN_URL`` or the default sockets), each holding the local base image. Exit 0
when they do; otherwise print one line naming what is missing and the fix, and exit 1, so that
``make test`` stops before a suite of container failures. (Root needs no check: ``make test``
runs ``scripts/container_engines.sh``, which sets up whatever is missing.)
"""

from __future__ import annotations

import os
import sys

from openenv_train.runtime import container_engine as ce

ENGINES = ("docker", "podman")
BASE_IMAGE = os.environ.get("OPENENV_TRAIN_BASE_IMAGE", "openenv-train-base:py3.11-bookworm")
FIX = (
    "run `sudo make engines` once (installs and starts both, builds the base image), "
    "or point DOCKER_HOST and OPENENV_TRAIN_PODMAN_URL at running engines"
)


def missing() -> list[str]:
    """What the container tests would fail on, one short phrase per engine."""
    out = []
    for engine in ENGINES:
        try:
            client = ce.connect(engine, timeout=5)
        except ce.EngineError:
            out.append(f"{engine} does not answer at {ce.engine_url(engine)}")
            continue
        try:
            client.api.inspect_image(BASE_IMAGE)
        except Exception:
            out.append(f"{engine} has no {BASE_IMAGE}")
    return out


def main() -> int:
    gaps = missing()
    if gaps:
        print(f"container tests need Docker and Podman ({'; '.join(gaps)}): {FIX}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
