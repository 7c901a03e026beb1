"""What the engine hands its driver: the effects (:meth:`Outbound.take`) and
the bytes to write (:meth:`Outbound.data_to_send`), with the bounds of the
outbound buffer.

Two queues of bytes.  User traffic (PUB/HPUB, SUB, UNSUB, PING, PONG once
connected) waits in ``_out`` and reaches the wire only while connected: that
is also the reconnect buffer, bounded by ``reconnect_buf_size`` while not
connected (ErrReconnectBufExceeded).  The handshake's own bytes (CONNECT,
its PING, PONGs before connected, and at a disconnect what ``_out`` still
held) wait in ``_hs_out`` and go first, in any phase.  ``Flush`` tells the
driver bytes are waiting, once per write.

The bounds are the engine's rules, the waiting is the driver's:
:meth:`Outbound.write_pressure` says from the queue plus what the driver's
socket layer holds whether a writer must wait (past ``write_buf_size``) or,
unable to wait, fail (:meth:`Outbound.check_outbound`, past
:attr:`Outbound.hard_cap`).

:class:`Outbound` is the first part of :class:`~tclnats_py.engine.connection.Engine`
(which inherits it, through ``registry.Registry``): one object, so that the
hot paths (publish, and a driver's fast path that appends a framed PUB to
``_out``) read plain attributes.  It also holds the plumbing every part
uses: the effects list ``_fx``, the status, the last error and the stats.
"""

from __future__ import annotations

import collections

from tclnats_py.engine import protocol as P
from tclnats_py.engine.effects import FLUSH, ErrorChanged, Log, StatusChanged
from tclnats_py.engine.headers import encode_headers
from tclnats_py.engine.options import Options
from tclnats_py.engine.state import CLOSED, CONNECTED
from tclnats_py.engine.subjects import valid_queue, valid_subject, valid_wildcard_subject
from tclnats_py.errors import NatsError, make_error

__all__ = ["Outbound", "HARD_CAP_FACTOR"]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tclnats_py.engine.websocket import WebSocket

# a publisher that cannot wait for the socket fails past this many times write_buf_size
HARD_CAP_FACTOR = 8


class Outbound:
    """The effects and the outbound buffer of one connection (see the module
    docstring); the Engine's first part."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.status = CLOSED
        self.last_error: NatsError | None = None
        self.server_info: dict = {}
        self.stats = {"in_msgs": 0, "out_msgs": 0, "in_bytes": 0, "out_bytes": 0, "reconnects": 0}
        self._fx: list = []
        self._out: collections.deque = collections.deque()  # user traffic; written only when connected
        self._out_size = 0
        self._hs_out: list[bytes] = []   # handshake traffic, bypasses _out
        self._flush_signalled = False
        self._ws: WebSocket | None = None  # a WebSocket server's adapter (websocket.py), per socket

    # ------------------------------------------------------------------ effects
    def take(self, writing: bool = False) -> list:
        """Return and clear the effects produced so far.  ``writing``: the
        caller writes ``data_to_send()`` itself right after carrying them out
        (a synchronous request), so no ``Flush`` is handed over for it."""
        fx = self._fx
        if fx:
            self._fx = []
            if writing:
                fx = [] if fx[0] is FLUSH and len(fx) == 1 else [f for f in fx if f is not FLUSH]
        return fx

    @property
    def has_effects(self) -> bool:
        """Whether :meth:`take` has effects to hand over."""
        return bool(self._fx)

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

    # ------------------------------------------------------------------ checks
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

    # ------------------------------------------------------------------ publish
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

    def _queue(self, data: bytes) -> None:
        """Queue user traffic; it reaches the wire only while connected."""
        self._out.append(data)
        self._out_size += len(data)
        if self.status == CONNECTED:
            self._signal_flush()

    def _send_now(self, data: bytes) -> None:
        """Queue handshake traffic: it goes out before ``_out``, in any phase."""
        self._hs_out.append(data)
        self._signal_flush()

    # ------------------------------------------------------------------ the queue
    @property
    def want_write(self) -> bool:
        return bool(self._hs_out) or (self.status == CONNECTED and bool(self._out)) or (
            self._ws is not None and self._ws.pending)

    @property
    def pending_chunks(self) -> int:
        """How many protocol commands wait to be written (nats-tcl's outBuffer)."""
        return len(self._out)

    @property
    def pending_bytes(self) -> int:
        return self._out_size

    def pending_commands(self) -> list:
        """The protocol commands waiting to be written, oldest first (a copy)."""
        return list(self._out)

    def data_to_send(self, limit: int | None = None) -> bytes:
        """What may be written now; the engine forgets it (at-most-once).
        Over a WebSocket: in frames, after the WebSocket's own bytes.

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
        ws = self._ws
        if not parts:
            return b"" if ws is None else ws.wrap(b"")
        data = b"".join(parts) if len(parts) > 1 else parts[0]
        self.stats["out_bytes"] += len(data)
        return data if ws is None else ws.wrap(data)

    def _restore_first(self, commands: list[bytes]) -> None:
        """Put ``commands`` ahead of everything queued (a new connection's
        SUBs before what was published meanwhile)."""
        if commands:
            self._out.extendleft(reversed(commands))
            self._out_size += sum(len(c) for c in commands)

    def _hand_over_queue(self) -> None:
        """A disconnect: what is queued goes out (when connected) ahead of
        the close, as handshake traffic; the queue is empty after."""
        if self.status == CONNECTED and self._out:
            self._hs_out.extend(self._out)   # the driver writes these before closing
        self._out = collections.deque()
        self._out_size = 0

    def _discard_queue(self, reason: str | None) -> None:
        """The connection is closed for good: forget what is queued (saying
        how many messages were lost, with a ``reason``)."""
        if reason:
            npub = sum(1 for c in self._out if c[:3] == b"PUB" or c[:4] == b"HPUB")
            if npub:
                self._log("warn", f"Discarded {npub} buffered messages")
        self._out.clear()
        self._out_size = 0
        self._flush_signalled = False

    # ------------------------------------------------------------------ bounds
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
