"""Every error of tclnats_py, written out: one class per nats-tcl error code.

Each class carries ``code``, one of nats-tcl's documented names (CoreAPI.md
"Error Handling", JsAPI.md, KvAPI.md) or a tclnats_py addition.  The Tcl face
throws ``{NATS <code>}`` with the same message; the Python face raises the
class, so ``except tclnats_py.ErrTimeout`` and ``err.code == "ErrTimeout"``
both work.  :func:`error_class` is the code -> class lookup.

The classes come in families, by what a caller can do about them::

    NatsError                          code; details (extra fields)
    ├── ArgumentError                  a call's argument is wrong
    ├── ConnectionFailure              the connection failed, closed or broke (ErrConnectionRefused
    │                                  is also a ConnectionRefusedError, ErrHostNotResolved also a
    │                                  socket.gaierror: both OSErrors, as asyncio raises them)
    ├── AuthError                      the server refused credentials or a permission
    ├── ErrTimeout                     also a TimeoutError (asyncio.TimeoutError)
    ├── ErrNoResponders
    └── JetStreamError                 err_code: JetStream's own code, or None
        ├── APIError                   an API reply's error: api_code, err_code, description
        ├── KeyValueError              (ErrKeyExists is also an ErrWrongLastSequence)
        └── ObjectStoreError
"""

from __future__ import annotations

import sys as _sys
# socket.gaierror's own module: importing socket would load selectors, select ...
# into the Tcl face's start (tests/install/test_layout.py pins what it imports)
from _socket import gaierror as _gaierror

__all__ = [
    "NatsError", "ArgumentError", "ConnectionFailure", "AuthError", "JetStreamError", "APIError",
    "KeyValueError", "ObjectStoreError", "ERRORS", "CODES", "ASYNC_FATAL", "error_class", "make_error",
    # one class per code
    "ErrAccountAuthExpired", "ErrAuthExpired", "ErrAuthRevoked", "ErrAuthorization", "ErrBadHeaderMsg",
    "ErrBadObjectMeta", "ErrBadQueueName", "ErrBadRequest", "ErrBadSubject", "ErrBadSubscription",
    "ErrBadTimeout", "ErrBrokenSocket", "ErrBucketNotFound", "ErrConnectionClosed", "ErrConnectionRefused",
    "ErrHostNotResolved",
    "ErrConnectionTimeout", "ErrConsumerDeleted", "ErrConsumerLeadershipChanged", "ErrConsumerNotActive",
    "ErrConsumerNotFound", "ErrConsumerSequenceMismatch", "ErrConsumerStopped", "ErrDigestMismatch",
    "ErrHeadersNotSupported", "ErrInvalidArg", "ErrInvalidKey", "ErrJSResponse", "ErrJetStreamNotEnabled",
    "ErrJetStreamNotEnabledForAccount", "ErrKeyExists", "ErrKeyNotFound", "ErrMaxPayload", "ErrMsgNotFound",
    "ErrNoHeartbeat", "ErrNoMessages", "ErrNoResponders", "ErrNoServers", "ErrNotJSMessage",
    "ErrNotPullConsumer", "ErrObjectNotFound", "ErrPermissions", "ErrProtocol", "ErrPullRequestLimit",
    "ErrSecureConnWanted", "ErrServer", "ErrServerShutdown", "ErrSlowConsumer", "ErrStaleConnection",
    "ErrStreamNotFound", "ErrTLS", "ErrTimeout", "ErrWrongLastSequence",
    "ErrReconnectBufExceeded", "ErrOutboundBufferLimit", "ErrTooManyStalledMsgs", "ErrDataLoss",
    "ErrNoKeysFound", "ErrServerTooOld", "ErrWebSocket",
]


class NatsError(Exception):
    """Base class; ``code`` is the nats-tcl error code, ``args[0]`` the
    message, ``details`` the extra fields some errors carry."""

    code = "ErrNats"

    def __init__(self, message: str = "", **details):
        super().__init__(message)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


# ---------------------------------------------------------------- families
class ArgumentError(NatsError):
    """A call's argument is wrong; nothing was sent."""


class ConnectionFailure(NatsError):
    """The connection failed, closed or broke (most of nats-tcl's asynchronous errors)."""


class AuthError(NatsError):
    """The server refused the credentials, or a permission."""


class JetStreamError(NatsError):
    """A JetStream, Key-Value or Object Store error."""

    @property
    def err_code(self) -> int | None:
        """JetStream's own error code (10059 ...) when the server sent one."""
        return self.details.get("err_code")


class APIError(JetStreamError):
    """The error object of a JetStream API reply (``{"code": 404, "err_code":
    10059, "description": ...}``), mapped to a code by ``_js.api.error_from_api``."""

    @property
    def api_code(self) -> int | None:
        """The reply's HTTP-like code (400, 404, 503 ...)."""
        return self.details.get("api_code", self.details.get("code"))

    @property
    def description(self) -> str:
        """The server's description of the error."""
        return self.details.get("description", self.message)


class KeyValueError(JetStreamError):
    """A Key-Value bucket error."""


class ObjectStoreError(JetStreamError):
    """An Object Store error."""


