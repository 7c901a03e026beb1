"""nats-py programs over WebSocket: ws:// and wss:// URLs as nats-py takes
them (ws_connection_headers, the tls context for wss, no mixing of
WebSocket and TCP URLs), on a real nats-server websocket listener."""

import asyncio
import ssl

import pytest

from tclnats_py.natspy import errors as nerr
from tclnats_py.natspy.aio.client import Client as NATS

pytestmark = pytest.mark.feature("websocket")


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def _traffic(nc):
    sub = await nc.subscribe("np.ws")
    await nc.publish("np.ws", b"hello", headers={"k": "v"})
    msg = await sub.next_msg(5)
    assert (msg.data, msg.headers["k"]) == (b"hello", "v")

    async def echo(m):
        await m.respond(b"re:" + m.data)
    await nc.subscribe("np.svc", cb=echo)
    assert (await nc.request("np.svc", b"q", timeout=5)).data == b"re:q"


def test_ws_url_with_headers_jetstream_and_a_restart(ws_server):
    async def main():
        reconnected = asyncio.Event()

        async def on_reconnect():
            reconnected.set()
        nc = NATS()
        await nc.connect(ws_server.ws_url, ws_connection_headers={"Authorization": ["Bearer x"]},
                         reconnect_time_wait=0.1, reconnected_cb=on_reconnect)
        assert nc.connected_url.scheme == "ws"
        await _traffic(nc)
        js = nc.jetstream()
        await js.add_stream(name="NPWS", subjects=["npws.*"])
        ack = await js.publish("npws.a", b"one")
        psub = await js.pull_subscribe("npws.a", "D")
        assert [m.data for m in await psub.fetch(1, timeout=5)] == [b"one"]
        assert ack.seq == 1
        await asyncio.get_running_loop().run_in_executor(None, ws_server.restart)
        await asyncio.wait_for(reconnected.wait(), 20)
        await _traffic(nc)
        await nc.close()
    run(main())


def test_wss_url_with_a_tls_context(wss_server):
    ctx = ssl.create_default_context(cafile=wss_server.certs["ca"])

    async def main():
        nc = NATS()
        await nc.connect(wss_server.ws_url.replace("127.0.0.1", "localhost"), tls=ctx)
        await _traffic(nc)
        await nc.close()
    run(main())


def test_mixing_websocket_and_tcp_urls_is_refused_as_nats_py_does(ws_server):
    async def main():
        with pytest.raises(nerr.Error) as e:
            await NATS().connect([ws_server.ws_url, ws_server.url])
        assert "mixing of websocket and non websocket URLs" in str(e.value)
    run(main())
