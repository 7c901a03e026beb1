"""WebSocket through an HTTP CONNECT proxy, and WebSocket servers that
misbehave: a plain threaded CONNECT proxy written here (a TCP relay), an
HTTP server that knows only one path, a WebSocket server (wsproto's server
side over a socket) that closes mid-frame or sends an oversize frame.  Each
is a clear error, and nothing acknowledged is lost."""

import asyncio
import http.server
import socket
import socketserver
import threading

import pytest
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, Message, Request

import tclnats_py
from tclnats_py.testing.server import NatsServer
from tests.aio_helpers import settle

pytestmark = pytest.mark.feature("websocket")


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def in_thread(fn, *args):
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


class _Relay(socketserver.BaseRequestHandler):
    """CONNECT host:port -> 200 and a relay both ways; ``refuse``: 403."""

    def handle(self):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.request.recv(4096)
            if not chunk:
                return
            head += chunk
        line = head.split(b"\r\n", 1)[0].decode()
        self.server.requests.append(line)
        method, target, _ = line.split(" ")
        if method != "CONNECT" or self.server.refuse:
            self.request.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
            return
        host, port = target.rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)))
        self.request.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        self.server.live.append((self.request, upstream))
        t = threading.Thread(target=self._pipe, args=(upstream, self.request), daemon=True)
        t.start()
        self._pipe(self.request, upstream)
        t.join(5)

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Proxy(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Relay)
        self.requests = []
        self.live = []
        self.refuse = False
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def cut(self):
        """Break every relayed connection, as a proxy restart does."""
        live, self.live = self.live, []
        for pair in live:
            for s in pair:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self):
        self.shutdown()
        self.server_close()
        self.cut()


@pytest.fixture
def proxy():
    p = Proxy()
    yield p
    p.stop()


def test_ws_and_wss_through_a_connect_proxy(ws_server, wss_server, proxy):
    async def go():
        nc = await tclnats_py.connect(ws_server.ws_url, proxy=proxy.url)
        sub = await nc.subscribe("px")
        nc.publish("px", b"via proxy")
        assert (await sub.next_msg(5)).data == b"via proxy"
        await nc.close()
        url = wss_server.ws_url.replace("127.0.0.1", "localhost")
        tls = await tclnats_py.connect(url, proxy=proxy.url, tls_ca=wss_server.certs["ca"])
        assert (await tls.request("$JS.API.INFO", b"", timeout=5)).data
        await tls.close()
        assert proxy.requests == [f"CONNECT 127.0.0.1:{ws_server.ws_port} HTTP/1.1",
                                  f"CONNECT localhost:{wss_server.ws_port} HTTP/1.1"]
    run(go())


def test_a_proxy_that_refuses_is_err_connection_refused(ws_server, proxy):
    proxy.refuse = True

    async def go():
        errors = []
        with pytest.raises(tclnats_py.NatsError):
            await tclnats_py.connect(ws_server.ws_url, proxy=proxy.url, error_cb=errors.append)
        assert [e.code for e in errors] == ["ErrConnectionRefused"] and "403" in str(errors[0])
    run(go())


def test_acknowledged_publishes_survive_the_proxy_cutting_the_connection(ws_server, proxy):
    async def go():
        nc = await tclnats_py.connect(ws_server.ws_url, proxy=proxy.url, reconnect_time_wait=0.05,
                                      max_reconnect_attempts=-1)
        js = nc.jetstream()
        await js.create_stream("PX", subjects=["px.*"], storage="file")
        acked = []
        for i in range(200):
            if i == 100:
                proxy.cut()
            try:
                acked.append((await js.publish("px.a", b"%d" % i, timeout=2)).seq)
            except tclnats_py.NatsError:
                pass  # not acknowledged: may or may not be stored
        await settle(lambda: nc.status == "connected", 20)
        info = await js.stream_info("PX")
        assert len(acked) >= 150 and info.state.messages >= len(acked)
        for seq in acked:
            assert (await js.get_msg("PX", seq)).seq == seq
        assert len(proxy.requests) >= 2  # the reconnect went through the proxy too
        await nc.close()
    run(go())


