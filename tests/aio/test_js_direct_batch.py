"""Batch direct gets, multi-last gets (ADR-31) and KV get_many on the
asyncio face against nats-server 2.15.1, and a 2.10 server."""

import asyncio
import datetime

import pytest

import tclnats_py
from tclnats_py import NatsError
from tclnats_py.aio.jetstream import DirectGet


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def seqs(it):
    return [m.seq async for m in it]


@pytest.mark.feature("direct_batch")
def test_get_batch_and_get_last_msgs_for(js_server):
    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        s = await js.create_stream("DBATCH", subjects=["db.*"], allow_direct=True)
        try:
            for i in range(10):
                await js.publish(f"db.k{i % 3}", b"m%d" % i, headers={"N": str(i)})
            it = s.get_batch(4, seq=2)
            assert isinstance(it, DirectGet)
            msgs = await it.all()
            assert [(m.seq, m.subject, m.data) for m in msgs] == [(2, "db.k1", b"m1"), (3, "db.k2", b"m2"),
                                                                (4, "db.k0", b"m3"), (5, "db.k1", b"m4")]
            assert msgs[0].headers["N"] == "1" and dict(msgs[0].headers) == {"N": ["1"]}
            assert it.num_pending == 5
            assert await seqs(s.get_batch(100, subject="db.k1")) == [2, 5, 8]
            assert await seqs(s.get_batch(5, seq=100)) == []
            assert len(await s.get_batch(100, max_bytes=30).all()) < 10
            first = msgs[0]
            since = s.get_batch(100, start_time=datetime.datetime.fromisoformat(first.time[:26] + "+00:00"))
            assert [m.seq async for m in since][0] >= 2
            last = s.get_last_msgs_for(["db.k0", "db.k1", "db.k2", "db.none"])
            assert await seqs(last) == [8, 9, 10] and last.up_to_seq == 10
            assert await seqs(s.get_last_msgs_for("db.*", up_to_seq=5)) == [3, 4, 5]
            # leaving early unsubscribes
            it = s.get_batch(10)
            async for m in it:
                break
            await it.aclose()
            assert it._sub is None
            with pytest.raises(NatsError) as e:
                s.get_batch(0)
            assert e.value.code == "ErrInvalidArg"
            with pytest.raises(NatsError) as e:
                s.get_last_msgs_for(["db.*"], up_to_seq=1, up_to_time="2025-01-01T00:00:00Z")
            assert e.value.code == "ErrInvalidArg"
            # "Too Many Results" past about a thousand subjects
            for i in range(1100):
                await js.publish_async(f"db.n{i}", b"")
            await js.publish_async_complete()
            with pytest.raises(NatsError) as e:
                await s.get_last_msgs_for("db.*").all()
            assert e.value.code == "ErrInvalidArg"
        finally:
            await js.delete_stream("DBATCH")
            await nc.close()
    run(go())


@pytest.mark.feature("direct_batch")
def test_kv_get_many(js_server):
    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        kv = await js.create_key_value("DBKV", history=3)
        try:
            for i in range(1200):
                await js.publish_async(f"$KV.DBKV.k{i}", b"v%d" % i)
            await js.publish_async_complete()
            await kv.put("k1", b"newer")
            await kv.delete("k2")
            got = await kv.get_many([f"k{i}" for i in range(1200)] + ["missing"])
            assert len(got) == 1199 and "k2" not in got and "missing" not in got
            assert got["k1"].value == b"newer" and got["k1"].revision == 1201
            assert got["k1199"].value == b"v1199" and got["k1199"].key == "k1199"
            assert await kv.get_many([]) == {}
            with pytest.raises(NatsError) as e:
                await kv.get_many(["bad key"])
            assert e.value.code == "ErrInvalidArg"
        finally:
            await js.delete_key_value("DBKV")
            await nc.close()
    run(go())


@pytest.mark.feature("direct_batch", "api_level")
def test_direct_batch_on_a_server_too_old(old_js_server):
    async def go():
        nc = await tclnats_py.connect(old_js_server.url)
        js = nc.jetstream()
        s = await js.create_stream("OLDB", subjects=["oldb.*"], allow_direct=True)
        kv = await js.create_key_value("OLDKV")
        try:
            await js.publish("oldb.a", b"x")
            for it in (s.get_batch(5), s.get_last_msgs_for(["oldb.a"])):
                with pytest.raises(NatsError) as e:
                    await it.all()
                assert e.value.code == "ErrServerTooOld" and "2.11" in str(e.value)
            # KV get_many falls back to one get per key there
            await kv.put("a", b"1")
            got = await kv.get_many(["a", "b"])
            assert list(got) == ["a"] and got["a"].value == b"1"
        finally:
            await nc.close()
    run(go())
