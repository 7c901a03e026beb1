"""``nats.errors`` of nats-py 2.x: its class names and hierarchy, and
:func:`translate`, which turns an error of the engine (``tclnats_py.errors``,
classes named by code) into the nats-py class a nats-py program catches.

Each class shows nats-py's fixed text (``str(err)``); the engine's own message
stays in ``err.description`` and the engine's exception is the ``__cause__``.
JetStream errors (``tclnats_py.errors.JetStreamError``) are translated by
``tclnats_py.natspy.js.errors.translate`` when that module is there.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import Any, Callable

from tclnats_py import errors as _our

__all__ = [
    "Error", "TimeoutError", "NoRespondersError", "StaleConnectionError", "OutboundBufferLimitError",
    "UnexpectedEOF", "FlushTimeoutError", "ConnectionClosedError", "SecureConnRequiredError",
    "SecureConnWantedError", "SecureConnFailedError", "BadSubscriptionError", "BadSubjectError", "BadHeaderError",
    "SlowConsumerError", "BadTimeoutError", "AuthorizationError", "NoServersError", "JsonParseError",
    "MaxPayloadError", "DrainTimeoutError", "ConnectionDrainingError", "ConnectionReconnectingError",
    "InvalidUserCredentialsError", "InvalidCallbackTypeError", "ProtocolError", "ServerNotInPoolError",
    "NotJSMessageError", "MsgAlreadyAckdError", "translate",
]


class Error(Exception):
    """Base of every nats-py error.  ``description``: the engine's message
    when the error came from it (else None); ``code``: the engine's code."""

    _text = "nats: error"
    description: str | None = None
    code: str | None = None

    def __str__(self) -> str:
        if self.args and self.__class__ is Error:
            return str(self.args[0])
        return self._text


class TimeoutError(Error, asyncio.TimeoutError):  # noqa: A001  nats-py's name
    _text = "nats: timeout"


class NoRespondersError(Error):
    _text = "nats: no responders available for request"


class StaleConnectionError(Error):
    _text = "nats: stale connection"


class OutboundBufferLimitError(Error):
    _text = "nats: outbound buffer limit exceeded"


class UnexpectedEOF(StaleConnectionError):  # the server closed the socket
    _text = "nats: unexpected EOF"


class FlushTimeoutError(TimeoutError):
    _text = "nats: flush timeout"


class ConnectionClosedError(Error):
    _text = "nats: connection closed"


class SecureConnRequiredError(Error):
    _text = "nats: secure connection required"


class SecureConnWantedError(Error):
    _text = "nats: secure connection not available"


class SecureConnFailedError(Error):
    _text = "nats: secure connection failed"


class BadSubscriptionError(Error):
    _text = "nats: invalid subscription"


class BadSubjectError(Error):
    _text = "nats: invalid subject"


class BadHeaderError(Error):
    """A header name that is not an RFC 7230 token (``key``: the name)."""

    def __init__(self, key: str = "") -> None:
        super().__init__(key)
        self.key = key

    def __str__(self) -> str:
        return f"nats: invalid header: {self.key!r}" if self.key else "nats: invalid header"


class SlowConsumerError(Error):
    """Messages of subscription ``sub`` (``sid``, ``subject``) were dropped:
    its pending limits were reached."""

    def __init__(self, subject: str = "", reply: str = "", sid: int = 0, sub: Any = None) -> None:
        super().__init__(subject, reply, sid, sub)
        self.subject = subject
        self.reply = reply
        self.sid = sid
        self.sub = sub

    def __str__(self) -> str:
        return f"nats: slow consumer, messages dropped on subject: {self.subject}, sid: {self.sid}"


class BadTimeoutError(Error):
    _text = "nats: timeout invalid"


class AuthorizationError(Error):
    _text = "nats: authorization failed"


class NoServersError(Error):
    _text = "nats: no servers available for connection"


class JsonParseError(Error):
    _text = "nats: connect message, json parse err"


class MaxPayloadError(Error):
    _text = "nats: maximum payload exceeded"


class DrainTimeoutError(TimeoutError):
    _text = "nats: draining connection timed out"


class ConnectionDrainingError(Error):
    _text = "nats: connection draining"


class ConnectionReconnectingError(Error):  # not while reconnecting
    _text = "nats: connection reconnecting"


