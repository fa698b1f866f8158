"""The policy layer's exception: a request an OpenAI-compatible server refuses, in OpenAI's error
shape (the policy endpoint and the capture proxy answer with it)."""

from __future__ import annotations

from typing import Any


class OpenAIRequestError(Exception):
    """A request a server refuses: ``status``, ``param`` and an OpenAI error ``type``."""

    def __init__(
        self, message: str, *, param: str | None = None, status: int = 400, kind: str = ""
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.kind = kind or ("invalid_request_error" if status < 500 else "server_error")

    def body(self) -> dict[str, Any]:
        """OpenAI's error body: ``{"error": {"message", "type", "param", "code"}}``."""
        return {
            "error": {"message": self.message, "type": self.kind, "param": self.param, "code": None}
        }
