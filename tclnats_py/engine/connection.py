"""The sans-IO NATS client engine.

One :class:`Engine` is one client connection over its whole life: the server
pool, the handshake (INFO -> [TLS] -> CONNECT + PING -> PONG), subscriptions,
requests, keep-alive pings and reconnection, with the behaviour nats-tcl
documents (CoreAPI.md, "Connection Status and the Reconnection Process" and
"Requests Error Handling").  It owns no socket, no clock and no thread.

A driver talks to it in three directions:

* it calls the API methods (``connect``, ``publish``, ``subscribe``, ...) and
  reports I/O: ``socket_connected``, ``socket_failed``, ``receive_data``,
  ``connection_lost``, ``tls_done``, ``tls_failed``, ``timer_fired``;
* it takes the bytes to write with :meth:`data_to_send` (``want_write`` says
  whether there are any);
* it drains :meth:`take` and carries out each *effect*, in order.  The
  effects are the small types of :mod:`tclnats_py.engine.effects`:

  ``Open(server)``                open a TCP connection to server.host/port (a
                                  WebSocket server through ``options.proxy``:
                                  Engine.open_address says where to)
  ``StartTls(server)``            upgrade the socket to TLS (then tls_done/failed)
  ``Close()``                     write what data_to_send() returns, then close
  ``StartTimer(key, ms)``         call timer_fired(key) after ms (re-arm if set)
  ``CancelTimer(key)``            forget that timer
  ``StatusChanged(status)``       the connection status changed
  ``ErrorChanged(err_or_None)``   last_error changed (an async error, or cleared)
  ``InfoReceived(dict)``          INFO from the server (handshake or update)
  ``Log(level, text)``            a log line (debug/info/warn/error)
  ``Deliver(sub, msg)``           deliver msg to a user subscription
  ``DeliverMany(sub, msgs)``      the same for a list of messages, in order: with
                                  ``deliver_batches`` set, every delivery comes so
                                  (never a ``Deliver``), consecutive ones to one
                                  subscription in one ``DeliverMany``
  ``SubGone(sid)``                a subscription ended (max_msgs reached)
  ``SubsCleared()``               every subscription is gone (connection closed)
  ``RequestReply(req, msg)``      one reply of a gathering (max_msgs) request
  ``RequestDone(req, outcome)``   a request finished: "msg" (req.msg), "timeout",
                                  "no_responders", "lost" or "closed"
  ``PingDone(ping, ok)``          a ping finished: True, or False on timeout,
                                  None when the connection closed first
  ``Flush()``                     bytes are waiting: schedule a write
  ``PongReceived()``              a PONG arrived (any PONG; for tracing)

Effects are collected, not called back, so the engine never re-enters the
driver; a driver may call the engine while handling an effect and simply
drains :meth:`take` again.  ``driver.py`` writes this contract as code
(``EngineIO``, ``EffectHandlers``, ``effect_table``).

The Engine is built in parts, one module each, in the manner of h11:

* ``state.py``     the phases and events of the connection as ONE table;
                   the Engine asks it at every event (:meth:`Engine._step`)
* ``outbound.py``  ``Outbound``: the effects list and the outbound buffer
                   (publish, data_to_send, the write bounds)
* ``registry.py``  ``Registry(Outbound)``: subscriptions, requests, the
                   request inbox, pings, and the delivery of messages
* ``records.py``   Msg, Subscription, Request, Ping
* ``handshake.py`` CONNECT's fields, INFO's checks, the -ERR table
* this file        ``Engine(Registry)``: the server pool, the handshake,
                   keep-alive, reconnection, and the reading of frames

The parts are base classes of one object rather than objects it holds, so
the hot paths (publish, delivery) read plain attributes as before.
"""

from __future__ import annotations

import random

from tclnats_py.engine import protocol as P
from tclnats_py.engine import state as S
from tclnats_py.engine.effects import CLOSE, PONG_RECEIVED, SUBS_CLEARED, CancelTimer, Deliver, DeliverMany, \
    InfoReceived, Open, StartTimer, StartTls
from tclnats_py.engine.handshake import AUTH_ERRORS, auth_params, checked_info, connect_params, handshake_info, \
    server_error
from tclnats_py.engine.options import Options
from tclnats_py.engine.outbound import HARD_CAP_FACTOR
from tclnats_py.engine.pool import WS_SCHEMES, NoServers, ServerPool, parse_url
from tclnats_py.engine.records import Msg, Ping, Request, Subscription
from tclnats_py.engine.registry import MAX_SUB_MSGS, Registry
from tclnats_py.engine.state import CLOSED, CONNECTED, CONNECTING, IGNORE, RECONNECTING, SOCKET_PHASES
from tclnats_py.errors import NatsError, make_error

