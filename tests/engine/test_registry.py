"""Subscriptions, requests, pings and the delivery of messages
(engine/registry.py), as a part of its own: a Registry with no handshake
behind it, its status set by hand, fed parsed frames."""

import pytest

from tclnats_py.engine import protocol as P
from tclnats_py.engine.effects import (FLUSH, CancelTimer, Deliver, DeliverMany, ErrorChanged, Log, PingDone, RequestDone,
                                       RequestReply, StartTimer, SubGone)
from tclnats_py.engine.options import Options
from tclnats_py.engine.records import Ping
from tclnats_py.engine.registry import MAX_SUB_MSGS, Registry
from tclnats_py.engine.state import CLOSED, CONNECTED, RECONNECTING
from tclnats_py.errors import NatsError

pytestmark = pytest.mark.unit


def registry(status=CONNECTED, accelerated=None, **opts):
    r = Registry(Options(**opts))
    r.status = status
    r._socket_open = True
    r.test_parser = P.Parser(accelerated=accelerated)
    return r


def feed(r, data):
    """Parse ``data`` and hand each message to the registry (``_on_msg``:
    what the Engine's reading does for all but the common message)."""
    for op in r.test_parser.feed(data):
        assert op[0] is P.MSG
        r._on_msg(op)


def sent(r):
    r.take()
    return r.data_to_send()


# ====================================================================== subscriptions

def test_subscribe_and_unsubscribe_frames():
    r = registry()
    a = r.subscribe("a.>", "q")
    b = r.subscribe("b", max_msgs=3)
    assert sent(r) == b"SUB a.> q 1\r\nSUB b  2\r\nUNSUB 2 3\r\n"
    assert r.unsubscribe(a.sid) is True and a.closed and a.sid not in r.subs
    assert r.unsubscribe(b.sid, 5) is False and r.subs[b.sid].max_msgs == 5
    assert sent(r) == b"UNSUB 1\r\nUNSUB 2 5\r\n"
    for call, code in [(lambda: r.unsubscribe(99), "ErrBadSubscription"),
                       (lambda: r.subscribe("x", max_msgs=MAX_SUB_MSGS + 1), "ErrInvalidArg"),
                       (lambda: r.unsubscribe(b.sid, -1), "ErrInvalidArg"),
                       (lambda: r.subscribe("a..b"), "ErrBadSubject"),
                       (lambda: r.subscribe("a", "q q"), "ErrBadQueueName")]:
        with pytest.raises(NatsError) as ei:
            call()
        assert ei.value.code == code


def test_not_connected_subscriptions_wait_for_the_restore():
    r = registry(RECONNECTING)
    a = r.subscribe("a")
    b = r.subscribe("b", max_msgs=4)
    r.subscribe("c")
    r.drain(3)
    assert r.pending_chunks == 0
    b.received = 1
    assert r._restore_commands() == [b"SUB a  1\r\n", b"SUB b  2\r\n", b"UNSUB 2 3\r\n"]
    assert a.sid == 1


def test_drain_sends_unsub_once_and_the_last_unsubscribe_only_forgets():
    r = registry()
    s = r.subscribe("a")
    sent(r)
    r.drain(s.sid)
    r.drain(s.sid)
    assert sent(r) == b"UNSUB 1\r\n" and s.draining
    feed(r, b"MSG a 1 1\r\nx\r\n")           # still delivered while draining
    fx = r.take()
    assert [f.__class__ for f in fx] == [Deliver] and fx[0].sub is s and fx[0].msg.data == b"x"
    assert r.unsubscribe(s.sid) is True and sent(r) == b""


# ====================================================================== delivery by kind

def test_deliver_batches_the_slow_path_joins_the_last_deliver_many_too():
    r = registry()
    r.deliver_batches = True
    a, b = r.subscribe("a"), r.subscribe("b", max_msgs=3)
    r.take()
    feed(r, b"HMSG a 1 12 13\r\nNATS/1.0\r\n\r\n1\r\nHMSG a 1 12 13\r\nNATS/1.0\r\n\r\n2\r\n"
            b"MSG b 2 1\r\n3\r\nMSG b 2 1\r\n4\r\nMSG b 2 1\r\n5\r\nHMSG a 1 12 13\r\nNATS/1.0\r\n\r\n6\r\n")
    fx = r.take()
    assert [f.__class__ for f in fx] == [DeliverMany, DeliverMany, SubGone, DeliverMany]
    assert [m.data for m in fx[0].msgs] == [b"1", b"2"] and fx[0].sub is a
    assert [m.data for m in fx[1].msgs] == [b"3", b"4", b"5"] and fx[1].sub is b and fx[2] == SubGone(b.sid)
    assert [m.data for m in fx[3].msgs] == [b"6"] and fx[0].msgs[0].headers == {}


