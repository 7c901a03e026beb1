"""The WebSocket data frames of the one C codec (natscodec.c, through
_natsproto's WsReader and ws_frame) against wsproto, on random input:
10,000 random streams of server frames (binary and text messages, whole or
fragmented, of lengths in the 7-, 16- and 64-bit forms; pings, pongs, now
and then a close; one stream in ten with a bad frame RFC 6455 forbids),
split at random points, fed to WsReader and to wsproto's client-side frame
protocol: the same payload bytes and control frames in the same order, and
a bad frame refused by both.  The other way: random payloads framed by
ws_frame are read back by wsproto's server side.  Then the engine's adapter
(engine/websocket.py) both ways, accelerated and not, on the same streams;
and the Tcl face's C reader (tclfast.c, in a tclsh) on 2,000 streams of
NATS frames in WebSocket frames: its C deliveries and what it hands the
engine make the reference parser's operations, its control frames and bad
frames are handed over in order.

Seeded loops (the seed is in each failure's message), a few seconds.
"""

from __future__ import annotations

import importlib
import os
import random

import pytest
from wsproto.frame_protocol import FrameProtocol, Opcode, ParseFailed

from tclnats_py.engine import protocol as P
from tclnats_py.engine.websocket import WebSocket
from tclnats_py.errors import NatsError

from tests.engine.tcl_reader import TCL_READER_HEAD, tcl_reader_ops

STREAMS = 10_000
SEED = int(os.environ.get("TCLNATS_CODEC_SEED", "2032"))
MAX = 1 << 20

natsproto = importlib.import_module("tclnats_py._natsproto") if P.ACCELERATED else None
pytestmark = [pytest.mark.unit, pytest.mark.feature("websocket"),
              pytest.mark.skipif(not natsproto, reason="tclnats_py._natsproto is not built (or TCLNATS_PY_ACCEL=0)")]

CONTROL, TOO_BIG, BAD = 1, 2, 3
TEXT = "".join(random.Random(SEED).choice("natsü€😀ab\r\n ") for _ in range(30000))

# bad frames, each after a good prefix: (the bytes, also bad right after a
# fragment: the continuation rules depend on the message state)
BAD_FRAMES = [
    bytes([0x83, 0]),                          # reserved opcode 3
    bytes([0x8B, 0]),                          # reserved opcode 0xB
    bytes([0xC2, 2]) + b"hi",                  # RSV1 without an extension
    bytes([0x92, 0]),                          # RSV3
    bytes([0x82, 0x82, 1, 2, 3, 4, 5, 6]),     # masked (a server must not mask)
    bytes([0x09, 0]),                          # a ping without FIN
    bytes([0x89, 126, 0, 200]) + b"p" * 200,   # a ping longer than 125
    bytes([0x82, 126, 0, 5]) + b"hello",       # 16-bit length that fits in 7 bits
    bytes([0x82, 127, 0, 0, 0, 0, 0, 0, 1, 0]) + b"x" * 256,    # 64-bit length that fits in 16
    bytes([0x80, 1]) + b"c",                   # a continuation outside a message
]


def _size(r: random.Random) -> int:
    x = r.random()
    if x < 0.6:
        return r.randint(0, 125)
    if x < 0.985:
        return r.choice((126, 127, r.randint(126, 3000), r.randint(126, 3000), 65535))
    return r.randint(65536, 70000)


def _payload(r: random.Random, n: int) -> bytes:
    return r.randbytes(n)


