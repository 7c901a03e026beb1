"""engine.js.columns: a pull's deliveries read straight into columns, fed
bytes (no server): the same frames as the engine's Parser, good and bad."""

import pytest

import tclnats_py
from tclnats_py.engine.js.columns import Columns as _Columns
from tclnats_py.engine.js.columns import scan_deliveries as _scan
from tclnats_py.engine.js.meta import seq_time_pending
from tclnats_py.engine.protocol import Parser


def _delivery(seq, pending, data=b"x", hdr=None, stream="S"):
    reply = f"$JS.ACK.{stream}.C.1.{seq}.{seq}.17000000000{seq:08d}.{pending}".encode()
    if hdr is None:
        return b"MSG s.a 1 %s %d\r\n%s\r\n" % (reply, len(data), data)
    return b"HMSG s.a 1 %s %d %d\r\n%s%s\r\n" % (reply, len(hdr), len(hdr) + len(data), hdr, data)


def test_scan_fills_columns_and_stops_at_the_range_end():
    hdr = b"NATS/1.0\r\nK: v\r\n\r\n"
    status = b"NATS/1.0 408 Request Timeout\r\n\r\n"
    v2 = b"$JS.ACK.hub.HASH.S.C.1.3.3.1700000000000000003.7.tok"
    wire = (_delivery(1, 9) + b"PING\r\n" + _delivery(2, 8, b"yy", hdr)
            + b"HMSG _INBOX.x 1 %d %d\r\n%s\r\n" % (len(status), len(status), status)
            + b"MSG _INBOX.r 7 2\r\n{}\r\n"  # another sid: not a delivery
            + b"MSG s.a 1 %s 1\r\nx\r\n" % v2 + _delivery(4, 6))
    cols = _Columns()
    used, events = _scan(wire, cols, last=3)
    assert events[0] == "ping" and events[1].status == 408 and events[2] == "last"
    assert used == len(wire) - len(_delivery(4, 6))  # the delivery past the range is left
    assert list(cols.seq) == [1, 2, 3] and cols.subject == [b"s.a"] * 3 and cols.data == [b"x", b"yy", b"x"]
    assert cols.headers == [(1, {"K": ["v"]})] and cols.ts_ns[0] == b"1700000000000000001"
    # what the scanner leaves, the engine's parser reads as the same frames
    rest = Parser().feed(wire[used:])
    assert [op[3] for op in rest] == ["$JS.ACK.S.C.1.4.4.1700000000000000004.6"]
    # an incomplete frame is left whole
    assert _scan(_delivery(5, 1)[:-3], _Columns(), 100) == (0, [])
    # nothing more pending in the stream ends the read too
    cols = _Columns()
    assert _scan(_delivery(5, 0) + _delivery(6, 0), cols, last=100)[1] == ["last"]
    assert list(cols.seq) == [5]


def test_scan_agrees_with_the_engine_parser_on_every_split():
    wire = b"".join(_delivery(i, 100 - i, bytes([i]) * i, b"NATS/1.0\r\nN: %d\r\n\r\n" % i if i % 3 else None)
                    for i in range(1, 40))
    want = [(int(seq_time_pending(op[3])[0]), op[5]) for op in Parser().feed(wire)]
    for step in (1, 7, 64, 333):
        cols, buf = _Columns(), b""
        for k in range(0, len(wire), step):
            buf += wire[k:k + step]
            used, _ = _scan(buf, cols, 1000)
            buf = buf[used:]
        assert buf == b"" and list(zip(cols.seq, cols.data)) == want


def test_scan_raises_the_engine_errors():
    with pytest.raises(tclnats_py.NatsError) as e:
        _scan(b"-ERR 'Permissions Violation for Subscription to \"x\"'\r\n", _Columns(), 10)
    assert e.value.code == "ErrPermissions"
    with pytest.raises(tclnats_py.NatsError) as e:
        _scan(b"MSG s.a 1 $JS.ACK.S.C.1.x.1.1.1 1\r\nx\r\n", _Columns(), 10)
    assert e.value.code == "ErrProtocol"
    with pytest.raises(tclnats_py.NatsError) as e:
        _scan(b"MSG s.a 1 _INBOX.abc 1\r\nx\r\n", _Columns(), 10)
    assert e.value.code == "ErrNotJSMessage"


@pytest.mark.parametrize("frame", [
    b"MSG s.a 1 $JS.ACK.S.C.1.1.1.1.0 +1\r\nx\r\n",           # a size int() takes, the protocol does not
    b"HMSG s.a 1 $JS.ACK.S.C.1.1.1.1.0 +1 1\r\nx\r\n",        # the same for the header size
    b"HMSG s.a 1 $JS.ACK.S.C.1.1.1.1.0 5 1\r\nx\r\n",         # a header bigger than the message
    b"MSG s.a 1 $JS.ACK.S.C.1.1.1.1.0 1\r\nxyz\r\n",          # a payload not ended by CRLF
])
def test_scan_refuses_what_the_engine_parser_refuses(frame):
    with pytest.raises(tclnats_py.NatsError) as engine:
        Parser().feed(frame)
    with pytest.raises(tclnats_py.NatsError) as scan:
        _scan(frame, _Columns(), 10)
    assert engine.value.code == scan.value.code == "ErrProtocol"
