"""The error classes (tclnats_py/errors.py), without a server: one written-out
class per code, the families, the code -> class lookup, and that every code
the library raises is exported from ``tclnats_py``."""

import asyncio
import pathlib
import pickle
import re

import pytest

import tclnats_py
import tclnats_py.aio.jetstream
from tclnats_py import errors as _errors
from tclnats_py.engine.js.api import JS_ERRORS, error_from_api

PKG = pathlib.Path(tclnats_py.__file__).parent

# nats-tcl's documented codes (CoreAPI.md, JsAPI.md, KvAPI.md of v3.2.1): kept exactly
NATS_TCL_CODES = """
ErrConnectionClosed ErrNoServers ErrInvalidArg ErrBadSubject ErrBadQueueName ErrBadTimeout ErrMaxPayload
ErrBadSubscription ErrTimeout ErrNoResponders ErrHeadersNotSupported ErrBrokenSocket ErrTLS ErrStaleConnection
ErrConnectionRefused ErrSecureConnWanted ErrConnectionTimeout ErrBadHeaderMsg ErrServer ErrPermissions
ErrAuthorization ErrAuthExpired ErrAuthRevoked ErrAccountAuthExpired ErrProtocol
ErrJSResponse ErrStreamNotFound ErrConsumerNotFound ErrMsgNotFound ErrWrongLastSequence ErrJetStreamNotEnabled
ErrJetStreamNotEnabledForAccount ErrNotJSMessage ErrConsumerNotActive ErrConsumerSequenceMismatch
ErrBucketNotFound ErrKeyNotFound
""".split()

FAMILIES = {
    "ArgumentError": "ErrInvalidArg ErrBadSubject ErrBadQueueName ErrBadTimeout ErrMaxPayload ErrBadSubscription "
                     "ErrHeadersNotSupported ErrInvalidKey",
    "ConnectionFailure": "ErrConnectionClosed ErrNoServers ErrBrokenSocket ErrTLS ErrStaleConnection "
                         "ErrConnectionRefused ErrSecureConnWanted ErrConnectionTimeout ErrBadHeaderMsg ErrServer "
                         "ErrProtocol ErrSlowConsumer ErrHostNotResolved",
    "AuthError": "ErrPermissions ErrAuthorization ErrAuthExpired ErrAuthRevoked ErrAccountAuthExpired",
    "APIError": "ErrJSResponse ErrStreamNotFound ErrConsumerNotFound ErrMsgNotFound ErrWrongLastSequence "
                "ErrJetStreamNotEnabledForAccount",
    "KeyValueError": "ErrBucketNotFound ErrKeyNotFound ErrKeyExists",
    "ObjectStoreError": "ErrObjectNotFound ErrDigestMismatch ErrBadObjectMeta",
}


def test_every_code_is_a_written_out_class_with_its_code():
    source = (PKG / "errors.py").read_text()
    assert not re.search(r"\btype\([^()]*,", source) and "globals()" not in source  # no type(name, bases, ns)
    for code, cls in _errors.ERRORS.items():
        assert isinstance(cls, type) and issubclass(cls, tclnats_py.NatsError)
        assert cls.__name__ == code == cls.code
        assert re.search(rf"^class {code}\(", source, re.M), code
        e = cls("a message")
        assert e.code == code and str(e) == "a message" and e.message == "a message"


def test_nats_tcl_codes_are_kept_exactly():
    missing = [c for c in NATS_TCL_CODES if c not in _errors.ERRORS]
    assert not missing


def test_lookup_by_code_round_trips_for_every_code():
    assert len(_errors.CODES) == len(set(_errors.CODES)) >= 50
    for code in _errors.CODES:
        cls = tclnats_py.error_class(code)
        assert cls is getattr(tclnats_py, code) is getattr(_errors, code)
        assert tclnats_py.error_class(cls.code) is cls
        e = _errors.make_error(code, "m", extra=1)
        assert type(e) is cls and e.details == {"extra": 1}
    with pytest.raises(KeyError):
        tclnats_py.error_class("ErrNoSuchCode")
    # a code without a class (one from the Tcl side) still travels as a NatsError with that code
    e = _errors.make_error("ErrPython", "from Tcl")
    assert type(e) is tclnats_py.NatsError and e.code == "ErrPython"


def test_families():
    for family, codes in FAMILIES.items():
        base = getattr(tclnats_py, family)
        for code in codes.split():
            e = tclnats_py.error_class(code)("m")
            assert isinstance(e, base) and isinstance(e, tclnats_py.NatsError), (code, family)
    for family in ("APIError", "KeyValueError", "ObjectStoreError"):
        assert issubclass(getattr(tclnats_py, family), tclnats_py.JetStreamError)
    # the timeout is also Python's TimeoutError (asyncio.TimeoutError since 3.11)
    with pytest.raises(asyncio.TimeoutError):
        raise tclnats_py.ErrTimeout("no reply")
    assert not isinstance(tclnats_py.ErrNoResponders("x"), TimeoutError)
    assert not isinstance(tclnats_py.ErrInvalidArg("x"), tclnats_py.ConnectionFailure)
    # every class but the families is a leaf with a code of its own, but for
    # ErrKeyExists, which is also the ErrWrongLastSequence the server sent
    assert {c.__name__: [s.__name__ for s in c.__subclasses__()]
            for c in _errors.ERRORS.values() if c.__subclasses__()} == {"ErrWrongLastSequence": ["ErrKeyExists"]}
    # the connection failures asyncio raises as builtins are those builtins too
    import socket
    assert issubclass(tclnats_py.ErrConnectionRefused, ConnectionRefusedError)
    assert issubclass(tclnats_py.ErrHostNotResolved, socket.gaierror)
    assert not issubclass(tclnats_py.ErrHostNotResolved, ConnectionRefusedError)
    assert not any(issubclass(c, OSError) for c in _errors.ERRORS.values()
                   if c not in (tclnats_py.ErrConnectionRefused, tclnats_py.ErrHostNotResolved, tclnats_py.ErrTimeout))