TYPE_CHECKING = False  # typing costs ~10 ms of every start: type names for the checker only
if TYPE_CHECKING:
    from typing import Callable

# what other modules import from here (the parts' names, kept in one place)
__all__ = ["Engine", "Msg", "Subscription", "Request", "Ping", "connect_params", "auth_params", "server_error",
           "CLOSED", "CONNECTING", "CONNECTED", "RECONNECTING", "MAX_SUB_MSGS", "HARD_CAP_FACTOR", "AUTH_ERRORS"]

_move = S.move
_MSG = P.MSG
_frame_pub = P.frame_pub
# request_pub(prefix, rid, subject, payload): (f"{prefix}.{rid}", its PUB frame); None when not compiled
_request_pub = P.compiled("request_pub")
# the fields of a received message (Msg.__init__'s arguments) and of a request
# (Request.__init__'s values, all of its slots: a direct request's record is
# made with them by P.RecordMaker, without the Python __init__)
_MSG_FIELDS = ("subject", "data", "reply", "headers", "sid")
_new_request = None if P.RecordMaker is None else P.RecordMaker(
    Request, ("id", "subject", "reply", "timeout", "max_msgs", "sub", "msg", "msgs", "handler", "done", "raw"))
# the header block a raw direct request's reply stays its parts with: no status
_PLAIN_BLOCK = b"NATS/1.0\r\n"


class _Construct:
    """A class behind a RecordMaker's interface (``maker(*args)``, ``maker.cls``):
    what makes messages of a class the compiled maker may not make."""

    __slots__ = ("cls",)

    def __init__(self, cls: type):
        self.cls = cls

    def __call__(self, *args):
        return self.cls(*args)
_tuple_new = tuple.__new__


