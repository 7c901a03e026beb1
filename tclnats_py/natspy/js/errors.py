"""``nats.js.errors`` of nats-py 2.x: the JetStream error classes, and
:func:`translate` from the engine's codes (``tclnats_py.errors``).

The hierarchy is nats-py's: ``Error`` (a ``nats.errors.Error``) and
``APIError`` (``code``, ``err_code``, ``description``, ``stream``, ``seq``)
with one class per HTTP-like code of the API's replies (400 BadRequestError,
404 NotFoundError, 500 ServerError, 503 ServiceUnavailableError); Key-Value and
Object Store errors below those.  The engine's exception stays the
``__cause__`` of the translated one.
"""

from __future__ import annotations

from typing import Any

from tclnats_py import errors as _our
from tclnats_py.natspy import errors as _core
from tclnats_py.natspy.js import api  # noqa: F401  (nats-py's module exports it to `import *` too)

__all__ = [
    "Error", "APIError", "ServiceUnavailableError", "ServerError", "NotFoundError", "BadRequestError",
    "NoStreamResponseError", "TooManyStalledMsgsError", "FetchTimeoutError", "ConsumerSequenceMismatchError",
    "BucketNotFoundError", "BadBucketError", "KeyValueError", "KeyDeletedError", "KeyNotFoundError",
    "KeyWrongLastSequenceError", "NoKeysError", "KeyHistoryTooLargeError", "InvalidKeyError",
    "InvalidBucketNameError", "InvalidObjectNameError", "BadObjectMetaError", "LinkIsABucketError",
    "DigestMismatchError", "ObjectNotFoundError", "ObjectDeletedError", "ObjectAlreadyExists",
    "KeyValueLimitMarkerTTLNotSupportedError", "translate", "api_error", "api",
]


class Error(_core.Error):
    """A JetStream error; ``description`` says what went wrong."""

    def __init__(self, description: str | None = None) -> None:
        super().__init__(description)
        self.description = description

    def __str__(self) -> str:
        return f"nats: JetStream.{type(self).__name__} {self.description or ''}"


class APIError(Error):
    """An error reply of the JetStream API."""

    def __init__(self, code: int | None = None, description: str | None = None,
                 err_code: int | None = None, stream: str | None = None, seq: int | None = None) -> None:
        super().__init__(description)
        self.code = code  # type: ignore[assignment]  # nats-py: the HTTP-like int code
        self.err_code = err_code
        self.stream = stream
        self.seq = seq

    def __eq__(self, other: Any) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.code, self.err_code, self.description, self.stream, self.seq) == \
            (other.code, other.err_code, other.description, other.stream, other.seq)

    __hash__ = Exception.__hash__

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(code={self.code!r}, err_code={self.err_code!r}, "
                f"description={self.description!r}, stream={self.stream!r}, seq={self.seq!r})")

    def __str__(self) -> str:
        return f"nats: {type(self).__name__}: code={self.code} err_code={self.err_code} " \
               f"description='{self.description}'"

    @classmethod
    def from_error(cls, err: dict) -> "APIError":
        """Raise the class of an API reply's ``error`` object."""
        raise api_error(err)

    @classmethod
    def from_msg(cls, msg: Any) -> "APIError":
        """Raise the error of a status message (``Status``/``Description`` headers)."""
        h = getattr(msg, "headers", None)
        if not h:
            raise APIError()
        status = h.get("Status")
        if status == "503":
            raise ServiceUnavailableError()
        raise APIError(code=int(status) if status and str(status).isdigit() else None,
                       description=h.get("Description"))


class ServiceUnavailableError(APIError):
    """503: JetStream (or the stream's leader) is not there."""


class ServerError(APIError):
    """500."""


class NotFoundError(APIError):
    """404: no such stream, consumer, message ..."""


class BadRequestError(APIError):
    """400."""


class NoStreamResponseError(Error):
    """A JetStream publish that no stream answered (no stream on the subject)."""

    def __str__(self) -> str:
        return "nats: no response from stream"


class TooManyStalledMsgsError(Error):
    """publish_async: too many acks outstanding for longer than wait_stall."""

    def __str__(self) -> str:
        return "nats: stalled with too many outstanding async published messages"


class FetchTimeoutError(_core.TimeoutError):
    """A fetch that heard from the server but got no message in time."""

    _text = "nats: fetch timeout"


class ConsumerSequenceMismatchError(Error):
    """A push consumer with heartbeats saw a gap in its consumer sequence."""

    def __init__(self, stream_resume_sequence: int | None = None, consumer_sequence: int | None = None,
                 last_consumer_sequence: int | None = None) -> None:
        super().__init__(None)
        self.stream_resume_sequence = stream_resume_sequence
        self.consumer_sequence = consumer_sequence
        self.last_consumer_sequence = last_consumer_sequence

    def __str__(self) -> str:
        gap = (self.last_consumer_sequence or 0) - (self.consumer_sequence or 0)
        return (f"nats: sequence mismatch for consumer at sequence {self.consumer_sequence} ({gap} sequences "
                f"behind), should restart consumer from stream sequence {self.stream_resume_sequence}")


