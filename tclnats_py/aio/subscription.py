"""Subscriptions of the asyncio face and the messages they hand out.

A :class:`Subscription` has a local queue bounded by its pending limits and,
with a callback, one consumer task that runs the callback message after
message.  While that task waits with nothing queued, a message runs the
callback at once, as the task (``_run_now``, ``_deliver_many``): no task
switch per message.  The client (``tclnats_py.aio.client.Client``) hands it
the engine's deliveries (``Deliver``, ``DeliverMany`` effects).
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import inspect
import sys
import types
from typing import TYPE_CHECKING, Any

from tclnats_py.pyface import SubscriptionState
from tclnats_py.engine.connection import CLOSED, Msg
from tclnats_py.engine.connection import Subscription as _EngineSub
from tclnats_py.engine.headers import Headers
from tclnats_py.engine.protocol import STEP_OTHER as _STEP_OTHER, step as _step
from tclnats_py.engine.validate import check_int, check_timeout
from tclnats_py.errors import NatsError, make_error

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.aio.client import Client, HeadersArg, Payload

__all__ = ["Subscription", "ClientMsg"]


class ClientMsg(Msg):
    """A message the asyncio face delivers (subscriptions, requests):
    ``subject``, ``data`` (bytes), ``reply`` (None when there is none),
    ``headers`` (a :class:`tclnats_py.Headers`, None when there are none);
    ``respond`` publishes to its reply subject.

    Each client has its own subclass (``_client`` set), which it hands to the
    engine as ``msg_class``, so a message costs nothing more than the engine's.
    """

    __slots__ = ()
    _client: "Client" = None  # type: ignore[assignment]
    if TYPE_CHECKING:
        headers: Headers | None  # (the engine's headers_class on this face)

        def header(self, key: str, default: str | None = None) -> str | None:
            """The first value of header ``key`` (a str on this face), or ``default``."""

    async def respond(self, data: Payload = b"", headers: HeadersArg = None) -> None:
        """Publish ``data`` to this message's reply subject; ErrInvalidArg when it has none."""
        if not self.reply:
            raise make_error("ErrInvalidArg", f"Message on {self.subject} has no reply subject")
        await self._client.publish(self.reply, data, headers=headers)



# a coroutine callback's first step runs as part of its subscription's
# consumer task (asyncio.current_task() is that task), in the task's context
_enter_task: Any = getattr(asyncio.tasks, "_enter_task", None)
_leave_task: Any = getattr(asyncio.tasks, "_leave_task", None)
_CoroutineType = types.CoroutineType
_EAGER = sys.version_info >= (3, 11) and _enter_task is not None and _leave_task is not None


async def _awaiting(awaitable: Any) -> Any:
    """An awaitable that is not a coroutine (a future, publish()'s result)
    as a coroutine: its ``__await__`` iterator need not have ``send``."""
    return await awaitable


def _first_step(cb, msg):
    """Call a message callback and run what it returns up to its first
    wait: (None, None) when it is done, else (the coroutine, what it yielded)."""
    if _step is not None:
        r = _step(cb, msg)  # compiled: a coroutine's end makes no StopIteration
        if r is None:
            return None, None
        if r[1] is not _STEP_OTHER:
            return r
        r = r[0]
    else:
        r = cb(msg)
        if r is None:
            return None, None
    if r.__class__ is not _CoroutineType:
        if not inspect.isawaitable(r):
            return None, None
        if not inspect.iscoroutine(r):
            r = _awaiting(r)
    try:
        return r, r.send(None)
    except StopIteration:
        return None, None


def _first_steps(sub, msgs, i):
    """Call ``sub``'s callback for ``msgs[i:]`` in order (``delivered`` counted
    before each, as ``_run_now`` does), each run up to its first wait, until
    one has to wait or fails: (the index after the last called, the waiting
    coroutine or None, what it yielded, the exception or None).  A message
    past the subscription's pending bytes limit, or one that comes when the
    consumer task no longer waits (``_parked`` cleared by a callback), is
    left to ``_deliver``: (its index, None, None, None)."""
    cb = sub._cb
    limit = sub._limit_bytes
    n = len(msgs)
    step = _step
    while i < n:
        msg = msgs[i]
        if len(msg.data) > limit or not sub._parked:
            return i, None, None, None
        i += 1
        sub.delivered += 1
        try:
            if step is not None:
                r = step(cb, msg)  # compiled: a coroutine's end makes no StopIteration
                if r is None:
                    continue
                if r[1] is not _STEP_OTHER:
                    return i, r[0], r[1], None
                r = r[0]
            else:
                r = cb(msg)
                if r is None:
                    continue
            if r.__class__ is not _CoroutineType:
                if not inspect.isawaitable(r):
                    continue
                if not inspect.iscoroutine(r):
                    r = _awaiting(r)
            try:
                return i, r, r.send(None), None
            except StopIteration:
                continue
        except (Exception, asyncio.CancelledError) as e:  # the caller reports it as _run_now does
            return i, None, None, e
    return i, None, None, None


