"""The JetStream API: subjects, steps, replies and errors (ADR-1, ADR-19).

Everything here is pure.  An API call is an *operation*: a generator that
yields :class:`Request` (and :class:`Publish`, :class:`Batch`) steps and gets
back the reply :class:`~tclnats_py.engine.connection.Msg` of each, then returns the
result (see the package docstring for how a driver runs one).  For example
``JsApi("hub").stream_info("ORDERS")`` yields one Request for
``$JS.hub.API.STREAM.INFO.ORDERS`` and returns the reply's JSON as a dict.

Replies keep the wire's units: durations in nanoseconds, times as RFC 3339
strings.  nats-tcl hands milliseconds to Tcl users; :func:`ns2ms` and
:func:`iso_to_ms` are the conversions an edge applies (the Python face uses
seconds, see ``tclnats_py.aio.jetstream``).
"""

from __future__ import annotations

import base64
import calendar
import copy
import datetime
import json
import re
from typing import Any, Generator, TypeVar

from tclnats_py.errors import NatsError, error_class, make_error
from tclnats_py.engine.protocol import RecordMaker, compiled
from tclnats_py.engine.subjects import valid_subject, valid_token, valid_wildcard_subject

__all__ = [
    "DEFAULT_API_PREFIX", "api_prefix", "JsApi", "Request", "Publish", "Batch", "advance", "run_sync",
    "check_js_error", "error_from_api", "parse_json", "api_call", "ns2ms", "ms2ns", "iso_to_ms",
    "ms_to_iso", "filename_safe", "check_name", "StoredMsg", "JS_ERRORS", "JsonFloat", "loads", "Op",
]

DEFAULT_API_PREFIX = "$JS.API"

_T = TypeVar("_T")
#: An operation: a generator that yields the steps it needs (Request,
#: Publish, Batch), is sent their replies, and returns its result.
Op = Generator[Any, Any, _T]


def api_prefix(domain: str | None = None, prefix: str | None = None) -> str:
    """``$JS.API``, ``$JS.<domain>.API`` (ADR-19) or an imported prefix
    (``-api_prefix`` of nats-tcl; a trailing dot is dropped)."""
    if domain and prefix:
        raise make_error("ErrInvalidArg", "-domain and -api_prefix are mutually exclusive")
    if domain is not None and domain != "" and not (isinstance(domain, str) and valid_token(domain)):
        raise make_error("ErrInvalidArg", f"Invalid domain {domain}")
    if prefix is not None and prefix != "" and not (isinstance(prefix, str) and valid_subject(prefix.rstrip("."))):
        raise make_error("ErrInvalidArg", f"Invalid api_prefix {prefix}")
    if prefix:
        return prefix.rstrip(".")
    return f"$JS.{domain}.API" if domain else DEFAULT_API_PREFIX


# ---------------------------------------------------------------- steps
class Request:
    """Ask the driver for a core NATS request (first reply only).

    ``timeout`` is in ms; None means the driver's JetStream timeout.  The
    driver sends back the reply Msg; when the core request fails it throws
    the error into the operation instead (ErrTimeout, ErrNoResponders,
    ErrConnectionClosed).  ``check_subject`` False: the subject may hold
    wildcard tokens (a consumer filter in CONSUMER.CREATE) and must not be
    checked as a publish subject.
    """

    __slots__ = ("subject", "payload", "headers", "timeout", "check_subject")

    def __init__(self, subject: str, payload: bytes = b"", headers=None, timeout: int | None = None,
                 check_subject: bool = True):
        self.subject = subject
        self.payload = payload
        self.headers = headers
        self.timeout = timeout
        self.check_subject = check_subject

    def __repr__(self):
        return f"Request({self.subject!r}, {self.payload[:60]!r})"

    def __eq__(self, other):
        return (isinstance(other, Request) and self.subject == other.subject and self.payload == other.payload
                and self.headers == other.headers and self.timeout == other.timeout)


