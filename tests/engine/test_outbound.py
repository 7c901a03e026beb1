"""The outbound buffer (engine/outbound.py) as a part of its own: an
Outbound with no handshake behind it, its status set by hand."""

import pytest

from tclnats_py.engine.effects import FLUSH, ErrorChanged, Log, StatusChanged
from tclnats_py.engine.options import Options
from tclnats_py.engine.outbound import HARD_CAP_FACTOR, Outbound
from tclnats_py.engine.state import CLOSED, CONNECTED, RECONNECTING
from tclnats_py.errors import NatsError

pytestmark = pytest.mark.unit


def outbound(status=CONNECTED, **opts):
    o = Outbound(Options(**opts))
    o.status = status
    return o


def test_publish_when_closed_is_refused():
    o = outbound(CLOSED)
    with pytest.raises(NatsError) as ei:
        o.publish("a", b"x")
    assert ei.value.code == "ErrConnectionClosed"
    with pytest.raises(NatsError):
        o.publish_framed(b"PUB a 1\r\nx\r\n", 1)
    assert o.pending_bytes == 0 and o.take() == []


def test_connected_publishes_ask_for_one_flush_per_write():
    o = outbound()
    o.publish("a", b"one")
    o.publish("b", b"two", reply="r")
    assert o.take() == [FLUSH]
    assert o.pending_chunks == 2 and o.pending_commands() == [b"PUB a  3\r\none\r\n", b"PUB b r 3\r\ntwo\r\n"]
    assert o.want_write
    assert o.data_to_send() == b"PUB a  3\r\none\r\nPUB b r 3\r\ntwo\r\n"
    assert not o.want_write and o.pending_bytes == 0
    assert o.stats["out_msgs"] == 2 and o.stats["out_bytes"] == 31
    o.publish("a", b"")
    assert o.take() == [FLUSH]  # a new write, a new Flush


def test_publish_checks_subjects_payload_and_headers_against_the_server_info():
    o = outbound()
    o.server_info = {"max_payload": 4, "headers": False}
    for call, code in [(lambda: o.publish("a b", b""), "ErrBadSubject"),
                       (lambda: o.publish("a", b"", reply="r r"), "ErrBadSubject"),
                       (lambda: o.publish("a", b"12345"), "ErrMaxPayload"),
                       (lambda: o.publish("a", b"", headers={"K": ["v"]}), "ErrHeadersNotSupported")]:
        with pytest.raises(NatsError) as ei:
            call()
        assert ei.value.code == code
    assert o.pending_bytes == 0
    o.options.check_subjects = False
    o.publish("a b", b"1234")  # the server judges it
    assert o.pending_chunks == 1


def test_not_connected_the_queue_is_the_reconnect_buffer():
    o = outbound(RECONNECTING, reconnect_buf_size=40)
    o.publish("a", b"0123456789")          # 20 bytes
    o.publish_framed(b"PUB a 2\r\nxy\r\n", 1)
    assert o.take() == []                  # no Flush: nothing may be written yet
    assert not o.want_write and o.data_to_send() == b""
    with pytest.raises(NatsError) as ei:
        o.publish("a", b"0123456789")
    assert ei.value.code == "ErrReconnectBufExceeded"
    assert o.pending_chunks == 2
    o.status = CONNECTED
    assert o.want_write and o.data_to_send() == b"PUB a  10\r\n0123456789\r\nPUB a 2\r\nxy\r\n"


def test_handshake_bytes_go_first_in_any_status():
    o = outbound(RECONNECTING)
    o.publish("a", b"x")
    o._send_now(b"CONNECT {}\r\n")
    assert o.take() == [FLUSH] and o.want_write
    assert o.data_to_send() == b"CONNECT {}\r\n"   # not the user traffic while not connected
    o.status = CONNECTED
    o._send_now(b"PONG\r\n")
    assert o.data_to_send() == b"PONG\r\nPUB a  1\r\nx\r\n"


def test_data_to_send_with_a_limit_gives_whole_commands():
    o = outbound()
    one = b"PUB s  10\r\n" + bytes(10) + b"\r\n"   # 23 bytes
    for i in range(5):
        o.publish("s", bytes(10))
    assert o.data_to_send(30) == one * 2   # whole commands, until the limit is reached
    assert o.pending_chunks == 3 and o.pending_bytes == 3 * len(one)
    assert o.data_to_send(1) == one        # at least one command
    assert o.data_to_send() == one * 2 and o.pending_bytes == 0


def test_restore_first_puts_commands_ahead_of_the_queue():
    o = outbound()
    o.publish("a", b"x")
    o._restore_first([b"SUB x 1\r\n", b"SUB y 2\r\n"])
    assert o.pending_commands()[:2] == [b"SUB x 1\r\n", b"SUB y 2\r\n"]
    assert o.pending_bytes == sum(len(c) for c in o.pending_commands())


def test_hand_over_and_discard():
    o = outbound()
    o.publish("a", b"x")
    o._hand_over_queue()                   # a disconnect: the queue goes out before the close
    assert o.pending_chunks == 0 and o.data_to_send() == b"PUB a  1\r\nx\r\n"
    o.publish("a", b"x")
    o.publish("b", b"y")
    o._queue(b"SUB c 1\r\n")
    o.take()
    o._discard_queue("no servers left")
    assert o.take() == [Log("warn", "Discarded 2 buffered messages")]
    assert o.pending_chunks == 0 and o.pending_bytes == 0 and not o._flush_signalled


def test_write_pressure_and_the_hard_cap():
    o = outbound(write_buf_size=100, reconnect_buf_size=1000)
    assert o.hard_cap == 100 * HARD_CAP_FACTOR + 1000
    assert o.write_pressure() == 0 and o.write_pressure(99) == 0
    assert o.write_pressure(100) == 1
    assert o.write_pressure(o.hard_cap) == 1 and o.write_pressure(o.hard_cap + 1) == 2
    o.check_outbound(o.hard_cap)
    o.publish("a", bytes(50))              # the queue counts with what the driver holds
    assert o.write_pressure(50) == 1
    with pytest.raises(NatsError) as ei:
        o.check_outbound(o.hard_cap)
    assert ei.value.code == "ErrOutboundBufferLimit"


def test_publish_frame_says_when_the_driver_has_work():
    o = outbound()
    frame = b"PUB a 1\r\nx\r\n"
    assert o.publish_frame(frame, 100) is True    # the Flush to carry out
    assert o.take() == [FLUSH]
    assert o.publish_frame(frame, 100) is False
    assert o.publish_frame(frame, 30) is True     # 36 bytes queued: time to write
    o.status = RECONNECTING
    assert o.publish_frame(frame, 10**6) is True and o.stats["out_msgs"] == 4


def test_take_for_a_writing_caller_leaves_out_the_flush():
    o = outbound()
    o.publish("a", b"x")
    o._log("info", "t")
    assert o.take(writing=True) == [Log("info", "t")]
    assert o.take() == []


def test_status_and_error_effects():
    o = outbound(CLOSED)
    o._set_status(CLOSED)
    o._set_status(CONNECTED)
    o._async_error("ErrPermissions", "no")
    o._clear_error()
    o._clear_error()
    fx = o.take()
    assert fx[0] == StatusChanged(CONNECTED) and fx[1] == Log("warn", "no")
    assert fx[2].__class__ is ErrorChanged and fx[2].error.code == "ErrPermissions"
    assert fx[3] == ErrorChanged(None) and len(fx) == 4 and o.last_error is None