class InvalidUserCredentialsError(Error):  # a .creds file nats-py would refuse
    _text = "nats: invalid user credentials"


class InvalidCallbackTypeError(Error):
    _text = "nats: callbacks must be coroutine functions"


class ProtocolError(Error):
    _text = "nats: protocol error"


class ServerNotInPoolError(Error):
    _text = "nats: selected server is not in the pool"


class NotJSMessageError(Error):
    """A JetStream operation on a message that did not come from a stream."""

    _text = "nats: not a JetStream message"


class MsgAlreadyAckdError(Error):
    def __init__(self, msg: Any = None) -> None:
        super().__init__(msg)
        self._msg = msg

    def __str__(self) -> str:
        return f"nats: message already acknowledged: {self._msg}"


# engine code -> nats-py class (codes not here become Error, or the
# JetStream translation's class)
_BY_CODE: dict[str, type[Error]] = {
    "ErrTimeout": TimeoutError,
    "ErrNoResponders": NoRespondersError,
    "ErrConnectionClosed": ConnectionClosedError,
    "ErrNoServers": NoServersError,
    "ErrBadSubject": BadSubjectError,
    "ErrBadQueueName": BadSubjectError,
    "ErrBadTimeout": BadTimeoutError,
    "ErrMaxPayload": MaxPayloadError,
    "ErrBadSubscription": BadSubscriptionError,
    "ErrStaleConnection": StaleConnectionError,
    "ErrBrokenSocket": UnexpectedEOF,
    "ErrSecureConnWanted": SecureConnWantedError,
    "ErrTLS": SecureConnFailedError,
    "ErrProtocol": ProtocolError,
    "ErrWebSocket": ProtocolError,
    "ErrAuthorization": AuthorizationError,
    "ErrAuthExpired": AuthorizationError,
    "ErrAuthRevoked": AuthorizationError,
    "ErrAccountAuthExpired": AuthorizationError,
    "ErrOutboundBufferLimit": OutboundBufferLimitError,
    "ErrReconnectBufExceeded": OutboundBufferLimitError,
    "ErrNotJSMessage": NotJSMessageError,
}


# JetStream's translation (tclnats_py.natspy.js.errors.translate), set by
# that module when it loads (the package's __init__ loads it): this module
# imports nothing of natspy.js, so the modules' imports form a tree
_js_translate: Callable[[BaseException], BaseException] | None = None


def set_js_translate(fn: Callable[[BaseException], BaseException]) -> None:
    """Register JetStream's error translation, tried first for an engine
    JetStreamError whose code has no core class."""
    global _js_translate
    _js_translate = fn


def _os_error(cls, errno_: int):
    def make(exc):
        return cls(errno_, exc.message)
    return make


# engine codes nats-py shows as Python's own exceptions (what its socket,
# TLS and timeout layers raise)
_NATIVE = {
    "ErrConnectionRefused": _os_error(ConnectionRefusedError, 111),
    "ErrHostNotResolved": _os_error(socket.gaierror, socket.EAI_NONAME),
    "ErrTLS": lambda exc: ssl.SSLError(1, exc.message),
    "ErrConnectionTimeout": lambda exc: asyncio.TimeoutError(),
}


def translate(exc: BaseException) -> Any:
    """The nats-py exception for ``exc``: an engine error (``tclnats_py.errors``)
    becomes its nats-py class, carrying ``description`` (the engine's
    message), ``code`` and ``__cause__`` (``exc``); anything else (a nats-py
    error already, OSError, ssl.SSLError, CancelledError ...) is returned as is."""
    if not isinstance(exc, _our.NatsError):
        return exc
    if isinstance(exc, _our.JetStreamError) and exc.code not in _BY_CODE:
        js = _js_translate
        if js is not None:
            out = js(exc)
            if out is not exc:
                return out
    code = exc.code
    native = _NATIVE.get(code)
    if native is not None:
        out = native(exc)
        out.code = code
        out.description = exc.message
        out.__cause__ = exc
        return out
    if code == "ErrSlowConsumer":
        d = exc.details
        new: Error = SlowConsumerError(d.get("subject", ""), "", d.get("sid", 0), None)
    else:
        cls = _BY_CODE.get(code, Error)
        new = cls(exc.message) if cls is Error else cls()
    new.description = exc.message
    new.code = code
    new.__cause__ = exc
    return new
