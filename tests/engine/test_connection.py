"""Engine.receive_data (engine/connection.py), the hot path of every face:
one read's frames in order, the common message inline, and the
deliver_batches guarantee (no Deliver; consecutive deliveries to one
subscription in one DeliverMany) on the compiled and the pure parser."""

import pytest

from tclnats_py.engine import protocol as P
from tclnats_py.engine.effects import FLUSH, Deliver, DeliverMany, RequestDone, SubGone
from tclnats_py.engine.records import Msg

from tests.fake_driver import connected

pytestmark = pytest.mark.unit


def engine(accelerated=None, batches=False, msg_class=Msg):
    e, d = connected()
    e._parser = P.Parser(accelerated=accelerated)
    e.deliver_batches = batches
    e.msg_class = msg_class
    return e


class OwnInit(Msg):
    """A message class with a constructor of its own (the compiled maker of
    runs does not make these: the inline steps do)."""

    __slots__ = ()

    def __init__(self, subject, data=b"", reply=None, headers=None, sid=None):
        super().__init__(subject, data, reply, headers, sid)


WIRE = (b"MSG a 1 1\r\n1\r\nMSG a 1 1\r\n2\r\nHMSG a 1 12 13\r\nNATS/1.0\r\n\r\n3\r\n"   # a: plain, plain, headers
        b"MSG a 1 1\r\n4\r\nMSG b 2 1\r\n5\r\nMSG a 1 1\r\n6\r\n"                      # a, then b, then a
        b"MSG c 3 1\r\n7\r\nMSG c 3 1\r\n8\r\nMSG a 1 1\r\n9\r\n")                      # c (max 2, ends), a


def summary(fx):
    return [(f.__class__.__name__, f[0] if f.__class__ is SubGone else f.sub.subject,
             [m.data for m in f.msgs] if f.__class__ is DeliverMany else f.msg.data if f.__class__ is Deliver
             else None) for f in fx]


@pytest.mark.parametrize("accelerated", [False, None])
@pytest.mark.parametrize("msg_class", [Msg, OwnInit])
def test_deliver_batches_every_delivery_is_a_deliver_many_and_runs_are_merged(accelerated, msg_class):
    e = engine(accelerated, True, msg_class)
    a, b = e.subscribe("a"), e.subscribe("b")
    c = e.subscribe("c", max_msgs=2)
    e.take()
    e.data_to_send()
    e.receive_data(WIRE[:60])
    e.receive_data(WIRE[60:])   # a run goes on across reads until take()
    fx = e.take()
    assert summary(fx) == [("DeliverMany", "a", [b"1", b"2", b"3", b"4"]), ("DeliverMany", "b", [b"5"]),
                           ("DeliverMany", "a", [b"6"]), ("DeliverMany", "c", [b"7", b"8"]),
                           ("SubGone", c.sid, None), ("DeliverMany", "a", [b"9"])]
    assert all(m.__class__ is msg_class for f in fx if f.__class__ is DeliverMany for m in f.msgs)
    assert fx[0].msgs[2].headers == {} and fx[0].msgs[2].sid == a.sid and fx[0].msgs[0].headers is None
    assert (a.received, b.received, c.received) == (6, 1, 2) and e.stats["in_msgs"] == 9


@pytest.mark.parametrize("accelerated", [False, None])
def test_without_batches_each_message_is_a_deliver(accelerated):
    e = engine(accelerated)
    e.subscribe("a"), e.subscribe("b"), e.subscribe("c", max_msgs=2)
    e.take()
    e.receive_data(WIRE)
    fx = e.take()
    assert [f.__class__ for f in fx] == [Deliver] * 8 + [SubGone, Deliver]
    assert [f.msg.data for f in fx if f.__class__ is Deliver] == [b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"8",
                                                                   b"9"]


@pytest.mark.parametrize("msg_class", [Msg, OwnInit])
def test_another_effect_between_deliveries_splits_the_run(msg_class):
    e = engine(batches=True, msg_class=msg_class)
    a = e.subscribe("a")
    e.take()
    e.data_to_send()
    e.receive_data(b"MSG a 1 1\r\n1\r\nMSG a 1 1\r\n2\r\nPING\r\nMSG a 1 1\r\n3\r\n")
    fx = e.take()
    assert [f.__class__ for f in fx] == [DeliverMany, type(FLUSH), DeliverMany]   # the PONG's Flush
    assert [m.data for m in fx[0].msgs] == [b"1", b"2"] and [m.data for m in fx[2].msgs] == [b"3"]
    assert fx[2].sub is a and e.data_to_send() == b"PONG\r\n"


def test_a_plain_request_reply_is_read_inline():
    e = engine(batches=True)
    req = e.request("svc", b"q", timeout=1000)
    e.take()
    e.receive_data(f"MSG {req.reply} 1 1\r\nr\r\n".encode())
    fx = e.take()
    assert fx[-1] == RequestDone(req, "msg") and req.msg.data == b"r" and e.stats["in_msgs"] == 1


def test_reading_stops_when_a_frame_dropped_the_socket():
    e = engine(batches=True)
    e.choose_server = lambda servers, info: (servers[0], 1000)   # the next attempt waits
    e.subscribe("a")
    e.take()
    e.receive_data(b"MSG a 1 1\r\n1\r\n-ERR 'Stale Connection'\r\nMSG a 1 1\r\n2\r\n")
    fx = e.take()
    delivered = [m.data for f in fx if f.__class__ is DeliverMany for m in f.msgs]
    assert delivered == [b"1"] and e.status == "reconnecting" and not e._socket_open
    assert e.stats["in_msgs"] == 1
    e.receive_data(b"MSG a 1 1\r\n3\r\n")   # a dropped socket's bytes: ignored
    assert e.take() == [] and e.stats["in_msgs"] == 1


def test_a_protocol_error_drops_the_connection_after_the_frames_before_it():
    e = engine()
    e.subscribe("a")
    e.take()
    e.receive_data(b"MSG a 1 1\r\n1\r\nBOGUS\r\n")
    fx = e.take()
    assert [f.msg.data for f in fx if f.__class__ is Deliver] == [b"1"]
    assert e.last_error.code == "ErrProtocol" and e.status == "reconnecting"
