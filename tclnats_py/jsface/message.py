"""A message delivered by a consumer: its metadata (:class:`MsgMetadata`,
nats.go's jetstream.MsgMetadata and nats-py's Msg.Metadata) and what both
faces' JsMsg share (:class:`JsMsgBase`)."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, NamedTuple

from tclnats_py.errors import make_error
from tclnats_py.engine.validate import check_seconds, check_str, check_timeout
from tclnats_py.engine.js.ack import ACK, AckState, ack_subject, nak_payload, term_payload
from tclnats_py.engine.js.meta import metadata_fields, parse_metadata

if TYPE_CHECKING:  # names used in annotations only
    from typing import Any as JetStream  # either face's context: .client (publish, request) and .timeout
    from tclnats_py.engine.connection import Msg


class SequencePair(NamedTuple):
    """The message's sequence in its stream and in its consumer."""
    stream: int
    consumer: int


class MsgMetadata(NamedTuple):
    """A consumed message's metadata, from its ``$JS.ACK`` reply subject:
    nats.go's jetstream.MsgMetadata and nats-py's Msg.Metadata (same names).
    ``timestamp`` is an aware datetime (UTC); ``domain`` is None when the
    server sent none (an old-style reply), "" for the default domain."""
    sequence: SequencePair
    num_delivered: int
    num_pending: int
    timestamp: datetime.datetime
    stream: str
    consumer: str
    domain: str | None = None


def message_metadata(reply: str, subject: str = "") -> MsgMetadata:
    """The :class:`MsgMetadata` of a ``$JS.ACK`` reply subject (the engine
    parses it); ErrNotJSMessage for any other reply."""
    domain, stream, consumer, delivered, sseq, cseq, ts_ns, pending = metadata_fields(reply, subject)
    return MsgMetadata(SequencePair(sseq, cseq), delivered, pending,
                       datetime.datetime.fromtimestamp(ts_ns / 1_000_000_000, datetime.timezone.utc),
                       stream, consumer, None if domain is None else ("" if domain == "_" else domain))


class JsMsgBase:
    """A message from a consumer: its metadata and what the ack family of
    both Python faces shares (the checks, the payloads, the publish); the
    faces add ``ack``, ``nak`` ... (awaitable in one, blocking in the other)."""

    __slots__ = ("_js", "msg", "_ack", "_meta", "_md")

    def __init__(self, js: "JetStream", msg: Msg, meta: dict | None = None):
        self._js = js
        self.msg = msg
        self._ack = AckState()
        self._meta = meta  # the engine's dict (nats-tcl's keys), given or parsed when the engine needs it
        self._md: MsgMetadata | None = None

    subject = property(lambda self: self.msg.subject)
    data = property(lambda self: self.msg.data)
    headers = property(lambda self: self.msg.headers)
    reply = property(lambda self: self.msg.reply)

    def header(self, key: str, default: str | None = None) -> str | None:
        """The first value of header ``key``, or ``default``."""
        return self.msg.header(key, default)

    @property
    def metadata(self) -> MsgMetadata:
        """:class:`MsgMetadata`: ``sequence.stream``, ``sequence.consumer``,
        ``num_delivered``, ``num_pending``, ``timestamp`` (a datetime),
        ``stream``, ``consumer``, ``domain``; parsed on first use.
        ErrNotJSMessage when the reply is not a JetStream ack subject."""
        md = self._md
        if md is None:
            md = self._md = message_metadata(self.msg.reply or "", self.msg.subject)
        return md

    def _engine_meta(self) -> dict:
        """The engine's metadata dict (nats-tcl's keys), what the engine's
        KV and Object Store watchers take."""
        if self._meta is None:
            self._meta = parse_metadata(self.msg.reply or "", self.msg.subject)
        return self._meta

    def _send(self, payload: bytes) -> None:
        self._ack.check(payload)
        self._js.client.publish(ack_subject(self.msg), payload)
        self._ack.done(payload)

    def _ack_sync_request(self, timeout: float | None) -> tuple[str, float]:
        """The subject and timeout of an ``ack_sync``'s request (checked)."""
        check_timeout(timeout)
        self._ack.check(ACK)
        return ack_subject(self.msg), timeout or self._js.timeout

    def _nak(self, delay: float | None) -> None:
        check_seconds("delay", delay)
        self._send(nak_payload(None if delay is None else delay * 1000))

    def _term(self, reason: str | None) -> None:
        check_str("reason", reason)
        if reason and ("\r" in reason or "\n" in reason):
            raise make_error("ErrInvalidArg", "Invalid reason: it contains a line break")
        self._send(term_payload(reason))

    @property
    def acked(self) -> bool:
        return self._ack.final is not None

    def __repr__(self):
        return f"{type(self).__name__}({self.msg!r})"
