"""NATS over WebSocket, sans-IO: the bytes between the engine and a socket
to a nats-server ``websocket {}`` listener (``ws://`` and ``wss://`` URLs).

One :class:`WebSocket` per socket.  The engine (``connection.py``) gives it
what the socket read and takes back the NATS bytes inside the frames; it
gives it the NATS bytes to write and takes back the frames.  The framing is
``wsproto``'s (the client side of RFC 6455, with permessage-deflate); the
optional HTTP proxy's CONNECT exchange is ``h11``'s.  In order, on one
socket:

1. ``proxy`` given: ``CONNECT host:port`` to the proxy, its 2xx answer
   (:meth:`start_tunnel`; anything else is ErrConnectionRefused);
2. for ``wss://`` the driver's TLS handshake (the engine's ``StartTls``,
   the same options and name check as ``tls://``);
3. the HTTP upgrade request (:meth:`start_upgrade`: the URL's path, the
   user's extra headers, the offer of permessage-deflate) and the server's
   101 answer; a refusal, a wrong path, a server that does not speak
   HTTP are ErrWebSocket with what the server said;
4. frames: binary frames in both directions, the server's pings answered,
   its close frame reported (:attr:`closed`), a frame past ``max_frame``
   bytes refused (ErrWebSocket).

Once open without an extension (nats-server's default: no compression),
the data frames go through the compiled codec instead (``WsReader`` and
``ws_frame`` of ``tclnats_py._natsproto``, natscodec.c), as the protocol
parser's accelerator: it unframes the server's binary, text and
continuation frames and stops at a control frame, which wsproto reads,
and at a bad one (ErrWebSocket); it frames the client's data masked with
keys from os.urandom.  ``TCLNATS_PY_ACCEL=0`` (or a build without it)
keeps wsproto for everything; permessage-deflate always does.

Nothing here touches a socket; ``wsproto`` and ``h11`` are imported when
the first WebSocket server is tried, so a TCP-only program never loads them.
"""

from __future__ import annotations

from tclnats_py.engine.pool import WS_SCHEMES
from tclnats_py.engine.protocol import compiled
from tclnats_py.errors import NatsError, make_error

TYPE_CHECKING = False  # typing costs ~10 ms of every start
if TYPE_CHECKING:
    from typing import Any

__all__ = ["WebSocket", "WS_SCHEMES", "MAX_FRAME", "parse_proxy"]

# the largest frame taken from a server (bytes): nats-server frames what it
# has buffered for the client, far below this
MAX_FRAME = 64 * 1024 * 1024

# the compiled data frames (None: wsproto's)
_WsReader = compiled("WsReader")
_ws_frame = compiled("ws_frame")
# what WsReader.feed stopped at
_CONTROL, _TOO_BIG = 1, 2

# the adapter's phases
_TUNNEL, _TLS, _UPGRADE, _OPEN, _CLOSED = "tunnel", "tls", "upgrade", "open", "closed"


def parse_proxy(url: str) -> tuple[str, int]:
    """``http://host:port`` (or ``host:port``) of an HTTP CONNECT proxy ->
    (host, port); the port defaults to 80.  ErrInvalidArg otherwise."""
    text = str(url).strip()
    rest = text[7:] if text.lower().startswith("http://") else text
    rest = rest.rstrip("/")
    if "://" in rest or "/" in rest or "@" in rest or not rest:
        raise make_error("ErrInvalidArg", f"Invalid proxy URL {url} (http://host:port)")
    host, sep, port = rest.rpartition(":")
    if not sep or "]" in port:
        host, port = rest, "80"
    if host.startswith("["):
        host = host[1:-1]
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise make_error("ErrInvalidArg", f"Invalid proxy URL {url} (http://host:port)")
    return host, int(port)


