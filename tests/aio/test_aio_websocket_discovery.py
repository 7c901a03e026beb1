"""A cluster discovered over WebSocket: a real nats-server sends a WebSocket
client its cluster's websocket listeners in INFO's ``connect_urls``; the
pool takes them as ws:// servers and a reconnect goes to one of them."""

import asyncio

import pytest

import tclnats_py
from tclnats_py.testing.server import NatsServer, free_port
from tests.aio_helpers import settle

pytestmark = pytest.mark.feature("websocket")


def _routed(cluster_port, routes=()):
    args = ["--cluster_name", "wsdisc", "--cluster", f"nats://127.0.0.1:{cluster_port}"]
    if routes:
        args += ["--routes", ",".join(f"nats://127.0.0.1:{p}" for p in routes)]
    return NatsServer(websocket=True, args=args)


def test_a_ws_client_discovers_the_clusters_websocket_listeners():
    pa, pb = free_port(), free_port()
    with _routed(pa) as a:
        async def go():
            nc = await tclnats_py.connect(a.ws_url, reconnect_time_wait=0.05, max_reconnect_attempts=-1)
            assert [(s["scheme"], s["port"]) for s in nc.all_servers] == [("ws", a.ws_port)]
            with _routed(pb, routes=(pa,)) as b:
                await settle(lambda: len(nc.all_servers) == 2, 20)
                found = nc.all_servers[0]
                assert (found["scheme"], found["host"], found["port"], found["discovered"]) == \
                    ("ws", "127.0.0.1", b.ws_port, "true")
                sub = await nc.subscribe("disc")
                await asyncio.get_running_loop().run_in_executor(None, a.stop)
                await settle(lambda: nc.status == "connected" and nc.current_server == ("127.0.0.1", b.ws_port), 20)
                assert nc._engine.websocket
                await nc.flush()
                nc.publish("disc", b"over b")
                assert (await sub.next_msg(5)).data == b"over b"
                await nc.close()
        asyncio.run(asyncio.wait_for(go(), 60))
