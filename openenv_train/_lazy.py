"""Names a package lends on first use (PEP 562's module ``__getattr__``), written once.

Several packages keep their import light this way: ``import openenv_train`` must not import a web
server or torch, the reference agent starts a fresh process every episode, and the policy
backends pull in torch or vLLM. Each lists ``{submodule: names}``; the first lookup of a name
imports its one submodule and caches the value in the package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_names(
    package: str, homes: Mapping[str, Iterable[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], dict[str, str]]:
    """``(__getattr__, __dir__, {name: submodule})`` for ``package`` (its ``__name__``)."""
    home = {name: module for module, names in homes.items() for name in names}
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        namespace[name] = value  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(home))

    return __getattr__, __dir__, home
