"""JsMsg: a message delivered by a consumer, with its acks (awaitable) and
metadata (:class:`MsgMetadata`, from :mod:`tclnats_py.jsface.message`)."""

from __future__ import annotations

from tclnats_py.engine.js.ack import ACK, WPI
from tclnats_py.jsface.message import JsMsgBase, MsgMetadata, SequencePair, message_metadata

__all__ = ["JsMsg", "MsgMetadata", "SequencePair", "message_metadata"]


class JsMsg(JsMsgBase):
    """A message from a consumer: its metadata and the ack family."""

    __slots__ = ()

    async def ack(self) -> None:
        """+ACK, not waiting for the server (``ack_sync`` waits)."""
        self._send(ACK)

    async def ack_sync(self, timeout: float | None = None) -> None:
        """+ACK and wait until the server confirms it."""
        subject, timeout = self._ack_sync_request(timeout)
        await self._js.client.request(subject, ACK, timeout=timeout)
        self._ack.done(ACK)

    async def nak(self, delay: float | None = None) -> None:
        """-NAK: redeliver now, or after ``delay`` seconds."""
        self._nak(delay)

    async def in_progress(self) -> None:
        """+WPI: still working on it; the ack wait starts over."""
        self._send(WPI)

    async def term(self, reason: str | None = None) -> None:
        """+TERM: never redeliver."""
        self._term(reason)
