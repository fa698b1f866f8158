"""OpenEnv's API on openenv-train: the one place OpenEnv 0.10's spellings live.

Code written for OpenEnv moves over by changing its ``openenv.core...`` / ``openenv...``
imports to ``openenv_train.openenv``::

    from openenv_train.openenv import AutoEnv, EnvClient, HTTPEnvServer, LocalDockerProvider

Every name here is OpenEnv's, with OpenEnv's arguments and behaviour, built on the native
packages: ``server`` (``HTTPEnvServer``, ``create_app``...), ``client`` (``EnvClient``,
``GenericEnvClient``, ``MCPToolClient``), ``auto`` (``AutoEnv``, ``AutoAction`` over the env catalog), ``docker``
(``LocalDockerProvider`` on the hardened container) and ``evals`` (``EvalHarness``,
``EvalConfig``, ``EvalResult``, ``InspectAIHarness``, ``PassAtKHarness``). This package sits at
the top of the import layers: it may import any native package, and no native module imports
it. The names OpenEnv and openenv-train spell alike (``Action``, ``Observation``,
``Environment``, the rubrics) are native: ``openenv_train``, ``openenv_train.core.rubrics``;
the LLM clients and ``LLMJudge`` are in ``openenv_train.judge``.

The names load lazily (module ``__getattr__``): asking for one name imports only its module.
"""

from __future__ import annotations

from .._lazy import lazy_names

# submodule -> the OpenEnv names it provides; the one list of what ``openenv_train.openenv`` exports
_EXPORTS: dict[str, tuple[str, ...]] = {
    "server": (
        "ConcurrencyConfig",
        "HTTPEnvServer",
        "ServerCapacityStatus",
        "create_app",
        "create_web_interface_app",
    ),
    "client": ("EnvClient", "GenericEnvClient", "MCPClientBase", "MCPToolClient"),
    "auto": ("AutoAction", "AutoEnv", "HubUnreachableError"),
    "docker": ("ContainerNotReadyError", "LocalDockerProvider"),
    "evals": ("EvalConfig", "EvalHarness", "EvalResult", "InspectAIHarness", "PassAtKHarness"),
}
__getattr__, __dir__, _HOME = lazy_names(__name__, _EXPORTS)


__all__ = sorted(_HOME)