class Publish:
    """Ask the driver to publish (fire and forget); it sends back None."""

    __slots__ = ("subject", "payload", "reply", "headers")

    def __init__(self, subject: str, payload: bytes = b"", reply: str | None = None, headers=None):
        self.subject = subject
        self.payload = payload
        self.reply = reply
        self.headers = headers

    def __repr__(self):
        return f"Publish({self.subject!r}, {self.payload[:60]!r})"


class Batch:
    """Several steps the driver may run concurrently; it sends back a list
    with, for each step in order, its result or the NatsError it failed with
    (errors are values here, so one failure does not hide the others)."""

    __slots__ = ("steps",)

    def __init__(self, steps):
        self.steps = list(steps)

    def __repr__(self):
        return f"Batch({len(self.steps)} steps)"


def advance(op, value=None, error: BaseException | None = None):
    """Move an operation one step: ``("step", step)`` or ``("done", result)``.

    Start it with ``advance(op)``; then pass the step's result as ``value``
    or its failure as ``error``.  An error the operation raises propagates.
    """
    try:
        step = op.throw(error) if error is not None else op.send(value)
    except StopIteration as e:
        return "done", e.value
    return "step", step


def run_sync(op, handler):
    """Run an operation to its end with ``handler(step) -> result`` (which
    raises NatsError for a failed request).  For tests and blocking drivers."""
    kind, x = advance(op)
    while kind == "step":
        if isinstance(x, Batch):
            results = []
            for s in x.steps:
                try:
                    results.append(handler(s))
                except NatsError as e:
                    results.append(e)
            kind, x = advance(op, results)
            continue
        try:
            value = handler(x)
        except NatsError as e:
            kind, x = advance(op, error=e)
        else:
            kind, x = advance(op, value)
    return x


# ---------------------------------------------------------------- errors
# API error (code, err_code) -> the error nats-tcl documents (JsAPI.md "Error
# handling"); every other API error is ErrJSResponse.
JS_ERRORS: dict[tuple, str] = {
    (400, 10071): "ErrWrongLastSequence",
    (404, 10014): "ErrConsumerNotFound",
    (404, 10037): "ErrMsgNotFound",
    (404, 10059): "ErrStreamNotFound",
    (503, 10039): "ErrJetStreamNotEnabledForAccount",
}


def error_from_api(err: dict) -> NatsError:
    """The error for an API reply's ``error`` object.

    ``details`` carry ``code`` (HTTP-like), ``err_code`` (JetStream's),
    ``description``; ErrJSResponse also has ``errorcode`` = the Tcl error code
    ``{NATS ErrJSResponse code err_code}`` nats-tcl throws.
    """
    code, err_code = err.get("code"), err.get("err_code")
    text = err.get("description", "") or f"JetStream error {code}/{err_code}"
    name = JS_ERRORS.get((code, err_code), "ErrJSResponse")
    # (details may not go through make_error: its first parameter is named code)
    e = error_class(name)(text, code=code, err_code=err_code, description=text, api_code=code)
    if name == "ErrJSResponse":
        e.details["errorcode"] = ("NATS", "ErrJSResponse", code, err_code)
    return e


def check_js_error(resp) -> None:
    """Raise the mapped error when a decoded reply is an API error."""
    err = resp.get("error") if isinstance(resp, dict) else None
    if err:
        raise error_from_api(err)


class JsonFloat(float):
    """A JSON number with a fraction or exponent that remembers how the
    server wrote it (``text``): a float to Python, and shown as written
    where a face prints JSON values (Tcl: ``1e-3`` stays ``1e-3``)."""

    __slots__ = ("text",)

    def __new__(cls, text):
        obj = super().__new__(cls, text)
        obj.text = text
        return obj


def loads(data):
    """JSON of an API reply, numbers with a fraction as :class:`JsonFloat`."""
    return json.loads(data, parse_float=JsonFloat)