def test_api_errors_carry_err_code_and_description():
    e = error_from_api({"code": 404, "err_code": 10059, "description": "stream not found"})
    assert type(e) is tclnats_py.ErrStreamNotFound
    assert (e.err_code, e.api_code, e.description, str(e)) == (10059, 404, "stream not found", "stream not found")
    other = error_from_api({"code": 400, "err_code": 10999, "description": "odd"})
    assert type(other) is tclnats_py.ErrJSResponse and other.err_code == 10999
    assert other.details["errorcode"] == ("NATS", "ErrJSResponse", 400, 10999)
    for name in JS_ERRORS.values():
        assert issubclass(tclnats_py.error_class(name), tclnats_py.APIError)
    assert tclnats_py.ErrConsumerDeleted("x").err_code is None


def test_jet_stream_not_enabled_for_account_is_exported_and_raised():
    # was an AttributeError on tclnats_py although the API mapping raised it
    e = error_from_api({"code": 503, "err_code": 10039, "description": "jetstream not enabled for account"})
    assert isinstance(e, tclnats_py.ErrJetStreamNotEnabledForAccount)
    assert tclnats_py.ErrJetStreamNotEnabledForAccount is tclnats_py.aio.jetstream.ErrJetStreamNotEnabledForAccount
    assert e.code == "ErrJetStreamNotEnabledForAccount" and e.err_code == 10039


def test_names_stay_importable_where_they_were():
    for name in ("ErrJetStreamNotEnabled", "ErrJetStreamNotEnabledForAccount", "ErrNotJSMessage",
                 "ErrConsumerDeleted", "ErrNoHeartbeat", "ErrConsumerNotActive", "ErrBadRequest",
                 "ErrNotPullConsumer"):
        assert name in tclnats_py.aio.jetstream.__all__
        assert getattr(tclnats_py.aio.jetstream, name) is getattr(tclnats_py, name)
    for name in ("NatsError", "error_class", "make_error", "ASYNC_FATAL", "CODES", *_errors.CODES):
        assert name in tclnats_py.__all__ and hasattr(tclnats_py, name)
    assert _errors.ASYNC_FATAL <= set(_errors.CODES)


def _codes_in_source():
    """Every literal error code in the library's Python code (make_error("Err..."), JS_ERRORS ...).
    natspy/ is left out: its Err* names are nats-py's legacy aliases (nats.aio.errors), not our codes."""
    found = {}
    for path in PKG.rglob("*.py"):
        if "natspy" in path.relative_to(PKG).parts:
            continue
        for code in re.findall(r"""["'](Err[A-Z][A-Za-z]+)["']""", path.read_text()):
            found.setdefault(code, path.relative_to(PKG).as_posix())
    return found


def test_every_code_the_library_raises_is_exported():
    # ErrInternal is a Tcl errorcode the Tcl bridge writes directly, never a Python exception
    not_classes = {"ErrInternal"}
    found = _codes_in_source()
    assert "ErrConsumerStopped" in found and "ErrPullRequestLimit" in found
    missing = {code: where for code, where in found.items() if code not in not_classes and code != "ErrNats"
               and not hasattr(tclnats_py, code)}
    assert not missing


def test_errors_survive_pickling():
    # Spark ships task errors between processes
    for code in ("ErrTimeout", "ErrStreamNotFound", "ErrInvalidArg", "ErrConnectionRefused", "ErrHostNotResolved",
                 "ErrKeyExists"):
        e = pickle.loads(pickle.dumps(tclnats_py.error_class(code)("a message")))
        assert type(e).code == code and str(e) == "a message"


@pytest.mark.unit
def test_every_error_is_importable_from_the_top_level():
    """tclnats_py.errors holds every code, the top level exports them all."""
    import asyncio
    import tclnats_py
    import tclnats_py.errors as errors
    for name in errors.__all__:
        assert getattr(tclnats_py, name) is getattr(errors, name), name
        assert name in tclnats_py.__all__
    for code in errors.CODES:
        assert getattr(tclnats_py, code).code == code
    for name in ("ErrJetStreamNotEnabled", "ErrConsumerDeleted", "ErrNoKeysFound", "ErrNoHeartbeat",
                 "ErrConsumerStopped", "ErrTooManyStalledMsgs"):
        assert issubclass(getattr(tclnats_py, name), tclnats_py.NatsError)
    try:
        raise tclnats_py.ErrTimeout("t")
    except asyncio.TimeoutError as e:  # also on Python 3.10, where it is not TimeoutError
        assert e.code == "ErrTimeout" and isinstance(e, TimeoutError)
