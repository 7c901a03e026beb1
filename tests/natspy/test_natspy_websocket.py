"""nats-py programs over WebSocket: ws:// and wss:// URLs as nats-py takes
them (ws_connection_headers, the tls context for wss, a client certificate
the listener requires, no mixing of WebSocket and TCP URLs), on a real
nats-server websocket listener."""

import asyncio
import ssl

import pytest

from tclnats_py.natspy import errors as nerr
from tclnats_py.natspy.aio.client import Client as NATS
from tclnats_py.testing import NatsServer
from tclnats_py.testing.certs import client_context, tls_config

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


@pytest.fixture
def wss_verify_server(tls_certs):
    """A wss:// listener that requires a client certificate signed by the CA."""
    with NatsServer(websocket=tls_config(tls_certs, verify=True)) as srv:
        srv.certs = tls_certs
        yield srv


def test_wss_with_a_client_certificate_across_a_restart_and_closed_while_down(wss_verify_server):
    srv = wss_verify_server
    url = srv.ws_url.replace("127.0.0.1", "localhost")
    ctx = client_context(srv.certs, client_cert=True)

    async def main():
        loop = asyncio.get_running_loop()
        down, back, closed = asyncio.Event(), asyncio.Event(), asyncio.Event()

        async def on_down():
            down.set()

        async def on_back():
            back.set()

        async def on_closed():
            closed.set()
        nc = NATS()
        await nc.connect(url, tls=ctx, reconnect_time_wait=0.1, disconnected_cb=on_down,
                         reconnected_cb=on_back, closed_cb=on_closed)
        assert (nc.connected_url.scheme, nc.connected_url.hostname) == ("wss", "localhost")
        await _traffic(nc)
        await loop.run_in_executor(None, srv.restart)
        await asyncio.wait_for(back.wait(), 20)
        assert nc.connected_url.scheme == "wss"
        await _traffic(nc)
        down.clear()
        await loop.run_in_executor(None, srv.stop)
        await asyncio.wait_for(down.wait(), 20)
        assert nc.is_reconnecting
        await nc.close()
        await asyncio.wait_for(closed.wait(), 5)
        assert nc.is_closed
    run(main())


def test_wss_without_the_client_certificate_is_refused(wss_verify_server):
    srv = wss_verify_server

    async def main():
        errors = []

        async def on_error(e):
            errors.append(e)
        nc = NATS()
        with pytest.raises(nerr.Error):
            await nc.connect(srv.ws_url.replace("127.0.0.1", "localhost"), tls=client_context(srv.certs),
                             allow_reconnect=False, connect_timeout=5, error_cb=on_error)
        assert errors and not nc.is_connected
    run(main())


def test_mixing_websocket_and_tcp_urls_is_refused_as_nats_py_does(ws_server):
    async def main():
        with pytest.raises(nerr.Error) as e:
            await NATS().connect([ws_server.ws_url, ws_server.url])
        assert "mixing of websocket and non websocket URLs" in str(e.value)
    run(main())
