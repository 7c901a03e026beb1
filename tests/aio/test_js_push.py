"""Push consumers bound with JetStream.push_subscribe:
deliver subject, deliver group, flow control, idle heartbeats, binding to
an existing push consumer, against a real server."""

import asyncio

import pytest

import tclnats_py
from tests.aio_helpers import settle
from tclnats_py.engine.js.events import Delivered, FlowReply, Stop, Warn
from tclnats_py.engine.js.push import PushState


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 90))



@pytest.mark.unit
def test_push_state_sorts_deliveries():
    st = PushState("S", "C", idle_heartbeat_ms=500)
    assert st.heartbeat_timeout_ms == 1000
    fc = tclnats_py.Msg("d", b"", "fc.reply", {"Status": ["100"], "Description": ["FlowControl Request"]})
    assert st.on_msg(fc) == [FlowReply("fc.reply")]
    hb = tclnats_py.Msg("d", b"", None, {"Status": ["100"], "Description": ["Idle Heartbeat"],
                                         "Nats-Consumer-Stalled": ["stalled.reply"]})
    assert st.on_msg(hb) == [FlowReply("stalled.reply")]
    m = tclnats_py.Msg("d", b"x", "$JS.ACK.S.C.1.1.1.0.0", None)
    assert st.on_msg(m) == [Delivered(m, None)]
    gone = tclnats_py.Msg("d", b"", None, {"Status": ["409"], "Description": ["Consumer Deleted"]})
    ev = st.on_msg(gone)
    assert type(ev[0]) is Stop and ev[0].error.code == "ErrConsumerDeleted"
    ev = st.on_heartbeat_missed()
    assert type(ev[0]) is Warn and ev[0].error.code == "ErrNoHeartbeat"


def test_push_subscribe_deliver_subject_group_flow_control_heartbeats(js_server):
    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        await js.create_stream("PUSH", subjects=["push.>"])
        try:
            # two subscribers in one deliver group share the messages
            a, b = [], []
            sub_a = await js.push_subscribe("PUSH", cb=lambda m: a.append(m), durable_name="GRP",
                                            deliver_subject="deliver.grp", deliver_group="workers",
                                            flow_control=True, idle_heartbeat=0.5, ack_policy="none")
            assert sub_a.deliver_subject == "deliver.grp" and sub_a.deliver_group == "workers"
            cfg = (await sub_a.consumer_info())["config"]
            assert cfg["flow_control"] is True and cfg["idle_heartbeat"] == 500_000_000
            sub_b = await js.push_subscribe("PUSH", cb=lambda m: b.append(m), consumer="GRP")  # bind by name
            assert sub_b.deliver_subject == "deliver.grp" and sub_b.deliver_group == "workers"
            for i in range(200):
                await js.publish("push.x", b"p%d" % i)
            await settle(lambda: len(a) + len(b) == 200)
            assert a and b  # the group split them
            assert sorted(int(m.data[1:]) for m in a + b) == list(range(200))
            # idle heartbeats arrive while nothing is sent, and keep the subscription quiet
            await asyncio.sleep(1.3)
            assert sub_a.state.heartbeats + sub_b.state.heartbeats >= 1
            await sub_b.unsubscribe()
            await sub_a.delete()

            # flow control: a big burst makes the server ask, and the subscription answers
            errors = []
            sub = await js.push_subscribe("PUSH", flow_control=True, idle_heartbeat=1, error_cb=errors.append,
                                          ack_policy="none", deliver_policy="all")
            got = 0
            async for m in sub:
                got += 1
                if got == 200:
                    break
            big = b"z" * 64 * 1024
            for _ in range(300):  # about 19 MiB
                await js.publish_async("push.big", big)
            await js.publish_async_complete()
            while got < 500:
                await sub.next_msg(10)
                got += 1
            assert sub.state.flow_controls >= 1, "the server never asked for flow control"
            assert not errors
            await sub.delete()
        finally:
            await js.delete_stream("PUSH")
            await nc.close()
    run(go())


def test_push_subscription_reports_missed_heartbeats_and_deletion(js_server):
    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        await js.create_stream("PUSH2", subjects=["push2.>"])
        try:
            errors = []

            async def error_cb(e):  # a coroutine error_cb is awaited
                await asyncio.sleep(0)
                errors.append(e)
            sub = await js.push_subscribe("PUSH2", durable_name="D", idle_heartbeat=0.2, error_cb=error_cb)
            await js.publish("push2.a", b"1")
            m = await sub.next_msg(5)
            assert m.data == b"1" and m.metadata.consumer == "D"
            await m.ack()
            # heartbeats stop when the deliver subject's interest goes (the server
            # drops a push consumer's deliveries nobody receives): fake it by
            # pausing our subscription's view of them
            await sub._sub.unsubscribe()
            await settle(lambda: any(e.code == "ErrNoHeartbeat" for e in errors), 5)
            # a pull consumer cannot be bound as push; a push one cannot be configured on bind
            await js.create_consumer("PUSH2", durable_name="PULL")
            with pytest.raises(tclnats_py.ErrInvalidArg):
                await js.push_subscribe("PUSH2", consumer="PULL")
            with pytest.raises(tclnats_py.ErrInvalidArg):
                await js.push_subscribe("PUSH2", consumer="D", deliver_group="x")
            with pytest.raises(tclnats_py.ErrInvalidArg):
                await js.push_subscribe("PUSH2", flow_control=True)
            await sub.unsubscribe()
            with pytest.raises(tclnats_py.ErrConsumerStopped):
                await sub.next_msg(1)
        finally:
            await js.delete_stream("PUSH2")
            await nc.close()
    run(go())
