"""The asyncio face's transport: reading, writing, backpressure, TLS, timers.

What :class:`~tclnats_py.aio.client.Client` does with the socket and the
clock, as the engine asks (the driver contract, ``engine/driver.py``):

* reading is an ``asyncio.BufferedProtocol`` (:class:`_Protocol`): each read
  goes straight to ``Engine.receive_data`` and the effects are carried out at
  once;
* writing is coalesced: the engine's ``Flush`` effect schedules one
  :meth:`ClientIO._write_more` with ``call_soon``, so all the publishes of
  one loop turn leave in one write; past the transport's high-water mark what
  the socket cannot take yet stays in the engine until ``resume_writing``;
* timers are ``loop.call_later`` handles keyed like the engine's timers; the
  request deadlines share one;
* TLS is ``loop.start_tls`` on the engine's ``StartTls`` effect (after INFO).
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from typing import TYPE_CHECKING, Any, Callable

from tclnats_py.credentials import read_credentials
from tclnats_py.engine.connection import CONNECTED
from tclnats_py.errors import make_error

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.aio.client import Client
    from tclnats_py.aio.subscription import Subscription
    from tclnats_py.engine.connection import Engine, Request

__all__ = ["ClientIO"]

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

    def __init__(self, client: Client, attempt: int):
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


class ClientIO:
    """The socket and clock half of :class:`~tclnats_py.aio.client.Client`
    (a base class of it; the state lives on the client, set in its __init__)."""

    _engine: Engine
    _loop: asyncio.AbstractEventLoop
    _transport: Any
    _attempt: int
    _paused: bool
    _reading: bool
    _flush_handle: asyncio.Handle | _Deferred | None
    _socket_waiters: list
    _timers: dict
    _deadlines: dict[Request, float]
    _deadline_timer: asyncio.TimerHandle | None
    _deadline_at: float
    _open_task: asyncio.Task | None
    _busy_subs: int
    _subs: dict[int, Subscription]
    _tls: ssl.SSLContext | None
    _tls_opts: dict[str, Any]
    _ssl_ctx: ssl.SSLContext | None
    _ssl_context: Callable[[], ssl.SSLContext]   # ClientState's

    if TYPE_CHECKING:  # (ClientEffects's, its subclass)
        def _run(self, writing: bool = False) -> None: ...
        def _spawn(self, coro: Any) -> None: ...

    def _flush_now(self) -> None:
        self._flush_handle = None
        self._write_more()

    def _write_more(self) -> None:
        """Hand the engine's queue to the transport in chunks until it is
        empty or the transport asks us to pause (its buffer past
        _TRANSPORT_HIGH): what the socket cannot take yet stays in the
        engine, one copy, bounded by the publishers' waiting."""
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