class WebSocket:
    """The client side of one WebSocket connection (see the module
    docstring).  ``where`` names the server in errors (``host:port``)."""

    def __init__(self, host: str, port: int, path: str = "/", headers=(), compression: bool = True,
                 proxy: str = "", max_frame: int = MAX_FRAME, where: str = "?",
                 accelerated: bool | None = None) -> None:
        from wsproto import ConnectionType, WSConnection
        from wsproto import events as E
        from wsproto.frame_protocol import Opcode, ParseFailed
        from wsproto.utilities import LocalProtocolError, RemoteProtocolError
        self._conn = WSConnection(ConnectionType.CLIENT)
        self._E = E
        self._errors = (RemoteProtocolError, LocalProtocolError, ParseFailed)
        self._data_ops = (Opcode.BINARY, Opcode.CONTINUATION, Opcode.TEXT)
        self._ping, self._close = Opcode.PING, Opcode.CLOSE
        self._proto: Any = None         # wsproto's FrameProtocol once open: the data path
        # the compiled data path (accelerated=False: wsproto's; True: required)
        if accelerated and _WsReader is None:
            raise ImportError("tclnats_py._natsproto is not available")
        self._accel: Any = _WsReader if accelerated is not False else None
        self._reader: Any = None        # its WsReader once open without an extension
        self._tail = b""                # the last bytes of the upgrade's answer (its end is looked for)
        self.host = host
        self.port = port
        self.path = path or "/"
        self.headers = tuple(headers)
        self.compression = compression
        self.proxy = parse_proxy(proxy) if proxy else None
        self.max_frame = max_frame
        self.where = where
        self.phase = _TUNNEL if self.proxy else _TLS
        self.out = bytearray()          # bytes for the wire: HTTP, control frames, data frames
        self.closed: NatsError | None = None   # the server's close frame, as the error it ends with
        self._frame = 0                 # bytes of the frame being received so far
        self._tunnel: Any = None        # the h11 client of the proxy's CONNECT
        self._closing = False           # close(): a close frame after the next data
        self.extensions: tuple = ()     # what the server's 101 accepted (permessage-deflate)
        self._head: bytes | None = b""  # the answer's first bytes, until they read HTTP/

    # ------------------------------------------------------------------ the HTTP part
    def start_tunnel(self) -> None:
        """Queue the proxy's ``CONNECT host:port`` request."""
        import h11
        self._tunnel = h11.Connection(h11.CLIENT)
        target = f"{self.host}:{self.port}" if ":" not in self.host else f"[{self.host}]:{self.port}"
        self.out += self._tunnel.send(h11.Request(method="CONNECT", target=target,
                                                  headers=[("Host", target)]))

    def start_upgrade(self) -> None:
        """Queue the HTTP upgrade request (after the tunnel and TLS)."""
        from wsproto.events import Request
        from wsproto.extensions import PerMessageDeflate
        host = self.host if ":" not in self.host else f"[{self.host}]"
        if self.port not in (80, 443):
            host = f"{host}:{self.port}"
        extensions = [PerMessageDeflate()] if self.compression else []
        extra = [(str(k).encode(), str(v).encode()) for k, v in self.headers]
        self.phase = _UPGRADE
        self.out += self._conn.send(Request(host=host, target=self.path, extensions=extensions,
                                            extra_headers=extra))

    def _tunnel_answer(self, data: bytes) -> bytes:
        """Read the proxy's answer to CONNECT; the bytes after it, if any."""
        import h11
        t = self._tunnel
        assert t is not None
        t.receive_data(data)
        try:
            event = t.next_event()
        except h11.RemoteProtocolError as e:
            raise make_error("ErrConnectionRefused", f"Proxy {self._proxy_name()} did not answer CONNECT "
                             f"to {self.where} in HTTP: {e}") from None
        if event is h11.NEED_DATA:
            return b""
        if not isinstance(event, h11.Response) or not 200 <= event.status_code < 300:
            status = getattr(event, "status_code", "?")
            reason = getattr(event, "reason", b"").decode("latin-1")
            raise make_error("ErrConnectionRefused", f"Proxy {self._proxy_name()} refused CONNECT to "
                             f"{self.where}: {status} {reason}".rstrip())
        self.phase = _TLS
        return t.trailing_data[0]

    def _proxy_name(self) -> str:
        assert self.proxy is not None
        return f"{self.proxy[0]}:{self.proxy[1]}"

    @property
    def tunnel_open(self) -> bool:
        """The proxy's tunnel is up, and TLS or the upgrade are next."""
        return self.phase == _TLS

    @property
    def upgraded(self) -> bool:
        return self.phase == _OPEN

    @property
    def plain(self) -> bool:
        """Open, and the data frames are the compiled codec's (no extension)."""
        return self._reader is not None and self.phase == _OPEN

    # ------------------------------------------------------------------ bytes in
    def receive(self, data: bytes) -> bytes:
        """The NATS bytes in ``data`` (what the socket read).  Raises
        ErrWebSocket (a refused upgrade, a bad frame, one past max_frame) or
        ErrConnectionRefused (the proxy refused); a close frame from the
        server sets :attr:`closed` and ends the bytes."""
        if self.phase == _TUNNEL:
            data = self._tunnel_answer(data)
            if not data:
                return b""
        if self.phase == _UPGRADE and self._head is not None:
            self._check_http(data)
        try:
            if self._reader is not None and self.phase == _OPEN:
                got = self._reader.feed(data)
                return got if got.__class__ is bytes else self._stopped(got)
            if self._proto is not None and self.phase == _OPEN:
                return self._frames(data)
            rest = b""
            if self.phase == _UPGRADE and self._accel is not None:
                data, rest = self._split_answer(data)
            self._conn.receive_data(data)
            got = self._events()
            if rest:  # the frames after the 101
                return got + self.receive(rest)
            return got
        except self._errors as e:
            upgrading = self.phase == _UPGRADE
            self.phase = _CLOSED
            if upgrading:
                raise self._bad_upgrade(str(e)) from None
            raise make_error("ErrWebSocket", f"Bad WebSocket data from {self.where}: {e}") from None

    def _split_answer(self, data: bytes) -> tuple[bytes, bytes]:
        """(the upgrade answer's bytes in ``data``, the bytes after its
        head): the frames after it are the compiled reader's, not wsproto's."""
        seen = self._tail + data
        end = seen.find(b"\r\n\r\n")
        if end < 0:
            self._tail = seen[-3:]
            return data, b""
        cut = end + 4 - len(self._tail)
        self._tail = b""
        return data[:cut], data[cut:]

    def _stopped(self, got) -> bytes:
        """The compiled reader's results from where it stopped: a control
        frame (read by wsproto: a ping answered, a close frame ends), a frame
        past max_frame or a bad frame (ErrWebSocket)."""
        parts = []
        while got.__class__ is not bytes:
            payload, kind, info = got
            parts.append(payload)
            if kind != _CONTROL:
                raise self.refused("" if kind == _TOO_BIG else info)
            if self._proto is not None:  # as on wsproto's own data path
                self._frames(info)
            else:
                self._conn.receive_data(info)
                self._events()
            if self.phase != _OPEN:
                return b"".join(parts)
            got = self._reader.feed(b"")
        parts.append(got)
        return b"".join(parts)

    def refused(self, why: str) -> NatsError:
        """The error a bad frame ends the WebSocket with (``why``: what the
        codec found; empty for a frame past max_frame)."""
        self.phase = _CLOSED
        if not why:
            return make_error("ErrWebSocket", f"WebSocket frame from {self.where} is larger than "
                              f"{self.max_frame} bytes")
        return make_error("ErrWebSocket", f"Bad WebSocket data from {self.where}: {why}")

    def hand_over(self) -> tuple | None:
        """For a driver's C reader that unframes from now on (the Tcl
        face's): (max_frame, the bytes not unframed yet, the payload bytes of
        the current frame still to come, whether a fragmented message is open);
        receive() gets the control frames it stops at afterwards.  None when
        the compiled data path is not in use."""
        reader = self._reader
        if reader is None or self.phase != _OPEN:
            return None
        self._reader = self._accel(self.max_frame)
        return (self.max_frame, *reader.state())

    def _frames(self, data: bytes) -> bytes:
        """The open WebSocket's bytes read through wsproto's frame protocol
        itself (its parser, unmasking and permessage-deflate): the data
        frames' content; pings answered, a close frame ends."""
        proto = self._proto
        proto.receive_bytes(data)
        parts = []
        data_ops = self._data_ops
        for frame in proto.received_frames():
            op = frame.opcode
            if op in data_ops:
                payload = frame.payload if op is not data_ops[2] else frame.payload.encode()
                self._frame += len(payload)
                if self._frame > self.max_frame or (not frame.frame_finished and self._claimed() > self.max_frame):
                    self.phase = _CLOSED
                    raise make_error("ErrWebSocket", f"WebSocket frame from {self.where} is larger than "
                                     f"{self.max_frame} bytes")
                if frame.frame_finished:
                    self._frame = 0
                parts.append(payload)
            elif op is self._ping:
                self.out += proto.pong(frame.payload)
            elif op is self._close:
                code, reason = frame.payload
                self.out += proto.close(code)
                self._closed_by_server(code, reason)
                break
        return b"".join(parts) if len(parts) != 1 else parts[0]

    def _events(self) -> bytes:
        E = self._E
        parts = []
        ev: Any
        for ev in self._conn.events():
            cls = ev.__class__
            if cls is E.BytesMessage or cls is E.TextMessage:
                data = ev.data if cls is E.BytesMessage else ev.data.encode()
                self._frame += len(data)
                if self._frame > self.max_frame or (not ev.frame_finished and self._claimed() > self.max_frame):
                    self.phase = _CLOSED
                    raise make_error("ErrWebSocket", f"WebSocket frame from {self.where} is larger than "
                                     f"{self.max_frame} bytes")
                if ev.frame_finished:
                    self._frame = 0
                parts.append(data)
            elif cls is E.Ping:
                self.out += self._conn.send(ev.response())
            elif cls is E.AcceptConnection:
                self.phase = _OPEN
                self.extensions = tuple(x.name for x in ev.extensions)
                if not self.extensions and self._accel is not None:
                    self._reader = self._accel(self.max_frame)
                # the frames from now on: wsproto's frame protocol, without its event layer
                self._proto = getattr(self._conn.connection, "_proto", None)
            elif cls is E.RejectConnection:
                self.phase = _CLOSED
                raise self._bad_upgrade(f"HTTP {ev.status_code}")
            elif cls is E.CloseConnection:
                self._on_close(ev)
                break
            elif cls is not E.Pong and cls is not E.RejectData:
                raise make_error("ErrWebSocket", f"Unexpected WebSocket event from {self.where}: {ev!r}")
        return b"".join(parts) if len(parts) != 1 else parts[0]

    def _claimed(self) -> int:
        """The length the frame being received claims in its header (read
        from wsproto's frame decoder; 0 where a wsproto does not show it):
        a frame too large is refused at its first bytes."""
        proto = getattr(self._conn.connection, "_proto", None)
        header = getattr(getattr(proto, "_frame_decoder", None), "header", None)
        return getattr(header, "payload_len", 0) or 0

    def _on_close(self, ev) -> None:
        if self.phase == _OPEN:
            from wsproto.connection import ConnectionState
            if self._conn.state is ConnectionState.REMOTE_CLOSING:
                self.out += self._conn.send(ev.response())
        self._closed_by_server(ev.code, ev.reason)

    def _closed_by_server(self, code, reason) -> None:
        reason = f" {reason}" if reason else ""
        code = int(code)
        self.phase = _CLOSED
        self.closed = make_error("ErrBrokenSocket", f"Server {self.where} closed the WebSocket "
                                 f"(code {code}{reason})")

    def _check_http(self, data: bytes) -> None:
        """The answer to the upgrade must be HTTP: a NATS port's INFO (or
        any other protocol) fails at its first bytes, not at a timeout."""
        head = (self._head or b"") + data[:5]
        if not b"HTTP/".startswith(head[:5]):
            self.phase = _CLOSED
            shown = ((self._head or b"") + data)[:16].decode("latin-1")
            raise self._bad_upgrade(f"it answered {shown!r}, not HTTP")
        self._head = head if len(head) < 5 else None

    def _bad_upgrade(self, why: str) -> NatsError:
        return make_error("ErrWebSocket", f"Server {self.where} refused the WebSocket upgrade of {self.path} "
                          f"({why}): is it a nats-server websocket listener, and the path right?")

    # ------------------------------------------------------------------ bytes out
    @property
    def pending(self) -> bool:
        """Whether bytes of the WebSocket's own wait for the wire."""
        return bool(self.out) or self._closing

    def wrap(self, data: bytes) -> bytes:
        """What to write for the NATS bytes ``data``: the pending HTTP and
        control bytes, ``data`` in one binary frame, then the close frame
        when :meth:`close` asked for one."""
        out = self.out
        if data:
            if self.phase != _OPEN:
                raise make_error("ErrWebSocket", f"NATS data for {self.where} before the WebSocket is open")
            proto = self._proto
            if self._reader is not None:
                framed = _ws_frame(data)
            elif proto is not None:
                framed = bytes(proto.send_data(data))
            else:
                framed = self._conn.send(self._E.Message(data=data))
            if not out and not self._closing:
                return framed
            out += framed
        if self._closing:
            self._closing = False
            if self.phase == _OPEN:
                out += self._conn.send(self._E.CloseConnection(code=1000))
                self.phase = _CLOSED
        self.out = bytearray()
        return bytes(out)

    def close(self) -> None:
        """Ask for a close frame (a disconnect): it follows the data the
        next :meth:`wrap` frames."""
        self._closing = self.phase == _OPEN
