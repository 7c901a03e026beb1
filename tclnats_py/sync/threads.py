"""The blocking driver shared by threads: the engine behind one lock.

:class:`SyncIO` is :class:`~tclnats_py.sync.driver.Driver` made safe for
many threads, the I/O half of :class:`tclnats_py.sync.Client`:

* one lock (``lock``) around the engine and this object's state; every
  engine call and every effect is carried out holding it;
* reading is *leader/follower*: a thread that waits for something (a reply,
  a message, a PONG) reads the socket itself when nobody else does, with the
  lock released while it is in ``select``/``recv``; the others wait on a
  condition the reader notifies after each read it handed to the engine.  A
  lone caller's round trip therefore costs no thread switch (and, a plain
  socket on Linux, two system calls: see :meth:`SyncIO._read`); a caller
  that finds the keeper reading has it hand the socket over;
* a *keeper* thread per connection reads when no caller does (a caller read
  within the last ``KEEPER_IDLE`` seconds keeps it out, so a loop of
  requests is not interrupted), fires the engine's timers (keep-alive PINGs,
  reconnect waits, request timeouts), writes what publishes queued (one
  write per batch: a ``Flush`` effect wakes it through a socket pair; while
  a publisher writes its own ``WRITE_CHUNK`` batches it holds back,
  ``CHUNK_HOLD``) and carries out reconnects (``Open`` effects, under the lock);
* callbacks never run while the lock is held.  Message callbacks run on the
  keeper, between its reads (the lock released meanwhile): a responder's
  message is read, handed to its callback and answered by one thread, with no
  thread switch; a callback subscription keeps the keeper reading at once
  whenever no caller reads.  The hooks (error_cb, status_cb,
  disconnected_cb ...) are queued on a :class:`Dispatcher`, a second thread,
  started at the first of them, that calls them in order.

Writes take what is queued holding the lock and send it with the lock
released (one thread at a time, ``_wlock``, so bytes leave in the order they
were queued), with the socket's timeout at ``flush_timeout``: a writer that
fills the socket waits for it, and so does a publisher that finds
``WRITE_CHUNK`` bytes queued meanwhile (the backpressure of the other
faces); the engine refuses publishes past ``reconnect_buf_size`` while not
connected.  The handshake's bytes are written holding the lock.  A TLS socket
is read and written under a third lock (OpenSSL's objects take one thread at
a time).
"""

from __future__ import annotations

import logging
import os
import select
import socket
import ssl
import struct
import sys
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from tclnats_py.engine.connection import CLOSED, CONNECTED, RECONNECTING
from tclnats_py.engine.driver import effect_table, unknown_effect
from tclnats_py.engine.protocol import compiled
from tclnats_py.sync.driver import Driver
from tclnats_py.errors import make_error

if TYPE_CHECKING:
    from tclnats_py.engine.effects import (Deliver, DeliverMany, ErrorChanged, Flush, InfoReceived, Open, RequestReply, StartTls,
                                           StatusChanged, SubGone, SubsCleared)
    from tclnats_py.engine.options import Options
    from tclnats_py.engine.records import Request

__all__ = ["SyncIO", "Dispatcher", "KEEPER_IDLE", "WRITE_CHUNK", "SPARSE", "CHUNK_HOLD"]

_log = logging.getLogger("tclnats_py.sync")