def parse_json(msg) -> dict:
    """The JSON body of an API reply Msg, checked.

    A 503 status (no responders) means JetStream is not there:
    ErrJetStreamNotEnabled, like nats-tcl's ApiRequest.  The ``type`` field
    is dropped.
    """
    if msg.status == 503:
        raise make_error("ErrJetStreamNotEnabled", "JetStream is not enabled in the server")
    if not msg.data:
        if msg.status:
            raise error_class("ErrJSResponse")(msg.description or f"status {msg.status}", code=msg.status,
                                               err_code=None, errorcode=("NATS", "ErrJSResponse", msg.status, 0))
        return {}
    try:
        resp = loads(msg.data)
    except ValueError:
        raise make_error("ErrJSResponse", f"Invalid JSON reply: {msg.data[:80]!r}") from None
    if not isinstance(resp, dict):
        raise make_error("ErrJSResponse", f"Unexpected JSON reply: {msg.data[:80]!r}")
    check_js_error(resp)
    resp.pop("type", None)
    return resp


def _api_reply(req: Request):
    """Operation: the reply Msg of an API request.  A core no-responders is
    ErrJetStreamNotEnabled (nobody serves this API prefix)."""
    try:
        return (yield req)
    except NatsError as e:
        if e.code == "ErrNoResponders":
            raise make_error("ErrJetStreamNotEnabled", "JetStream is not enabled in the server") from None
        raise


def api_call(req: Request):
    """Operation: one API request, its reply decoded and checked."""
    return parse_json((yield from _api_reply(req)))


def api_call_text(req: Request):
    """Operation: one API request whose result is the reply's JSON text as
    the server sent it, once checked for an error (nats-tcl's
    ``*_from_json`` methods)."""
    reply = yield from _api_reply(req)
    parse_json(reply)
    return reply.data.decode("utf-8", "replace")


# ---------------------------------------------------------------- units
_NS_PER_MS = 1_000_000


def ns2ms(d: dict, *keys) -> dict:
    """Convert the named ns fields of ``d`` to ms in place (nats-tcl's rule:
    only positive values; -1 "unlimited" and 0 stay)."""
    for k in keys:
        v = d.get(k)
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            d[k] = v // _NS_PER_MS
        elif isinstance(v, list):
            d[k] = [x // _NS_PER_MS if isinstance(x, int) and x > 0 else x for x in v]
    return d


def ms2ns(ms) -> int:
    return int(round(float(ms) * _NS_PER_MS)) if not isinstance(ms, int) else ms * _NS_PER_MS


_ISO = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|[-+]\d\d:?\d\d)?$")


_MONTH_DAY: dict = {}  # (year, month) -> the day number (since the epoch) of its first day
# "YYYY-MM-DDTHH:MM:SS" of a UTC time with a fraction (the server's form) ->
# its seconds since the epoch: the messages of one second share them
_WHOLE_SECONDS: dict = {}
_iso_ms = compiled("iso_ms")


def iso_to_ms(ts: str) -> int:
    """``2022-11-22T13:31:35.4514983Z`` -> ms since the epoch (nats::isotime_to_msec)."""
    if _iso_ms is not None:  # the server's form, compiled (natsproto.c); None: read here
        ms = _iso_ms(ts)
        if ms is not None:
            return ms
    return _iso_to_ms(ts)


