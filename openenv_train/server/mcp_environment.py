"""``MCPEnvironment``: an env whose actions are MCP tool calls.

Tools come from any of three places, listed and called alike:

- ``@tool`` methods of the class (schemas built once at class definition);
- a FastMCP server passed to ``__init__`` (OpenEnv's ``MCPEnvironment(FastMCP(...))``);
- ``self.tool(mode=...)`` registrations, visible only in that mode (``self._mode``).

``step``/``reset`` are plain methods that return observations, as in OpenEnv; the server awaits
``step_async``, which runs the same logic on its event loop. A bad *call* (unknown tool, wrong
arguments, the tool raising) becomes a ``CallToolObservation`` with a ``ToolError``, never a
crashed session.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from pydantic import ValidationError

from ..core.mcp_types import (
    RESERVED_TOOL_NAMES,
    CallToolAction,
    CallToolObservation,
    ListToolsAction,
    ListToolsObservation,
    Tool,
    ToolError,
    ToolErrorType,
)
from ..core.models import Action, Observation
from ._threads import run_coro_sync, run_sync
from .encoding import bounded_text, describe_errors
from .environment import Environment
from .fastmcp_bridge import FastMCPSession, check_tool_names, server_tools
from .mcp_tools import TOOL_ATTR, ToolMark, ToolSpec, build_spec, tool

__all__ = ["VALID_MODES", "MCPEnvironment", "ToolSpec", "tool"]

#: The modes a tool may be registered for with ``self.tool(mode=...)`` (OpenEnv's).
VALID_MODES = frozenset({"production", "simulation"})


class MCPEnvironment(Environment[Action, Observation, Any]):
    """Base class for tool-calling envs: ``@tool`` methods, a FastMCP server, or both.

    ``step`` answers ``ListToolsAction`` and ``CallToolAction``; any other action goes to
    ``_step_impl`` (OpenEnv's name) or :meth:`handle_action`. Override :meth:`on_tool_result`
    to set reward/done after a call made through ``step``.
    """

    _tools: dict[str, ToolSpec] = {}
    #: The FastMCP server given to ``__init__`` (None for ``@tool``-only envs).
    mcp_server: Any = None
    #: This env's mode for mode-aware tools; set it in ``__init__`` (OpenEnv reads ``_mode``).
    _mode: str | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        tools: dict[str, ToolSpec] = {}
        for klass in reversed(cls.__mro__):
            for attr, value in vars(klass).items():
                mark = getattr(value, TOOL_ATTR, None)
                if isinstance(mark, ToolMark):
                    spec = build_spec(cls, attr, value, mark)
                    for other in list(tools.values()):  # an override replaces its parent's tool
                        if other.method_name == attr:
                            del tools[other.name]
                    if spec.name in tools and tools[spec.name].method_name != attr:
                        raise TypeError(
                            f"{cls.__name__}: two methods define tool {spec.name!r} "
                            f"({tools[spec.name].method_name} and {attr})"
                        )
                    tools[spec.name] = spec
        cls._tools = tools

    def __init__(self, mcp_server: Any = None, transform: Any = None, rubric: Any = None) -> None:
        """``mcp_server``: a FastMCP server whose tools this env serves (``ValueError`` if one
        uses a reserved name). Subclasses with ``@tool`` methods only need not call this."""
        super().__init__(transform=transform, rubric=rubric)
        self._mode_registry()
        if mcp_server is not None:
            check_tool_names(mcp_server)
            self.mcp_server = mcp_server
            self._fastmcp = FastMCPSession(mcp_server)

    @property
    def mcp_client(self) -> Any:
        """The FastMCP client of the server given to ``__init__`` (None without one)."""
        session = self.__dict__.get("_fastmcp")
        return session.client if session is not None else None

    @asynccontextmanager
    async def mcp_session(self) -> AsyncIterator[Any]:
        """OpenEnv's ``async with env.mcp_session() as client``: the FastMCP client, connected
        (re-entrant: nested uses share one connection)."""
        client = self.mcp_client
        if client is None:
            raise RuntimeError(
                "MCP client is not available: this env has no FastMCP server, or it is closed"
            )
        async with client:
            yield client

    # ---- mode-aware tools -----------------------------------------------------------------

    def _mode_registry(self) -> dict[str, dict[str | None, tuple[Callable[..., Any], ToolSpec]]]:
        return self.__dict__.setdefault("_mode_tools", {})

    def tool(self, mode: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a function as a tool, for one mode (``"production"``/``"simulation"``) or,
        with ``mode=None``, for all (OpenEnv's ``@self.tool(mode=...)``)."""
        if mode is not None and mode not in VALID_MODES:
            raise ValueError(
                f"Invalid mode {mode!r}. Mode must be 'production', 'simulation', or None."
            )

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            if fn.__name__ in RESERVED_TOOL_NAMES:
                raise ValueError(
                    f"Tool name {fn.__name__!r} is reserved and cannot be used. Reserved names "
                    f"are: {sorted(RESERVED_TOOL_NAMES)}"
                )
            spec = build_spec(type(self), fn.__name__, fn, ToolMark(None, None), bound=False)
            if spec.description == "" and fn.__doc__:
                spec.description = fn.__doc__.strip()
            if mode is None and self.mcp_server is not None:
                self.mcp_server.tool()(fn)
            self._mode_registry().setdefault(fn.__name__, {})[mode] = (fn, spec)
            return fn

        return register

    def _mode_tool(self, name: str) -> tuple[Callable[..., Any], ToolSpec] | None | bool:
        """The registration visible now; False when ``name`` exists only for other modes."""
        by_mode = self._mode_registry().get(name)
        if not by_mode:
            return None
        if None in by_mode:
            return by_mode[None]
        return by_mode.get(self._mode, False)

    # ---- listing and calling --------------------------------------------------------------

    @classmethod
    def tool_specs(cls) -> dict[str, ToolSpec]:
        """The class's ``@tool`` methods by tool name (no instance needed: tokenizer corpora use it)."""
        return dict(cls._tools)

    def list_tools(self) -> list[Tool]:
        """The tools this env offers now, as MCP ``Tool`` records."""
        if self.mcp_server is None:
            return self._own_tools([])
        return run_coro_sync(self.list_tools_async())

    async def list_tools_async(self) -> list[Tool]:
        served = await self._fastmcp.list_tools() if self.mcp_server is not None else []
        return self._own_tools(served)

    def _own_tools(self, served: list[Tool]) -> list[Tool]:
        registry = self._mode_registry()
        tools = [spec.tool for spec in self._tools.values()]
        tools += [t for t in served if t.name not in registry and t.name not in self._tools]
        for name in registry:
            found = self._mode_tool(name)
            if found:
                tools.append(found[1].tool)  # type: ignore[index]
        return tools

    async def invoke_tool(
        self, name: str, arguments: dict[str, Any] | None = None, timeout_s: float | None = None
    ) -> CallToolObservation:
        """Run one tool with no step bookkeeping (no ``on_tool_result``): what ``/mcp``'s
        ``tools/call`` does, as OpenEnv's server calls the tool directly."""
        return await self._run_tool(name, arguments or {}, timeout_s, hold=True)

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, timeout_s: float | None = None
    ) -> CallToolObservation:
        """Run one tool as a step does: the call, then :meth:`on_tool_result` on success."""
        obs = await self._run_tool(name, arguments or {}, timeout_s, hold=True)
        return await self._after_tool(obs)

    async def _run_tool(
        self, name: str, arguments: dict[str, Any], timeout_s: float | None, *, hold: bool
    ) -> CallToolObservation:
        found = self._mode_tool(name) if self.__dict__.get("_mode_tools") else None
        if found is False:
            return _tool_error(
                name,
                ToolErrorType.TOOL_NOT_FOUND,
                f"Tool {bounded_text(name)!r} not available in {self._mode} mode",
            )
        if found:
            fn, spec = found  # type: ignore[misc]
            return await self._run_spec(spec, fn, arguments)
        spec = self._tools.get(name)
        if spec is not None:
            return await self._run_spec(spec, getattr(self, spec.method_name), arguments)
        if self.mcp_server is not None:
            return await self._fastmcp.call_tool(name, arguments, timeout_s, hold=hold)
        shown = bounded_text(str(name))  # the name is the client's input: echo a bounded prefix
        known = ", ".join(sorted(t.name for t in self._own_tools([]))) or "none"
        return _tool_error(
            shown, ToolErrorType.TOOL_NOT_FOUND, f"Unknown tool {shown!r}; available tools: {known}"
        )

    async def _run_spec(
        self, spec: ToolSpec, fn: Callable[..., Any], arguments: dict[str, Any]
    ) -> CallToolObservation:
        name = spec.name
        try:
            parsed = spec.args_model.model_validate(arguments)
        except ValidationError as exc:
            errs = [{"loc": e["loc"], "msg": e["msg"]} for e in exc.errors()]
            return _tool_error(
                name,
                ToolErrorType.INVALID_ARGS,
                f"Invalid arguments for tool {name!r}: {describe_errors(errs)}",
            )
        kwargs = {k: getattr(parsed, k) for k in spec.args_model.model_fields}
        try:
            if spec.is_async:
                result = await fn(**kwargs)
            else:
                result = await run_sync(fn, **kwargs)
        except Exception as exc:
            return _tool_error(
                name,
                ToolErrorType.EXECUTION_ERROR,
                bounded_text(f"{type(exc).__name__}: {exc}", 2000),
            )
        if isinstance(result, CallToolObservation):
            return result
        return CallToolObservation(tool_name=name, result=result)

    async def _after_tool(self, obs: CallToolObservation) -> CallToolObservation:
        hook = self.on_tool_result
        if (
            obs.error is not None
            or getattr(hook, "__func__", None) is MCPEnvironment.on_tool_result
        ):
            return obs
        if inspect.iscoroutinefunction(hook):
            return await hook(obs)
        if self.inline_sync_calls:  # the env vouched that its sync code is quick
            out = hook(obs)
        else:  # sync env code never runs on the event loop
            out = await run_sync(hook, obs)
        if inspect.isawaitable(out):
            out = await out
        return out

    def on_tool_result(self, observation: CallToolObservation) -> CallToolObservation:
        """Hook after a successful tool call made through ``step``: set ``reward``/``done`` here.

        May be ``async def``; a plain method runs in a worker thread like other sync env code.
        """
        return observation

    # ---- code mode ------------------------------------------------------------------------

    @property
    def supports_code_mode(self) -> bool:
        return True

    def get_callables(self) -> dict[str, Callable[..., Any]]:
        """The tools visible now as plain Python callables (code mode: agents' code calls
        them directly, no JSON-RPC)."""
        out: dict[str, Callable[..., Any]] = {
            spec.name: getattr(self, spec.method_name) for spec in self._tools.values()
        }
        if self.mcp_server is not None:
            for name, served in server_tools(self.mcp_server).items():
                fn = getattr(served, "fn", None)
                if callable(fn):
                    out[name] = fn
        for name in self._mode_registry():
            found = self._mode_tool(name)
            if found:
                out[name] = found[0]  # type: ignore[index]
        return out

    def execute_code(self, code: str) -> Observation:
        """Run Python ``code`` with the tools as functions; its ``result`` variable comes back in
        ``metadata["result"]``, an error in ``metadata["error"]``.

        This runs in the server process with no sandbox (as OpenEnv's): call it only for code
        you trust, or from an env that runs inside an isolated container.
        """
        namespace: dict[str, Any] = dict(self.get_callables())
        local: dict[str, Any] = {}
        try:
            exec(code, namespace, local)  # noqa: S102 - code mode is in-process by design
        except SyntaxError as exc:
            return Observation(reward=0.0, metadata={"error": f"Syntax error: {exc}"})
        except Exception as exc:
            return Observation(reward=0.0, metadata={"error": str(exc)})
        return Observation(reward=0.0, metadata={"result": local.get("result")})

    # ---- Environment API ------------------------------------------------------------------

    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:  # type: ignore[override]
        """Sync step (OpenEnv's): tool actions run to completion here, other actions go to
        ``_step_impl``/:meth:`handle_action`."""
        if isinstance(action, (ListToolsAction, CallToolAction)):
            return run_coro_sync(self._tool_step(action, timeout_s, hold=False))
        fn = self._other_action_handler()
        out = (
            fn(action, timeout_s=timeout_s, **kwargs)
            if _takes_timeout(fn)
            else fn(action, **kwargs)
        )
        return run_coro_sync(out) if inspect.iscoroutine(out) else out

    async def step_async(  # type: ignore[override]
        self, action: Action, timeout_s: float | None = None, **kwargs: Any
    ) -> Observation:
        """What the server awaits: the same as :meth:`step`, on the caller's event loop."""
        if isinstance(action, (ListToolsAction, CallToolAction)):
            return await self._tool_step(action, timeout_s, hold=True)
        fn = self._other_action_handler()
        if _takes_timeout(fn):
            kwargs["timeout_s"] = timeout_s
        if inspect.iscoroutinefunction(fn):
            return await fn(action, **kwargs)
        out = await run_sync(fn, action, **kwargs)
        return await out if inspect.isawaitable(out) else out

    async def _tool_step(
        self, action: Action, timeout_s: float | None, *, hold: bool
    ) -> Observation:
        if isinstance(action, ListToolsAction):
            try:
                tools = await self.list_tools_async()
            except Exception as exc:
                return ListToolsObservation(
                    tools=[], metadata={"error": str(exc), "error_type": "list_tools_failed"}
                )
            return ListToolsObservation(tools=tools)
        assert isinstance(action, CallToolAction)
        obs = await self._run_tool(action.tool_name, action.arguments, timeout_s, hold=hold)
        return await self._after_tool(obs)

    def _other_action_handler(self) -> Callable[..., Any]:
        impl = getattr(self, "_step_impl", None)
        return impl if callable(impl) else self.handle_action

    def handle_action(self, action: Action, **kwargs: Any) -> Observation:
        """Hook for actions other than ListToolsAction/CallToolAction (OpenEnv's ``_step_impl``
        works too). Default: refuse."""
        raise TypeError(
            f"{type(self).__name__} takes ListToolsAction or CallToolAction, got "
            f"{type(action).__name__}; override handle_action() to accept other actions"
        )

    def close(self) -> None:
        """End the FastMCP session, if any. Subclasses that override ``close`` call super()."""
        session = self.__dict__.pop("_fastmcp", None)
        if session is not None:
            session.close()
        self.mcp_server = None


def _takes_timeout(fn: Callable[..., Any]) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "timeout_s" in params


def _tool_error(name: str, kind: ToolErrorType, message: str) -> CallToolObservation:
    return CallToolObservation(tool_name=name, error=ToolError(error_type=kind, message=message))