#: how long after a caller's read the keeper stays out of the socket (seconds)
KEEPER_IDLE = 0.05
#: queued bytes past which a publisher writes them itself instead of leaving them to the keeper
WRITE_CHUNK = 64 * 1024
#: a publish this long (seconds) after the last one written at once is written at once too
SPARSE = 0.0002
#: a write of at most this many bytes is sent holding the lock (no hand-over for a lone message)
SMALL_WRITE = 16 * 1024
#: while a publisher writes WRITE_CHUNK batches itself, one within this many
#: seconds, the keeper leaves what is queued to it (no wake-up, no write of
#: its own per batch); what is left when the publisher stops leaves then
CHUNK_HOLD = 0.001
_STOP = object()
# what one read takes at most: under malloc's mmap threshold (128 KiB), so
# that a small read costs no mmap/mremap/munmap of its buffer
_READ = 64 * 1024
# a plain socket is blocking, its waits bounded by the kernel (SO_SNDTIMEO,
# SO_RCVTIMEO: a struct timeval of two longs on Linux): a write is one
# sendto, a caller's read one recvfrom, no poll() before either (Python's
# own socket timeouts poll first)
_KERNEL_TIMEOUTS = sys.platform.startswith("linux")
# read_reply(sock, sid, reply, budget): a request's reply read in C (natsproto.c;
# None without the accelerator: the round trip takes wait()'s reads)
_read_reply = compiled("read_reply") if _KERNEL_TIMEOUTS else None
# the spin back-off of read_reply's waits (natscodec.c, as the other faces')
_SpinPolicy = compiled("SpinPolicy")
_monotonic = time.monotonic


def _timeval(seconds: float | None) -> bytes:
    """SO_RCVTIMEO's and SO_SNDTIMEO's value for ``seconds`` (None: no
    limit, which is a zero timeval; a positive wait is never rounded to it)."""
    if seconds is None:
        return struct.pack("@ll", 0, 0)
    sec = int(seconds)
    usec = int((seconds - sec) * 1e6)
    return struct.pack("@ll", sec, usec if sec or usec else 1)


class Dispatcher:
    """One thread that calls the functions it is given, in order: where a
    client's hooks (error_cb, status_cb ...) run, away from the engine's
    lock.  Started at the first call; their exceptions go to ``report(fn, exc)``."""

    def __init__(self, name: str, report: Callable[[Any, BaseException], None]):
        self.name = name
        self.report = report
        self.queue: deque = deque()
        self.cv = threading.Condition(threading.Lock())
        self.thread: threading.Thread | None = None
        self.stopped = False

    def put(self, fn: Callable[..., object], *args: Any) -> None:
        with self.cv:
            if self.stopped:
                _log.debug("%s: %r comes after the client closed: not called", self.name, fn)
                return
            self.queue.append((fn, args))
            if self.thread is None:
                self.thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
                self.thread.start()
            self.cv.notify()

    def _loop(self) -> None:
        q = self.queue
        cv = self.cv
        while True:
            with cv:
                while not q:
                    cv.wait()
                fn, args = q.popleft()
            if fn is _STOP:
                return
            try:
                fn(*args)
            except Exception as e:  # a user's callback failed: reported, the thread goes on
                self.report(fn, e)

    def stop(self, timeout: float) -> None:
        """Call what is queued, then end the thread (joined unless it is the caller's)."""
        with self.cv:
            if self.stopped:
                return
            self.stopped = True
            t = self.thread
            if t is None:
                return
            self.queue.append((_STOP, ()))
            self.cv.notify()
        if threading.current_thread() is not t:
            t.join(timeout)