def _iso_to_ms(ts: str) -> int:
    """:func:`iso_to_ms` in Python (the reference of the compiled iso_ms)."""
    if not ts:
        return 0
    if len(ts) > 20 and ts[19] == "." and ts[-1] == "Z":
        secs = _WHOLE_SECONDS.get(ts[:19])
        if secs is not None:
            frac = ts[20:-1]
            if frac.isascii() and frac.isdigit():
                return secs * 1000 + int(round(int(frac) / 10 ** len(frac) * 1000))
    m = _ISO.match(ts)
    if not m:
        raise make_error("ErrInvalidArg", f"Invalid time {ts}")
    y, mo, d, h, mi, sec = map(int, m.group(1, 2, 3, 4, 5, 6))
    if not (1 <= mo <= 12 and 1 <= d <= 31 and h <= 23 and mi <= 59 and sec <= 60):
        raise make_error("ErrInvalidArg", f"Invalid time {ts}")
    # calendar.timegm's sum, the day of the month's first day kept
    first = _MONTH_DAY.get((y, mo))
    if first is None:
        if len(_MONTH_DAY) > 1000:
            _MONTH_DAY.clear()
        first = _MONTH_DAY[(y, mo)] = calendar.timegm((y, mo, 1, 0, 0, 0, 0, 0, 0)) // 86400
    secs = ((first + d - 1) * 24 + h) * 3600 + mi * 60 + sec
    zone = m.group(8)
    if zone == "Z" and ts[19] == "." and m.group(7):
        if len(_WHOLE_SECONDS) > 1000:
            _WHOLE_SECONDS.clear()
        _WHOLE_SECONDS[ts[:19]] = secs
    if zone and zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        secs -= sign * (int(zone[1:3]) * 3600 + int(zone[-2:]) * 60)
    frac = m.group(7) or "0"
    return secs * 1000 + int(round(int(frac) / 10 ** len(frac) * 1000))


