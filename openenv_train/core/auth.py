"""Where a bearer token for env servers comes from, for servers and clients alike.

``OPENENV_TRAIN_TOKEN`` holds the token itself; ``OPENENV_TRAIN_TOKEN_FILE`` names a file that
holds it (for secrets mounted as files). Reading one variable or file is configuration, not
network I/O, so it lives here where both sides can share it.
"""

from __future__ import annotations

import logging
import os
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


class HideAuthorization(logging.Filter):
    """``websockets`` logs every handshake header at DEBUG; never let it log an access token."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and args and str(args[0]).lower() == "authorization":
            record.args = (args[0], "<redacted>")
        return True
