"""How the server calls an env: sync methods in worker threads, coroutines on the loop.

Everything that can be decided once per env class (is ``reset`` async? which kwargs does it
accept? is ``state`` a property?) is decided once and cached, so the per-frame path does no
``inspect`` work.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Callable
from typing import Any

from ..core.models import Observation, State
from ._threads import run_sync

log = logging.getLogger("openenv_train.server")
_clock = time.perf_counter

#: Inline (on-loop) sync calls slower than ``INLINE_BUDGET_S`` are overruns. ``INLINE_MAX_OVERRUNS``
#: overruns within ``INLINE_WINDOW`` calls, or one call over ``INLINE_HARD_LIMIT_S``, demote the env
#: class to worker threads for good. Isolated overruns are tolerated: a busy machine preempts even
#: a microsecond call now and then, while an env that really blocks overruns on most calls.
INLINE_BUDGET_S = 0.002
INLINE_MAX_OVERRUNS = 5
INLINE_WINDOW = 200
INLINE_HARD_LIMIT_S = 0.05
#: A sync env class that leaves ``inline_sync_calls`` unset starts in worker threads and earns
#: inline calls after this many calls in a row each returned within ``INLINE_BUDGET_S`` there
#: (timed in the worker, so a sleep or blocking I/O shows). Why: the thread hop is most of a
#: trivial sync env's per-step cost, and most sync envs are pure computation.
PROMOTE_AFTER = 200


def _accepted(fn: Callable[..., Any], skip: tuple[str, ...] = ()) -> frozenset[str] | None:
    """Names ``fn`` accepts as keywords, or None when it takes ``**kwargs`` (accepts all)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    names = []
    for p in sig.parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            return None
        if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            names.append(p.name)
    return frozenset(n for n in names if n not in skip and n != "self")


def _is_coro(fn: Any) -> bool:
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__func__", None)
    )