class BucketNotFoundError(NotFoundError):
    """No Key-Value bucket (or object store) of that name."""


class BadBucketError(APIError):
    """The stream is not a Key-Value bucket."""


class KeyValueError(APIError):
    """A Key-Value error."""


class KeyDeletedError(KeyValueError, NotFoundError):
    """The key's last entry is a delete or purge marker (``entry``, ``op``)."""

    def __init__(self, entry: Any = None, op: Any = None) -> None:
        super().__init__()
        self.entry = entry
        self.op = op

    def __str__(self) -> str:
        return "nats: key was deleted"


class KeyNotFoundError(KeyValueError, NotFoundError):
    """The key has no entry (or not the revision asked for)."""

    def __init__(self, entry: Any = None, op: Any = None, message: str | None = None) -> None:
        super().__init__()
        self.entry = entry
        self.op = op
        self.message = message

    def __str__(self) -> str:
        return "nats: key not found" + (f": {self.message}" if self.message else "")


class KeyWrongLastSequenceError(KeyValueError, BadRequestError):
    """create/update of a key whose revision is not the one expected."""

    def __init__(self, description: str | None = None) -> None:
        super().__init__(description=description)

    def __str__(self) -> str:
        return f"nats: {self.description}"


class NoKeysError(KeyValueError):
    def __str__(self) -> str:
        return "nats: no keys found"


class KeyHistoryTooLargeError(KeyValueError):
    def __str__(self) -> str:
        return "nats: history limited to a max of 64"


class InvalidKeyError(Error):
    """A key that Key-Value does not allow."""


class InvalidBucketNameError(Error):
    """A bucket name that Key-Value or Object Store does not allow."""


class InvalidObjectNameError(Error):
    """An object name that Object Store does not allow."""


class BadObjectMetaError(Error):
    """An object's meta that cannot be read."""


class LinkIsABucketError(Error):
    """A link to a whole bucket where an object was expected."""


class DigestMismatchError(Error):
    """An object's data does not have the digest its info says."""


class ObjectNotFoundError(NotFoundError):
    """No object of that name."""


class ObjectDeletedError(NotFoundError):
    """The object was deleted."""


class ObjectAlreadyExists(Error):
    """An object of that name is there already."""


class KeyValueLimitMarkerTTLNotSupportedError(Error):
    """limit_marker_ttl needs nats-server 2.11 or later."""

    def __str__(self) -> str:
        return "nats: limit marker TTLs not supported by server"


# ---------------------------------------------------------------- translation
_BY_HTTP = {503: ServiceUnavailableError, 500: ServerError, 404: NotFoundError, 400: BadRequestError}


def api_error(err: dict) -> APIError:
    """The nats-py class of an API reply's ``error`` object (by its HTTP-like code)."""
    cls = _BY_HTTP.get(err.get("code"), APIError)  # type: ignore[arg-type]
    return cls(code=err.get("code"), description=err.get("description"), err_code=err.get("err_code"),
               stream=err.get("stream"), seq=err.get("seq"))


def _from_api(exc: _our.NatsError) -> APIError:
    d = exc.details
    code = d.get("api_code", d.get("code"))
    return api_error({"code": code, "err_code": d.get("err_code"), "description": d.get("description", exc.message)})


# engine code -> a nats-py class built without arguments (the engine's text is kept as description)
_BY_CODE: dict = {
    "ErrTooManyStalledMsgs": TooManyStalledMsgsError,
    "ErrBucketNotFound": BucketNotFoundError,
    "ErrNoKeysFound": NoKeysError,
    "ErrInvalidKey": InvalidKeyError,
    "ErrObjectNotFound": ObjectNotFoundError,
    "ErrDigestMismatch": DigestMismatchError,
    "ErrBadObjectMeta": BadObjectMetaError,
    "ErrJetStreamNotEnabled": ServiceUnavailableError,
    "ErrNoHeartbeat": _core.TimeoutError,
    "ErrConsumerSequenceMismatch": ConsumerSequenceMismatchError,
}


def translate(exc: BaseException) -> BaseException:
    """The nats-py exception for an engine JetStream error ``exc`` (anything
    else, or a code with no JetStream class, is returned as is for the core
    translation)."""
    if not isinstance(exc, _our.NatsError):
        return exc
    code = exc.code
    new: BaseException | None = None
    if code == "ErrKeyNotFound":
        new = KeyNotFoundError(message=exc.message or None)
    elif code in ("ErrKeyExists", "ErrWrongLastSequence") and isinstance(exc, _our.KeyValueError):
        new = KeyWrongLastSequenceError(exc.message)
    elif code in _BY_CODE:
        new = _BY_CODE[code]()
        if isinstance(new, Error):
            new.description = exc.message
    elif isinstance(exc, _our.APIError) or ("err_code" in exc.details and "code" in exc.details):
        new = _from_api(exc)
    if new is None:
        return exc
    if getattr(new, "code", None) is None and not isinstance(new, APIError):
        try:
            new.code = code  # type: ignore[attr-defined]
        except AttributeError:
            pass
    new.__cause__ = exc
    return new
