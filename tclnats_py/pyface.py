"""What the Python faces share about a connection: ``connect``'s options
applied to an engine, a client's and a subscription's read-only state.

The asyncio client (:class:`tclnats_py.aio.client.Client`) and the blocking
one (:class:`tclnats_py.sync.client.Client`) both derive from
:class:`ClientState`.  It owns no I/O: a face keeps its engine in ``_engine``,
says in :meth:`ClientState._driver_option` what to do with the options that
concern its own driver, and in ``_state_lock`` what guards the engine while
a property reads it (the blocking face's lock; nothing for asyncio, whose
loop is the only thread that touches the engine).
"""

from __future__ import annotations

import contextlib
import ssl
from typing import TYPE_CHECKING, Any, ContextManager, Mapping, Sequence

from tclnats_py.engine.connection import CLOSED, CONNECTED, RECONNECTING

if TYPE_CHECKING:
    from tclnats_py.engine.connection import Engine, Subscription as EngineSubscription
    from tclnats_py.engine.options import Options
    from tclnats_py.errors import NatsError

__all__ = ["ClientState", "SubscriptionState"]

_NO_LOCK: ContextManager[Any] = contextlib.nullcontext()


class ClientState:
    """The part of a Python client that reads and configures its engine."""

    _engine: Engine
    _state_lock: ContextManager[Any] = _NO_LOCK

    def _init_options(self) -> None:
        """The driver-side options' defaults (before ``_configure``)."""
        self._error_cb: Any = None
        self._status_cb: Any = None
        self._disconnected_cb: Any = None
        self._reconnected_cb: Any = None
        self._closed_cb: Any = None
        self._discovered_server_cb: Any = None
        self._lame_duck_mode_cb: Any = None
        self._signature_cb: Any = None
        self._user_jwt_cb: Any = None
        self._drain_timeout = 10.0
        self._tls: ssl.SSLContext | None = None
        self._tls_opts: dict[str, Any] = {"tls_ca": None, "tls_cert": None, "tls_key": None, "tls_hostname": None,
                                          "tls_verify": True}
        self._ssl_ctx: ssl.SSLContext | None = None
        self._known_servers: set = set()
        self._ldm = False
        self._prev_status = CLOSED

    def _configure(self, servers: str | Sequence[str] | None, options: Mapping[str, Any]) -> None:
        """Apply ``connect``'s keyword arguments (see tclnats_py.aio.options):
        everything is checked before anything is applied."""
        from tclnats_py.aio.options import seconds_delay, translate  # (the package imports this module)
        eng = self._engine
        opts = dict(options)
        servers = opts.pop("servers", servers)
        engine_opts, driver = translate(opts)
        if engine_opts:
            eng.options.update(engine_opts)  # checks (raises) before it assigns
        for k, v in driver.items():
            if self._driver_option(k, v):
                continue
            if k == "reconnect_delay":
                eng.reconnect_delay = None if v is None else seconds_delay(v)
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

    def _driver_option(self, key: str, value: Any) -> bool:
        """Take a driver option the face handles itself; True when it did."""
        return False

    def _jwt_auth(self, nonce: str | None) -> dict:
        """CONNECT's jwt and sig from user_jwt_cb and signature_cb (nats-py's pair)."""
        jwt = self._user_jwt_cb()
        p = {"jwt": jwt.decode() if isinstance(jwt, (bytes, bytearray)) else str(jwt)}
        if nonce:
            sig = self._signature_cb(nonce)
            p["sig"] = sig.decode() if isinstance(sig, (bytes, bytearray)) else str(sig)
        return p

    def _ssl_context(self) -> ssl.SSLContext:
        """The ``tls`` option's context, else one made from the tls_* options (once)."""
        if self._tls is not None:
            return self._tls
        if self._ssl_ctx is None:
            from tclnats_py.aio.options import tls_context
            self._ssl_ctx = tls_context(self._tls_opts)
        return self._ssl_ctx

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
        with self._state_lock:
            return [s.as_dict() for s in self._engine.pool.servers]

    @property
    def stats(self) -> dict[str, int]:
        with self._state_lock:
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
        with self._state_lock:
            return self._engine.new_inbox()

    # ------------------------------------------------------------ the user's hooks
    def _status_hooks(self, status: str) -> list[tuple[Any, tuple]]:
        """The hooks a new status calls, in order, as (hook, args): status_cb,
        disconnected_cb, reconnected_cb, closed_cb (nats-py's meanings)."""
        prev, self._prev_status = self._prev_status, status
        out: list[tuple[Any, tuple]] = []
        if self._status_cb is not None:
            out.append((self._status_cb, (status,)))
        if prev == CONNECTED and self._disconnected_cb is not None:
            out.append((self._disconnected_cb, ()))
        if status == CONNECTED and prev == RECONNECTING and self._reconnected_cb is not None:
            out.append((self._reconnected_cb, ()))
        if status == CLOSED and self._closed_cb is not None:
            out.append((self._closed_cb, ()))
        return out

    def _info_hooks(self, info: dict) -> list[Any]:
        """The hooks a server's INFO calls: discovered_server_cb (a server
        joined the pool, learnt from an INFO after the first) and
        lame_duck_mode_cb (the server said ``ldm``)."""
        out = []
        known = {(s.host, s.port) for s in self._engine.pool.servers}
        new = known - self._known_servers
        first = not self._known_servers
        self._known_servers |= known
        if new and not first and self._discovered_server_cb is not None:
            out.append(self._discovered_server_cb)
        if info.get("ldm") and not self._ldm and self._lame_duck_mode_cb is not None:
            out.append(self._lame_duck_mode_cb)
        self._ldm = bool(info.get("ldm"))
        return out


class SubscriptionState:
    """The part of a Python face's subscription that reads its state: the
    engine's subscription (``_engine_sub``, set by the client's subscribe)
    and the face's queue of messages not yet taken (``_pending``,
    ``_pending_bytes``; ``_closed`` once it ended)."""

    subject: str
    queue: str
    _engine_sub: EngineSubscription
    _pending: Any
    _pending_bytes: int
    _closed: bool

    def __repr__(self) -> str:
        return f"<Subscription sid={self.sid} subject={self.subject!r} queue={self.queue!r}>"

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