# ---------------------------------------------------------------- core, synchronous (CoreAPI.md)
class ErrConnectionClosed(ConnectionFailure):
    code = "ErrConnectionClosed"


class ErrNoServers(ConnectionFailure):
    code = "ErrNoServers"


class ErrInvalidArg(ArgumentError):
    code = "ErrInvalidArg"


class ErrBadSubject(ArgumentError):
    code = "ErrBadSubject"


class ErrBadQueueName(ArgumentError):
    code = "ErrBadQueueName"


class ErrBadTimeout(ArgumentError):
    code = "ErrBadTimeout"


class ErrMaxPayload(ArgumentError):
    code = "ErrMaxPayload"


class ErrBadSubscription(ArgumentError):
    code = "ErrBadSubscription"


class ErrHeadersNotSupported(ArgumentError):
    code = "ErrHeadersNotSupported"


if _sys.version_info >= (3, 11):
    _TIMEOUT_BASES: tuple = (TimeoutError,)  # asyncio.TimeoutError is TimeoutError from 3.11
else:  # pragma: no cover - Python 3.10: asyncio's TimeoutError is a class of its own
    import asyncio.exceptions as _aio_exc
    _TIMEOUT_BASES = (TimeoutError, _aio_exc.TimeoutError)


class ErrTimeout(NatsError, *_TIMEOUT_BASES):  # type: ignore[misc]
    """A request, flush or fetch got no answer in time; ``except TimeoutError``
    and ``except asyncio.TimeoutError`` catch it too (on Python 3.10 as well)."""

    code = "ErrTimeout"


class ErrNoResponders(NatsError):
    code = "ErrNoResponders"


# ---------------------------------------------------------------- core, asynchronous (CoreAPI.md)
class ErrBrokenSocket(ConnectionFailure):
    code = "ErrBrokenSocket"


class ErrTLS(ConnectionFailure):
    code = "ErrTLS"


class ErrStaleConnection(ConnectionFailure):
    code = "ErrStaleConnection"


class ErrConnectionRefused(ConnectionFailure, ConnectionRefusedError):
    """The server's address refused the TCP connection; ``except
    ConnectionRefusedError`` (an OSError) catches it too."""

    code = "ErrConnectionRefused"


class ErrHostNotResolved(ConnectionFailure, _gaierror):
    """The server's host name did not resolve (no such name, or no DNS
    answer); ``except socket.gaierror`` and ``except OSError`` catch it too.
    The asyncio face only: the Tcl face reports it as ErrConnectionRefused,
    as nats-tcl does."""

    code = "ErrHostNotResolved"


class ErrSecureConnWanted(ConnectionFailure):
    code = "ErrSecureConnWanted"


class ErrConnectionTimeout(ConnectionFailure):
    code = "ErrConnectionTimeout"


class ErrBadHeaderMsg(ConnectionFailure):
    code = "ErrBadHeaderMsg"


class ErrServer(ConnectionFailure):
    code = "ErrServer"


class ErrProtocol(ConnectionFailure):
    code = "ErrProtocol"


class ErrWebSocket(ConnectionFailure):
    """A ``ws://``/``wss://`` server refused the WebSocket upgrade (not a
    websocket listener, a wrong path, not HTTP at all), closed the connection
    during it, or sent a bad or oversize frame."""
    code = "ErrWebSocket"


class ErrSlowConsumer(ConnectionFailure):
    code = "ErrSlowConsumer"


class ErrReconnectBufExceeded(ConnectionFailure):
    """A publish while not connected found the reconnect buffer full
    (``reconnect_buf_size``; nats.go's ErrReconnectBufExceeded).  The message
    was not accepted; everything accepted before it is kept."""
    code = "ErrReconnectBufExceeded"


class ErrOutboundBufferLimit(ConnectionFailure):
    """A publish that could not wait for the socket found more than
    8 x ``write_buf_size`` + ``reconnect_buf_size`` bytes waiting to be
    written (nats-py's OutboundBufferLimitError): the message was not
    accepted.  Awaiting publish() waits instead."""
    code = "ErrOutboundBufferLimit"


class ErrPermissions(AuthError):
    code = "ErrPermissions"


class ErrAuthorization(AuthError):
    code = "ErrAuthorization"


class ErrAuthExpired(AuthError):
    code = "ErrAuthExpired"


class ErrAuthRevoked(AuthError):
    code = "ErrAuthRevoked"


class ErrAccountAuthExpired(AuthError):
    code = "ErrAccountAuthExpired"


# ---------------------------------------------------------------- JetStream API replies (JsAPI.md)
class ErrJSResponse(APIError):
    """Any other API error; the Tcl face throws ``{NATS ErrJSResponse code err_code}``."""

    code = "ErrJSResponse"


class ErrStreamNotFound(APIError):
    code = "ErrStreamNotFound"


class ErrConsumerNotFound(APIError):
    code = "ErrConsumerNotFound"


class ErrMsgNotFound(APIError):
    code = "ErrMsgNotFound"


class ErrWrongLastSequence(APIError):
    code = "ErrWrongLastSequence"


