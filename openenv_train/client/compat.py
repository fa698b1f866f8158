"""OpenEnv 0.10's client arguments, read into ours: the one place both spellings meet.

``EnvClient(url, connect_timeout_s=5)`` works like ``EnvClient(url, connect_timeout=5)``; giving
both spellings of one setting with different values is an error that names them. ``mode`` comes
from ``mode=``, else ``OPENENV_CLIENT_MODE`` (the variable OpenEnv's clients read), else the
client class's default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

CLIENT_MODES = ("simulation", "production")
MODE_ENV_VAR = "OPENENV_CLIENT_MODE"

#: OpenEnv's name -> (ours, how an OpenEnv value becomes ours)
OPENENV_ARGS: dict[str, tuple[str, Any]] = {
    "connect_timeout_s": ("connect_timeout", lambda v: v),
    "message_timeout_s": ("timeout", lambda v: v),
    "max_message_size_mb": ("max_message_size", lambda v: None if v is None else int(v * 2**20)),
    "websocket_ping_interval_s": ("ping_interval", lambda v: v),
    "websocket_ping_timeout_s": ("ping_timeout", lambda v: v),
}

_DEFAULT_PING_TIMEOUT = 20.0  # the websockets library's (and OpenEnv's) default


def client_kwargs(openenv_names: Mapping[str, Any], **ours: Any) -> dict[str, Any]:
    """Our settings with OpenEnv's spellings applied; unknown names raise ``TypeError``."""
    unknown = sorted(set(openenv_names) - set(OPENENV_ARGS))
    if unknown:
        raise TypeError(
            f"unexpected keyword argument(s) {unknown}; OpenEnv's names that are accepted: "
            f"{sorted(OPENENV_ARGS)}"
        )
    out = {**ours, "ping_timeout": _DEFAULT_PING_TIMEOUT}
    for name, value in openenv_names.items():
        target, convert = OPENENV_ARGS[name]
        if target in ours and ours[target] != _OUR_DEFAULTS[target]:
            raise ValueError(
                f"{name}={value!r} and {target}={ours[target]!r} name the same setting; give one"
            )
        out[target] = convert(value)
    return out


_OUR_DEFAULTS: dict[str, Any] = {
    "timeout": 30.0,
    "connect_timeout": 10.0,
    "max_message_size": 64 * 1024 * 1024,
    "ping_interval": None,
}


def client_mode(mode: str | None, default: str) -> str:
    """``mode=`` (any case), else ``OPENENV_CLIENT_MODE``, else ``default``; anything else is a ``ValueError``."""
    source = "mode"
    if mode is None:
        mode, source = os.environ.get(MODE_ENV_VAR), MODE_ENV_VAR
    if mode is None:
        return default
    if not isinstance(mode, str) or mode.lower() not in CLIENT_MODES:
        raise ValueError(
            f"Invalid mode {mode!r} (from {source}): must be 'simulation' or 'production'; "
            f"set it with mode=... or the {MODE_ENV_VAR} environment variable"
        )
    return mode.lower()


def check_headers(headers: Mapping[str, str] | None) -> dict[str, str]:
    """Extra HTTP headers for the WebSocket handshake and ``/mcp`` requests, checked."""
    if headers is None:
        return {}
    if not isinstance(headers, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in headers.items()
    ):
        raise ValueError(f"headers must be a dict of str to str, got {headers!r}")
    return dict(headers)
