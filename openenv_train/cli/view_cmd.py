"""``openenv-train view runs/NAME [runs/OTHER ...]``: the run viewer on a local port.

Serves on loopback only (the runs' prompts and configs stay on this machine), on a free port
printed before it starts (``--port`` picks one); Ctrl-C stops it.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def cmd_view(args: argparse.Namespace) -> int:
    import uvicorn

    from ..core.auth import token_from_env
    from .serve_local import free_port
    from .viewer import create_viewer

    try:
        app = create_viewer([Path(r) for r in args.runs], args.live, token_from_env())
    except ValueError as err:
        print(f"openenv-train view: error: {err}")
        return 2
    port = args.port or free_port("127.0.0.1")
    print(f"run viewer at http://127.0.0.1:{port}/ over {', '.join(args.runs)}", flush=True)
    print("Ctrl-C stops it.", flush=True)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "view", help="a local web page over training runs: curves, eval episodes, config"
    )
    p.add_argument("runs", nargs="+", help="run folders (runs/<name>); two or more are overlaid")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")
    p.add_argument(
        "--live",
        action="append",
        default=[],
        metavar="URL",
        help="an env server (or a trainer's metrics_port) whose /metrics the Live tab shows; "
        "repeat for more (token: OPENENV_TRAIN_TOKEN)",
    )
    p.set_defaults(func=cmd_view)
