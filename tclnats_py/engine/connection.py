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

  ``Open(server)``                open a TCP connection to server.host/port
  ``StartTls(server)``            upgrade the socket to TLS (then tls_done/failed)
  ``Close()``                     write what data_to_send() returns, then close
  ``StartTimer(key, ms)``         call timer_fired(key) after ms (re-arm if set)
  ``CancelTimer(key)``            forget that timer
  ``StatusChanged(status)``       the connection status changed
  ``ErrorChanged(err_or_None)``   last_error changed (an async error, or cleared)
  ``InfoReceived(dict)``          INFO from the server (handshake or update)
  ``Log(level, text)``            a log line (debug/info/warn/error)
  ``Deliver(sub, msg)``           deliver msg to a user subscription
  ``DeliverMany(sub, msgs)``      the same for a list of messages, in order (only
                                  for a driver that sets ``deliver_batches``)
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
drains :meth:`take` again.
"""

from __future__ import annotations

import collections
import itertools
import random
import re

from tclnats_py.engine import protocol as P
from tclnats_py.engine.effects import (CLOSE, FLUSH, PONG_RECEIVED, SUBS_CLEARED, CancelTimer, Deliver, DeliverMany,
                       ErrorChanged, InfoReceived, Log, Open, PingDone, RequestDone, RequestReply,
                       StartTimer, StartTls, StatusChanged, SubGone)
from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.headers import encode_headers, parse_headers
from tclnats_py.engine.nuid import Nuid
from tclnats_py.engine.options import Options
from tclnats_py.engine.pool import NoServers, ServerPool, parse_url
from tclnats_py.engine.subjects import valid_queue, valid_subject, valid_wildcard_subject

TYPE_CHECKING = False  # typing costs ~10 ms of every start: type names for the checker only
if TYPE_CHECKING:
    from typing import Callable

__all__ = ["Engine", "Msg", "Subscription", "Request", "Ping", "connect_params", "auth_params", "server_error",
           "CLOSED", "CONNECTING", "CONNECTED", "RECONNECTING"]

CLOSED, CONNECTING, CONNECTED, RECONNECTING = "closed", "connecting", "connected", "reconnecting"

_MSG = P.MSG
_tuple_new = tuple.__new__

# the largest max_msgs of a SUB/UNSUB: the server reads at most 9 digits there
# (more and the UNSUB is dropped, the subscription never ends)
MAX_SUB_MSGS = 999_999_999

# the auth errors after which a server that gives the same one twice in a
# row is given up (nats.go's processAuthError), unless ignore_auth_error_abort
AUTH_ERRORS = frozenset(("ErrAuthorization", "ErrAuthExpired", "ErrAuthRevoked", "ErrAccountAuthExpired"))

# a publisher that cannot wait for the socket fails past this many times write_buf_size
HARD_CAP_FACTOR = 8

# handshake phases below the status
_IDLE, _OPENING, _WAIT_INFO, _TLS, _WAIT_PONG, _READY, _WAIT_RETRY = range(7)


def _hget(h, key):
    """The stored value of header ``key``: the list of a received message's
    headers, also when they are the asyncio face's Headers (whose ``get``
    gives the first value)."""
    return dict.get(h, key) if isinstance(h, dict) else h.get(key)


class Msg:
    """A received (or to-be-published) message."""

    __slots__ = ("subject", "reply", "data", "headers", "sid", "__weakref__")

    def __init__(self, subject: str, data: bytes = b"", reply: str | None = None,
                 headers: dict | None = None, sid: int | None = None):
        self.subject = subject
        self.data = data
        self.reply = reply
        self.headers = headers
        self.sid = sid

    @property
    def status(self) -> int:
        h = self.headers
        if not h:
            return 0
        s = _hget(h, "Status")  # the stored list, also of a Headers
        if not s:
            return 0
        try:
            return int(s[0])
        except (ValueError, TypeError):
            return 0

    @property
    def no_responders(self) -> bool:
        return self.status == 503

    @property
    def description(self) -> str:
        h = self.headers
        d = _hget(h, "Description") if h else None
        return d[0] if d else ""

    def header(self, key: str, default=None):
        h = self.headers
        v = _hget(h, key) if h else None
        if isinstance(v, (str, bytes)):
            return v
        return v[0] if v else default

    def __repr__(self) -> str:
        return f"Msg(subject={self.subject!r}, reply={self.reply!r}, data={self.data[:40]!r}, headers={self.headers!r})"


class Subscription:
    __slots__ = ("sid", "subject", "queue", "max_msgs", "received", "handler", "kind",
                 "request", "closed", "draining", "__weakref__")

    def __init__(self, sid, subject, queue, max_msgs, handler, kind="user", request=None):
        self.sid = sid
        self.subject = subject
        self.queue = queue
        self.max_msgs = max_msgs
        self.received = 0
        self.handler = handler  # opaque to the engine: the driver's callback
        self.kind = kind        # "user", "mux" (shared request inbox) or "gather"
        self.request = request
        self.closed = False
        self.draining = False   # UNSUB sent, in-flight messages still delivered (drain)

    def __repr__(self):
        return f"Subscription(sid={self.sid}, subject={self.subject!r}, kind={self.kind})"


class Request:
    __slots__ = ("id", "subject", "reply", "timeout", "max_msgs", "sub", "msg", "msgs",
                 "handler", "done", "__weakref__")

    def __init__(self, rid, subject, reply, timeout, max_msgs, handler):
        self.id = rid
        self.subject = subject
        self.reply = reply
        self.timeout = timeout
        self.max_msgs = max_msgs  # None: new-style, first reply only
        self.sub = None
        self.msg = None
        self.msgs = []
        self.handler = handler
        self.done = False

    def __repr__(self):
        return f"Request(id={self.id}, subject={self.subject!r})"


class Ping:
    __slots__ = ("id", "handler", "done", "__weakref__")

    def __init__(self, pid, handler):
        self.id = pid
        self.handler = handler
        self.done = False


_ERR_MAP = (
    # -ERR text (lowercased prefix/glob) -> (code, fatal); CoreAPI.md async error table
    ("stale connection", "ErrStaleConnection", True),
    ("authorization violation", "ErrAuthorization", True),
    ("user authentication expired", "ErrAuthExpired", True),
    ("user authentication revoked", "ErrAuthRevoked", True),
    ("account authentication expired", "ErrAccountAuthExpired", True),
    ("permissions violation", "ErrPermissions", False),
)
_INVALID_SUBJECT = re.compile(r"^invalid .*subject")


def server_error(text: str) -> tuple[NatsError, bool]:
    """The error for the text of a ``-ERR`` (CoreAPI.md's table of
    asynchronous errors) and whether it ends the connection: ErrServer
    (fatal) for a text the table does not know."""
    low = text.lower().strip(" '")
    for prefix, code, fatal in _ERR_MAP:
        if low.startswith(prefix):
            return make_error(code, low), fatal
    if _INVALID_SUBJECT.match(low):
        return make_error("ErrBadSubject", low), False
    return make_error("ErrServer", low), True


# INFO fields the engine computes with, and the JSON types they must have
_INFO_TYPES = (("max_payload", int), ("connect_urls", list), ("nonce", str))


def connect_params(options: Options, info: dict, auth: dict | None = None, *, lang: str = "python",
                   version: str = "0.1.0", tls_done: bool = False) -> dict:
    """The fields of the CONNECT answering a server's INFO (encode with
    ``_protocol.encode_connect``): the options' flags and name, this client's
    lang and version, headers and no_responders when the server has headers,
    then ``auth`` (user/pass, auth_token, jwt/sig or nkey/sig) when given.
    The engine sends this; so does the Spark reader's blocking connection."""
    o = options
    params = {
        "verbose": bool(o.verbose), "pedantic": bool(o.pedantic),
        "tls_required": tls_done, "name": o.name or "",
        "lang": lang, "version": version, "protocol": 1, "echo": bool(o.echo),
    }
    if info.get("headers"):
        params["headers"] = True
        params["no_responders"] = True
    if auth:
        params.update(auth)
    return params


