"""Publishing to streams: expectation headers, acks, and many acks in flight.

A JetStream publish is a core request to the stream's subject; the reply is
a PubAck JSON (``{"stream", "seq", "duplicate"?, "domain"?}``) or an API
error.  No responders means no stream listens on the subject:
ErrNoResponders, as nats-tcl raises it.

:func:`publish` is the operation for one publish; :class:`AsyncPublisher`
is the state of many publishes in flight on one wildcard reply subject
(nats.go's PublishAsync): the driver subscribes to ``inbox + ".*"`` once,
sends what :meth:`AsyncPublisher.add` returns, feeds replies to
:meth:`~AsyncPublisher.on_reply` and timeouts to
:meth:`~AsyncPublisher.on_timeout`.
"""

from __future__ import annotations

import collections
import re
import json

from .._errors import NatsError, error_class, make_error
from .api import Publish, Request, check_js_error

__all__ = ["publish_headers", "parse_ack", "ack_error_dict", "publish", "AsyncPublisher",
           "MSG_ID", "EXPECTED_STREAM", "EXPECTED_LAST_SEQ", "EXPECTED_LAST_SUBJECT_SEQ", "EXPECTED_LAST_MSG_ID",
           "MSG_TTL", "ROLLUP"]

MSG_ID = "Nats-Msg-Id"
EXPECTED_STREAM = "Nats-Expected-Stream"
EXPECTED_LAST_SEQ = "Nats-Expected-Last-Sequence"
EXPECTED_LAST_SUBJECT_SEQ = "Nats-Expected-Last-Subject-Sequence"
EXPECTED_LAST_MSG_ID = "Nats-Expected-Last-Msg-Id"
MSG_TTL = "Nats-TTL"
ROLLUP = "Nats-Rollup"


def publish_headers(headers=None, *, msg_id: str | None = None, expected_stream: str | None = None,
                    expected_last_seq: int | None = None, expected_last_subject_seq: int | None = None,
                    expected_last_msg_id: str | None = None, ttl: str | int | None = None):
    """The message headers with the expectations added (ADR-4 shape:
    key -> list of values), or None when there are none.  0 is a real
    expectation for the sequences (``0``: no message yet on the subject)."""
    out: dict = {}
    for k, v in (headers or {}).items():
        out[k] = list(v) if isinstance(v, (list, tuple)) else [v]
    for k, v in ((MSG_ID, msg_id), (EXPECTED_STREAM, expected_stream), (EXPECTED_LAST_SEQ, expected_last_seq),
                 (EXPECTED_LAST_SUBJECT_SEQ, expected_last_subject_seq),
                 (EXPECTED_LAST_MSG_ID, expected_last_msg_id), (MSG_TTL, ttl)):
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


def parse_ack_fast(msg) -> dict:
    """:func:`parse_ack` without json for the plain success reply (the
    common case when publishing fast); the same result and errors."""
    if msg.headers is None:
        m = _PLAIN_ACK.fullmatch(msg.data)
        if m is not None:
            stream, domain, seq, dup = m.groups()
            ack = {"stream": stream.decode(), "seq": int(seq)}
            if domain is not None:
                ack["domain"] = domain.decode()
            if dup is not None:
                ack["duplicate"] = True
            return ack
    return parse_ack(msg)


def ack_error_dict(err: NatsError) -> dict:
    """nats-tcl's ``pubError`` for a publish callback: code, err_code, errorMessage."""
    d = err.details
    return {"code": d.get("code"), "err_code": d.get("err_code"), "errorMessage": str(err)}


def publish(subject: str, payload: bytes = b"", headers=None, timeout: int | None = None):
    """Operation: publish and wait for the PubAck (a dict)."""
    reply = yield Request(subject, payload, headers, timeout)
    return parse_ack(reply)


class AsyncPublisher:
    """Publishes in flight, each waiting for its ack on ``<inbox>.<id>``.

    ``add`` returns ``(pid, step)``: the step (a Publish with the reply
    subject set) to send now, or None when ``max_pending`` acks are already
    outstanding; the publish is then queued and comes back as a step from a
    later ``on_reply``/``on_timeout`` (so a producer faster than the server
    is held back without losing anything).  ``handle`` is the driver's own
    object (a future, a Tcl callback) handed back with the outcome.

    Outcomes are events: ``("ack", handle, pub_ack)``, ``("error", handle,
    err)``, and ``("send", pid, step)`` for a queued publish now due.
    """

    def __init__(self, inbox: str, max_pending: int = 4000):
        if max_pending < 1:
            raise make_error("ErrInvalidArg", f"Invalid max_pending {max_pending}")
        self.inbox = inbox
        self.max_pending = max_pending
        self._next = 0
        self._inflight: dict[str, object] = {}          # pid -> handle
        self._queued: collections.deque = collections.deque()  # (pid, step, handle)

    @property
    def subscription_subject(self) -> str:
        return self.inbox + ".*"

    @property
    def pending(self) -> int:
        """Publishes not finished yet (in flight or queued)."""
        return len(self._inflight) + len(self._queued)

    @property
    def inflight(self) -> int:
        return len(self._inflight)

    def add(self, subject: str, payload: bytes = b"", headers=None, handle=None):
        self._next += 1
        pid = str(self._next)
        step = Publish(subject, payload, f"{self.inbox}.{pid}", headers)
        if len(self._inflight) >= self.max_pending:
            self._queued.append((pid, step, handle))
            return pid, None
        self._inflight[pid] = handle
        return pid, step

    def handle_of(self, pid: str):
        """The handle of a publish in flight (None if it is not)."""
        return self._inflight.get(pid)

    def _refill(self, events: list) -> None:
        while self._queued and len(self._inflight) < self.max_pending:
            pid, step, handle = self._queued.popleft()
            self._inflight[pid] = handle
            events.append(("send", pid, step))

    def on_reply(self, msg) -> list:
        """A message on the reply subscription."""
        pid = msg.subject.rpartition(".")[2]
        handle = self._inflight.pop(pid, None) if pid in self._inflight else _MISSING
        events: list = []
        if handle is _MISSING:
            return events  # a late reply to a timed-out publish
        try:
            events.append(("ack", handle, parse_ack(msg)))
        except NatsError as e:
            events.append(("error", handle, e))
        self._refill(events)
        return events

    def on_timeout(self, pid: str) -> list:
        """The driver's timer for ``pid`` fired (armed when its step was sent)."""
        events: list = []
        if pid in self._inflight:
            handle = self._inflight.pop(pid)
            events.append(("error", handle, make_error("ErrTimeout", "Timeout waiting for a publish ack")))
            self._refill(events)
        return events

    def fail_all(self, err: NatsError) -> list:
        """Everything still pending fails with ``err`` (the connection closed)."""
        events = [("error", h, err) for h in self._inflight.values()]
        events += [("error", h, err) for _, _, h in self._queued]
        self._inflight.clear()
        self._queued.clear()
        return events


_MISSING = object()