def test_a_message_for_no_subscription_is_counted_and_dropped():
    r = registry()
    feed(r, b"MSG gone 7 1\r\nx\r\n")
    assert r.take() == [] and r.stats["in_msgs"] == 1


def test_messages_of_a_max_msgs_subscription_end_it():
    r = registry()
    s = r.subscribe("a", max_msgs=2)
    r.take()
    feed(r, b"MSG a 1 1\r\nx\r\nMSG a 1 1\r\ny\r\nMSG a 1 1\r\nz\r\n")
    fx = r.take()
    assert [f.__class__ for f in fx] == [Deliver, Deliver, SubGone]
    assert [f.msg.data for f in fx[:2]] == [b"x", b"y"] and fx[2] == SubGone(s.sid)
    assert s.closed and r.stats["in_msgs"] == 3   # the third counted, then dropped


def test_a_bad_header_block_is_an_async_error_and_the_body_still_arrives():
    r = registry()
    s = r.subscribe("a")
    r.take()
    feed(r, b"HMSG a 1 12 13\r\nXATS/1.0\r\n\r\nx\r\n")
    fx = r.take()
    assert fx[0].__class__ is Log and fx[1].__class__ is ErrorChanged
    assert fx[2].__class__ is Deliver and fx[2].sub is s and fx[2].msg.data == b"x"


# ====================================================================== requests

def test_new_style_requests_share_one_inbox_and_end_once():
    r = registry()
    r.server_info = {"headers": True}
    q1 = r.request("svc", b"1", timeout=500)
    q2 = r.request("svc", b"2")
    mux, prefix = r.request_inbox
    assert mux.kind == "mux" and mux.subject == prefix + ".*" and q1.reply == prefix + ".1"
    assert StartTimer(q1, 500) in r.take()
    assert sent(r).startswith(b"SUB " + prefix.encode() + b".*  1\r\nPUB svc " + q1.reply.encode())
    feed(r, f"MSG {q1.reply} 1 2\r\nok\r\nMSG {q1.reply} 1 4\r\nlate\r\n".encode())
    assert r.take() == [CancelTimer(q1), RequestDone(q1, "msg")] and q1.msg.data == b"ok"
    feed(r, f"HMSG {q2.reply} 1 29 29\r\nNATS/1.0 503\r\nStatus: 503\r\n\r\n\r\n".encode())
    assert r.take()[-1] == RequestDone(q2, "no_responders")
    assert r.requests == {} and not r.awaiting_reply


def test_a_request_to_a_known_subject_is_framed_as_publish_frames_it_and_checked_the_same():
    r = registry()
    r.server_info = {"max_payload": 8}
    first = r.request("svc.a", b"12345")          # publish() checks and frames it
    sent(r)
    again = r.request("svc.a", b"67890", timeout=0)  # framed by request() itself
    assert "svc.a" in r.request_subjects and r.take() == [FLUSH]
    assert r.data_to_send() == P.encode_pub("svc.a", again.reply, b"67890")
    assert r.stats["out_msgs"] == 2 and first.id in r.requests
    with pytest.raises(NatsError) as e:            # still past max_payload
        r.request("svc.a", b"123456789")
    assert e.value.code == "ErrMaxPayload"
    with pytest.raises(NatsError) as e:            # still closed
        r.status = CLOSED
        r.request("svc.a", b"")
    assert e.value.code == "ErrConnectionClosed"
    r = registry(check_subjects=False)
    r.request("not valid", b"")                    # accepted, but never by the strict rule
    assert r.request_subjects == set()


def test_a_request_without_a_timeout_ends_without_a_cancel_timer():
    r = registry()
    q = r.request("svc", b"", timeout=0)
    r.take()
    feed(r, f"MSG {q.reply} 1 2\r\nok\r\n".encode())
    assert r.take() == [RequestDone(q, "msg")]


def test_nuid_reply_tokens():
    r = registry()
    r.nuid_reply_tokens = True
    q = r.request("svc", b"", timeout=0)
    token = q.reply.rpartition(".")[2]
    assert len(token) == 22 + 4 and int(token[22:], 16) == q.id
    feed(r, f"MSG {q.reply} 1 0\r\n\r\n".encode())
    assert r.take()[-1] == RequestDone(q, "msg")


