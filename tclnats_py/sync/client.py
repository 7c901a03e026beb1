"""The blocking client: the engine for programs that are not asyncio.

    from tclnats_py import sync

    with sync.connect("nats://localhost:4222", name="app") as nc:
        sub = nc.subscribe("greet.*")                   # or cb=..., queue=..., max_msgs=...
        nc.publish("greet.py", b"hello", headers={"K": ["v1", "v2"]})
        msg = sub.next_msg(timeout=1)                   # or: for msg in sub
        reply = nc.request("time.now", b"", timeout=1)  # ErrTimeout, ErrNoResponders

The options, their names and units are the asyncio face's (one table:
:mod:`tclnats_py.aio.options`, times in seconds, ``*_ms`` for milliseconds),
the errors its classes (``tclnats_py.ErrTimeout`` is a ``TimeoutError``), the
method names its own without ``await``.  Every method may be called from any
thread; how the threads share the connection is :mod:`tclnats_py.sync.threads`.
Callbacks (message callbacks, ``error_cb``, ``status_cb``,
``disconnected_cb`` ...) run on one thread the client owns, in order, never
while the client's lock is held; a callback may call the client.
"""

from __future__ import annotations

import atexit
import itertools
import logging
import ssl
import sys
import threading
import time
from time import monotonic as _monotonic
import weakref
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional, Sequence, Union

from tclnats_py.pyface import ClientState
from tclnats_py.engine.connection import CLOSED, CONNECTED, RECONNECTING, Engine, Msg
from tclnats_py.engine.headers import Headers
from tclnats_py.engine.options import Options, spin_time_default
from tclnats_py.engine.protocol import compiled, pub_frame as _pub_frame, pub_head as _pub_head
from tclnats_py.engine.validate import MAX_TIMEOUT, _to_bytes, check_headers, check_int, check_timeout
from tclnats_py.errors import NatsError, make_error
from tclnats_py.sync.driver import DEFAULT_SERVER, request_error
from tclnats_py.sync.subscription import Subscription, SyncMsg
from tclnats_py.sync.threads import SPARSE, WRITE_CHUNK, Dispatcher, SyncIO, after_fork_hook

if TYPE_CHECKING:
    from typing_extensions import Unpack
    from tclnats_py.sync.jetstream import JetStream
    from tclnats_py.aio.options import ConnectOptions

__all__ = ["Client", "Subscription", "SyncMsg", "connect", "DEFAULT_SERVER", "Payload", "HeadersArg"]

#: a message body: bytes-like, str (sent as UTF-8) or None (empty)
Payload = Union[bytes, bytearray, memoryview, str, None]
#: headers to publish: name -> value or list of values (str or bytes); a received Headers too
HeadersArg = Optional[Mapping[str, Union[str, bytes, Sequence[Union[str, bytes]]]]]

_log = logging.getLogger("tclnats_py")
# publish's fast path in C (None: the accelerator is off)
_SyncPub = compiled("SyncPub")
_ids = itertools.count(1)
# timeouts request() takes without check_timeout's call (a bool is neither's class)
_PLAIN_NUMBERS = (float, int)
# every client not closed yet: closed at interpreter exit, forgotten in a forked child
_live: "weakref.WeakSet[Client]" = weakref.WeakSet()
#: how long close() waits for the client's threads to end (seconds)
JOIN_TIMEOUT = 5.0


class _Gather(list):
    """Handler of a request_many: its outcome (the list) and the replies so far."""

    def __init__(self) -> None:
        super().__init__()
        self.msgs: list = []