class _Resume:
    """Awaiting it goes on with a coroutine whose first step already ran and
    yielded ``first`` (what the consumer task then waits for), as if the task
    had run it from the start: what the task sends or throws goes to it."""

    __slots__ = ("coro", "first")

    def __init__(self, coro, first):
        self.coro = coro
        self.first = first

    def __await__(self):
        coro = self.coro
        y = self.first
        self.first = None
        while True:
            try:
                v = yield y
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as e:  # thrown in by the task (CancelledError): to the coroutine
                try:
                    y = coro.throw(e)
                except StopIteration as stop:
                    return stop.value
            else:
                try:
                    y = coro.send(v)
                except StopIteration as stop:
                    return stop.value


class Subscription(SubscriptionState):
    """A subscription: messages go to its callback, or are read with
    ``await sub.next_msg(timeout)`` / ``async for msg in sub``.

    Messages wait in a local queue bounded by ``pending_msgs_limit`` and
    ``pending_bytes_limit`` (<= 0: unbounded); past them messages are dropped
    (``dropped`` counts them) and ErrSlowConsumer goes to the client's error_cb.
    """

    def __init__(self, client: "Client", subject: str, queue: str, cb, pending_msgs_limit: int,
                 pending_bytes_limit: int):
        self._client = client
        self.subject = subject
        self.queue = queue
        self._cb = cb
        self._cb_is_coro = cb is not None and inspect.iscoroutinefunction(cb)
        self._pending: collections.deque = collections.deque()
        self._pending_bytes = 0
        self._limit_msgs = pending_msgs_limit if pending_msgs_limit > 0 else sys.maxsize
        self._limit_bytes = pending_bytes_limit if pending_bytes_limit > 0 else sys.maxsize
        self._waiters: list = []
        self._task: asyncio.Task | None = None
        self._closed = False
        self._slow = False
        self._busy = False  # counted in the client's _busy_subs (a callback with messages to handle)
        # the consumer task waits with nothing queued: a message then runs the
        # callback at once (_run_now), in the task's name and context
        self._parked = False
        self._ctx: contextvars.Context | None = None  # the consumer task's context
        self._carry: Any = None  # a callback's rest, handed to the consumer task
        self._engine_sub: _EngineSub = None  # type: ignore[assignment]  # set by Client.subscribe
        self.dropped = 0
        self.delivered = 0
        self.report_each_drop = False  # True: ErrSlowConsumer for every dropped message

    # ---------------------------------------------------------------- state (the rest: SubscriptionState)

    @property
    def callback(self):
        """The callback given to subscribe (None for an iterated subscription)."""
        return self._cb

    @property
    def pending_msgs_limit(self) -> int:
        """The queue's message bound (``sys.maxsize`` when unbounded)."""
        return self._limit_msgs

    @property
    def pending_bytes_limit(self) -> int:
        """The queue's byte bound (``sys.maxsize`` when unbounded)."""
        return self._limit_bytes

    def discard_pending(self) -> None:
        """Drop the messages queued and not yet handed out."""
        self._pending.clear()
        self._pending_bytes = 0

    def cancel_callback_task(self) -> None:
        """Cancel the task that runs the callback, if one runs (after an
        unsubscribe that drops what was queued)."""
        t = self._task
        if t is not None and not t.done():
            t.cancel()

    # ---------------------------------------------------------------- driver side
    def _deliver(self, msg: Msg) -> None:
        n = len(msg.data)
        pending = self._pending
        if len(pending) >= self._limit_msgs or self._pending_bytes + n > self._limit_bytes:
            self.dropped += 1
            if not self._slow or self.report_each_drop:
                # once per episode (it ends when the consumer has caught up),
                # or each message for nats-py's surface (tclnats_py.natspy)
                self._slow = True
                self._client._report(make_error(
                    "ErrSlowConsumer", f"Slow consumer on subject {self.subject}: messages dropped",
                    sid=self.sid, subject=self.subject))
            return
        if self._parked:
            self._run_now(msg)
            return
        pending.append(msg)
        self._pending_bytes += n
        if not self._busy and self._cb is not None:
            self._busy = True
            self._client._busy_subs += 1
        if self._waiters:
            self._wake()

    def _deliver_many(self, msgs: list) -> None:
        """``_deliver`` for each of ``msgs``, in order, with the same outcome:
        while the consumer task waits with nothing queued, the callbacks run
        here one after the other, the task entered once for all of them."""
        if not self._parked:
            deliver = self._deliver
            for m in msgs:
                deliver(m)
            return
        client = self._client
        cb = self._cb
        task = self._task
        ctx = self._ctx
        loop = client._loop
        i = 0
        n = len(msgs)
        while i < n and self._parked:
            try:
                if task is None or ctx is None:
                    raise RuntimeError("no consumer task")
                _enter_task(loop, task)
            except RuntimeError:  # another task runs: _run_now queues them
                break
            try:
                j, coro, y, err = ctx.run(_first_steps, self, msgs, i)
                if err is not None:
                    if isinstance(err, asyncio.CancelledError):
                        task.cancel()  # as when the task itself had run it
                    else:  # a user's callback failed: report it, keep consuming
                        client._hook_failed(cb, err, f"the message callback of the subscription to {self.subject}")
            finally:
                _leave_task(loop, task)
            i = j
            if coro is not None:
                # it waits for something: the consumer task carries on with it
                self._carry = _Resume(coro, y)
                self._parked = False
                self._busy = True
                client._busy_subs += 1
                self._wake()
                break
            if err is None and i < n:
                self._deliver(msgs[i])  # see _first_steps: dropped, or queued
                i += 1
        deliver = self._deliver
        while i < n:
            deliver(msgs[i])
            i += 1

    def _run_now(self, msg: Msg) -> None:
        """Run the callback for ``msg`` now: its consumer task waits with
        nothing queued, so order holds.  A coroutine callback runs its first
        step here as the consumer task (current task, its context); when it
        has to wait, the task goes on with the rest (_carry) and messages
        queue meanwhile.  Saves a task switch per message, and what the
        callback publishes leaves with this read's write."""
        client = self._client
        cb = self._cb
        task = self._task
        ctx = self._ctx
        loop = client._loop
        try:
            if task is None or ctx is None:
                raise RuntimeError("no consumer task")
            _enter_task(loop, task)
        except RuntimeError:  # another task runs (not from a socket event): queue it
            self._parked = False
            self._pending.append(msg)
            self._pending_bytes += len(msg.data)
            self._busy = True
            client._busy_subs += 1
            self._wake()
            return
        self.delivered += 1
        try:
            coro, y = ctx.run(_first_step, cb, msg)
            if coro is None:
                return  # done without waiting
        except asyncio.CancelledError:
            task.cancel()  # as when the task itself had run it
            return
        except Exception as e:  # a user's callback failed: report it, keep consuming
            client._hook_failed(cb, e, f"the message callback of the subscription to {self.subject}")
            return
        finally:
            _leave_task(loop, task)
        # it waits for something: the consumer task carries on with it
        self._carry = _Resume(coro, y)
        self._parked = False
        self._busy = True
        client._busy_subs += 1
        self._wake()

    def _wake(self) -> None:
        ws, self._waiters = self._waiters, []
        for w in ws:
            if not w.done():
                w.set_result(None)

    def _end(self) -> None:
        """No more messages will come; what is queued is still handed out."""
        if not self._closed:
            self._closed = True
            self._client._subs.pop(self._engine_sub.sid, None)
            self._wake()

    def take(self) -> ClientMsg:
        """The oldest queued message, taken off the queue without waiting
        (call it only when ``pending_msgs`` > 0): for a face that runs its
        own reading loop (natspy's fetch)."""
        msg = self._pending.popleft()
        self._pending_bytes -= len(msg.data)
        self.delivered += 1
        if not self._pending:
            self._slow = False
        return msg

    _take = take

    async def _consume(self) -> None:
        """The one task that runs the callback, message after message."""
        try:
            await self._consume_loop()
        finally:
            if self._busy:  # ended or cancelled with messages left
                self._busy = False
                self._client._busy_subs -= 1

    async def _consume_loop(self) -> None:
        pending = self._pending
        cb = self._cb
        is_coro = self._cb_is_coro
        client = self._client
        loop = client._loop
        popleft = pending.popleft
        while True:
            if self._carry is not None:
                carry, self._carry = self._carry, None
                try:
                    await carry
                except Exception as e:  # a user's callback failed: report it, keep consuming
                    client._hook_failed(cb, e, f"the message callback of the subscription to {self.subject}")
                continue
            if not pending:
                self._slow = False
                if self._busy:
                    self._busy = False
                    client._busy_subs -= 1
                    if not client._busy_subs and client._flush_handle is not None:
                        # every callback is done with what came: what they
                        # published leaves now, in one write, not a loop turn later
                        client._flush_handle.cancel()
                        client._flush_now()
                if self._closed:
                    return
                w = loop.create_future()
                self._waiters.append(w)
                self._parked = self._ctx is not None
                try:
                    await w
                finally:
                    self._parked = False
                continue
            msg = popleft()  # self._take(), inline
            self._pending_bytes -= len(msg.data)
            self.delivered += 1
            if not pending:
                self._slow = False
            try:
                if is_coro:
                    await cb(msg)
                else:
                    r = cb(msg)
                    if r is not None and inspect.isawaitable(r):
                        await r
            except Exception as e:  # a user's callback failed: report it, keep consuming
                client._hook_failed(cb, e, f"the message callback of the subscription to {self.subject}")

    async def _wait(self, timeout: float | None) -> None:
        loop = self._client._loop
        w = loop.create_future()
        self._waiters.append(w)
        if timeout is None:
            await w
            return
        h = loop.call_later(timeout, _expire, w, self.subject, timeout)
        try:
            await w
        finally:
            h.cancel()

    # ---------------------------------------------------------------- API
    async def next_msg(self, timeout: float | None = 1.0) -> ClientMsg:
        """The next message; ErrTimeout after ``timeout`` seconds (None: wait
        forever), ErrBadSubscription once the subscription has ended and its
        queue is empty."""
        if self._cb is not None:
            raise make_error("ErrInvalidArg", "next_msg on a subscription with a callback")
        timeout = check_timeout(timeout)
        if self._pending:
            return self._take()
        # the timeout bounds the whole wait: a wake-up whose message another
        # reader took first goes on waiting for what is left of it
        loop = self._client._loop
        deadline = None if timeout is None else loop.time() + timeout
        while not self._pending:
            if self._closed:
                raise make_error("ErrBadSubscription", f"Subscription to {self.subject} has ended")
            await self._wait(None if deadline is None else max(0.0, deadline - loop.time()))
        return self._take()

    def __aiter__(self) -> "Subscription":
        if self._cb is not None:
            raise make_error("ErrInvalidArg", "iterating a subscription with a callback")
        return self

    async def __anext__(self) -> ClientMsg:
        while not self._pending:
            if self._closed:
                raise StopAsyncIteration
            await self._wait(None)
        return self._take()

    @property
    def messages(self) -> "Subscription":
        """``async for msg in sub.messages`` (nats-py's spelling)."""
        return self.__aiter__()

    async def unsubscribe(self, limit: int = 0, *, max_msgs: int | None = None) -> None:
        """End now, or after ``limit`` messages in total (nats-py's name;
        ``max_msgs=``, nats-tcl's, says the same; when that many have already
        been received, it ends now)."""
        c = self._client
        es = self._engine_sub
        if max_msgs is not None:
            if limit:
                raise make_error("ErrInvalidArg", "limit and max_msgs both given: one of them, please")
            check_int("max_msgs", max_msgs)
        else:
            max_msgs = check_int("limit", limit)
        if es.closed:
            raise make_error("ErrBadSubscription", f"Invalid subscription ID {es.sid}")
        gone = c._engine.unsubscribe(es.sid, max_msgs)
        c._run()
        if gone:
            self._end()

    async def drain(self, timeout: float | None = None) -> None:
        """Stop interest (UNSUB), let the messages already on their way arrive
        and be handled (a PING/PONG shows they have), then end; ``timeout``
        in seconds (None: the connection's drain_timeout, 10 s by default)."""
        timeout = check_timeout(timeout, self._client._drain_timeout)
        c = self._client
        es = self._engine_sub
        if not es.closed:
            c._engine.drain(es.sid)
            c._run()
            if c.is_connected:
                try:
                    await c.flush(timeout)
                except NatsError:
                    pass
            if not es.closed and c._engine.status != CLOSED:
                c._engine.unsubscribe(es.sid)
                c._run()
        self._end()
        if self._task is not None and not self._task.done():
            try:
                await asyncio.wait_for(asyncio.shield(self._task), timeout)
            except asyncio.TimeoutError:
                self._task.cancel()


def _expire(fut, subject, timeout) -> None:
    if not fut.done():
        fut.set_exception(make_error("ErrTimeout", f"No message on {subject} within {timeout} s"))