class EnvCalls:
    """Per-env-class call plan. Build with :func:`calls_for`."""

    def __init__(self, env_cls: type) -> None:
        self.env_cls = env_cls
        reset = getattr(env_cls, "reset", None)
        step = getattr(env_cls, "step", None)
        if not callable(reset) or not callable(step):
            raise TypeError(
                f"{env_cls.__name__} is not an environment: it needs reset() and step() methods"
            )
        # OpenEnv's envs may pair a plain ``step`` with an async ``step_async`` (the MCP base
        # class does): the server awaits the async variant on the loop when the class has one.
        self.reset_name = _async_variant(env_cls, "reset")
        self.step_name = _async_variant(env_cls, "step")
        reset = getattr(env_cls, self.reset_name)
        step = getattr(env_cls, self.step_name)
        self.reset_async = _is_coro(reset)
        self.reset_kwargs = _accepted(reset)
        self.step_async = _is_coro(step)
        self.step_kwargs = _accepted(step, skip=("action",))
        raw_state = inspect.getattr_static(env_cls, "state", None)
        self.state_is_property = isinstance(raw_state, property)
        state_fn = getattr(env_cls, "state", None)
        self.state_async = (not self.state_is_property) and _is_coro(state_fn)
        opted = getattr(env_cls, "inline_sync_calls", None)
        self.inline = opted is True
        #: still on probation: worker calls are timed and ``PROMOTE_AFTER`` quick ones in a row
        #: promote the class (``inline_sync_calls = False`` keeps a class in threads for good)
        self.auto = opted is None
        self.promote_after = PROMOTE_AFTER
        self.fast_streak = 0
        self.overruns = 0
        self.inline_calls = 0
        #: calls made, by how they ran (what ``/metrics`` reports; one plan per env class)
        self.ran_inline = self.ran_thread = self.ran_async = 0
        close = getattr(env_cls, "close", None)
        self.has_close = callable(close)
        self.close_async = self.has_close and _is_coro(close)

    @staticmethod
    def _filter(kwargs: dict[str, Any], accepted: frozenset[str] | None) -> dict[str, Any]:
        if accepted is None or not kwargs:
            return kwargs
        return {k: v for k, v in kwargs.items() if k in accepted}

    def _inline(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run an opted-in sync call on the loop, demoting the class if it overran its budget."""
        self.ran_inline += 1
        t0 = _clock()
        try:
            return fn(*args, **kwargs)
        finally:
            took = _clock() - t0
            calls = self.inline_calls = self.inline_calls + 1
            if took > INLINE_BUDGET_S or calls >= INLINE_WINDOW:
                self._account(took, fn)

    def _account(self, took: float, fn: Callable[..., Any]) -> None:
        """Count an overrun (or close a window of ``INLINE_WINDOW`` calls); demote on too many."""
        if self.inline_calls >= INLINE_WINDOW:
            self.inline_calls = self.overruns = 0
        if took > INLINE_BUDGET_S:
            self.overruns += 1
            if self.inline and (self.overruns >= INLINE_MAX_OVERRUNS or took > INLINE_HARD_LIMIT_S):
                self.inline = False
                # a class that earned inline calls may try again, after 4x more quick calls each
                # time: a machine that stalled a quick call once costs little, an env that blocks
                # now and then stalls the loop ever more rarely
                self.promote_after *= 4
                self.fast_streak = 0
                log.warning(
                    "%s.%s took %.1f ms on the event loop; its sync calls go to worker threads "
                    "(set inline_sync_calls = False on the class if it may block)",
                    self.env_cls.__name__,
                    getattr(fn, "__name__", "call"),
                    took * 1e3,
                )

    def _timed(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """In a worker thread: run ``fn`` and count it towards promotion when it was quick."""
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        if time.perf_counter() - t0 <= INLINE_BUDGET_S:
            self.fast_streak += 1
            if self.fast_streak >= self.promote_after and self.auto:
                self.inline = True
                log.debug("%s: sync calls now run inline", self.env_cls.__name__)
        else:
            self.fast_streak = 0
        return out

    async def _threaded(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self.ran_thread += 1
        if self.auto and not self.inline:
            out = await run_sync(self._timed, fn, *args, **kwargs)
        else:
            out = await run_sync(fn, *args, **kwargs)
        if inspect.isawaitable(out):
            out = await out
        return out

    async def reset(self, env: Any, kwargs: dict[str, Any]) -> Observation:
        kw = self._filter(kwargs, self.reset_kwargs)
        if self.reset_async:
            self.ran_async += 1
            obs = await getattr(env, self.reset_name)(**kw)
        elif self.inline:
            obs = self._inline(env.reset, **kw)
        else:
            obs = await self._threaded(env.reset, **kw)
        if not isinstance(obs, Observation) and inspect.isawaitable(obs):
            obs = await obs
        return _check_obs(obs, "reset")

    async def step(
        self, env: Any, action: Any, kwargs: dict[str, Any] | None = None
    ) -> Observation:
        if kwargs:
            kw = self._filter(kwargs, self.step_kwargs)
            if self.step_async:
                self.ran_async += 1
                obs = await getattr(env, self.step_name)(action, **kw)
            elif self.inline:
                obs = self._inline(env.step, action, **kw)
            else:
                obs = await self._threaded(env.step, action, **kw)
        elif self.step_async:
            self.ran_async += 1
            obs = await getattr(env, self.step_name)(action)
        elif self.inline:
            obs = self._inline(env.step, action)
        else:
            obs = await self._threaded(env.step, action)
        if isinstance(obs, Observation):
            return obs
        if inspect.isawaitable(obs):
            obs = await obs
        return _check_obs(obs, "step")

    async def state(self, env: Any) -> Any:
        if self.state_is_property:
            if self.inline:
                st = self._inline(getattr, env, "state")
            else:
                st = await self._threaded(getattr, env, "state")
        elif self.state_async:
            self.ran_async += 1
            st = await env.state()
        elif self.inline:
            st = self._inline(env.state)
        else:
            st = await self._threaded(env.state)
        if inspect.isawaitable(st):
            st = await st
        if not isinstance(st, (State, dict)):
            raise TypeError(
                f"{type(env).__name__}.state returned {type(st).__name__}; "
                "return a State (or dict) instead"
            )
        return st

    async def close(self, env: Any) -> None:
        if not self.has_close:
            return
        if self.close_async:
            await env.close()
        else:
            res = await run_sync(env.close)
            if inspect.isawaitable(res):
                await res


def _async_variant(env_cls: type, name: str) -> str:
    """``name``, or ``<name>_async`` when ``name`` is a plain method and the class overrides
    ``<name>_async`` with a coroutine at least as far down its hierarchy (OpenEnv's pairing; the
    base class's default variant just calls ``name``). A subclass that overrides only the plain
    method keeps it: the most derived override wins."""
    if _is_coro(getattr(env_cls, name)):
        return name
    variant = f"{name}_async"
    if not _is_coro(getattr(env_cls, variant, None)):
        return name
    from .environment import Environment

    if getattr(env_cls, variant) is getattr(Environment, variant):
        return name
    mro = env_cls.__mro__
    plain_at = next(i for i, k in enumerate(mro) if name in vars(k))
    variant_at = next(i for i, k in enumerate(mro) if variant in vars(k))
    return variant if variant_at <= plain_at else name


def _check_obs(obs: Any, method: str) -> Observation:
    if isinstance(obs, Observation):
        return obs
    raise TypeError(
        f"env.{method}() returned {type(obs).__name__}; it must return an Observation instance"
    )


_CACHE: dict[type, EnvCalls] = {}


def calls_for(env: Any) -> EnvCalls:
    """The cached call plan for ``type(env)``."""
    cls = type(env)
    plan = _CACHE.get(cls)
    if plan is None:
        plan = _CACHE[cls] = EnvCalls(cls)
    return plan


async def build_env(factory: Callable[[], Any]) -> Any:
    """Call the env factory: coroutine functions on the loop, everything else in a thread."""
    if _is_coro(factory):
        return await factory()
    env = await run_sync(factory)
    if inspect.isawaitable(env):
        env = await env
    return env
