"""aio/jetstream/push.py, driven by a face that reads the deliver
subscription itself (natspy): ``watch`` then ``sort`` each message; flow
control is answered, heartbeats kept from the user, a missed heartbeat and a
deleted consumer reported."""

import asyncio

import tclnats_py
from tclnats_py.aio.jetstream.push import PushSubscription
from tests.aio_helpers import settle


def test_sort_hands_out_messages_and_answers_flow_control(js_server):
    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        await js.create_stream("PSORT", subjects=["psort.>"])
        try:
            await js.create_consumer("PSORT", {"durable_name": "C", "deliver_subject": "dlv.psort.c",
                                               "flow_control": True, "idle_heartbeat": 0.3, "ack_policy": "none"})
            info = await js.consumer_info("PSORT", "C")
            errors = []
            ps = PushSubscription(js, info, None, errors.append)
            raw = await nc.subscribe("dlv.psort.c")
            ps.watch()
            for i in range(50):
                await js.publish("psort.x", b"%d" % i)
            got = []
            deadline = asyncio.get_running_loop().time() + 10
            while len(got) < 50 or ps.state.heartbeats < 1:
                assert asyncio.get_running_loop().time() < deadline
                m = await raw.next_msg(5)
                jm = ps.sort(m)
                if jm is not None:
                    got.append(jm.data)
            assert got == [b"%d" % i for i in range(50)]
            assert ps.delivered == 50 and errors == []
            # silence: the watch reports a missed heartbeat
            await raw.unsubscribe()
            await settle(lambda: any(e.code == "ErrNoHeartbeat" for e in errors), 5)
            await ps.unsubscribe()
        finally:
            await js.delete_stream("PSORT")
            await nc.close()
    asyncio.run(asyncio.wait_for(go(), 60))


def test_sort_reports_a_deleted_consumer_and_stops(js_server):
    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        await js.create_stream("PSTOP", subjects=["pstop.>"])
        try:
            await js.create_consumer("PSTOP", {"durable_name": "D", "deliver_subject": "dlv.pstop",
                                               "ack_policy": "none"})
            info = await js.consumer_info("PSTOP", "D")
            errors = []
            ps = PushSubscription(js, info, None, errors.append)
            gone = tclnats_py.Msg("dlv.pstop", b"", None, {"Status": ["409"], "Description": ["Consumer Deleted"]})
            assert ps.sort(gone) is None
            await settle(lambda: ps.stopped is not None)
            assert ps.stopped.code == "ErrConsumerDeleted"
            await settle(lambda: [e.code for e in errors] == ["ErrConsumerDeleted"])
        finally:
            await js.delete_stream("PSTOP")
            await nc.close()
    asyncio.run(asyncio.wait_for(go(), 60))
