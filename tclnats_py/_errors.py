"""Error codes shared by the Tcl and the Python face.

Every error raised or reported by the engine carries a ``code`` that is one of
nats-tcl's documented names (CoreAPI.md "Error Handling", JsAPI.md, KvAPI.md).
The Tcl face throws ``{NATS <code>}`` with the same message; the Python face
raises the subclass of :class:`NatsError` registered for the code, so
``except tclnats_py.ErrTimeout`` and ``err.code == "ErrTimeout"`` both work.
"""

from __future__ import annotations

__all__ = ["NatsError", "error_class", "make_error", "ASYNC_FATAL"]


class NatsError(Exception):
    """Base class; ``code`` is the nats-tcl error code, ``args[0]`` the message."""

    code = "ErrNats"

    def __init__(self, message: str = "", **details):
        super().__init__(message)
        self.message = message
        # extra fields, e.g. JetStream API errors carry code/err_code
        self.details = details

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


_registry: dict[str, type[NatsError]] = {}


def error_class(code: str) -> type[NatsError]:
    """Return (creating on first use) the exception class for ``code``."""
    cls = _registry.get(code)
    if cls is None:
        cls = type(code, (NatsError,), {"code": code, "__module__": "tclnats_py"})
        _registry[code] = cls
    return cls


def make_error(code: str, message: str, **details) -> NatsError:
    return error_class(code)(message, **details)


# Synchronous errors (CoreAPI.md), asynchronous ones, JetStream and KV ones.
CODES = (
    "ErrConnectionClosed ErrNoServers ErrInvalidArg ErrBadSubject ErrBadQueueName "
    "ErrBadTimeout ErrMaxPayload ErrBadSubscription ErrTimeout ErrNoResponders "
    "ErrHeadersNotSupported "
    "ErrBrokenSocket ErrTLS ErrStaleConnection ErrConnectionRefused ErrSecureConnWanted "
    "ErrConnectionTimeout ErrBadHeaderMsg ErrServer ErrPermissions ErrAuthorization "
    "ErrAuthExpired ErrAuthRevoked ErrAccountAuthExpired ErrProtocol ErrSlowConsumer "
    "ErrJSResponse ErrStreamNotFound ErrConsumerNotFound ErrMsgNotFound ErrBucketNotFound "
    "ErrKeyNotFound ErrWrongLastSequence ErrInvalidKey ErrKeyExists ErrConsumerSequenceMismatch "
    "ErrObjectNotFound ErrDigestMismatch ErrBadObjectMeta ErrNoMessages"
).split()
for _c in CODES:
    globals()[_c] = error_class(_c)
__all__ += CODES

# asynchronous errors after which nats-tcl drops the socket and tries the next server
ASYNC_FATAL = frozenset(
    "ErrBrokenSocket ErrTLS ErrStaleConnection ErrConnectionRefused ErrSecureConnWanted "
    "ErrConnectionTimeout ErrServer ErrAuthorization ErrAuthExpired ErrAuthRevoked "
    "ErrAccountAuthExpired ErrProtocol".split()
)
