"""engine/websocket.py and the Engine over it, server-free: the client's
bytes read by wsproto's server side (the other end of a WebSocket, as h11's
tests pair two connections), the server's bytes made by it; the proxy's
CONNECT answer written out; bad answers and frames are clear errors."""

import json

import pytest
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, BytesMessage, CloseConnection, Message, Ping, Pong, \
    RejectConnection, Request
from wsproto.extensions import PerMessageDeflate

from tclnats_py.engine.pool import parse_url
from tclnats_py.engine.websocket import WebSocket, parse_proxy
from tclnats_py.errors import NatsError
from tests.fake_driver import info_line, make

pytestmark = [pytest.mark.unit, pytest.mark.feature("websocket")]


class Server:
    """wsproto's server side: reads what the client wrote, answers."""

    def __init__(self, compress=False):
        self.ws = WSConnection(ConnectionType.SERVER)
        self.compress = compress
        self.request = None
        self.nats = b""
        self.events = []

    def read(self, data: bytes) -> bytes:
        """Take the client's bytes; return the answer (101 to a request)."""
        self.ws.receive_data(data)
        out = b""
        for ev in self.ws.events():
            if isinstance(ev, Request):
                self.request = ev
                ext = [PerMessageDeflate()] if self.compress and ev.extensions else []
                out += self.ws.send(AcceptConnection(extensions=ext))
            elif isinstance(ev, BytesMessage):
                self.nats += ev.data
            else:
                self.events.append(ev)
        return out

    def send(self, event) -> bytes:
        return self.ws.send(event)


def opened(ws: WebSocket, server: Server) -> bytes:
    ws.start_upgrade()
    answer = server.read(ws.wrap(b""))
    return ws.receive(answer)


def test_ws_urls_parse_with_http_ports_and_a_path():
    s = parse_url("ws://h")
    assert (s.scheme, s.host, s.port, s.path) == ("ws", "h", 80, "/")
    s = parse_url("wss://u:p@h/nats/ws")
    assert (s.scheme, s.port, s.path, s.user) == ("wss", 443, "/nats/ws", "u")
    assert parse_url("WS://[::1]:8080").port == 8080
    with pytest.raises(NatsError):
        parse_url("nats://h/path")  # a path only for WebSocket URLs


def test_proxy_urls():
    assert parse_proxy("http://proxy:3128") == ("proxy", 3128)
    assert parse_proxy("proxy") == ("proxy", 80)
    for bad in ("https://p:1", "http://p:0", "http://u@p:1", "http://p:1/x", ""):
        with pytest.raises(NatsError) as e:
            parse_proxy(bad)
        assert e.value.code == "ErrInvalidArg"


def test_the_upgrade_request_then_frames_both_ways():
    ws = WebSocket("h", 8080, "/nats", headers=[("Authorization", "Bearer x")], where="h:8080")
    server = Server(compress=True)
    assert opened(ws, server) == b""
    assert ws.upgraded and ws.extensions == ("permessage-deflate",)
    req = server.request
    assert (req.host, req.target) == ("h:8080", "/nats")
    assert (b"authorization", b"Bearer x") in [(k.lower(), v) for k, v in req.extra_headers]
    # NATS bytes out: one binary frame (compressed, masked)
    server.read(ws.wrap(b"PUB a 2\r\nhi\r\n"))
    assert server.nats == b"PUB a 2\r\nhi\r\n"
    # frames in, split anywhere: the NATS bytes in order
    wire = server.send(Message(data=b"MSG a 1 2\r\nhi\r\n")) + server.send(Message(data=b"PING\r\n"))
    got = b"".join(ws.receive(wire[i:i + 3]) for i in range(0, len(wire), 3))
    assert got == b"MSG a 1 2\r\nhi\r\nPING\r\n"


def test_pings_are_answered_and_a_close_frame_ends_with_err_broken_socket():
    ws = WebSocket("h", 80, where="h:80")
    server = Server()
    opened(ws, server)
    assert ws.receive(server.send(Ping(payload=b"p1"))) == b""
    assert ws.pending
    server.read(ws.wrap(b""))
    assert server.events == [Pong(payload=b"p1")]
    data = server.send(Message(data=b"+OK\r\n")) + server.send(CloseConnection(code=1001, reason="Server Shutdown"))
    assert ws.receive(data) == b"+OK\r\n"
    assert ws.closed.code == "ErrBrokenSocket" and "1001 Server Shutdown" in str(ws.closed)


def test_a_disconnect_sends_the_data_then_a_close_frame():
    ws = WebSocket("h", 80)
    server = Server()
    opened(ws, server)
    ws.close()
    server.read(ws.wrap(b"UNSUB 1\r\n"))
    assert server.nats == b"UNSUB 1\r\n" and server.events[0].code == 1000


