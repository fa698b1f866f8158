"""The servers ``server_throughput.py`` measures, each run alone in a child process.

A trivial env (reset -> count 0, step -> count + delta) written with our API (async methods, or
plain sync methods our server runs in worker threads) and with OpenEnv 0.10's API (sync, its
idiom, or async via ``reset_async``/``step_async``), plus a bare ``websockets`` echo server: the
ceiling for a Python WebSocket server on this machine.
"""

from __future__ import annotations

import asyncio
import socket


def _ours_app(sync: bool, max_sessions: int, session_timeout: float = 300.0):
    from openenv_train.core.models import Action, Observation, State
    from openenv_train.server import Limits, create_app
    from openenv_train.server.environment import Environment

    class CounterAction(Action):
        delta: int = 1

    class CounterObservation(Observation):
        count: int = 0

    class AsyncCounter(Environment):
        def __init__(self) -> None:
            self.count, self.steps = 0, 0

        async def reset(self, seed: int | None = None, episode_id: str | None = None):
            self.count, self.steps = 0, 0
            return CounterObservation(count=0)

        async def step(self, action: CounterAction):
            self.count += action.delta
            self.steps += 1
            return CounterObservation(count=self.count)

        async def state(self) -> State:
            return State(step_count=self.steps)

    class SyncCounter(Environment):
        def __init__(self) -> None:
            self.count, self.steps = 0, 0

        def reset(self, seed: int | None = None, episode_id: str | None = None):
            self.count, self.steps = 0, 0
            return CounterObservation(count=0)

        def step(self, action: CounterAction):
            self.count += action.delta
            self.steps += 1
            return CounterObservation(count=self.count)

        def state(self) -> State:
            return State(step_count=self.steps)

    env = SyncCounter if sync else AsyncCounter
    return create_app(
        env,
        CounterAction,
        CounterObservation,
        State,
        limits=Limits.from_env(max_sessions=max_sessions, session_timeout_s=session_timeout),
    )


def _openenv_app(use_async: bool, max_sessions: int):
    from openenv.core.env_server import Action, Environment, Observation, State, create_app

    class CounterAction(Action):
        delta: int = 1

    class CounterObservation(Observation):
        count: int = 0

    class Counter(Environment):
        SUPPORTS_CONCURRENT_SESSIONS = True

        def __init__(self) -> None:
            super().__init__()
            self.count, self._state = 0, State(step_count=0)

        def reset(self, seed=None, episode_id=None, **kwargs):
            self.count, self._state = 0, State(step_count=0)
            return CounterObservation(count=0)

        def step(self, action, timeout_s=None, **kwargs):
            self.count += action.delta
            self._state.step_count += 1
            return CounterObservation(count=self.count)

        @property
        def state(self):
            return self._state

    class AsyncCounter(Counter):
        async def reset_async(self, seed=None, episode_id=None, **kwargs):
            return self.reset(seed=seed, episode_id=episode_id)

        async def step_async(self, action, timeout_s=None, **kwargs):
            return self.step(action)

    env = AsyncCounter if use_async else Counter
    return create_app(env, CounterAction, CounterObservation, max_concurrent_envs=max_sessions)


def event_loop(choice: str) -> str:
    """``auto`` -> ``uvloop`` when it is installed (as uvicorn decides), else ``asyncio``."""
    if choice != "auto":
        return choice
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def run_loop(main, loop: str) -> None:
    if event_loop(loop) == "uvloop":
        import uvloop

        uvloop.run(main())
    else:
        asyncio.run(main())


def _without_metrics(app) -> None:
    """The anchor for the metrics rows: the same app with ``metrics.instrument``'s hooks taken
    off again (the endpoint counts nothing without ``metrics``; the session manager's wrappers
    are instance attributes over the class's methods)."""
    endpoint, manager = app.ws_endpoint, app.sessions
    for name in ("create", "destroy"):
        vars(manager).pop(name, None)
    endpoint.metrics = endpoint.on_handshake = None


def _with_tracing() -> None:
    """Spans recorded for every reset and step (no caller trace: each a root, sampled), handed
    to a batch processor whose exporter drops them: the cost of tracing on, without a collector."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Drop(SpanExporter):
        def export(self, spans):
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Drop()))
    trace.set_tracer_provider(provider)


def serve(
    kind: str, fd: int, max_sessions: int, loop: str = "auto", session_timeout: float = 300.0
) -> None:
    """Child process: serve ``kind`` on the inherited listening socket ``fd``."""
    if kind == "bare":
        from websockets.asyncio.server import serve as ws_serve

        async def echo(ws) -> None:
            async for message in ws:
                await ws.send(message)

        async def main() -> None:
            sock = socket.socket(fileno=fd)
            async with ws_serve(
                echo, sock=sock, compression=None, max_size=None, ping_interval=None
            ):
                await asyncio.Future()

        run_loop(main, loop)
        return
    import uvicorn

    common = {"fd": fd, "access_log": False, "backlog": 4096, "loop": event_loop(loop)}
    # OpenEnv runs on uvicorn defaults, as it ships (its ws impl is websockets-sansio, as ours)
    if kind.startswith("openenv"):
        app = _openenv_app(kind == "openenv-async", max_sessions)
        config = uvicorn.Config(app, log_level="warning", **common)
    elif kind == "ours-plain":  # `uvicorn module:app` with uvicorn's own defaults
        app = _ours_app(True, max_sessions)
        config = uvicorn.Config(app, log_level="warning", **common)
    else:  # the settings our serve() and local runtime use
        from openenv_train.server import uvicorn_kwargs

        app = _ours_app(kind == "ours-sync", max_sessions, session_timeout)
        if kind == "ours-nometrics":
            _without_metrics(app)
        elif kind == "ours-traced":
            _with_tracing()
        config = uvicorn.Config(app, **uvicorn_kwargs(**common))
    uvicorn.Server(config).run()


async def counter_cost(sessions: int, frames: int = 20_000, rounds: int = 9) -> dict[str, float]:
    """In-process cost of the ``/metrics`` counters, too small for the socket runs to resolve
    (their repeats differ by a few percent): ``WebSocketEndpoint.frame`` on a step frame, with
    and without the counters, interleaved rounds, medians, in microseconds per frame; and one
    ``/metrics`` exposition with ``sessions`` open, in milliseconds."""
    import statistics
    import time

    apps = {"with": _ours_app(False, sessions + 1), "without": _ours_app(False, sessions + 1)}
    _without_metrics(apps["without"])
    step = '{"type":"step","data":{"delta":1}}'
    first: dict[str, object] = {}
    for name, app in apps.items():
        for _ in range(sessions):
            session = await app.sessions.create("ws", None)
            await app.ws_endpoint.frame(session, '{"type":"reset","data":{}}')
            first.setdefault(name, session)
    per_frame: dict[str, list[float]] = {"with": [], "without": []}
    for _ in range(rounds):
        for name, app in apps.items():
            frame, session = app.ws_endpoint.frame, first[name]
            t0 = time.perf_counter()
            for _ in range(frames):
                await frame(session, step)
            per_frame[name].append((time.perf_counter() - t0) / frames * 1e6)
    metrics = apps["with"].ws_endpoint.metrics
    scrape = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        metrics.exposition()
        scrape.append((time.perf_counter() - t0) * 1e3)
    for app in apps.values():
        for session in list(app.sessions.sessions.values()):
            await app.sessions.destroy(session)
    return {
        "with_us": statistics.median(per_frame["with"]),
        "without_us": statistics.median(per_frame["without"]),
        "scrape_ms": statistics.median(scrape),
    }
