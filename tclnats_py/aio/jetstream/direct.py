"""Batch direct gets and multi-last gets (ADR-31) as async iterators."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tclnats_py.errors import NatsError
from tclnats_py.engine.headers import Headers
from tclnats_py.engine.js.direct import DirectBatch, check

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.aio.client import Subscription
    from tclnats_py.aio.jetstream.context import JetStream
    from tclnats_py.engine.js.api import StoredMsg

__all__ = ["DirectGet"]


class DirectGet:
    """The messages of one batch direct get, in stream order (``async for
    m in stream.get_batch(...)``): :class:`StoredMsg` objects, headers as
    :class:`tclnats_py.Headers`.  The request goes out when the iteration
    starts (the server's API level checked first: ErrServerTooOld); ends
    with the batch, or ErrTimeout when the server stops answering for the
    context's timeout.  Afterwards ``num_pending`` (matching messages left
    past the batch) and, for a multi-last get, ``up_to_seq`` (the stream
    sequence the answer stands at)."""

    def __init__(self, js: JetStream, get: DirectBatch):
        self.js = js
        self.get = get
        self._sub: Subscription | None = None

    @property
    def num_pending(self) -> int | None:
        return self.get.num_pending

    @property
    def up_to_seq(self) -> int | None:
        return self.get.up_to_seq

    def __aiter__(self) -> DirectGet:
        return self

    async def _start(self) -> Subscription:
        js = self.js
        await js.run(check(js.jsapi, self.get))
        nc = js.client
        inbox = nc.new_inbox()
        sub = self._sub = await nc.subscribe(inbox)
        nc.publish(self.get.subject(js.jsapi), self.get.body, reply=inbox)
        return sub

    async def __anext__(self) -> StoredMsg:
        get = self.get
        sub = self._sub
        try:
            if sub is None:
                if get.done:
                    raise StopAsyncIteration
                sub = await self._start()
            while not get.done:
                if sub.pending_msgs:
                    msg = sub.take()  # (what is queued already, without a wait)
                else:
                    try:
                        msg = await sub.next_msg(self.js.timeout)
                    except NatsError as e:
                        if e.code != "ErrTimeout":
                            raise
                        raise get.on_timeout() from None
                m = get.on_msg(msg)
                if m is not None:
                    if m.headers and type(m.headers) is dict:
                        m.headers = Headers(m.headers)
                    return m
        except BaseException:
            get.done = True
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
