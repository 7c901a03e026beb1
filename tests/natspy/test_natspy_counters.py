"""Counters (ADR-49) through natspy as nats-py 2.16.0 has them: the stream's
``allow_msg_counter``, ``Header.INCR``, the PubAck's ``val`` (text)."""

import asyncio

import pytest

from tclnats_py import natspy as nats
from tclnats_py.natspy.js import api
from tclnats_py.natspy.js import errors as js_errors


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


@pytest.mark.unit
def test_the_names_are_nats_pys():
    assert api.Header.INCR == "Nats-Incr"
    cfg = api.StreamConfig(name="C", subjects=["c.>"], allow_msg_counter=True)
    assert cfg.as_dict()["allow_msg_counter"] is True
    assert api.StreamConfig.from_response({"name": "C", "allow_msg_counter": True}).allow_msg_counter is True
    ack = api.PubAck.from_response({"stream": "C", "seq": 2, "val": "12345678901234567890123"})
    assert ack.val == "12345678901234567890123" and api.PubAck(stream="C", seq=1).val is None


@pytest.mark.feature("counters")
def test_counter_publishes_through_natspy(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream()
        si = await js.add_stream(name="NPCTR", subjects=["npctr.>"], allow_msg_counter=True)
        await js.add_stream(name="NPPLAIN", subjects=["npplain.>"])
        try:
            assert si.config.allow_msg_counter is True
            ack = await js.publish("npctr.a", b"", headers={api.Header.INCR: "7"})
            assert ack.val == "7"
            ack = await js.publish("npctr.a", b"", headers={api.Header.INCR: "-" + "9" * 30})
            assert int(ack.val) == 7 - int("9" * 30)
            with pytest.raises(js_errors.BadRequestError) as err:
                await js.publish("npplain.a", b"", headers={api.Header.INCR: "1"})
            assert err.value.err_code == 10168
            with pytest.raises(js_errors.BadRequestError) as err:
                await js.publish("npctr.a", b"x")
            assert err.value.err_code == 10169
            assert (await js.publish("npplain.b", b"x")).val is None
        finally:
            await js.delete_stream("NPCTR")
            await js.delete_stream("NPPLAIN")
            await nc.close()
    run(go())
