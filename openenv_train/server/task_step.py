"""The one place that uses asyncio's private ``_enter_task`` / ``_leave_task``.

Why: the ``/ws`` push path (``ws_push``) answers a frame inside the protocol's
``data_received`` callback, with no task wake-up, which roughly halves the server's CPU per
step. Code in the frame (``asyncio.timeout``, anyio, sniffio) must still see the connection's
task as ``asyncio.current_task()``, as on the ASGI path, and only these two functions set it
without a task per frame (eager task start does the same inside asyncio, 3.12+).
``tests/server/test_task_step.py`` fails if an interpreter changes them.
"""

from __future__ import annotations

import asyncio
import contextvars
from asyncio.tasks import _enter_task, _leave_task  # see the module docstring
from collections.abc import Coroutine
from typing import Any

#: ``first_step``'s first item when another task is running now (nothing was run).
BUSY = None


def first_step(
    loop: asyncio.AbstractEventLoop,
    task: asyncio.Task[Any],
    ctx: contextvars.Context,
    coro: Coroutine[Any, Any, Any],
) -> tuple[bool | None, Any]:
    """Run ``coro`` up to its first suspension as ``task`` (current task) in ``ctx``.

    Returns ``(True, result)`` when it finished, ``(False, yielded)`` when it suspended (resume
    it with the yielded value inside ``task``), or ``(BUSY, None)`` without running anything when
    called from inside another task rather than from a loop callback. The coroutine's own
    exceptions propagate.
    """
    try:
        _enter_task(loop, task)
    except RuntimeError:  # another task is current: not a loop callback
        return BUSY, None
    try:
        first = ctx.run(coro.send, None)
    except StopIteration as stop:
        return True, stop.value
    finally:
        _leave_task(loop, task)
    return False, first