@pytest.mark.parametrize("answer,why", [
    (b'INFO {"server_id":"x"}\r\n', "answered 'I', not HTTP"),
    (b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", "HTTP 404"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "HTTP 200"),
    (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
     b"Sec-WebSocket-Accept: bad\r\n\r\n", "Bad accept token"),
])
def test_a_refused_upgrade_is_err_websocket(answer, why):
    ws = WebSocket("h", 4222, "/wrong", where="h:4222")
    ws.start_upgrade()
    ws.wrap(b"")
    with pytest.raises(NatsError) as e:
        for i in range(len(answer)):  # byte by byte: refused as soon as it can tell
            ws.receive(answer[i:i + 1])
    assert e.value.code == "ErrWebSocket"
    assert why in str(e.value) and "/wrong" in str(e.value) and "h:4222" in str(e.value)


def test_an_oversize_frame_is_refused():
    ws = WebSocket("h", 80, max_frame=1000)
    server = Server()
    opened(ws, server)
    assert ws.receive(server.send(Message(data=b"x" * 1000))) == b"x" * 1000
    frame = server.send(Message(data=b"y" * 1001))
    with pytest.raises(NatsError) as e:
        ws.receive(frame[:600])
        ws.receive(frame[600:])
    assert e.value.code == "ErrWebSocket" and "larger than 1000 bytes" in str(e.value)
    # a header claiming 2**40 bytes: refused at the first bytes of its payload
    ws = WebSocket("h", 80)
    opened(ws, Server())
    with pytest.raises(NatsError) as e:
        ws.receive(bytes([0x82, 127]) + (2 ** 40).to_bytes(8, "big") + b"+OK\r\n")
    assert e.value.code == "ErrWebSocket"


def test_the_proxy_tunnel_comes_first():
    ws = WebSocket("nats.example", 443, proxy="http://proxy:3128", where="nats.example:443")
    assert ws.proxy == ("proxy", 3128) and ws.phase == "tunnel"
    ws.start_tunnel()
    out = ws.wrap(b"")
    assert out.startswith(b"CONNECT nats.example:443 HTTP/1.1\r\n") and b"host: nats.example:443" in out.lower()
    assert ws.receive(b"HTTP/1.1 200 Connection established\r\n\r\n") == b""
    assert ws.tunnel_open
    refused = WebSocket("n", 80, proxy="p:1", where="n:80")
    refused.start_tunnel()
    with pytest.raises(NatsError) as e:
        refused.receive(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
    assert e.value.code == "ErrConnectionRefused" and "407" in str(e.value)


def test_the_engine_over_a_websocket():
    """Open, the upgrade, INFO/CONNECT/PONG in frames, a publish framed,
    connect_urls discovered as ws:// servers, a disconnect's close frame."""
    e, d = make(["ws://h1:8080/nats"], ws_compression=False)
    e.connect()
    d.pump()
    assert e.open_address(d.opened[-1]) == ("h1", 8080)
    e.socket_connected()
    server = Server()
    d.feed(server.read(d.take_wire()))
    assert e._phase == "WAIT_INFO" and server.request.target == "/nats"
    d.feed(server.send(Message(data=info_line(connect_urls=["h2:8081"]))))
    server.read(d.take_wire())
    line, _, rest = server.nats.partition(b"\r\n")
    assert json.loads(line[8:])["lang"] == "python" and rest == b"PING\r\n"
    d.feed(server.send(Message(data=b"PONG\r\n")))
    assert e.status == "connected"
    assert [(s.scheme, s.host, s.port) for s in e.pool.servers] == [("ws", "h2", 8081), ("ws", "h1", 8080)]
    server.nats = b""
    e.publish("a", b"hi")
    server.read(d.take_wire())
    assert server.nats.split() == [b"PUB", b"a", b"2", b"hi"]
    e.disconnect()
    server.read(d.take_wire())
    assert isinstance(server.events[-1], CloseConnection) and server.events[-1].code == 1000


def test_the_engine_fails_over_on_a_non_websocket_answer():
    e, d = make(["ws://h1:4222", "nats://h2:4222"], reconnect_time_wait=0)
    e.connect()
    d.pump()
    e.socket_connected()
    d.take_wire()
    d.feed(info_line())
    assert "ErrWebSocket" in d.errors() and d.opened[-1].host == "h2"
    e2, d2 = make(["ws://h1:4222"])
    e2.connect()
    d2.pump()
    e2.socket_connected()
    d2.take_wire()
    e2.connection_lost(None)
    d2.pump()
    assert d2.errors() == ["ErrWebSocket"] and e2.status == "closed"


def test_ws_through_a_proxy_opens_the_proxy():
    e, d = make(["wss://nats.example"], proxy="http://proxy:3128")
    e.connect()
    d.pump()
    assert e.open_address(d.opened[-1]) == ("proxy", 3128)
    e.socket_connected()
    assert d.take_wire().startswith(b"CONNECT nats.example:443 ")
    d.feed(b"HTTP/1.1 200 OK\r\n\r\n")
    assert e._phase == "TLS"  # wss: TLS inside the tunnel, then the upgrade
    e.tls_done()
    assert d.take_wire().startswith(b"GET / HTTP/1.1\r\n")


def test_unwrap_for_a_raw_reader_then_the_rest_unframed():
    e, d = make(["ws://h1:8080"], ws_compression=False)
    e.connect()
    d.pump()
    e.socket_connected()
    server = Server()
    d.feed(server.read(d.take_wire()))
    d.feed(server.send(Message(data=info_line())))
    server.read(d.take_wire())
    d.feed(server.send(Message(data=b"PONG\r\n")))
    assert e.status == "connected"
    wire = server.send(Message(data=b"MSG a 1 2\r\nhi\r\nPI")) + server.send(Ping(payload=b"x"))
    assert e.unwrap(wire) == b"MSG a 1 2\r\nhi\r\nPI"
    server.read(d.take_wire())
    assert server.events[-1] == Pong(payload=b"x")
    e.receive_data(b"PING\r\n", framed=False)  # what the raw reader left to the engine: answered
    server.read(d.take_wire())
    assert server.nats.endswith(b"PONG\r\n")
    tcp, _ = make(["nats://h1:4222"])
    assert tcp.unwrap(b"+OK\r\n") == b"+OK\r\n"