def ms_to_iso(ms: int) -> str:
    """ms since the epoch -> RFC 3339 UTC with ms (``opt_start_time`` etc.)."""
    dt = datetime.datetime.fromtimestamp(ms // 1000, datetime.timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"


# ---------------------------------------------------------------- names (ADR-6)
# nats-tcl's CheckFilenameSafe: letters, digits and - ! # $ % & ( ) + , : ; < = ? @ ^ _ ` | ~
_FILENAME_SAFE = re.compile(r"^[-\w!#$%&()+,:;<=?@^`|~]+$")


def filename_safe(name) -> bool:
    """ADR-6 "filename safe" names of streams and consumers: no dots,
    wildcards, slashes, whitespace or quotes."""
    return bool(_FILENAME_SAFE.match(str(name)))


def check_name(what: str, name) -> str:
    """ErrInvalidArg ``Invalid <what> name <name>`` unless filename safe."""
    if not isinstance(name, str) or not filename_safe(name):
        raise make_error("ErrInvalidArg", f"Invalid {what} name {name}")
    return name


# ---------------------------------------------------------------- stored messages
class StoredMsg:
    """A message read straight from a stream (STREAM.MSG.GET or DIRECT.GET),
    not through a consumer: no ack reply, but its sequence and time."""

    __slots__ = ("subject", "data", "headers", "seq", "time", "stream")

    def __init__(self, subject: str, data: bytes, headers: dict | None, seq: int, time: str,
                 stream: str | None = None):
        self.subject = subject
        self.data = data
        self.headers = headers
        self.seq = seq
        self.time = time        # RFC 3339, as the server sends it
        self.stream = stream

    @property
    def timestamp(self) -> int:
        """ms since the epoch (nats-tcl's ``nats::msg timestamp``)."""
        return iso_to_ms(self.time)

    def header(self, key: str, default=None):
        """The first value of header ``key`` (also of the asyncio face's
        Headers, whose own lookup gives first values)."""
        h = self.headers
        v = (dict.get(h, key) if isinstance(h, dict) else h.get(key)) if h else None
        if v:
            return v[0] if isinstance(v, list) else v
        return default

    def __repr__(self):
        return f"StoredMsg(seq={self.seq}, subject={self.subject!r}, data={self.data[:40]!r})"


# StoredMsg(subject, data, headers, seq, time, stream), made in C when compiled
# (its __init__ only stores its arguments, in the order of its slots)
_new_stored = StoredMsg if RecordMaker is None else RecordMaker(StoredMsg, StoredMsg.__slots__)


def stored_from_get(resp: dict, stream=None) -> StoredMsg:
    """The ``message`` of a STREAM.MSG.GET reply (base64 data and headers)."""
    from tclnats_py.engine.headers import parse_headers
    m = resp.get("message") or {}
    hdrs = base64.b64decode(m.get("hdrs") or "")
    return StoredMsg(m.get("subject", ""), base64.b64decode(m.get("data") or ""),
                     parse_headers(hdrs) if hdrs else None, m.get("seq", 0), m.get("time", ""), stream)


def stored_from_direct(msg, stream=None) -> StoredMsg:
    """A DIRECT.GET reply (ADR-31): the message itself, its coordinates in
    ``Nats-*`` headers (removed from the headers handed on, like nats-tcl).
    Status 404 -> ErrMsgNotFound, 408 -> ErrInvalidArg (a bad request),
    503 -> ErrNoResponders (nothing serves direct gets for that stream)."""
    hs = msg.headers
    # (msg.status without its lookups when the headers have no Status: the common reply)
    status = msg.status if hs and (not isinstance(hs, dict) or dict.__contains__(hs, "Status")) else 0
    if status == 404:
        raise make_error("ErrMsgNotFound", "no message found")
    if status == 408:
        raise make_error("ErrInvalidArg", "Invalid request")
    if status == 503:
        raise make_error("ErrNoResponders", "No responders available for request")
    if status:
        raise error_class("ErrJSResponse")(msg.description or f"status {status}", code=status, err_code=None)
    h = dict(hs or {})
    pop = h.pop
    subject = (pop("Nats-Subject", None) or [msg.subject])[0]
    seq = (pop("Nats-Sequence", None) or ["0"])[0]
    time = (pop("Nats-Time-Stamp", None) or [""])[0]
    stream = (pop("Nats-Stream", None) or [stream])[0]
    if h and isinstance(hs, dict) and type(hs) is not dict:
        h = type(hs)(h)  # the face's Headers stays its Headers
    return _new_stored(subject, msg.data, h or None, int(seq), time, stream)


# ---------------------------------------------------------------- the API
def _body(d: dict | None) -> bytes:
    if not d:
        return b""
    return json.dumps(d, separators=(",", ":")).encode()


def _opt(**kw) -> dict:
    return {k: v for k, v in kw.items() if v is not None}


class JsApi:
    """One JetStream API prefix and the operations on it.

    Every method named after an API call is an operation (a generator, see
    the module docstring); ``request`` builds a bare step.  Names are checked
    (ADR-6) before anything is sent.
    """

    #: ms for the requests that name no timeout (None: the driver's JetStream timeout)
    default_timeout: int | None = None

    def __init__(self, domain: str | None = None, prefix: str | None = None):
        self.prefix = api_prefix(domain, prefix)
        self.domain = domain if not prefix else None

    def with_timeout(self, timeout: int | None) -> JsApi:
        """This API whose requests that name no timeout wait ``timeout`` ms: a
        per-call deadline for every operation built on ``request`` (None: self)."""
        if timeout is None:
            return self
        other = copy.copy(self)
        other.default_timeout = timeout
        return other

    def __repr__(self):
        return f"JsApi({self.prefix!r})"

    @property
    def is_default(self) -> bool:
        return self.prefix == DEFAULT_API_PREFIX

    def subject(self, *tokens) -> str:
        return ".".join((self.prefix,) + tuple(str(t) for t in tokens))

    def request(self, tail: str, body=None, timeout: int | None = None, check_subject: bool = True) -> Request:
        payload = body if isinstance(body, (bytes, bytearray)) else _body(body)
        return Request(f"{self.prefix}.{tail}", bytes(payload), None,
                       self.default_timeout if timeout is None else timeout, check_subject)

    def call(self, tail: str, body=None, timeout: int | None = None, check_subject: bool = True):
        """Operation: any API call by its subject tail (``"STREAM.INFO.S"``)."""
        return (yield from api_call(self.request(tail, body, timeout, check_subject)))

    # -------------------------------------------------------- account
    def account_info(self):
        return (yield from self.call("INFO"))

    # -------------------------------------------------------- streams
    def stream_create_json(self, config_json: str):
        """Operation: create a stream from its config as JSON text; the
        reply's JSON text."""
        try:
            name = json.loads(config_json)["name"]
        except (ValueError, KeyError, TypeError):
            raise make_error("ErrInvalidArg", "Invalid stream configuration JSON") from None
        check_name("stream", name)
        return (yield from api_call_text(self.request(f"STREAM.CREATE.{name}", config_json.encode())))

    def stream_create(self, config: dict):
        name = check_name("stream", config.get("name"))
        return (yield from self.call(f"STREAM.CREATE.{name}", config))

    def stream_update(self, config: dict):
        name = check_name("stream", config.get("name"))
        return (yield from self.call(f"STREAM.UPDATE.{name}", config))

    def stream_info(self, stream: str, subjects_filter: str | None = None, deleted_details: bool | None = None):
        check_name("stream", stream)
        body = _opt(subjects_filter=subjects_filter, deleted_details=deleted_details)
        resp = yield from self.call(f"STREAM.INFO.{stream}", body)
        for k in ("total", "offset", "limit"):
            resp.pop(k, None)
        return resp

    def stream_delete(self, stream: str) -> Op[bool]:
        check_name("stream", stream)
        return bool((yield from self.call(f"STREAM.DELETE.{stream}")).get("success"))

    def stream_purge(self, stream: str, filter: str | None = None, keep: int | None = None,
                     seq: int | None = None) -> Op[int]:
        """ADR-10: all messages, or those on ``filter``, up to ``seq``
        (exclusive), or all but the last ``keep``; returns how many went."""
        check_name("stream", stream)
        if keep is not None and seq is not None:
            raise make_error("ErrInvalidArg", "keep and seq are mutually exclusive")
        if filter is not None and not valid_wildcard_subject(filter):
            raise make_error("ErrBadSubject", f"Invalid subject {filter}")
        for k, v in (("keep", keep), ("seq", seq)):
            if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 0):
                raise make_error("ErrInvalidArg", f"Invalid value for the pos_int option {k} : {v}")
        resp = yield from self.call(f"STREAM.PURGE.{stream}", _opt(filter=filter, keep=keep, seq=seq))
        return resp.get("purged", 0)

    def _paged(self, tail: str, key: str, body: dict):
        """Operation: every page of a NAMES/LIST call (offset paging)."""
        out: list = []
        while True:
            page = dict(body, offset=len(out)) if out else dict(body)
            resp = yield from self.call(tail, page or None)
            items = resp.get(key) or []
            out.extend(items)
            total = resp.get("total", 0)
            if not items or len(out) >= total:
                return out

    def stream_names(self, subject: str | None = None) -> Op[list]:
        if subject is not None and not valid_wildcard_subject(subject):
            raise make_error("ErrBadSubject", f"Invalid subject {subject}")
        return (yield from self._paged("STREAM.NAMES", "streams", _opt(subject=subject)))

    def stream_list(self, subject: str | None = None) -> Op[list]:
        return (yield from self._paged("STREAM.LIST", "streams", _opt(subject=subject)))

    # -------------------------------------------------------- messages
    def msg_get(self, stream: str, seq: int | None = None, last_by_subj: str | None = None,
                next_by_subj: str | None = None) -> Op[StoredMsg]:
        check_name("stream", stream)
        _check_get(seq, last_by_subj, next_by_subj)
        resp = yield from self.call(f"STREAM.MSG.GET.{stream}",
                                    _opt(seq=seq, last_by_subj=last_by_subj, next_by_subj=next_by_subj))
        return stored_from_get(resp, stream)

    def direct_get_request(self, stream: str, seq: int | None = None, last_by_subj: str | None = None,
                           next_by_subj: str | None = None) -> Request:
        """ADR-31: last-by-subject rides in the subject, the rest in JSON."""
        check_name("stream", stream)
        _check_get(seq, last_by_subj, next_by_subj)
        if last_by_subj is not None and seq is None and next_by_subj is None:
            return Request(self.subject("DIRECT.GET", stream, last_by_subj))
        return self.request(f"DIRECT.GET.{stream}", _opt(seq=seq, next_by_subj=next_by_subj))

    def direct_get(self, stream: str, seq: int | None = None, last_by_subj: str | None = None,
                   next_by_subj: str | None = None) -> Op[StoredMsg]:
        reply = yield self.direct_get_request(stream, seq, last_by_subj, next_by_subj)
        return stored_from_direct(reply, stream)

    def msg_delete(self, stream: str, seq: int, no_erase: bool = True) -> Op[bool]:
        check_name("stream", stream)
        if not isinstance(seq, int) or isinstance(seq, bool):
            raise make_error("ErrInvalidArg", "Option seq is required")
        if seq < 1:
            raise make_error("ErrInvalidArg", f"Invalid value for the pos_int option seq : {seq}")
        resp = yield from self.call(f"STREAM.MSG.DELETE.{stream}", {"seq": seq, "no_erase": bool(no_erase)})
        return bool(resp.get("success"))

    # -------------------------------------------------------- consumers
    def consumer_create_request(self, stream: str, config: dict, action: str | None = "create",
                                server_version: str | None = None, legacy_durable: bool = False,
                                wildcard_filter_token: bool = True) -> Request:
        """The CONSUMER.CREATE request for ``config`` (wire units).

        Subject, as nats-tcl chooses it: ``CONSUMER.CREATE.<stream>.<name>
        [.<filter>]`` for a named consumer on a server >= 2.9 (the single
        filter subject rides along unless it is ``>``; with
        ``wildcard_filter_token`` False a filter with wildcards is left out,
        for drivers that cannot skip subject checks);
        ``CONSUMER.DURABLE.CREATE.<stream>.<durable>`` for a durable when
        ``legacy_durable`` (nats-tcl's choice; else durables are named
        consumers); ``CONSUMER.CREATE.<stream>`` for an ephemeral one.
        ``action`` ("create", "update", or None for create-or-update) goes
        out only to servers >= 2.10 (or an unknown version).
        """
        check_name("stream", stream)
        name, durable = config.get("name"), config.get("durable_name")
        if name is not None and durable is not None and name != durable:
            raise make_error("ErrInvalidArg", "-name conflicts with -durable_name")
        for n in (name, durable):
            if n is not None:
                check_name("consumer", n)
        new_api = server_version is None or _version(server_version) >= (2, 9)
        check = True
        if durable is not None and (legacy_durable or not new_api):
            tail = f"CONSUMER.DURABLE.CREATE.{stream}.{durable}"
        elif (name or durable) and new_api:
            tail = f"CONSUMER.CREATE.{stream}.{name or durable}"
            fs = config.get("filter_subject")
            if fs and fs != ">" and not config.get("filter_subjects"):
                wild = "*" in fs.split(".") or ">" in fs.split(".")
                if not wild or wildcard_filter_token:
                    tail += f".{fs}"
                    check = not wild
        else:
            tail = f"CONSUMER.CREATE.{stream}"
        body = {"stream_name": stream, "config": config}
        if action and (server_version is None or _version(server_version) >= (2, 10)):
            body["action"] = action
        return self.request(tail, body, check_subject=check)

    def consumer_create_json(self, stream: str, durable: str, config_json: str):
        """Operation: create the durable consumer ``durable`` from its config
        as JSON text (sent as it is); the reply's JSON text."""
        check_name("stream", stream)
        check_name("consumer", durable)
        try:
            ok = isinstance(json.loads(config_json), dict)
        except (ValueError, TypeError):
            ok = False
        if not ok:
            raise make_error("ErrInvalidArg", "Invalid consumer configuration JSON")
        payload = '{"stream_name":' + json.dumps(stream) + ',"config":' + config_json + "}"
        return (yield from api_call_text(self.request(f"CONSUMER.DURABLE.CREATE.{stream}.{durable}",
                                                      payload.encode())))

    def consumer_create(self, stream: str, config: dict, action: str | None = "create", **kw):
        return (yield from api_call(self.consumer_create_request(stream, config, action, **kw)))

    def consumer_info(self, stream: str, consumer: str):
        check_name("stream", stream)
        check_name("consumer", consumer)
        return (yield from self.call(f"CONSUMER.INFO.{stream}.{consumer}"))

    def consumer_delete(self, stream: str, consumer: str) -> Op[bool]:
        check_name("stream", stream)
        check_name("consumer", consumer)
        return bool((yield from self.call(f"CONSUMER.DELETE.{stream}.{consumer}")).get("success"))

    def consumer_names(self, stream: str) -> Op[list]:
        check_name("stream", stream)
        return (yield from self._paged(f"CONSUMER.NAMES.{stream}", "consumers", {}))

    def consumer_list(self, stream: str) -> Op[list]:
        check_name("stream", stream)
        return (yield from self._paged(f"CONSUMER.LIST.{stream}", "consumers", {}))

    def next_subject(self, stream: str, consumer: str) -> str:
        """Where pull requests go (ADR-13)."""
        return self.subject("CONSUMER.MSG.NEXT", stream, consumer)


