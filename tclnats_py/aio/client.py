"""The asyncio driver: the engine on an asyncio event loop, and the Python API.

    nc = await tclnats_py.connect("nats://localhost:4222", name="app")
    sub = await nc.subscribe("greet.*")                  # or cb=..., queue=..., max_msgs=...
    nc.publish("greet.py", b"hello", headers={"K": ["v1", "v2"]})
    msg = await sub.next_msg(timeout=1)                  # or: async for msg in sub
    reply = await nc.request("time.now", b"", timeout=1) # ErrTimeout, ErrNoResponders
    await nc.close()

Options have nats-py's names and units: times in seconds (connect_timeout,
reconnect_time_wait, ping_interval, request_timeout, flush_timeout,
drain_timeout, reconnect_jitter), milliseconds only under ``*_ms`` names
(connect_timeout_ms ...); nats-py's user_credentials, nkeys_seed, no_echo,
dont_randomize, allow_reconnect, inbox_prefix, pending_size,
discovered_server_cb, lame_duck_mode_cb, user_jwt_cb/signature_cb and
tls_handshake_first; ``tls`` (an ``ssl.SSLContext``) or ``tls_ca``,
``tls_cert``, ``tls_key``, ``tls_hostname``, ``tls_verify``; a
``reconnect_delay`` callable (server dict -> seconds) and the callbacks
``error_cb(err)``, ``status_cb(status)``, ``disconnected_cb()``,
``reconnected_cb()``, ``closed_cb()`` (plain functions or coroutine
functions).  The whole table: :mod:`tclnats_py.aio.options`.  A value out of
range or an unknown name is ErrInvalidArg (with a "did you mean").  Errors
are the engine's classes (``tclnats_py.ErrTimeout`` ...), the codes the Tcl
face throws.

The driver only moves bytes and time (see the contract in ``_engine``):

* reading is an ``asyncio.Protocol``: each ``data_received`` goes straight to
  ``Engine.receive_data`` and the effects are carried out at once;
* writing is coalesced: the engine's ``flush`` effect schedules one
  ``transport.write`` of everything queued, with ``call_soon``, so all the
  publishes of one loop turn leave in one write;
* timers are ``loop.call_later`` handles keyed like the engine's timers;
* TLS is ``loop.start_tls`` on the engine's ``tls`` effect (after INFO);
* each subscription with a callback has a queue and one consumer task (no task
  per message); past its pending limits messages are dropped and reported once
  per episode as ErrSlowConsumer to ``error_cb``, as the official clients do.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import inspect
import logging
import socket
import ssl
import sys
import time
import types
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Optional, Sequence, Union

from tclnats_py.engine.effects import (CancelTimer, Close, Deliver, DeliverMany, ErrorChanged, Flush, InfoReceived, Log, Open,
                       PingDone, PongReceived, RequestDone, RequestReply, StartTimer, StartTls,
                       StatusChanged, SubGone, SubsCleared, UnknownEffect)
from tclnats_py.engine.connection import CLOSED, CONNECTED, RECONNECTING, Engine, Msg, Request
from tclnats_py.engine.connection import Subscription as _EngineSub
from tclnats_py.errors import NatsError, make_error
from tclnats_py.credentials import read_credentials
from tclnats_py.engine.options import Options
from tclnats_py.engine.headers import Headers
from tclnats_py.aio.options import translate
from tclnats_py.aio import spin as _spin

if TYPE_CHECKING:  # names used in annotations only
    from typing_extensions import Unpack  # (typing.Unpack from 3.11; only type checkers read it)
    from tclnats_py.aio.jetstream import JetStream
    from tclnats_py.aio.micro import Service
    from tclnats_py.aio.options import ConnectOptions

__all__ = ["Client", "Subscription", "ClientMsg", "connect", "DEFAULT_SERVER", "Payload", "HeadersArg",
           "MsgHandler", "ErrorHandler"]

#: a message body: bytes-like, str (sent as UTF-8) or None (empty)
Payload = Union[bytes, bytearray, memoryview, str, None]
#: headers to publish: name -> value or list of values (str or bytes); a received Headers too
HeadersArg = Optional[Mapping[str, Union[str, bytes, Sequence[Union[str, bytes]]]]]
#: a message callback: a plain function or a coroutine function of the message
MsgHandler = Callable[["ClientMsg"], Any]
#: an error callback: a plain function or a coroutine function of the exception
ErrorHandler = Callable[[Exception], Any]

DEFAULT_SERVER = "nats://localhost:4222"

# no NullHandler: what this logger says at WARNING and above reaches the
# root logger's handlers, or logging.lastResort (stderr) when there are none,
# as asyncio's "Task exception was never retrieved" does
_log = logging.getLogger("tclnats_py")
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}

# about this many bytes go to the transport per write (Engine.data_to_send(limit))
_WRITE_CHUNK = 256 * 1024
# the read buffer of a connection (_Protocol.get_buffer): what one read takes at most
_READ_SIZE = 256 * 1024
# the transport's own buffer: past this it asks us to pause writing (less
# when write_buf_size is small, see _Protocol.connection_made)
_TRANSPORT_HIGH = 1024 * 1024


class _Ready:
    """What publish() returns when nothing has to wait: awaiting it is free."""

    __slots__ = ()

    def __await__(self):
        return iter(())

    def __repr__(self):
        return "<publish: queued>"


_READY = _Ready()


class _Deferred:
    """The write a read asked for, done at the end of that read
    (``Client._flush_handle`` while ``_Protocol.data_received`` runs)."""

    __slots__ = ()

    def cancel(self) -> None:
        pass


_DEFERRED = _Deferred()


class _WaitForSocket:
    """What publish() returns when more than ``write_buf_size`` bytes wait
    for the socket: awaiting it waits until they are down to half, at most
    ``flush_timeout`` (then ErrTimeout).  Not awaiting it costs nothing."""

    __slots__ = ("client",)

    def __init__(self, client):
        self.client = client

    def __await__(self):
        return self.client._wait_for_socket().__await__()

    def __repr__(self):
        return "<publish: queued, the socket is behind>"


def _seconds_delay(fn):
    """A reconnect_delay function (server dict -> seconds) as the engine's (-> ms)."""
    def delay(server: dict) -> int:
        v = fn(server)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v <= 86400):
            raise make_error("ErrInvalidArg", f"reconnect_delay returned {v!r}: seconds (0 to 86400) expected")
        return int(round(v * 1000))
    return delay


