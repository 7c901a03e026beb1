"""The blocking driver: the engine over one plain socket, read while the caller waits.

    d = Driver(Options(servers=("nats://localhost:4222",)))
    d.connect()                                   # the engine's handshake: INFO, [TLS], CONNECT, PING/PONG
    sub = d.subscribe("greet.*")
    d.publish("greet.py", b"hello")
    msg = sub.next_msg(timeout=1.0)
    reply = d.request("time.now", b"", timeout=1.0)   # ErrTimeout, ErrNoResponders
    d.close()

It owns no thread.  Whatever the caller waits for (the end of the
handshake, a request's reply, a flush, a message), :meth:`Driver.wait` reads
the socket meanwhile, hands every read to ``Engine.receive_data``, fires the
engine's timers (a heap of ``StartTimer`` deadlines) when they are due, and
carries out the effects through one table built by
:func:`tclnats_py.engine.driver.effect_table`.  Everything the protocol
decides is the engine's: the handshake and auth, keep-alive PINGs and the
PONGs the server asks for, ``-ERR``, and when and where to reconnect (an
``Open`` after a lost connection is carried out like the first one).
Connection attempts block for at most ``connect_timeout``; writes for at most
``flush_timeout``.

For a reader that wants a pull's deliveries as columns rather than messages
(the Spark source), :meth:`Driver.read_raw` hands the bytes read to a scanner
of the caller's, and :meth:`Driver.end_raw` gives the engine what the scanner
left; see there.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import socket
import ssl
import time
from collections import deque

from tclnats_py.credentials import read_credentials
from tclnats_py.engine.connection import CLOSED, CONNECTED, RECONNECTING, Engine, Msg
from tclnats_py.engine.driver import effect_table, unknown_effect
from tclnats_py.engine.options import Options
from tclnats_py.errors import NatsError, make_error

TYPE_CHECKING = False  # typing costs ~10 ms of every start: type names for the checker only
if TYPE_CHECKING:
    from typing import Any, Callable, Sequence

    from tclnats_py.engine.effects import (CancelTimer, Close, Deliver, DeliverMany, ErrorChanged, Flush,
                                           InfoReceived, Log, Open, PingDone, RequestDone, StartTimer, StartTls,
                                           StatusChanged, SubGone, SubsCleared)

__all__ = ["Driver", "Subscription", "DEFAULT_SERVER", "request_error"]

DEFAULT_SERVER = "nats://localhost:4222"

_log = logging.getLogger("tclnats_py.sync")
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}

# what one read takes at most
_RECV = 1 << 20
# the shortest wait for the socket (a timeout of 0 would make it non-blocking)
_MIN_WAIT = 0.0005
# async errors kept for the requests waiting meanwhile (see Driver.request)
_KEEP_ERRORS = 16


def request_error(outcome: str, subject: str) -> NatsError:
    """The error of a request that ended with ``outcome`` (RequestDone's) other than "msg"."""
    if outcome == "no_responders":
        return make_error("ErrNoResponders", f"No responders available for request to {subject}")
    if outcome == "timeout":
        return make_error("ErrTimeout", f"Request to {subject} timed out")
    if outcome == "lost":  # nats-tcl: the connection is lost for good -> the request timed out
        return make_error("ErrTimeout", "Connection lost")
    return make_error("ErrConnectionClosed", "Connection closed")


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


class Subscription:
    """The messages of one subscription, queued until the caller takes them."""

    __slots__ = ("driver", "sid", "subject", "queue", "ended")

    def __init__(self, driver: "Driver", subject: str):
        self.driver = driver
        self.subject = subject
        self.sid = 0
        self.queue: deque = deque()
        self.ended = False

    def __repr__(self) -> str:
        return f"<Subscription sid={self.sid} subject={self.subject!r} queued={len(self.queue)}>"

    def next_msg(self, timeout: float | None = 1.0) -> Msg:
        """The next message; ErrTimeout after ``timeout`` seconds (None: no
        limit), ErrBadSubscription once the subscription has ended and its
        queue is empty."""
        q = self.queue
        if not q and not self.ended:
            self.driver.wait(lambda: bool(q) or self.ended, timeout)
        if q:
            return q.popleft()
        if self.ended:
            raise make_error("ErrBadSubscription", f"Subscription to {self.subject} has ended")
        raise make_error("ErrTimeout", f"No message on {self.subject} within {timeout:g} s")

    def unsubscribe(self, max_msgs: int = 0) -> None:
        """End it now, or after ``max_msgs`` messages in all."""
        self.driver.unsubscribe(self, max_msgs)


class Driver:
    """One engine and the socket it asks for.

    ``tls``: an ``ssl.SSLContext``, or a function returning one (called at
    each TLS handshake); without it, the default context.  ``tls_hostname``
    overrides the name a server certificate must carry (the engine's rule,
    ``ServerPool.tls_name``, otherwise).  ``allow_reconnect`` False: a lost
    connection closes the driver instead of reconnecting (nats-py's option).
    ``status_cb(status)`` and ``error_cb(error)`` are called with the
    engine's status changes and asynchronous errors."""

    def __init__(self, options: Options | None = None, *, tls: ssl.SSLContext | Callable[[], ssl.SSLContext]
                 | None = None, tls_hostname: str | None = None, allow_reconnect: bool = True,
                 lang: str = "python", version: str | None = None,
                 status_cb: Callable[[str], object] | None = None,
                 error_cb: Callable[[Exception], object] | None = None):
        if version is None:
            from tclnats_py import __version__ as version
        self.engine = Engine(options or Options(), clock=_now_ms, lang=lang, version=version)
        self.tls = tls
        self.tls_hostname = tls_hostname
        self.allow_reconnect = allow_reconnect
        self.status_cb = status_cb
        self.error_cb = error_cb
        self.info: dict = {}                   # the server's INFO, as the engine keeps it
        self.errors: deque = deque(maxlen=_KEEP_ERRORS)  # the latest asynchronous errors
        self._sock: socket.socket | None = None
        self._sock_timeout: float | None = None  # what the socket's timeout was last set to
        self._flush = False                    # a Flush effect came: write before waiting
        self._timers: list = []                # heap of (when, n, key); n: the StartTimer that set it
        self._armed: dict = {}                 # key -> n of its live heap entry
        self._count = itertools.count()
        self._subs: dict[int, Subscription] = {}
        self._raw: bytes | None = None         # raw mode: the bytes read, not scanned yet
        self._held: set = set()                # timers due during raw mode (see read_raw)
        self._table = effect_table(self, on_request_reply=self._nothing_to_do,
                                   on_pong_received=self._nothing_to_do)

    # ------------------------------------------------------------ state
    @property
    def status(self) -> str:
        return self.engine.status

    @property
    def is_closed(self) -> bool:
        return self.engine.status == CLOSED

    @property
    def server(self) -> str:
        """``host:port`` of the current server."""
        return self.engine.host_port()

    # ------------------------------------------------------------ connection
    def connect(self, servers: Sequence[str] | None = None) -> "Driver":
        """Connect: every server of the pool is tried once (the engine's
        first round).  Raises the error of the only server, or ErrNoServers
        (its ``__cause__`` the last server's error).  Nothing when not closed."""
        eng = self.engine
        if eng.status != CLOSED:
            return self
        if servers is not None:
            eng.configure_servers(list(servers))
        elif not eng.pool.servers:
            eng.configure_servers(list(eng.options.servers) or [DEFAULT_SERVER])
        eng.connect()
        self._run()
        self.wait(lambda: eng.status == CONNECTED or eng.status == CLOSED)
        if eng.status != CONNECTED:
            err = eng.last_error
            if err is not None and len(eng.options.servers) <= 1:
                raise make_error(err.code, str(err))
            raise make_error("ErrNoServers", "No servers available for connection"
                             + (f" (last error: {err})" if err is not None else "")) from err
        return self

    def close(self) -> None:
        """Write what is buffered, close the socket; waiting requests end
        with ErrConnectionClosed, subscriptions end."""
        self._raw = None
        self._held.clear()
        self.engine.disconnect()
        self._run()
        self._timers.clear()
        self._armed.clear()

    def __enter__(self) -> "Driver":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ publish, subscribe, request
    def publish(self, subject: str, payload: bytes = b"", reply: str | None = None, headers: Any = None) -> None:
        """Queue a message (the engine checks it) and write it."""
        self.engine.publish(subject, payload, reply, headers)
        self._run()

    def subscribe(self, subject: str, queue: str = "", max_msgs: int = 0) -> Subscription:
        sub = Subscription(self, subject)
        sub.sid = self.engine.subscribe(subject, queue, max_msgs, handler=sub).sid
        self._subs[sub.sid] = sub
        self._run()
        return sub

    def unsubscribe(self, sub: Subscription, max_msgs: int = 0) -> None:
        if self.engine.unsubscribe(sub.sid, max_msgs):
            sub.ended = True
            self._subs.pop(sub.sid, None)
        self._run()

    def request(self, subject: str, payload: bytes = b"", timeout: float | None = None, headers: Any = None,
                check_subject: bool = True) -> Msg:
        """The first reply to a message on ``subject`` (the engine's request
        on its shared inbox), within ``timeout`` seconds (None: the
        request_timeout option).  ErrTimeout, ErrNoResponders,
        ErrConnectionClosed; ErrPermissions when the server refuses the
        publish to ``subject`` while the request waits."""
        eng = self.engine
        if timeout is None:
            timeout = eng.options.request_timeout / 1000
        box: list = []
        self.errors.clear()
        req = eng.request(subject, payload, max(1, int(timeout * 1000)), headers, handler=box,
                          check_subject=check_subject)
        self._run()
        errors = self.errors
        self.wait(lambda: bool(box) or (bool(errors) and self._refused(subject) is not None))
        if not box:
            err = self._refused(subject)
            eng.cancel_request(req.id)
            self._run()
            raise make_error(err.code, str(err)) if err is not None else make_error("ErrTimeout", subject)
        outcome = box[0]
        if outcome == "msg":
            return req.msg
        raise request_error(outcome, subject)

    def _refused(self, subject: str) -> NatsError | None:
        """The permissions error of a publish to ``subject`` (the server's
        text names the subject in quotes, lower-cased by the engine)."""
        quoted = f'"{subject.lower()}"'
        for e in self.errors:
            if getattr(e, "code", None) == "ErrPermissions" and quoted in str(e):
                return e
        return None

    def flush(self, timeout: float = 10.0) -> None:
        """Write what is queued and wait for the server's PONG to a PING:
        everything before it has been processed.  ErrTimeout, ErrConnectionClosed."""
        box: list = []
        self.engine.ping(max(1, int(timeout * 1000)), handler=box)
        self._run()
        self.wait(lambda: bool(box))
        if box[0] is False:
            raise make_error("ErrTimeout", f"Flush timeout: no PONG from {self.server} within {timeout:g} s")
        if box[0] is None:
            raise make_error("ErrConnectionClosed", "Connection closed")

    # ------------------------------------------------------------ waiting
    def wait(self, done: Callable[[], bool], timeout: float | None = None) -> bool:
        """Read, fire the engine's timers and carry out its effects until
        ``done()`` is true (True) or ``timeout`` seconds have passed (False).
        ErrConnectionClosed when nothing is left that could make it true (the
        engine closed, no timer set)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done():
            now = time.monotonic()
            if self._fire_due(now):
                continue
            if deadline is not None and now >= deadline:
                return False
            left = self._until(now, deadline)
            if self._sock is not None:
                data = self._recv(left)
                if data:
                    self.engine.receive_data(data)
                    self._run()
            elif left is not None:
                time.sleep(left)
            else:
                raise make_error("ErrConnectionClosed", "No connection to NATS server")
        return True

    def _fire_due(self, now: float) -> bool:
        """Fire the timers due at ``now``; whether any fired."""
        heap, armed = self._timers, self._armed
        fired = False
        while heap and heap[0][0] <= now:
            _, n, key = heapq.heappop(heap)
            if armed.get(key) != n:
                continue  # cancelled or set again
            del armed[key]
            if self._raw is not None and key == "ping":
                # the scanner of raw mode takes PONGs with the deliveries: a
                # keep-alive PING now would look unanswered to the engine
                self._held.add(key)
                continue
            self.engine.timer_fired(key)
            self._run()
            fired = True
        return fired

    def _until(self, now: float, deadline: float | None) -> float | None:
        """Seconds until the next timer or the deadline (None: neither)."""
        heap, armed = self._timers, self._armed
        while heap and armed.get(heap[0][2]) != heap[0][1]:
            heapq.heappop(heap)
        t = heap[0][0] if heap else None
        if deadline is not None and (t is None or deadline < t):
            t = deadline
        return None if t is None else max(_MIN_WAIT, t - now)

    def _recv(self, timeout: float | None) -> bytes:
        """One read of the socket, waiting ``timeout`` seconds at most: the
        bytes, or b"" when none came in time.  A broken or closed connection
        is reported to the engine (b"")."""
        sock = self._sock
        assert sock is not None
        try:
            if timeout != self._sock_timeout:  # (each settimeout is a system call)
                sock.settimeout(timeout)
                self._sock_timeout = timeout
            data = sock.recv(_RECV)
        except socket.timeout:
            return b""
        except OSError as e:
            self._lost(str(e) or type(e).__name__)
            return b""
        if not data:
            self._lost(None)
        return data

    def _lost(self, reason: str | None) -> None:
        self._raw = None
        self.engine.connection_lost(reason)
        self._run()

    # ------------------------------------------------------------ raw reading
    def read_raw(self, scan: Callable[[bytes], int], timeout: float) -> None:
        """Raw mode: read once and hand ``scan`` the bytes not scanned yet
        followed by what arrived; ``scan(buf)`` returns how many bytes it
        used from the start, the rest waits for the next call.  The first
        call takes over what the engine's parser holds of an incomplete
        frame.  The caller gives the engine the frames that are its own
        (:meth:`feed`: a PING the scanner found) and ends raw mode with
        :meth:`end_raw`.  Timers fire meanwhile, except the keep-alive PING,
        which waits for the end of raw mode.  ErrTimeout when nothing arrived
        within ``timeout`` seconds, ErrConnectionClosed when the connection
        broke (the engine has been told)."""
        if self._raw is None:
            if self._sock is None:
                raise make_error("ErrConnectionClosed", f"No connection to {self.server}")
            # the engine has no public way to this yet: the tail of its parser
            self._raw = self.engine._parser.take_unparsed()
        now = time.monotonic()
        deadline = now + timeout
        wait = timeout  # the same figure call after call: the socket's timeout stays set
        while True:
            self._fire_due(now)
            if self._sock is None or self._raw is None:
                raise make_error("ErrConnectionClosed", f"the server {self.server} closed the connection")
            left = self._until(now, None)
            data = self._recv(wait if left is None or left >= wait else left)
            if data:
                break
            now = time.monotonic()
            wait = deadline - now
            if wait <= 0:
                raise make_error("ErrTimeout", f"Timeout waiting for the server {self.server}")
        buf = self._raw + data if self._raw else data
        self._raw = buf
        self._raw = buf[scan(buf):]

    def feed(self, data: bytes) -> None:
        """Hand the engine bytes a raw scanner left to it (whole frames)."""
        self.engine.receive_data(data)
        self._run()

    def end_raw(self) -> None:
        """Leave raw mode: the bytes not scanned go to the engine, and a
        keep-alive PING held back fires now."""
        rest, self._raw = self._raw, None
        held, self._held = self._held, set()
        if rest:
            self.engine.receive_data(rest)
        for key in held:
            self.engine.timer_fired(key)
        self._run()

    # ------------------------------------------------------------ effects
    def _run(self) -> None:
        """Carry out the engine's effects until it has none left, writing
        what it has to send when a Flush asked (or during the handshake)."""
        eng = self.engine
        table = self._table
        while True:
            for f in eng.take():
                try:
                    handler = table[f.__class__]
                except KeyError:
                    unknown_effect(f)
                handler(f)
            if self._sock is not None and eng.want_write and (self._flush or eng.status != CONNECTED):
                self._flush = False
                self._write(eng.data_to_send())
            elif not eng.has_effects:
                return

    def _write(self, data: bytes) -> None:
        sock = self._sock
        assert sock is not None
        timeout = self.engine.options.flush_timeout / 1000 or None
        try:
            if timeout != self._sock_timeout:
                sock.settimeout(timeout)
                self._sock_timeout = timeout
            sock.sendall(data)
        except OSError as e:
            self.engine.write_failed(str(e) or type(e).__name__)

    def on_open(self, e: Open) -> None:
        eng = self.engine
        if eng.status == CLOSED:
            return  # closed while this effect waited (allow_reconnect False)
        eng.set_credentials(read_credentials(eng.options))
        server = e.server
        try:
            sock = socket.create_connection((server.host, server.port), eng.options.connect_timeout / 1000 or None)
        except Exception as exc:  # OSError mostly; UnicodeError/ValueError for a bad host name
            eng.socket_failed(getattr(exc, "strerror", None) or str(exc) or type(exc).__name__,
                              unresolved=isinstance(exc, socket.gaierror))
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._sock = sock
        self._sock_timeout = sock.gettimeout()
        eng.socket_connected()

    def _ssl_context(self) -> ssl.SSLContext:
        tls = self.tls
        if tls is None:
            return ssl.create_default_context()
        return tls if isinstance(tls, ssl.SSLContext) else tls()

    def on_start_tls(self, e: StartTls) -> None:
        eng = self.engine
        sock = self._sock
        if sock is None:
            return
        try:
            ctx = self._ssl_context()
            name = eng.pool.tls_name(e.server, self.tls_hostname)
            sock.settimeout(eng.options.connect_timeout / 1000 or None)
            self._sock = ctx.wrap_socket(sock, server_hostname=name)
            self._sock_timeout = self._sock.gettimeout()
        except Exception as exc:  # ssl.SSLError (verification ...), OSError, ValueError (bad context)
            eng.tls_failed(str(exc) or type(exc).__name__)
            return
        eng.tls_done()

    def on_close(self, e: Close) -> None:
        sock, self._sock = self._sock, None
        self._flush = False
        self._raw = None
        if sock is None:
            return
        data = self.engine.data_to_send()
        try:
            if data:
                sock.settimeout(self.engine.options.flush_timeout / 1000 or None)
                sock.sendall(data)
        except OSError as exc:  # the peer is gone: nothing more to tell it
            _log.debug("the last write to %s failed: %s", self.server, exc)
        finally:
            sock.close()

    def on_start_timer(self, e: StartTimer) -> None:
        n = next(self._count)
        self._armed[e.key] = n
        heapq.heappush(self._timers, (time.monotonic() + e.ms / 1000, n, e.key))

    def on_cancel_timer(self, e: CancelTimer) -> None:
        armed = self._armed
        armed.pop(e.key, None)
        self._held.discard(e.key)
        heap = self._timers
        if len(heap) > 64 + 4 * len(armed):  # mostly cancelled entries: keep the live ones
            self._timers = [t for t in heap if armed.get(t[2]) == t[1]]
            heapq.heapify(self._timers)

    def on_status_changed(self, e: StatusChanged) -> None:
        if e.status == RECONNECTING and not self.allow_reconnect:
            self.engine.disconnect()
        if self.status_cb is not None:
            self.status_cb(e.status)

    def on_error_changed(self, e: ErrorChanged) -> None:
        if e.error is None:
            return
        self.errors.append(e.error)
        if self.error_cb is not None:
            self.error_cb(e.error)

    def on_info_received(self, e: InfoReceived) -> None:
        self.info = e.info

    def on_log(self, e: Log) -> None:
        level = _LEVELS.get(e.level, logging.INFO)
        if _log.isEnabledFor(level):
            _log.log(level, e.text)

    def on_deliver(self, e: Deliver) -> None:
        e.sub.handler.queue.append(e.msg)

    def on_deliver_many(self, e: DeliverMany) -> None:
        e.sub.handler.queue.extend(e.msgs)

    def on_sub_gone(self, e: SubGone) -> None:
        sub = self._subs.pop(e.sid, None)
        if sub is not None:
            sub.ended = True

    def on_subs_cleared(self, e: SubsCleared) -> None:
        for sub in self._subs.values():
            sub.ended = True
        self._subs.clear()

    def on_request_done(self, e: RequestDone) -> None:
        e.req.handler.append(e.outcome)

    def on_ping_done(self, e: PingDone) -> None:
        e.ping.handler.append(e.ok)

    def on_flush(self, e: Flush) -> None:
        self._flush = True

    @staticmethod
    def _nothing_to_do(e: object) -> None:
        """RequestReply (this driver's requests take the first reply, which
        comes as RequestDone) and PongReceived (a PONG matters only to the
        PING it answers, PingDone) ask nothing of this driver."""
        return None
