"""``serve()``: run an env app with uvicorn using the settings that measured fastest here."""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import MutableMapping
from typing import Any

from ..core.auth import TOKEN_ENV, TOKEN_FILE_ENV, token_from_env
from ..core.loopback import is_loopback
from .spans import setup_tracing

#: uvicorn WebSocket implementation used by ``serve()`` and the local runtime launcher: uvicorn's
#: sans-I/O ``websockets`` protocol minus its per-message read pause (see ``wsproto_fast``).
#: From a shell: ``python -m openenv_train.server module:app --port N``. A plain ``uvicorn
#: module:app`` (``--ws auto``) gets it too: the app switches uvicorn's setting at lifespan
#: startup; ``--ws websockets-sansio`` keeps uvicorn's class, without our lean path.
DEFAULT_WS_IMPL = "openenv_train.server.wsproto_fast:FastWebSocketsProtocol"
#: uvicorn HTTP implementation: h11 with a deadline for request heads (see ``httpproto``).
DEFAULT_HTTP_IMPL = "openenv_train.server.httpproto:GuardedH11Protocol"
#: Compression costs more CPU than it saves on small JSON frames over loopback.
DEFAULT_WS_PER_MESSAGE_DEFLATE = False


def uvicorn_kwargs(**overrides: Any) -> dict[str, Any]:
    """The uvicorn settings we serve envs with (for launchers that build their own command)."""
    from .httpproto import GuardedH11Protocol
    from .wsproto_fast import FastWebSocketsProtocol

    kw: dict[str, Any] = {
        "http": GuardedH11Protocol,
        "ws": FastWebSocketsProtocol,
        "ws_per_message_deflate": DEFAULT_WS_PER_MESSAGE_DEFLATE,
        "log_level": "warning",
    }
    kw.update(overrides)
    return kw


def ensure_token(
    host: str, token_file: str | None = None, environ: MutableMapping[str, str] | None = None
) -> tuple[str | None, str | None]:
    """The token a server on ``host`` must require, and a how-to for its users (or None).

    ``token_file`` is used as ``OPENENV_TRAIN_TOKEN_FILE``. A host beyond loopback with no token
    configured gets a fresh random one, put in ``OPENENV_TRAIN_TOKEN`` so the app (built after
    this, or by uvicorn from its import string) requires it.
    """
    env = os.environ if environ is None else environ
    if token_file is not None:
        env[TOKEN_FILE_ENV] = token_file
    token = token_from_env(env)
    if token is not None or is_loopback(host):
        return token, None
    token = secrets.token_urlsafe(32)
    env[TOKEN_ENV] = token
    how = (
        f"This server listens on {host}, beyond loopback, so every route but /health requires a "
        f"bearer token. Generated token:\n\n    {token}\n\nClients: EnvClient(base_url, "
        f"token=...) or export {TOKEN_ENV}=<token> before starting them; HTTP: send the header "
        f"'Authorization: Bearer <token>'. Pass --token-file (or set {TOKEN_ENV} / "
        f"{TOKEN_FILE_ENV}) to choose the token yourself."
    )
    return token, how


def serve(
    app: Any,
    host: str = "127.0.0.1",
    port: int = 8000,
    token_file: str | None = None,
    **uvicorn_options: Any,
) -> None:
    """Serve ``app`` (an ASGI app or an ``"module:attr"`` string) until interrupted.

    Binds loopback by default; pass ``host="0.0.0.0"`` explicitly to expose the server, which
    then requires a bearer token (generated and printed here unless one is configured).
    """
    import uvicorn

    token, how = ensure_token(host, token_file)
    if token is not None:
        app = gated(app, token, uvicorn_options)
    if how is not None:
        print(how, file=sys.stderr, flush=True)
    setup_tracing("openenv-train-env")  # OTLP export when OTEL_EXPORTER_OTLP_ENDPOINT is set
    uvicorn.run(app, host=host, port=port, **uvicorn_kwargs(**uvicorn_options))


def gated(app: Any, token: str, uvicorn_options: dict[str, Any]) -> Any:
    """``app`` made to require ``token`` on every route but ``/health``, or ValueError.

    Our env app gets a gate that requires it (the app object may predate the token). Any other
    app (an ASGI middleware around ``create_app``, say) is put behind a gate as a whole, so the
    wrapper's own routes are covered too. An import string is imported here to do that, except
    with ``reload``/``workers`` (uvicorn imports it again in each process): then it must be an
    env app that requires the token itself, or the server refuses to start.
    """
    from uvicorn.importer import import_from_string

    from .guard import Gate, GatedApp
    from .limits import find_limits

    respawns = bool(uvicorn_options.get("reload")) or (uvicorn_options.get("workers") or 1) > 1
    target = import_from_string(app) if isinstance(app, str) else app
    gate = getattr(target, "gate", None)
    if isinstance(gate, Gate) and not isinstance(target, GatedApp):
        if not gate.requires_token:
            target.gate = Gate(gate.limits, token)
        return app if respawns else target
    if respawns:
        raise ValueError(
            f"app {app!r} is not an env app from create_app() (a middleware wraps it?), so a "
            "server beyond loopback with reload/workers cannot make it require the token; serve "
            "it without reload/workers, or on 127.0.0.1"
        )
    return GatedApp(target, Gate(find_limits(target), token))


def main(argv: list[str] | None = None) -> None:
    """``python -m openenv_train.server pkg.server.app:app [--host H] [--port P]``.

    The command line launchers use instead of ``uvicorn APP``: same server, our WebSocket
    protocol class and head deadlines (a plain ``uvicorn APP`` adopts the protocol class at startup).
    """
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m openenv_train.server", description="Serve an env app with uvicorn."
    )
    parser.add_argument(
        "app", help='the ASGI app as "module:attribute", e.g. echo_env.server.app:app'
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--log-level", default="warning")
    parser.add_argument(
        "--token-file", default=None, help="require the bearer token stored in this file"
    )
    parser.add_argument(
        "--ws",
        default=None,
        help="a uvicorn WebSocket implementation name to use instead of ours (e.g. websockets-sansio)",
    )
    args = parser.parse_args(argv)
    extra: dict[str, Any] = {"log_level": args.log_level}
    if args.ws:
        extra["ws"] = args.ws
    serve(args.app, host=args.host, port=args.port, token_file=args.token_file, **extra)


if __name__ == "__main__":  # pragma: no cover
    main()
