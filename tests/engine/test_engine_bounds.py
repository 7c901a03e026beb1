"""The engine's bounds, fed bytes: the reconnect buffer, chunked writes, the
write pressure rule, reconnect jitter, the auth-error abort and invalid
connect_urls."""

import random

import pytest

from tclnats_py import Engine, Options
from tclnats_py.engine.connection import CLOSED, CONNECTED, HARD_CAP_FACTOR, RECONNECTING
from tclnats_py.engine.effects import Log, StartTimer
from tclnats_py.errors import ErrOutboundBufferLimit, ErrReconnectBufExceeded

from tests.fake_driver import connected, info_line, make


def _lose(e, d):
    e.connection_lost("reset by peer")
    d.pump()
    assert e.status == RECONNECTING


def test_reconnect_buffer_refuses_past_its_size_and_keeps_what_it_took():
    e, d = connected(reconnect_buf_size=1000, max_reconnect_attempts=-1)
    d.take_wire()
    _lose(e, d)
    taken = []
    with pytest.raises(ErrReconnectBufExceeded) as ei:
        for i in range(100):
            e.publish("s", b"%03d" % i + b"x" * 47)
            taken.append(i)
    assert "1000 bytes" in str(ei.value)
    assert 0 < len(taken) < 100 and e.pending_bytes <= 1000
    # a smaller message may still fit; the buffer does not drop anything it took
    before = e.pending_bytes
    with pytest.raises(ErrReconnectBufExceeded):
        e.publish("s", b"y" * 900)
    assert e.pending_bytes == before
    # back on a server, everything accepted goes out, in order
    d.accept()  # the socket opened at once on losing the connection
    wire = d.take_wire()
    got = [int(m[:3]) for m in wire.split(b"PUB s  50\r\n")[1:]]
    assert got == taken


def test_reconnect_buffer_zero_refuses_every_publish_while_disconnected():
    e, d = connected(reconnect_buf_size=0)
    _lose(e, d)
    with pytest.raises(ErrReconnectBufExceeded):
        e.publish("s", b"")
    with pytest.raises(ErrReconnectBufExceeded):
        e.publish_framed(b"PUB s  1\r\nx\r\n", 1)
    assert e.pending_bytes == 0


def test_the_bound_does_not_apply_while_connected():
    e, d = connected(reconnect_buf_size=10, write_buf_size=10)
    for _ in range(100):
        e.publish("s", b"x" * 50)
    assert e.pending_bytes > 10


def test_data_to_send_in_chunks_keeps_order_and_counts():
    e, d = connected()
    d.take_wire()
    msgs = [b"%05d" % i for i in range(1000)]
    for m in msgs:
        e.publish("s", m)
    total = e.pending_bytes
    chunks = []
    while e.want_write:
        c = e.data_to_send(4096)
        assert len(c) < 4096 + 20  # whole commands: at most one past the limit
        chunks.append(c)
        assert e.pending_bytes == total - sum(map(len, chunks))
    assert len(chunks) >= 4
    wire = b"".join(chunks)
    assert [m[:5] for m in wire.split(b"PUB s  5\r\n")[1:]] == msgs
    assert e.pending_bytes == 0 and e.data_to_send(4096) == b""


def test_write_pressure_and_the_hard_cap():
    e, d = connected(write_buf_size=1000, reconnect_buf_size=5000)
    assert e.hard_cap == 1000 * HARD_CAP_FACTOR + 5000
    assert e.write_pressure() == 0
    e.publish("s", b"x" * 990)
    assert e.write_pressure() == 1
    assert e.write_pressure(buffered=e.hard_cap) == 2
    e.check_outbound(buffered=e.hard_cap - e.pending_bytes)  # at the cap: no error
    with pytest.raises(ErrOutboundBufferLimit):
        e.check_outbound(buffered=e.hard_cap)


def test_a_full_reconnect_buffer_does_not_count_against_waiting_writers():
    e, d = connected(write_buf_size=1000, reconnect_buf_size=20000, max_reconnect_attempts=-1)
    _lose(e, d)
    while True:
        try:
            e.publish("s", b"x" * 100)
        except ErrReconnectBufExceeded:
            break
    d.accept()
    assert e.pending_bytes > 1000 * HARD_CAP_FACTOR  # all of it waits for the new socket
    assert e.write_pressure() == 1                  # a writer waits, none is refused
    e.check_outbound()


