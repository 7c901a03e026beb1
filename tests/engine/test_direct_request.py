"""Engine.direct_request and Engine.direct_reply: a round trip whose PUB the
driver writes at once and whose reply it reads itself (the blocking face's
fast path), against the same request made and answered the usual way."""

import pytest

from tclnats_py.engine import protocol as P
from tclnats_py.engine.connection import _new_request
from tclnats_py.engine.effects import RequestDone
from tclnats_py.engine.records import Msg, Request
from tests.fake_driver import connected, info_line

pytestmark = pytest.mark.unit


class Msg2(Msg):
    __slots__ = ("extra",)

    def __init__(self, *args):
        super().__init__(*args)
        self.extra = "made by its own __init__"


def outcomes(d, req):
    """The outcomes of ``req``'s RequestDone effects so far."""
    return [f.outcome for f in d.fx if f.__class__ is RequestDone and f.req is req]


def with_inbox(**opts):
    """A connected engine whose request inbox exists (one request made and answered)."""
    e, d = connected(**opts)
    req = e.request("warm", b"", 0, None, None, None, check_subject=False)
    d.pump()
    d.take_wire()
    d.feed(b"MSG %s 1 0\r\n\r\n" % req.reply.encode())
    assert outcomes(d, req) == ["msg"]
    d.fx.clear()
    return e, d


def test_a_direct_request_is_registered_and_framed_as_request_frames_it():
    e, d = with_inbox()
    before = dict(e.stats)
    box: list = []
    req, frame, sid = e.direct_request("svc.echo", b"hello", box)
    assert frame == P.encode_pub("svc.echo", req.reply, b"hello")
    assert sid == e.request_inbox[0].sid and req.reply.startswith(e.request_inbox[1] + ".")
    assert e.requests[req.id] is req and req.handler is box and req.timeout == 0 and not req.done
    assert e.stats["out_msgs"] == before["out_msgs"] + 1
    assert e.stats["out_bytes"] == before["out_bytes"] + len(frame)
    assert not e.want_write and not e.take()  # nothing queued, no effect: the driver writes the frame


def test_the_record_maker_makes_the_request_init_makes():
    if _new_request is None:
        pytest.skip("the accelerator is not built")
    made = _new_request(7, "s", "r", 0, None, None, None, [], "h", False, False)
    init = Request(7, "s", "r", 0, None, "h")
    assert [getattr(made, k) for k in Request.__slots__[:-1]] == [getattr(init, k) for k in Request.__slots__[:-1]]


def test_no_direct_request_when_it_cannot_be_one():
    e, d = connected()
    assert e.direct_request("s", b"") is None  # no request inbox yet
    e, d = with_inbox()
    e.publish("queued", b"x")
    assert e.direct_request("s", b"") is None  # bytes queued go first
    d.pump()
    d.take_wire()
    assert e.direct_request("s", b"x" * 1025) is None  # past max_payload (1024)
    d.feed(b"MSG other 9 10\r\nhal")
    assert e.direct_request("s", b"") is None  # a frame begun in the parser
    d.feed(b"f a msg\r\n")
    assert e.direct_request("s", b"") is not None
    e.disconnect()
    assert e.direct_request("s", b"") is None


def reply_parts(e, req, data=b"pong", header=None, reply=None):
    """read_reply's tuple for a reply to ``req``, and the frame's bytes."""
    sid = e.request_inbox[0].sid
    if header is None:
        frame = b"MSG %s %d %s%d\r\n%s\r\n" % (req.reply.encode(), sid, (reply.encode() + b" ") if reply else b"",
                                               len(data), data)
    else:
        frame = b"HMSG %s %d %d %d\r\n%s%s\r\n" % (req.reply.encode(), sid, len(header), len(header) + len(data),
                                                    header, data)
    return (reply, header, data, len(frame)), frame


@pytest.mark.parametrize("msg_class", [Msg, Msg2])
def test_a_direct_reply_ends_the_request_as_receive_data_would(msg_class):
    direct, usual = with_inbox(), with_inbox()
    for e, _ in (direct, usual):
        e.msg_class = msg_class
    e, d = direct
    req, _, _ = e.direct_request("svc", b"ping", [])
    parts, frame = reply_parts(e, req, reply="back.here")
    assert e.direct_reply(req, parts) == "msg"
    assert not e.take()  # the outcome is returned, no RequestDone
    u, ud = usual
    ureq = u.request("svc", b"ping", 0, None, None, None, check_subject=False)
    ud.pump()
    ud.feed(frame.replace(req.reply.encode(), ureq.reply.encode()))
    assert outcomes(ud, ureq) == ["msg"] and ureq.id not in u.requests
    assert req.done and req.id not in e.requests
    m, um = req.msg, ureq.msg
    assert type(m) is msg_class
    assert (m.subject, m.data, m.reply, m.headers, m.sid) == (req.reply, um.data, um.reply, um.headers, um.sid)
    if msg_class is Msg2:
        assert m.extra == um.extra
    for k in ("in_msgs", "in_bytes"):
        assert e.stats[k] == u.stats[k]
    assert e.request_inbox[0].received == u.request_inbox[0].received


