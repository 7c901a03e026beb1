"""Publishing to streams: expectation headers, acks, and many acks in flight.

A JetStream publish is a core request to the stream's subject; the reply is
a PubAck JSON (``{"stream", "seq", "duplicate"?, "domain"?}``) or an API
error.  No responders means no stream listens on the subject:
ErrNoResponders, as nats-tcl raises it.

:func:`publish` is the operation for one publish; :class:`AsyncPublisher`
is the state of many publishes in flight on one wildcard reply subject
(nats.go's PublishAsync), driven by the asyncio face's ``publish_async``.
"""

from __future__ import annotations

import re
import json

from tclnats_py.errors import NatsError, error_class, make_error
from tclnats_py.engine.js.api import Publish, Request, check_js_error
from tclnats_py.engine.subjects import valid_wildcard_subject
from tclnats_py.engine.protocol import compiled

__all__ = ["publish_headers", "parse_ack", "parse_ack_fast", "plain_ack", "ack_seq", "plain_ack_seq", "ack_error_dict",
           "publish", "AsyncPublisher", "stalled", "STALL_WAIT_MS",
           "MSG_ID", "EXPECTED_STREAM", "EXPECTED_LAST_SEQ", "EXPECTED_LAST_SUBJECT_SEQ", "EXPECTED_LAST_MSG_ID",
           "MSG_TTL", "ROLLUP", "EXPECTED_LAST_SUBJECT_SEQ_SUBJECT", "BATCH_ID", "BATCH_SEQUENCE", "BATCH_COMMIT",
           "SCHEDULE_HEADERS", "SCHEDULER", "ttl_from_ms", "ttl_from_seconds"]

MSG_ID = "Nats-Msg-Id"
EXPECTED_STREAM = "Nats-Expected-Stream"
EXPECTED_LAST_SEQ = "Nats-Expected-Last-Sequence"
EXPECTED_LAST_SUBJECT_SEQ = "Nats-Expected-Last-Subject-Sequence"
EXPECTED_LAST_MSG_ID = "Nats-Expected-Last-Msg-Id"
MSG_TTL = "Nats-TTL"
ROLLUP = "Nats-Rollup"
# the subject (a wildcard may match many) whose last sequence
# EXPECTED_LAST_SUBJECT_SEQ checks, instead of the published one (2.11)
EXPECTED_LAST_SUBJECT_SEQ_SUBJECT = "Nats-Expected-Last-Subject-Sequence-Subject"
# an atomic batch's messages (ADR-50): its id, each one's place, the last one's commit
BATCH_ID, BATCH_SEQUENCE, BATCH_COMMIT = (f"Nats-Batch-{part}" for part in ("Id", "Sequence", "Commit"))
# a scheduled message's headers (ADR-51), by the part after "Nats-Schedule":
# "" the schedule itself, "-Next", "-Target", "-Source", "-TTL", "-Time-Zone", "-Rollup";
# the server marks what it produced with "Nats-Scheduler"
SCHEDULE_HEADERS = {part: "Nats-Schedule" + part
                    for part in ("", "-Next", "-Target", "-Source", "-TTL", "-Time-Zone", "-Rollup")}
SCHEDULER = "Nats-Scheduler"


def _bad_ttl(v):
    return make_error("ErrInvalidArg", f"Invalid TTL {v!r}: 1 second or more, or never")


def ttl_from_seconds(v) -> str:
    """The ``Nats-TTL`` value (ADR-43) of a TTL in seconds (an int, or a
    float of whole seconds or more), ``"never"``, or a Go duration string as
    the server takes it (``"1h"``); the server's minimum is 1 s."""
    if isinstance(v, str):
        if not v or not v.strip() or v != v.strip():
            raise _bad_ttl(v)
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 1 or v != v or v == float("inf"):
        raise _bad_ttl(v)
    return str(int(v))


