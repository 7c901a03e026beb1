"""``nats.aio.subscription`` of nats-py 2.x: :class:`Subscription` over a
subscription of the asyncio face (``tclnats_py.aio.client.Subscription``,
kept as ``_impl``).  The queueing, limits, callbacks' task and draining are
the face's; this class converts messages (:meth:`Msg._from_impl`) and errors
(:func:`tclnats_py.natspy.errors.translate`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, AsyncIterator, Optional

from tclnats_py.errors import NatsError
from tclnats_py.natspy import errors
from tclnats_py.natspy.aio.msg import Msg

if TYPE_CHECKING:
    from tclnats_py.natspy.aio.client import Client

__all__ = ["Subscription", "DEFAULT_SUB_PENDING_MSGS_LIMIT", "DEFAULT_SUB_PENDING_BYTES_LIMIT"]

DEFAULT_SUB_PENDING_MSGS_LIMIT = 524_288  # nats-py's
DEFAULT_SUB_PENDING_BYTES_LIMIT = 128 << 20  # 128 MiB, nats-py's


class Subscription:
    """A subscription: messages go to its callback (a coroutine function), or
    are read with ``await sub.next_msg(timeout)`` / ``async for msg in sub.messages``."""

    def __init__(self, conn: "Client", impl: Any, cb=None, future: Optional[asyncio.Future] = None) -> None:
        self._conn = conn
        self._impl = impl
        self._cb = cb
        self._future = future
        self._jsi: Any = None  # the JetStream half's per-subscription state
        self._closed = False  # unsubscribed or drained by the program

    def __repr__(self) -> str:
        return f"<nats subscription sid={self._impl.sid} subject={self._impl.subject!r}>"

    # ------------------------------------------------------------ state
    @property
    def _id(self) -> int:
        return self._impl.sid

    @property
    def _message_iterator(self) -> Optional["_IteratorState"]:
        """nats-py's iterator state (None for a callback subscription): its
        ``_unsubscribed_future`` is done once the subscription has ended."""
        if self._cb is not None or self._future is not None:
            return None
        return _IteratorState(self)

    @property
    def _pending_queue(self) -> "_PendingView":
        """nats-py's pending queue as its suite reads it (``qsize()``, ``empty()``)."""
        return _PendingView(self._impl)

    @property
    def _received(self) -> int:
        return self._impl.received

    @property
    def subject(self) -> str:
        return self._impl.subject

    @property
    def queue(self) -> str:
        return self._impl.queue

    @property
    def pending_msgs(self) -> int:
        """Messages received and not handed out yet."""
        return self._impl.pending_msgs

    @property
    def pending_bytes(self) -> int:
        """Bytes of the messages received and not handed out yet."""
        return self._impl.pending_bytes

    @property
    def delivered(self) -> int:
        """Messages received for this subscription."""
        return self._impl.received

    @property
    def messages(self) -> "_Messages":
        """``async for msg in sub.messages``: the messages until the subscription ends."""
        if self._cb is not None or self._future is not None:
            raise errors.Error("nats: a subscription with a callback or a future has no message iterator")
        return _Messages(self)

    # ------------------------------------------------------------ API
    async def next_msg(self, timeout: float | None = 1.0) -> Msg:
        """The next message; nats.errors.TimeoutError after ``timeout`` seconds
        (None: wait for good), ConnectionClosedError once the client is closed."""
        if self._conn.is_closed:
            raise errors.ConnectionClosedError()
        if self._cb is not None:
            raise errors.Error("nats: next_msg is for subscriptions without a callback")
        try:
            m = await self._impl.next_msg(timeout)
        except NatsError as e:
            if self._conn.is_closed:
                raise errors.ConnectionClosedError() from e
            if e.code == "ErrBadSubscription":
                # ended and empty: nothing will come (nats-py waits for its timeout)
                raise errors.TimeoutError() from e
            raise errors.translate(e) from e
        return Msg._from_impl(self._conn, m)

    async def unsubscribe(self, limit: int = 0) -> None:
        """Stop now, or after ``limit`` messages in all.  Stopping now drops
        what a callback has not been given yet; an iterator (``messages``,
        ``next_msg``) still hands out what had arrived, then ends, as nats-py's
        (its iterator takes from the queue before it looks at the end)."""
        self._check_usable()
        if not self._impl.interest_ended:
            try:
                await self._impl.unsubscribe(limit)
            except NatsError as e:
                raise errors.translate(e) from e
        # else: it ended at its message limit; nats-py lets it be unsubscribed
        if limit == 0:
            self._closed = True
            if self._cb is not None or self._future is not None:
                self._impl.discard_pending()
            self._impl.cancel_callback_task()

    async def drain(self) -> None:
        """Stop interest, let the messages on their way be handled, then end."""
        self._check_usable()
        self._closed = True
        try:
            await self._impl.drain(self._conn._drain_timeout)
        except NatsError as e:
            raise errors.translate(e) from e

    def _check_usable(self) -> None:
        if self._conn.is_closed:
            raise errors.ConnectionClosedError()
        if self._conn.is_draining:
            raise errors.ConnectionDrainingError()
        if self._closed:
            raise errors.BadSubscriptionError()


class _Messages:
    """The async iterator of :attr:`Subscription.messages`."""

    __slots__ = ("_sub",)

    def __init__(self, subscription: Subscription) -> None:
        self._sub = subscription

    def __aiter__(self) -> "_Messages":
        return self

    async def __anext__(self) -> Msg:
        sub = self._sub
        m = await sub._impl.__anext__()
        return Msg._from_impl(sub._conn, m)


class _PendingView:
    """The messages a subscription holds and has not handed out yet."""

    __slots__ = ("_impl",)

    def __init__(self, impl: Any) -> None:
        self._impl = impl

    def qsize(self) -> int:
        return self._impl.pending_msgs

    def empty(self) -> bool:
        return self._impl.pending_msgs == 0


class _IteratorState:
    """What nats-py's suite reads of a subscription's message iterator."""

    __slots__ = ("_sub",)

    def __init__(self, subscription: Subscription) -> None:
        self._sub = subscription

    @property
    def _unsubscribed_future(self) -> asyncio.Future:
        fut = asyncio.get_running_loop().create_future()
        if self._sub._closed or not self._sub._impl.is_active:
            fut.set_result(True)
        return fut