# the publish fast path's framing (compiled when the accelerator is built)
from tclnats_py.engine.protocol import (DONE as _DONE, STEP_OTHER as _STEP_OTHER, pub_frame as _pub_frame,  # noqa: E402
                                        pub_head as _pub_head, step as _step)

# argument checks: the rules both faces share live in _validate
from tclnats_py.engine.validate import (MAX_TIMEOUT, _to_bytes, check_headers, check_int, check_seconds,  # noqa: E402,F401
                        check_str, check_timeout)


def _check_msg(msg) -> Msg:
    if not isinstance(msg, Msg):
        raise make_error("ErrInvalidArg", f"A message expected, not {type(msg).__name__}")
    return msg


def _call_user(client: "Client", fn, *args, what: str | None = None) -> None:
    """Call a user hook (plain or coroutine function; a coroutine is awaited
    in a task of the client); its failure goes to :meth:`Client._hook_failed`."""
    try:
        r = fn(*args)
        if inspect.isawaitable(r):
            client._spawn(_await_user(client, fn, r, what))
    except Exception as e:  # the user's hook failed: report it, keep the driver running
        client._hook_failed(fn, e, what)


async def _await_user(client: "Client", fn, awaitable, what: str | None) -> None:
    try:
        await awaitable
    except Exception as e:  # the user's coroutine failed
        client._hook_failed(fn, e, what)


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


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


