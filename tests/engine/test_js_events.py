"""JetStream events (engine/js/events.py): every state machine of engine/js
answers with typed events it names in its EVENTS, each one of JS_EVENTS; a
face dispatches them through a table built once, which refuses a handler
missing and an event it does not know."""

import json

import pytest

from tclnats_py.engine.effects import UnknownEffect
from tclnats_py.engine.js import events as E
from tclnats_py.engine.js import kv, objstore, ordered, pull, push
from tclnats_py.engine.connection import Msg
from tests.engine.test_js_engine import err, hb, js_msg, status

pytestmark = pytest.mark.unit


def fc(reply="$JS.FC.S.x"):
    return status(100, "FlowControl Request", reply=reply)


def ordered_events():
    oc = ordered.OrderedConsumer("S", idle_heartbeat_ms=100)
    oc.on_created({"name": "c1", "delivered": {"stream_seq": 0, "consumer_seq": 0}})
    out = oc.on_msg(js_msg(1, 1)) + oc.on_msg(fc()) + oc.on_msg(hb(last=1, stalled="$JS.FC.S.y"))
    out += oc.on_msg(js_msg(5, 3))                       # a gap: Reset
    out += oc.on_create_failed(err("ErrTimeout"))        # Retry
    out += oc.on_create_failed(err("ErrStreamNotFound"))  # Stop
    return out


def push_events():
    st = push.PushState("S", "C", idle_heartbeat_ms=500)
    out = st.on_msg(js_msg(1, 1)) + st.on_msg(fc()) + st.on_msg(hb(stalled="stalled.reply"))
    out += st.on_msg(status(409, "Exceeded MaxWaiting")) + st.on_heartbeat_missed()
    return out + st.on_msg(status(409, "Consumer Deleted"))


def fetch_events():
    f = pull.Fetch(5, timeout_ms=1000)
    out = f.on_msg(js_msg(1, 1)) + f.on_msg(status(100, "Idle Heartbeat")) + f.on_msg(status(408, "Request Timeout"))
    return out + pull.Fetch(5, timeout_ms=1000).on_timeout()


def consume_events():
    c = pull.Consume(4, expires_ms=1000, idle_heartbeat_ms=200)
    out = c.start() + c.on_msg(js_msg(1, 1)) + c.on_heartbeat_missed()
    return out + c.on_msg(status(409, "Consumer Deleted"))


def kv_events():
    w = kv.Watcher("B", "$KV.B")
    return w.on_consumer_created({"num_pending": 1}) + w.on_msg(js_msg(3, 1, subject="$KV.B.a"))


def obj_events():
    info = {"name": "a", "bucket": "O", "nuid": "N", "size": 0, "chunks": 0}
    w = objstore.Watcher()
    return w.on_consumer_created({"num_pending": 1}) + w.on_msg(js_msg(2, 1, data=json.dumps(info).encode()))


PRODUCERS = [
    (ordered.OrderedConsumer, ordered_events),
    (push.PushState, push_events),
    (pull.Fetch, fetch_events),
    (pull.Consume, consume_events),
    (kv.Watcher, kv_events),
    (objstore.Watcher, obj_events),
]


@pytest.mark.parametrize("producer, run", PRODUCERS, ids=lambda p: getattr(p, "__qualname__", ""))
def test_every_event_of_a_producer_is_typed_and_named_in_its_events(producer, run):
    got = run()
    assert got and all(isinstance(ev, E.JS_EVENTS) for ev in got), got
    # each kind the producer names comes in these scenarios, and no other
    assert {type(ev) for ev in got} == set(producer.EVENTS), got
    assert set(producer.EVENTS) <= set(E.JS_EVENTS)


def test_the_ordered_consumers_events_are_split_by_where_they_come_from():
    oc = ordered.OrderedConsumer
    assert set(oc.MSG_EVENTS) | set(oc.CREATE_FAILED_EVENTS) == set(oc.EVENTS)
    assert not set(oc.MSG_EVENTS) & set(oc.CREATE_FAILED_EVENTS)


def test_events_are_tuples_that_compare_by_class():
    m = Msg("s", b"x")
    assert E.make(E.Delivered, (m, None)) == E.Delivered(m, None) and type(E.make(E.Delivered, (m, None))) is E.Delivered
    d = E.Delivered(m, {"stream_seq": 1})
    assert (d.msg, d.meta) == (m, {"stream_seq": 1}) and tuple(d) == (m, {"stream_seq": 1})
    assert d != (m, {"stream_seq": 1}) and E.HEARTBEAT != E.INIT_DONE and E.Heartbeat() == E.HEARTBEAT
    assert E.Warn(err("ErrNoHeartbeat")) != E.Stop(err("ErrNoHeartbeat"))
    assert repr(E.Retry(5, "boom")) == "Retry(ms=5, error='boom')"
    assert len(set(E.HANDLER_NAMES.values())) == len(E.JS_EVENTS) == len(set(E.JS_EVENTS))


