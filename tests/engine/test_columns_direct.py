"""engine.js.columns.scan_direct: the replies of a batch direct get (ADR-31) into columns."""

import pytest

import tclnats_py
from tclnats_py.engine.js import columns as C
from tclnats_py.engine.js.columns import LAST_EVENT, PING_EVENT, Columns, scan_direct

_COMPILED = C._scan_direct_columns


@pytest.fixture(autouse=True, params=["compiled", "python"])
def scanner(request, monkeypatch):
    """Each test with the accelerator's scanner (where built) and with the Python reference alone."""
    if request.param == "compiled":
        if _COMPILED is None:
            pytest.skip("the accelerator is not built")
    else:
        monkeypatch.setattr(C, "_scan_direct_columns", None)
    return request.param


def _reply(seq, subject=b"s.a", data=b"x", own=b"", pending=None, ts=b"2026-01-02T03:04:05.123456789Z", sid=b"7"):
    """A direct get reply as nats-server frames it: the message's own headers, then its Nats-* ones."""
    hdr = (b"NATS/1.0\r\n" + own + b"Nats-Stream: S\r\nNats-Subject: " + subject + b"\r\nNats-Sequence: %d\r\n"
           b"Nats-Time-Stamp: " % seq + ts + b"\r\n")
    if pending is not None:
        hdr += b"Nats-Num-Pending: %d\r\nNats-Last-Sequence: %d\r\n" % (pending, seq - 1)
    hdr += b"\r\n"
    return b"HMSG _INBOX.r " + sid + b" %d %d\r\n" % (len(hdr), len(hdr) + len(data)) + hdr + data + b"\r\n"


_EOB = b"HMSG _INBOX.r 7 64 64\r\nNATS/1.0 204 EOB\r\nNats-Num-Pending: 5\r\nNats-Last-Sequence: 3\r\n\r\n\r\n"


@pytest.mark.feature("direct_batch")
def test_scan_direct_fills_columns_and_passes_the_end_of_batch_on():
    buf = (_reply(1, data=b"one", pending=9) + b"PING\r\n" + _reply(3, b"s.b", b"", b"N: 1\r\nN: 2\r\n", 8)
           + _reply(4, sid=b"99") + _EOB)
    cols = Columns("ts_iso")
    pos, events = scan_direct(buf, cols, 10, b"7")
    assert pos == len(buf)
    assert events[0] is PING_EVENT and events[1].status == 204 and len(events) == 2
    out = cols.take()
    assert out["subject"] == [b"s.a", b"s.b"] and out["data"] == [b"one", b""]
    assert list(out["seq"]) == [1, 3] and out["ts_iso"] == [b"2026-01-02T03:04:05.123456789Z"] * 2
    assert out["headers"] == [(1, {"N": ["1", "2"]})]


@pytest.mark.feature("direct_batch")
def test_scan_direct_stops_at_the_range_end_and_when_nothing_more_matches():
    cols = Columns("ts_iso")
    buf = _reply(5, pending=3) + _reply(6, pending=2)
    pos, events = scan_direct(buf, cols, 5, b"7")
    assert events == [LAST_EVENT] and pos == len(_reply(5, pending=3)) and list(cols.seq) == [5]
    cols = Columns("ts_iso")
    pos, events = scan_direct(_reply(8, pending=5), cols, 7, b"7")  # past the range: not taken
    assert events == [LAST_EVENT] and cols.n == 0
    pos, events = scan_direct(_reply(2, pending=0) + _reply(3), cols, 10, b"7")
    assert events == [LAST_EVENT] and list(cols.seq) == [2]


@pytest.mark.feature("direct_batch")
def test_scan_direct_on_every_split_and_in_another_header_order():
    buf = _reply(1, pending=4, own=b"A: b\r\n") + _reply(2, data=b"two\r\nlines", pending=3) + _EOB
    whole = Columns("ts_iso")
    scan_direct(buf, whole, 10, b"7")
    for cut in range(len(buf)):
        cols = Columns("ts_iso")
        pos, _ = scan_direct(buf[:cut], cols, 10, b"7")
        pos2, _ = scan_direct(buf[pos:], cols, 10, b"7")
        assert pos + pos2 == len(buf)
        assert (cols.subject, cols.data, list(cols.seq), cols.headers) == \
            (whole.subject, whole.data, list(whole.seq), whole.headers)
    # coordinates before the message's own headers: the engine's header parser takes the block
    hdr = (b"NATS/1.0\r\nNats-Sequence: 4\r\nNats-Subject: s.c\r\nX: y\r\nNats-Stream: S\r\n"
           b"Nats-Time-Stamp: 2026-01-02T03:04:05Z\r\n\r\n")
    frame = b"HMSG _INBOX.r 7 %d %d\r\n" % (len(hdr), len(hdr) + 1) + hdr + b"z\r\n"
    cols = Columns("ts_iso")
    scan_direct(frame, cols, 10, b"7")
    assert (cols.subject, list(cols.seq), cols.ts_ns, cols.headers) == \
        ([b"s.c"], [4], [b"2026-01-02T03:04:05Z"], [(0, {"X": ["y"]})])


@pytest.mark.feature("direct_batch")
def test_scan_direct_raises_the_engine_errors():
    with pytest.raises(tclnats_py.NatsError) as e:
        scan_direct(b"HMSG _INBOX.r 7 +1 1\r\nx\r\n", Columns("ts_iso"), 10, b"7")
    assert e.value.code == "ErrProtocol"
    with pytest.raises(tclnats_py.NatsError) as e:
        scan_direct(b"-ERR 'Authorization Violation'\r\n", Columns("ts_iso"), 10, b"7")
    assert e.value.code == "ErrAuthorization"
