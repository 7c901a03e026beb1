"""aio/transport.py: reading and writing for the client.  Events of a socket
the engine has given up are ignored; what the socket cannot take while the
transport is paused stays in the engine and leaves on resume_writing."""

import asyncio

from tclnats_py.aio.client import Client


def test_a_socket_given_up_is_ignored(nats_server):
    async def go():
        nc = await Client(nats_server.url).connect()
        got = []
        sub = await nc.subscribe("stale", cb=got.append)
        await nc.flush()
        old = nc._transport.get_protocol()
        nc.engine.force_reconnect()
        nc.run_effects()
        while not nc.is_connected or nc._transport is None or nc._transport.get_protocol() is old:
            await asyncio.sleep(0.01)
        old.data_received(b"MSG stale %d 2\r\nhi\r\n" % sub.sid)
        await asyncio.sleep(0.05)
        assert got == []
        nc.publish("stale", b"ok")
        await nc.flush()
        await asyncio.sleep(0.05)
        assert [m.data for m in got] == [b"ok"]
        await nc.close()
    asyncio.run(go())


def test_a_paused_transport_keeps_the_bytes_in_the_engine_until_resumed(nats_server):
    async def go():
        nc = await Client(nats_server.url).connect()
        sub = await nc.subscribe("paused")
        await nc.flush()
        proto = nc._transport.get_protocol()
        proto.pause_writing()
        nc.publish("paused", b"x")
        await asyncio.sleep(0.02)
        assert nc.pending_data_size > 0
        proto.resume_writing()
        assert nc.pending_data_size == 0
        assert (await sub.next_msg(5)).data == b"x"
        await nc.close()
    asyncio.run(go())