class Handlers:
    def __init__(self):
        self.seen = []

    def on_delivered(self, ev):
        self.seen.append(ev)
        return "msg"

    def on_flow_reply(self, ev):
        self.seen.append(ev)


def test_a_table_dispatches_what_it_knows_and_refuses_the_rest():
    h = Handlers()
    table = E.event_table(h, (E.Delivered, E.FlowReply))
    m = Msg("s", b"x")
    assert table[E.Delivered](E.Delivered(m, None)) == "msg" and table[E.FlowReply](E.FlowReply("r")) is None
    assert h.seen == [E.Delivered(m, None), E.FlowReply("r")]
    with pytest.raises(E.UnknownEvent) as e:
        table[E.HEARTBEAT.__class__](E.HEARTBEAT)
    assert isinstance(e.value, UnknownEffect) and isinstance(e.value, TypeError) and "Heartbeat" in str(e.value)
    # a handler missing: the table is not built, and says which
    with pytest.raises(TypeError) as e:
        E.event_table(h, push.PushState.EVENTS)
    assert "on_warn" in str(e.value) and "on_stop" in str(e.value) and "on_delivered" not in str(e.value)
    # handlers under a prefix; an inline class is the face's loop's, refused by the table
    class Private:
        def _on_flow_reply(self, ev):
            return ev.subject
    table = E.event_table(Private(), (E.Delivered, E.FlowReply), "_", inline=(E.Delivered,))
    assert set(table) == {E.FlowReply} and table[E.FlowReply](E.FlowReply("x")) == "x"
    with pytest.raises(E.UnknownEvent):
        table[E.Delivered]


class FakeClient:
    def __init__(self):
        self.published = []

    def publish(self, subject, data, **kw):
        self.published.append((subject, data))


class FakeJs:
    def __init__(self):
        self.client = FakeClient()


def test_the_asyncio_faces_tables_refuse_an_unknown_event():
    from tclnats_py.aio.jetstream.ordered import OrderedConsumer
    from tclnats_py.aio.jetstream.push import PushSubscription
    js = FakeJs()
    ps = PushSubscription(js, {"config": {"deliver_subject": "d"}, "stream_name": "S", "name": "C"}, print, None)
    assert set(ps._dispatch) == set(push.PushState.EVENTS) - {E.Delivered}
    m = Msg("d", b"x", "$JS.ACK.S.C.1.1.1.0.0")
    out = ps._events([E.make(E.Delivered, (m, None)), E.FlowReply("fc")])
    assert [o.msg for o in out] == [m] and js.client.published == [("fc", b"")]
    with pytest.raises(E.UnknownEvent):
        ps._events([E.INIT_DONE])
    oc = OrderedConsumer(js, ordered.OrderedConsumer("S"))
    assert set(oc._dispatch) | {E.Delivered} == set(ordered.OrderedConsumer.MSG_EVENTS)
    assert set(oc._dispatch_failed) == set(ordered.OrderedConsumer.CREATE_FAILED_EVENTS)
    with pytest.raises(E.UnknownEvent):
        oc._dispatch[E.Warn]


def test_the_tcl_faces_fetch_table_refuses_an_unknown_event():
    from tclnats_py.tclface.js import PullRequest
    f = pull.Fetch(2, timeout_ms=1000)
    pr = PullRequest(None, f, None)
    assert set(pr._dispatch) | {E.Delivered} == set(pull.Fetch.EVENTS)
    with pytest.raises(E.UnknownEvent):
        pr._dispatch[E.Pull](E.Pull(b"{}"), None, [])
    with pytest.raises(E.UnknownEvent):  # on_msg hands it to the callback itself
        pr._dispatch[E.Delivered]


def test_a_fetch_without_deliver_makes_no_delivered_events_and_the_same_result():
    msgs = [js_msg(1, 1), js_msg(2, 2)]
    quiet, told = pull.Fetch(3, timeout_ms=1000, deliver=False), pull.Fetch(3, timeout_ms=1000)
    feed = [*msgs, status(100, "Idle Heartbeat"), status(408, "Request Timeout")]
    quiet_out = [ev for m in feed for ev in quiet.on_msg(m)]
    told_out = [ev for m in feed for ev in told.on_msg(m)]
    assert [ev for ev in told_out if ev.__class__ is not E.Delivered] == quiet_out
    assert [ev.msg for ev in told_out if ev.__class__ is E.Delivered] == msgs
    assert quiet_out == [E.HEARTBEAT, E.Ended(feed[-1])]
    assert quiet.result() == told.result() == msgs and quiet.outcome == told.outcome == "status"