def natspy_consumer_create_tail(stream: str, name: str | None, durable: str | None,
                                filter_subject: str | None, server: tuple[int, int]) -> str:
    """The API subject tail (after the prefix) that creates a consumer, as
    nats-py 2.x picks it: ``CONSUMER.CREATE.<stream>.<name>[.<filter>]`` for
    a named consumer on a server ``(major, minor)`` >= 2.9, the filter
    appended only when it has no wildcard token; else
    ``CONSUMER.DURABLE.CREATE.<stream>.<durable>`` for a durable; else
    ``CONSUMER.CREATE.<stream>`` (ephemeral).  nats-tcl's choice is
    :meth:`JsApi.consumer_create_request`."""
    if name and server >= (2, 9):
        fs = filter_subject or ""
        literal = fs != "" and not ({"*", ">"} & set(fs.split(".")))
        return f"CONSUMER.CREATE.{stream}.{name}" + (f".{fs}" if literal else "")
    if durable:
        return f"CONSUMER.DURABLE.CREATE.{stream}.{durable}"
    return f"CONSUMER.CREATE.{stream}"


def _check_get(seq, last_by_subj, next_by_subj) -> None:
    if seq is None and last_by_subj is None and next_by_subj is None:
        raise make_error("ErrInvalidArg", "One of seq, last_by_subj or next_by_subj is required")
    if last_by_subj is not None and (seq is not None or next_by_subj is not None):
        raise make_error("ErrInvalidArg", "last_by_subj excludes seq and next_by_subj")
    if seq is not None and (isinstance(seq, bool) or not isinstance(seq, int) or seq < 1):
        raise make_error("ErrInvalidArg", f"Invalid value for the pos_int option seq : {seq}")
    for subj in (last_by_subj, next_by_subj):
        if subj is not None and not valid_wildcard_subject(subj):
            raise make_error("ErrBadSubject", f"Invalid subject {subj}")


def _version(v: str) -> tuple:
    nums = []
    for part in str(v).split("-")[0].split("."):
        try:
            nums.append(int(part))
        except ValueError:
            break
    return tuple(nums)