class _Protocol(asyncio.BufferedProtocol):
    """One TCP (then maybe TLS) connection attempt of a client.

    ``attempt`` tells the client's current connection from older ones: late
    events of a socket the engine has already given up are ignored.

    Reads go into one buffer of the connection (``get_buffer``): the
    transport's own reads allocate _READ_SIZE bytes each and shrink them
    to what came, which glibc serves with mmap, mremap and munmap, three
    system calls for each read of a round trip.
    """

    __slots__ = ("client", "attempt", "_view")

    def __init__(self, client: "Client", attempt: int):
        self.client = client
        self.attempt = attempt
        self._view: memoryview | None = None

    def get_buffer(self, sizehint):
        if self._view is None:
            self._view = memoryview(bytearray(_READ_SIZE))
        return self._view

    def buffer_updated(self, nbytes):
        # (bytes: the parser keeps slices of what it is given)
        self.data_received(self._view[:nbytes].tobytes())

    def connection_made(self, transport):
        c = self.client
        if c._attempt != self.attempt:
            transport.close()
            return
        c._transport = transport
        c._paused = False
        # the transport pauses us well before write_buf_size, so its resume
        # events are what wakes publishers waiting for the socket
        high = max(16 * 1024, min(_TRANSPORT_HIGH, c._engine.options.write_buf_size // 4))
        transport.set_write_buffer_limits(high, high // 4)
        c._engine.socket_connected()
        c._run()

    def data_received(self, data):
        c = self.client
        if c._attempt == self.attempt:
            # a write asked for meanwhile is not scheduled (_DEFERRED): it is
            # done below, or scheduled then (a handle cancelled later would
            # still cost the loop a turn, and a poll of the sockets)
            c._reading = True
            try:
                c._engine.receive_data(data)
                c._run()
            finally:
                c._reading = False
                if c._flush_handle is _DEFERRED:
                    c._flush_handle = None
                    if c._busy_subs:  # callbacks still at work: after them, as ever
                        c._flush_handle = c._loop.call_soon(c._flush_now)
                    else:
                        c._flush_now()
            if c._flush_handle is not None and not c._busy_subs:
                # the callbacks that ran now are done: what they published
                # (replies) leaves with this read, not a loop turn later
                c._flush_handle.cancel()
                c._flush_now()

    def eof_received(self):
        return False  # close the transport; connection_lost reports it

    def pause_writing(self):
        c = self.client
        if c._attempt == self.attempt:
            c._paused = True

    def resume_writing(self):
        c = self.client
        if c._attempt == self.attempt:
            c._paused = False
            c._write_more()

    def connection_lost(self, exc):
        c = self.client
        if c._attempt == self.attempt:
            c._transport = None
            c._engine.connection_lost(str(exc) if exc else None)
            c._run()


# a coroutine callback's first step runs as part of its subscription's
# consumer task (asyncio.current_task() is that task), in the task's context
_enter_task: Any = getattr(asyncio.tasks, "_enter_task", None)
_leave_task: Any = getattr(asyncio.tasks, "_leave_task", None)
_CoroutineType = types.CoroutineType
_EAGER = sys.version_info >= (3, 11) and _enter_task is not None and _leave_task is not None


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
            r = r.__await__()
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
                    r = r.__await__()
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


class Subscription:
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

    def __repr__(self) -> str:
        return f"<Subscription sid={self.sid} subject={self.subject!r} queue={self.queue!r}>"

    # ---------------------------------------------------------------- state
    @property
    def sid(self) -> int:
        return self._engine_sub.sid

    @property
    def max_msgs(self) -> int:
        return self._engine_sub.max_msgs

    @property
    def received(self) -> int:
        """Messages the engine received for this subscription (delivered or dropped)."""
        return self._engine_sub.received

    @property
    def pending_msgs(self) -> int:
        return len(self._pending)

    @property
    def pending_bytes(self) -> int:
        return self._pending_bytes

    @property
    def is_active(self) -> bool:
        return not self._closed

    @property
    def interest_ended(self) -> bool:
        """True once the engine ended this subscription's interest (it was
        unsubscribed, or reached its ``max_msgs``); queued messages may remain."""
        return self._engine_sub.closed

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


class _Gather:
    """Handler of a request_many: the replies so far and the future of the end."""

    __slots__ = ("msgs", "fut")

    def __init__(self, fut):
        self.msgs = []
        self.fut = fut


class Client:
    """One NATS connection: the engine driven by an asyncio loop.

    ``Client(servers, **options)`` then ``await client.connect()``, or
    ``await tclnats_py.connect(servers, **options)``, or ``async with Client(...)``.
    """

    def __init__(self, servers: str | Sequence[str] | None = None, **options: Unpack[ConnectOptions]) -> None:
        self._engine = Engine(Options(), clock=lambda: int(time.time() * 1000), lang="python",
                              version=_version())
        # the user's hooks (plain or coroutine functions), set by _configure
        self._error_cb: Any = None
        self._status_cb: Any = None
        self._disconnected_cb: Any = None
        self._reconnected_cb: Any = None
        self._closed_cb: Any = None
        self._discovered_server_cb: Any = None
        self._lame_duck_mode_cb: Any = None
        self._signature_cb: Any = None
        self._user_jwt_cb: Any = None
        self._allow_reconnect = True
        self._drain_timeout = 10.0
        self._spin_time = _spin.default()  # (TCLNATS_SPIN_US) before the options, which may set it
        self._spin_sel: _spin.SpinningSelector | None = None
        self._known_servers: set = set()
        self._ldm = False
        self._tls: ssl.SSLContext | None = None
        self._tls_opts: dict[str, Any] = {"tls_ca": None, "tls_cert": None, "tls_key": None, "tls_hostname": None,
                          "tls_verify": True}
        self._ssl_ctx: ssl.SSLContext | None = None
        # set by connect(); the methods that need it before then go through _need_loop()
        self._loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self._transport: Any = None  # the asyncio transport of the current attempt
        self._attempt = 0
        self._timers: dict = {}
        self._deadlines: dict = {}  # Request -> loop time of its timeout
        self._deadline_timer: asyncio.TimerHandle | None = None
        self._deadline_at = 0.0
        self._flush_handle: asyncio.Handle | _Deferred | None = None
        self._reading = False       # in _Protocol.data_received: a write waits for its end (_DEFERRED)
        self._paused = False        # the transport asked us to stop writing (pause_writing)
        self._ready: Any = _READY   # what publish() returns: a done future once connect() has a loop
        self._socket_waiters: list = []  # futures of publishers waiting for the socket
        self._subs: dict[int, Subscription] = {}
        self._busy_subs = 0  # callback subscriptions with messages being handled
        # subject -> protocol.pub_head(subject, size) once checked: a frame is
        # then made by protocol.pub_frame (no formatting per message)
        self._pub_heads: dict[str, tuple[bytes, int, bytes]] = {}
        self._pub_max = 0  # the server's max_payload (0 until its INFO): the fast path's bound
        self._status_waiters: list = []
        self._tasks: set = set()
        self._open_task: asyncio.Task | None = None
        self._prev_status = CLOSED
        self._engine.msg_class = type("Msg", (ClientMsg,), {"__slots__": (), "_client": self})
        self._engine.headers_class = Headers  # msg.headers["K"] is the first value; get_all("K") every one
        self._engine.deliver_batches = True  # a read's messages for a subscription in one effect (_run)
        self._configure(servers, options)

    def _configure(self, servers: str | Sequence[str] | None, options: Mapping[str, Any]) -> None:
        """Apply ``connect``'s keyword arguments (see tclnats_py.aio.options):
        everything is checked before anything is applied."""
        eng = self._engine
        opts = dict(options)
        servers = opts.pop("servers", servers)
        engine_opts, driver = translate(opts)
        if engine_opts:
            eng.options.update(engine_opts)  # checks (raises) before it assigns
        for k, v in driver.items():
            if k == "reconnect_delay":
                eng.reconnect_delay = None if v is None else _seconds_delay(v)
            elif k == "reconnect_delay_ms":
                eng.reconnect_delay = v
            elif k == "tls":
                self._tls = v
                self._ssl_ctx = None
            elif k == "tls_handshake_first":
                eng.tls_first = v
            elif k.startswith("tls_"):
                self._tls_opts[k] = v
                self._ssl_ctx = None
            elif k == "inbox_prefix":
                eng.inbox_prefix = v
            elif k == "retry_on_failed_connect":
                eng.retry_on_failed_connect = v
            else:
                setattr(self, "_" + k, v)
        if "signature_cb" in driver or "user_jwt_cb" in driver:
            eng.auth_cb = self._jwt_auth if self._signature_cb is not None else None
        if servers:
            eng.configure_servers([servers] if isinstance(servers, str) else list(servers))

    def _jwt_auth(self, nonce: str | None) -> dict:
        """CONNECT's jwt and sig from user_jwt_cb and signature_cb (nats-py's pair)."""
        jwt = self._user_jwt_cb()
        p = {"jwt": jwt.decode() if isinstance(jwt, (bytes, bytearray)) else str(jwt)}
        if nonce:
            sig = self._signature_cb(nonce)
            p["sig"] = sig.decode() if isinstance(sig, (bytes, bytearray)) else str(sig)
        return p

    # ------------------------------------------------------------ properties
    @property
    def status(self) -> str:
        """"connecting", "connected", "reconnecting" or "closed" (nats-tcl's statuses)."""
        return self._engine.status

    @property
    def is_connected(self) -> bool:
        return self._engine.status == CONNECTED

    @property
    def is_reconnecting(self) -> bool:
        return self._engine.status == RECONNECTING

    @property
    def is_closed(self) -> bool:
        return self._engine.status == CLOSED

    @property
    def engine(self) -> Engine:
        """The sans-IO engine this client drives (its public interface is
        what this face's JetStream, KV and Object Store modules use)."""
        return self._engine

    @property
    def last_error(self) -> NatsError | None:
        """The last asynchronous error; None when connected again or closed on purpose."""
        return self._engine.last_error

    @property
    def server_info(self) -> dict[str, Any]:
        return dict(self._engine.server_info)

    @property
    def current_server(self) -> tuple[str, int] | None:
        s = self._engine.pool.current
        return (s.host, s.port) if s else None

    @property
    def all_servers(self) -> list[dict[str, Any]]:
        return [s.as_dict() for s in self._engine.pool.servers]

    @property
    def stats(self) -> dict[str, int]:
        return dict(self._engine.stats)

    @property
    def max_payload(self) -> int:
        return self._engine.server_info.get("max_payload", 1048576)

    @property
    def options(self) -> Options:
        return self._engine.options

    @property
    def pending_data_size(self) -> int:
        return self._engine.pending_bytes

    def new_inbox(self) -> str:
        """A new unique inbox subject (``inbox_prefix``, default ``_INBOX``, then a NUID)."""
        return self._engine.new_inbox()

    def jetstream(self, domain: str | None = None, api_prefix: str | None = None, timeout: float = 5.0, *,
                  publish_async_max_pending: int | None = None,
                  publish_async_stall_wait: float | None = None) -> "JetStream":
        """The JetStream context (see tclnats_py.aio.jetstream): ``publish_async_max_pending``
        (default 4000) acks in flight, then ``publish_async`` waits up to
        ``publish_async_stall_wait`` (default 0.2 s) for room."""
        from tclnats_py.aio.jetstream import JetStream as JetStream
        check_timeout(timeout, what="JetStream timeout")
        kw: dict[str, Any] = {}
        if publish_async_max_pending is not None:
            kw["publish_async_max_pending"] = publish_async_max_pending
        if publish_async_stall_wait is not None:
            kw["publish_async_stall_wait"] = publish_async_stall_wait
        return JetStream(self, domain=domain, api_prefix=api_prefix, timeout=timeout, **kw)

    async def add_service(self, name: str, version: str, description: str | None = None,
                          metadata: dict[str, str] | None = None, queue_group: str | None = None) -> "Service":
        """Start a NATS service (ADR-32) on this connection: see tclnats_py.aio.micro."""
        from tclnats_py.aio.micro import add_service
        return await add_service(self, name, version, description, metadata, queue_group)

    # ------------------------------------------------------------ effects
    def spawn(self, coro: Awaitable[Any]) -> None:
        """Run ``coro`` (a coroutine or another awaitable) as a task of this
        client: it is kept referenced until it ends, and cancelled when the
        client closes.  For faces built on this one (tclnats_py.natspy) that
        start work from a callback."""
        t = asyncio.ensure_future(coro, loop=self._loop)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    _spawn = spawn

    def _report(self, err, logged: bool = False, error_cb=None) -> None:
        """An asynchronous error for ``error_cb`` (default: the client's);
        without one it is logged at ERROR by the "tclnats_py" logger (the
        engine's own errors were logged already, with its "log" effect).
        NatsErrors are logged without a traceback, anything else with it."""
        cb = error_cb or self._error_cb
        if cb is not None:
            _call_user(self, cb, err, what="error_cb")
        elif not logged:
            _log.error("%s: %s", getattr(err, "code", type(err).__name__), err,
                       exc_info=None if isinstance(err, NatsError) else err)

    def _hook_failed(self, fn, err: BaseException, what: str | None = None, error_cb=None) -> None:
        """A user's callback ``fn`` raised ``err``: it goes to ``error_cb``
        (default: the client's), as nats-py does; without one, or when the
        error_cb itself failed, it is logged at ERROR with its traceback,
        as asyncio reports a task's exception nobody retrieved."""
        cb = error_cb or self._error_cb
        if cb is not None and fn is not cb and what != "error_cb":
            _call_user(self, cb, err, what="error_cb")
            return
        _log.error("Exception in %s %s", what or "callback", _name(fn), exc_info=err)

    def run_effects(self, writing: bool = False) -> None:
        """Carry out the engine's effects, in order, until it has none left
        (``writing``: the caller writes at once, see Engine.take).  Call it
        after driving ``self.engine`` directly (e.g. ``engine.force_reconnect()``)."""
        eng = self._engine
        fx = eng.take(writing)
        while fx:
            i = 0
            n = len(fx)
            while i < n:
                f = fx[i]
                i += 1
                k = f.__class__
                if k is DeliverMany:
                    sub = f.sub.handler
                    if sub is None:
                        continue
                    if sub.__class__ is Subscription:
                        sub._deliver_many(f.msgs)
                    else:  # another handler (the JetStream async publisher's acks)
                        deliver = sub._deliver
                        for m in f.msgs:
                            deliver(m)
                elif k is Deliver:
                    esub = f.sub
                    sub = esub.handler
                    if sub is None:
                        continue
                    # the Deliver effects that follow for the same subscription
                    # go to it in one call (their order kept: nothing between them)
                    j = i
                    while j < n:
                        g = fx[j]
                        if g.__class__ is not Deliver or g.sub is not esub:
                            break
                        j += 1
                    if j == i:
                        sub._deliver(f.msg)
                    elif sub.__class__ is Subscription:
                        sub._deliver_many([g.msg for g in fx[i - 1:j]])
                        i = j
                    else:  # another handler (the JetStream async publisher's acks)
                        deliver = sub._deliver
                        i -= 1
                        while i < j:
                            deliver(fx[i].msg)
                            i += 1
                elif k is Flush:
                    if self._flush_handle is None:
                        self._flush_handle = _DEFERRED if self._reading else self._loop.call_soon(self._flush_now)
                elif k is RequestDone:
                    self._request_done(f.req, f.outcome)
                elif k is StartTimer:
                    key = f.key
                    if key.__class__ is Request:
                        # all request deadlines share one loop timer
                        when = self._loop.time() + f.ms / 1000.0
                        self._deadlines[key] = when
                        if self._deadline_timer is None or when < self._deadline_at:
                            self._arm_deadlines(when)
                        continue
                    old = self._timers.pop(key, None)
                    if old is not None:
                        old.cancel()
                    self._timers[key] = self._loop.call_later(f.ms / 1000.0, self._timer_fired, key)
                elif k is CancelTimer:
                    if f.key.__class__ is Request:
                        self._deadlines.pop(f.key, None)
                        continue
                    h = self._timers.pop(f.key, None)
                    if h is not None:
                        h.cancel()
                elif k is PingDone:
                    self._pong(f.ping.handler, f.ok)
                elif k is RequestReply:
                    h = f.req.handler
                    if h.__class__ is _Gather:
                        h.msgs.append(f.msg)
                elif k is SubGone:
                    sub = self._subs.get(f.sid)
                    if sub is not None:
                        sub._end()
                elif k is SubsCleared:
                    for sub in list(self._subs.values()):
                        sub._end()
                elif k is StatusChanged:
                    self._on_status(f.status)
                elif k is ErrorChanged:
                    if f.error is not None:
                        self._report(f.error, logged=True)
                elif k is Open:
                    self._open(f.server)
                elif k is StartTls:
                    self._spawn(self._start_tls(f.server, self._attempt))
                elif k is Close:
                    self._close_transport()
                elif k is Log:
                    lvl = _LEVELS.get(f.level, logging.INFO)
                    if _log.isEnabledFor(lvl):
                        _log.log(lvl, f.text)
                elif k is InfoReceived:
                    mp = f.info.get("max_payload")
                    self._pub_max = mp if isinstance(mp, int) else sys.maxsize
                    if self._discovered_server_cb is not None or self._lame_duck_mode_cb is not None:
                        self._info_callbacks(f.info)
                elif k is PongReceived:
                    continue  # a PONG matters only to user pings (PingDone)
                else:
                    raise UnknownEffect(f)
            fx = eng.take(writing)
        if self._transport is not None and eng.status != CONNECTED and eng.want_write:
            # handshake traffic (CONNECT, PING, PONG) goes out at once
            self._transport.write(eng.data_to_send())

    _run = run_effects

    def _info_callbacks(self, info: dict) -> None:
        """nats-py's discovered_server_cb (a server joined the pool, learnt
        from an INFO after the first) and lame_duck_mode_cb (the server said
        ``ldm``)."""
        known = {(s.host, s.port) for s in self._engine.pool.servers}
        new = known - self._known_servers
        first = not self._known_servers
        self._known_servers |= known
        if new and not first and self._discovered_server_cb is not None:
            _call_user(self, self._discovered_server_cb)
        if info.get("ldm") and not self._ldm and self._lame_duck_mode_cb is not None:
            _call_user(self, self._lame_duck_mode_cb)
        self._ldm = bool(info.get("ldm"))

    def _flush_now(self) -> None:
        self._flush_handle = None
        self._write_more()

    def write_pending(self) -> None:
        """Hand the engine's queue to the transport in chunks until it is
        empty or the transport asks us to pause (its buffer past
        _TRANSPORT_HIGH): what the socket cannot take yet stays in the
        engine, one copy, bounded by the publishers' waiting.  A face calls
        it to write now rather than at the next flush (nats-py's forced
        flush past pending_size)."""
        t = self._transport
        eng = self._engine
        if t is not None:
            while not self._paused and eng.want_write:
                # (a publisher writes once _WRITE_CHUNK is queued: what is
                # queued then, up to twice that, leaves whole, in one join)
                t.write(eng.data_to_send(2 * _WRITE_CHUNK))
        if self._socket_waiters and (eng.status != CONNECTED or self._socket_buffered() * 2
                                     < eng.options.write_buf_size):
            waiters, self._socket_waiters = self._socket_waiters, []
            for w in waiters:
                if not w.done():
                    w.set_result(None)

    _write_more = write_pending

    def _socket_buffered(self) -> int:
        """Bytes published that the socket has not taken yet."""
        t = self._transport
        return self._engine.pending_bytes + (t.get_write_buffer_size() if t is not None else 0)

    def _backlog(self):
        """publish() found a chunk's worth queued: write what the transport
        takes, then say whether the caller should wait (an awaitable) or
        must fail (ErrOutboundBufferLimit, the message not accepted)."""
        eng = self._engine
        if eng.status != CONNECTED:
            return None  # the reconnect buffer's bound applies (Engine.publish)
        if not self._paused:
            self._write_more()
        t = self._transport
        buffered = t.get_write_buffer_size() if t is not None else 0
        pressure = eng.write_pressure(buffered)
        if pressure == 2:
            eng.check_outbound(buffered)
        return _WaitForSocket(self) if pressure else None

    async def _wait_for_socket(self) -> None:
        eng = self._engine
        timeout = eng.options.flush_timeout / 1000.0
        loop = self._loop
        deadline = loop.time() + timeout
        while eng.status == CONNECTED and self._socket_buffered() * 2 >= eng.options.write_buf_size:
            left = deadline - loop.time()
            if left <= 0:
                raise make_error("ErrTimeout", f"The socket took nothing for {timeout:g} s (flush_timeout): "
                                 f"{self._socket_buffered()} bytes wait to be written to {eng.host_port()}")
            w = loop.create_future()
            self._socket_waiters.append(w)
            try:
                await asyncio.wait_for(w, left)
            except asyncio.TimeoutError:
                pass

    def _arm_deadlines(self, when: float) -> None:
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
        self._deadline_at = when
        self._deadline_timer = self._loop.call_at(when, self._deadlines_due)

    def _deadlines_due(self) -> None:
        """The request deadlines' timer: time out every request that is due."""
        self._deadline_timer = None
        now = self._loop.time()
        dl = self._deadlines
        due = [r for r, when in dl.items() if when <= now]
        for r in due:
            del dl[r]
            self._engine.timer_fired(r)
        if dl:
            self._arm_deadlines(min(dl.values()))
        self._run()

    def _timer_fired(self, key) -> None:
        self._timers.pop(key, None)
        self._engine.timer_fired(key)
        self._run()

    @staticmethod
    def _pong(fut, result) -> None:
        if fut is None or fut.done():
            return
        if result is True:
            fut.set_result(True)
        elif result is False:
            fut.set_exception(make_error("ErrTimeout", "PING timeout"))
        else:
            fut.set_exception(make_error("ErrConnectionClosed", "Connection closed"))

    def _on_status(self, status: str) -> None:
        prev, self._prev_status = self._prev_status, status
        if status == RECONNECTING and not self._allow_reconnect:
            # allow_reconnect=False (nats-py): a lost connection closes the client
            self._engine.disconnect()
        waiters, self._status_waiters = self._status_waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(status)
        if self._status_cb is not None:
            _call_user(self, self._status_cb, status)
        if prev == CONNECTED and self._disconnected_cb is not None:
            _call_user(self, self._disconnected_cb)
        if status == CONNECTED and prev == RECONNECTING and self._reconnected_cb is not None:
            _call_user(self, self._reconnected_cb)
        if status == CLOSED and self._closed_cb is not None:
            _call_user(self, self._closed_cb)

    def _open(self, server) -> None:
        self._engine.set_credentials(read_credentials(self._engine.options))
        self._attempt += 1
        attempt = self._attempt

        async def go():
            try:
                await self._loop.create_connection(lambda: _Protocol(self, attempt), server.host, server.port)
            except Exception as e:  # OSError mostly; ValueError/UnicodeError for a bad host name
                if attempt == self._attempt:
                    self._engine.socket_failed(getattr(e, "strerror", None) or str(e) or type(e).__name__,
                                               unresolved=isinstance(e, socket.gaierror))
                    self._run()
            # on success _Protocol.connection_made has told the engine
        self._open_task = self._loop.create_task(go())

    def _ssl_context(self) -> ssl.SSLContext:
        if self._tls is not None:
            return self._tls
        if self._ssl_ctx is None:
            o = self._tls_opts
            ctx = ssl.create_default_context(cafile=o["tls_ca"])
            if not o["tls_verify"]:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            if o["tls_cert"]:
                ctx.load_cert_chain(o["tls_cert"], o["tls_key"])
            self._ssl_ctx = ctx
        return self._ssl_ctx

    async def _start_tls(self, server, attempt: int) -> None:
        transport = self._transport
        if transport is None or attempt != self._attempt:
            return
        eng = self._engine
        try:
            ctx = self._ssl_context()
            hostname = self._engine.pool.tls_name(server, self._tls_opts["tls_hostname"])
            new = await self._loop.start_tls(transport, transport.get_protocol(), ctx, server_hostname=hostname)
        except Exception as e:  # ssl.SSLError (verification...), OSError, ValueError (bad context)
            if attempt == self._attempt:
                eng.tls_failed(getattr(e, "reason", None) or str(e) or type(e).__name__)
                self._run()
            return
        if attempt != self._attempt or new is None:
            # the attempt ended during the handshake (connect timeout, close):
            # start_tls gives None when its transport was closed under it
            if new is not None:
                new.close()
            elif attempt == self._attempt:
                eng.tls_failed("the connection closed during the TLS handshake")
                self._run()
            return
        self._transport = new
        eng.tls_done()
        self._run()

    def _close_transport(self) -> None:
        self._attempt += 1  # events of this socket are stale from now on
        t = self._transport
        self._transport = None
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if self._open_task is not None:
            if not self._open_task.done():
                self._open_task.cancel()
            self._open_task = None
        data = self._engine.data_to_send()
        self._paused = False
        if t is not None:
            if data:
                t.write(data)
            t.close()
            if t.get_write_buffer_size():
                # a peer that takes nothing must not keep the socket for good:
                # what it has not taken after flush_timeout is dropped
                self._loop.call_later(self._engine.options.flush_timeout / 1000.0, t.abort)
        if self._socket_waiters:
            self._write_more()  # not connected any more: the waiting publishers go on

    @staticmethod
    def _request_done(req: Request, outcome: str) -> None:
        fut = req.handler
        if fut.__class__ is _Gather:
            fut = fut.fut
        if fut is None or fut.done():
            return
        if outcome == "msg":
            fut.set_result(req.msg)
        elif outcome == "no_responders":
            fut.set_exception(make_error("ErrNoResponders", f"No responders available for request to {req.subject}"))
        elif outcome == "timeout":
            fut.set_exception(make_error("ErrTimeout", f"Request to {req.subject} timed out"))
        elif outcome == "lost":
            # nats-tcl: the connection is lost for good -> the request timed out
            fut.set_exception(make_error("ErrTimeout", "Connection lost"))
        else:
            fut.set_exception(make_error("ErrConnectionClosed", "Connection closed"))

    def _awaiting_reply(self) -> bool:
        """For the spinning selector (tclnats_py.aio.spin)."""
        return self._engine.awaiting_reply

    def _need_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            raise make_error("ErrConnectionClosed", "No connection to NATS server")
        return self._loop

    # ------------------------------------------------------------ API: connection
    async def connect(self, servers: str | Sequence[str] | None = None, **options: Unpack[ConnectOptions]) -> "Client":
        """Connect (nats-tcl's synchronous connect): every server of the pool
        is tried once; raises the error of the only server, or ErrNoServers.
        With ``retry_on_failed_connect=True`` each server is retried as when
        reconnecting (``max_reconnect_attempts`` times, ``reconnect_time_wait``
        apart) and connect() returns once one answers.  A no-op unless the
        status is "closed"."""
        eng = self._engine
        if eng.status != CLOSED:
            return self
        self._loop = asyncio.get_running_loop()
        if _DONE is not None:
            self._ready = _DONE  # the accelerator's complete awaitable: cheaper still
        elif self._ready is _READY or self._ready.get_loop() is not self._loop:
            # awaiting a done future costs a third of awaiting _READY
            self._ready = self._loop.create_future()
            self._ready.set_result(None)
        self._configure(servers, options)
        _spin.uninstall(self._spin_sel, self)
        self._spin_sel = _spin.install(self._loop, self, self._spin_time)
        if not eng.pool.servers:
            # nothing configured, or a pool emptied by a lost connection
            eng.configure_servers(list(eng.options.servers) or [DEFAULT_SERVER])
        eng.connect()
        self._run()
        made = False  # connected, then lost at once (the engine's handshake_eof_connects)
        try:
            while eng.status not in (CONNECTED, CLOSED) and not made:
                w = self._loop.create_future()
                self._status_waiters.append(w)
                made = (await w) == CONNECTED and eng.handshake_eof_connects
        except asyncio.CancelledError:
            # the caller gave up (e.g. asyncio.wait_for): stop trying
            eng.disconnect()
            self._run()
            raise
        if eng.status != CONNECTED and not made:
            err = eng.last_error
            if err is not None and len(eng.options.servers) <= 1:
                raise make_error(err.code, str(err))
            raise make_error("ErrNoServers", "No servers available for connection"
                             + (f" (last error: {err})" if err is not None else ""))
        return self

    async def close(self) -> None:
        """Flush what is buffered, close the socket; pending requests fail
        with ErrConnectionClosed, subscriptions end (queued messages of
        callback subscriptions are discarded)."""
        if self._loop is None:
            return
        subs = list(self._subs.values())
        self._engine.disconnect()
        self._run()
        _spin.uninstall(self._spin_sel, self)
        self._spin_sel = None
        for h in self._timers.values():
            h.cancel()
        self._timers.clear()
        self._deadlines.clear()
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None
        if self._open_task is not None and not self._open_task.done():
            self._open_task.cancel()
        for sub in subs:
            sub._end()
            if sub._task is not None and not sub._task.done():
                sub._task.cancel()
        await asyncio.sleep(0)  # let the transport run its close

    async def drain(self, timeout: float | None = None) -> None:
        """Drain every subscription (UNSUB, handle what is on its way, let the
        callbacks finish), then flush the publishes and close; ``timeout`` in
        seconds (None: the drain_timeout option, 10 s by default)."""
        timeout = check_timeout(timeout, self._drain_timeout)
        eng = self._engine
        if eng.status == CLOSED:
            return
        subs = [s for s in self._subs.values() if not s._engine_sub.closed]
        for s in subs:
            eng.drain(s.sid)
        self._run()
        if self.is_connected:
            try:
                await self.flush(timeout)
            except NatsError:
                pass
        for s in subs:
            if not s._engine_sub.closed and eng.status != CLOSED:
                eng.unsubscribe(s.sid)
            s._end()
        self._run()
        tasks = [s._task for s in subs if s._task is not None and not s._task.done()]
        if tasks:
            await asyncio.wait(tasks, timeout=timeout)
        await self.close()

    async def flush(self, timeout: float = 10.0) -> None:
        """A PING/PONG round trip: everything published before has reached the server."""
        if timeout is None:
            raise make_error("ErrBadTimeout", "Invalid timeout None")
        timeout = check_timeout(timeout)
        loop = self._need_loop()
        fut = loop.create_future()
        self._engine.ping(max(1, int(timeout * 1000)), fut)
        self._run()
        await fut

    async def ping(self, timeout: float = 10.0) -> bool:
        """nats-tcl's ping: True, ErrTimeout, or ErrConnectionClosed."""
        await self.flush(timeout)
        return True

    async def __aenter__(self) -> "Client":
        if self._engine.status == CLOSED:
            await self.connect()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    # ------------------------------------------------------------ API: messages
    def publish(self, subject: str, data: Payload = b"", reply: str | None = None,
                headers: HeadersArg = None) -> Awaitable[None]:
        """Queue a message (bytes or str); it leaves with the next write of this
        loop turn, or once (re)connected.  ``await nc.publish(...)`` (the
        nats-py form) also waits while more than ``write_buf_size`` bytes wait
        for the socket, so a fast publisher keeps pace with it; without
        ``await`` nothing waits, and past 8 times that plus the reconnect buffer
        (Engine.hard_cap) ErrOutboundBufferLimit refuses the message.  While not connected, past ``reconnect_buf_size``
        (``pending_size``) bytes, ErrReconnectBufExceeded refuses it."""
        if headers is None:
            # the common case: a subject that passed the engine's checks
            # before (or, compiled, passes them now: a reply, a reply
            # subject), a bytes payload within max_payload (None otherwise)
            frame = (_pub_frame(self._pub_heads, subject, data, self._pub_max) if reply is None else
                     _pub_frame(self._pub_heads, subject, data, self._pub_max, reply,
                                self._engine.options.check_subjects))
            if frame is not None:
                eng = self._engine
                wait = self._backlog() if eng._out_size >= _WRITE_CHUNK else None
                if eng._flush_signalled and eng.status == CONNECTED:
                    # a write is scheduled already: Engine.publish_frame's steps inline
                    eng._out.append(frame)
                    eng._out_size += len(frame)
                    eng.stats["out_msgs"] += 1
                elif eng.publish_frame(frame, _WRITE_CHUNK) and eng._fx:
                    self._run()
                return wait or self._ready
        eng = self._engine
        wait = self._backlog() if eng._out_size >= _WRITE_CHUNK else None
        if reply is None and headers is None and data.__class__ is bytes and subject.__class__ is str:
            eng.publish(subject, data)  # checks (raises) as always
            heads = self._pub_heads
            if len(heads) >= 4096:
                heads.clear()
            # nats-tcl's frame: an empty reply slot
            heads[subject] = _pub_head(subject, len(data))
            if eng.has_effects:
                self._run()
            return wait or self._ready
        if headers is not None:
            check_headers(headers)
        eng.publish(subject, data if data.__class__ is bytes else _to_bytes(data), reply, headers)
        if eng.has_effects:
            self._run()
        return wait or self._ready

    def publish_msg(self, msg: Msg) -> Awaitable[None]:
        """Publish a :class:`Msg` (its subject, data, reply and headers); see :meth:`publish`."""
        _check_msg(msg)
        return self.publish(msg.subject, msg.data, msg.reply, msg.headers)

    async def subscribe(self, subject: str, queue: str | None = None, cb: MsgHandler | None = None, max_msgs: int = 0,
                        pending_msgs_limit: int | None = None,
                        pending_bytes_limit: int | None = None) -> Subscription:
        """Subscribe to ``subject`` (wildcards allowed), in queue group ``queue`` when given.

        With ``cb`` (plain or coroutine function) each message goes to it in order, in one task;
        its exceptions go to error_cb, else the logger.  Without ``cb`` read with
        ``await sub.next_msg(timeout)`` or ``async for msg in sub``.  ``max_msgs``: unsubscribe
        after that many.  ``pending_msgs_limit`` / ``pending_bytes_limit``: the local queue's bounds
        (default: the connection's; past them messages are dropped, ErrSlowConsumer).
        ErrBadSubject, ErrBadQueueName, ErrInvalidArg for bad arguments."""
        o = self._engine.options
        eng = self._engine
        if not eng.check_subject(subject, wildcard=True) or (
                eng.options.check_subjects and ">." in subject):
            # (this face also refuses ">" before the last token, which the
            # server would answer with -ERR; nats-tcl checks tokens only)
            raise make_error("ErrBadSubject", f"Invalid subject {subject}")
        if queue is not None and queue != "" and not eng.check_subject(queue, queue=True):
            raise make_error("ErrBadQueueName", f"Invalid queue {queue}")
        check_int("max_msgs", max_msgs)
        check_int("pending_msgs_limit", pending_msgs_limit, -1, allow_none=True)
        check_int("pending_bytes_limit", pending_bytes_limit, -1, allow_none=True)
        if cb is not None and not callable(cb):
            raise make_error("ErrInvalidArg", f"Invalid callback {cb!r}")
        sub = Subscription(self, subject, queue or "", cb,
                           o.pending_msgs_limit if pending_msgs_limit is None else pending_msgs_limit,
                           o.pending_bytes_limit if pending_bytes_limit is None else pending_bytes_limit)
        sub._engine_sub = self._engine.subscribe(subject, queue or "", max_msgs, handler=sub)
        self._subs[sub.sid] = sub
        if cb is not None:
            loop = self._need_loop()
            if _EAGER:
                sub._ctx = contextvars.copy_context()
                sub._task = loop.create_task(sub._consume(), context=sub._ctx)  # type: ignore[call-arg,unused-ignore]  # (3.11+)
            else:
                sub._task = loop.create_task(sub._consume())
        self._run()
        return sub

    def _timeout_ms(self, timeout) -> int:
        if timeout is None:
            return self._engine.options.request_timeout
        timeout = check_timeout(timeout)
        return max(1, int(timeout * 1000)) if timeout else 0

    async def request(self, subject: str, data: Payload = b"", timeout: float | None = None,
                      headers: HeadersArg = None, *, check_subject: bool = True) -> ClientMsg:
        """New-style request (shared inbox, first reply).  ``timeout`` in
        seconds, None: the request_timeout option.  ErrTimeout,
        ErrNoResponders, ErrConnectionClosed (closed meanwhile).
        ``check_subject=False`` sends a subject with wildcard tokens as it is
        (the server takes it; nats-py's KV with validate_keys=False does)."""
        loop = self._need_loop()
        ms = self._timeout_ms(timeout)
        if headers is not None:
            check_headers(headers)
        eng = self._engine
        if check_subject and not eng.check_subject(subject):
            # before the engine makes its shared reply subscription
            raise make_error("ErrBadSubject", f"Invalid subject {subject}")
        fut = loop.create_future()
        lone = not eng.requests and self._flush_handle is None
        # (checked above when asked: the engine need not check it again)
        req = eng.request(subject, data if data.__class__ is bytes else _to_bytes(data), ms, headers, None, fut,
                          check_subject=False)
        if lone:
            # the only request in flight and nothing else waiting for the
            # coalesced write: it leaves now, not one loop turn later
            # (requests made together still share one write)
            self._run(writing=True)
            self._flush_now()
        else:
            self._run()
        try:
            return await fut
        except asyncio.CancelledError:
            if not req.done and req.id in eng.requests:
                eng.cancel_request(req.id)
                self._run()
            raise

    async def request_msg(self, msg: Msg, timeout: float | None = None) -> ClientMsg:
        """Send a :class:`Msg` as a request; see :meth:`request`."""
        _check_msg(msg)
        return await self.request(msg.subject, msg.data, timeout, msg.headers)

    async def request_many(self, subject: str, data: Payload = b"", max_msgs: int = 1, timeout: float | None = None,
                           headers: HeadersArg = None) -> list[ClientMsg]:
        """Old-style request (an inbox of its own) gathering up to ``max_msgs``
        replies until the timeout; ErrTimeout only when none came."""
        loop = self._need_loop()
        ms = self._timeout_ms(timeout)
        check_int("max_msgs", max_msgs, 1)
        eng = self._engine
        if not eng.check_subject(subject):
            # before the engine subscribes the reply inbox
            raise make_error("ErrBadSubject", f"Invalid subject {subject}")
        if headers is not None:
            check_headers(headers)
        gather = _Gather(loop.create_future())
        req = eng.request(subject, _to_bytes(data), ms, headers, max_msgs, gather)
        self._run()
        try:
            await gather.fut
        except asyncio.CancelledError:
            if not req.done and req.id in eng.requests:
                eng.cancel_request(req.id)
                self._run()
            raise
        except NatsError as e:
            if e.code != "ErrTimeout" or not gather.msgs:
                raise
        return list(gather.msgs)


def _version() -> str:
    from tclnats_py import __version__
    return __version__


async def connect(servers: str | Sequence[str] = DEFAULT_SERVER, **options: Unpack[ConnectOptions]) -> Client:
    """Create a :class:`Client` and connect it.  The options (nats-py's names, times in
    seconds, ``*_ms`` for milliseconds) are :class:`tclnats_py.aio.options.ConnectOptions`;
    their units and defaults are the table of ``tclnats_py.aio.options`` (the Python
    guide's "Connect options")."""
    client = Client(servers, **options)
    return await client.connect()
