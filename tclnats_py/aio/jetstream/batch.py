"""BatchPublisher: one atomic batch written message by message (ADR-50)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tclnats_py.jsface.batch import BatchBase
from tclnats_py.aio.jetstream.info import BatchAck

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.aio.client import HeadersArg, Payload


class BatchPublisher(BatchBase):
    """An atomic batch (``js.batch()``): the messages :meth:`add` gives are
    stored all together at :meth:`commit`, or none of them.  As an async
    context manager it commits when the block ends and discards the batch
    when the block raises (or added nothing: ``ack`` stays None)::

        async with js.batch() as b:
            await b.add("orders.1", b"...")
            await b.add("orders.2", b"...", {"Nats-Msg-Id": "o-2"})
        print(b.ack.batch_size, b.ack.seq)

    Each :meth:`add` sends the message added before it (the last one waits
    to be sent with the commit).  The first message sent waits for the
    server's word (``ack_first``): a stream without ``allow_atomic``, or
    too many batches in flight, raise there; ``ack_every`` n waits for
    every n-th one too.  A server before 2.12 raises ErrServerTooOld."""

    async def add(self, subject: str, data: Payload = b"", headers: HeadersArg = None) -> None:
        """Add a message to the batch (ErrBadSubject, ErrInvalidArg for the
        batch's own headers or ``Nats-Expected-Last-Msg-Id``)."""
        await self.js.run(self.core.add((subject, data, headers)))

    async def commit(self, subject: str | None = None, data: Payload = b"",
                     headers: HeadersArg = None) -> BatchAck:
        """Commit the batch, with one last message when ``subject`` is given;
        its :class:`BatchAck`.  A refused commit (an expectation that
        failed, a batch past the server's size limit ...) raises the
        server's error, and nothing of the batch is stored."""
        op = self.core.commit(None if subject is None else (subject, data, headers))
        self.ack = BatchAck(await self.js.run(op))
        return self.ack

    async def __aenter__(self) -> "BatchPublisher":
        return self

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None or self.core.size == 0:
            self.discard()  # (a block that added nothing commits nothing: ack stays None)
        elif not self.core.closed:
            await self.commit()
