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
The driver only moves bytes and time (the contract: ``engine/driver.py``).
The client is three layers, one module each: this one is the façade (the
options and the API: connect, publish, subscribe, request, flush, drain,
close); :mod:`tclnats_py.aio.effects` carries out the engine's effects
(``ClientEffects``, one ``on_<effect>`` handler each, dispatched through one
table built per client); :mod:`tclnats_py.aio.transport` reads, writes, waits
for the socket (backpressure), starts TLS and runs the timers (``ClientIO``).
:mod:`tclnats_py.aio.subscription` holds :class:`Subscription` and
:class:`ClientMsg`: each subscription with a callback has a queue and one
consumer task (no task per message); past its pending limits messages are
dropped and reported once per episode as ErrSlowConsumer to ``error_cb``, as
the official clients do.
"""

from __future__ import annotations

import asyncio
import contextvars
import ssl
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Mapping, Optional, Sequence, Union

from tclnats_py.engine.connection import CLOSED, CONNECTED, RECONNECTING, Engine, Msg
from tclnats_py.engine.driver import effect_table
from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.options import Options
from tclnats_py.engine.headers import Headers
from tclnats_py.aio.effects import ClientEffects, _Gather
from tclnats_py.pyface import ClientState
from tclnats_py.aio.subscription import _EAGER, ClientMsg, Subscription
from tclnats_py.aio.transport import _READY, _WRITE_CHUNK, _Deferred
from tclnats_py.aio import spin as _spin
# the publish fast path's framing (compiled when the accelerator is built)
from tclnats_py.engine.protocol import DONE as _DONE, pub_frame as _pub_frame, pub_head as _pub_head
# argument checks: the rules both faces share live in engine/validate.py
from tclnats_py.engine.validate import MAX_TIMEOUT, _to_bytes, check_headers, check_int, check_timeout

if TYPE_CHECKING:  # names used in annotations only
    from typing_extensions import Unpack  # (typing.Unpack from 3.11; only type checkers read it)
    from tclnats_py.aio.jetstream import JetStream
    from tclnats_py.aio.micro import Service
    from tclnats_py.aio.options import ConnectOptions

__all__ = ["Client", "Subscription", "ClientMsg", "connect", "DEFAULT_SERVER", "Payload", "HeadersArg",
           "MsgHandler", "ErrorHandler"]

# the timeouts request() takes without check_timeout's call (positive, not past MAX_TIMEOUT)
_PLAIN_NUMBERS = (float, int)

#: a message body: bytes-like, str (sent as UTF-8) or None (empty)
Payload = Union[bytes, bytearray, memoryview, str, None]
#: headers to publish: name -> value or list of values (str or bytes); a received Headers too
HeadersArg = Optional[Mapping[str, Union[str, bytes, Sequence[Union[str, bytes]]]]]
#: a message callback: a plain function or a coroutine function of the message
MsgHandler = Callable[["ClientMsg"], Any]
#: an error callback: a plain function or a coroutine function of the exception
ErrorHandler = Callable[[Exception], Any]

DEFAULT_SERVER = "nats://localhost:4222"


def _check_msg(msg) -> Msg:
    if not isinstance(msg, Msg):
        raise make_error("ErrInvalidArg", f"A message expected, not {type(msg).__name__}")
    return msg


class Client(ClientEffects, ClientState):
    """One NATS connection: the engine driven by an asyncio loop.

    ``Client(servers, **options)`` then ``await client.connect()``, or
    ``await tclnats_py.connect(servers, **options)``, or ``async with Client(...)``.
    """

    def __init__(self, servers: str | Sequence[str] | None = None, **options: Unpack[ConnectOptions]) -> None:
        self._engine = Engine(Options(), clock=lambda: int(time.time() * 1000), lang="python",
                              version=_version())
        self._init_options()  # the user's hooks and TLS options (ClientState), set by _configure
        self._allow_reconnect = True
        self._spin_time = _spin.default()  # (TCLNATS_SPIN_US) before the options, which may set it
        self._spin_sel: _spin.SpinningSelector | None = None
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
        self._engine.msg_class = type("Msg", (ClientMsg,), {"__slots__": (), "_client": self})
        self._engine.headers_class = Headers  # msg.headers["K"] is the first value; get_all("K") every one
        self._engine.deliver_batches = True  # a read's messages for a subscription in one effect (_run)
        self._effects = effect_table(self)  # effect class -> self.on_<effect> (ClientEffects)
        self._configure(servers, options)

    # ------------------------------------------------------------ properties (the rest: ClientState)
    @property
    def engine(self) -> Engine:
        """The sans-IO engine this client drives (its public interface is
        what this face's JetStream, KV and Object Store modules use)."""
        return self._engine

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

    # ------------------------------------------------------------ for faces built on this one
    def run_effects(self, writing: bool = False) -> None:
        """Carry out the engine's effects, in order, until it has none left
        (``writing``: the caller writes at once, see Engine.take).  Call it
        after driving ``self.engine`` directly (e.g. ``engine.force_reconnect()``)."""
        self._run(writing)

    def write_pending(self) -> None:
        """Hand what the engine has queued to the socket now, rather than at
        the next flush, as far as the transport takes it (nats-py's forced
        flush past pending_size); what it cannot take yet stays queued."""
        self._write_more()

    def spawn(self, coro: Awaitable[Any]) -> None:
        """Run ``coro`` (a coroutine or another awaitable) as a task of this
        client: it is kept referenced until it ends, and cancelled when the
        client closes.  For faces built on this one (tclnats_py.natspy) that
        start work from a callback."""
        self._spawn(coro)

    async def add_service(self, name: str, version: str, description: str | None = None,
                          metadata: dict[str, str] | None = None, queue_group: str | None = None) -> "Service":
        """Start a NATS service (ADR-32) on this connection: see tclnats_py.aio.micro."""
        from tclnats_py.aio.micro import add_service
        return await add_service(self, name, version, description, metadata, queue_group)

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
        if timeout.__class__ in _PLAIN_NUMBERS and 0 < timeout <= MAX_TIMEOUT:  # (check_timeout's rule)
            ms = int(timeout * 1000) or 1
        else:
            ms = self._timeout_ms(timeout)
        if headers is not None:
            check_headers(headers)
        eng = self._engine
        if check_subject and subject not in eng.request_subjects and not eng.check_subject(subject):
            # before the engine makes its shared reply subscription
            raise make_error("ErrBadSubject", f"Invalid subject {subject}")
        fut = loop.create_future()
        lone = not eng.requests and self._flush_handle is None
        # (a subject checked above is checked by the engine only until it knows it)
        req = eng.request(subject, data if data.__class__ is bytes else _to_bytes(data), ms, headers, None, fut,
                          check_subject=check_subject)
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