def test_a_no_responders_status_ends_it_so():
    e, d = with_inbox()
    req, _, _ = e.direct_request("nobody", b"", [])
    parts, _ = reply_parts(e, req, b"", header=b"NATS/1.0 503\r\n\r\n")
    assert e.direct_reply(req, parts) == "no_responders"
    assert req.msg.status == 503 and req.id not in e.requests


def test_a_direct_reply_with_headers_gets_the_engines_headers_class():
    e, d = with_inbox()
    e.headers_class = dict
    req, _, _ = e.direct_request("svc", b"", [])
    parts, _ = reply_parts(e, req, b"v", header=b"NATS/1.0\r\nK: a\r\nK: b\r\n\r\n")
    assert e.direct_reply(req, parts) == "msg"
    assert req.msg.headers == {"K": ["a", "b"]} and req.msg.data == b"v"


def test_a_late_reply_is_counted_and_dropped():
    e, d = with_inbox()
    req, _, _ = e.direct_request("svc", b"", [])
    e.cancel_request(req.id)
    parts, _ = reply_parts(e, req)
    before = e.stats["in_msgs"]
    assert e.direct_reply(req, parts) is None
    assert e.stats["in_msgs"] == before + 1 and req.msg is None


def test_what_is_not_the_reply_goes_through_receive_data():
    """The driver's other path: the same request ended by receive_data (a PING first)."""
    e, d = with_inbox()
    req, _, _ = e.direct_request("svc", b"", [])
    _, frame = reply_parts(e, req)
    d.feed(b"PING\r\n" + frame)
    assert outcomes(d, req) == ["msg"] and req.msg.data == b"pong"
    assert d.take_wire() == b"PONG\r\n"


def test_nuid_reply_tokens_are_kept():
    e, d = with_inbox()
    e.nuid_reply_tokens = True
    req, frame, _ = e.direct_request("svc", b"", [])
    token = req.reply.rpartition(".")[2]
    assert len(token) >= 26 and int(token[22:], 16) == req.id
    d.feed(info_line())
    parts, _ = reply_parts(e, req)
    assert e.direct_reply(req, parts) == "msg"


def test_the_reply_subject_is_the_inbox_and_the_request_id():
    e, d = with_inbox()
    for _ in range(3):
        req, frame, _ = e.direct_request("svc", b"x", [])
        assert req.reply == f"{e.request_inbox[1]}.{req.id}"
        assert frame == P.encode_pub("svc", req.reply, b"x")


@pytest.mark.parametrize("prefix", ["_INBOX.abc", "_INBOX.\u00e9t\u00e9", ""])
def test_request_pub_is_the_formatted_reply_and_its_frame(prefix):
    request_pub = P.compiled("request_pub")
    if request_pub is None:
        pytest.skip("the accelerator is not built")
    for rid in (0, 7, 10, 99, 4096, 10 ** 12, 2 ** 64 - 1):
        reply = f"{prefix}.{rid}"
        assert request_pub(prefix, rid, "a.b", b"data") == (reply, P.encode_pub("a.b", reply, b"data"))
    with pytest.raises(OverflowError):
        request_pub(prefix, -1, "a.b", b"")
    with pytest.raises(TypeError):
        request_pub(prefix, "1", "a.b", b"")


def test_a_raw_requests_plain_reply_stays_its_parts():
    e, d = with_inbox()
    req, _, _ = e.direct_request("svc", b"", [], True)
    assert req.raw
    parts, _ = reply_parts(e, req, b"v", header=b"NATS/1.0\r\nK: a\r\n\r\n", reply="back")
    before = e.stats["in_msgs"]
    assert e.direct_reply(req, parts) == "msg"
    assert req.msg is parts and req.done and req.id not in e.requests and not e.take()
    assert e.stats["in_msgs"] == before + 1 and e.stats["in_bytes"] > 0


@pytest.mark.parametrize("header, outcome", [(None, "msg"), (b"NATS/1.0 503\r\n\r\n", "no_responders"),
                                             (b"NATS/1.0 404 Message Not Found\r\n\r\n", "msg"),
                                             (b"NATS/2.0\r\nK: a\r\n\r\n", "msg")])
def test_any_other_reply_of_a_raw_request_is_the_msg_a_request_gets(header, outcome):
    """No header block, a status or an unknown version: the Msg (and its outcome) of a request that is not raw."""
    got = []
    for raw in (True, False):
        e, d = with_inbox()
        req, _, _ = e.direct_request("svc", b"", [], raw)
        parts, _ = reply_parts(e, req, b"" if header else b"v", header=header)
        assert e.direct_reply(req, parts) == outcome
        m = req.msg
        got.append((type(m), m.data, m.reply, m.headers, repr(e.take())))
    assert got[0] == got[1] and got[0][0] is Msg
