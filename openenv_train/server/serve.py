"""``serve()``: run an env app with uvicorn using the settings that measured fastest here."""

from __future__ import annotations

from typing import Any

#: uvicorn WebSocket implementation used by ``serve()`` and the local runtime launcher: uvicorn's
#: sans-I/O ``websockets`` protocol minus its per-message read pause (see ``wsproto_fast``).
#: From a shell: ``python -m openenv_train.server module:app --port N`` (plain ``uvicorn`` can only
#: take ``--ws websockets-sansio``, the same protocol without our fast path).
DEFAULT_WS_IMPL = "openenv_train.server.wsproto_fast:FastWebSocketsProtocol"
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


def serve(app: Any, host: str = "127.0.0.1", port: int = 8000, **uvicorn_options: Any) -> None:
    """Serve ``app`` (an ASGI app or an ``"module:attr"`` string) until interrupted.

    Binds loopback by default; pass ``host="0.0.0.0"`` explicitly to expose the server.
    """
    import uvicorn

    uvicorn.run(app, host=host, port=port, **uvicorn_kwargs(**uvicorn_options))


def main(argv: list[str] | None = None) -> None:
    """``python -m openenv_train.server pkg.server.app:app [--host H] [--port P]``.

    The command line launchers use instead of ``uvicorn APP``: same server, our WebSocket
    protocol class (uvicorn's ``--ws`` flag only takes built-in names).
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
        "--ws",
        default=None,
        help="a uvicorn WebSocket implementation name to use instead of ours (e.g. websockets-sansio)",
    )
    args = parser.parse_args(argv)
    extra: dict[str, Any] = {"log_level": args.log_level}
    if args.ws:
        extra["ws"] = args.ws
    serve(args.app, host=args.host, port=args.port, **extra)


if __name__ == "__main__":  # pragma: no cover
    main()
