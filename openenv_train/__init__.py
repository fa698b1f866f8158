"""openenv-train: typed RL environments and a batched rollout bridge into GRPO trainers."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_CATALOG_NAMES = ("AutoEnv", "AutoAction")


def __getattr__(name: str) -> Any:
    # ``from openenv_train import AutoEnv`` without importing the catalog on every import
    if name in _CATALOG_NAMES:
        from . import catalog

        return getattr(catalog, name)
    raise AttributeError(f"module 'openenv_train' has no attribute {name!r}")


__all__ = ["AutoAction", "AutoEnv", "__version__"]
