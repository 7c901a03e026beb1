"""aio/jetstream/consumer.py fetch while its server goes away, over TCP and
over WebSocket (one nats-server with both listeners): a graceful stop sends
the waiting pull's 409 Server Shutdown before it closes the connection, and
the fetch that got nothing raises ErrServerShutdown (nats.go jetstream's
Fetch); a killed server loses the connection, and once the client gives up
reconnecting the fetch raises ErrTimeout "Connection lost"; a fetch that
starts while the server shuts down (nats-tcl's jet_stream-8.3: SIGTERM, then
the loop blocked for 500 ms) ends the same way."""

import asyncio
import os
import signal
import time

import pytest

import tclnats_py
from tclnats_py import NatsError
from tclnats_py.errors import ErrServerShutdown

TRANSPORTS = ("tcp", pytest.param("ws", marks=pytest.mark.feature("websocket")))


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def setup(srv, transport):
    """A client that makes one reconnect attempt, and an empty pull consumer."""
    url = srv.ws_url if transport == "ws" else srv.url
    nc = await tclnats_py.connect(url, max_reconnect_attempts=1, reconnect_time_wait=0, connect_timeout=0.5)
    js = nc.jetstream()
    await js.create_stream("FSTOP", subjects=["fstop.>"], storage="memory")
    await js.create_or_update_consumer("FSTOP", {"durable_name": "W", "ack_policy": "explicit"})
    return nc, await js.consumer("FSTOP", "W")


async def closed(nc):
    deadline = time.monotonic() + 5
    while not nc.is_closed:
        assert time.monotonic() < deadline, nc.status
        await asyncio.sleep(0.02)


async def waiting_fetch(cons):
    """A fetch whose pull request the server holds (nothing to deliver)."""
    fut = asyncio.ensure_future(cons.fetch(1, max_wait=5))
    await asyncio.sleep(0.3)
    assert not fut.done()
    return fut


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_graceful_stop_ends_the_fetch_with_server_shutdown(ws_server, transport):
    async def go():
        nc, cons = await setup(ws_server, transport)
        fut = await waiting_fetch(cons)
        await asyncio.get_running_loop().run_in_executor(None, ws_server.stop)
        with pytest.raises(NatsError) as e:
            await fut
        assert isinstance(e.value, ErrServerShutdown) and e.value.code == "ErrServerShutdown"
        await closed(nc)
    run(go())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_kill_ends_the_fetch_with_connection_lost(ws_server, transport):
    async def go():
        nc, cons = await setup(ws_server, transport)
        fut = await waiting_fetch(cons)
        await asyncio.get_running_loop().run_in_executor(None, ws_server.kill)
        with pytest.raises(NatsError) as e:
            await fut
        assert (e.value.code, str(e.value)) == ("ErrTimeout", "Connection lost")
        assert nc.is_closed and nc.last_error is not None
    run(go())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_fetch_started_while_the_server_shuts_down(ws_server, transport):
    async def go():
        nc, cons = await setup(ws_server, transport)
        fut = asyncio.ensure_future(cons.fetch(1, max_wait=5))
        os.kill(ws_server.pid, signal.SIGTERM)
        time.sleep(0.5)  # as nats-tcl's stopNats: the loop runs nothing meanwhile
        with pytest.raises(NatsError) as e:
            await fut
        assert (e.value.code, str(e.value)) == ("ErrTimeout", "Connection lost")
        assert nc.is_closed
    run(go())


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_messages_before_the_graceful_stop_are_returned(ws_server, transport):
    async def go():
        nc, cons = await setup(ws_server, transport)
        await nc.jetstream().publish("fstop.a", b"one")
        fut = asyncio.ensure_future(cons.fetch(5, max_wait=5))
        await asyncio.sleep(0.3)
        await asyncio.get_running_loop().run_in_executor(None, ws_server.stop)
        assert [m.data for m in await fut] == [b"one"]
        await closed(nc)
    run(go())