class Engine(Registry):
    """See the module docstring for the driver contract."""

    def __init__(self, options: Options | None = None, *, clock=None, lang="python",
                 version="0.1.0", rng=None):
        super().__init__(options or Options())
        self._clock = clock or (lambda: 0)
        self.lang = lang
        self.version = version
        self._rng = rng or random.Random()
        self.pool = ServerPool(self._rng)
        # a driver-supplied function server_dict -> ms, for -custom_reconnect_delay
        self.reconnect_delay: Callable[[dict], int] | None = None
        # a driver-supplied function nonce -> CONNECT's auth fields (jwt, sig),
        # for nats-py's user_jwt_cb/signature_cb; it wins over the options
        self.auth_cb: Callable[[str | None], dict] | None = None
        # credentials in CONNECT even when the server does not ask, and the
        # token beside a JWT or NKey signature (auth_params)
        self.send_auth_always = False
        # a face-supplied function that returns the CONNECT line to send
        # (nats-py's Client._connect_command, which programs may wrap): it
        # builds the line from connect_fields(); called once per handshake
        self.connect_line: Callable[[], bytes] | None = None
        # (servers, server_info) -> (server or None, wait ms): see _chosen_server
        self.choose_server: Callable[[list, dict], tuple] | None = None
        # TLS before the server's INFO (nats-py/nats.go tls_handshake_first;
        # the server's tls { handshake_first: true })
        self.tls_first = False
        # nats-py's first connect: a server that reads CONNECT and closes the
        # connection (EOF, no error) before its PONG has accepted it; the
        # connection counts as made, then lost (CONNECTED, then RECONNECTING),
        # instead of as a failed attempt
        self.handshake_eof_connects = False
        # nats.go's RetryOnFailedConnect (what nats-py's connect does with
        # allow_reconnect): the first connect's failures do not close after
        # one round of the pool; each server is retried, reconnect_time_wait
        # apart, up to max_reconnect_attempts times, as when reconnecting
        self.retry_on_failed_connect = False
        self._credentials = None         # set_credentials(): what the driver read
        self._parser = P.Parser()
        self._phase = S.IDLE             # changed by _step only
        self._socket_open = False        # _phase in SOCKET_PHASES (read on the hot path)
        self._tls_done = False
        self._bad_urls: set = set()      # connect_urls entries already reported as invalid
        self._msg_make = None            # what makes msg_class instances for direct_reply

    # ------------------------------------------------------------------ the phase table
    def _step(self, event: str) -> bool:
        """Look ``event`` up in the phase table (``state.py``) for the
        current phase: move to the phase it gives and return True, or return
        False where the table ignores it; PhaseError where it has no entry."""
        nxt = _move(self._phase, event)
        if nxt is IGNORE:
            return False
        self._phase = nxt  # type: ignore[assignment]
        self._socket_open = nxt in SOCKET_PHASES
        return True

    # ------------------------------------------------------------------ plumbing
    def _now(self) -> int:
        return int(self._clock())

    def host_port(self) -> str:
        """``host:port`` of the current server ("?" without one)."""
        s = self.pool.current
        return f"{s.host}:{s.port}" if s else "?"

    # ------------------------------------------------------------------ config
    def configure_servers(self, urls) -> None:
        if self.status != CLOSED:
            raise make_error("ErrInvalidArg", "Cannot configure servers when already connected")
        self.pool.set_servers(urls, self.options.randomize)
        self.options.servers = tuple(urls)

    def replace_servers(self, urls) -> None:
        """Replace the pool of a connection that is up or reconnecting
        (nats-py's set_server_pool): the next (re)connection uses it; a
        server kept keeps its attempt counters; the current one stays current
        when it is in the new list.  All or nothing, as configure_servers."""
        if self.status == CLOSED:
            raise make_error("ErrConnectionClosed", "Connection closed")
        old = {(s.host, s.port): s for s in self.pool.servers}
        cur = self.pool.current
        self.pool.set_servers(urls, self.options.randomize)
        servers = self.pool.servers
        for s in servers:
            o = old.get((s.host, s.port))
            if o is not None:
                s.reconnects, s.last_attempt = o.reconnects, o.last_attempt
        if cur is not None:
            keep = [s for s in servers if (s.host, s.port) == (cur.host, cur.port)]
            if keep:  # the current server is the pool's last
                servers.remove(keep[0])
                servers.append(keep[0])
        self.options.servers = tuple(urls)

    def set_credentials(self, value) -> None:
        """The driver's reading of the ``creds``/``nkey_seed`` files, given
        before each socket it opens: what :func:`tclnats_py.credentials.read_credentials`
        returns (``(jwt_or_None, seed)``, None, or the NatsError of a file that
        could not be read, reported when the server asks for credentials)."""
        self._credentials = value

    # ------------------------------------------------------------------ connect
    def connect(self) -> None:
        if self.status != CLOSED:
            return
        if not self.pool.servers:
            raise make_error("ErrNoServers", "Server pool is empty")
        self._clear_error()
        self.pool.reset_counters()
        self._set_status(CONNECTING)
        self._connect_next()

    def force_reconnect(self) -> None:
        """Leave the current server and reconnect to the next one of the
        pool, as after a lost connection but without an error (nats.go's
        ForceReconnect, nats-py's force_reconnect); nothing unless connected."""
        if self.status != CONNECTED:
            return
        self._log("info", f"Reconnecting: leaving {self.host_port()} on request")
        self._drop_socket()
        self._set_status(RECONNECTING)
        self.stats["reconnects"] += 1
        self._orphan_pings_now()
        self._connect_next()

    def _delay_for(self, server) -> int:
        if self.reconnect_delay is not None:
            return int(self.reconnect_delay(server.as_dict()))
        return self.options.reconnect_time_wait

    def _connect_next(self) -> None:
        if self.choose_server is not None and self.status == RECONNECTING and self._chosen_server():
            return
        try:
            first_round = self.status == CONNECTING and not self.retry_on_failed_connect
            server, wait = self.pool.next_server(first_round, self.options.max_reconnect_attempts,
                                                 self._delay_for, self._now())
        except NoServers as e:
            self._closed(str(e))
            return
        except NatsError:
            raise
        except Exception as e:  # a user's -custom_reconnect_delay failed
            self._log("error", f"custom_reconnect_delay failed: {e}")
            server, wait = self.pool.current, self.options.reconnect_time_wait
        if wait > 0:
            o = self.options
            jitter = o.reconnect_jitter_tls if (o.secure or server.scheme in ("tls", "wss")) else o.reconnect_jitter
            if jitter > 0:
                wait += self._rng.randint(0, jitter)
            self._step(S.BACKOFF)
            self._log("debug", f"Waiting for {wait} ms before connecting to the next server")
            self._fx.append(StartTimer("reconnect", wait))
            return
        self._attempt(server)

    def _chosen_server(self) -> bool:
        """The user's ``choose_server(servers, server_info) -> (server or
        None, wait ms)`` picks the next server (nats.go's ReconnectToServer
        handler); False: it declined (None, a server not in the pool, or it
        failed), the pool's own order applies."""
        servers = self.pool.servers
        choose = self.choose_server
        if choose is None:
            return False
        try:
            pick, wait = choose(list(servers), dict(self.server_info))
        except Exception as e:  # the user's handler failed: the default order
            self._log("error", f"reconnect server handler failed: {e!r}")
            return False
        if pick is None or not any(pick is s for s in servers):
            return False
        servers.remove(pick)
        servers.append(pick)  # the current server is the pool's last
        if wait > 0:
            self._step(S.BACKOFF)
            self._fx.append(StartTimer("reconnect", int(wait)))
        else:
            self._attempt(pick)
        return True

    def _attempt(self, server) -> None:
        self._step(S.OPEN)
        self._parser.reset()
        self._hs_out = []
        self._tls_done = False
        self._ws = self._websocket(server) if server.scheme in WS_SCHEMES else None
        self._fx.append(StartTimer("connect", self.options.connect_timeout))
        self._log("info", f"Connecting to the server at {server.host}:{server.port}")
        self._fx.append(Open(server))

    # ------------------------------------------------------------------ WebSocket
    def _websocket(self, server):
        """The adapter of a ``ws://``/``wss://`` server's socket (websocket.py)."""
        from tclnats_py.engine.websocket import WebSocket
        o = self.options
        return WebSocket(server.host, server.port, server.path, o.ws_headers, o.ws_compression, o.proxy,
                         where=f"{server.host}:{server.port}")

    def open_address(self, server) -> tuple[str, int]:
        """Where the driver's ``Open(server)`` connects: the server, or the
        HTTP proxy a WebSocket server is reached through."""
        ws = self._ws
        if ws is not None and ws.proxy is not None and server is self.pool.current:
            return ws.proxy
        return server.host, server.port

    @property
    def websocket(self) -> bool:
        """Whether the current socket carries WebSocket frames (a driver's
        fast paths that read or frame NATS bytes themselves step aside)."""
        return self._ws is not None

    @property
    def websocket_plain(self) -> bool:
        """Whether the WebSocket is open with plain binary data frames (no
        extension, the compiled codec's): a driver may frame NATS bytes
        itself then (binary frames, each masked with a fresh random key)."""
        ws = self._ws
        return ws is not None and ws.plain

    def _ws_next(self) -> None:
        """The WebSocket's next step on a socket up (or through its proxy's
        tunnel, or over TLS): the tunnel, TLS (wss, or ``secure``), or the
        upgrade request."""
        ws = self._ws
        server = self.pool.current
        assert ws is not None and server is not None
        if ws.phase == "tunnel":
            self._step(S.HTTP_UPGRADE)
            self._log("debug", f"CONNECT {self.host_port()} through the proxy {ws._proxy_name()}")
            ws.start_tunnel()
        elif not self._tls_done and (server.scheme == "wss" or self.options.secure):
            self._step(S.START_TLS)
            self._log("debug", "Performing TLS handshake before the WebSocket upgrade...")
            self._fx.append(StartTls(server))
            return
        else:
            self._step(S.HTTP_UPGRADE)
            self._log("debug", f"Upgrading the connection to {self.host_port()} to a WebSocket")
            ws.start_upgrade()
        self._signal_flush()

    def _ws_receive(self, data):
        """The NATS bytes of what a WebSocket socket read, and the error it
        ended with (a bad frame, the server's close frame) or None."""
        ws = self._ws
        tunnel = ws.phase == "tunnel"
        try:
            data = ws.receive(data)
            bad = ws.closed
        except NatsError as e:
            data, bad = b"", e
        if ws.out:
            self._signal_flush()
        if bad is None and self._phase == S.UPGRADE:
            if tunnel and ws.tunnel_open:
                self._ws_next()
            elif ws.upgraded:
                self._step(S.EXPECT_INFO)
        return data, bad

    # ------------------------------------------------------------------ reports of the driver
    def socket_connected(self) -> None:
        if not self._step(S.SOCKET_CONNECTED):
            return
        if self._ws is not None:
            self._ws_next()
            return
        if self.tls_first:
            self._step(S.START_TLS)
            self._log("debug", "Performing TLS handshake before INFO...")
            self._fx.append(StartTls(self.pool.current))
            return
        self._step(S.EXPECT_INFO)

    def socket_failed(self, reason: str, unresolved: bool = False) -> None:
        """The TCP connection attempt failed (refused, unreachable ...):
        ErrConnectionRefused.  ``unresolved``: the driver knows the host name
        did not resolve (the asyncio face, from socket.gaierror):
        ErrHostNotResolved.  (The Tcl face cannot tell, and nats-tcl says
        ErrConnectionRefused for both.)"""
        if not self._step(S.SOCKET_FAILED):
            return
        if unresolved:
            server = self.pool.current
            host = server.host if server is not None else "?"
            self._fail("ErrHostNotResolved", f"Failed to connect to {self.host_port()}: "
                                             f"the host name {host} did not resolve ({reason})")
            return
        self._fail("ErrConnectionRefused", f"Failed to connect to {self.host_port()}: {reason}")

    def connection_lost(self, reason: str | None = None) -> None:
        """The socket broke or reached EOF."""
        if not self._step(S.LOST):
            return
        if self._phase == S.UPGRADE:
            self._fail("ErrWebSocket", f"Server {self.host_port()} closed the connection during the "
                                       f"WebSocket upgrade{' - ' + reason if reason else ''}")
            return
        if reason:
            text = f"Connection to {self.host_port()} broken - {reason}"
        else:
            text = f"Server {self.host_port()} closed the connection"
            if self.handshake_eof_connects and self._phase == S.WAIT_PONG and self.status == CONNECTING:
                self._connected()
        self._fail("ErrBrokenSocket", text)

    def write_failed(self, reason: str) -> None:
        if not self._step(S.LOST):
            return
        self._fail("ErrBrokenSocket", f"Failed to send data to {self.host_port()}: {reason}")

    def tls_done(self) -> None:
        if not self._step(S.TLS_DONE):
            return
        self._tls_done = True
        if self._ws is not None:
            self._ws_next()
            return
        if self.tls_first:
            self._step(S.EXPECT_INFO)  # the INFO comes over TLS now
            return
        self._send_connect()

    def tls_failed(self, reason: str) -> None:
        if self._step(S.TLS_FAILED):
            self._fail("ErrTLS", f"TLS handshake with server {self.host_port()} failed: {reason}")

    def timer_fired(self, key) -> None:
        if key == "connect":
            if self._step(S.CONNECT_TIMER):
                self._fail("ErrConnectionTimeout", f"Connection timeout for {self.host_port()}")
        elif key == "ping":
            if self._step(S.PING_TIMER):
                self._keepalive()
        elif key == "reconnect":
            if self._step(S.RETRY_TIMER):
                self._attempt(self.pool.current)
        else:
            self._record_timer(key)

    def _keepalive(self) -> None:
        self._fx.append(StartTimer("ping", self.options.ping_interval))
        if self._pending_pings >= self.options.max_outstanding_pings:
            self._pending_pings = 0
            self._fail("ErrStaleConnection",
                       f"The server did not respond to {self.options.max_outstanding_pings} PINGs")
            return
        self._log("debug", "Sending PING")
        self._pending_pings += 1
        self._pings.append(None)
        self._queue(P.PING_BYTES)

    # ------------------------------------------------------------------ losing the connection
    def _fail(self, code: str, text: str) -> None:
        """A fatal async error: drop the socket and move on to the next server."""
        self._async_error(code, text)
        server = self.pool.current
        if server is not None:
            if code in AUTH_ERRORS:
                if server.last_auth_error == code and not self.options.ignore_auth_error_abort:
                    # the same refusal twice in a row from this server: nothing
                    # changes by retrying (nats.go's processAuthError)
                    self._drop_socket()
                    self._closed(f"Server {self.host_port()} refused the connection twice with {code}; "
                                 "giving up (ignore_auth_error_abort keeps retrying)")
                    return
                server.last_auth_error = code
            else:
                server.last_auth_error = None
        self._drop_socket()
        if self.status == CONNECTED:
            self._set_status(RECONNECTING)
            self.stats["reconnects"] += 1
            self._orphan_pings_now()
        else:
            self.pool.current_done(False, self._now())
        self._connect_next()

    def _drop_socket(self) -> None:
        self._step(S.DROP)
        self._hs_out = []
        self._fx.append(CLOSE)
        self._parser.reset()
        self._fx.append(CancelTimer("ping"))
        self._fx.append(CancelTimer("connect"))
        self._pending_pings = 0

    def _closed(self, reason: str | None) -> None:
        """Final cleanup: no more servers, or the user disconnected."""
        if reason:
            self._log("error", reason)
        self._discard_queue(reason)
        self._fx.append(CancelTimer("reconnect"))
        self._fx.append(CancelTimer("connect"))
        self._fx.append(CancelTimer("ping"))
        self._step(S.CLOSE)
        self._fail_pings(None)
        self._end_requests("lost" if self.last_error is not None else "closed")
        self._fx.append(SUBS_CLEARED)
        self._set_status(CLOSED)

    def disconnect(self) -> None:
        """Flush what is buffered (when connected), close, and clean up."""
        if self.status == CLOSED:
            return
        self._clear_error()
        if self._socket_open:
            self._log("info", f"Closing connection to {self.host_port()}")
            self._hand_over_queue()
            if self._ws is not None:
                self._ws.close()
            self._fx.append(CLOSE)
        self._parser.reset()
        self._closed(None)

    # ------------------------------------------------------------------ input
    def receive_data(self, data, framed: bool = True) -> None:
        """Bytes read (framed=False: NATS bytes unwrap() gave), carried out frame by frame, the common ones inline
        (registry.py); a protocol error drops the connection after the frames before it; no socket: ignored."""
        if not self._socket_open:
            return
        bad = None
        if self._ws is not None and framed:  # WebSocket frames: the NATS bytes in them
            data, bad = self._ws_receive(data)
        if data:
            self.stats["in_bytes"] += len(data)
        try:
            ops = self._parser.feed(data)
        except NatsError as e:  # the frames complete before the bad bytes still count
            ops = e.details.pop("ops", ())
            bad = e
        handle = self._handle
        on_msg = self._on_msg
        subs = self.subs
        mc = self.msg_class
        fx = self._fx
        plain = 0
        batches = self.deliver_batches
        batch_sub = None          # the DeliverMany being filled: its sub, its list, and
        batch: list = []          # len(fx) after it (it must still be the last effect)
        batch_at = -1             # take: the compiled maker of runs, for a class made as Msg is
        take = (P.take_msgs if batches and mc.__init__ is Msg.__init__  # type: ignore[misc]
                and mc.__new__ is object.__new__ else None)
        i, n = 0, len(ops)
        while i < n:
            op = ops[i]
            i += 1
            if not self._socket_open:
                break
            if op[0] is not _MSG:
                handle(op)
                continue
            sub = subs.get(op[2])
            if sub is None or op[4] is not None or sub.max_msgs or sub.kind != "user":
                if sub is not None and op[4] is None and sub.kind == "mux" and not sub.max_msgs:
                    plain += 1  # a reply to a request without headers: _on_msg's steps
                    sub.received += 1
                    self._on_mux_reply(mc(op[1], op[5], op[3], None, op[2]))
                else:
                    on_msg(op)
                continue
            if take is not None:  # this message and the plain ones for its sid right after it
                run: list = []
                j = take(ops, i - 1, op[2], mc, run)
                if j is not None:
                    last = fx[-1] if fx else None
                    if last.__class__ is DeliverMany and last[0] is sub:
                        last[1].extend(run)  # one DeliverMany for consecutive deliveries
                    else:
                        fx.append(_tuple_new(DeliverMany, (sub, run)))
                    k = j - i + 1
                    plain += k
                    sub.received += k
                    i = j
                    continue
                take = None  # not a class it can make: one at a time
            plain += 1
            sub.received += 1
            if not batches:
                fx.append(_tuple_new(Deliver, (sub, mc(op[1], op[5], op[3], None, op[2]))))
            elif sub is batch_sub and len(fx) == batch_at:
                batch.append(mc(op[1], op[5], op[3], None, op[2]))
            else:
                last = fx[-1] if fx else None
                if last.__class__ is DeliverMany and last[0] is sub:
                    batch = last[1]
                    batch.append(mc(op[1], op[5], op[3], None, op[2]))
                else:
                    batch = [mc(op[1], op[5], op[3], None, op[2])]
                    fx.append(_tuple_new(DeliverMany, (sub, batch)))
                batch_sub = sub
                batch_at = len(fx)
        if plain:
            self.stats["in_msgs"] += plain
        if bad is not None and self._socket_open:
            self._fail(bad.code, str(bad))

    # ------------------------------------------------------------------ a round trip the driver reads itself
    def direct_request(self, subject: str, payload: bytes, handler=None,
                       raw: bool = False) -> tuple[Request, bytes, int] | None:
        """A new-style request whose PUB the driver writes at once and whose
        reply it may read itself (the blocking face's round trip):
        ``(req, frame, sid)``, the Request registered as :meth:`request`
        registers it (no timer: the driver bounds the wait), its PUB frame,
        which the driver writes now, and the sid of the request inbox.  None
        when it cannot be one (then :meth:`request`): not connected, over a
        WebSocket, bytes queued to write (they go first), a frame begun in
        the parser, no request inbox yet, ``payload`` past max_payload.
        ``subject`` is the caller's to check (``request(check_subject=False)``).
        ``raw``: a reply with a header block of no status ("NATS/1.0" alone on
        its first line) is kept as :meth:`direct_reply`'s ``parts`` in
        ``req.msg``, no Msg made of it (the caller reads the block itself).

        What the driver reads next goes to :meth:`receive_data`, or, when it
        is exactly the reply (one whole MSG/HMSG frame on that sid to
        ``req.reply``), to :meth:`direct_reply`."""
        mux = self._mux
        if (mux is None or self._out or self._hs_out or self.status != CONNECTED or self._ws is not None
                or self._parser._buf):  # (Parser.buffered without its call)
            return None
        mp = self.server_info.get("max_payload")
        if mp is not None and len(payload) > mp:
            return None
        rid = next(self._rid)
        if _request_pub is None or self.nuid_reply_tokens:
            reply = (f"{self._mux_prefix}.{self._nuid.next()}{rid:04x}" if self.nuid_reply_tokens
                     else f"{self._mux_prefix}.{rid}")
            frame = _frame_pub(subject, reply, payload)
        else:  # (the same reply and frame, the int not formatted in Python)
            reply, frame = _request_pub(self._mux_prefix, rid, subject, payload)
        if _new_request is None:
            req = Request(rid, subject, reply, 0, None, handler)
            req.raw = raw
        else:
            req = _new_request(rid, subject, reply, 0, None, None, None, [], handler, False, raw)
        stats = self.stats
        stats["out_msgs"] += 1
        stats["out_bytes"] += len(frame)
        self.requests[rid] = req
        return req, frame, mux.sid

    def direct_reply(self, req: Request, parts: tuple) -> str | None:
        """The reply to a :meth:`direct_request`, ``parts`` being ``(reply,
        header block or None, payload, size)`` of the one whole frame the
        driver read, ``size`` bytes: the request ends as :meth:`receive_data`
        would end it, its outcome returned instead of a RequestDone effect:
        "msg" (``req.msg``: the Msg, or ``parts`` themselves for the plain
        reply of a ``raw`` request) or "no_responders".  None: it had ended before
        (a late reply, counted and dropped) or the socket is gone."""
        if not self._socket_open:
            return None
        reply, header, payload, size = parts
        stats = self.stats
        stats["in_bytes"] += size
        stats["in_msgs"] += 1
        mux = self._mux
        if mux is None or req.done:
            return None
        mux.received += 1
        if header is not None and req.raw and header.startswith(_PLAIN_BLOCK):
            req.msg = parts
            req.done = True
            del self.requests[req.id]
            return "msg"
        headers = None if header is None else self._msg_headers(header)
        make = self._msg_make
        if make is None or make.cls is not self.msg_class:
            make = self._msg_make = self._msg_maker()
        req.msg = msg = make(req.reply, payload, reply, headers, mux.sid)
        req.done = True
        del self.requests[req.id]
        if headers is None or (isinstance(headers, dict) and not dict.__contains__(headers, "Status")):
            return "msg"  # (msg.status's lookups only for a status)
        return "no_responders" if msg.no_responders else "msg"

    def _msg_maker(self):
        """What makes a message of ``msg_class`` from Msg's arguments: the
        compiled RecordMaker for a class made as Msg is (receive_data's
        take_msgs rule), else the class called."""
        mc = self.msg_class
        if (P.RecordMaker is not None and mc.__init__ is Msg.__init__
                and mc.__new__ is object.__new__):
            try:
                return P.RecordMaker(mc, _MSG_FIELDS)
            except ValueError:  # slots of its own to fill: its constructor fills them
                return _Construct(mc)
        return _Construct(mc)

    def unwrap(self, data: bytes) -> bytes:
        """The NATS bytes of what the socket read, for a driver that scans
        them itself (the blocking driver's raw mode) and hands the engine what
        it leaves with ``receive_data(rest, framed=False)``: over a WebSocket
        the frames' content (control frames answered; a bad frame or the
        server's close fails the connection, as in receive_data), else ``data``."""
        if self._ws is None or not self._socket_open:
            return data
        data, bad = self._ws_receive(data)
        if bad is not None:
            self._fail(bad.code, str(bad))
        return data

    def ws_hand_over(self) -> tuple | None:
        """For a driver's C reader that unframes a WebSocket's data frames
        itself from now on (the Tcl face's): websocket.py ``hand_over``'s
        state; None when there is none to take (no WebSocket open, or
        wsproto reads the frames).  What the C reader gives the engine then
        is NATS bytes (``receive_data(data, framed=False)``) and the control
        frames it stops at (``receive_data(frame)``)."""
        ws = self._ws
        return ws.hand_over() if ws is not None and self._socket_open else None

    def ws_refused(self, why: str) -> None:
        """A driver's C reader found a bad WebSocket frame (``why``: what the
        codec said; empty: a frame past the largest taken): the connection
        fails with ErrWebSocket, as a bad frame given to receive_data does."""
        ws = self._ws
        if ws is not None and self._socket_open:
            err = ws.refused(why)
            self._fail(err.code, str(err))

    def _handle(self, op) -> None:
        """A frame other than MSG/HMSG (those are receive_data's and _on_msg's)."""
        kind = op[0]
        if kind is P.PING:
            if self.status == CONNECTED:
                self._queue(P.PONG_BYTES)
            else:
                self._send_now(P.PONG_BYTES)
        elif kind is P.PONG:
            self._on_pong()
        elif kind is P.INFO:
            self._on_info(op[1])
        elif kind is P.ERR:
            self._on_err(op[1])
        elif kind is not P.OK:
            raise ValueError(f"the parser gave a frame the engine does not know: {op!r}")

    def _on_err(self, text: str) -> None:
        err, fatal = server_error(text)
        if fatal:
            self._fail(err.code, err.message)
        else:
            self._async_error(err.code, err.message)

    def _on_pong(self) -> None:
        self._fx.append(PONG_RECEIVED)
        phase = self._phase
        self._step(S.PONG)
        if phase == S.WAIT_PONG:
            self._connected()
        else:
            self._pong_answers()

    def _on_info(self, info: dict) -> None:
        info = checked_info(info)
        if not self._step(S.INFO):
            return
        if self._phase != S.WAIT_INFO:  # an update (WAIT_PONG, READY)
            self.server_info.update(info)
            self._fx.append(InfoReceived(dict(self.server_info)))
            self._add_connect_urls(info)
            if info.get("ldm"):
                self._log("warn", f"Server {self.host_port()} entered lame duck mode")
            return
        info = handshake_info(info)
        self.server_info = info
        # the handshake's connect_urls join the pool too (as in nats.go and
        # nats-py), so the INFO that follows CONNECT brings nothing new
        self._add_connect_urls(info)
        self._fx.append(InfoReceived(dict(info)))
        if self._tls_done or self._ws is not None:  # tls_first or a WebSocket: TLS came before
            self._send_connect()
            return
        server = self.pool.current
        want_tls = self.options.secure or (server is not None and server.scheme == "tls")
        if info.get("tls_required") or (want_tls and info.get("tls_available")):
            self._step(S.START_TLS)
            self._log("debug", "Performing TLS handshake...")
            self._fx.append(StartTls(server))
            return
        if want_tls:
            self._fail("ErrSecureConnWanted", f"Server {self.host_port()} does not provide TLS")
            return
        self._send_connect()

    def _add_connect_urls(self, info: dict) -> None:
        """Discovered servers: ``connect_urls``; a WebSocket client's are the
        cluster's websocket listeners (the server sends them there, never as
        ``ws_connect_urls``), host:port in the scheme of the current server."""
        scheme = None
        if self._ws is not None:
            scheme = self.pool.current.scheme if self.pool.current is not None else "ws"
        for url in info.get("connect_urls") or ():
            if isinstance(url, str) and self.pool.add_discovered(url, scheme) is not None:
                self._log("debug", f"Added {url} to the server pool")
            elif not isinstance(url, str) or not self._well_formed(url):
                url = url if isinstance(url, str) else repr(url)
                if url in self._bad_urls:
                    continue
                # a malformed entry: said once, then ignored
                self._bad_urls.add(url)
                self._log("warn", f"Ignoring invalid URL {url!r} in connect_urls of {self.host_port()}")

    @staticmethod
    def _well_formed(url: str) -> bool:
        try:
            parse_url(url)
        except NatsError:
            return False
        return True

    # ------------------------------------------------------------------ the handshake
    def _send_connect(self) -> None:
        try:
            line = self.connect_line() if self.connect_line is not None else P.encode_connect(self.connect_fields())
        except NatsError as e:
            self._fail(e.code, str(e))
            return
        self._hs_out.append(line)
        self._step(S.SEND_CONNECT)
        self._send_now(P.PING_BYTES)

    def connect_fields(self) -> dict:
        """The fields of the CONNECT that answers the server's last INFO:
        the options, this client's lang and version, the credentials (the
        nonce signed); a NatsError when the credentials cannot be given."""
        auth = self._auth_params(self.server_info)
        return connect_params(self.options, self.server_info, auth, lang=self.lang, version=self.version,
                              tls_done=self._tls_done)

    def _auth_params(self, info: dict):
        if self.auth_cb is not None:
            try:
                p = self.auth_cb(info.get("nonce"))
            except Exception as e:  # the user's user_jwt_cb/signature_cb failed
                raise make_error("ErrAuthorization", f"user_jwt_cb/signature_cb failed: {e!r}") from None
        else:
            p = auth_params(self.options, info, self.pool, self._credentials, self.send_auth_always)
        if self.send_auth_always and p and "sig" in p and self.options.token and "auth_token" not in p:
            # nats-py and nats.go send the token beside a signed nonce (an
            # auth callout service may want both)
            p = dict(p, auth_token=self.options.token)
        return p

    def _connected(self) -> None:
        self._step(S.CONNECTED_STEP)
        self._fx.append(CancelTimer("connect"))
        self.pool.current_done(True, self._now())
        if self.pool.current is not None:
            self.pool.current.last_auth_error = None
        self._log("info", f"Connected to the server at {self.host_port()}")
        self._clear_error()
        self._pings_on_connected()
        # restore subscriptions ahead of anything buffered meanwhile
        self._restore_first(self._restore_commands())
        self._set_status(CONNECTED)
        if self._out:
            self._signal_flush()
        self._fx.append(StartTimer("ping", self.options.ping_interval))
