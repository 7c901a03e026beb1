"""JetStream across domains (ADR-19) on the Python face: a leaf node with its
own JetStream domain reaches the hub's streams and KV buckets."""

import asyncio

import tclnats_py
from tclnats_py.server import NatsServer, free_port

ACCOUNTS = """
accounts {
  ACC: { users: [ { user: acc, password: acc } ], jetstream: enabled }
  $SYS: { users: [ { user: sys, password: sys } ] }
}
"""


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_leaf_reaches_hub_domain():
    leaf_port = free_port()
    hub = NatsServer(jetstream=True, config=f"server_name: hub\njetstream {{ domain: hub }}\n"
                                            f"leafnodes {{ port: {leaf_port} }}\n{ACCOUNTS}")
    leaf = NatsServer(jetstream=True, config=(
        "server_name: leaf\njetstream { domain: leaf }\n"
        f'leafnodes {{ remotes = [ {{ urls: ["nats://acc:acc@127.0.0.1:{leaf_port}"], account: "ACC" }} ] }}\n'
        f"{ACCOUNTS}"))
    with hub, leaf:
        async def go():
            hub_url = f"nats://acc:acc@127.0.0.1:{hub.port}"
            leaf_url = f"nats://acc:acc@127.0.0.1:{leaf.port}"
            c_hub = await tclnats_py.connect(hub_url)
            c_leaf = await tclnats_py.connect(leaf_url)
            js_hub = c_hub.jetstream()
            await js_hub.create_stream("HUB_S", subjects=["hub.>"], storage="memory")
            kv = await js_hub.create_key_value("HUB_KV", storage="memory")
            await kv.put("k", b"from hub")
            js_to_hub = c_leaf.jetstream(domain="hub")
            assert js_to_hub.prefix == "$JS.hub.API"
            # the leaf node's link may take a moment to come up
            for _ in range(50):
                try:
                    info = await js_to_hub.stream_info("HUB_S")
                    break
                except tclnats_py.NatsError:
                    await asyncio.sleep(0.1)
            assert info.config.name == "HUB_S"
            ack = await js_to_hub.publish("hub.x", b"via leaf")
            assert ack.stream == "HUB_S" and ack.domain == "hub"
            kv_remote = await js_to_hub.key_value("HUB_KV")
            assert (await kv_remote.get("k")).value == b"from hub"
            # the leaf's own domain does not have the hub's stream
            with_leaf = c_leaf.jetstream(domain="leaf")
            try:
                await with_leaf.stream_info("HUB_S")
                raise AssertionError("the leaf domain should not have HUB_S")
            except tclnats_py.ErrStreamNotFound:
                pass
            await c_leaf.close()
            await c_hub.close()
        run(go())
