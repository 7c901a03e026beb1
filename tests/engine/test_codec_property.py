"""The one C codec (tclnats_py/_ext/natscodec.c) against the pure-Python
reference, on random input: 10,000 random streams of server frames (MSG,
HMSG, PING, PONG, +OK, -ERR, INFO; random subjects, sids, replies, header
blocks, payloads empty or binary with CRLF inside; now and then a frame the
C scanner must leave to the reference: another spacing, case, a non-ASCII
subject, a 19-digit sid), split at random points, fed to every parser:
protocol.Parser pure and accelerated, columns.scan_deliveries both ways (for
pull delivery streams), and the Tcl face's reader (tclfast.c, in a tclsh:
its C deliveries and what it hands the engine, in order, must make the same
operations).  The framers: protocol.encode_pub, natscodec's (through
_natsproto.encode_pub), the asyncio face's pub_frame and the Tcl face's
publish method give the same bytes.  And the spin back-off: the C policy
(_natsproto.SpinPolicy, the one tclcross.c await_var runs) and the Python
reference give the same skips for random caught/missed sequences.

Seeded loops (the seed is in each failure's message), about 20 s in all.
"""

from __future__ import annotations

import importlib
import json
import os
import random
import subprocess

import pytest

from tclnats_py.aio.spin import SpinPolicy
from tclnats_py.engine import protocol as P
from tclnats_py.engine.js import columns as C

from tests.engine.tcl_reader import TCL_READER_HEAD, tcl_reader_ops

STREAMS = 10_000
SEED = int(os.environ.get("TCLNATS_CODEC_SEED", "2032"))
TOKEN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_$!#%&'()+,/:;<=?@^`|~"

natsproto = importlib.import_module("tclnats_py._natsproto") if P.ACCELERATED else None
need_accel = pytest.mark.skipif(not natsproto, reason="tclnats_py._natsproto is not built (or TCLNATS_PY_ACCEL=0)")


def _subject(r: random.Random) -> str:
    if r.random() < 0.02:
        return "grüße." + r.choice(TOKEN)  # not ASCII: the reference's
    return ".".join("".join(r.choice(TOKEN) for _ in range(r.randint(1, 8))) for _ in range(r.randint(1, 4)))


def _payload(r: random.Random) -> bytes:
    n = r.choice((0, 1, 2, r.randint(0, 40), r.randint(0, 40), r.randint(0, 2000)))
    data = bytearray(r.getrandbits(8) for _ in range(n))
    if n > 2 and r.random() < 0.3:
        k = r.randrange(n - 1)
        data[k:k + 2] = b"\r\n"
    return bytes(data)


def _header(r: random.Random) -> bytes:
    return r.choice((b"", b"NATS/1.0\r\n\r\n", b"NATS/1.0\r\nK: v\r\n\r\n", b"NATS/1.0 503\r\n\r\n",
                     b"NATS/1.0\r\nA: 1\r\nB: x\r\ny\r\n\r\n"))


def _sep(r: random.Random) -> bytes:
    return b" " if r.random() < 0.95 else r.choice((b"  ", b"\t", b" \t "))


def _msg(r: random.Random, sid: int | None = None, odd: bool = True):
    """(frame, the Parser's operation) of one MSG or HMSG; ``odd``: now and
    then a verb in another case (the Parser's, not the column scanner's)."""
    subject = _subject(r)
    sid = sid if sid is not None else r.choice((1, 1, 2, 3, r.randrange(10**6), r.randrange(10**18), 10**19 + 7))
    reply = _subject(r) if r.random() < 0.5 else None
    payload = _payload(r)
    verb = b"MSG" if not odd or r.random() < 0.97 else r.choice((b"msg", b"Msg"))
    s = _sep(r)
    fields = [subject.encode(), b"%d" % sid] + ([reply.encode()] if reply else [])
    if r.random() < 0.3:
        hdr = _header(r)
        line = s.join([b"H" + verb] + fields + [b"%d" % len(hdr), b"%d" % (len(hdr) + len(payload))])
        frame = line + b"\r\n" + hdr + payload + b"\r\n"
        return frame, (P.MSG, subject, sid, reply, hdr or None, payload)
    return s.join([verb] + fields + [b"%d" % len(payload)]) + b"\r\n" + payload + b"\r\n", \
        (P.MSG, subject, sid, reply, None, payload)


def _control(r: random.Random):
    k = r.randrange(6)
    if k == 0:
        return r.choice((b"PING\r\n", b"ping\r\n")), (P.PING,)
    if k == 1:
        return b"PONG\r\n", (P.PONG,)
    if k == 2:
        return b"+OK\r\n", (P.OK,)
    if k == 3:
        text = r.choice(("Slow Consumer", "Permissions Violation for Publish to \"x\"", ""))
        return b"-ERR '%s'\r\n" % text.encode(), (P.ERR, text)
    info = {"server_id": "S%d" % r.randrange(100), "max_payload": r.randrange(1 << 20), "proto": 1}
    return b"INFO " + json.dumps(info).encode() + b"\r\n", (P.INFO, info)


