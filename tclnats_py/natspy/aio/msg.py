"""``nats.aio.msg`` of nats-py 2.x: :class:`Msg`, a delivered message.

A message of the engine (``tclnats_py.aio`` face) becomes a :class:`Msg`
with :meth:`Msg._from_impl`: headers as nats-py shows them (a plain
``dict`` of ``str``, the last value of a repeated key; an inline status under
``Status`` and ``Description``).  The JetStream acknowledgements publish the
bodies of the JetStream protocol to the reply subject; the metadata comes from
the engine's reply-subject parser (``tclnats_py.engine.js.meta``).
"""

from __future__ import annotations

import datetime
import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Optional, Union

from tclnats_py.natspy.errors import BadHeaderError, Error, MsgAlreadyAckdError, NotJSMessageError, translate

if TYPE_CHECKING:
    from tclnats_py.natspy.aio.client import Client

__all__ = ["Msg"]

# a Msg before its fields are set (Msg._from_impl sets them)
_new_object = object.__new__


# a header name nats-py sends: an RFC 7230 token (no CR, LF, blank or separator)
_HEADER_NAME = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+").fullmatch
# a value's CR and LF become blanks, so that a value cannot end its header line
_VALUE_NEWLINES = str.maketrans({"\r": " ", "\n": " "})


def headers_arg(headers: Dict[str, Any]) -> Dict[str, Any]:
    """Headers to publish as nats-py sends them: names and values trimmed,
    blank names skipped, CR and LF in values as blanks; BadHeaderError for a
    name that is not a token."""
    out = {}
    for k, v in headers.items():
        key = k.strip()
        if not key:
            continue
        if _HEADER_NAME(key) is None:
            raise BadHeaderError(key)
        out[key] = v.strip().translate(_VALUE_NEWLINES) if isinstance(v, str) else v
    return out


def headers_from_impl(h) -> Optional[Dict[str, str]]:
    """The engine's headers (key -> list of values) as nats-py's dict (key -> last value)."""
    if not h:
        return None
    return {k: (v[-1] if v else "") if isinstance(v, list) else v for k, v in dict.items(h)}


@dataclass
class Msg:
    """A message: ``subject``, ``reply`` ("" when none), ``data`` (bytes),
    ``headers`` (dict or None); ``respond`` answers it, the ack methods
    acknowledge a JetStream delivery."""

    _client: Any
    subject: str = ""
    reply: str = ""
    data: bytes = b""
    headers: dict[str, str] | None = None

    _metadata: Optional["Msg.Metadata"] = None
    _ackd: bool = False
    _sid: Optional[int] = None

    class Ack:
        """The bodies of JetStream's acknowledgements and the positions of
        the tokens of a JetStream acknowledgement reply subject."""

        Ack = b"+ACK"
        Nak = b"-NAK"
        Progress = b"+WPI"
        Term = b"+TERM"

        Prefix0 = "$JS"
        Prefix1 = "ACK"
        Domain = 2
        AccHash = 3
        Stream = 4
        Consumer = 5
        NumDelivered = 6
        StreamSeq = 7
        ConsumerSeq = 8
        Timestamp = 9
        NumPending = 10

    @classmethod
    def _from_impl(cls, client: "Client", m: Any) -> "Msg":
        """A Msg for ``client`` (the natspy Client) from the engine's message ``m``."""
        h = m.headers
        data = m.data
        if client is not None:
            client._in_bytes += len(data)
        if cls is not Msg:
            return cls(client, m.subject, m.reply or "", data,
                       None if not h else headers_from_impl(h), None, False, m.sid)
        # the dataclass __init__'s stores, in this frame: calling the class
        # costs a type call and a second frame per delivered message
        msg = _new_object(Msg)
        msg._client = client
        msg.subject = m.subject
        msg.reply = m.reply or ""
        msg.data = data
        msg.headers = None if not h else headers_from_impl(h)
        msg._metadata = None
        msg._ackd = False
        msg._sid = m.sid
        return msg

    @property
    def header(self) -> dict[str, str] | None:
        """The headers (nats-py's other name for them)."""
        return self.headers

    @property
    def is_acked(self) -> bool:
        """A terminal acknowledgement (ack, nak, term) was sent."""
        return self._ackd

    @property
    def sid(self) -> int:
        """The subscription id the message came on."""
        if self._sid is None:
            raise Error("sid not set")
        return self._sid

    async def respond(self, data: bytes = b"") -> None:
        """Publish ``data`` to the reply subject (with this message's headers, as nats-py)."""
        if not self.reply:
            raise Error("nats: the message has no reply subject to respond to")
        if not self._client:
            raise Error("client not set")
        client = self._client
        await client.publish(self.reply, data, headers=self.headers)

    # ------------------------------------------------------------ JetStream
    def _check_reply(self) -> None:
        if not self.reply:
            raise NotJSMessageError()
        if self._ackd:
            raise MsgAlreadyAckdError(self)

    async def ack(self) -> None:
        """Acknowledge a JetStream delivery."""
        self._check_reply()
        await self._client.publish(self.reply)
        self._ackd = True

    async def ack_sync(self, timeout: float = 1.0) -> Msg:
        """Acknowledge and wait for the server's confirmation."""
        self._check_reply()
        answer = await self._client.request(self.reply, timeout=timeout)
        self._ackd = True
        return answer

    async def nak(self, delay: float | None = None) -> None:
        """Ask for a redelivery, after ``delay`` seconds when given."""
        self._check_reply()
        body = self.Ack.Nak
        if delay:
            body += b" " + json.dumps({"delay": int(delay * 1_000_000_000)}).encode()
        await self._client.publish(self.reply, body)
        self._ackd = True

    async def in_progress(self) -> None:
        """Tell the server the message is still being worked on (may repeat)."""
        if not self.reply:
            raise NotJSMessageError()
        await self._client.publish(self.reply, self.Ack.Progress)

    async def term(self) -> None:
        """Stop redeliveries of this message."""
        self._check_reply()
        await self._client.publish(self.reply, self.Ack.Term)
        self._ackd = True

    @property
    def metadata(self) -> "Msg.Metadata":
        """The JetStream metadata of the reply subject (NotJSMessageError otherwise)."""
        if self._metadata is None:
            self._metadata = Msg.Metadata._from_reply(self.reply)
        return self._metadata

    @dataclass(frozen=True)
    class Metadata:
        """Stream and consumer sequences, pending and delivered counts,
        the time of the message, the stream, consumer and domain."""

        sequence: "Msg.Metadata.SequencePair"
        num_pending: int
        num_delivered: int
        timestamp: datetime.datetime
        stream: str
        consumer: str
        domain: Optional[str] = None

        @dataclass(frozen=True)
        class SequencePair:
            consumer: int
            stream: int

        @classmethod
        def _from_reply(cls, reply: str) -> "Msg.Metadata":
            from tclnats_py.engine.js.meta import metadata_fields
            from tclnats_py.errors import NatsError
            if not reply:
                raise NotJSMessageError()
            try:
                domain, stream, consumer, delivered, sseq, cseq, ts_ns, pending = metadata_fields(reply)
            except NatsError as e:
                raise translate(e) from e
            return cls(
                sequence=cls.SequencePair(consumer=cseq, stream=sseq),
                num_pending=pending, num_delivered=delivered,
                timestamp=datetime.datetime.fromtimestamp(ts_ns / 1_000_000_000.0, datetime.timezone.utc),
                stream=stream, consumer=consumer,
                domain=None if domain is None else ("" if domain == "_" else domain))
