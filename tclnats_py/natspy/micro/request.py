"""``nats.micro.request`` of nats-py 2.x: the :class:`Request` a service
endpoint's handler gets, and :class:`ServiceError`."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Awaitable, Callable, TypeAlias

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
        reply_to = self._msg.reply
        if not reply_to:
            raise ValueError(f"micro: the request on {self._msg.subject!r} has no reply subject to respond to")
        await self._msg._client.publish(reply_to, data, headers=headers)

    async def respond_error(self, code: str, description: str, data: bytes = b"",
                            headers: dict[str, str] | None = None) -> None:
        """Reply with an error: ``code`` and ``description`` in the service error headers."""
        await self.respond(data, headers=_micro.error_headers(code, description, headers))


#: an endpoint's handler: a coroutine function of the Request
Handler: TypeAlias = Callable[[Request], Awaitable[None]]


@dataclass
class ServiceError(Exception):
    """An error a handler raises to answer with ``code`` and ``description``."""

    code: str
    description: str

    def __repr__(self) -> str:
        # what an endpoint's stats show as last_error: the fields joined by ":"
        return ":".join(str(value) for value in self.to_dict().values())

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServiceError:
        """From ``to_dict``'s form; a missing field is the empty string."""
        return cls(**{key: data.get(key, "") for key in ("code", "description")})