def _retry_waits(e, d):
    return [f.ms for f in d.kinds(StartTimer) if f.key == "reconnect"]


@pytest.mark.parametrize("url,opt", [("nats://h1:4222", "reconnect_jitter"),
                                     ("tls://h1:4222", "reconnect_jitter_tls")])
def test_reconnect_jitter_adds_up_to_its_value(url, opt):
    e = Engine(Options(randomize=False, reconnect_time_wait=100, max_reconnect_attempts=-1, **{opt: 400}),
               lang="python", version="9.9", rng=random.Random(7))
    e.configure_servers([url])
    from tests.fake_driver import FakeDriver
    d = FakeDriver(e)
    e.connect()
    d.pump()
    if url.startswith("tls"):
        e.socket_connected()
        d.feed(info_line(tls_required=True))
        e.tls_done()
        d.pump()
        d.take_wire()
        d.feed(b"PONG\r\n")
    else:
        d.accept()
    assert e.status == CONNECTED
    for _ in range(30):
        e.connection_lost("gone")
        d.pump()
        d.advance(600)
    waits = _retry_waits(e, d)
    assert len(waits) >= 20
    assert all(100 <= w <= 500 for w in waits)
    assert len(set(waits)) > 5  # random, not a constant


def test_no_jitter_by_default_keeps_nats_tcl_timing():
    e, d = connected(reconnect_time_wait=100, max_reconnect_attempts=-1)
    for _ in range(5):
        e.connection_lost("gone")
        d.pump()
        d.advance(150)
    assert set(_retry_waits(e, d)) == {100}


def _auth_refusal(d):
    d.e.socket_connected()
    d.feed(info_line())
    d.take_wire()
    d.feed(b"-ERR 'Authorization Violation'\r\n")


def test_the_same_auth_error_twice_from_a_server_gives_up():
    e, d = connected(reconnect_time_wait=10, max_reconnect_attempts=-1)
    _lose(e, d)
    d.advance(20)
    _auth_refusal(d)
    assert e.status == RECONNECTING
    d.advance(20)
    _auth_refusal(d)
    assert e.status == CLOSED
    assert e.last_error.code == "ErrAuthorization"
    assert any("refused the connection twice" in f.text for f in d.kinds(Log))


def test_ignore_auth_error_abort_keeps_trying():
    e, d = connected(reconnect_time_wait=10, max_reconnect_attempts=-1, ignore_auth_error_abort=True)
    _lose(e, d)
    for _ in range(4):
        d.advance(20)
        _auth_refusal(d)
        assert e.status == RECONNECTING


def test_an_auth_error_between_other_errors_does_not_give_up():
    e, d = connected(reconnect_time_wait=10, max_reconnect_attempts=-1)
    _lose(e, d)
    d.advance(20)
    _auth_refusal(d)
    d.advance(20)
    d.refuse()            # another kind of failure in between
    d.advance(20)
    _auth_refusal(d)
    assert e.status == RECONNECTING
    d.advance(20)
    d.accept()            # a success forgets the last refusal too
    _lose(e, d)
    d.advance(20)
    _auth_refusal(d)
    assert e.status == RECONNECTING


def test_invalid_connect_urls_are_reported_once():
    e, d = connected()
    for _ in range(3):
        d.feed(info_line(connect_urls=["ok:4223", "bad host:x", 7, "ok:4223"]))
    warns = [f.text for f in d.kinds(Log) if f.level == "warn" and "connect_urls" in f.text]
    assert len(warns) == 2 and "'bad host:x'" in warns[0] and "7" in warns[1]
    assert [s.host for s in e.pool.servers] == ["ok", "h1"]


def test_reconnect_buf_size_and_write_buf_size_are_checked():
    from tclnats_py.errors import ErrInvalidArg
    with pytest.raises(ErrInvalidArg):
        make(reconnect_buf_size=-1)
    with pytest.raises(ErrInvalidArg):
        make(write_buf_size="lots")


def test_chunked_writes_after_disconnect_and_connect_again():
    e, d = connected()
    e.publish("s", b"x")
    e.disconnect()
    d.take_wire()  # the PUB went out before the close
    e.connect()
    d.pump()
    d.accept()
    for _ in range(100):
        e.publish("s", b"y" * 100)
    chunks = []
    while e.want_write:
        chunks.append(e.data_to_send(1000))
    assert len(chunks) > 5 and b"".join(chunks).count(b"PUB s  100") == 100
