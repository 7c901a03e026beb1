"""NATS over WebSocket on the asyncio face: ws:// and wss:// URLs to a real
nats-server ``websocket {}`` listener (the ws_server and wss_server
fixtures): core traffic, TLS with the tls:// options and name check,
compression, reconnect through a server restart, JetStream and KV, a mixed
pool of a TCP and a WebSocket URL."""

import asyncio

import pytest

import tclnats_py
from tclnats_py.testing.server import NatsServer
from tests.aio_helpers import settle

pytestmark = pytest.mark.feature("websocket")


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def in_thread(fn, *args):
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


async def core_traffic(nc, n=500):
    """Publish n messages of growing size to a subscriber, and a request."""
    got = []
    done = asyncio.Event()

    def on_msg(m):
        got.append(m.data)
        if len(got) == n:
            done.set()
    await nc.subscribe("ws.data", cb=on_msg)
    await nc.subscribe("ws.svc", cb=lambda m: nc.publish(m.reply, b"re:" + m.data))
    for i in range(n):
        nc.publish("ws.data", b"%d:" % i + b"x" * (i * 37))
    await asyncio.wait_for(done.wait(), 10)
    assert got == [b"%d:" % i + b"x" * (i * 37) for i in range(n)]
    assert (await nc.request("ws.svc", b"q", timeout=5)).data == b"re:q"


def test_ws_publish_deliver_request(ws_server):
    async def go():
        nc = await tclnats_py.connect(ws_server.ws_url)
        assert nc._engine.websocket
        await core_traffic(nc)
        big = b"B" * (1024 * 1024 - 100)  # one message of nearly max_payload, in several frames
        sub = await nc.subscribe("ws.big")
        nc.publish("ws.big", big)
        assert (await sub.next_msg(5)).data == big
        await nc.close()
        assert nc.status == "closed"
    run(go())


def test_wss_with_the_tls_options_and_name_check(wss_server):
    certs = wss_server.certs
    url = wss_server.ws_url.replace("127.0.0.1", "localhost")

    async def go():
        nc = await tclnats_py.connect(url, tls_ca=certs["ca"])
        await core_traffic(nc, 100)
        await nc.close()
        # the certificate names localhost and 127.0.0.1, not this name
        errors = []
        with pytest.raises(tclnats_py.NatsError) as e:
            await tclnats_py.connect(url, tls_ca=certs["ca"], tls_hostname="not-this.example", connect_timeout=2,
                                     error_cb=errors.append)
        assert e.value.code in ("ErrTLS", "ErrNoServers")
        assert "ErrTLS" in [x.code for x in errors]
    run(go())


def test_ws_with_permessage_deflate_and_extra_headers():
    with NatsServer(websocket="compression: true") as srv:
        async def go():
            nc = await tclnats_py.connect(srv.ws_url, ws_headers={"Authorization": "Bearer t0k"})
            assert nc._engine._ws.extensions == ("permessage-deflate",)
            await core_traffic(nc, 300)
            await nc.close()
            plain = await tclnats_py.connect(srv.ws_url, ws_compression=False)
            assert plain._engine._ws.extensions == ()
            await core_traffic(plain, 50)
            await plain.close()
        run(go())


def test_ws_reconnects_through_a_server_restart(ws_server):
    async def go():
        events = []
        nc = await tclnats_py.connect(ws_server.ws_url, reconnect_time_wait=0.05, max_reconnect_attempts=-1,
                                      status_cb=events.append, error_cb=lambda e: events.append(e.code))
        sub = await nc.subscribe("keep.*")
        await nc.flush()
        await in_thread(ws_server.stop)
        await settle(lambda: nc.status == "reconnecting")
        # the server's close frame (1001 Server Shutdown) or the EOF after it
        assert nc.last_error.code in ("ErrBrokenSocket", "ErrConnectionRefused", "ErrWebSocket")
        for i in range(20):
            nc.publish("keep.x", b"%d" % i)  # buffered while reconnecting
        await in_thread(ws_server.start)
        await settle(lambda: nc.status == "connected", 20)
        assert [(await sub.next_msg(5)).data for _ in range(20)] == [b"%d" % i for i in range(20)]
        assert "reconnecting" in events and events[-1] == "connected"
        await nc.close()
    run(go())


def test_ws_jetstream_publish_fetch_and_kv(ws_server):
    async def go():
        nc = await tclnats_py.connect(ws_server.ws_url)
        js = nc.jetstream()
        await js.create_stream("WS", subjects=["wsjs.*"], storage="memory")
        acks = [await js.publish("wsjs.a", b"m%d" % i) for i in range(50)]
        assert [a.seq for a in acks] == list(range(1, 51))
        cons = await js.create_consumer("WS", durable_name="D")
        msgs = await cons.fetch(50, 5)
        assert [m.data for m in msgs] == [b"m%d" % i for i in range(50)]
        for m in msgs:
            await m.ack()
        kv = await js.create_key_value("WSKV", history=3, storage="memory")
        await kv.put("k", b"v1")
        await kv.put("k", b"v2")
        assert (await kv.get("k")).value == b"v2"
        await nc.close()
    run(go())


def test_a_mixed_pool_reconnects_from_ws_to_tcp_and_back():
    with NatsServer(websocket=True) as a, NatsServer(websocket=True) as b:
        async def go():
            nc = await tclnats_py.connect([a.ws_url, b.url], dont_randomize=True, reconnect_time_wait=0.05,
                                          max_reconnect_attempts=-1)
            assert nc._engine.websocket and nc.current_server[1] == a.ws_port
            await core_traffic(nc, 50)
            await in_thread(a.stop)
            await settle(lambda: nc.status == "connected" and nc.current_server[1] == b.port, 20)
            assert not nc._engine.websocket
            await core_traffic(nc, 50)
            await in_thread(a.start)
            await in_thread(b.stop)
            await settle(lambda: nc.status == "connected" and nc.current_server[1] == a.ws_port, 20)
            assert nc._engine.websocket
            await core_traffic(nc, 50)
            await nc.close()
        run(go())
