"""``openenv-train serve APP --runtime ray --replicas N``: an env fleet on Ray, URLs printed.

It connects to ``--ray-address`` (or starts a local cluster for the command), starts N servers,
prints one URL per line, then keeps the fleet healthy (dead servers replaced, the new URLs
printed) until Ctrl-C, SIGTERM or SIGHUP, and stops everything it started on the way out.
"""

from __future__ import annotations

import argparse
import faulthandler
import sys
import time
from typing import Any

from ..core.loopback import is_loopback
from ..runtime.signals import raise_on_stop_signals

#: seconds the fleet's stop and the process's exit may take after Ctrl-C
STOP_BOUND_S = 90.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The Ray options of ``serve`` (used with ``--runtime ray``)."""
    p.add_argument("--replicas", type=int, default=1, help="env servers to start (--runtime ray)")
    p.add_argument(
        "--ray-address",
        default=None,
        help="'auto', 'ray://head:10001' or 'head:6379'; default: a local cluster for this command",
    )
    p.add_argument(
        "--cpus-per-server", type=float, default=1.0, help="CPUs Ray reserves per server"
    )
    p.add_argument("--heal-every", type=float, default=5.0, help="seconds between health checks")


def _print_urls(fleet: Any) -> None:
    for url, node in zip(fleet.base_urls, fleet.node_ids, strict=True):
        print(f"{url}  node {node[:12]}", flush=True)


def cmd_serve_ray(args: argparse.Namespace, error: type[Exception]) -> int:
    """Serve ``args.app`` on Ray until interrupted; ``error`` is the CLI's user-error type."""
    from openenv_train.runtime.ray_fleet import start_ray_servers

    if args.replicas < 1:
        raise error(f"--replicas: {args.replicas}; start at least 1 server")
    if not is_loopback(args.host):
        raise error(
            "--host: Ray servers bind 127.0.0.1 on their node from the CLI; use the Python API "
            "(start_ray_servers(..., bind_host=..., token=...)) to serve beyond loopback"
        )
    raise_on_stop_signals()
    fleet = None
    try:
        try:
            fleet = start_ray_servers(
                args.app,
                args.replicas,
                address=args.ray_address,
                cpus_per_server=args.cpus_per_server,
            )
        except ValueError as err:
            raise error(str(err)) from None
        print(f"{len(fleet)} env server(s) of {args.app} on Ray (Ctrl-C stops them):", flush=True)
        _print_urls(fleet)
        while True:
            time.sleep(args.heal_every)
            if fleet.heal():
                print("replaced dead server(s); the fleet is now:", flush=True)
                _print_urls(fleet)
    except KeyboardInterrupt:
        print("stopping the fleet", file=sys.stderr, flush=True)
        # a bound on the way out: a stop (or Ray's shutdown, or a thread at exit) that hangs
        # prints every thread's stack and ends the process; the reaper then stops the cluster
        faulthandler.dump_traceback_later(STOP_BOUND_S, exit=True)
        return 0
    finally:
        if fleet is not None:
            fleet.stop()
