"""Priority groups (ADR-42) and natspy: nats-py 2.16.0 has no API for them (no config
fields, no pull ``group``, no unpin), so natspy adds none; it reads such a consumer
and reports the server's refusal of a pull without a group as nats-py does."""

import asyncio

import pytest

import tclnats_py
from tclnats_py import natspy as nats
from tclnats_py.natspy.js import api
from tclnats_py.natspy.js import errors as js_errors


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


@pytest.mark.unit
def test_no_priority_names_as_in_nats_py_2_16():
    names = set(api.ConsumerConfig.__dataclass_fields__)
    assert not {"priority_groups", "priority_policy", "priority_timeout", "pinned_ttl"} & names


def test_a_priority_consumer_through_natspy(js_server):
    async def go():
        c = await tclnats_py.connect(js_server.url)
        js = c.jetstream()
        s = await js.create_stream("NP_PRIO", subjects=["np_prio.>"], storage="memory")
        await s.create_consumer(durable_name="P", priority_policy="pinned_client", priority_groups=["jobs"],
                                pinned_ttl=5)
        await js.publish("np_prio.a", b"x")
        nc = await nats.connect(js_server.url)
        njs = nc.jetstream()
        info = await njs.consumer_info("NP_PRIO", "P")
        assert info.name == "P" and info.config.durable_name == "P"
        sub = await njs.pull_subscribe_bind("P", stream="NP_PRIO")
        with pytest.raises(js_errors.APIError) as e:
            await sub.fetch(1, timeout=2)
        assert e.value.code == 400 and "Priority Group" in e.value.description
        # the asyncio face, on the same server, pulls it with its group
        cons = await js.consumer("NP_PRIO", "P")
        assert [m.data for m in await cons.fetch(1, 2, group="jobs")] == [b"x"]
        await nc.close()
        await c.close()
    run(go())
