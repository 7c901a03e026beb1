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
    "KeyValueLimitMarkerTTLNotSupportedError", "ConsumerInvalidResetError", "translate", "api_error", "api",
]


# Filled by the class statements below: an engine error code -> the class
# built (without arguments) for it, and an API reply's HTTP-like code -> its class.
_FROM_ENGINE: dict[str, type] = {"ErrNoHeartbeat": _core.TimeoutError}
_FROM_HTTP: dict[int, type] = {}
_FROM_ERR_CODE: dict[int, type] = {}


class Error(_core.Error):
    """A JetStream error; ``description`` says what went wrong.

    Subclasses declare what they stand for in their class statement:
    ``engine_code=`` (the engine error they translate), ``http=`` (the API
    reply code they stand for), ``err_code=`` (the API's finer error code
    they stand for, before ``http=``), ``text=`` (a fixed ``str()``)."""

    _fixed_text: str | None = None

    def __init_subclass__(cls, engine_code: str | None = None, http: int | None = None,
                          err_code: int | None = None, text: str | None = None, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if engine_code is not None:
            _FROM_ENGINE[engine_code] = cls
        if http is not None:
            _FROM_HTTP[http] = cls
        if err_code is not None:
            _FROM_ERR_CODE[err_code] = cls
        if text is not None:
            cls._fixed_text = text

    def __init__(self, description: str | None = None) -> None:
        super().__init__(description)
        self.description = description

    def __str__(self) -> str:
        if self._fixed_text is not None:
            return self._fixed_text
        return f"nats: JetStream.{type(self).__name__} {self.description or ''}"


class APIError(Error):
    """An error reply of the JetStream API."""

    # (nats-py's dataclass fields, set on every instance)
    err_code: int | None
    stream: str | None
    seq: int | None

    def __init__(self, code: int | None = None, description: str | None = None,
                 err_code: int | None = None, stream: str | None = None, seq: int | None = None) -> None:
        super().__init__(description)
        self.code = code  # type: ignore[assignment]  # nats-py: the HTTP-like int code
        self.err_code = err_code
        self.stream = stream
        self.seq = seq

    def _fields(self) -> tuple:
        return (self.code, self.err_code, self.description, self.stream, self.seq)

    def __eq__(self, other: Any) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = Exception.__hash__

    def __repr__(self) -> str:
        named = ", ".join(f"{k}={v!r}" for k, v in zip(("code", "err_code", "description", "stream", "seq"),
                                                        self._fields()))
        return f"{type(self).__name__}({named})"

    def __str__(self) -> str:
        if self._fixed_text is not None:
            return self._fixed_text
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


class ServiceUnavailableError(APIError, http=503, engine_code="ErrJetStreamNotEnabled"):
    """503: JetStream (or the stream's leader) is not there."""


class ServerError(APIError, http=500):
    """500."""


class NotFoundError(APIError, http=404):
    """404: no such stream, consumer, message ..."""


class BadRequestError(APIError, http=400):
    """400."""


#: the API's err_code of a reset the consumer's deliver policy refuses (JSConsumerInvalidResetErr)
CONSUMER_INVALID_RESET = 10204


class ConsumerInvalidResetError(BadRequestError, err_code=CONSUMER_INVALID_RESET):
    """reset_consumer to a sequence the consumer's deliver policy does not
    allow (below ``opt_start_seq`` of a ``by_start_sequence`` consumer ...)."""


class NoStreamResponseError(Error, text="nats: no response from stream"):
    """A JetStream publish that no stream answered (no stream on the subject)."""


class TooManyStalledMsgsError(Error, engine_code="ErrTooManyStalledMsgs",
                              text="nats: publish_async stalled: too many publishes still wait for their ack"):
    """publish_async: too many acks outstanding for longer than wait_stall."""


class FetchTimeoutError(_core.TimeoutError):
    """A fetch that heard from the server but got no message in time."""

    _text = "nats: fetch timeout"


class ConsumerSequenceMismatchError(Error, engine_code="ErrConsumerSequenceMismatch"):
    """A push consumer with heartbeats saw a gap in its consumer sequence."""

    def __init__(self, stream_resume_sequence: int | None = None, consumer_sequence: int | None = None,
                 last_consumer_sequence: int | None = None) -> None:
        super().__init__(None)
        self.stream_resume_sequence, self.consumer_sequence, self.last_consumer_sequence = \
            stream_resume_sequence, consumer_sequence, last_consumer_sequence

    def __str__(self) -> str:
        gap = (self.last_consumer_sequence or 0) - (self.consumer_sequence or 0)
        return (f"nats: sequence mismatch for consumer at sequence {self.consumer_sequence} ({gap} sequences "
                f"behind), should restart consumer from stream sequence {self.stream_resume_sequence}")


class BucketNotFoundError(NotFoundError, engine_code="ErrBucketNotFound"):
    """No Key-Value bucket (or object store) of that name."""


class BadBucketError(APIError):
    """The stream is not a Key-Value bucket."""


class KeyValueError(APIError):
    """A Key-Value error."""


class _KeyMissing(KeyValueError, NotFoundError):
    """What KeyDeletedError and KeyNotFoundError share: the ``entry`` and
    ``op`` that were found instead of a value (when there was one)."""

    def __init__(self, entry: Any = None, op: Any = None) -> None:
        super().__init__()
        self.entry = entry
        self.op = op


class KeyDeletedError(_KeyMissing, text="nats: key was deleted"):
    """The key's last entry is a delete or purge marker (``entry``, ``op``)."""


class KeyNotFoundError(_KeyMissing):
    """The key has no entry (or not the revision asked for)."""

    def __init__(self, entry: Any = None, op: Any = None, message: str | None = None) -> None:
        super().__init__(entry, op)
        self.message = message

    def __str__(self) -> str:
        return "nats: key not found" + (f": {self.message}" if self.message else "")


class KeyWrongLastSequenceError(KeyValueError, BadRequestError):
    """create/update of a key whose revision is not the one expected."""

    def __init__(self, description: str | None = None) -> None:
        super().__init__(description=description)

    def __str__(self) -> str:
        return f"nats: {self.description}"


class NoKeysError(KeyValueError, engine_code="ErrNoKeysFound", text="nats: no keys found"):
    """A bucket with no keys (``keys()``)."""


class KeyHistoryTooLargeError(KeyValueError, text="nats: a Key-Value bucket keeps at most 64 entries per key"):
    """``history`` above 64."""


class InvalidKeyError(Error, engine_code="ErrInvalidKey"):
    """A key that Key-Value does not allow."""


class InvalidBucketNameError(Error):
    """A bucket name that Key-Value or Object Store does not allow."""


class InvalidObjectNameError(Error):
    """An object name that Object Store does not allow."""


class BadObjectMetaError(Error, engine_code="ErrBadObjectMeta"):
    """An object's meta that cannot be read."""


class LinkIsABucketError(Error):
    """A link to a whole bucket where an object was expected."""


class DigestMismatchError(Error, engine_code="ErrDigestMismatch"):
    """An object's data does not have the digest its info says."""


class ObjectNotFoundError(NotFoundError, engine_code="ErrObjectNotFound"):
    """No object of that name."""


class ObjectDeletedError(NotFoundError):
    """The object was deleted."""


class ObjectAlreadyExists(Error):
    """An object of that name is there already."""


class KeyValueLimitMarkerTTLNotSupportedError(
        Error, text="nats: this server has no limit marker TTLs (limit_marker_ttl needs nats-server 2.11+)"):
    """limit_marker_ttl needs nats-server 2.11 or later."""


# ---------------------------------------------------------------- translation
def api_error(err: dict) -> APIError:
    """The nats-py class of an API reply's ``error`` object (by its err_code
    when a class stands for it, else by its HTTP-like code)."""
    cls = _FROM_ERR_CODE.get(err.get("err_code")) or _FROM_HTTP.get(err.get("code"), APIError)  # type: ignore[arg-type]
    return cls(code=err.get("code"), description=err.get("description"), err_code=err.get("err_code"),
               stream=err.get("stream"), seq=err.get("seq"))


def _from_api(exc: _our.NatsError) -> APIError:
    d = exc.details
    code = d.get("api_code", d.get("code"))
    return api_error({"code": code, "err_code": d.get("err_code"), "description": d.get("description", exc.message)})


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
    elif code in _FROM_ENGINE:
        new = _FROM_ENGINE[code]()
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


_core.set_js_translate(translate)