def auth_params(options: Options, info: dict, pool: ServerPool, credentials=None, always: bool = False):
    """The credential fields of the CONNECT answering ``info``, or None:
    the ``creds``/``nkey_seed`` files' JWT or public NKey, signing the
    server's nonce (``credentials``: what :func:`tclnats_py.credentials.read_credentials`
    gave, a NatsError raised here), else, when the server asks for it, the
    current server's URL credentials or the options' user/password/token.
    ``always``: the user/password/token go even when the server does not
    ask (nats-py and nats.go send them; nats-tcl only when asked).
    The engine and the Spark reader's blocking connection both send this."""
    o = options
    nonce = info.get("nonce")
    if o.creds or o.nkey_seed:
        c = credentials
        if isinstance(c, NatsError):
            raise c
        if c is None:
            raise make_error("ErrAuthorization", "The credentials of the creds/nkey_seed option were not "
                             "read (a driver calls set_credentials before it opens a socket)")
        from tclnats_py.engine.auth import nkey_public, sign_nonce
        jwt, seed = c
        p = {"jwt": jwt} if jwt else {"nkey": nkey_public(seed)}
        if nonce:
            p["sig"] = sign_nonce(seed, nonce)
        return p
    if not info.get("auth_required"):
        if not always:
            return None
        return pool.credentials(o.user, o.password, o.token)
    creds = pool.credentials(o.user, o.password, o.token)
    if creds is None:
        s = pool.current
        where = f"{s.host}:{s.port}" if s else "?"
        raise make_error("ErrAuthorization", f"No credentials known for NATS server at {where}")
    return creds


