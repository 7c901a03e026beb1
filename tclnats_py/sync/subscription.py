"""Subscriptions of the blocking client and the messages it hands out.

A :class:`Subscription` has a local queue bounded by its pending limits
(past them messages are dropped, ``dropped`` counts them, and ErrSlowConsumer
goes to the client's error_cb once per episode, as the asyncio face does).
Without a callback it is read with ``sub.next_msg(timeout)`` or ``for msg in
sub``, from any thread; with one, the client's keeper thread runs it,
message after message, between its reads, never holding the client's lock.
"""

from __future__ import annotations

import sys
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Iterator

from tclnats_py.pyface import SubscriptionState
from tclnats_py.engine.connection import Msg
from tclnats_py.engine.headers import Headers
from tclnats_py.engine.protocol import compiled
from tclnats_py.engine.validate import check_int, check_timeout
from tclnats_py.errors import NatsError, make_error

if TYPE_CHECKING:
    from tclnats_py.engine.connection import Subscription as _EngineSub
    from tclnats_py.sync.client import Client, HeadersArg, Payload

__all__ = ["Subscription", "SyncMsg"]


def _py_data_size(msgs: Any) -> int:
    """The bytes of ``msgs``' payloads."""
    return sum([len(m.data) for m in msgs])


# (the compiled one reads Msg's data slot: no Python per message)
_data_size: Callable[[Any], int] = compiled("data_size") or _py_data_size


class SyncMsg(Msg):
    """A message the blocking face delivers (subscriptions, requests):
    ``subject``, ``data`` (bytes), ``reply`` (None when there is none),
    ``headers`` (a :class:`tclnats_py.Headers`, None when there are none);
    :meth:`respond` publishes to its reply subject.  Each client hands the
    engine its own subclass (``_client`` set), so a message costs no more
    than the engine's."""

    __slots__ = ()
    _client: "Client" = None  # type: ignore[assignment]
    if TYPE_CHECKING:
        headers: Headers | None

        def header(self, key: str, default: str | None = None) -> str | None:
            """The first value of header ``key``, or ``default``."""

    def respond(self, data: Payload = b"", headers: HeadersArg = None) -> None:
        """Publish ``data`` to this message's reply subject; ErrInvalidArg when it has none."""
        if not self.reply:
            raise make_error("ErrInvalidArg", f"Message on {self.subject} has no reply subject")
        self._client.publish(self.reply, data, headers=headers)


