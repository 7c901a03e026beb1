"""BatchPublisher of the blocking face: one atomic batch written message by message (ADR-50)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tclnats_py.engine.js.batch import AtomicBatch
from tclnats_py.jsface.info import BatchAck

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.sync.jetstream.context import JetStream


class BatchPublisher:
    """An atomic batch (``js.batch()``): what :meth:`add` gives is stored all
    together at :meth:`commit`, or none of it; as a context manager it
    commits when the block ends and discards the batch when the block raises
    (or added nothing: ``ack`` stays None).  The asyncio face's
    :class:`tclnats_py.aio.jetstream.batch.BatchPublisher` without ``await``;
    the batch's rules are the engine's :class:`~tclnats_py.engine.js.batch.AtomicBatch`."""

    def __init__(self, js: JetStream, ack_every: int = 0, timeout: float | None = None):
        self.js = js
        self.core = AtomicBatch(js.jsapi, ack_every=ack_every,
                                timeout=None if timeout is None else int(timeout * 1000))
        self.ack: BatchAck | None = None

    def __repr__(self) -> str:
        return f"<BatchPublisher {self.core.batch_id} size={self.core.size}{' closed' if self.core.closed else ''}>"

    @property
    def batch_id(self) -> str:
        return self.core.batch_id

    @property
    def size(self) -> int:
        """Messages added so far."""
        return self.core.size

    @property
    def is_closed(self) -> bool:
        """Committed or discarded (nothing more can be added)."""
        return self.core.closed

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

    def discard(self) -> None:
        """Give the batch up: nothing of it is stored."""
        self.core.discard()

    def __enter__(self) -> "BatchPublisher":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is not None or self.core.size == 0:
            self.discard()
        elif not self.core.closed:
            self.commit()
