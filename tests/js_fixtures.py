"""JetStream topologies for the JetStream/KV/Object Store tests.

``hub_leaf``: a hub server (JetStream domain ``hub``) and a leaf node
(domain ``leaf``) joined by a leafnode connection in account ACC, as in
nats-tcl's tests/conf/hub.conf and leaf.conf.  Both speak to user
``acc``/``acc``; ``urls`` gives ``(hub_url, leaf_url)``.  The fixture waits
until the hub's JetStream answers through the leaf.
"""

import asyncio
import time

import pytest

from tclnats_py.testing.server import NatsServer, free_port

ACCOUNTS = """
accounts {
  ACC: { users: [ { user: acc, password: acc } ], jetstream: enabled }
  $SYS: { users: [ { user: sys, password: sys } ] }
}
"""


class HubLeaf:
    def __init__(self):
        leaf_port = free_port()
        self.hub = NatsServer(jetstream=True, config=f"server_name: hub\njetstream {{ domain: hub }}\n"
                                                     f"leafnodes {{ port: {leaf_port} }}\n{ACCOUNTS}")
        self.leaf = NatsServer(jetstream=True, config=(
            "server_name: leaf\njetstream { domain: leaf }\n"
            f'leafnodes {{ remotes = [ {{ urls: ["nats://acc:acc@127.0.0.1:{leaf_port}"], account: "ACC" }} ] }}\n'
            f"{ACCOUNTS}"))

    @property
    def hub_url(self):
        return f"nats://acc:acc@127.0.0.1:{self.hub.port}"

    @property
    def leaf_url(self):
        return f"nats://acc:acc@127.0.0.1:{self.leaf.port}"

    def start(self):
        self.hub.start()
        self.leaf.start()
        self._wait_link()
        return self

    def _wait_link(self, timeout=10.0):
        import tclnats_py

        async def probe():
            c = await tclnats_py.connect(self.leaf_url)
            try:
                js = c.jetstream(domain="hub", timeout=0.5)
                deadline = time.monotonic() + timeout
                while True:
                    try:
                        await js.account_info()
                        return
                    except tclnats_py.NatsError:
                        if time.monotonic() > deadline:
                            raise
                        await asyncio.sleep(0.05)
            finally:
                await c.close()
        asyncio.run(probe())

    def stop(self):
        self.leaf.stop()
        self.hub.stop()


@pytest.fixture(scope="module")
def hub_leaf():
    topo = HubLeaf()
    try:
        yield topo.start()
    finally:
        topo.stop()
