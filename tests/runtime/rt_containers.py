"""Shared bits of the container tests: engines, base image, what this process owns."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openenv_train.runtime import container_engine as ce

ROOT = Path(__file__).resolve().parents[2]
ENGINES = ("docker", "podman")
BASE_IMAGE = os.environ.get("OPENENV_TRAIN_BASE_IMAGE", "openenv-train-base:py3.11-bookworm")
IMAGE_PREFIX = "openenv-train-test"


def engine_client(engine: str):
    try:
        return ce.connect(engine)
    except ce.EngineError as e:
        pytest.fail(f"{e}\nrun `bash scripts/container_engines.sh` (as root) first", pytrace=False)


def ours(client) -> list[str]:
    """Containers this test process owns (by label), in any state."""
    listing = client.api.containers(
        all=True, filters={"label": [f"{ce.LABEL_OWNER_PID}={os.getpid()}"]}
    )
    return ce.names_in_listing(listing)
