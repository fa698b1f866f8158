"""Where a bearer token for env servers comes from, for servers and clients alike.

``OPENENV_TRAIN_TOKEN`` holds the token itself; ``OPENENV_TRAIN_TOKEN_FILE`` names a file that
holds it (for secrets mounted as files). Reading one variable or file is configuration, not
network I/O, so it lives here where both sides can share it.

Servers this process started with a token of their own (the container runtimes give each
container one when they start several, so that env containers on a shared network cannot open
sessions on each other's servers) are remembered by base URL: ``register_server_token`` at
start, ``forget_server_token`` at stop. A client without an explicit ``token`` uses the one
remembered for its URL, then the environment's (``client_token``); a child process gets the
map with ``server_tokens`` and ``register_server_tokens``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

TOKEN_ENV = "OPENENV_TRAIN_TOKEN"
TOKEN_FILE_ENV = "OPENENV_TRAIN_TOKEN_FILE"


def check_token(token: str, source: str) -> str:
    """A usable token or a ValueError that names ``source`` (never the token itself)."""
    if not isinstance(token, str):
        raise ValueError(f"{source} must be a string token, got {type(token).__name__}")
    token = token.strip()
    if len(token) < 16 or not token.isprintable() or any(c.isspace() for c in token):
        raise ValueError(
            f"{source} must be at least 16 printable characters without spaces; generate one "
            'with: python -c "import secrets; print(secrets.token_urlsafe(32))"'
        )
    return token


def token_from_env(environ: dict[str, str] | None = None) -> str | None:
    """The token named by the environment, or None when neither variable is set."""
    env = os.environ if environ is None else environ
    value = env.get(TOKEN_ENV)
    if value:
        return check_token(value, TOKEN_ENV)
    path = env.get(TOKEN_FILE_ENV)
    if path:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise ValueError(
                f"{TOKEN_FILE_ENV}={path!r} cannot be read ({exc.strerror}); point it at a file "
                "that holds the token"
            ) from None
        return check_token(text, f"the token in {TOKEN_FILE_ENV}={path!r}")
    return None


_SERVER_TOKENS: dict[str, str] = {}
_SERVER_TOKENS_LOCK = threading.Lock()


def _url_key(base_url: str) -> str:
    return base_url.strip().rstrip("/")


def register_server_token(base_url: str, token: str) -> None:
    """Remember that the server at ``base_url`` requires ``token`` (for this process's clients)."""
    with _SERVER_TOKENS_LOCK:
        _SERVER_TOKENS[_url_key(base_url)] = check_token(token, "token")


def register_server_tokens(tokens: Mapping[str, str]) -> None:
    """Remember several (e.g. the map a parent process passed to its child)."""
    for url, token in tokens.items():
        register_server_token(url, token)


def forget_server_token(base_url: str) -> None:
    with _SERVER_TOKENS_LOCK:
        _SERVER_TOKENS.pop(_url_key(base_url), None)


def server_tokens(base_urls: Iterable[str]) -> dict[str, str]:
    """The remembered tokens of these servers (those without one are left out)."""
    with _SERVER_TOKENS_LOCK:
        return {u: _SERVER_TOKENS[_url_key(u)] for u in base_urls if _url_key(u) in _SERVER_TOKENS}


def client_token(base_url: str, token: str | None = None) -> str | None:
    """The token a client of ``base_url`` sends: ``token`` if given, else the one remembered for
    that server, else the environment's (``token_from_env``), else None."""
    if token is not None:
        return check_token(token, "token")
    with _SERVER_TOKENS_LOCK:
        remembered = _SERVER_TOKENS.get(_url_key(base_url))
    return remembered if remembered is not None else token_from_env()


class HideAuthorization(logging.Filter):
    """``websockets`` logs every handshake header at DEBUG; never let it log an access token."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and args and str(args[0]).lower() == "authorization":
            record.args = (args[0], "<redacted>")
        return True
