"""aio/jetstream/ordered.py, driven by a face that creates the first
consumer and reads the deliver subscription itself (natspy): ``adopt``,
``sort`` (in order, a gap asks for a reset), ``reset`` onto a new deliver
subscription from the next stream sequence, ``heartbeat_missed``; and the
factory's ``inactive_threshold``."""

import asyncio

import pytest

import tclnats_py
from tclnats_py.engine.js.api import api_call


@pytest.mark.unit
def test_the_factory_passes_the_inactive_threshold_on():
    nc = tclnats_py.Client()
    js = nc.jetstream()
    assert js.ordered_consumer("S").state.inactive_threshold_ms == 2000
    oc = js.ordered_consumer("S", inactive_threshold=300, idle_heartbeat=2, retry=10)
    assert oc.state.inactive_threshold_ms == 300_000 and oc.heartbeat_timeout == 6.0
    assert oc.state.retry_ms == 10_000


def test_adopt_sort_and_reset_on_a_caller_subscription(js_server):
    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        await js.create_stream("OADOPT", subjects=["oadopt.>"])
        try:
            for i in range(6):
                await js.publish("oadopt.x", b"%d" % i)
            oc = js.ordered_consumer("OADOPT", idle_heartbeat=1)
            first = await nc.subscribe(nc.new_inbox())
            # the caller creates the first consumer (natspy: with nats-py's request)
            info = await js._run(api_call(oc.state.create_request(js.jsapi, first.subject)))
            oc.adopt(info, first)
            assert oc.subscription is first and oc.heartbeat_timeout == 3.0
            got = []
            for _ in range(3):
                jm, reset = oc.sort(await first.next_msg(5))
                assert not reset
                got.append(jm.data)
            assert got == [b"0", b"1", b"2"]
            # a gap (the next message skipped): a reset is asked for
            await first.next_msg(5)
            jm, reset = oc.sort(await first.next_msg(5))
            assert jm is None and reset
            subs = []

            async def subscribe(subject):
                subs.append(await nc.subscribe(subject))
                return subs[-1]
            reported = []

            async def report(err):
                reported.append(err)
            await oc.reset(subscribe, report)
            assert oc.subscription is subs[0] and not first.is_active and reported == []
            assert oc.name and oc.resets == 1
            # from the next stream sequence after the last one handed out
            jm, reset = oc.sort(await subs[0].next_msg(5))
            assert jm.data == b"3" and not reset
            assert oc.heartbeat_missed() is True  # silence is a reset too
            await oc.stop()
            assert not subs[0].is_active
        finally:
            await js.delete_stream("OADOPT")
            await nc.close()
    asyncio.run(asyncio.wait_for(go(), 60))