class Subscription(SubscriptionState):
    """A subscription of the blocking client (see the module)."""

    def __init__(self, client: "Client", subject: str, queue: str, cb: Callable[[SyncMsg], object] | None,
                 pending_msgs_limit: int, pending_bytes_limit: int):
        self._client = client
        self.subject = subject
        self.queue = queue
        self._cb = cb
        self._pending: deque = deque()
        self._pending_bytes = 0
        self._limit_msgs = pending_msgs_limit if pending_msgs_limit > 0 else sys.maxsize
        self._limit_bytes = pending_bytes_limit if pending_bytes_limit > 0 else sys.maxsize
        self._closed = False
        self._slow = False
        self._scheduled = False   # a callback batch is queued for the client's keeper thread
        self._running = False     # the keeper is in this subscription's callback
        self._engine_sub: _EngineSub = None  # type: ignore[assignment]  # set by Client.subscribe
        self.dropped = 0
        self.delivered = 0

    # ---------------------------------------------------------------- state (the rest: SubscriptionState)

    @property
    def callback(self) -> Callable[[SyncMsg], object] | None:
        return self._cb

    @property
    def pending_msgs_limit(self) -> int:
        return self._limit_msgs

    @property
    def pending_bytes_limit(self) -> int:
        return self._limit_bytes

    # ---------------------------------------------------------------- the client's side (its lock held)
    def _deliver(self, msgs: Any) -> None:
        pending = self._pending
        lm, lb = self._limit_msgs, self._limit_bytes
        if len(pending) + len(msgs) <= lm:
            size = _data_size(msgs)
            if self._pending_bytes + size <= lb:  # all of them fit: no check per message
                pending.extend(msgs)
                self._pending_bytes += size
                msgs = ()
        for msg in msgs:
            n = len(msg.data)
            if len(pending) >= lm or self._pending_bytes + n > lb:
                self.dropped += 1
                if not self._slow:
                    self._slow = True
                    self._client._report(make_error(
                        "ErrSlowConsumer", f"Slow consumer on subject {self.subject}: messages dropped",
                        sid=self.sid, subject=self.subject))
                continue
            pending.append(msg)
            self._pending_bytes += n
        if self._cb is not None and pending and not self._scheduled:
            self._scheduled = True
            self._client._io.schedule(self)

    def _end(self) -> None:
        """No more messages will come; what is queued is still handed out."""
        if not self._closed:
            self._closed = True
            self._client._io._subs.pop(self._engine_sub.sid, None)
            if self._cb is not None:
                self._client._io.passive -= 1

    def _take(self) -> SyncMsg:
        msg = self._pending.popleft()
        self._pending_bytes -= len(msg.data)
        self.delivered += 1
        if not self._pending:
            self._slow = False
        return msg

    # ---------------------------------------------------------------- the keeper thread
    def _run_callbacks(self) -> None:
        """Run the callback for a batch of what is queued (lock held on entry
        and exit, released while it runs); its exceptions go to error_cb.
        Queued again for the keeper while messages remain (each callback
        subscription in turn)."""
        io = self._client._io
        cb = self._cb
        assert cb is not None
        pending = self._pending
        if not pending:
            self._scheduled = False
            self._slow = False
            io.cond.notify_all()  # (drain waits for this)
            return
        # the whole queue at once (the keeper is its only reader)
        batch = pending
        self._pending = deque()
        self._pending_bytes = 0
        self.delivered += len(batch)
        self._slow = False
        self._running = True
        io.lock.release()
        try:
            for msg in batch:
                try:
                    cb(msg)
                except Exception as e:  # the user's callback failed: reported, the next message goes on
                    self._client._hook_failed(cb, e, f"the message callback of the subscription to {self.subject}")
        finally:
            io.lock.acquire()
            self._running = False
        io.ready.append(self)  # more came meanwhile, or the end of this turn (the notify above)

    @property
    def _idle(self) -> bool:
        """Nothing queued for the callback and none running (lock held)."""
        return not self._pending and not self._running

    # ---------------------------------------------------------------- API
    def next_msg(self, timeout: float | None = 1.0) -> SyncMsg:
        """The next message; ErrTimeout after ``timeout`` seconds (None: wait
        forever), ErrBadSubscription once the subscription has ended and its
        queue is empty."""
        if self._cb is not None:
            raise make_error("ErrInvalidArg", "next_msg on a subscription with a callback")
        timeout = check_timeout(timeout)
        io = self._client._io
        with io.lock:
            pending = self._pending
            if not pending and not self._closed:
                io.wait(lambda: bool(pending) or self._closed, timeout)
            if pending:
                return self._take()
        if self._closed:
            raise make_error("ErrBadSubscription", f"Subscription to {self.subject} has ended")
        raise make_error("ErrTimeout", f"No message on {self.subject} within {timeout} s")

    def __iter__(self) -> Iterator[SyncMsg]:
        """``for msg in sub``: every message until the subscription ends."""
        if self._cb is not None:
            raise make_error("ErrInvalidArg", "iterating a subscription with a callback")
        return self

    def __next__(self) -> SyncMsg:
        try:
            return self.next_msg(None)
        except NatsError as e:
            if e.code == "ErrBadSubscription":
                raise StopIteration from None
            raise

    @property
    def messages(self) -> "Subscription":
        """``for msg in sub.messages`` (nats-py's spelling)."""
        return iter(self)  # type: ignore[return-value]

    def discard_pending(self) -> None:
        """Drop the messages queued and not yet handed out."""
        with self._client._io.lock:
            self._pending.clear()
            self._pending_bytes = 0

    def unsubscribe(self, limit: int = 0, *, max_msgs: int | None = None) -> None:
        """End now, or after ``limit`` messages in total (``max_msgs=`` says
        the same; when that many have been received already, it ends now)."""
        if max_msgs is not None:
            if limit:
                raise make_error("ErrInvalidArg", "limit and max_msgs both given: one of them, please")
            check_int("max_msgs", max_msgs)
        else:
            max_msgs = check_int("limit", limit)
        c = self._client
        with c._io.lock:
            es = self._engine_sub
            if es.closed:
                raise make_error("ErrBadSubscription", f"Invalid subscription ID {es.sid}")
            gone = c._engine.unsubscribe(es.sid, max_msgs)
            c._io._run()
            if gone:
                self._end()
            c._io.cond.notify_all()

    def drain(self, timeout: float | None = None) -> None:
        """Stop interest (UNSUB), let the messages on their way arrive (a
        PING/PONG shows they have) and be handled, then end; ``timeout`` in
        seconds (None: the connection's drain_timeout)."""
        c = self._client
        timeout = check_timeout(timeout, c._drain_timeout)
        c._drain_subs([self], timeout)
