"""nats-py 2.16.0's per-message TTL, KV key TTLs and limit markers, consumer
pause/resume/reset on tclnats_py.natspy: against nats-server 2.15.1, and the
"server too old" errors of nats-server 2.10.26."""

import asyncio
import datetime

import pytest

import tclnats_py
from tclnats_py import natspy as nats
from tclnats_py.natspy import errors as core_errors
from tclnats_py.natspy.js import api
from tclnats_py.natspy.js import errors as js_errors


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


@pytest.mark.feature("msg_ttl", "kv_key_ttl")
def test_msg_ttl_and_kv_ttls(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream()
        await js.add_stream(name="NPTTL", subjects=["npttl.>"], allow_msg_ttl=True, allow_msg_counter=False)
        ack = await js.publish("npttl.a", b"x", msg_ttl=60)
        msg = await js.get_msg("NPTTL", ack.seq)
        assert msg.headers["Nats-TTL"] == "60"
        kv = await js.create_key_value(bucket="NPKV", limit_marker_ttl=30)
        st = await kv.status()
        assert st.marker_ttl == 30
        watcher = await kv.watch("k")
        assert await watcher.updates(timeout=2) is None          # nothing there yet
        await kv.create("k", b"v", msg_ttl=1)
        put = await watcher.updates(timeout=2)
        assert put.value == b"v" and put.operation is None
        gone = await watcher.updates(timeout=10)
        assert gone.operation == "PURGE" and gone.key == "k"
        await watcher.stop()
        with pytest.raises(js_errors.KeyNotFoundError):
            await kv.get("k")
        await kv.put("p", b"1")
        assert await kv.purge("p", msg_ttl=1) is True
        await nc.close()
    run(go())


@pytest.mark.feature("consumer_pause", "consumer_reset")
def test_pause_resume_reset(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream()
        jsm = nc.jsm()
        await jsm.add_stream(name="NPPAUSE", subjects=["nppause.>"])
        for i in range(3):
            await js.publish("nppause.a", str(i).encode())
        await jsm.add_consumer("NPPAUSE", durable_name="C", ack_policy="explicit",
                               deliver_policy=api.DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=2)
        p = await jsm.pause_consumer("NPPAUSE", "C", datetime.datetime.now() + datetime.timedelta(minutes=5))
        assert isinstance(p, api.ConsumerPause) and p.paused is True
        assert (await jsm.consumer_info("NPPAUSE", "C")).paused is True
        r = await jsm.resume_consumer("NPPAUSE", "C")
        assert r.paused is False
        reset = await jsm.reset_consumer("NPPAUSE", "C", 3)
        assert isinstance(reset, api.ConsumerReset) and reset.reset_seq == 3
        assert isinstance(reset.info, api.ConsumerInfo) and reset.info.name == "C"
        sub = await js.pull_subscribe_bind("C", stream="NPPAUSE")
        assert [m.data for m in await sub.fetch(1, timeout=2)] == [b"2"]
        with pytest.raises(js_errors.ConsumerInvalidResetError) as e:   # below opt_start_seq
            await jsm.reset_consumer("NPPAUSE", "C", 1)
        assert e.value.err_code == 10204 and isinstance(e.value, js_errors.BadRequestError)
        await nc.close()
    run(go())


@pytest.mark.feature("api_level")
def test_old_server(old_js_server):
    async def go():
        nc = await nats.connect(old_js_server.url)
        js = nc.jetstream()
        jsm = nc.jsm()
        with pytest.raises(js_errors.KeyValueLimitMarkerTTLNotSupportedError):
            await js.create_key_value(bucket="NPOLD", limit_marker_ttl=5)
        await jsm.add_stream(name="NPOLD", subjects=["npold.>"])
        await jsm.add_consumer("NPOLD", durable_name="C")
        # nats-py has no class for it: a nats.errors.Error, the engine's ErrServerTooOld its cause
        with pytest.raises(core_errors.Error, match="consumer pause needs nats-server 2.11") as e:
            await jsm.pause_consumer("NPOLD", "C", "2030-01-01T00:00:00Z")
        assert isinstance(e.value.__cause__, tclnats_py.ErrServerTooOld)
        with pytest.raises(core_errors.Error, match="2.14") as e:
            await jsm.reset_consumer("NPOLD", "C")
        assert isinstance(e.value.__cause__, tclnats_py.ErrServerTooOld)
        with pytest.raises(core_errors.Error, match="msg ttl needs nats-server 2.11") as e:
            await js.publish("npold.a", b"x", msg_ttl=5)
        with pytest.raises(core_errors.Error, match="msg ttl"):
            await js.publish_async("npold.a", b"x", msg_ttl=5)
        kv = await js.create_key_value(bucket="NPOLDKV")
        with pytest.raises(core_errors.Error, match="msg ttl"):
            await kv.create("k", b"v", msg_ttl=5)
        assert (await jsm.stream_info("NPOLD")).state.messages == 0
        assert await kv.create("k", b"v") == 1
        await nc.close()
    run(go())
