"""The one place that decides what SIGTERM and SIGHUP do to a process that owns servers.

Python's default for SIGTERM and SIGHUP is to die on the spot: no ``finally``, no ``with`` exit,
no ``atexit``, so a container or server this process started keeps serving until another
provider reaps it. Everything that starts containers or servers (``serve``, ``train``,
``validate``, providers, pools, Ray fleets) calls :func:`raise_on_stop_signals`, which makes
both behave like Ctrl-C: ``KeyboardInterrupt`` in the main thread, so the code that owns the
servers removes them on the way out. A SIGKILLed owner's containers are reaped by the next
provider that starts (see ``container_engine.reap_orphans``).
"""

from __future__ import annotations

import signal
import threading
from typing import Any

#: The signals after which an owner removes what it started.
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")


def raise_on_stop_signals() -> None:
    """Make SIGTERM and SIGHUP raise ``KeyboardInterrupt`` like SIGINT (idempotent).

    Only a signal still at its default action is changed: a handler someone installed, or an
    ignored signal (``nohup`` ignores SIGHUP), is left alone. Signal handlers live in the main
    thread, so a call from another thread does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in STOP_SIGNALS[1:]:
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, _interrupt)