def ttl_from_ms(v) -> str:
    """The ``Nats-TTL`` value of a TTL in ms (the Tcl face's ``-ttl``): whole
    seconds as seconds, else a Go duration in ms (the server keeps whole
    seconds); ``never`` as it is."""
    if isinstance(v, str) and v.strip().lower() == "never":
        return "never"
    try:
        ms = int(str(v).strip()) if not isinstance(v, bool) else None
    except ValueError:
        ms = None
    if ms is None or ms < 1000:
        raise _bad_ttl(v)
    return str(ms // 1000) if ms % 1000 == 0 else f"{ms}ms"


def publish_headers(headers=None, *, msg_id: str | None = None, expected_stream: str | None = None,
                    expected_last_seq: int | None = None, expected_last_subject_seq: int | None = None,
                    expected_last_msg_id: str | None = None, ttl: str | int | None = None,
                    expected_last_subject_seq_subject: str | None = None):
    """The message headers with the expectations added (ADR-4 shape:
    key -> list of values), or None when there are none.  0 is a real
    expectation for the sequences (``0``: no message yet on the subject).
    ``expected_last_subject_seq_subject`` names the subject (wildcards
    allowed) whose last sequence ``expected_last_subject_seq`` is; it needs
    ``expected_last_subject_seq``."""
    if expected_last_subject_seq_subject is not None:
        if expected_last_subject_seq is None:
            raise make_error("ErrInvalidArg", "expected_last_subject_seq_subject needs expected_last_subject_seq")
        if not isinstance(expected_last_subject_seq_subject, str) or not valid_wildcard_subject(
                expected_last_subject_seq_subject):
            raise make_error("ErrBadSubject", f"Invalid subject {expected_last_subject_seq_subject}")
    out: dict = {}
    for k, v in (dict.items(headers) if isinstance(headers, dict) else (headers or {}).items()):
        out[k] = list(v) if isinstance(v, (list, tuple)) else [v]
    for k, v in ((MSG_ID, msg_id), (EXPECTED_STREAM, expected_stream), (EXPECTED_LAST_SEQ, expected_last_seq),
                 (EXPECTED_LAST_SUBJECT_SEQ, expected_last_subject_seq),
                 (EXPECTED_LAST_MSG_ID, expected_last_msg_id), (MSG_TTL, ttl),
                 (EXPECTED_LAST_SUBJECT_SEQ_SUBJECT, expected_last_subject_seq_subject)):
        if v is not None:
            if v == "" or (isinstance(v, int) and not isinstance(v, bool) and v < 0):
                raise make_error("ErrInvalidArg", f"Invalid value for {k}: {v!r}")
            out[k] = [str(v)]
    return out or None


def parse_ack(msg) -> dict:
    """The PubAck of a publish reply; raises ErrNoResponders (503), the
    mapped API error (ErrWrongLastSequence ...) or ErrJSResponse."""
    if msg.status == 503:
        raise make_error("ErrNoResponders", "No responders available for request")
    if not msg.data:
        raise error_class("ErrJSResponse")(msg.description or "Empty reply to a JetStream publish",
                                           code=msg.status or None, err_code=None)
    try:
        resp = json.loads(msg.data)
    except ValueError:
        raise make_error("ErrJSResponse", f"Invalid publish reply: {msg.data[:80]!r}") from None
    if not isinstance(resp, dict):
        raise make_error("ErrJSResponse", f"Invalid publish reply: {msg.data[:80]!r}")
    check_js_error(resp)
    if "stream" not in resp or "seq" not in resp:
        raise make_error("ErrJSResponse", f"Invalid publish reply: {msg.data[:80]!r}")
    return resp


# The plain success reply of a publish, as the server writes it: stream,
# [domain,] seq[, duplicate].  Anything else (errors, other fields, other
# spacing) goes through json in parse_ack.
_PLAIN_ACK = re.compile(rb'\{"stream":"([^"\\]+)",(?:"domain":"([^"\\]*)",)?"seq":(\d+)(,"duplicate": ?true)?\}')
# plain_ack(data[, cls]): the dict (made cls()) parse_ack_fast makes of a reply
# _PLAIN_ACK matches, else None (natsproto.c; None when not compiled).  A face
# may call it before parse_ack_fast for a reply without headers.
plain_ack = _plain_ack = compiled("plain_ack")


def parse_ack_fast(msg, cls: type = dict) -> dict:
    """:func:`parse_ack` without json for the plain success reply (the
    common case when publishing fast); the same result and errors.
    ``cls``: a face's dict subclass (PubAck) to make the result."""
    if msg.headers is None:
        if _plain_ack is not None:  # the compiled reading of _PLAIN_ACK's replies
            ack = _plain_ack(msg.data, cls)
            if ack is not None:
                return ack
        else:
            ack = _parse_plain_ack(msg.data)
            if ack is not None:
                return ack if cls is dict else cls(ack)
    ack = parse_ack(msg)
    return ack if cls is dict else cls(ack)


# plain_ack_seq(data): plain_ack(data)["seq"] of a plain ack with ASCII names,
# else None (natsproto.c; None when not compiled).  A face may call it before
# ack_seq for a reply without headers.
plain_ack_seq = _plain_ack_seq = compiled("plain_ack_seq")


def ack_seq(msg) -> int:
    """``parse_ack_fast(msg)["seq"]``: the sequence a publish's reply gives
    (a KV put's revision), with its errors; the plain ack read without a dict."""
    if msg.headers is None and _plain_ack_seq is not None:
        seq = _plain_ack_seq(msg.data)
        if seq is not None:
            return seq
    return parse_ack_fast(msg)["seq"]


def _parse_plain_ack(data: bytes) -> dict | None:
    """The PubAck of a reply _PLAIN_ACK matches (the reference of the
    compiled plain_ack), else None."""
    m = _PLAIN_ACK.fullmatch(data)
    if m is None:
        return None
    stream, domain, seq, dup = m.groups()
    ack = {"stream": stream.decode(), "seq": int(seq)}
    if domain is not None:
        ack["domain"] = domain.decode()
    if dup is not None:
        ack["duplicate"] = True
    return ack


def ack_error_dict(err: NatsError) -> dict:
    """nats-tcl's ``pubError`` for a publish callback: code, err_code, errorMessage."""
    d = err.details
    return {"code": d.get("code"), "err_code": d.get("err_code"), "errorMessage": str(err)}


def publish(subject: str, payload: bytes = b"", headers=None, timeout: int | None = None):
    """Operation: publish and wait for the PubAck (a dict)."""
    reply = yield Request(subject, payload, headers, timeout)
    return parse_ack(reply)


# how long a publish waits for room among max_pending acks in flight (nats.go's default)
STALL_WAIT_MS = 200


def stalled(max_pending: int, stall_ms) -> NatsError:
    """The error of a publish that waited ``stall_ms`` for one of
    ``max_pending`` acks in flight to come back (nats.go's ErrTooManyStalledMsgs)."""
    return make_error("ErrTooManyStalledMsgs",
                      f"Stalled with too many outstanding async published messages ({max_pending} "
                      f"waiting for their ack for {stall_ms} ms): the message was not published")


class AsyncPublisher:
    """Publishes in flight, each waiting for its ack on ``<inbox>.<id>``
    (nats.go's PublishAsync), at most ``max_pending`` at a time.

    Sans-IO: times (``now``, ``timeout``, deadlines) are numbers on the
    driver's clock, in one unit of its choosing.  The driver subscribes to
    :attr:`subscription_subject` once, and:

    * while :attr:`full`, a publisher waits (up to its stall time) for an
      ack to make room: the driver's waiting, this class's rule;
    * ``reply = add(subject, payload, headers, handle, timeout, now)``:
      publish with ``reply`` now; ErrTooManyStalledMsgs (:func:`stalled`)
      when it is still full, so nothing waits unbounded in memory;
    * ``on_reply(msg)`` for each message of the subscription: ``(handle,
      pub_ack, None)`` or ``(handle, None, error)``; None for a late reply;
    * ``expire(now)`` when its timer for :meth:`next_deadline` fires: the
      ``(handle, ErrTimeout)`` of each publish past its deadline;
    * ``forget(reply)`` when sending failed (the handle back, to fail it);
    * ``fail_all(err)`` when the connection closed: every handle left.

    ``handle`` is the driver's own object (a future, a Tcl callback).
    """

    __slots__ = ("inbox", "prefix_len", "max_pending", "inflight", "_next")

    def __init__(self, inbox: str, max_pending: int = 4000):
        if max_pending.__class__ is not int or max_pending < 1:
            raise make_error("ErrInvalidArg", f"Invalid max_pending {max_pending!r}")
        self.inbox = inbox
        self.prefix_len = len(inbox) + 1
        self.max_pending = max_pending
        self.inflight: dict = {}                          # id -> (handle, deadline)
        self._next = 0

    @property
    def subscription_subject(self) -> str:
        return self.inbox + ".*"

    @property
    def pending(self) -> int:
        """Publishes waiting for their ack."""
        return len(self.inflight)

    @property
    def full(self) -> bool:
        """``max_pending`` acks are outstanding: a new publish must wait."""
        return len(self.inflight) >= self.max_pending

    def add(self, subject: str, payload: bytes, headers, handle, timeout, now, stall_ms=0):
        if len(self.inflight) >= self.max_pending:
            raise stalled(self.max_pending, stall_ms)
        self._next += 1
        pid = str(self._next)
        self.inflight[pid] = (handle, now + timeout)
        return self.inbox + "." + pid

    def forget(self, reply: str):
        """A publish that could not be sent leaves; its handle, or None."""
        entry = self.inflight.pop(reply[self.prefix_len:], None)
        return None if entry is None else entry[0]

    def on_reply(self, msg):
        entry = self.inflight.pop(msg.subject[self.prefix_len:], None)
        if entry is None:
            return None  # a late reply to a publish that timed out, or not ours
        try:
            return entry[0], parse_ack_fast(msg), None
        except NatsError as e:
            return entry[0], None, e

    def next_deadline(self):
        """The earliest deadline of a publish in flight, None without one."""
        if not self.inflight:
            return None
        return min(d for _, d in self.inflight.values())

    def expire(self, now) -> list:
        late = [pid for pid, (_, d) in self.inflight.items() if d <= now]
        out = []
        for pid in late:
            out.append((self.inflight.pop(pid)[0], make_error("ErrTimeout", "Timeout waiting for a publish ack")))
        return out

    def fail_all(self, err: NatsError) -> list:
        """Everything still in flight leaves: the handles, to fail with ``err``."""
        handles = [h for h, _ in self.inflight.values()]
        self.inflight.clear()
        return handles
