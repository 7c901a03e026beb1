"""What the Python faces' BatchPublisher share (ADR-50): the engine's
AtomicBatch of a JetStream context and its read-only state."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tclnats_py.engine.js.batch import AtomicBatch

if TYPE_CHECKING:
    from tclnats_py.jsface.info import BatchAck

__all__ = ["BatchBase"]


class BatchBase:
    """One atomic batch of ``js`` (a face's JetStream context): the rules
    are :class:`~tclnats_py.engine.js.batch.AtomicBatch`'s (``self.core``);
    a face adds ``add``/``commit`` (waiting its own way) and its context manager."""

    def __init__(self, js: Any, ack_every: int = 0, timeout: float | None = None):
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

    def discard(self) -> None:
        """Give the batch up: nothing of it is stored."""
        self.core.discard()
