"""Batch direct gets and multi-last gets (ADR-31) for the Python faces: the
arguments of ``Stream.get_batch`` / ``Stream.get_last_msgs_for`` -> the
engine's :class:`~tclnats_py.engine.js.direct.DirectBatch`, and what both
faces' ``DirectGet`` iterators share (the batch's state, its messages as
the faces hand them out)."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, NoReturn

from tclnats_py.engine.js.direct import DirectBatch
from tclnats_py.jsface.message import stored_msg

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.engine.connection import Msg
    from tclnats_py.engine.js.api import StoredMsg
    from tclnats_py.errors import NatsError

__all__ = ["DirectGetBase", "batch_get", "last_msgs_get"]


def batch_get(stream: str, max_msgs: int, seq: int | None, subject: str | None,
              start_time: datetime.datetime | str | None, max_bytes: int | None) -> DirectBatch:
    """The batch direct get of ``Stream.get_batch`` (arguments checked)."""
    return DirectBatch(stream, batch=max_msgs, seq=seq, next_by_subj=subject, start_time=start_time,
                       max_bytes=max_bytes)


def last_msgs_get(stream: str, subjects: list[str] | str, up_to_seq: int | None,
                  up_to_time: datetime.datetime | str | None, batch: int | None) -> DirectBatch:
    """The multi-last direct get of ``Stream.get_last_msgs_for`` (arguments checked)."""
    return DirectBatch(stream, multi_last=subjects, up_to_seq=up_to_seq, up_to_time=up_to_time, batch=batch)


class DirectGetBase:
    """The messages of one batch direct get, in stream order: StoredMsg
    objects, headers as :class:`tclnats_py.Headers`.  The request goes out
    when the iteration starts (the server's API level checked first:
    ErrServerTooOld); ends with the batch, or ErrTimeout when the server
    stops answering for the context's timeout.  Afterwards ``num_pending``
    (matching messages left past the batch) and, for a multi-last get,
    ``up_to_seq`` (the stream sequence the answer stands at)."""

    def __init__(self, js: Any, get: DirectBatch):
        self.js = js
        self.get = get
        self._sub: Any = None

    @property
    def num_pending(self) -> int | None:
        return self.get.num_pending

    @property
    def up_to_seq(self) -> int | None:
        return self.get.up_to_seq

    def _take(self, msg: Msg) -> StoredMsg | None:
        """The message of the batch that ``msg`` brings, None for a status."""
        m = self.get.on_msg(msg)
        return None if m is None else stored_msg(m)

    def _wait_failed(self, e: NatsError) -> NoReturn:
        """Raise for a failed wait for the next message: the batch's own
        error when it timed out (the server stopped answering), else ``e``."""
        self.get.done = True
        if e.code != "ErrTimeout":
            raise e
        raise self.get.on_timeout() from None
