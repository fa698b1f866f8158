"""What the harbor tests share besides fixtures: the base image and the containers a run or a
process left. A module of its own name, since ``conftest`` names a module in every folder."""

from __future__ import annotations

import os

from openenv_train.runtime import container_engine as ce

BASE_IMAGE = os.environ.get("OPENENV_TRAIN_BASE_IMAGE", "openenv-train-base:py3.11-bookworm")


def containers_of(run_id: str) -> list[str]:
    """Every container (any state) of a ``TaskRuntime`` run, by its run-id label."""
    client = ce.connect("docker")
    listing = client.api.containers(all=True, filters={"label": [f"{ce.LABEL_RUN_ID}={run_id}"]})
    return ce.names_in_listing(listing)


def containers_owned_by(pid: int) -> list[str]:
    client = ce.connect("docker")
    listing = client.api.containers(all=True, filters={"label": [f"{ce.LABEL_OWNER_PID}={pid}"]})
    return ce.names_in_listing(listing)
