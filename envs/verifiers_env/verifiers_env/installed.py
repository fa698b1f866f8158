"""Which verifiers environments are installed: a verifiers environment is a distribution that
requires ``verifiers`` and whose module (its id with ``-`` as ``_``) has ``load_environment``.

Listing reads package metadata only; nothing is imported until an env is served.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re

#: shipped with this package: generated data, no hub download
BUNDLED = ("vf-arithmetic",)
_NOT_ENVS = {"verifiers", "openenv-train-verifiers-env", "openenv-train"}


def module_name(env_id: str) -> str:
    """The module of ``env_id``, as verifiers' own ``load_environment`` names it."""
    return env_id.replace("-", "_").split("/")[-1]


def is_installed(env_id: str) -> bool:
    try:
        return importlib.util.find_spec(module_name(env_id)) is not None
    except (ImportError, ValueError):
        return False


def env_ids() -> list[str]:
    """Every installed verifiers environment id, sorted (the bundled ones included)."""
    found = set(BUNDLED)
    for dist in importlib.metadata.distributions():
        name = (dist.metadata.get("Name") or "").lower()
        if not name or name in _NOT_ENVS:
            continue
        if any(re.match(r"verifiers\b(?![-_])", r) for r in dist.requires or ()):
            found.add(name)
    return sorted(env_id for env_id in found if is_installed(env_id))