def _stream(r: random.Random):
    frames, ops = [], []
    for _ in range(r.randint(1, 12)):
        f, op = _msg(r) if r.random() < 0.6 else _control(r)
        frames.append(f)
        ops.append(op)
    return b"".join(frames), ops


def _cuts(r: random.Random, data: bytes) -> list:
    points = sorted(r.randint(0, len(data)) for _ in range(r.randint(0, 5)))
    return [data[a:b] for a, b in zip([0] + points, points + [len(data)])]


def _parse(chunks: list, accelerated: bool) -> list:
    p = P.Parser(accelerated=accelerated)
    ops = []
    for c in chunks:
        ops += p.feed(c)
    assert p.buffered == 0
    return ops


def test_the_parsers_agree_on_random_streams_split_anywhere():
    r = random.Random(SEED)
    for i in range(STREAMS):
        data, want = _stream(r)
        chunks = _cuts(r, data)
        assert _parse([data], False) == want, (SEED, i, data)
        assert _parse(chunks, False) == want, (SEED, i, chunks)
        if natsproto:
            assert _parse(chunks, True) == want, (SEED, i, chunks)


# ------------------------------------------------------------ pull deliveries into columns

def _delivery_stream(r: random.Random):
    """A pull's frames: deliveries of sid 1 (seq rising, an ack reply of the
    v1 form, now and then the v2 form, with or without headers), statuses,
    late replies of other sids, PING/PONG/+OK/INFO."""
    frames = []
    seq = r.randint(1, 5)
    for _ in range(r.randint(1, 12)):
        k = r.random()
        if k < 0.65:
            pending = r.choice((9, 5, 1, 0)) if r.random() < 0.05 else r.randint(1, 1000)
            if r.random() < 0.1:
                reply = b"$JS.ACK.hub.HASH.S.C.1.%d.%d.17000000000%08d.%d.tok" % (seq, seq, seq, pending)
            else:
                reply = b"$JS.ACK.S.C.%d.%d.%d.17000000000%08d.%d" % (r.randint(1, 3), seq, seq, seq, pending)
            subject, payload = _subject(r).encode(), _payload(r)
            if r.random() < 0.3:
                hdr = _header(r)
                frames.append(b"HMSG %s 1 %s %d %d\r\n%s%s\r\n" % (subject, reply, len(hdr), len(hdr) + len(payload),
                                                                   hdr, payload))
            else:
                frames.append(b"MSG %s 1 %s %d\r\n%s\r\n" % (subject, reply, len(payload), payload))
            seq += r.randint(1, 3)
        elif k < 0.75:
            status = r.choice((b"NATS/1.0 408 Request Timeout\r\n\r\n", b"NATS/1.0 100 Idle Heartbeat\r\n\r\n"))
            frames.append(b"HMSG _INBOX.x 1 %d %d\r\n%s\r\n" % (len(status), len(status), status))
        elif k < 0.85:
            frames.append(_msg(r, r.choice((2, 7, 11)), odd=False)[0])
        else:
            frames.append(r.choice((b"PING\r\n", b"PONG\r\n", b"+OK\r\n", b'INFO {"x":1}\r\n')))
    return b"".join(frames)


def _scan_all(chunks: list, last: int, fast) -> tuple:
    saved = C._scan_columns
    C._scan_columns = fast
    try:
        cols, buf, events = C.Columns(), b"", []
        for c in chunks:
            buf += c
            used, ev = C.scan_deliveries(buf, cols, last)
            events += [e if isinstance(e, str) else (e.subject, e.data, e.status, e.sid) for e in ev]
            buf = buf[used:]
            if "last" in ev:
                break
    finally:
        C._scan_columns = saved
    return (list(cols.seq), cols.subject, cols.data, cols.ts_ns, cols.headers, cols.n, cols.received,
            events, buf if "last" not in events else None)


def test_the_column_scanners_agree_on_random_delivery_streams():
    r = random.Random(SEED + 1)
    fast = C._scan_columns
    for i in range(STREAMS):
        last = r.choice((10**9, r.randint(1, 30)))
        data = _delivery_stream(r)
        chunks = _cuts(r, data)
        want = _scan_all([data], last, None)
        assert _scan_all(chunks, last, None) == want, (SEED, i, chunks, last)
        if fast is not None:
            assert _scan_all(chunks, last, fast) == want, (SEED, i, chunks, last)


# ------------------------------------------------------------ framers

def _pub_cases(r: random.Random, n: int):
    for _ in range(n):
        subject = _subject(r)
        while not subject.isascii():
            subject = _subject(r)
        reply = _subject(r) if r.random() < 0.4 else None
        if reply is not None and not reply.isascii():
            reply = None
        yield subject, reply, _payload(r), (_header(r) or None) if r.random() < 0.3 else None


