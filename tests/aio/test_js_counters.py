"""Counters (ADR-49) on the asyncio face against nats-server 2.15.1, and a
2.10 server refusing them."""

import asyncio

import pytest

import tclnats_py
from tclnats_py import NatsError
from tclnats_py.aio.jetstream import Counter, StreamConfig


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


@pytest.mark.feature("counters")
def test_counter_add_get_get_many_with_big_values(js_server):
    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        s = await js.create_stream("CTR_AIO", subjects=["ctr.>"], allow_msg_counter=True, allow_direct=True)
        try:
            assert s.config.allow_msg_counter is True
            assert isinstance(s.config, StreamConfig)
            c = await js.counter("CTR_AIO")
            assert isinstance(c, Counter)
            assert await c.add("ctr.a", 5) == 5
            assert await c.add("ctr.a", -7) == -2
            big = 10 ** 40
            assert await c.add("ctr.b", big) == big
            assert await c.add("ctr.b", str(big)) == 2 * big
            assert await c.get("ctr.a") == -2
            assert await c.get("ctr.b") == 2 * big
            assert await c.get_many(["ctr.a", "ctr.b", "ctr.none"]) == {"ctr.a": -2, "ctr.b": 2 * big}
            with pytest.raises(NatsError) as e:
                await c.get("ctr.none")
            assert e.value.code == "ErrMsgNotFound"
            # a PubAck of a counter stream carries the value as the server's text
            ack = await js.publish("ctr.a", b"", headers={"Nats-Incr": "3"})
            assert ack.val == "1" and ack.seq == 5
            # without allow_direct the gets go through the stream API
            await js.update_stream("CTR_AIO", allow_direct=False)
            c2 = await js.counter("CTR_AIO")
            assert await c2.get("ctr.a") == 1 and await c2.get_many(["ctr.b"]) == {"ctr.b": 2 * big}
        finally:
            await js.delete_stream("CTR_AIO")
            await nc.close()
    run(go())


@pytest.mark.feature("counters")
def test_counter_errors(js_server):
    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        await js.create_stream("CTR_PLAIN", subjects=["plain.>"])
        await js.create_stream("CTR_ERR", subjects=["cerr.>"], allow_msg_counter=True)
        try:
            plain = await js.counter("CTR_PLAIN")
            with pytest.raises(NatsError) as e:
                await plain.add("plain.a", 1)
            assert e.value.code == "ErrJSResponse" and e.value.details["err_code"] == 10168
            c = await js.counter("CTR_ERR")
            for bad in ("abc", 1.5, None, True):
                with pytest.raises(NatsError) as e:
                    await c.add("cerr.a", bad)
                assert e.value.code == "ErrInvalidArg"
            # a counter stream refuses a publish without an increment, or with a body
            for hdrs, data, code in (({}, b"x", 10169), ({"Nats-Incr": "1"}, b"x", 10170)):
                with pytest.raises(NatsError) as e:
                    await js.publish("cerr.a", data, headers=hdrs or None)
                assert e.value.details["err_code"] == code
            with pytest.raises(NatsError) as e:
                await js.counter("CTR_NONE")
            assert e.value.code == "ErrStreamNotFound"
            ack = await js.publish("plain.b", b"x")
            assert ack.val is None
        finally:
            await js.delete_stream("CTR_PLAIN")
            await js.delete_stream("CTR_ERR")
            await nc.close()
    run(go())


@pytest.mark.feature("counters", "api_level")
def test_counters_on_a_server_too_old(old_js_server):
    async def go():
        nc = await tclnats_py.connect(old_js_server.url)
        js = nc.jetstream()
        try:
            with pytest.raises(NatsError) as e:
                await js.counter("ANY")
            assert e.value.code == "ErrServerTooOld" and "2.12" in str(e.value)
        finally:
            await nc.close()
    run(go())
