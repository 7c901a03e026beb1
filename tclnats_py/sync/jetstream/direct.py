"""Batch direct gets and multi-last gets (ADR-31) as iterators, blocking."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from tclnats_py.errors import NatsError
from tclnats_py.engine.js.direct import check
from tclnats_py.jsface.direct import DirectGetBase
from tclnats_py.sync.jetstream.pull import unsubscribe_quietly

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.engine.js.api import StoredMsg

__all__ = ["DirectGet"]


class DirectGet(DirectGetBase):
    """A batch direct get as an iterator read by the calling thread (``for m
    in stream.get_batch(...)``); see :class:`~tclnats_py.jsface.direct.DirectGetBase`.
    ``close()`` stops it early."""

    def __iter__(self) -> Iterator[StoredMsg]:
        return self

    def _start(self) -> Any:
        """Subscribe to a new inbox and send the request (StopIteration when the batch is over)."""
        js, get = self.js, self.get
        if get.done:
            raise StopIteration
        js.run(check(js.jsapi, get))
        inbox = js.client.new_inbox()
        self._sub = js.client.subscribe(inbox)
        js.client.publish(get.subject(js.jsapi), get.body, reply=inbox)
        return self._sub

    def __next__(self) -> StoredMsg:
        try:
            sub = self._sub or self._start()
            while not self.get.done:
                try:
                    m = self._take(sub.next_msg(self.js.timeout))
                except NatsError as e:  # (a status that ends the batch raises its own error here)
                    self._wait_failed(e)
                if m is not None:
                    return m
        except BaseException:
            self.close()
            raise
        self.close()
        raise StopIteration

    def close(self) -> None:
        """Stop reading (the rest of the batch is dropped with the inbox's subscription)."""
        sub, self._sub = self._sub, None
        self.get.done = True
        if sub is not None:
            unsubscribe_quietly(sub)

    def all(self) -> list[StoredMsg]:
        """Every message of the batch, as a list."""
        return list(self)