class _OnePath(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        return


def test_a_wrong_path_and_a_nats_port_are_err_websocket(ws_server):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _OnePath)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()

    async def go():
        for url, why in ((f"ws://127.0.0.1:{httpd.server_address[1]}/wrong", "HTTP 404"),
                         (f"ws://127.0.0.1:{ws_server.port}", "not HTTP")):
            errors = []
            with pytest.raises(tclnats_py.NatsError):
                await tclnats_py.connect(url, error_cb=errors.append, connect_timeout=5)
            assert [e.code for e in errors] == ["ErrWebSocket"] and why in str(errors[0]), errors
    try:
        run(go())
    finally:
        httpd.shutdown()
        httpd.server_close()


# what BadWsServer sends once the client is connected: "mid_frame" half a
# frame, then it closes; "oversize" a frame header claiming 2**40 bytes and
# the first of them; then frames RFC 6455 forbids
MISBEHAVE = {
    "oversize": bytes([0x82, 127]) + (2 ** 40).to_bytes(8, "big") + b"+OK\r\n" * 10,
    "reserved_opcode": bytes([0x83, 5]) + b"+OK\r\n",
    "masked": bytes([0x82, 0x85, 1, 2, 3, 4]) + bytes(b ^ k for b, k in zip(b"+OK\r\n", b"\1\2\3\4\1")),
    "rsv1": bytes([0xC2, 5]) + b"+OK\r\n",
    "fragmented_ping": bytes([0x09, 0]),
    "continuation": bytes([0x80, 5]) + b"+OK\r\n",
}


class BadWsServer:
    """A WebSocket 'NATS server' that does the handshake, then ``misbehave``
    (MISBEHAVE)."""

    def __init__(self, misbehave):
        self.misbehave = misbehave
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        conn, _ = self.listener.accept()
        ws = WSConnection(ConnectionType.SERVER)
        with conn:
            stage = 0
            while stage < 2:
                data = conn.recv(65536)
                if not data:
                    return
                ws.receive_data(data)
                for ev in ws.events():
                    if isinstance(ev, Request):
                        conn.sendall(ws.send(AcceptConnection()))
                        conn.sendall(ws.send(Message(data=b'INFO {"server_id":"bad","max_payload":1048576,'
                                                          b'"headers":true,"proto":1}\r\n')))
                    elif isinstance(ev, Message) and b"PING" in ev.data:
                        conn.sendall(ws.send(Message(data=b"PONG\r\n")))
                        stage = 2
            if self.misbehave == "mid_frame":
                frame = ws.send(Message(data=b"MSG bad.s 1 5\r\nhello\r\n"))
                conn.sendall(frame[:len(frame) // 2])
            else:
                conn.sendall(MISBEHAVE[self.misbehave])


@pytest.mark.parametrize("misbehave,code", [("mid_frame", "ErrBrokenSocket")]
                         + [(name, "ErrWebSocket") for name in MISBEHAVE])
def test_a_server_that_closes_mid_frame_or_sends_an_oversize_frame(misbehave, code):
    bad = BadWsServer(misbehave)
    with NatsServer(websocket=True) as good:
        async def go():
            errors = []
            nc = await tclnats_py.connect([f"ws://127.0.0.1:{bad.port}", good.ws_url], dont_randomize=True,
                                          reconnect_time_wait=0.05, error_cb=errors.append)
            await settle(lambda: nc.status == "connected" and nc.server_info["server_id"] != "bad", 20)
            assert code in [e.code for e in errors], errors
            sub = await nc.subscribe("after")
            nc.publish("after", b"ok")
            assert (await sub.next_msg(5)).data == b"ok"
            await nc.close()
        run(go())
