"""``nats.micro.request`` of nats-py 2.x: the :class:`Request` a service
endpoint's handler gets, and :class:`ServiceError`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from tclnats_py.engine import micro as _micro
from tclnats_py.natspy.aio.msg import Msg

__all__ = ["Request", "Handler", "ServiceError", "ERROR_HEADER", "ERROR_CODE_HEADER"]

ERROR_HEADER = _micro.ERROR_HEADER
ERROR_CODE_HEADER = _micro.ERROR_CODE_HEADER


class Request:
    """A request to an endpoint: ``subject``, ``headers``, ``data``; answer
    with ``respond`` or ``respond_error``."""

    def __init__(self, msg: Msg) -> None:
        self._msg = msg
        self._error = None

    @property
    def subject(self) -> str:
        return self._msg.subject

    @property
    def headers(self) -> dict[str, str] | None:
        return self._msg.headers

    @property
    def data(self) -> bytes:
        return self._msg.data

    async def respond(self, data: bytes = b"", headers: dict[str, str] | None = None) -> None:
        """Reply with ``data`` (and ``headers``)."""
        if not self._msg.reply:
            raise ValueError("no reply subject set")
        await self._msg._client.publish(self._msg.reply, data, headers=headers)

    async def respond_error(self, code: str, description: str, data: bytes = b"",
                            headers: dict[str, str] | None = None) -> None:
        """Reply with an error: ``code`` and ``description`` in the service error headers."""
        await self.respond(data, headers=_micro.error_headers(code, description, headers))


Handler = Callable[[Request], Awaitable[None]]


@dataclass
class ServiceError(Exception):
    """An error a handler raises to answer with ``code`` and ``description``."""

    code: str
    description: str

    def __repr__(self) -> str:
        return f"{self.code}:{self.description}"

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "description": self.description}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ServiceError":
        return cls(code=data.get("code", ""), description=data.get("description", ""))
