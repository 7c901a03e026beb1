"""engine/js/api_level.py against real servers: nats-server 2.15.1 (API level 5) and 2.10.26 (none)."""

import asyncio

import pytest

import tclnats_py
from tclnats_py.engine.js.api_level import REQUIRED_LEVEL_HEADER, require_level, server_level


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


@pytest.mark.feature("api_level")
def test_current_server_has_every_level(js_server):
    async def go():
        c = await tclnats_py.connect(js_server.url)
        js = c.jetstream()
        assert await js.run(server_level(js.jsapi)) == 5
        assert await js.run(require_level(js.jsapi, "consumer_reset")) == 5
        # a level above the server's is refused by the server itself (2.12+)
        reply = await c.request("$JS.API.INFO", b"", headers={REQUIRED_LEVEL_HEADER: "6"})
        assert b"10185" in reply.data
        await c.close()
    run(go())


@pytest.mark.feature("api_level")
def test_old_server_is_too_old(old_js_server):
    async def go():
        c = await tclnats_py.connect(old_js_server.url)
        assert c.server_info["version"] == "2.10.26"
        js = c.jetstream()
        assert await js.run(server_level(js.jsapi)) == 0
        with pytest.raises(tclnats_py.ErrServerTooOld, match="needs nats-server 2.11 or newer"):
            await js.run(require_level(js.jsapi, "msg_ttl"))
        await c.close()
    run(go())