class Engine:
    """See the module docstring for the driver contract."""

    def __init__(self, options: Options | None = None, *, clock=None, lang="python",
                 version="0.1.0", rng=None):
        self.options = options or Options()
        self._clock = clock or (lambda: 0)
        self.lang = lang
        self.version = version
        self.status = CLOSED
        self.last_error: NatsError | None = None
        self.server_info: dict = {}
        self._rng = rng or random.Random()
        self.pool = ServerPool(self._rng)
        self.subs: dict[int, Subscription] = {}
        self.requests: dict[int, Request] = {}
        # a driver-supplied function server_dict -> ms, for -custom_reconnect_delay
        self.reconnect_delay = None
        # a driver-supplied function nonce -> CONNECT's auth fields (jwt, sig),
        # for nats-py's user_jwt_cb/signature_cb; it wins over the options
        self.auth_cb: Callable[[str | None], dict] | None = None
        # credentials in CONNECT even when the server does not ask (auth_params)
        self.send_auth_always = False
        # (servers, server_info) -> (server or None, wait ms): see _chosen_server
        self.choose_server: Callable[[list, dict], tuple] | None = None
        # the first token(s) of new_inbox() subjects (nats-py's inbox_prefix)
        self.inbox_prefix = "_INBOX"
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
        # nats-py's reply subjects of new-style requests: <prefix>.<22-character
        # NUID><4+ hex digits> (here the hex digits are the request id) instead
        # of nats-tcl's <prefix>.<request id>
        self.nuid_reply_tokens = False
        # a driver's dict subclass for received headers (the asyncio face's
        # Headers); it gets the parsed dict of lists
        self.headers_class: type | None = None
        # the class of delivered messages: a driver may use a subclass of Msg
        # (same constructor) to add methods such as respond()
        self.msg_class: type = Msg
        # True: the plain messages of one read for one subscription come as
        # one DeliverMany(sub, msgs) effect instead of a Deliver each (the
        # asyncio face's choice; the order of all effects is the same)
        self.deliver_batches = False
        self._fx: list = []
        self._credentials = None         # set_credentials(): what the driver read
        self._parser = P.Parser()
        self._phase = _IDLE
        self._out: collections.deque = collections.deque()  # user traffic; written only when connected
        self._out_size = 0
        self._hs_out: list[bytes] = []   # handshake traffic, bypasses _out
        self._sid = itertools.count(1)
        self._rid = itertools.count(1)
        self._pid = itertools.count(1)
        self._pings: list = []           # outstanding PINGs: Ping objects or None (keep-alive)
        self._orphan_pings: list = []    # user pings whose connection broke
        self._pending_pings = 0
        self._mux: Subscription | None = None
        self._mux_prefix = ""
        self._nuid = Nuid()
        self._socket_open = False
        self._tls_done = False
        self._flush_signalled = False
        self._bad_urls: set = set()      # connect_urls entries already reported as invalid
        self.stats = {"in_msgs": 0, "out_msgs": 0, "in_bytes": 0, "out_bytes": 0, "reconnects": 0}

    # ------------------------------------------------------------------ plumbing
    def take(self, writing: bool = False) -> list:
        """Return and clear the effects produced so far.  ``writing``: the
        caller writes ``data_to_send()`` itself right after carrying them out
        (a synchronous request), so no ``Flush`` is handed over for it."""
        fx = self._fx
        if fx:
            self._fx = []
            if writing:
                fx = [f for f in fx if f is not FLUSH]
        return fx

    def _now(self) -> int:
        return int(self._clock())

    def _log(self, level: str, text: str) -> None:
        self._fx.append(Log(level, text))

    def _set_status(self, status: str) -> None:
        if status != self.status:
            self.status = status
            self._fx.append(StatusChanged(status))

    def _async_error(self, code: str, text: str) -> None:
        err = make_error(code, text)
        self.last_error = err
        self._fx.append(Log("warn", text))
        self._fx.append(ErrorChanged(err))

    def _clear_error(self) -> None:
        if self.last_error is not None:
            self.last_error = None
            self._fx.append(ErrorChanged(None))

    def _signal_flush(self) -> None:
        if not self._flush_signalled:
            self._flush_signalled = True
            self._fx.append(FLUSH)

    def _queue(self, data: bytes) -> None:
        """Queue user traffic; it reaches the wire only while connected."""
        self._out.append(data)
        self._out_size += len(data)
        if self.status == CONNECTED:
            self._signal_flush()

    @property
    def has_effects(self) -> bool:
        """Whether :meth:`take` has effects to hand over."""
        return bool(self._fx)

    @property
    def request_inbox(self):
        """The subscription that gathers replies of requests (None until the
        first request), and its subject prefix: ``(sub, prefix)``."""
        return self._mux, self._mux_prefix

    def pending_commands(self) -> list:
        """The protocol commands waiting to be written, oldest first (a copy)."""
        return list(self._out)

    def host_port(self) -> str:
        """``host:port`` of the current server ("?" without one)."""
        s = self.pool.current
        return f"{s.host}:{s.port}" if s else "?"

    @property
    def awaiting_reply(self) -> bool:
        """A request or a PING of ours is waiting for the server's answer
        (a driver may poll its socket without sleeping meanwhile)."""
        return bool(self.requests or self._pings)

    @property
    def want_write(self) -> bool:
        return bool(self._hs_out) or (self.status == CONNECTED and bool(self._out))

    @property
    def pending_chunks(self) -> int:
        """How many protocol commands wait to be written (nats-tcl's outBuffer)."""
        return len(self._out)

    @property
    def pending_bytes(self) -> int:
        return self._out_size

    def data_to_send(self, limit: int | None = None) -> bytes:
        """What may be written now; the engine forgets it (at-most-once).

        ``limit``: about that many bytes at most (whole commands, at least
        one), so that a driver writing as fast as its socket takes them never
        holds a second copy of a big buffer (the reconnect buffer, say);
        ``want_write`` tells whether more is left.  None: everything."""
        self._flush_signalled = False
        parts = []
        if self._hs_out:
            parts.extend(self._hs_out)
            self._hs_out = []
        out = self._out
        if self.status == CONNECTED and out:
            if limit is None or self._out_size <= limit:
                parts.extend(out)
                out.clear()
                self._out_size = 0
            else:
                size = 0
                pop = out.popleft
                append = parts.append
                while out and size < limit:
                    c = pop()
                    size += len(c)
                    append(c)
                self._out_size -= size
        if not parts:
            return b""
        data = b"".join(parts) if len(parts) > 1 else parts[0]
        self.stats["out_bytes"] += len(data)
        return data

    def write_pressure(self, buffered: int = 0) -> int:
        """How full the way to the socket is, with ``buffered`` bytes the
        driver holds that the socket has not taken yet: 0 below
        ``write_buf_size``; 1 at or past it (a writer that can wait for the
        socket should); 2 past ``HARD_CAP_FACTOR`` times it (a writer that
        cannot wait fails, see :meth:`check_outbound` and :attr:`hard_cap`)."""
        total = self._out_size + buffered
        limit = self.options.write_buf_size
        if total < limit:
            return 0
        return 2 if total > self.hard_cap else 1

    @property
    def hard_cap(self) -> int:
        """The bytes past which a writer that cannot wait fails:
        ``HARD_CAP_FACTOR`` times write_buf_size, plus the reconnect buffer
        (which a new connection may start with, and writers that wait must
        not be refused for)."""
        o = self.options
        return o.write_buf_size * HARD_CAP_FACTOR + o.reconnect_buf_size

    def check_outbound(self, buffered: int = 0) -> None:
        """Raise ErrOutboundBufferLimit when a writer that cannot wait would
        pass the hard cap (:meth:`write_pressure` 2)."""
        if self.write_pressure(buffered) == 2:
            limit = self.hard_cap
            raise make_error("ErrOutboundBufferLimit",
                             f"Outbound buffer limit of {limit} bytes exceeded: the socket does not take "
                             "the data as fast as it is published (await publish() to wait for it)")

    def _check_reconnect_buf(self, size: int) -> None:
        """While not connected, publishes wait in a buffer of at most
        ``reconnect_buf_size`` bytes; past it they fail at once."""
        cap = self.options.reconnect_buf_size
        if self._out_size + size > cap:
            raise make_error("ErrReconnectBufExceeded",
                             f"Reconnect buffer of {cap} bytes is full (status {self.status}); "
                             "the message was not published")


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
        self._orphan_pings.extend(p for p in self._pings if p is not None and not p.done)
        self._pings = []
        self._connect_next()

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
            jitter = o.reconnect_jitter_tls if (o.secure or server.scheme == "tls") else o.reconnect_jitter
            if jitter > 0:
                wait += self._rng.randint(0, jitter)
            self._phase = _WAIT_RETRY
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
            self._phase = _WAIT_RETRY
            self._fx.append(StartTimer("reconnect", int(wait)))
        else:
            self._attempt(pick)
        return True

    def _attempt(self, server) -> None:
        self._phase = _OPENING
        self._parser.reset()
        self._hs_out = []
        self._tls_done = False
        self._fx.append(StartTimer("connect", self.options.connect_timeout))
        self._log("info", f"Connecting to the server at {server.host}:{server.port}")
        self._socket_open = True
        self._fx.append(Open(server))

    def socket_connected(self) -> None:
        if self._phase == _OPENING:
            if self.tls_first:
                self._phase = _TLS
                self._log("debug", "Performing TLS handshake before INFO...")
                self._fx.append(StartTls(self.pool.current))
                return
            self._phase = _WAIT_INFO

    def socket_failed(self, reason: str, unresolved: bool = False) -> None:
        """The TCP connection attempt failed (refused, unreachable ...):
        ErrConnectionRefused.  ``unresolved``: the driver knows the host name
        did not resolve (the asyncio face, from socket.gaierror):
        ErrHostNotResolved.  (The Tcl face cannot tell, and nats-tcl says
        ErrConnectionRefused for both.)"""
        if self._phase != _OPENING:
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
        if not self._socket_open:
            return
        if reason:
            text = f"Connection to {self.host_port()} broken - {reason}"
        else:
            text = f"Server {self.host_port()} closed the connection"
            if self.handshake_eof_connects and self._phase == _WAIT_PONG and self.status == CONNECTING:
                self._connected()
        self._fail("ErrBrokenSocket", text)

    def write_failed(self, reason: str) -> None:
        if not self._socket_open:
            return
        self._fail("ErrBrokenSocket", f"Failed to send data to {self.host_port()}: {reason}")

    def tls_done(self) -> None:
        if self._phase == _TLS:
            self._tls_done = True
            if self.tls_first:
                self._phase = _WAIT_INFO  # the INFO comes over TLS now
                return
            self._send_connect()

    def tls_failed(self, reason: str) -> None:
        if self._phase == _TLS:
            self._fail("ErrTLS", f"TLS handshake with server {self.host_port()} failed: {reason}")

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
            # A ping in flight waits for the outcome of reconnecting (as in
            # nats-tcl): the next server answering ends it, closing fails it.
            self._orphan_pings.extend(p for p in self._pings if p is not None and not p.done)
            self._pings = []
        else:
            self.pool.current_done(False, self._now())
        self._connect_next()

    def _drop_socket(self) -> None:
        if self._socket_open:
            self._socket_open = False
            self._hs_out = []
            self._fx.append(CLOSE)
        self._phase = _IDLE
        self._parser.reset()
        self._fx.append(CancelTimer("ping"))
        self._fx.append(CancelTimer("connect"))
        self._pending_pings = 0

    def _fail_pings(self, result) -> None:
        pings = self._pings + self._orphan_pings
        self._pings = []
        self._orphan_pings = []
        for p in pings:
            if p is not None and not p.done:
                p.done = True
                self._fx.append(CancelTimer(p))
                self._fx.append(PingDone(p, result))

    def _closed(self, reason: str | None) -> None:
        """Final cleanup: no more servers, or the user disconnected."""
        if reason:
            self._log("error", reason)
            npub = sum(1 for c in self._out if c[:3] == b"PUB" or c[:4] == b"HPUB")
            if npub:
                self._log("warn", f"Discarded {npub} buffered messages")
        self._out.clear()
        self._out_size = 0
        self._flush_signalled = False
        self._fx.append(CancelTimer("reconnect"))
        self._fx.append(CancelTimer("connect"))
        self._fx.append(CancelTimer("ping"))
        self._phase = _IDLE
        self._fail_pings(None)
        outcome = "lost" if self.last_error is not None else "closed"
        reqs = list(self.requests.values())
        self.requests.clear()
        for r in reqs:
            if not r.done:
                r.done = True
                self._fx.append(CancelTimer(r))
                self._fx.append(RequestDone(r, outcome))
        for s in self.subs.values():
            s.closed = True
        self.subs.clear()
        self._mux = None
        self._mux_prefix = ""
        self._fx.append(SUBS_CLEARED)
        self._set_status(CLOSED)

    def disconnect(self) -> None:
        """Flush what is buffered (when connected), close, and clean up."""
        if self.status == CLOSED:
            return
        self._clear_error()
        if self._socket_open:
            self._log("info", f"Closing connection to {self.host_port()}")
            if self.status == CONNECTED and self._out:
                # the driver writes these before closing (data_to_send)
                self._hs_out.extend(self._out)
            self._out = collections.deque()  # the old one went to _hs_out above
            self._out_size = 0
            self._socket_open = False
            self._fx.append(CLOSE)
        self._parser.reset()
        self._closed(None)

    # ------------------------------------------------------------------ timers
    def timer_fired(self, key) -> None:
        if key == "connect":
            if self._phase in (_OPENING, _WAIT_INFO, _TLS, _WAIT_PONG):
                self._fail("ErrConnectionTimeout", f"Connection timeout for {self.host_port()}")
        elif key == "ping":
            self._keepalive()
        elif key == "reconnect":
            if self._phase == _WAIT_RETRY and self.status != CLOSED:
                self._attempt(self.pool.current)
        elif isinstance(key, Request):
            self._request_timeout(key)
        elif isinstance(key, Ping):
            if not key.done:
                key.done = True
                self._fx.append(PingDone(key, False))

    def _keepalive(self) -> None:
        if self.status != CONNECTED:
            return
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

    # ------------------------------------------------------------------ input
    def receive_data(self, data) -> None:
        if not self._socket_open:
            return
        if data:
            self.stats["in_bytes"] += len(data)
        try:
            ops = self._parser.feed(data)
            bad = None
        except NatsError as e:
            # what was complete before the bad bytes is handled, then the socket goes
            ops = e.details.pop("ops", ())
            bad = e
        handle = self._handle
        on_msg = self._on_msg
        subs = self.subs
        mc = self.msg_class
        fx = self._fx
        plain = 0
        batches = self.deliver_batches
        batch_sub = None          # the DeliverMany being filled: its sub, its list ...
        batch: list = []
        batch_at = -1             # ... and where it is in fx (it must still be the last effect)
        # the compiled maker of a run of plain messages, for a message class
        # made the way Msg makes them
        take = (P.take_msgs if batches and mc.__init__ is Msg.__init__  # type: ignore[misc]
                and mc.__new__ is object.__new__ else None)
        i = 0
        n = len(ops)
        while i < n:
            op = ops[i]
            i += 1
            if not self._socket_open:
                break
            if op[0] is _MSG:
                sub = subs.get(op[2])
                if sub is not None and op[4] is None and not sub.max_msgs and sub.kind == "user":
                    # the common message (a user subscription, no headers, no
                    # max_msgs): _on_msg's steps inline
                    if take is not None:
                        # this one and the plain ones for the same sid right after it
                        run: list = []
                        j = take(ops, i - 1, op[2], mc, run)
                        if j is not None:
                            fx.append(_tuple_new(DeliverMany, (sub, run)))
                            k = j - i + 1
                            plain += k
                            sub.received += k
                            i = j
                            continue
                        take = None  # not a class it can make: the steps below
                    plain += 1
                    sub.received += 1
                    if not batches:
                        fx.append(_tuple_new(Deliver, (sub, mc(op[1], op[5], op[3], None, op[2]))))
                    elif sub is batch_sub and len(fx) == batch_at:
                        batch.append(mc(op[1], op[5], op[3], None, op[2]))
                    else:
                        batch_sub = sub
                        batch = [mc(op[1], op[5], op[3], None, op[2])]
                        fx.append(_tuple_new(DeliverMany, (sub, batch)))
                        batch_at = len(fx)
                elif sub is not None and op[4] is None and sub.kind == "mux" and not sub.max_msgs:
                    # a reply to a request without headers: _on_msg's steps inline
                    plain += 1
                    sub.received += 1
                    self._on_mux_reply(mc(op[1], op[5], op[3], None, op[2]))
                else:
                    on_msg(op)
            else:
                handle(op)
        if plain:
            self.stats["in_msgs"] += plain
        if bad is not None and self._socket_open:
            self._fail(bad.code, str(bad))

    def _handle(self, op) -> None:
        kind = op[0]
        if kind is P.MSG:
            self._on_msg(op)
        elif kind is P.PING:
            if self.status == CONNECTED:
                self._queue(P.PONG_BYTES)
            else:
                self._hs_out.append(P.PONG_BYTES)
                self._signal_flush()
        elif kind is P.PONG:
            self._on_pong()
        elif kind is P.INFO:
            self._on_info(op[1])
        elif kind is P.OK:
            pass
        elif kind is P.ERR:
            self._on_err(op[1])

    def _add_connect_urls(self, info: dict) -> None:
        for url in info.get("connect_urls") or ():
            if isinstance(url, str) and self.pool.add_discovered(url) is not None:
                self._log("debug", f"Added {url} to the server pool")
            elif not isinstance(url, str) or not self._well_formed(url):
                url = url if isinstance(url, str) else repr(url)
                if url in self._bad_urls:
                    continue
                # a malformed entry: said once, then ignored
                self._bad_urls.add(url)
                self._log("warn", f"Ignoring invalid URL {url!r} in connect_urls of {self.host_port()}")

    def _on_info(self, info: dict) -> None:
        # fields of the wrong type (a broken or hostile server) are dropped:
        # they would fail later, far from here, with a TypeError
        for key, typ in _INFO_TYPES:
            if key in info and not isinstance(info[key], typ):
                info = {k: v for k, v in info.items() if k != key}
        if self.status == CONNECTED or self._phase == _WAIT_PONG:
            self.server_info.update(info)
            self._fx.append(InfoReceived(dict(self.server_info)))
            self._add_connect_urls(info)
            if info.get("ldm"):
                self._log("warn", f"Server {self.host_port()} entered lame duck mode")
            return
        if self._phase != _WAIT_INFO:
            return
        info = dict(info)
        v = info.get("version")
        if isinstance(v, str):
            m = re.match(r"[\d.]+", v)
            if m:
                info["version"] = m.group(0)
        self.server_info = info
        # the handshake's connect_urls join the pool too (as in nats.go and
        # nats-py), so the INFO that follows CONNECT brings nothing new
        self._add_connect_urls(info)
        self._fx.append(InfoReceived(dict(info)))
        if self._tls_done:  # tls_first: the handshake came before this INFO
            self._send_connect()
            return
        server = self.pool.current
        want_tls = self.options.secure or (server is not None and server.scheme == "tls")
        if info.get("tls_required") or (want_tls and info.get("tls_available")):
            self._phase = _TLS
            self._log("debug", "Performing TLS handshake...")
            self._fx.append(StartTls(server))
            return
        if want_tls:
            self._fail("ErrSecureConnWanted", f"Server {self.host_port()} does not provide TLS")
            return
        self._send_connect()

    @staticmethod
    def _well_formed(url: str) -> bool:
        try:
            parse_url(url)
        except NatsError:
            return False
        return True

    def _send_connect(self) -> None:
        try:
            auth = self._auth_params(self.server_info)
        except NatsError as e:
            self._fail(e.code, str(e))
            return
        params = connect_params(self.options, self.server_info, auth, lang=self.lang, version=self.version,
                                tls_done=self._tls_done)
        self._hs_out.append(P.encode_connect(params))
        self._hs_out.append(P.PING_BYTES)
        self._phase = _WAIT_PONG
        self._signal_flush()

    def _auth_params(self, info: dict):
        if self.auth_cb is not None:
            try:
                return self.auth_cb(info.get("nonce"))
            except Exception as e:  # the user's user_jwt_cb/signature_cb failed
                raise make_error("ErrAuthorization", f"user_jwt_cb/signature_cb failed: {e!r}") from None
        return auth_params(self.options, info, self.pool, self._credentials, self.send_auth_always)

    def set_credentials(self, value) -> None:
        """The driver's reading of the ``creds``/``nkey_seed`` files, given
        before each socket it opens: what :func:`tclnats_py.credentials.read_credentials`
        returns (``(jwt_or_None, seed)``, None, or the NatsError of a file that
        could not be read, reported when the server asks for credentials)."""
        self._credentials = value

    def _on_pong(self) -> None:
        self._fx.append(PONG_RECEIVED)
        if self._phase == _WAIT_PONG:
            self._connected()
            return
        self._pending_pings = 0
        pings = self._pings
        while pings:
            p = pings.pop(0)
            if p is None:
                break
            if not p.done:
                p.done = True
                self._fx.append(CancelTimer(p))
                self._fx.append(PingDone(p, True))
                break

    def _connected(self) -> None:
        self._phase = _READY
        self._fx.append(CancelTimer("connect"))
        self.pool.current_done(True, self._now())
        if self.pool.current is not None:
            self.pool.current.last_auth_error = None
        self._log("info", f"Connected to the server at {self.host_port()}")
        self._clear_error()
        self._pending_pings = 0
        self._pings = []
        if self._orphan_pings:
            orphans, self._orphan_pings = self._orphan_pings, []
            for p in orphans:
                if not p.done:
                    p.done = True
                    self._fx.append(CancelTimer(p))
                    self._fx.append(PingDone(p, True))
        # restore subscriptions ahead of anything buffered meanwhile
        restore = []
        for s in self.subs.values():
            if s.draining:
                continue  # the server forgot it with the old connection
            restore.append(P.encode_sub(s.subject, s.queue, s.sid))
            if s.max_msgs:
                restore.append(P.encode_unsub(s.sid, s.max_msgs - s.received))
        if restore:
            self._out.extendleft(reversed(restore))
            self._out_size += sum(len(c) for c in restore)
        self._set_status(CONNECTED)
        if self._out:
            self._signal_flush()
        self._fx.append(StartTimer("ping", self.options.ping_interval))

    def _on_err(self, text: str) -> None:
        err, fatal = server_error(text)
        if fatal:
            self._fail(err.code, err.message)
        else:
            self._async_error(err.code, err.message)

    def _on_msg(self, op) -> None:
        _, subject, sid, reply, hdr, payload = op
        self.stats["in_msgs"] += 1
        sub = self.subs.get(sid)
        if sub is None:
            return  # unsubscribed while messages were in flight
        headers = None
        if hdr is not None:
            try:
                # the compiled parser of the plain block (None: anything else)
                headers = P.headers(hdr) if P.headers is not None else None
                if headers is None:
                    headers = parse_headers(hdr)
                if self.headers_class is not None:
                    headers = self.headers_class(headers)
            except NatsError as e:
                # the body is still delivered (like nats.go processMsg)
                self._async_error(e.code, str(e))
        msg = self.msg_class(subject, payload, reply, headers, sid)
        sub.received += 1
        gone = False
        if sub.max_msgs and sub.received >= sub.max_msgs:
            del self.subs[sid]
            sub.closed = True
            gone = True
        kind = sub.kind
        if kind == "user":
            self._fx.append(_tuple_new(Deliver, (sub, msg)))  # Deliver(sub, msg) without its Python __new__
            if gone:
                self._fx.append(SubGone(sid))
        elif kind == "mux":
            self._on_mux_reply(msg)
        else:
            if gone:
                self._fx.append(SubGone(sid))
            self._on_gather_reply(sub.request, msg, gone)

    # ------------------------------------------------------------------ API: checks
    def _check_open(self) -> None:
        if self.status == CLOSED:
            raise make_error("ErrConnectionClosed", "No connection to NATS server")

    def check_subject(self, subject: str, wildcard=False, queue=False) -> bool:
        if not subject:
            return False
        if not self.options.check_subjects:
            return True
        if queue:
            return valid_queue(subject)
        if wildcard:
            return valid_wildcard_subject(subject)
        return valid_subject(subject)

    # ------------------------------------------------------------------ API: publish
    def publish(self, subject: str, payload: bytes = b"", reply: str | None = None,
                headers=None, check_subject: bool = True, check_reply: bool = True) -> None:
        if self.status == CLOSED:
            raise make_error("ErrConnectionClosed", "No connection to NATS server")
        info = self.server_info
        if info:
            mp = info.get("max_payload")
            if mp is not None and len(payload) > mp:
                raise make_error("ErrMaxPayload", f"Maximum size of NATS message is {mp}")
            if headers and not info.get("headers"):
                raise make_error("ErrHeadersNotSupported", "Headers are not supported by this server")
        if check_subject and not self.check_subject(subject):
            raise make_error("ErrBadSubject", f"Invalid subject {subject}")
        if reply and check_reply and not self.check_subject(reply):
            raise make_error("ErrBadSubject", f"Invalid reply {reply}")
        if headers:
            hdr = headers if isinstance(headers, (bytes, bytearray)) else encode_headers(headers)
            data = P.encode_pub(subject, reply, payload, hdr)
        else:
            data = P.encode_pub(subject, reply, payload)
        if self.status != CONNECTED:
            self._check_reconnect_buf(len(data))
        self.stats["out_msgs"] += 1
        self._out.append(data)
        self._out_size += len(data)
        if self.status == CONNECTED and not self._flush_signalled:
            self._flush_signalled = True
            self._fx.append(FLUSH)

    def publish_frame(self, data: bytes, chunk: int) -> bool:
        """Queue one PUB frame already framed by the driver (a subject that
        passed :meth:`publish`'s checks before, a payload within max_payload):
        the asyncio face's fast path.  True when the driver has work now:
        effects to carry out (a ``Flush``) or ``chunk`` bytes or more queued
        (time to write and look at :meth:`write_pressure`)."""
        if self.status != CONNECTED:
            self.publish_framed(data, 1)
            return True
        self.stats["out_msgs"] += 1
        self._out.append(data)
        size = self._out_size = self._out_size + len(data)
        if not self._flush_signalled:
            self._flush_signalled = True
            self._fx.append(FLUSH)
            return True
        return size >= chunk

    def publish_framed(self, data: bytes, count: int) -> None:
        """Queue ``count`` PUB commands already framed by the caller (the Tcl
        face's fast path, which frames only subjects and replies that passed
        :meth:`publish`'s checks, with payloads within max_payload)."""
        if self.status == CLOSED:
            raise make_error("ErrConnectionClosed", "No connection to NATS server")
        if not data:
            return
        if self.status != CONNECTED:
            self._check_reconnect_buf(len(data))
        self.stats["out_msgs"] += count
        self._out.append(data)
        self._out_size += len(data)
        if self.status == CONNECTED:
            self._signal_flush()

    # ------------------------------------------------------------------ API: subscribe
    def subscribe(self, subject: str, queue: str = "", max_msgs: int = 0, handler=None,
                  kind: str = "user", request=None) -> Subscription:
        self._check_open()
        if not self.check_subject(subject, wildcard=True):
            raise make_error("ErrBadSubject", f"Invalid subject {subject}")
        if queue and not self.check_subject(queue, queue=True):
            raise make_error("ErrBadQueueName", f"Invalid queue {queue}")
        if not 0 <= max_msgs <= MAX_SUB_MSGS:
            raise make_error("ErrInvalidArg", f"Invalid max_msgs {max_msgs} (0 to {MAX_SUB_MSGS})")
        sid = next(self._sid)
        sub = Subscription(sid, subject, queue or "", max_msgs, handler, kind, request)
        self.subs[sid] = sub
        if self.status == CONNECTED:
            # while (re)connecting the SUB goes out with the restored ones
            self._queue(P.encode_sub(subject, queue, sid))
            if max_msgs > 0:
                self._queue(P.encode_unsub(sid, max_msgs))
        return sub

    def unsubscribe(self, sid: int, max_msgs: int = 0) -> bool:
        """Returns True when the subscription is gone now, False when it ends later."""
        self._check_open()
        if not 0 <= max_msgs <= MAX_SUB_MSGS:
            raise make_error("ErrInvalidArg", f"Invalid max_msgs {max_msgs} (0 to {MAX_SUB_MSGS})")
        sub = self.subs.get(sid)
        if sub is None:
            raise make_error("ErrBadSubscription", f"Invalid subscription ID {sid}")
        if max_msgs == 0 or sub.received >= max_msgs:
            del self.subs[sid]
            sub.closed = True
            if sub.draining:
                return True  # its UNSUB went out with drain()
            data = P.encode_unsub(sid)
            gone = True
        else:
            sub.max_msgs = max_msgs
            data = P.encode_unsub(sid, max_msgs)
            gone = False
        if self.status == CONNECTED:
            self._queue(data)
        return gone

    def drain(self, sid: int) -> None:
        """Stop the server's interest in ``sid`` (UNSUB) but keep delivering the
        messages already on their way; after a PING/PONG round trip has shown
        that none are left, the driver ends it with :meth:`unsubscribe`, which
        then only forgets it locally.  (nats.go's Subscription.Drain.)"""
        self._check_open()
        sub = self.subs.get(sid)
        if sub is None:
            raise make_error("ErrBadSubscription", f"Invalid subscription ID {sid}")
        if sub.draining:
            return
        sub.draining = True
        if self.status == CONNECTED:
            self._queue(P.encode_unsub(sid))

    # ------------------------------------------------------------------ API: requests
    def new_inbox(self) -> str:
        return self.inbox_prefix + "." + self._nuid.next()

    def request(self, subject: str, payload: bytes = b"", timeout: int = 0, headers=None,
                max_msgs: int | None = None, handler=None, check_subject: bool = True) -> Request:
        """Start a request; its end comes as a ``RequestDone(req, outcome)`` effect.

        ``max_msgs`` None: a "new-style" request on the shared wildcard inbox,
        first reply only.  An int: an "old-style" request with its own inbox
        subscription gathering up to max_msgs replies (``req_msg`` effects).
        ``timeout`` 0 means no timeout.
        """
        self._check_open()
        if timeout < 0:
            raise make_error("ErrBadTimeout", f"Invalid timeout {timeout}")
        rid = next(self._rid)
        if max_msgs is None:
            if self._mux is None:
                self._mux_prefix = self.new_inbox()
                self._mux = self.subscribe(self._mux_prefix + ".*", kind="mux")
            if self.nuid_reply_tokens:
                reply = f"{self._mux_prefix}.{self._nuid.next()}{rid:04x}"
            else:
                reply = f"{self._mux_prefix}.{rid}"
            req = Request(rid, subject, reply, timeout, None, handler)
            # publish first: it raises on a bad subject etc. before we keep any state
            self.publish(subject, payload, reply, headers, check_subject, False)
        else:
            if not 0 <= max_msgs <= MAX_SUB_MSGS:
                raise make_error("ErrInvalidArg", f"Invalid max_msgs {max_msgs} (0 to {MAX_SUB_MSGS})")
            reply = self.new_inbox()
            req = Request(rid, subject, reply, timeout, max_msgs, handler)
            req.sub = self.subscribe(reply, max_msgs=max_msgs, kind="gather", request=req)
            try:
                self.publish(subject, payload, reply, headers, check_subject, False)
            except NatsError:
                self.unsubscribe(req.sub.sid)
                raise
        self.requests[rid] = req
        if timeout:
            self._fx.append(_tuple_new(StartTimer, (req, timeout)))  # StartTimer(req, timeout), no Python __new__
        return req

    def _finish(self, req: Request, outcome: str) -> None:
        req.done = True
        self.requests.pop(req.id, None)
        fx = self._fx  # CancelTimer(req), RequestDone(req, outcome) without their Python __new__
        fx.append(_tuple_new(CancelTimer, (req,)))
        fx.append(_tuple_new(RequestDone, (req, outcome)))

    def _on_mux_reply(self, msg: Msg) -> None:
        # reply subjects are <prefix>.<request id> (or <NUID><request id in hex>)
        tail = msg.subject.rpartition(".")[2]
        try:
            rid = int(tail[22:], 16) if self.nuid_reply_tokens else int(tail)
        except ValueError:
            return
        req = self.requests.get(rid)
        if req is None or req.done:
            return  # a late or second reply
        req.msg = msg
        self._finish(req, "no_responders" if msg.headers and msg.no_responders else "msg")

    def _on_gather_reply(self, req: Request, msg: Msg, last: bool) -> None:
        if req is None or req.done:
            return
        req.msgs.append(msg)
        if req.msg is None:
            req.msg = msg
        self._fx.append(RequestReply(req, msg))
        if msg.no_responders and len(req.msgs) == 1:
            self._drop_sub(req.sub)
            self._finish(req, "no_responders")
        elif last:
            self._finish(req, "msg")

    def _request_timeout(self, req: Request) -> None:
        if req.done:
            return
        self._drop_sub(req.sub)
        self._finish(req, "timeout")

    def _drop_sub(self, sub) -> None:
        """End an internal subscription (UNSUB if connected) and report it."""
        if sub is None or sub.closed:
            return
        sub.closed = True
        self.subs.pop(sub.sid, None)
        if self.status == CONNECTED:
            self._queue(P.encode_unsub(sub.sid))
        self._fx.append(SubGone(sub.sid))

    def cancel_request(self, rid: int) -> None:
        req = self.requests.get(rid)
        if req is None:
            raise make_error("ErrInvalidArg", f"Invalid request ID {rid}")
        req.done = True
        del self.requests[rid]
        self._fx.append(CancelTimer(req))
        self._drop_sub(req.sub)
        self._log("debug", f"Cancelled request {rid}")

    # ------------------------------------------------------------------ API: ping
    def ping(self, timeout: int = 10000, handler=None) -> Ping:
        if self.status != CONNECTED:
            raise make_error("ErrConnectionClosed", "No connection to NATS server")
        if timeout < 0:
            raise make_error("ErrBadTimeout", f"Invalid timeout {timeout}")
        p = Ping(next(self._pid), handler)
        self._pings.append(p)
        self._log("debug", "sending PING")
        self._queue(P.PING_BYTES)
        if timeout:
            self._fx.append(StartTimer(p, timeout))
        return p
