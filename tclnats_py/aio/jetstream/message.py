"""JsMsg: a message delivered by a consumer, with its acks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tclnats_py.errors import make_error
from tclnats_py.engine.validate import check_seconds, check_str, check_timeout
from tclnats_py.engine.js.ack import ACK, WPI, AckState, ack_subject, nak_payload, term_payload
from tclnats_py.engine.js.meta import parse_metadata

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.aio.jetstream.context import JetStream
    from tclnats_py.engine.connection import Msg


class JsMsg:
    """A message from a consumer: its metadata and the ack family."""

    __slots__ = ("_js", "msg", "_ack", "_meta")

    def __init__(self, js: "JetStream", msg: Msg, meta: dict | None = None):
        self._js = js
        self.msg = msg
        self._ack = AckState()
        self._meta = meta

    subject = property(lambda self: self.msg.subject)
    data = property(lambda self: self.msg.data)
    headers = property(lambda self: self.msg.headers)
    reply = property(lambda self: self.msg.reply)

    def header(self, key: str, default: str | None = None) -> str | None:
        """The first value of header ``key``, or ``default``."""
        return self.msg.header(key, default)

    @property
    def metadata(self) -> dict:
        """nats-tcl's ``nats::metadata``: stream, consumer, num_delivered,
        stream_seq, consumer_seq, timestamp (ms), num_pending (+ domain)."""
        if self._meta is None:
            self._meta = parse_metadata(self.msg.reply or "", self.msg.subject)
        return self._meta

    def _send(self, payload: bytes) -> None:
        self._ack.check(payload)
        self._js.client.publish(ack_subject(self.msg), payload)
        self._ack.done(payload)

    async def ack(self) -> None:
        """+ACK, not waiting for the server (``ack_sync`` waits)."""
        self._send(ACK)

    async def ack_sync(self, timeout: float | None = None) -> None:
        """+ACK and wait until the server confirms it."""
        check_timeout(timeout)
        self._ack.check(ACK)
        await self._js.client.request(ack_subject(self.msg), ACK, timeout=timeout or self._js.timeout)
        self._ack.done(ACK)

    async def nak(self, delay: float | None = None) -> None:
        """-NAK: redeliver now, or after ``delay`` seconds."""
        check_seconds("delay", delay)
        self._send(nak_payload(None if delay is None else delay * 1000))

    async def in_progress(self) -> None:
        """+WPI: still working on it; the ack wait starts over."""
        self._send(WPI)

    async def term(self, reason: str | None = None) -> None:
        """+TERM: never redeliver."""
        check_str("reason", reason)
        if reason and ("\r" in reason or "\n" in reason):
            raise make_error("ErrInvalidArg", "Invalid reason: it contains a line break")
        self._send(term_payload(reason))

    @property
    def acked(self) -> bool:
        return self._ack.final is not None

    def __repr__(self):
        return f"JsMsg({self.msg!r})"