def _text(r: random.Random, n: int):
    at = r.randrange(len(TEXT) - n // 3)
    return TEXT[at:at + n // 3]


def _stream(r: random.Random):
    """(the server's bytes, the events a client must read from them: ('data',
    bytes) merged, ('ping'|'pong', payload), ('close', code, reason); then
    'bad' when the stream ends in a bad frame)."""
    server = FrameProtocol(client=False, extensions=[])
    wire = bytearray()
    events: list = []

    def data(b: bytes) -> None:
        if not b:
            return
        if events and events[-1][0] == "data":
            events[-1] = ("data", events[-1][1] + b)
        else:
            events.append(("data", b))

    in_msg = text = False
    for _ in range(r.randint(1, 8)):
        x = r.random()
        if x < 0.15:
            p = _payload(r, r.randint(0, 125))
            kind = r.choice(("ping", "pong"))
            wire += server.ping(p) if kind == "ping" else server.pong(p)
            events.append((kind, p))
            continue
        if in_msg and r.random() < 0.5:  # the fragmented message goes on
            fin = r.random() < 0.5
            t = _text(r, _size(r)) if text else _payload(r, _size(r))
            wire += server.send_data(t, fin)
            in_msg = not fin
            data(t.encode() if text else t)
            continue
        if in_msg:
            wire += server.send_data("" if text else b"", True)
            in_msg = False
        fin = r.random() < 0.7
        text = r.random() < 0.15
        t = _text(r, _size(r)) if text else _payload(r, _size(r))
        wire += server.send_data(t, fin)
        data(t.encode() if text else t)
        in_msg = not fin
    x = r.random()
    if x < 0.1:
        bad = r.choice(BAD_FRAMES[:-1] if in_msg else BAD_FRAMES)
        if in_msg and r.random() < 0.3:
            bad = bytes([0x82, 1]) + b"n"  # a new message inside a fragmented one
        wire += bad
        events.append(("bad",))
    elif x < 0.15:
        code, reason = r.choice(((1000, ""), (1001, "Server Shutdown"), (4000, "bye ü")))
        wire += server.close(code, reason)
        events.append(("close", code, reason))
    return bytes(wire), events


def _splits(r: random.Random, wire: bytes) -> list[bytes]:
    cuts = sorted(r.randrange(len(wire) + 1) for _ in range(r.choice((0, 1, 2, 5, 20))))
    if r.random() < 0.05 and len(wire) < 3000:
        cuts = list(range(0, len(wire), r.randint(1, 3)))  # byte by byte, or nearly
    edges = [0, *cuts, len(wire)]
    return [wire[a:b] for a, b in zip(edges, edges[1:])]


def _add(events: list, ev) -> None:
    if ev[0] == "data":
        if not ev[1]:
            return
        if events and events[-1][0] == "data":
            events[-1] = ("data", events[-1][1] + ev[1])
            return
    events.append(ev)


def _control(frame: bytes):
    op, payload = frame[0] & 0x0F, frame[2:]
    if op == 8:
        return ("close", int.from_bytes(payload[:2], "big"), payload[2:].decode()) if payload else ("close", 1005, "")
    return ("ping" if op == 9 else "pong", payload)


def by_c(chunks: list[bytes]) -> list:
    reader = natsproto.WsReader(MAX)
    events: list = []
    for chunk in chunks:
        got = reader.feed(chunk)
        while got.__class__ is not bytes:
            payload, kind, info = got
            _add(events, ("data", payload))
            if kind != CONTROL:
                events.append(("bad",))
                return events
            events.append(_control(info))
            if events[-1][0] == "close":
                return events
            got = reader.feed(b"")
        _add(events, ("data", got))
    return events


def by_wsproto(chunks: list[bytes]) -> list:
    proto = FrameProtocol(client=True, extensions=[])
    events: list = []
    try:
        for chunk in chunks:
            proto.receive_bytes(chunk)
            for f in proto.received_frames():
                if f.opcode in (Opcode.BINARY, Opcode.TEXT, Opcode.CONTINUATION):
                    _add(events, ("data", f.payload.encode() if isinstance(f.payload, str) else bytes(f.payload)))
                elif f.opcode is Opcode.CLOSE:
                    events.append(("close", int(f.payload[0]), f.payload[1]))
                    return events
                else:
                    events.append(("ping" if f.opcode is Opcode.PING else "pong", bytes(f.payload)))
    except ParseFailed:
        events.append(("bad",))
    return events


def test_random_streams_unframed_as_wsproto_reads_them():
    r = random.Random(SEED)
    bad = close = 0
    for i in range(STREAMS):
        wire, expected = _stream(r)
        chunks = _splits(r, wire)
        got = by_c(chunks)
        assert got == expected, f"stream {i} (seed {SEED}): C {got!r:.300} != {expected!r:.300}"
        ref = by_wsproto(chunks)
        assert ref == expected, f"stream {i} (seed {SEED}): wsproto {ref!r:.300} != {expected!r:.300}"
        end = expected[-1][0] if expected else ""
        bad += end == "bad"
        close += end == "close"
    assert bad > STREAMS // 20 and close > STREAMS // 40  # both kinds of ending were tried


def test_an_oversize_frame_is_refused_at_its_header():
    r = random.Random(SEED)
    for i in range(500):
        limit = r.randint(0, 70000)
        n = limit + r.randint(1, 3)
        wire = bytes(FrameProtocol(client=False, extensions=[]).send_data(b"z" * n, True))
        reader = natsproto.WsReader(limit)
        head = 2 if n < 126 else 4 if n < 65536 else 10
        assert reader.feed(wire[:head - 1]) == b"", i
        assert reader.feed(wire[head - 1:head]) == (b"", TOO_BIG, n), i
        ok = natsproto.WsReader(n)
        assert ok.feed(wire) == b"z" * n, i


def test_random_payloads_framed_by_c_read_by_wsproto_as_a_server():
    r = random.Random(SEED + 1)
    server = FrameProtocol(client=False, extensions=[])
    keys = set()
    for i in range(3000):
        p = _payload(r, _size(r))
        frame = natsproto.ws_frame(p)
        assert frame[0] == 0x82 and frame[1] & 0x80, i  # FIN, binary, masked
        head = 2 if len(p) < 126 else 4 if len(p) < 65536 else 10
        keys.add(frame[head:head + 4])
        assert len(frame) == head + 4 + len(p), i
        for chunk in _splits(r, frame):
            server.receive_bytes(chunk)
        got = b"".join(bytes(f.payload) for f in server.received_frames())
        assert got == p, f"payload {i} (seed {SEED + 1}): {len(got)} bytes back of {len(p)}"
    assert len(keys) > 2990  # a fresh key per frame (4 random bytes)


def _adapter(accelerated: bool) -> tuple[WebSocket, bytes]:
    """An adapter that sent its upgrade request, and the server's 101."""
    from wsproto import ConnectionType, WSConnection
    from wsproto.events import AcceptConnection, Request
    ws = WebSocket("h", 80, max_frame=MAX, where="h:80", accelerated=accelerated)
    ws.start_upgrade()
    server = WSConnection(ConnectionType.SERVER)
    server.receive_data(ws.wrap(b""))
    assert isinstance(next(server.events()), Request)
    return ws, server.send(AcceptConnection())


def _through(ws: WebSocket, chunks: list[bytes]):
    out = []
    try:
        for chunk in chunks:
            out.append(ws.receive(chunk))
            if ws.closed is not None:
                break
    except NatsError as e:
        return b"".join(out), e.code, bytes(ws.out)
    return b"".join(out), ws.closed and str(ws.closed), bytes(ws.out)


def test_the_adapter_accelerated_and_not_reads_the_same():
    r = random.Random(SEED + 2)
    for i in range(600):
        wire, expected = _stream(r)
        results = []
        sides = [_adapter(accelerated) for accelerated in (True, False)]
        # the same reads on both sides (the 101s differ only in their accept token);
        # no empty read: wsproto's handshake takes b"" for the end of the stream
        sizes = [len(c) for c in _splits(r, sides[0][1] + wire) if c]
        for accelerated, (ws, answer) in zip((True, False), sides):
            stream, at, chunks = answer + wire, 0, []
            for n in sizes:
                chunks.append(stream[at:at + n])
                at += n
            data, end, out = _through(ws, chunks)
            assert (ws._reader is not None) == accelerated
            # what the adapter wrote back (pongs, the close): read by wsproto's server side
            back = FrameProtocol(client=False, extensions=[])
            back.receive_bytes(out)
            # (a close answered with its code; wsproto's event layer echoes the reason too)
            results.append((data, end, [(f.opcode, f.payload[0] if f.opcode is Opcode.CLOSE else f.payload)
                                        for f in back.received_frames()]))
        if expected and expected[-1] == ("bad",):
            # refused both ways; wsproto's event layer (a bad frame in the 101's read)
            # turns it into a close 1002 and keeps that read's data, the frame layer does not
            assert results[0][1] == "ErrWebSocket" and results[1][1], f"stream {i} (seed {SEED + 2})"
            continue
        assert results[0] == results[1], f"stream {i} (seed {SEED + 2})"


# ------------------------------------------------------------ the Tcl face's C reader (tclfast.c)

TCL_STREAMS = 2_000

TCL_SCRIPT = TCL_READER_HEAD + r"""
lassign $argv streams
# and the control frames (W) and bad frames (B) it hands over
proc rx {op args} {
    switch -- $op {
        ops { return [list [binary encode hex [lindex $args 0]]] }
        wsctl { lappend ::rec "W:[binary encode hex [lindex $args 0]]" }
        wsbad { lappend ::rec "B:[binary encode hex [lindex $args 0]]" }
        default { error "rx $op" }
    }
    return {}
}
set in [open $streams rb]
while {[gets $in line] >= 0} {
    ::fc rd $rd rx reader
    # the stream's first bytes are the unframer's state handed over (websocket.py hand_over)
    set rest [lindex $line 0]
    if {$rest eq "-"} { set rest "" }
    ::fc ws 1048576 [binary decode hex $rest] 0 0
    set ::rec {}
    foreach hex [lrange $line 1 end] {
        puts -nonewline $wr [binary decode hex $hex]
        ::fc read
    }
    puts $::rec
}
close $in
update   ;# a background error (reported with after 0) fails the run
"""


def _nats(r: random.Random) -> bytes:
    """MSG frames for sid 1 (the C reader's) and 2 (the engine's), payloads
    with CRLF inside now and then."""
    out = b""
    for _ in range(r.randint(1, 6)):
        p = _payload(r, r.choice((0, 3, r.randint(0, 200), r.randint(0, 5000))))
        out += b"MSG s.%d %d %d\r\n%s\r\n" % (r.randrange(100), r.choice((1, 2)), len(p), p)
    return out


def _ws_frames(r: random.Random, content: bytes):
    """(content in server frames of random sizes and fragmentation, pings
    between them, now and then a close or a bad frame at the end; the
    control frames; the ending: "", "close" or "bad")."""
    server = FrameProtocol(client=False, extensions=[])
    wire, controls, at, in_msg = bytearray(), [], 0, False
    while at < len(content):
        n = min(_size(r), len(content) - at)
        fin = at + n == len(content) or r.random() < 0.6
        wire += server.send_data(content[at:at + n], fin)
        at += n
        if r.random() < 0.2:
            ping = bytes(server.ping(_payload(r, r.randint(0, 125))))
            wire += ping
            controls.append(ping)
    x = r.random()
    if x < 0.1:
        wire += r.choice(BAD_FRAMES[:-1])
        return bytes(wire), controls, "bad"
    if x < 0.15:
        close = bytes(server.close(1001, "bye"))
        wire += close
        controls.append(close)
        return bytes(wire), controls, "close"
    return bytes(wire), controls, ""


@pytest.mark.tcl
def test_the_tcl_reader_unframes_as_the_codec(tmp_path):
    import subprocess

    from tclnats_py.tclface.bridge import tcl_library_dir
    from tclnats_py.tclface.tclsh import find_tclsh

    r = random.Random(SEED + 3)
    wants, lines = [], []
    for _ in range(TCL_STREAMS):
        content = _nats(r)
        wire, controls, ending = _ws_frames(r, content)
        wants.append((P.Parser(accelerated=False).feed(content), [c.hex() for c in controls], ending))
        # the first bytes (at most a control frame's 127) as handed over, the rest
        # written in chunks that each fit in a pipe's buffer (the reader reads after each)
        held = min(r.choice((0, 0, 1, r.randint(0, 127))), len(wire) - 1)  # (a read follows)
        rest, wire = wire[:held], wire[held:]
        chunks = [c[i:i + 30000] for c in _splits(r, wire) for i in range(0, len(c), 30000)]
        lines.append(" ".join([rest.hex() or "-"] + [c.hex() for c in chunks if c]))
    (tmp_path / "streams").write_text("\n".join(lines) + "\n")
    (tmp_path / "t.tcl").write_text(TCL_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "TCLLIBPATH"}
    env["TCLLIBPATH"] = tcl_library_dir()
    p = subprocess.run([find_tclsh(), str(tmp_path / "t.tcl"), str(tmp_path / "streams")],
                       capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert len(out) == TCL_STREAMS, p.stderr
    in_c = 0
    for i, (line, (ops, controls, ending)) in enumerate(zip(out, wants)):
        records = line.split()
        plan = [rec for rec in records if rec[0] in "CE"]
        in_c += sum(rec.startswith("C:") for rec in plan)
        got_ops = _tcl_ops(plan)
        got_controls = [rec[2:] for rec in records if rec.startswith("W:")]
        bad = [bytes.fromhex(rec[2:]).decode() for rec in records if rec.startswith("B:")]
        assert got_controls == controls, (SEED + 3, i)
        assert bool(bad) == (ending == "bad"), (SEED + 3, i, bad)
        if ending:  # the frames before the ending: a prefix of the stream's operations
            assert got_ops == ops[:len(got_ops)], (SEED + 3, i)
        else:
            assert got_ops == ops, (SEED + 3, i, records)
    assert in_c > TCL_STREAMS  # the C path did deliver


def _tcl_ops(records: list) -> list:
    return tcl_reader_ops(records)[0]