class SyncIO(Driver):
    """The engine, its socket and its timers, shared by threads (see the module)."""

    def __init__(self, options: Options, name: str, dispatcher: Dispatcher,
                 status_hook: Callable[[str], None], error_hook: Callable[[Exception], None], **kw: Any):
        super().__init__(options, **kw)
        self._table = effect_table(self, on_pong_received=self._nothing_to_do)
        self.status_hook = status_hook  # called with the lock held: they queue user callbacks only
        self.error_hook = error_hook
        self.info_hook: Callable[[dict], None] | None = None
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)   # callers waiting for something
        self.kcond = threading.Condition(self.lock)  # the keeper, waiting for work
        self.dispatcher = dispatcher
        self.name = name
        #: True: waiting callers read the socket themselves (leader/follower);
        #: False: only the keeper reads (a reader thread; measured in the docs)
        self.callers_read = True
        self.leading = False           # a thread is reading (lock released meanwhile)
        self.followers = 0             # callers in wait() sleeping on cond while another reads
        self.last_lead = 0.0           # when a caller last read
        self.last_write = 0.0          # when a publish last wrote at once (Client.publish)
        self.last_chunk = 0.0          # when a publisher last wrote a WRITE_CHUNK batch itself
        self.passive = 0               # callback subscriptions: the keeper must read at once
        self.ready: deque = deque()    # callback subscriptions with messages for the keeper to hand out
        self.keeper: threading.Thread | None = None
        self.stopping = False
        self._selecting = False        # the keeper waits in select (a wake byte reaches it)
        self._woken = False            # a wake byte is on its way
        self._holding = False          # the keeper's wait ends within CHUNK_HOLD: a Flush need not wake it
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._io: threading.Lock | None = None  # TLS: reads and writes one at a time
        # held while a thread sends; taken with the lock held (a short wait:
        # one send), released before the lock is taken again (write_now)
        self._wlock = threading.Lock()
        self._sending = 0  # threads in _write_unlocked, sending or about to
        self._rcvtimeo: float | None = None  # SO_RCVTIMEO of a plain socket (seconds; None: no limit)
        self._rcv_for: float | None = None   # the wait _bound_reads last found SO_RCVTIMEO right for
        self._fd = -1                        # the plain socket's descriptor (direct)
        #: a request's round trip may be read by read_reply (round_trip): a plain socket on Linux, compiled
        self.direct = False
        #: microseconds read_reply polls the socket before it sleeps (the spin_time option; 0: off)
        self.spin_us = 0
        self._spin = _SpinPolicy() if _SpinPolicy is not None else None
        self._subs: dict[int, Any] = {}   # sid -> the client's Subscription

    # ------------------------------------------------------------ threads
    def start(self) -> None:
        """Start the keeper thread (unless it runs)."""
        if self.keeper is None or not self.keeper.is_alive():
            if self._wake_r.fileno() == -1:  # closed by the stop() of an earlier connection
                self._wake_r, self._wake_w = socket.socketpair()
                self._wake_r.setblocking(False)
            self.stopping = False
            self.keeper = threading.Thread(target=self._keep, name=self.name, daemon=True)
            self.keeper.start()

    def stop(self, timeout: float) -> None:
        """End the keeper (call with the lock released; the engine closed)."""
        with self.lock:
            self.stopping = True
            self._wake()
            self.cond.notify_all()
        k = self.keeper
        if k is not None and threading.current_thread() is not k:
            k.join(timeout)
            if not k.is_alive():
                self._wake_r.close()
                self._wake_w.close()

    def _wake(self) -> None:
        """Get the keeper to look at its work (lock held)."""
        if self._selecting:
            if not self._woken:
                self._woken = True
                try:
                    self._wake_w.send(b"!")
                except OSError as e:  # closed by stop(): the keeper is ending anyway
                    _log.debug("wake: %s", e)
        else:
            self.kcond.notify()

    def _keep(self) -> None:
        """The keeper's loop: timers, queued writes, and reading when no caller reads."""
        eng = self.engine
        with self.lock:
            while not self.stopping:
                if self.ready:
                    self.ready.popleft()._run_callbacks()
                    continue
                if self._flush and self.last_chunk + CHUNK_HOLD <= time.monotonic():
                    self.write_now()
                now = time.monotonic()
                if self._fire_due(now):
                    continue
                left = self._until(now, None)
                # a publisher writes its own batches: looked at again after
                # CHUNK_HOLD, unwoken by the Flush of each batch meanwhile
                self._holding = self._flush
                if self._holding:
                    hold = max(0.0, self.last_chunk + CHUNK_HOLD - now)
                    left = hold if left is None or hold < left else left
                if self._sock is None and eng.status == CLOSED and not self._armed:
                    return
                if self._sock is None or self.leading:
                    # (a caller's read may end without a word to the keeper)
                    self.kcond.wait(KEEPER_IDLE if left is None else min(left, KEEPER_IDLE))
                    continue
                quiet = now - self.last_lead
                if self.callers_read and not self.passive and quiet < KEEPER_IDLE:
                    self.kcond.wait(KEEPER_IDLE - quiet if left is None else min(left, KEEPER_IDLE - quiet))
                    continue
                self._lead(left, True)
                if eng.status == CLOSED and self._sock is None and not self._armed:
                    break  # closed for good (allow_reconnect False, attempts spent): nothing to keep
            while self.ready:  # what came before the end still goes to the callbacks
                self.ready.popleft()._run_callbacks()

    def schedule(self, sub: Any) -> None:
        """``sub`` has messages for its callback (lock held): the keeper hands them out."""
        self.ready.append(sub)
        if threading.current_thread() is not self.keeper:
            self._wake()

    # ------------------------------------------------------------ reading
    def _lead(self, timeout: float | None, keeper: bool = False) -> None:
        """Read once, the lock released meanwhile (held on entry and exit),
        and hand what came to the engine; wake every waiting caller after."""
        sock = self._sock
        assert sock is not None
        self.leading = True
        self._selecting = keeper
        self.lock.release()
        try:
            data, err = self._read(sock, timeout, keeper)
        except BaseException:  # KeyboardInterrupt in select: another thread reads from now on
            self.lock.acquire()
            self.leading = self._selecting = False
            self.cond.notify_all()
            raise
        self.lock.acquire()
        self.leading = self._selecting = False
        if keeper:
            if self._woken:
                self._woken = False
                self._drain_wake()
        else:
            self.last_lead = time.monotonic()
        if sock is self._sock:
            if data:
                self.engine.receive_data(data)
                self._run()
            elif data is not None or err is not None:
                self._lost(err)
        if self.followers:
            self.cond.notify_all()
        if self.passive and not keeper:
            self.kcond.notify()  # callback subscriptions: the keeper reads on at once

    def _read(self, sock: socket.socket, timeout: float | None, keeper: bool) -> tuple[bytes | None, str | None]:
        """(bytes read, None); (None, None) when nothing came in time (or the
        keeper was woken); (b"", None) at the end of the stream; (None,
        reason) when the socket failed."""
        io = self._io
        try:
            if io is None and not keeper and _KERNEL_TIMEOUTS:
                # a caller reads at once, SO_RCVTIMEO bounding the wait
                if timeout is None:
                    if self._rcvtimeo is not None:
                        self._set_rcvtimeo(sock, None)
                else:
                    self._bound_reads(sock, timeout)
                return sock.recv(_READ), None
            if io is None or not sock.pending():  # type: ignore[attr-defined]  # (an SSLSocket)
                fds = [sock, self._wake_r] if keeper else [sock]
                r, _, _ = select.select(fds, [], [], timeout)
                if sock not in r:
                    return None, None
            if io is None:
                return sock.recv(_READ), None
            with io:
                return sock.recv(_READ), None
        except (BlockingIOError, ssl.SSLWantReadError):  # SO_RCVTIMEO passed; a TLS record not whole yet
            return None, None
        except (OSError, ValueError) as e:  # ValueError: select() on a socket closed meanwhile
            return None, str(e) or type(e).__name__

    def _bound_reads(self, sock: socket.socket, timeout: float) -> None:
        """SO_RCVTIMEO for a caller's read that may wait ``timeout`` seconds
        (see :meth:`_set_rcvtimeo`)."""
        r = self._rcvtimeo
        if r is None or r > timeout or r < timeout * 0.5:
            self._set_rcvtimeo(sock, timeout * 0.75)
        self._rcv_for = timeout

    def _set_rcvtimeo(self, sock: socket.socket, seconds: float | None) -> None:
        """SO_RCVTIMEO of a plain blocking socket (the reading thread only):
        a read waits ``seconds`` at most (None: no limit).  Set with room
        (3/4 of a caller's wait, kept while it lies within half to all of
        the next one's), so that a loop of requests sets it once; a read
        that ends early is read again."""
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _timeval(seconds))
        self._rcvtimeo = seconds
        self._rcv_for = None

    def _drain_wake(self) -> None:
        try:
            self._wake_r.recv(64)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            _log.debug("wake drain: %s", e)

    def _fire_due(self, now: float) -> bool:
        fired = super()._fire_due(now)
        if fired:
            self.cond.notify_all()  # a request's timeout, a PING's: what a waiting caller may wait for
        return fired

    def wait(self, done: Callable[[], object], timeout: float | None = None) -> bool:
        """With the lock held: carry on (reading when nobody does, firing
        due timers) until ``done()`` (True) or ``timeout`` seconds (False).
        ErrConnectionClosed when the client is closed and ``done()`` can no
        longer become true."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done():
            now = time.monotonic()
            heap = self._timers  # (a new list when on_cancel_timer rebuilt it)
            if heap and heap[0][0] <= now and self._fire_due(now):
                continue
            if deadline is not None and now >= deadline:
                return False
            left = self._until(now, deadline)
            if self.callers_read and not self.leading and self._sock is not None:
                self._lead(left)
            elif self._sock is None and self.engine.status == CLOSED and not self._armed:
                raise make_error("ErrConnectionClosed", "No connection to NATS server")
            else:
                if self._selecting and not self.passive and self.callers_read:
                    # the keeper reads: it hands the socket over (it stays out
                    # while a caller read lately), so that the next reply is
                    # read by the thread that waits for it, not passed on to it
                    self.last_lead = now
                    self._wake()
                self.followers += 1
                try:
                    self.cond.wait(left)
                finally:
                    self.followers -= 1
        return True

    def round_trip(self, direct: tuple[Request, bytes, int], timeout: float) -> str:
        """A request's round trip on a plain socket, the lock held (``direct``:
        Engine.direct_request's request, frame and sid): the frame written, the
        reply read by this thread in one call of read_reply (the lock
        released meanwhile, others waiting as followers) and ended by
        Engine.direct_reply; anything else read goes to the engine and
        :meth:`await_request` waits for the rest of ``timeout`` seconds.
        The request's outcome (RequestDone's)."""
        req, frame, sid = direct
        sock = self._sock
        assert sock is not None
        start = _monotonic()
        err = self._send(sock, frame)  # (nothing queued, no send in flight: Client.request looked)
        if err is not None:
            self.engine.write_failed(err)
            self._run()
            return self.await_request(req, start + timeout - _monotonic())
        if timeout != self._rcv_for:
            self._bound_reads(sock, timeout)
        budget = timeout - self._rcvtimeo  # type: ignore[operator]  # (set by _bound_reads)
        fd = self._fd
        self.leading = True
        self.lock.release()
        try:
            got = _read_reply(fd, sid, req.reply, budget, self.spin_us, self._spin)  # type: ignore[misc]  # (direct: compiled)
        except BaseException:  # KeyboardInterrupt before anything was read
            self.lock.acquire()
            self.leading = False
            self.cond.notify_all()
            self._cancel(req)
            raise
        self.lock.acquire()
        self.leading = False
        self.last_lead = now = _monotonic()
        outcome = None
        if sock is self._sock:
            kind = got.__class__
            if kind is tuple:
                outcome = self.engine.direct_reply(req, got)
            elif kind is bytes and got:
                self.engine.receive_data(got)
                self._run()
            elif got is not None:  # the end of the stream (b""), a failure (its text)
                self._lost(got if kind is str else None)
        if self.followers:
            self.cond.notify_all()
        if self.passive:
            self.kcond.notify()  # callback subscriptions: the keeper reads on at once
        return outcome or self.await_request(req, start + timeout - now)

    def await_request(self, req: Request, timeout: float | None) -> str:
        """Wait (lock held) for the end of ``req``, whose handler is the list
        its outcome is appended to (RequestDone), and return that outcome;
        ``timeout``: seconds after which the engine ends it with its timeout
        (a request made without the engine's timer).  A KeyboardInterrupt
        meanwhile (or any exception) cancels it in the engine."""
        box = req.handler
        try:
            if not self.wait(box.__len__, timeout):
                self.engine.timer_fired(req)
                self._run()
        except BaseException:
            self._cancel(req)
            raise
        return box[0]

    def _cancel(self, req: Request) -> None:
        if not req.done and req.id in self.engine.requests:
            self.engine.cancel_request(req.id)
            self._run()

    # ------------------------------------------------------------ writing
    def _run(self, writing: bool = False) -> None:
        """Carry out the engine's effects (lock held); handshake traffic is
        written at once, user traffic by the keeper or :meth:`write_now`
        (``writing``: the caller calls it next, no Flush for the keeper)."""
        eng = self.engine
        table = self._table
        while True:
            fx = eng.take(writing)
            for f in fx:
                try:
                    handler = table[f.__class__]
                except KeyError:
                    unknown_effect(f)
                handler(f)
            if self._sock is not None and eng.status != CONNECTED and eng.want_write:
                self._write(eng.data_to_send())
            elif not eng._fx:  # (has_effects without the property call)
                return

    def on_flush(self, e: Flush) -> None:
        if not self._flush:
            self._flush = True
            if not self._holding:
                self._wake()

    def write_now(self) -> None:
        """Write everything queued (lock held; released while the socket
        takes more than SMALL_WRITE bytes of a connection that is up, so
        that publishers queue on meanwhile).  One thread sends at a time,
        the bytes in the order they were taken from the engine."""
        self._flush = False
        eng = self.engine
        while self._sock is not None and eng.want_write:
            if (self._sending or eng._out_size > SMALL_WRITE) and eng.status == CONNECTED:
                self._write_unlocked()
            else:
                # a few messages (a lone publish, a request) or the
                # handshake's: sent holding the lock, no thread switch for
                # it (nobody sends meanwhile: see _write)
                err = self._send(self._sock, eng.data_to_send(1 << 20))
                if err is not None:
                    eng.write_failed(err)
                    self._run()
            if eng._fx:
                self._run()

    def _write_unlocked(self) -> None:
        """Take what is queued and send it with the lock released (held on
        entry and exit), after a send in flight (``_wlock``)."""
        sock = self._sock
        lock = self.lock
        wlock = self._wlock
        wlock.acquire()  # a send in flight (another thread's) ends first
        data = self.engine.data_to_send(1 << 20)
        self._sending += 1
        lock.release()
        try:
            err = self._send(sock, data)  # type: ignore[arg-type]  # (not None: write_now's loop)
        finally:
            wlock.release()  # (before the lock: who holds the lock may wait for this one)
            lock.acquire()
            self._sending -= 1
        if err is not None and sock is self._sock:
            self.engine.write_failed(err)
            self._run()

    def _write(self, data: bytes) -> None:
        """Send ``data`` holding the lock: nobody else sends meanwhile (one
        would take the lock first; none is in :meth:`_write_unlocked`, or
        the connection is a new one)."""
        sock = self._sock
        assert sock is not None
        err = self._send(sock, data)
        if err is not None:
            self.engine.write_failed(err)
            self._run()

    def _send(self, sock: socket.socket, data: bytes) -> str | None:
        """Send all of ``data`` (the only sender); why it failed, or None."""
        try:
            if self._io is not None:
                with self._io:
                    sock.sendall(data)
            elif not _KERNEL_TIMEOUTS:
                sock.sendall(data)
            else:
                start = time.monotonic()
                sent = sock.send(data)  # all of it, unless the socket is full
                if sent != len(data):
                    self._send_rest(sock, data, sent, start)
        except OSError as e:  # past flush_timeout too (socket.timeout; BlockingIOError from SO_SNDTIMEO)
            return str(e) or type(e).__name__
        return None

    def _send_rest(self, sock: socket.socket, data: bytes, sent: int, start: float) -> None:
        """The rest of a write the socket took in part, within flush_timeout
        of ``start`` in all (as Python's sendall with a timeout): each send's
        SO_SNDTIMEO is what is left of it.  socket.timeout past it."""
        flush = self.engine.options.flush_timeout / 1000 or None
        view = memoryview(data)[sent:]
        try:
            while view:
                if flush is not None:
                    left = start + flush - time.monotonic()
                    if left <= 0:
                        raise socket.timeout(f"timed out: {len(view)} bytes not written")
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _timeval(left))
                view = view[sock.send(view):]
        finally:
            if flush is not None and sock.fileno() != -1:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _timeval(flush))

    # ------------------------------------------------------------ the socket
    def _settle(self) -> None:
        """The socket's timeouts from now on: writes wait ``flush_timeout``;
        reads wait in select (the keeper, a TLS socket) or, a caller's of a
        plain socket on Linux, in recv (see :meth:`_read`)."""
        sock = self._sock
        if sock is None:
            return
        flush = self.engine.options.flush_timeout / 1000 or None
        plain = _KERNEL_TIMEOUTS and not isinstance(sock, ssl.SSLSocket)
        if plain:
            sock.settimeout(None)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _timeval(flush))
            self._rcvtimeo = self._rcv_for = None
        else:
            sock.settimeout(flush)
        self.direct = plain and _read_reply is not None
        self._fd = sock.fileno()
        self._sock_timeout = sock.gettimeout()

    def on_open(self, e: Open) -> None:
        self._io = None
        super().on_open(e)
        self._settle()
        self._wake()
        self.cond.notify_all()

    def on_start_tls(self, e: StartTls) -> None:
        super().on_start_tls(e)
        if isinstance(self._sock, ssl.SSLSocket):
            self._io = threading.Lock()
            self._settle()

    def on_close(self, e: object) -> None:
        sock = self._sock
        if sock is not None:
            data = self.engine.data_to_send()
            self._sock = None
            try:
                with self._wlock:  # after a send in flight (write_now's, the lock released)
                    if data:
                        sock.sendall(data)
            except OSError as exc:  # the peer is gone: nothing more to tell it
                _log.debug("the last write to %s failed: %s", self.server, exc)
            try:
                sock.shutdown(socket.SHUT_RDWR)  # a reader in select() sees it
            except OSError as exc:
                _log.debug("shutdown: %s", exc)
            sock.close()
        self._flush = False
        self._raw = None
        self.cond.notify_all()

    # ------------------------------------------------------------ what callers and callbacks hear
    def on_info_received(self, e: InfoReceived) -> None:
        self.info = e.info
        if self.info_hook is not None:
            self.info_hook(e.info)

    def on_status_changed(self, e: StatusChanged) -> None:
        if e.status == RECONNECTING and not self.allow_reconnect:
            self.engine.disconnect()
        self.status_hook(e.status)
        self.cond.notify_all()

    def on_error_changed(self, e: ErrorChanged) -> None:
        if e.error is None:
            return
        self.errors.append(e.error)
        self.error_hook(e.error)

    def on_deliver(self, e: Deliver) -> None:
        e.sub.handler._deliver((e.msg,))

    def on_deliver_many(self, e: DeliverMany) -> None:
        e.sub.handler._deliver(e.msgs)

    def on_sub_gone(self, e: SubGone) -> None:
        sub = self._subs.pop(e.sid, None)
        if sub is not None:
            sub._end()

    def on_subs_cleared(self, e: object) -> None:
        subs = list(self._subs.values())
        self._subs.clear()
        for sub in subs:
            sub._end()

    def on_request_reply(self, e: RequestReply) -> None:
        e.req.handler.msgs.append(e.msg)

    def forget_after_fork(self) -> None:
        """In a forked child: new locks, the inherited socket closed here
        only (not shut down: it is the parent's connection too), no thread,
        the engine closed without a word to the server."""
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.kcond = threading.Condition(self.lock)
        self._wlock = threading.Lock()
        self._sending = 0
        self.keeper = None
        self.stopping = True
        sock, self._sock = self._sock, None
        if sock is not None:
            sock.close()
        self.engine.disconnect()
        self.engine.take()
        self.engine.data_to_send()
        for s in (self._wake_r, self._wake_w):
            s.close()


def after_fork_hook(register: Callable[[], list]) -> None:
    """Register (once per process) what a forked child does with the
    clients ``register()`` lists: each is closed there (SyncIO.forget_after_fork)."""
    def child() -> None:
        for c in register():
            c._after_fork()
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=child)
