"""BatchPublisher of the blocking face: one atomic batch written message by message (ADR-50)."""

from __future__ import annotations

from typing import Any

from tclnats_py.jsface.batch import BatchBase
from tclnats_py.jsface.info import BatchAck


class BatchPublisher(BatchBase):
    """An atomic batch (``js.batch()``): what :meth:`add` gives is stored all
    together at :meth:`commit`, or none of it; as a context manager it
    commits when the block ends and discards the batch when the block raises
    (or added nothing: ``ack`` stays None).  The asyncio face's
    :class:`tclnats_py.aio.jetstream.batch.BatchPublisher` without ``await``;
    the batch's rules are the engine's :class:`~tclnats_py.engine.js.batch.AtomicBatch`."""

    def add(self, subject: str, data: Any = b"", headers: Any = None) -> None:
        """Add a message (ErrBadSubject; ErrInvalidArg for the batch's own
        headers or ``Nats-Expected-Last-Msg-Id``)."""
        self.js.run(self.core.add((subject, data, headers)))

    def commit(self, subject: str | None = None, data: Any = b"", headers: Any = None) -> BatchAck:
        """Commit, with one last message when ``subject`` is given; its
        :class:`BatchAck`.  A refused commit raises the server's error, and
        nothing of the batch is stored."""
        op = self.core.commit(None if subject is None else (subject, data, headers))
        self.ack = BatchAck(self.js.run(op))
        return self.ack

    def __enter__(self) -> "BatchPublisher":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None or self.core.size == 0:
            self.discard()
        elif not self.core.closed:
            self.commit()
