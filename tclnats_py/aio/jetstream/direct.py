"""Batch direct gets and multi-last gets (ADR-31) as async iterators."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tclnats_py.errors import NatsError
from tclnats_py.engine.js.direct import check
from tclnats_py.jsface.direct import DirectGetBase

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.aio.client import Subscription
    from tclnats_py.engine.js.api import StoredMsg

__all__ = ["DirectGet"]


class DirectGet(DirectGetBase):
    """A batch direct get as an async iterator (``async for m in
    stream.get_batch(...)``); see :class:`~tclnats_py.jsface.direct.DirectGetBase`."""

    _sub: Subscription | None

    def __aiter__(self) -> DirectGet:
        return self

    async def _start(self) -> Subscription:
        js = self.js
        if self.get.done:
            raise StopAsyncIteration
        await js.run(check(js.jsapi, self.get))
        nc = js.client
        inbox = nc.new_inbox()
        sub = self._sub = await nc.subscribe(inbox)
        nc.publish(self.get.subject(js.jsapi), self.get.body, reply=inbox)
        return sub

    async def __anext__(self) -> StoredMsg:
        try:
            sub = self._sub or await self._start()
            while not self.get.done:
                if sub.pending_msgs:
                    msg = sub.take()  # (what is queued already, without a wait)
                else:
                    try:
                        msg = await sub.next_msg(self.js.timeout)
                    except NatsError as e:
                        self._wait_failed(e)
                m = self._take(msg)
                if m is not None:
                    return m
        except BaseException:
            await self.aclose()
            raise
        await self.aclose()
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """Stop reading (the rest of the batch is dropped by the server's side of the inbox)."""
        sub, self._sub = self._sub, None
        self.get.done = True
        if sub is not None:
            await sub.unsubscribe()

    async def all(self) -> list[StoredMsg]:
        """Every message of the batch, as a list."""
        return [m async for m in self]
