"""An importable app for the ``python -m openenv_train.server`` test."""

from server_envs import AddAction, CounterEnv, CounterState, TotalObservation

from openenv_train.server import create_app

app = create_app(CounterEnv, AddAction, TotalObservation, CounterState)


class ExtraRoute:
    """Any ASGI middleware around the env app: answers ``/extra`` itself, passes the rest on."""

    def __init__(self, inner):  # type: ignore[no-untyped-def]
        self.inner = inner

    async def __call__(self, scope, receive, send):  # type: ignore[no-untyped-def]
        if scope["type"] == "http" and scope["path"] == "/extra":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"secret"})
            return
        await self.inner(scope, receive, send)


wrapped = ExtraRoute(app)
