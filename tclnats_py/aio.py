"""The asyncio driver: the engine on an asyncio event loop, and the Python API.

    client = await tclnats_py.connect("nats://localhost:4222", name="app")
    sub = await client.subscribe("greet.*")
    client.publish("greet.py", b"hello")
    msg = await sub.next_msg(timeout=1)
    reply = await client.request("time.now", b"", timeout=1)
    await client.close()

Options have nats-tcl's names and units (milliseconds for times), with
``tls_ca``/``tls_cert``/``tls_key``/``tls_hostname``/``tls_verify`` or a
ready ``ssl.SSLContext`` as ``tls``; errors are the engine's classes
(``tclnats_py.ErrTimeout`` ...), the same codes as the Tcl face.

The driver only moves bytes and time: one ``receive_data`` per read, one
``transport.write`` per loop turn (all that was queued), timers with
``call_later``.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import time

from ._engine import CLOSED, CONNECTED, Engine, Msg, Request
from ._errors import NatsError, make_error
from ._options import Options

__all__ = ["Client", "Subscription", "connect"]

_DEFAULT_PENDING_MSGS = 512 * 1024
_DEFAULT_PENDING_BYTES = 64 * 1024 * 1024


class _Protocol(asyncio.Protocol):
    def __init__(self, client: "Client"):
        self.client = client
        self.transport = None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        c = self.client
        if self.transport is c._transport:
            c._engine.receive_data(data)
            c._run()

    def connection_lost(self, exc):
        c = self.client
        if self.transport is c._transport:
            c._transport = None
            c._engine.connection_lost(str(exc) if exc else None)
            c._run()


class Subscription:
    """A subscription: a callback, or an async iterator of messages."""

    def __init__(self, client: "Client", subject, queue, cb, pending_msgs_limit, pending_bytes_limit):
        self._client = client
        self.subject = subject
        self.queue = queue
        self._cb = cb
        self._pending = collections.deque()
        self._pending_bytes = 0
        self._limit_msgs = pending_msgs_limit
        self._limit_bytes = pending_bytes_limit
        self._waiter: asyncio.Future | None = None
        self._task: asyncio.Task | None = None
        self._closed = False
        self.dropped = 0
        self.delivered = 0
        self._engine_sub = None

    @property
    def sid(self) -> int:
        return self._engine_sub.sid

    def _deliver(self, msg: Msg):
        n = len(msg.data)
        if len(self._pending) >= self._limit_msgs or self._pending_bytes + n > self._limit_bytes:
            self.dropped += 1
            self._client._report(make_error("ErrSlowConsumer",
                                            f"Slow consumer on {self.subject}: message dropped"))
            return
        self._pending.append(msg)
        self._pending_bytes += n
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def _end(self):
        self._closed = True
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def _run_callbacks(self):
        try:
            while True:
                msg = await self._next(None)
                try:
                    r = self._cb(msg)
                    if asyncio.iscoroutine(r):
                        await r
                except Exception as e:  # a user's callback failed: report, keep going
                    self._client._report(e)
        except (StopAsyncIteration, asyncio.CancelledError):
            return

    async def _next(self, timeout):
        while not self._pending:
            if self._closed:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                if timeout is None:
                    await self._waiter
                else:
                    await asyncio.wait_for(self._waiter, timeout)
            except asyncio.TimeoutError:
                raise make_error("ErrTimeout", f"No message on {self.subject} within {timeout} s") from None
            finally:
                self._waiter = None
        msg = self._pending.popleft()
        self._pending_bytes -= len(msg.data)
        self.delivered += 1
        return msg

    async def next_msg(self, timeout: float | None = 1.0) -> Msg:
        try:
            return await self._next(timeout)
        except StopAsyncIteration:
            raise make_error("ErrBadSubscription", f"Subscription to {self.subject} has ended") from None

    def __aiter__(self):
        return self

    async def __anext__(self) -> Msg:
        return await self._next(None)

    @property
    def pending_msgs(self) -> int:
        return len(self._pending)

    async def unsubscribe(self, max_msgs: int = 0) -> None:
        c = self._client
        if self._engine_sub is None or self._engine_sub.closed:
            raise make_error("ErrBadSubscription", f"Invalid subscription ID {self.sid}")
        gone = c._engine.unsubscribe(self.sid, max_msgs)
        c._run()
        if gone:
            c._subs.pop(self.sid, None)
            self._end()

    async def drain(self, timeout: float = 10.0) -> None:
        """Stop interest, let what is in flight arrive and be handled, then end."""
        c = self._client
        c._engine.unsubscribe(self.sid, 0)
        c._run()
        await c.flush(timeout)
        self._end()
        if self._task is not None:
            await asyncio.wait_for(self._task, timeout)


class _Gather:
    """Handler of a request_many: the replies so far and the future of the end."""

    __slots__ = ("msgs", "fut")

    def __init__(self, fut):
        self.msgs = []
        self.fut = fut


class Client:
    """One NATS connection served by the engine on an asyncio loop."""

    def __init__(self, *, error_cb=None, status_cb=None, reconnect_delay=None, tls=None, tls_ca=None,
                 tls_cert=None, tls_key=None, tls_hostname=None, tls_verify=True, **options):
        servers = options.pop("servers", None)
        self._engine = Engine(Options(**options), clock=lambda: int(time.time() * 1000), lang="python",
                              version=_version())
        if servers:
            self._engine.configure_servers([servers] if isinstance(servers, str) else servers)
        if reconnect_delay is not None:
            self._engine.reconnect_delay = reconnect_delay
        self._error_cb = error_cb
        self._status_cb = status_cb
        self._tls = tls
        self._tls_opts = (tls_ca, tls_cert, tls_key, tls_hostname, tls_verify)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._transport = None
        self._timers: dict = {}
        self._flush_handle = None
        self._subs: dict[int, Subscription] = {}
        self._status_waiters: list = []
        self._connecting_task = None

    # ------------------------------------------------------------ properties
    @property
    def status(self) -> str:
        return self._engine.status

    @property
    def is_connected(self) -> bool:
        return self._engine.status == CONNECTED

    @property
    def last_error(self) -> NatsError | None:
        return self._engine.last_error

    @property
    def server_info(self) -> dict:
        return dict(self._engine.server_info)

    @property
    def current_server(self):
        s = self._engine.pool.current
        return (s.host, s.port) if s else None

    @property
    def all_servers(self) -> list[dict]:
        return [s.as_dict() for s in self._engine.pool.servers]

    @property
    def stats(self) -> dict:
        return dict(self._engine.stats)

    @property
    def max_payload(self) -> int:
        return self._engine.server_info.get("max_payload", 1048576)

    def new_inbox(self) -> str:
        return self._engine.new_inbox()

    def jetstream(self, domain: str | None = None, api_prefix: str | None = None, timeout: float = 5.0):
        """The JetStream context (see tclnats_py.jetstream)."""
        from .jetstream import JetStream
        return JetStream(self, domain=domain, api_prefix=api_prefix, timeout=timeout)

    # ------------------------------------------------------------ effects
    def _report(self, err):
        if self._error_cb is not None:
            try:
                r = self._error_cb(err)
                if asyncio.iscoroutine(r):
                    self._loop.create_task(r)
            except Exception:  # the user's error callback failed; nothing left to tell
                import traceback
                traceback.print_exc()

    def _run(self):
        eng = self._engine
        while True:
            fx = eng.take()
            if not fx:
                break
            for f in fx:
                k = f[0]
                if k == "msg":
                    sub = f[1].handler
                    if sub is not None:
                        sub._deliver(f[2])
                elif k == "flush":
                    if self._flush_handle is None:
                        self._flush_handle = self._loop.call_soon(self._flush_now)
                elif k == "req":
                    self._request_done(f[1], f[2])
                elif k == "timer":
                    self._start_timer(f[1], f[2])
                elif k == "cancel":
                    h = self._timers.pop(f[1], None)
                    if h is not None:
                        h.cancel()
                elif k == "pong":
                    fut = f[1].handler
                    if fut is not None and not fut.done():
                        if f[2] is True:
                            fut.set_result(True)
                        elif f[2] is False:
                            fut.set_exception(make_error("ErrTimeout", "PING timeout"))
                        else:
                            fut.set_exception(make_error("ErrConnectionClosed", "Connection closed"))
                elif k == "sub_gone":
                    sub = self._subs.pop(f[1], None)
                    if sub is not None:
                        sub._end()
                elif k == "subs_cleared":
                    subs, self._subs = self._subs, {}
                    for sub in subs.values():
                        sub._end()
                elif k == "req_msg":
                    h = f[1].handler
                    if h.__class__ is _Gather:
                        h.msgs.append(f[2])
                elif k == "status":
                    self._on_status(f[1])
                elif k == "error":
                    if f[1] is not None:
                        self._report(f[1])
                elif k == "open":
                    self._open(f[1])
                elif k == "tls":
                    self._loop.create_task(self._start_tls(f[1]))
                elif k == "close":
                    self._close_transport()
        if self._transport is not None and eng.status != CONNECTED and eng.want_write:
            self._transport.write(eng.data_to_send())

    def _flush_now(self):
        self._flush_handle = None
        data = self._engine.data_to_send()
        if data and self._transport is not None:
            self._transport.write(data)

    def _start_timer(self, key, ms):
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()
        self._timers[key] = self._loop.call_later(ms / 1000.0, self._timer_fired, key)

    def _timer_fired(self, key):
        self._timers.pop(key, None)
        self._engine.timer_fired(key)
        self._run()

    def _on_status(self, status):
        waiters, self._status_waiters = self._status_waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(status)
        if self._status_cb is not None:
            try:
                self._status_cb(status)
            except Exception as e:
                self._report(e)

    def _open(self, server):
        async def go():
            try:
                transport, _ = await self._loop.create_connection(lambda: _Protocol(self), server.host, server.port)
            except OSError as e:
                self._engine.socket_failed(e.strerror or str(e))
                self._run()
                return
            if self._engine.status == CLOSED or self._engine.pool.current is not server:
                transport.close()
                return
            self._transport = transport
            self._engine.socket_connected()
            self._run()
        self._connecting_task = self._loop.create_task(go())

    def _ssl_context(self) -> ssl.SSLContext:
        if self._tls is not None:
            return self._tls
        ca, cert, key, _host, verify = self._tls_opts
        ctx = ssl.create_default_context(cafile=ca)
        if not verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if cert:
            ctx.load_cert_chain(cert, key)
        return ctx

    async def _start_tls(self, server):
        transport = self._transport
        if transport is None:
            return
        try:
            ctx = self._ssl_context()
            hostname = self._tls_opts[3] or server.host
            new = await self._loop.start_tls(transport, transport.get_protocol(), ctx, server_hostname=hostname)
        except (ssl.SSLError, OSError, ConnectionError, ValueError) as e:
            self._engine.tls_failed(str(e))
            self._run()
            return
        self._transport = new
        new.get_protocol().transport = new
        self._engine.tls_done()
        self._run()

    def _close_transport(self):
        t = self._transport
        self._transport = None
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if t is not None:
            data = self._engine.data_to_send()
            if data:
                t.write(data)
            t.close()

    def _request_done(self, req: Request, outcome: str):
        fut = req.handler
        if fut.__class__ is _Gather:
            fut = fut.fut
        if fut is None or fut.done():
            return
        if outcome == "msg":
            fut.set_result(req.msg)
        elif outcome == "no_responders":
            fut.set_exception(make_error("ErrNoResponders", "No responders available for request"))
        elif outcome == "timeout":
            fut.set_exception(make_error("ErrTimeout", f"Request to {req.subject} timed out"))
        elif outcome == "lost":
            fut.set_exception(make_error("ErrTimeout", "Connection lost"))
        else:
            fut.set_exception(make_error("ErrConnectionClosed", "Connection closed"))

    # ------------------------------------------------------------ API
    async def connect(self, servers=None, **options) -> "Client":
        self._loop = asyncio.get_running_loop()
        if options:
            self._engine.options.update(options)
        if servers:
            self._engine.configure_servers([servers] if isinstance(servers, str) else servers)
        self._engine.connect()
        self._run()
        while self._engine.status not in (CONNECTED, CLOSED):
            w = self._loop.create_future()
            self._status_waiters.append(w)
            await w
        if self._engine.status != CONNECTED:
            err = self._engine.last_error
            if err is not None and len(self._engine.options.servers) <= 1:
                raise make_error(err.code, str(err))
            raise make_error("ErrNoServers", "No servers available for connection")
        return self

    def publish(self, subject: str, data=b"", reply: str | None = None, headers=None) -> None:
        if isinstance(data, str):
            data = data.encode()
        eng = self._engine
        eng.publish(subject, data, reply, headers)
        if eng._fx:
            self._run()

    def publish_msg(self, msg: Msg) -> None:
        self.publish(msg.subject, msg.data, msg.reply, msg.headers)

    async def subscribe(self, subject: str, queue: str | None = None, cb=None, max_msgs: int = 0,
                        pending_msgs_limit: int = _DEFAULT_PENDING_MSGS,
                        pending_bytes_limit: int = _DEFAULT_PENDING_BYTES) -> Subscription:
        sub = Subscription(self, subject, queue, cb, pending_msgs_limit, pending_bytes_limit)
        sub._engine_sub = self._engine.subscribe(subject, queue or "", max_msgs, handler=sub)
        self._subs[sub.sid] = sub
        if cb is not None:
            sub._task = self._loop.create_task(sub._run_callbacks())
        self._run()
        return sub

    async def request(self, subject: str, data=b"", timeout: float = 10.0, headers=None) -> Msg:
        if isinstance(data, str):
            data = data.encode()
        if timeout is None or timeout < 0:
            raise make_error("ErrBadTimeout", f"Invalid timeout {timeout}")
        fut = self._loop.create_future()
        self._engine.request(subject, data, int(timeout * 1000), headers, None, fut)
        self._run()
        return await fut

    async def request_many(self, subject: str, data=b"", max_msgs: int = 1, timeout: float = 1.0,
                           headers=None) -> list[Msg]:
        """Old-style request gathering up to max_msgs replies until the timeout."""
        if isinstance(data, str):
            data = data.encode()
        gather = _Gather(self._loop.create_future())
        self._engine.request(subject, data, int(timeout * 1000), headers, max_msgs, gather)
        self._run()
        try:
            await gather.fut
        except NatsError as e:
            if e.code != "ErrTimeout" or not gather.msgs:
                raise
        return list(gather.msgs)

    async def flush(self, timeout: float = 10.0) -> None:
        fut = self._loop.create_future()
        p = self._engine.ping(int(timeout * 1000), fut)
        self._run()
        self._flush_now()
        await fut
        del p

    ping = flush

    async def drain(self, timeout: float = 10.0) -> None:
        for sub in list(self._subs.values()):
            if sub._engine_sub.kind == "user" and not sub._engine_sub.closed:
                self._engine.unsubscribe(sub.sid, 0)
        self._run()
        if self.is_connected:
            await self.flush(timeout)
        for sub in list(self._subs.values()):
            sub._end()
        await self.close()

    async def close(self) -> None:
        self._engine.disconnect()
        self._run()
        for h in self._timers.values():
            h.cancel()
        self._timers.clear()
        for sub in list(self._subs.values()):
            sub._end()
            if sub._task is not None:
                sub._task.cancel()

    async def __aenter__(self) -> "Client":
        if self._engine.status == CLOSED:
            await self.connect()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


def _version() -> str:
    from . import __version__
    return __version__


async def connect(servers="nats://localhost:4222", **options) -> Client:
    client = Client(**options)
    return await client.connect(servers)
