"""The WebSocket data frames of the one C codec (natscodec.c, through
_natsproto's WsReader and ws_frame) against wsproto, on random input:
10,000 random streams of server frames (binary and text messages, whole or
fragmented, of lengths in the 7-, 16- and 64-bit forms; pings, pongs, now
and then a close; one stream in ten with a bad frame RFC 6455 forbids),
split at random points, fed to WsReader and to wsproto's client-side frame
protocol: the same payload bytes and control frames in the same order, and
a bad frame refused by both.  The other way: random payloads framed by
ws_frame are read back by wsproto's server side.  Then the engine's adapter
(engine/websocket.py) both ways, accelerated and not, on the same streams.

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
    for i in range(1000):
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