class ErrJetStreamNotEnabledForAccount(APIError):
    code = "ErrJetStreamNotEnabledForAccount"


# ---------------------------------------------------------------- JetStream, other
class ErrJetStreamNotEnabled(JetStreamError):
    code = "ErrJetStreamNotEnabled"


class ErrNotJSMessage(JetStreamError):
    code = "ErrNotJSMessage"


class ErrConsumerNotActive(JetStreamError):
    code = "ErrConsumerNotActive"


class ErrConsumerSequenceMismatch(JetStreamError):
    code = "ErrConsumerSequenceMismatch"


class ErrConsumerDeleted(JetStreamError):
    code = "ErrConsumerDeleted"


class ErrNoHeartbeat(JetStreamError):
    code = "ErrNoHeartbeat"


class ErrBadRequest(JetStreamError):
    code = "ErrBadRequest"


class ErrNotPullConsumer(JetStreamError):
    code = "ErrNotPullConsumer"


class ErrPullRequestLimit(JetStreamError):
    code = "ErrPullRequestLimit"


class ErrConsumerLeadershipChanged(JetStreamError):
    code = "ErrConsumerLeadershipChanged"


class ErrServerShutdown(JetStreamError):
    code = "ErrServerShutdown"


class ErrConsumerStopped(JetStreamError):
    code = "ErrConsumerStopped"


class ErrTooManyStalledMsgs(JetStreamError):
    """An asynchronous JetStream publish waited its stall time for one of the
    ``max_pending`` acks in flight to come back, in vain (nats.go's
    ErrTooManyStalledMsgs): the message was not published."""
    code = "ErrTooManyStalledMsgs"


class ErrDataLoss(JetStreamError):
    """A read needs messages the stream no longer has (purged, or removed
    by its limits): the Spark source with ``failOnDataLoss`` true (Kafka's
    default), naming the stream, the sequence it needs and the first one left."""
    code = "ErrDataLoss"


class ErrNoMessages(JetStreamError):
    code = "ErrNoMessages"


class ErrServerTooOld(JetStreamError):
    """A JetStream feature the server is too old for (its ``$JS.API.INFO``
    API level, ADR-44, is below the feature's), refused before anything was
    sent; ``details``: feature, level (needed), version (the first
    nats-server with it), server_level."""
    code = "ErrServerTooOld"


# ---------------------------------------------------------------- Key-Value (KvAPI.md), Object Store
class ErrBucketNotFound(KeyValueError):
    code = "ErrBucketNotFound"


class ErrKeyNotFound(KeyValueError):
    code = "ErrKeyNotFound"


class ErrNoKeysFound(KeyValueError):
    """``keys()`` of a bucket with no key, on the Python face (nats.go's
    ErrNoKeysFound; the Tcl face throws ErrKeyNotFound as nats-tcl does)."""
    code = "ErrNoKeysFound"


class ErrKeyExists(ErrWrongLastSequence, KeyValueError):
    """``create`` of a key that has a value (nats.go's ErrKeyExists); also an
    ErrWrongLastSequence, which the server's refusal is (and what the Tcl
    face throws, as nats-tcl does)."""

    code = "ErrKeyExists"


class ErrInvalidKey(ArgumentError):
    code = "ErrInvalidKey"


class ErrObjectNotFound(ObjectStoreError):
    code = "ErrObjectNotFound"


class ErrDigestMismatch(ObjectStoreError):
    code = "ErrDigestMismatch"


class ErrBadObjectMeta(ObjectStoreError):
    code = "ErrBadObjectMeta"


# ---------------------------------------------------------------- the lookup
_FAMILIES = (NatsError, ArgumentError, ConnectionFailure, AuthError, JetStreamError, APIError, KeyValueError,
             ObjectStoreError)


def _leaves() -> dict:
    out = {}
    todo = [NatsError]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls not in _FAMILIES and cls.__module__ == __name__:
            out[cls.code] = cls
    return dict(sorted(out.items()))


#: code -> class, every code tclnats_py raises
ERRORS: dict[str, type[NatsError]] = _leaves()
CODES: tuple[str, ...] = tuple(ERRORS)


def error_class(code: str) -> type[NatsError]:
    """The class of ``code`` (``error_class("ErrTimeout") is ErrTimeout``);
    KeyError for a code tclnats_py does not have."""
    return ERRORS[code]


def make_error(code: str, message: str, **details) -> NatsError:
    """An instance of the class of ``code`` with ``message``.

    A code without a class still gives a NatsError carrying that code (a
    Tcl-side code passing through), not an exception of its own."""
    cls = ERRORS.get(code)
    if cls is None:
        e = NatsError(message, **details)
        e.code = code
        return e
    return cls(message, **details)


# asynchronous errors after which nats-tcl drops the socket and tries the next server
ASYNC_FATAL = frozenset(
    "ErrBrokenSocket ErrTLS ErrStaleConnection ErrConnectionRefused ErrHostNotResolved ErrSecureConnWanted "
    "ErrConnectionTimeout ErrServer ErrAuthorization ErrAuthExpired ErrAuthRevoked "
    "ErrAccountAuthExpired ErrProtocol".split()
)