@need_accel
def test_the_framers_give_the_same_bytes():
    r = random.Random(SEED + 2)
    for i, (subject, reply, payload, hdr) in enumerate(_pub_cases(r, STREAMS)):
        want = P.encode_pub(subject, reply, payload, hdr)
        assert natsproto.encode_pub(subject, reply, payload, hdr) == want, (SEED, i)
        if hdr is None:
            heads = {subject: P.pub_head(subject, r.randrange(5))}
            assert natsproto.pub_frame(heads, subject, payload, 1 << 20, reply) == want, (SEED, i)
            assert natsproto.pub_frame({}, subject, payload, 1 << 20, reply, False) == want, (SEED, i)
            if reply is None:
                assert P._py_pub_frame(heads, subject, payload, 1 << 20) == want, (SEED, i)


# ------------------------------------------------------------ the spin back-off

@need_accel
def test_the_spin_policy_in_c_is_the_reference():
    r = random.Random(SEED + 3)
    for i in range(200):
        c, py = natsproto.SpinPolicy(), SpinPolicy()
        for step in range(r.randint(1, 3000)):
            tried = py.should_try()
            assert c.should_try() == tried, (SEED, i, step)
            if tried:
                caught = r.random() < r.choice((0.05, 0.5, 0.95))
                for p in (c, py):
                    p.caught() if caught else p.missed()
            assert (c.skip, c.misses, c.caught_n, c.missed_n, c.skipped_n) == \
                (py.skip, py.misses, py.caught_n, py.missed_n, py.skipped_n), (SEED, i, step)
    # the numbers of the rule: the second miss in a row skips 10, then 20, 40 ... 1000
    c = natsproto.SpinPolicy()
    skips = []
    for _ in range(9):
        c.missed()
        skips.append(c.skip)
        c.skip = 0
    assert skips == [0, 10, 20, 40, 80, 160, 320, 640, 1000]


# ------------------------------------------------------------ the Tcl face's reader and publish (tclfast.c)

TCL_SCRIPT = TCL_READER_HEAD + r"""
lassign $argv streams frames
proc rx {op args} {
    if {$op ne "ops"} { error "rx $op" }
    return [list [binary encode hex [lindex $args 0]]]
}
set in [open $streams rb]
while {[gets $in line] >= 0} {
    ::fc rd $rd rx reader
    set ::rec {}
    foreach hex $line {
        puts -nonewline $wr [binary decode hex $hex]
        ::fc read
    }
    puts $::rec
}
close $in
# publish: subject payload ?reply? per line, the batch at the end
set in [open $frames rb]
set n 0
while {[gets $in line] >= 0} {
    lassign $line s d r
    set d [binary decode hex $d]
    if {$r eq ""} { set ok [::fc pub $s $d] } else { set ok [::fc pub $s $d -reply $r] }
    if {$ok != 1} { error "not framed in C: $line" }
    incr n
}
close $in
lassign [::fc take] count bytes
puts "PUB $count [binary encode hex $bytes]"
update   ;# a background error (reported with after 0) fails the run
"""


def _tcl_ops(records: list) -> list:
    ops, buffered = tcl_reader_ops(records)
    assert buffered == 0
    return ops


@pytest.mark.tcl
def test_the_tcl_reader_and_publish_agree(tmp_path):
    from tclnats_py.tclface.bridge import tcl_library_dir
    from tclnats_py.tclface.tclsh import find_tclsh

    r = random.Random(SEED + 4)
    wants, lines = [], []
    for _ in range(STREAMS):
        data, want = _stream(r)
        wants.append(want)
        lines.append(" ".join(c.hex() for c in _cuts(r, data) if c))
    (tmp_path / "streams").write_text("\n".join(lines) + "\n")
    pubs = [(s, rep, payload) for s, rep, payload, _ in _pub_cases(r, STREAMS)]
    (tmp_path / "frames").write_text("".join(f"{s} {d.hex() or '{}'} {rep or ''}\n" for s, rep, d in pubs))
    (tmp_path / "t.tcl").write_text(TCL_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "TCLLIBPATH"}
    env["TCLLIBPATH"] = tcl_library_dir()
    p = subprocess.run([find_tclsh(), str(tmp_path / "t.tcl"), str(tmp_path / "streams"), str(tmp_path / "frames")],
                       capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    out = p.stdout.splitlines()
    assert len(out) == STREAMS + 1, p.stderr
    delivered_in_c = 0
    for i, (line, want) in enumerate(zip(out, wants)):
        records = line.split()
        delivered_in_c += sum(rec.startswith("C:") for rec in records)
        assert _tcl_ops(records) == want, (SEED, i, lines[i], records)
    assert delivered_in_c > STREAMS // 4  # the C path did deliver (sid 1 is 2 in 7 of the MSG frames)
    _, count, framed = out[-1].split(" ", 2)
    assert int(count) == len(pubs)
    assert bytes.fromhex(framed) == b"".join(P.encode_pub(s, rep, d) for s, rep, d in pubs)
