"""``nats.aio.client`` of nats-py 2.x: :class:`Client` over the asyncio face.

``Client()`` then ``await nc.connect(servers, **options)`` with nats-py's
connect signature.  Once connected the asyncio face's client
(``tclnats_py.aio.client.Client``) is ``nc._impl``; the engine under it does
the work.  This class converts: nats-py's arguments to the face's options,
messages to :class:`~tclnats_py.natspy.aio.msg.Msg`, subscriptions to
:class:`~tclnats_py.natspy.aio.subscription.Subscription`, and the engine's
errors to ``nats.errors`` classes (:func:`tclnats_py.natspy.errors.translate`).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import ssl
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, List, Optional, Union
from urllib.parse import ParseResult

from tclnats_py.aio.client import Client as _ImplClient
from tclnats_py.engine.headers import parse_headers
from tclnats_py.engine.pool import parse_url
from tclnats_py.engine.protocol import MAX_CONTROL_LINE, encode_connect
from tclnats_py.errors import NatsError
from tclnats_py.natspy import errors
from tclnats_py.natspy.aio.credentials import Credentials, RawCredentials, auth_options
from tclnats_py.natspy.aio.msg import Msg, headers_arg, headers_from_impl
from tclnats_py.natspy.nuid import NUID
from tclnats_py.natspy.aio.servers import Server, ServerVersion, Srv, _SrvView, _uri
from tclnats_py.natspy.aio.subscription import (DEFAULT_SUB_PENDING_BYTES_LIMIT, DEFAULT_SUB_PENDING_MSGS_LIMIT,
                                                Subscription)

__all__ = ["Client", "RawCredentials", "Server", "Srv", "ServerVersion", "PROVIDED_PRIVATE", "Credentials", "__version__",
           "DEFAULT_INBOX_PREFIX", "DEFAULT_PENDING_SIZE", "DEFAULT_DRAIN_TIMEOUT"]

#: the nats-py version whose API this surface serves
__version__ = "2.16.0"
__lang__ = "python3"

_log = logging.getLogger("nats.aio.client")

# nats-py 2.16's client-side subject check (off with skip_subject_validation):
# no blank, tab, CR or LF anywhere (they would end or split the protocol line)
_BLANKS = re.compile(r"[ \t\r\n]").search
# the publish subjects found good (no blank, tab, CR or LF; not empty): a
# publish of a client that checks subjects looks its subject up here first;
# emptied when it grows past _CLEAN_MAX
_CLEAN: set = set()
_CLEAN_MAX = 10_000

DEFAULT_INBOX_PREFIX = b"_INBOX"
_DEFAULT_URL = "nats://localhost:4222"
DEFAULT_PENDING_SIZE = 2 * 1024 * 1024
DEFAULT_RECONNECT_TIME_WAIT = 2
DEFAULT_MAX_RECONNECT_ATTEMPTS = 60
DEFAULT_PING_INTERVAL = 120
DEFAULT_MAX_OUTSTANDING_PINGS = 2
DEFAULT_MAX_PAYLOAD_SIZE = 1048576
DEFAULT_MAX_FLUSHER_QUEUE_SIZE = 1024
DEFAULT_FLUSH_TIMEOUT = 10
DEFAULT_CONNECT_TIMEOUT = 2
DEFAULT_DRAIN_TIMEOUT = 30

# nats-py's names of protocol values; where ours differ (the line and read
# sizes) they are this client's: the engine's parser, the asyncio face's reads
PROTOCOL = 1
INFO_OP = b"INFO"
CONNECT_OP = b"CONNECT"
PING_OP = b"PING"
PONG_OP = b"PONG"
OK_OP = b"+OK"
ERR_OP = b"-ERR"
EMPTY = ""
PING_PROTO = PING_OP + b"\r\n"
PONG_PROTO = PONG_OP + b"\r\n"
DEFAULT_BUFFER_SIZE = 256 * 1024
MAX_CONTROL_LINE_SIZE = MAX_CONTROL_LINE
NATS_HDR_LINE = bytearray(b"NATS/1.0")
NATS_HDR_LINE_SIZE = len(NATS_HDR_LINE)
NO_RESPONDERS_STATUS = "503"
CTRL_STATUS = "100"  # heartbeats and flow control
STATUS_MSG_LEN = 3  # the status code's digits

# connect's arguments kept in Client.options (nats-py's), and those passed
# to the asyncio face as they are (same name, same unit)
_SHOWN_OPTIONS = ("verbose", "pedantic", "name", "allow_reconnect", "dont_randomize", "reconnect_time_wait",
                  "max_reconnect_attempts", "ping_interval", "max_outstanding_pings", "no_echo", "user", "password",
                  "token", "connect_timeout", "drain_timeout", "tls_handshake_first", "skip_subject_validation")
_PASSED_OPTIONS = ("pedantic", "verbose", "allow_reconnect", "connect_timeout", "reconnect_time_wait",
                   "ping_interval", "max_outstanding_pings", "dont_randomize", "no_echo", "drain_timeout",
                   "pending_size", "inbox_prefix", "tls_handshake_first")


#: nats-py private attributes this surface serves with nats-py's meaning
#: (nats-py's own tests read them); the suite runner counts the tests that
#: touch only these.  ``_connect_command()`` is the CONNECT line the engine
#: sends (the engine asks for it at each handshake, so a wrapper decides it)
PROVIDED_PRIVATE = frozenset({
    "_server_info", "_max_payload", "_pending_data_size", "_server_pool", "_process_headers", "_subs", "_status",
    "_id", "_received", "_err", "_parse_server_uri", "_nuid", "_pending_queue", "_message_iterator",
    "_unsubscribed_future", "_reading_task", "_flusher_task", "_ping_interval_task", "_connect_command",
})


def _publish_subject_ok(subject: str) -> bool:
    """nats-py 2.16's check of a publish subject: not empty, no blank, tab,
    CR or LF (remembered in _CLEAN when so)."""
    if not subject or _BLANKS(subject):
        return False
    if len(_CLEAN) >= _CLEAN_MAX:
        _CLEAN.clear()
    _CLEAN.add(subject)
    return True


def _subscribe_subject_ok(subject: str) -> bool:
    """nats-py 2.16's rule for a subscription's subject: no blanks, no empty
    token, ``*`` and ``>`` only as whole tokens and ``>`` only last."""
    if _BLANKS(subject):
        return False
    tokens = subject.split(".")
    for i, tok in enumerate(tokens):
        if not tok or (tok != ">" and ">" in tok) or (tok == ">" and i != len(tokens) - 1) \
                or (tok != "*" and "*" in tok):
            return False
    return True


async def _default_error_callback(ex: BaseException) -> None:
    _log.error("nats: encountered error", exc_info=ex)


class Client:
    """A nats-py ``Client`` (``nats.NATS``) whose connection is tclnats_py's engine."""

    msg_class: type = Msg

    DISCONNECTED = 0
    CONNECTED = 1
    CLOSED = 2
    RECONNECTING = 3
    CONNECTING = 4
    DRAINING_SUBS = 5
    DRAINING_PUBS = 6

    def __repr__(self) -> str:
        return f"<nats client v{__version__}>"

    def __init__(self) -> None:
        self._impl: Optional[_ImplClient] = None
        # impl.publish, bound once (a method lookup on impl costs more than
        # this attribute) while publish() may go on: None before connect and
        # while a drain flushes (DRAINING_PUBS)
        self._impl_publish: Optional[Callable[..., Awaitable[None]]] = None
        self._error_cb: Callable[[BaseException], Awaitable[None]] = _default_error_callback
        self._disconnected_cb = None
        self._closed_cb = None
        self._discovered_server_cb = None
        self._reconnected_cb = None
        self._lame_duck_mode_cb = None
        self._draining = 0  # 0, DRAINING_SUBS or DRAINING_PUBS
        self._close_cbs_done = False
        self._closing = False
        self._connecting = False
        self._disc_said = self._disc_dropped = 0  # see _on_disconnected
        self._out_bytes = 0
        self._in_bytes = 0
        self._reconnects = 0
        self._pending_size = DEFAULT_PENDING_SIZE
        self._small_pending = False
        self._drain_timeout: float = DEFAULT_DRAIN_TIMEOUT
        self._err: Optional[BaseException] = None
        self._inbox_text = DEFAULT_INBOX_PREFIX.decode()
        self._all_subs: Dict[int, Subscription] = {}
        self._nuid = NUID()
        self.options: Dict[str, Any] = {}
        self._check_subjects = True  # not skip_subject_validation
        self._stats_base = {"in_msgs": 0, "out_msgs": 0, "in_bytes": 0, "out_bytes": 0, "reconnects": 0,
                            "errors_received": 0}

    # ------------------------------------------------------------ connect
    async def connect(
        self,
        servers: str | list[str] = _DEFAULT_URL,
        error_cb=None,
        disconnected_cb=None,
        closed_cb=None,
        discovered_server_cb=None,
        reconnected_cb=None,
        name: Optional[str] = None,
        pedantic: bool = False,
        verbose: bool = False,
        allow_reconnect: bool = True,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        reconnect_time_wait: float = DEFAULT_RECONNECT_TIME_WAIT,
        max_reconnect_attempts: int = 60,
        ping_interval: float = DEFAULT_PING_INTERVAL,
        max_outstanding_pings: int = 2,
        dont_randomize: bool = False,
        flusher_queue_size: int = 1024,  # nats-py's flusher queue: none here
        no_echo: bool = False,
        tls: Optional[ssl.SSLContext] = None,
        tls_hostname: Optional[str] = None,
        tls_handshake_first: bool = False,
        user: Optional[str] = None,
        password: Optional[str] = None,
        token: Optional[Union[str, Callable[[], str]]] = None,
        drain_timeout: float = DEFAULT_DRAIN_TIMEOUT,
        signature_cb=None,
        user_jwt_cb=None,
        user_credentials: Credentials | None = None,
        nkeys_seed: Optional[str] = None,
        nkeys_seed_str: Optional[str] = None,
        inbox_prefix: str | bytes = DEFAULT_INBOX_PREFIX,
        pending_size: int = 2 * 1024 * 1024,
        flush_timeout: Optional[float] = None,
        ws_connection_headers: dict[str, list[str]] | None = None,
        reconnect_to_server_handler=None,
        lame_duck_mode_cb=None,
        skip_subject_validation: bool = False,
    ) -> None:
        """Connect as nats-py does (its argument names, seconds); raises
        nats.errors classes (NoServersError, TimeoutError, ...), OSError or
        ssl.SSLError as nats-py would."""
        given = {k: v for k, v in locals().items() if k != "self"}
        for cb in (error_cb, disconnected_cb, closed_cb, reconnected_cb, discovered_server_cb, lame_duck_mode_cb):
            if cb is not None and not inspect.iscoroutinefunction(cb):
                raise errors.InvalidCallbackTypeError()
        self._error_cb = _default_error_callback if error_cb is None else error_cb
        (self._disconnected_cb, self._closed_cb, self._discovered_server_cb, self._reconnected_cb,
         self._lame_duck_mode_cb) = (disconnected_cb, closed_cb, discovered_server_cb, reconnected_cb,
                                     lame_duck_mode_cb)
        if isinstance(inbox_prefix, (bytes, bytearray)):
            inbox_prefix = given["inbox_prefix"] = bytes(inbox_prefix).decode()
        self._inbox_text = inbox_prefix
        self._check_subjects = not skip_subject_validation
        self._drain_timeout = drain_timeout
        self._pending_size = pending_size
        # the face writes every 256 KiB by itself: a forced write matters below that
        self._small_pending = pending_size < 512 * 1024
        self.options.update({k: given[k] for k in _SHOWN_OPTIONS})
        self.options.update({k: v for k, v in (("tls", tls), ("tls_hostname", tls_hostname)) if v})
        self._impl = impl = self._new_impl(given)
        self._impl_publish = impl.publish
        self._close_cbs_done = False
        self._closing = False
        self._connecting = True
        try:
            await self._first_connect(impl, allow_reconnect, max_reconnect_attempts, reconnect_time_wait)
        finally:
            self._connecting = False

    def _face_options(self, a: Dict[str, Any]) -> Dict[str, Any]:
        """connect's arguments ``a`` (nats-py's) as the asyncio face's options."""
        opts: Dict[str, Any] = {k: a[k] for k in _PASSED_OPTIONS}
        opts["name"] = a["name"] or ""
        # nats-py drops a server after max_reconnect_attempts + 1 failures
        # in a row (none when not > 0); the engine after max_reconnect_attempts
        n = a["max_reconnect_attempts"]
        opts["max_reconnect_attempts"] = n + 1 if n > 0 else -1
        opts.update(error_cb=self._on_error, disconnected_cb=self._on_disconnected, closed_cb=self._on_closed,
                    reconnected_cb=self._on_reconnected, discovered_server_cb=self._on_discovered,
                    lame_duck_mode_cb=self._on_ldm)
        if a["flush_timeout"] is not None:
            opts["flush_timeout"] = a["flush_timeout"]
        if a["tls"] is not None:
            opts["tls"] = a["tls"]
        # WebSocket: nats-py's headers (name -> list of values); no
        # permessage-deflate offered, as nats-py's aiohttp does not
        opts["ws_compression"] = False
        headers = a["ws_connection_headers"]
        if headers:
            opts["ws_headers"] = [(k, v) for k, vs in headers.items()
                                  for v in ([vs] if isinstance(vs, str) else vs)]
        for k in ("tls_hostname", "user", "password"):
            if a[k]:
                opts[k] = a[k]
        if a["token"] and not callable(a["token"]):
            opts["token"] = a["token"]
        # nats-py checks no subject but the empty one; the server answers the rest
        opts["check_subjects"] = False
        # nats-py retries a server that refuses the credentials until max_reconnect_attempts
        opts["ignore_auth_error_abort"] = True
        auth_options(opts, a["signature_cb"], a["user_jwt_cb"], a["user_credentials"], a["nkeys_seed"],
                           a["nkeys_seed_str"])
        return opts

    def _new_impl(self, a: Dict[str, Any]) -> _ImplClient:
        """The asyncio face's client for connect's arguments ``a``, with the
        engine switches that make it behave as nats-py."""
        opts = self._face_options(a)
        # nats-py: tls:// alone does not require TLS (the server's INFO decides)
        servers = [a["servers"]] if isinstance(a["servers"], str) else list(a["servers"])
        servers = ["nats://" + s[6:] if s.startswith("tls://") else s for s in servers]
        ws = [s.lower().startswith(("ws://", "wss://")) for s in servers]
        if any(ws) and not all(ws):
            raise errors.Error("nats: mixing of websocket and non websocket URLs is not allowed")
        try:
            impl = _ImplClient(servers, **opts)
        except NatsError as e:
            raise errors.translate(e) from e
        impl.engine.send_auth_always = True  # nats-py sends what it was given
        impl.engine.connect_line = lambda: self._connect_command()  # as wrapped when connect() runs
        # nats-py's connect returns when the server closes after CONNECT, before
        # PONG (then reports the disconnect and reconnects)
        impl.engine.handshake_eof_connects = True
        impl.engine.nuid_reply_tokens = True  # request replies to _INBOX.<NUID>.<NUID><hex>, as nats-py's
        if a["reconnect_to_server_handler"] is not None:
            impl.engine.choose_server = self._server_chooser(a["reconnect_to_server_handler"])
        token = a["token"]
        if token and callable(token) and a["signature_cb"] is None and a["user_credentials"] is None:
            # a token function: asked again for each connection, as nats-py does
            impl.engine.auth_cb = lambda _nonce: {"auth_token": token()}
        return impl

    async def _first_connect(self, impl, allow_reconnect: bool, max_attempts: int, wait: float) -> None:
        """nats-py's first connect: each failed round of the pool goes to
        error_cb (the face reports every server's failure); with
        allow_reconnect the pool is tried again after ``reconnect_time_wait``
        until ``max_reconnect_attempts`` rounds failed (NoServersError), for
        good when it is negative; without, the first failure is raised."""
        rounds = 0
        while True:
            try:
                await impl.connect()
                return
            except NatsError as e:
                last = self._err
                if last is not None and getattr(last, "code", None) == e.code:
                    err = last  # the very error error_cb was given (nats-py raises that one)
                else:
                    err = errors.translate(e)
                    if e.code != "ErrNoServers":
                        self._err = err
                if not allow_reconnect:
                    raise err from e
                rounds += 1
                if 0 <= max_attempts < rounds:
                    self._err = errors.NoServersError()
                    raise self._err from e
            await asyncio.sleep(wait)

    def _server_chooser(self, handler):
        """nats-py's reconnect_to_server_handler(servers, server_info) ->
        (Server or None, delay seconds) as the engine's choose_server."""
        def choose(pool: list, info: dict):
            views = [Server(uri=_uri(s.as_dict()), reconnects=s.reconnects) for s in pool]
            pick, delay = handler(views, info)
            if pick is None:
                return None, 0
            for v, s in zip(views, pool):
                if pick is v or (pick.uri.hostname, pick.uri.port) == (s.host, s.port):
                    return s, int(max(0.0, float(delay or 0)) * 1000)
            if self._impl is not None:
                # a server not in the pool: said to error_cb, the pool's order applies
                self._impl.spawn(self._error_cb(errors.ServerNotInPoolError()))
            return None, 0
        return choose

    # ------------------------------------------------------------ callbacks (the face -> nats-py's)
    async def _on_error(self, e) -> None:
        code = getattr(e, "code", None)
        if code in ("ErrServer", "ErrBadSubject", "ErrPermissions"):
            # a -ERR of the server: nats-py's Error("nats: <text>"); any but a
            # permissions violation closes the connection (nats-py's rule)
            err = errors.Error(f"nats: {e}")
            err.code = code
            err.__cause__ = e
            self._err = err
            if code == "ErrPermissions":
                await self._error_cb(err)
            elif self._impl is not None and not self._impl.is_closed:
                self._closing = True
                await self._impl.close()
            return
        err = errors.translate(e)
        if isinstance(err, errors.SlowConsumerError):
            err.sub = self._all_subs.get(err.sid)
        self._err = err
        await self._error_cb(err)

    def _on_disconnected(self) -> Awaitable[None]:
        """The face's disconnected hook (it awaits what this returns in a task).
        nats-py says a lost connection from its reconnecting task, which a
        close() that comes first cancels (close says it instead): a report not
        begun when close() is called is dropped."""
        self._disc_said += 1
        return self._say_disconnected(self._disc_said)

    async def _say_disconnected(self, n: int) -> None:
        if n > self._disc_dropped and self._disconnected_cb is not None:
            await self._disconnected_cb()

    async def _on_reconnected(self) -> None:
        self._reconnects += 1
        if self._reconnected_cb is not None:
            await self._reconnected_cb()

    async def _on_closed(self) -> None:
        if self._connecting:
            return  # a failed first connect: nats-py calls no closed_cb
        if not self._close_cbs_done and not self._closing and self._impl is not None \
                and self._impl.last_error is not None:
            # the face gave up reconnecting: nats-py's last error says so
            self._err = errors.NoServersError()
        self._close_cbs_done = True
        if self._closed_cb is not None:
            await self._closed_cb()

    async def _on_discovered(self) -> None:
        if self._discovered_server_cb is not None:
            await self._discovered_server_cb()

    async def _on_ldm(self) -> None:
        if self._lame_duck_mode_cb is not None:
            await self._lame_duck_mode_cb()

    # ------------------------------------------------------------ state
    def _need_impl(self) -> _ImplClient:
        if self._impl is None:
            raise errors.ConnectionClosedError()
        return self._impl

    @property
    def _status(self) -> int:
        impl = self._impl
        if impl is None:
            return Client.DISCONNECTED
        if self._draining and not impl.is_closed:
            return self._draining
        return {"connected": Client.CONNECTED, "closed": Client.CLOSED, "reconnecting": Client.RECONNECTING,
                "connecting": Client.CONNECTING}.get(impl.status, Client.DISCONNECTED)

    @property
    def is_closed(self) -> bool:
        return self._status == Client.CLOSED

    @property
    def is_reconnecting(self) -> bool:
        return self._status == self.RECONNECTING

    @property
    def is_connected(self) -> bool:
        return self._status == Client.CONNECTED or self.is_draining

    @property
    def is_connecting(self) -> bool:
        return self._status == self.CONNECTING

    @property
    def is_draining(self) -> bool:
        return self._status in (Client.DRAINING_SUBS, Client.DRAINING_PUBS)

    @property
    def is_draining_pubs(self) -> bool:
        return self._status == self.DRAINING_PUBS

    @property
    def stats(self) -> Dict[str, int]:
        s = dict(self._stats_base)
        if self._impl is not None:
            s.update(self._impl.stats)
        # nats-py counts payload bytes, the engine bytes on the wire
        s["out_bytes"] = self._out_bytes
        s["in_bytes"] = self._in_bytes
        # nats-py counts reconnections made, the engine connections lost
        s["reconnects"] = self._reconnects
        return s

    @property
    def _server_info(self) -> Dict[str, Any]:
        return self._impl.server_info if self._impl is not None else {}

    # nats-py private attributes its own test suite reads; served with
    # nats-py's meaning (see PROVIDED_PRIVATE)
    # nats-py's internal tasks: this client has none (the asyncio face reads
    # in its Protocol, writes with call_soon, pings with a timer)
    _reading_task = None
    _flusher_task = None
    _ping_interval_task = None

    @property
    def _subs(self) -> Dict[int, Subscription]:
        """The live subscriptions by sid (nats-py drops one once it ended)."""
        live = {}
        for sid, sub in list(self._all_subs.items()):
            if sub._closed or not sub._impl.is_active:
                del self._all_subs[sid]
            else:
                live[sid] = sub
        return live

    def _connect_command(self) -> bytes:
        """The CONNECT line this client sends, built by the engine from its
        options and the server's last INFO (credentials, the nonce signed);
        the engine asks for it once per connection attempt, so a program
        that wraps it sees each one.  Before connect(): the line for
        ``options`` (verbose, pedantic, name, no_echo) to a server that asks
        for nothing.  A tclnats_py NatsError when credentials cannot be given."""
        impl = self._impl
        if impl is None:
            o = self.options
            impl = _ImplClient(None, verbose=bool(o.get("verbose")), pedantic=bool(o.get("pedantic")),
                               name=o.get("name") or "", no_echo=bool(o.get("no_echo")))
        return encode_connect(impl.engine.connect_fields())

    @property
    def _max_payload(self) -> int:
        return self.max_payload

    @property
    def _pending_data_size(self) -> int:
        return self.pending_data_size

    @property
    def _server_pool(self) -> List[_SrvView]:
        if self._impl is None:
            return []
        return [_SrvView(s) for s in self._impl.engine.pool.servers]

    async def _process_headers(self, raw) -> Optional[Dict[str, str]]:
        """A header block (bytes) as nats-py's headers dict, None when empty;
        the engine's parser does the work."""
        if not raw:
            return None
        try:
            parsed = parse_headers(bytes(raw))
        except NatsError as e:
            await self._error_cb(errors.translate(e))
            return None
        return headers_from_impl({k: v for k, v in parsed.items() if k.isascii() and not any(c.isspace() for c in k)})

    @property
    def max_payload(self) -> int:
        return self._server_info.get("max_payload", DEFAULT_MAX_PAYLOAD_SIZE)

    @property
    def client_id(self) -> Optional[int]:
        return None if self.is_closed else self._server_info.get("client_id")

    @property
    def client_ip(self) -> Optional[str]:
        return None if self.is_closed else self._server_info.get("client_ip")

    @property
    def last_error(self) -> Optional[BaseException]:
        return self._err

    @property
    def pending_data_size(self) -> int:
        return self._impl.pending_data_size if self._impl is not None else 0

    @property
    def connected_url(self) -> ParseResult | None:
        impl = self._impl
        if impl is None or not impl.is_connected:
            return None
        cur = impl.engine.pool.current
        return _uri(cur.as_dict()) if cur is not None else None

    @property
    def servers(self) -> List[ParseResult]:
        return [_uri(s) for s in self._impl.all_servers] if self._impl is not None else []

    @property
    def discovered_servers(self) -> list[ParseResult]:
        if self._impl is None:
            return []
        return [_uri(s) for s in self._impl.all_servers if s.get("discovered") == "true"]

    @property
    def server_pool(self) -> List[Server]:
        if self._impl is None:
            return []
        return [Server(uri=_uri(s), reconnects=s.get("reconnects", 0)) for s in self._impl.all_servers]

    @staticmethod
    def _parse_server_uri(url: str) -> ParseResult:
        """A server URL (scheme and port optional) as a ParseResult; the
        engine's URL rules (``tclnats_py.engine.pool.parse_url``)."""
        try:
            return _uri(parse_url(url).as_dict())
        except NatsError as e:
            raise errors.Error("nats: invalid connect url option") from e

    def set_server_pool(self, servers: list[str]) -> None:
        """Replace the server pool; the next reconnection uses it."""
        impl = self._impl
        if impl is None or impl.is_closed:
            raise errors.ConnectionClosedError()
        urls = ["nats://" + u[6:] if u.startswith("tls://") else u for u in servers]
        try:
            impl.engine.replace_servers(urls)
        except NatsError as e:
            raise errors.translate(e) from e

    async def force_reconnect(self) -> None:  # nats.go's ForceReconnect
        """Leave the current server for the next one of the pool."""
        impl = self._impl
        if impl is None or not impl.is_connected or not self.options.get("allow_reconnect", True):
            return
        impl.engine.force_reconnect()
        impl.run_effects()

    def _tls_context(self) -> ssl.SSLContext:
        if "tls" not in self.options:
            return ssl.create_default_context()
        given = self.options["tls"]
        if given is None:
            raise errors.Error("nats: no ssl context provided")
        return given

    ssl_context = property(_tls_context, doc="""The TLS context of the connection: connect's ``tls``,
        else a new default one (nats.errors.Error when ``tls`` was given as None).""")

    @property
    def connected_server_version(self) -> "ServerVersion":
        return ServerVersion(self._server_info.get("version", "0.0.0-unknown"))

    def new_inbox(self) -> str:
        """A new unique inbox subject: the inbox prefix, a dot and a NUID."""
        if self._impl is not None:
            return self._impl.new_inbox()
        from tclnats_py.engine.nuid import next_token
        return f"{self._inbox_text}.{next_token()}"

    # ------------------------------------------------------------ close, drain, flush
    async def close(self) -> None:
        """Close the connection (what was published is flushed first);
        disconnected_cb and closed_cb run once, as in nats-py, even when
        the connection never came up."""
        impl = self._impl
        for s in list(self._all_subs.values()):
            s._impl.discard_pending()
        self._all_subs.clear()
        self._disc_dropped = self._disc_said
        if impl is not None and not impl.is_closed:
            was_connected = impl.is_connected
            self._closing = True
            await impl.close()
            if not was_connected and self._disconnected_cb is not None:
                # nats-py's close() says disconnected even when the
                # connection was down already (the face said it then)
                await self._disconnected_cb()
            return
        if not self._close_cbs_done:
            self._close_cbs_done = True
            if self._disconnected_cb is not None:
                await self._disconnected_cb()
            if self._closed_cb is not None:
                await self._closed_cb()

    async def drain(self) -> None:
        """Drain every subscription, flush what was published, then close
        (nats.errors.DrainTimeoutError past ``drain_timeout``)."""
        if self.is_draining:
            return
        impl = self._impl
        if impl is None or impl.is_closed:
            raise errors.ConnectionClosedError()
        if impl.status == "connecting" or impl.is_reconnecting:
            raise errors.ConnectionReconnectingError()
        self._draining = Client.DRAINING_SUBS
        try:
            subs = [s._impl for s in self._all_subs.values() if not s._closed and s._impl.is_active]
            if subs:
                try:
                    await asyncio.wait_for(asyncio.gather(*(s.drain(self._drain_timeout) for s in subs)),
                                           self._drain_timeout)
                except asyncio.TimeoutError:
                    # nats-py: the timeout goes to error_cb, the connection closes all the same
                    timed_out = errors.DrainTimeoutError()
                    await self._error_cb(timed_out)
                except NatsError as e:
                    await self._error_cb(errors.translate(e))
            self._draining = Client.DRAINING_PUBS
            self._impl_publish = None
            if impl.is_connected:
                try:
                    await impl.flush(self._drain_timeout)
                except NatsError as e:
                    await self._error_cb(errors.translate(e))
            self._closing = True
            await impl.close()
        finally:
            self._draining = 0
            self._impl_publish = None if self._impl is None else self._impl.publish

    async def flush(self, timeout: float = DEFAULT_FLUSH_TIMEOUT) -> None:
        """A PING/PONG round trip (nats.errors.FlushTimeoutError when no PONG in time)."""
        if timeout <= 0:
            raise errors.BadTimeoutError()
        impl = self._impl
        if impl is None or impl.is_closed:
            raise errors.ConnectionClosedError()
        try:
            await impl.flush(timeout)
        except NatsError as e:
            if e.code == "ErrTimeout":
                raise errors.FlushTimeoutError() from e
            raise errors.translate(e) from e

    async def rtt(self, timeout: float = DEFAULT_FLUSH_TIMEOUT) -> float:
        """The round trip time to the server, in seconds."""
        if timeout <= 0:
            raise errors.BadTimeoutError()
        impl = self._need_impl()
        if impl.is_closed:
            raise errors.ConnectionClosedError()
        # the clock asyncio's own loop keeps; uvloop's loop.time() counts
        # whole milliseconds, so a round trip under one would read as 0.0
        start = time.monotonic()
        try:
            await impl.flush(timeout)
        except NatsError as e:
            raise errors.translate(e) from e
        return time.monotonic() - start

    # ------------------------------------------------------------ messages
    async def publish(self, subject: str, payload: bytes = b"", reply: str = "",
                      headers: Optional[Dict[str, Any]] = None) -> None:
        """Publish ``payload`` (bytes) to ``subject``; the subject is checked
        first, the engine checks the rest (closed, max_payload, buffer bounds,
        an empty subject when the check is off)."""
        if reply:
            if self._check_subjects and (not _publish_subject_ok(subject) or _BLANKS(reply)):
                raise errors.BadSubjectError()
            to: Optional[str] = reply
        else:
            # a subject checked before: nothing to look at (one set lookup)
            if subject not in _CLEAN and self._check_subjects and not _publish_subject_ok(subject):
                raise errors.BadSubjectError()
            to = None
        publish = self._impl_publish
        if publish is None:
            raise errors.ConnectionClosedError() if self._impl is None else errors.ConnectionDrainingError()
        if headers is not None:
            headers = self._headers_to_send(self._impl, payload, headers)
        try:
            await publish(subject, payload, to, headers)
        except NatsError as e:
            raise errors.translate(e) from e
        self._out_bytes += len(payload)
        if self._small_pending:
            impl = self._impl
            if impl is not None and impl.pending_data_size > self._pending_size and impl.is_connected:
                impl.write_pending()  # nats-py's forced flush past pending_size

    def _headers_to_send(self, impl, payload: bytes, headers: Dict[str, Any]) -> Dict[str, Any]:
        """``headers`` as nats-py sends them (headers_arg), looked at as
        nats-py does, last: a closed connection or a payload over
        max_payload is the error before a bad header name."""
        if impl.is_closed:
            raise errors.ConnectionClosedError()
        if len(payload) > self.max_payload:
            raise errors.MaxPayloadError()
        return headers_arg(headers)

    async def subscribe(self, subject: str, queue: str = "", cb=None, future: Optional[asyncio.Future] = None,
                        max_msgs: int = 0, pending_msgs_limit: int = DEFAULT_SUB_PENDING_MSGS_LIMIT,
                        pending_bytes_limit: int = DEFAULT_SUB_PENDING_BYTES_LIMIT) -> Subscription:
        """Subscribe; ``cb`` a coroutine function, else read with
        ``next_msg`` / ``messages``; ``future`` gets the first message."""
        if not subject or self._check_subjects and (not _subscribe_subject_ok(subject) or queue and _BLANKS(queue)):
            raise errors.BadSubjectError()
        impl = self._impl
        if impl is None or impl.is_closed:
            raise errors.ConnectionClosedError()
        if self.is_draining:
            raise errors.ConnectionDrainingError()
        if cb is not None and not (inspect.iscoroutinefunction(cb) or (
                hasattr(cb, "func") and inspect.iscoroutinefunction(cb.func))):
            raise errors.Error("nats: a subscription callback must be a coroutine function")
        make = Msg._from_impl
        impl_cb = None
        if cb is not None:
            def impl_cb(m, _cb=cb, _make=make, _nc=self):
                return _cb(_make(_nc, m))
        elif future is not None:
            def impl_cb(m, _fut=future, _make=make, _nc=self):
                if not _fut.done():
                    _fut.set_result(_make(_nc, m))
        try:
            isub = await impl.subscribe(subject, queue or None, impl_cb, max_msgs,
                                        pending_msgs_limit, pending_bytes_limit)
        except NatsError as e:
            raise errors.translate(e) from e
        sub = Subscription(self, isub, cb, future)
        isub.report_each_drop = True  # nats-py reports every dropped message
        self._all_subs[isub.sid] = sub
        return sub

    async def request(self, subject: str, payload: bytes = b"", timeout: float = 0.5, old_style: bool = False,
                      headers: Optional[Dict[str, Any]] = None) -> Msg:
        """A request; nats.errors.TimeoutError, NoRespondersError."""
        if self._check_subjects and (not subject or _BLANKS(subject)):
            raise errors.BadSubjectError()
        impl = self._impl
        if impl is None or impl.is_closed:
            raise errors.ConnectionClosedError()
        if self._draining == 6:  # DRAINING_PUBS
            raise errors.ConnectionDrainingError()
        if headers is not None:
            headers = self._headers_to_send(impl, payload, headers)
        try:
            if old_style:
                msgs = await impl.request_many(subject, payload, 1, timeout, headers)
                m = msgs[0]
            else:
                m = await impl.request(subject, payload, timeout, headers)
        except NatsError as e:
            raise errors.translate(e) from e
        return Msg._from_impl(self, m)

    # ------------------------------------------------------------ JetStream (the JetStream half)
    def jetstream(self, **opts) -> Any:
        """The JetStream context (``tclnats_py.natspy.js.JetStreamContext``)."""
        from tclnats_py.natspy.js import JetStreamContext
        return JetStreamContext(self, **opts)

    def jsm(self, **opts) -> Any:
        """The JetStream manager (``tclnats_py.natspy.js.manager.JetStreamManager``)."""
        from tclnats_py.natspy.js.manager import JetStreamManager
        return JetStreamManager(self, **opts)

    # ------------------------------------------------------------ context manager
    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


__all__ += ["headers_from_impl"]
