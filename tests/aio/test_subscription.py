"""aio/subscription.py: deliveries reach a callback subscription in one
call per run of messages, a callback may return any awaitable (publish()'s
result included), and ``take`` hands out what is queued without waiting."""

import asyncio

from tclnats_py.aio.client import Client


def test_deliveries_of_many_messages_reach_a_subscription_in_one_call(nats_server):
    async def go():
        c = await Client(nats_server.url).connect()
        got = []
        sub = await c.subscribe("x.y", cb=got.append)
        await asyncio.sleep(0)  # the consumer task parks
        esub = sub._engine_sub
        calls = []
        real = sub._deliver_many
        sub._deliver_many = lambda msgs: (calls.append(len(msgs)), real(msgs))
        # two messages of one read: the engine hands them over as one DeliverMany
        sid = esub.sid
        c.engine.receive_data(b"MSG x.y %d 1\r\na\r\nMSG x.y %d 1\r\nb\r\n" % (sid, sid))
        c.run_effects()
        await asyncio.sleep(0)
        assert calls == [2]
        assert [m.data for m in got] == [b"a", b"b"]
        assert sub.delivered == 2
        await c.close()
    asyncio.run(go())


def test_a_callback_may_return_what_publish_returns(nats_server):
    async def go():
        errors = []
        nc = await Client(nats_server.url, error_cb=errors.append).connect()
        answers = await nc.subscribe("answers")
        await nc.subscribe("asks", cb=lambda m: nc.publish("answers", m.data))
        await nc.flush()
        for i in range(20):
            nc.publish("asks", b"%d" % i)
        got = [(await answers.next_msg(5)).data for _ in range(20)]
        assert got == [b"%d" % i for i in range(20)]
        assert errors == []
        await nc.close()
    asyncio.run(go())


def test_take_hands_out_queued_messages_in_order(nats_server):
    async def go():
        nc = await Client(nats_server.url).connect()
        sub = await nc.subscribe("queued")
        for i in range(3):
            nc.publish("queued", b"%d" % i)
        await nc.flush()
        while sub.pending_msgs < 3:
            await asyncio.sleep(0.01)
        assert [sub.take().data for _ in range(3)] == [b"0", b"1", b"2"]
        assert sub.pending_msgs == 0 and sub.pending_bytes == 0 and sub.delivered == 3
        await nc.close()
    asyncio.run(go())