class Client(ClientState):
    """One NATS connection shared by any number of threads.

    ``tclnats_py.sync.connect(servers, **options)``, or ``Client(servers,
    **options).connect()``, or ``with Client(...) as nc``."""

    def __init__(self, servers: str | Sequence[str] | None = None, **options: Unpack[ConnectOptions]) -> None:
        n = next(_ids)
        self._callbacks = Dispatcher(f"tclnats-sync-hooks-{n}", self._hook_failed_any)
        self._io = io = SyncIO(Options(), f"tclnats-sync-{n}", self._callbacks, self._on_status, self._on_error,
                               tls=self._ssl_context, lang="python", version=_version())
        self._engine = eng = io.engine
        eng.msg_class = type("Msg", (SyncMsg,), {"__slots__": (), "_client": self})
        eng.headers_class = Headers
        eng.deliver_batches = True
        io.info_hook = self._on_info
        self._init_options()  # the user's hooks and TLS options (ClientState), set by _configure
        self._spin_time = spin_time_default()  # (TCLNATS_SPIN_US) before the options, which may set it
        # subject -> protocol.pub_head(subject, size) once the engine accepted it (publish's fast path)
        self._pub_heads: dict[str, tuple[bytes, int, bytes]] = {}
        self._pub_max = 0  # the server's max_payload (0 until its INFO): the fast path's bound
        self._sync_pub: Any = None  # the C fast path's object (SyncPub), when compiled
        self._fast_pub = self._new_fast_pub()
        # request subjects the engine's check passed (request's fast path; emptied by connect())
        self._req_subjects: set[str] = set()
        # (timeout, its ms, ms / 1000) of the last request's plain-number timeout
        # (at first a timeout no caller has): one tuple, read and replaced whole,
        # so that threads see a consistent one
        self._last_timeout: tuple[Any, int, float] = (object(), 0, 0.0)
        self._configure(servers, options)

    def _new_fast_pub(self) -> Callable[[str, Payload, Optional[str]], Optional[bool]]:
        """publish's fast path: one C call (SyncPub) when compiled, else :meth:`_py_fast_pub`."""
        if _SyncPub is None:
            return self._py_fast_pub
        pub = _SyncPub(self._engine, self._io.lock, self._pub_heads, CONNECTED, WRITE_CHUNK, self._after_fast_pub)
        pub.max_payload = self._pub_max
        self._sync_pub = pub
        return pub.publish

    def _driver_option(self, key: str, value: Any) -> bool:
        if key == "tls_hostname":
            self._io.tls_hostname = value
        elif key == "allow_reconnect":
            self._io.allow_reconnect = value
        else:
            return False
        return True

    @property
    def _state_lock(self) -> threading.Lock:  # type: ignore[override]
        return self._io.lock

    # ------------------------------------------------------------ properties (the rest: ClientState)
    @property
    def engine(self) -> Engine:
        """The sans-IO engine this client drives; call it only holding :attr:`lock`."""
        return self._engine

    @property
    def lock(self) -> threading.Lock:
        """The lock around the engine (for faces built on this one)."""
        return self._io.lock

    def jetstream(self, domain: str | None = None, api_prefix: str | None = None, timeout: float = 5.0, *,
                  publish_async_max_pending: int | None = None,
                  publish_async_stall_wait: float | None = None) -> JetStream:
        """The JetStream context (:mod:`tclnats_py.sync.jetstream`; KV and Object
        Store from there): ``timeout`` (seconds) bounds each API call;
        ``publish_async_max_pending`` (default 4000) acks in flight, then
        ``publish_async`` waits up to ``publish_async_stall_wait`` (default 0.2 s) for room."""
        from tclnats_py.sync.jetstream import JetStream
        kw: dict[str, Any] = {}
        if publish_async_max_pending is not None:
            kw["publish_async_max_pending"] = publish_async_max_pending
        if publish_async_stall_wait is not None:
            kw["publish_async_stall_wait"] = publish_async_stall_wait
        return JetStream(self, domain, api_prefix, timeout, **kw)

    # ------------------------------------------------------------ connection
    def connect(self, servers: str | Sequence[str] | None = None, **options: Unpack[ConnectOptions]) -> "Client":
        """Connect: every server of the pool is tried once; raises the error
        of the only server, or ErrNoServers.  With ``retry_on_failed_connect``
        each server is retried as when reconnecting.  A no-op unless closed."""
        io = self._io
        eng = self._engine
        with io.lock:
            if eng.status != CLOSED:
                return self
            self._configure(servers, options)
            self._req_subjects.clear()  # (check_subjects may have changed)
            io.spin_us = round(self._spin_time * 1e6)
            if not eng.pool.servers:
                eng.configure_servers(list(eng.options.servers) or [DEFAULT_SERVER])
            if self._callbacks.stopped:  # closed before: a new hooks thread
                self._callbacks = io.dispatcher = Dispatcher(self._callbacks.name, self._hook_failed_any)
            io.stopping = False
            eng.connect()
            io._run()
            try:
                io.wait(lambda: eng.status == CONNECTED or eng.status == CLOSED)
            except NatsError:
                pass  # closed for good with nothing left to wait for: the error below
            ok = eng.status == CONNECTED
            err = eng.last_error
        if not ok:
            self._stop_threads()
            if err is not None and len(eng.options.servers) <= 1:
                raise make_error(err.code, str(err))
            raise make_error("ErrNoServers", "No servers available for connection"
                             + (f" (last error: {err})" if err is not None else ""))
        io.start()
        _live.add(self)
        return self

    def close(self) -> None:
        """Write what is buffered, close the socket; waiting requests fail
        with ErrConnectionClosed, subscriptions end (what callback
        subscriptions had queued is still handed to their callbacks).  From
        any thread, a callback's too; the client's threads end (joined unless
        called from one of them)."""
        io = self._io
        with io.lock:
            self._engine.disconnect()
            io._run()
            io._timers.clear()
            io._armed.clear()
            io.cond.notify_all()
        self._stop_threads()
        _live.discard(self)

    def _stop_threads(self) -> None:
        self._io.stop(JOIN_TIMEOUT)
        self._callbacks.stop(JOIN_TIMEOUT)

    def __enter__(self) -> "Client":
        if self._engine.status == CLOSED:
            self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def drain(self, timeout: float | None = None) -> None:
        """Drain every subscription (UNSUB, handle what is on its way, let
        the callbacks finish), flush the publishes and close; ``timeout`` in
        seconds (None: the drain_timeout option)."""
        timeout = check_timeout(timeout, self._drain_timeout)
        if self._engine.status == CLOSED:
            return
        with self._io.lock:
            subs = [s for s in self._io._subs.values() if not s._engine_sub.closed]
        self._drain_subs(subs, timeout)
        self.close()

    def _drain_subs(self, subs: list[Subscription], timeout: float) -> None:
        io = self._io
        eng = self._engine
        deadline = time.monotonic() + timeout
        with io.lock:
            for s in subs:
                if not s._engine_sub.closed:
                    eng.drain(s.sid)
            io._run()
        if self.is_connected:
            try:
                self.flush(timeout)
            except NatsError as e:
                _log.debug("drain: the flush failed: %s", e)
        with io.lock:
            for s in subs:
                if not s._engine_sub.closed and eng.status != CLOSED:
                    eng.unsubscribe(s.sid)
                s._end()
            io._run()
            io.cond.notify_all()
        if any(s._cb is not None for s in subs) and threading.current_thread() is not io.keeper:
            # everything has arrived (the flush): what is left is the callbacks' work
            with io.lock:
                while not all(s._idle for s in subs):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    io.cond.wait(left)

    def flush(self, timeout: float = 10.0) -> None:
        """Write what is queued and wait for the server's PONG to a PING:
        everything published before has reached the server.  ErrTimeout,
        ErrConnectionClosed."""
        if timeout is None:
            raise make_error("ErrBadTimeout", "Invalid timeout None")
        timeout = check_timeout(timeout)
        io = self._io
        box: list = []
        with io.lock:
            self._engine.ping(max(1, int(timeout * 1000)), handler=box)
            io._run(True)
            io.write_now()
            io.wait(lambda: bool(box))
        if box[0] is False:
            raise make_error("ErrTimeout", f"Flush timeout: no PONG within {timeout:g} s")
        if box[0] is None:
            raise make_error("ErrConnectionClosed", "Connection closed")

    def ping(self, timeout: float = 10.0) -> bool:
        """True, ErrTimeout, or ErrConnectionClosed (nats-tcl's ping)."""
        self.flush(timeout)
        return True

    # ------------------------------------------------------------ messages
    def publish(self, subject: str, data: Payload = b"", reply: str | None = None,
                headers: HeadersArg = None) -> None:
        """Queue a message (bytes or str); it leaves with the next write (the
        client's thread writes what publishes queued, a request or flush
        writes at once).  While the socket does not take the data, a
        publisher past 64 KiB queued waits for it (up to flush_timeout);
        while not connected, past ``reconnect_buf_size`` (``pending_size``)
        bytes, ErrReconnectBufExceeded refuses the message."""
        # a subject the engine accepted before (and a plain reply), a bytes
        # payload within max_payload, while connected: framed and queued
        # without the engine's checks and formatting (one C call)
        if headers is None and self._fast_pub(subject, data, reply) is not None:
            return
        if data.__class__ is not bytes:
            data = _to_bytes(data)
        if headers is not None:
            check_headers(headers)
        io = self._io
        eng = self._engine
        with io.lock:
            eng.publish(subject, data, reply, headers)
            if reply is None and headers is None and subject.__class__ is str:
                heads = self._pub_heads
                if len(heads) >= 4096:
                    heads.clear()
                heads[subject] = _pub_head(subject, len(data))
            self._published(io, eng)

    def _py_fast_pub(self, subject: str, data: Payload, reply: str | None) -> bool | None:
        """:class:`tclnats_py._natsproto.SyncPub`'s publish in Python (the
        accelerator off): None when the general path must publish, else
        False (queued; :meth:`_published` called when it has work)."""
        eng = self._engine
        frame = (_pub_frame(self._pub_heads, subject, data, self._pub_max) if reply is None else
                 _pub_frame(self._pub_heads, subject, data, self._pub_max, reply, eng.options.check_subjects))
        if frame is None:
            return None
        io = self._io
        with io.lock:
            if eng.status != CONNECTED:
                return None
            if not eng._flush_signalled:
                work = eng.publish_frame(frame, WRITE_CHUNK)
            else:
                # a write is due already: Engine.publish_frame's steps inline
                eng._out.append(frame)
                size = eng._out_size = eng._out_size + len(frame)
                eng.stats["out_msgs"] += 1
                work = size >= WRITE_CHUNK
            if work:
                self._published(io, eng)
        return False

    def _after_fast_pub(self) -> None:
        """SyncPub's work(): :meth:`_published` (the lock held)."""
        self._published(self._io, self._engine)

    def _published(self, io: SyncIO, eng: Engine) -> None:
        """After a publish (lock held): the first message after a write
        leaves at once, a burst is the keeper's to write, and a publisher
        that finds WRITE_CHUNK bytes queued writes them itself."""
        if eng._fx:
            # the first message after a write: alone (a reply, an event)
            # it leaves now; in a burst the keeper writes the rest in one go
            now = _monotonic()
            if now - io.last_write > SPARSE:
                io.last_write = now
                io._run(True)
                io.write_now()
            else:
                io._run()
        elif eng._out_size >= WRITE_CHUNK:
            # a burst: its batches are written here (the keeper holds back
            # meanwhile, CHUNK_HOLD), the next message is no lone one
            io.last_write = io.last_chunk = _monotonic()
            io.write_now()

    def publish_msg(self, msg: Msg) -> None:
        """Publish a :class:`Msg` (its subject, data, reply and headers)."""
        _check_msg(msg)
        self.publish(msg.subject, msg.data, msg.reply, msg.headers)

    def subscribe(self, subject: str, queue: str | None = None, cb: Callable[[SyncMsg], object] | None = None,
                  max_msgs: int = 0, pending_msgs_limit: int | None = None,
                  pending_bytes_limit: int | None = None) -> Subscription:
        """Subscribe to ``subject`` (wildcards allowed), in queue group ``queue``.

        With ``cb`` each message goes to it, in order, on the client's
        keeper thread (between its reads); its exceptions go to error_cb, else the logger.
        Without ``cb`` read with ``sub.next_msg(timeout)`` or ``for msg in
        sub``.  ``max_msgs``: unsubscribe after that many.  The pending
        limits bound the local queue (past them: dropped, ErrSlowConsumer)."""
        eng = self._engine
        if not eng.check_subject(subject, wildcard=True) or (eng.options.check_subjects and ">." in subject):
            raise make_error("ErrBadSubject", f"Invalid subject {subject}")
        if queue is not None and queue != "" and not eng.check_subject(queue, queue=True):
            raise make_error("ErrBadQueueName", f"Invalid queue {queue}")
        check_int("max_msgs", max_msgs)
        check_int("pending_msgs_limit", pending_msgs_limit, -1, allow_none=True)
        check_int("pending_bytes_limit", pending_bytes_limit, -1, allow_none=True)
        if cb is not None and not callable(cb):
            raise make_error("ErrInvalidArg", f"Invalid callback {cb!r}")
        o = eng.options
        sub = Subscription(self, subject, queue or "", cb,
                           o.pending_msgs_limit if pending_msgs_limit is None else pending_msgs_limit,
                           o.pending_bytes_limit if pending_bytes_limit is None else pending_bytes_limit)
        io = self._io
        with io.lock:
            sub._engine_sub = eng.subscribe(subject, queue or "", max_msgs, handler=sub)
            io._subs[sub.sid] = sub
            if cb is not None:
                io.passive += 1
                io._wake()  # the keeper reads from now on, callers or not
            io._run()
        return sub

    def _timeout_ms(self, timeout: float | None) -> int:
        if timeout is None:
            return self._engine.options.request_timeout
        timeout = check_timeout(timeout)
        return max(1, int(timeout * 1000)) if timeout else 0

    def request(self, subject: str, data: Payload = b"", timeout: float | None = None,
                headers: HeadersArg = None, *, check_subject: bool = True) -> SyncMsg:
        """The first reply to a message on ``subject`` (shared inbox), within
        ``timeout`` seconds (None: the request_timeout option).  ErrTimeout,
        ErrNoResponders, ErrConnectionClosed.  ``check_subject=False`` sends a
        subject with wildcard tokens as it is."""
        last = self._last_timeout
        if timeout is last[0]:  # the object of a request before (it stays alive in the tuple)
            ms, wait = last[1], last[2]
        else:
            ms, wait = self._request_wait(timeout)
        if data.__class__ is not bytes:
            data = _to_bytes(data)
        if headers is not None:
            check_headers(headers)
        io = self._io
        eng = self._engine
        box: list = []
        lock = io.lock
        lock.acquire()  # (not a with block: its special lookups cost each request)
        try:
            if check_subject and subject not in self._req_subjects:
                if not eng.check_subject(subject):
                    raise make_error("ErrBadSubject", f"Invalid subject {subject}")
                if len(self._req_subjects) >= 4096:
                    self._req_subjects.clear()
                self._req_subjects.add(subject)
            # no engine timer: the wait ends at the timeout, then the engine
            # ends the request as that timer would (timer_fired)
            direct = None
            if (headers is None and ms and io.direct and not io.leading and not io._sending and io.callers_read
                    and io._raw is None):
                # a lone caller on a plain socket, no other thread's send in
                # flight (its bytes and this frame would mix): the round trip read in C
                if eng._out:
                    io.write_now()  # (what was published before goes first; may release the lock)
                if not io._sending and not io.leading:
                    direct = eng.direct_request(subject, data, box)
            if direct is not None:
                req = direct[0]
                outcome = io.round_trip(direct, wait)
            else:
                req = eng.request(subject, data, 0, headers, None, box, check_subject=False)
                io._run(True)
                io.write_now()
                outcome = io.await_request(req, wait)
        finally:
            lock.release()
        if outcome == "msg":
            return req.msg
        raise request_error(outcome, subject)

    def _request_wait(self, timeout: float | None) -> tuple[int, float]:
        """A request's ``timeout`` as (milliseconds, seconds of its wait); a
        plain number is kept in ``_last_timeout``, so that the next request
        with the same object skips this (request() and _request_raw look)."""
        if timeout.__class__ in _PLAIN_NUMBERS and 0 < timeout <= MAX_TIMEOUT:  # (check_timeout's rule)
            ms = int(timeout * 1000) or 1
            self._last_timeout = (timeout, ms, ms / 1000)
        else:
            ms = self._timeout_ms(timeout)
        return ms, ms / 1000

    def _request_raw(self, subject: str, timeout: float) -> Any:
        """:meth:`request` of ``subject`` (one it sent before: not checked
        again) with an empty payload, whose reply stays the parts of its frame
        when this thread reads it as request()'s round trip does and its
        header block has no status: ``(reply, header block, payload, size)``
        (Engine.direct_request's ``raw``), else the reply Msg."""
        last = self._last_timeout
        if timeout is last[0]:
            ms, wait = last[1], last[2]
        else:
            ms, wait = self._request_wait(timeout)
        io = self._io
        direct = None
        lock = io.lock
        lock.acquire()
        try:  # (request()'s conditions of its round trip)
            if ms and io.direct and not io.leading and not io._sending and io.callers_read and io._raw is None:
                eng = self._engine
                if eng._out:
                    io.write_now()
                if not io._sending and not io.leading:
                    direct = eng.direct_request(subject, b"", [], True)
            if direct is not None:
                outcome = io.round_trip(direct, wait)
        finally:
            lock.release()
        if direct is None:
            return self.request(subject, b"", timeout, check_subject=False)
        if outcome == "msg":
            return direct[0].msg
        raise request_error(outcome, subject)

    def request_msg(self, msg: Msg, timeout: float | None = None) -> SyncMsg:
        """Send a :class:`Msg` as a request; see :meth:`request`."""
        _check_msg(msg)
        return self.request(msg.subject, msg.data, timeout, msg.headers)

    def request_many(self, subject: str, data: Payload = b"", max_msgs: int = 1, timeout: float | None = None,
                     headers: HeadersArg = None) -> list[SyncMsg]:
        """Old-style request (an inbox of its own) gathering up to ``max_msgs``
        replies until the timeout; ErrTimeout only when none came."""
        ms = self._timeout_ms(timeout)
        check_int("max_msgs", max_msgs, 1)
        eng = self._engine
        if not eng.check_subject(subject):
            raise make_error("ErrBadSubject", f"Invalid subject {subject}")
        if headers is not None:
            check_headers(headers)
        payload = _to_bytes(data)
        io = self._io
        gather = _Gather()
        with io.lock:
            req = eng.request(subject, payload, ms, headers, max_msgs, gather)
            io._run(True)
            io.write_now()
            outcome = io.await_request(req, None)
        if outcome == "msg" or (outcome == "timeout" and gather.msgs):
            return list(gather.msgs)
        raise request_error(outcome, subject)

    # ------------------------------------------------------------ callbacks (queued, never run under the lock)
    def _report(self, err: Exception) -> None:
        """An asynchronous error for error_cb; without one, logged at ERROR."""
        if self._error_cb is not None:
            self._callbacks.put(self._error_cb, err)
        else:
            _log.error("%s: %s", getattr(err, "code", type(err).__name__), err)

    def _hook_failed(self, fn: Any, err: BaseException, what: str | None = None) -> None:
        """A user's callback raised: to error_cb (unless it is error_cb), else logged with its traceback."""
        cb = self._error_cb
        if cb is not None and fn is not cb:
            self._callbacks.put(cb, err)
            return
        _log.error("Exception in %s %s", what or "callback", getattr(fn, "__qualname__", fn), exc_info=err)

    def _hook_failed_any(self, fn: Any, err: BaseException) -> None:
        self._hook_failed(fn, err)

    def _on_error(self, err: Exception) -> None:
        if self._error_cb is not None:  # (the engine logged it already)
            self._callbacks.put(self._error_cb, err)

    def _on_status(self, status: str) -> None:
        for hook, args in self._status_hooks(status):
            self._callbacks.put(hook, *args)

    def _on_info(self, info: dict) -> None:
        mp = info.get("max_payload")
        self._pub_max = mp if isinstance(mp, int) and mp < sys.maxsize else sys.maxsize
        if self._sync_pub is not None:
            self._sync_pub.max_payload = self._pub_max
        if self._discovered_server_cb is not None or self._lame_duck_mode_cb is not None:
            for hook in self._info_hooks(info):
                self._callbacks.put(hook)

    def _after_fork(self) -> None:
        """In a forked child: this client is closed there (see the guide's "Fork")."""
        self._callbacks = Dispatcher(self._callbacks.name, self._hook_failed_any)
        self._callbacks.stopped = True
        self._io.dispatcher = self._callbacks
        self._io.forget_after_fork()
        self._fast_pub = self._new_fast_pub()  # (the new lock)


def _check_msg(msg: object) -> Msg:
    if not isinstance(msg, Msg):
        raise make_error("ErrInvalidArg", f"A message expected, not {type(msg).__name__}")
    return msg


def _version() -> str:
    from tclnats_py import __version__
    return __version__


def connect(servers: str | Sequence[str] = DEFAULT_SERVER, **options: Unpack[ConnectOptions]) -> Client:
    """Create a :class:`Client` and connect it; the options are the asyncio
    face's (:class:`tclnats_py.aio.options.ConnectOptions`: nats-py's names,
    times in seconds, ``*_ms`` for milliseconds)."""
    return Client(servers, **options).connect()


@atexit.register
def _close_all() -> None:
    """At interpreter exit: every client still open is closed (bounded waits)."""
    for c in list(_live):
        try:
            c.close()
        except Exception as e:  # exiting anyway: say what failed
            _log.warning("closing %r at exit: %s", c, e)


after_fork_hook(lambda: list(_live))
