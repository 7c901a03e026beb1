"""The Tcl face's C reader over a WebSocket (tclfast.c through natscodec.c's
unframer), under stock tclsh, against a hand-made WebSocket 'NATS server':
after the upgrade (read by the Python reader) the C reader takes the
socket; messages in whole frames, in fragments with a ping between them,
in 16-bit frames and written a byte at a time reach their callback in
order; the ping is answered (by the engine, through wsproto); then the
server ends with a close frame (ErrBrokenSocket), a frame past the largest
taken or a frame RFC 6455 forbids (ErrWebSocket) -- never a hang."""

from __future__ import annotations

import socket
import threading

import pytest
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, Message, Pong, Request

from tests.tclface.test_tcl_fastpaths import run_tcl

pytestmark = [pytest.mark.tcl, pytest.mark.feature("websocket")]


def frame(op: int, payload: bytes, fin: bool = True) -> bytes:
    n = len(payload)
    head = bytes([(0x80 if fin else 0) | op])
    if n < 126:
        head += bytes([n])
    elif n < 65536:
        head += bytes([126]) + n.to_bytes(2, "big")
    else:
        head += bytes([127]) + n.to_bytes(8, "big")
    return head + payload


def msg(payload: bytes) -> bytes:
    return b"MSG ws.x 1 %d\r\n%s\r\n" % (len(payload), payload)


ENDINGS = {
    "close": (frame(8, (1001).to_bytes(2, "big") + b"Server Shutdown"), "ErrBrokenSocket"),
    "oversize": (bytes([0x82, 127]) + (2 ** 40).to_bytes(8, "big") + b"+OK\r\n", "ErrWebSocket"),
    "reserved_opcode": (frame(3, b"x"), "ErrWebSocket"),
    "masked": (bytes([0x82, 0x85, 1, 2, 3, 4]) + bytes(b ^ k for b, k in zip(b"+OK\r\n", b"\1\2\3\4\1")),
               "ErrWebSocket"),
    "rsv1": (bytes([0xC2, 5]) + b"+OK\r\n", "ErrWebSocket"),
    "continuation": (frame(0, b"+OK\r\n"), "ErrWebSocket"),
}


class FakeWsServer:
    """The upgrade and the NATS handshake, then the frames of the test, then
    ``ending``."""

    def __init__(self, ending: bytes):
        self.ending = ending
        self.pongs: list[bytes] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.done = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _until(self, conn, ws, want) -> bool:
        """Read until want(text of the client's messages so far) holds."""
        text = b""
        while not want(text):
            data = conn.recv(65536)
            if not data:
                return False
            ws.receive_data(data)
            for ev in ws.events():
                if isinstance(ev, Request):
                    conn.sendall(ws.send(AcceptConnection()) + frame(2, b'INFO {"server_id":"fakews",'
                                 b'"max_payload":1048576,"headers":true,"proto":1}\r\n'))
                elif isinstance(ev, Message):
                    text += ev.data
                elif isinstance(ev, Pong):
                    self.pongs.append(ev.payload)
                    text += b"<pong>"
        return True

    def _serve(self):
        conn, _ = self.listener.accept()
        ws = WSConnection(ConnectionType.SERVER)
        with conn:
            if not self._until(conn, ws, lambda t: b"PING" in t):
                return
            conn.sendall(frame(2, b"PONG\r\n"))
            if not self._until(conn, ws, lambda t: b"SUB ws.x" in t and b"PING" in t):
                return
            conn.sendall(frame(2, b"PONG\r\n" + msg(b"one")))
            two = msg(b"two")
            conn.sendall(frame(2, two[:5], fin=False) + frame(9, b"are you there") + frame(0, two[5:9], fin=False)
                         + frame(0, two[9:]))
            slow = frame(2, msg(b"t" * 300)) + frame(2, msg(b"four") + msg(b"five"))
            for i in range(len(slow)):  # a byte a write: frame headers split everywhere
                conn.sendall(slow[i:i + 1])
                if i % 16 == 0:
                    threading.Event().wait(0.001)
            if not self._until(conn, ws, lambda t: b"<pong>" in t):
                return
            conn.sendall(self.ending)
            self.done.wait(20)


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_the_c_reader_over_a_websocket_then_a_bad_ending(tmp_path, ending):
    tail, code = ENDINGS[ending]
    server = FakeWsServer(tail)
    try:
        out, text = run_tcl(tmp_path, r"""
            lassign $argv port
            set c [nats::connection new fakews -log_chan stdout -log_level error]
            $c configure -servers ws://127.0.0.1:$port -reconnect_time_wait 100
            $c connect
            set ::got [list]
            $c subscribe ws.x -callback {apply {{s m r} {lappend ::got [string length $m]:[string range $m 0 4]}}}
            $c ping -timeout 5000
            result reader [set ::tclnats::sockets([set [info object namespace $c]::sock])]
            wait_for {[llength $::got] >= 5}
            wait_for {[set [info object namespace $c]::last_error] ne ""} 10000
            result got $::got
            set err [set [info object namespace $c]::last_error]
            result error [lindex [dict get $err code] 1]
            result message [dict get $err errorMessage]
        """, server.port, timeout=60)
    finally:
        server.done.set()
        server.listener.close()
    assert out["reader"].endswith("Fast read"), text
    assert out["got"] == "3:one 3:two 300:ttttt 4:four 4:five", text
    assert server.pongs == [b"are you there"]
    assert out["error"] == code, text
    if code == "ErrWebSocket":  # the codec's reason, the server named
        why = "larger than" if ending == "oversize" else "Bad WebSocket data from 127.0.0.1"
        assert why in out["message"], text