def test_a_gathering_request_reports_each_reply_then_ends():
    r = registry()
    q = r.request("svc", b"", timeout=100, max_msgs=2)
    assert q.sub.kind == "gather" and q.sub.max_msgs == 2
    r.take()
    feed(r, f"MSG {q.reply} {q.sub.sid} 1\r\na\r\nMSG {q.reply} {q.sub.sid} 1\r\nb\r\n".encode())
    fx = r.take()
    assert [f.__class__ for f in fx] == [RequestReply, SubGone, RequestReply, CancelTimer, RequestDone]
    assert fx[-1] == RequestDone(q, "msg") and [m.data for m in q.msgs] == [b"a", b"b"]


def test_a_gathering_request_sends_its_next_step_to_its_own_inbox_with_its_timeout_anew():
    r = registry()
    q = r.request("$JS.API.CONSUMER.MSG.NEXT.S.C", b'{"batch":1,"id":"p1"}', timeout=100, max_msgs=2)
    sent(r)
    status = "NATS/1.0 423 Nats-Pin-Id mismatch\r\n\r\n"
    feed(r, f"HMSG {q.reply} {q.sub.sid} {len(status)} {len(status)}\r\n{status}\r\n".encode())
    r.take()
    r.repeat_request(q.id, q.subject, b'{"batch":1}')
    assert r.take() == [FLUSH, StartTimer(q, 100)] and not q.done
    assert sent(r) == f'PUB {q.subject} {q.reply} 11\r\n{{"batch":1}}\r\n'.encode()
    feed(r, f"MSG {q.reply} {q.sub.sid} 1\r\nm\r\n".encode())
    assert r.take()[-1] == RequestDone(q, "msg") and [m.data for m in q.msgs][-1] == b"m"
    for rid in (q.id, 999):
        with pytest.raises(NatsError) as ei:
            r.repeat_request(rid, q.subject, b"{}")
        assert ei.value.code == "ErrInvalidArg"


def test_a_request_timeout_drops_its_inbox_and_a_ping_timeout_fails_it():
    r = registry()
    q = r.request("svc", b"", timeout=100, max_msgs=5)
    sent(r)
    r._record_timer(q)
    assert r.take() == [FLUSH, SubGone(q.sub.sid), CancelTimer(q), RequestDone(q, "timeout")]
    assert sent(r) == f"UNSUB {q.sub.sid}\r\n".encode()
    r._record_timer(q)                        # a second firing: nothing
    p = r.ping(50)
    r.take()
    r._record_timer(p)
    assert r.take() == [PingDone(p, False)]


def test_cancel_request():
    r = registry()
    q = r.request("svc", b"", max_msgs=1)
    r.take()
    r.cancel_request(q.id)
    fx = r.take()
    assert fx[:2] == [CancelTimer(q), SubGone(q.sub.sid)] and q.done
    with pytest.raises(NatsError) as ei:
        r.cancel_request(q.id)
    assert ei.value.code == "ErrInvalidArg"


def test_the_end_of_the_connection_ends_every_request_and_subscription():
    r = registry()
    q = r.request("svc", b"")
    s = r.subscribe("a")
    r.take()
    r._end_requests("lost")
    assert r.take() == [CancelTimer(q), RequestDone(q, "lost")]
    assert s.closed and r.subs == {} and r.request_inbox == (None, "")


def test_a_publish_error_leaves_no_request_behind():
    r = registry()
    with pytest.raises(NatsError):
        r.request("bad subject", b"", max_msgs=1)
    assert r.requests == {} and r.subs == {}


# ====================================================================== pings

def test_pongs_answer_pings_in_order_and_orphans_wait_for_the_next_connection():
    r = registry()
    r._pings.append(None)                      # a keep-alive PING in flight
    p1, p2 = r.ping(0), r.ping(0)
    assert isinstance(p1, Ping) and r.awaiting_reply
    r.take()
    r._pong_answers()                          # the keep-alive one
    assert r.take() == []
    r._pong_answers()
    assert r.take() == [CancelTimer(p1), PingDone(p1, True)]
    r._orphan_pings_now()                      # the connection broke with p2 in flight
    assert r._pings == [] and r._orphan_pings == [p2]
    r._pings_on_connected()
    assert r.take() == [CancelTimer(p2), PingDone(p2, True)]
    p3 = r.ping(0)
    r._fail_pings(None)
    assert r.take()[-1] == PingDone(p3, None)
    r.status = RECONNECTING
    with pytest.raises(NatsError) as ei:
        r.ping()
    assert ei.value.code == "ErrConnectionClosed"
