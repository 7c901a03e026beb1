"""JetStream across domains (ADR-19) on the Python face: a leaf node with its
own JetStream domain reaches the hub's streams and buckets, mirrors them and
aggregates them (nats-tcl's key_value_mirror.test topology)."""

import asyncio

import pytest

import tclnats_py
from tclnats_py.aio.jetstream import stream_source as stream_source
from tclnats_py.aio.kv import kv_origin as kv_origin
from tests.js_fixtures import hub_leaf  # noqa: F401  (fixture)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def eventually(check, tries=100):
    for _ in range(tries):
        try:
            if await check():
                return True
        except tclnats_py.NatsError:
            pass
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached")


def test_leaf_reaches_hub_domain(hub_leaf):  # noqa: F811
    async def go():
        c_hub = await tclnats_py.connect(hub_leaf.hub_url)
        c_leaf = await tclnats_py.connect(hub_leaf.leaf_url)
        js_hub = c_hub.jetstream()
        await js_hub.create_stream("HUB_S", subjects=["hub.>"], storage="memory")
        js_to_hub = c_leaf.jetstream(domain="hub")
        assert js_to_hub.prefix == "$JS.hub.API"
        info = await js_to_hub.stream_info("HUB_S")
        assert info.config.name == "HUB_S"
        ack = await js_to_hub.publish("hub.x", b"via leaf")
        assert ack.stream == "HUB_S" and ack.domain == "hub"
        cons = await js_to_hub.create_consumer("HUB_S", durable_name="LEAF_PULLER")
        msgs = await cons.fetch(1, expires=1)
        assert msgs[0].data == b"via leaf" and msgs[0].metadata.stream == "HUB_S"
        await msgs[0].ack_sync()
        oc = await js_to_hub.ordered_consumer("HUB_S").start()
        assert (await oc.next(2)).data == b"via leaf"
        await oc.stop()
        # the leaf's own domain does not have the hub's stream
        with pytest.raises(tclnats_py.ErrStreamNotFound):
            await c_leaf.jetstream(domain="leaf").stream_info("HUB_S")
        with pytest.raises(tclnats_py.ErrStreamNotFound):
            await c_leaf.jetstream().stream_info("HUB_S")  # $JS.API stays local
        # a stream in the leaf sourcing the hub's stream across domains
        await c_leaf.jetstream().create_stream("LEAF_COPY", storage="memory",
                                               sources=[stream_source("HUB_S", domain="hub")])
        await eventually(lambda: _count(c_leaf.jetstream(), "LEAF_COPY", 1))
        await js_hub.delete_stream("HUB_S")
        await c_leaf.jetstream().delete_stream("LEAF_COPY")
        await c_leaf.close()
        await c_hub.close()
    run(go())


async def _count(js, stream, n):
    return (await js.stream_info(stream)).state.messages == n


def test_key_value_across_domains(hub_leaf):  # noqa: F811
    async def go():
        c_hub = await tclnats_py.connect(hub_leaf.hub_url)
        c_leaf = await tclnats_py.connect(hub_leaf.leaf_url)
        js_hub, js_leaf = c_hub.jetstream(), c_leaf.jetstream()
        kv_hub = await js_hub.create_key_value("HUB_BUCKET", history=64, storage="memory")
        # leaf -> hub: bind through the domain, read and write (writes go to $JS.hub.API.$KV...)
        kv_l2h = await c_leaf.jetstream(domain="hub").key_value("HUB_BUCKET")
        await kv_hub.put("key1", b"value1")
        assert (await kv_l2h.get("key1")).value == b"value1"
        await kv_l2h.put("key1", b"value2")
        assert (await kv_hub.get("key1")).value == b"value2"
        assert [e.value for e in await kv_l2h.history("key1")] == [b"value1", b"value2"]
        assert await c_leaf.jetstream(domain="hub").key_value_buckets() == ["HUB_BUCKET"]
        await js_hub.empty_key_value("HUB_BUCKET")
        # a mirror in the leaf of the hub's bucket (ADR-8 v1.0 style): reads local, writes to the hub
        rev = await kv_hub.put("key2", b"one")
        kv_mirror = await js_leaf.create_key_value("LEAF_MIRROR", mirror_name="HUB_BUCKET", mirror_domain="hub",
                                                   history=64, storage="memory")
        await eventually(lambda: _has(kv_mirror, "key2", b"one"))
        e = await kv_mirror.get("key2")
        assert (e.bucket, e.revision) == ("LEAF_MIRROR", rev)
        rev2 = await kv_mirror.put("key2", b"two")
        await eventually(lambda: _has(kv_hub, "key2", b"two"))
        assert (await kv_hub.get("key2")).revision == rev2
        st = await kv_mirror.status()
        assert (st.mirror_name, st.mirror_domain) == ("HUB_BUCKET", "hub")
        await eventually(lambda: _has(kv_mirror, "key2", b"two"))
        assert [(h.value, h.delta) for h in await kv_mirror.history(">")] == [(b"one", 1), (b"two", 0)]
        await js_leaf.delete_key_value("LEAF_MIRROR")
        await js_hub.empty_key_value("HUB_BUCKET")
        # aggregates in the leaf over the hub's bucket (ADR-8 v1.1): filtered writable, read-only
        await kv_hub.put("shipped.1", b"order 1")
        await kv_hub.put("new.2", b"order 2")
        await kv_hub.put("new.3", b"order 3")
        agg = await js_leaf.create_kv_aggregate("NEW_ORDERS", True, [kv_origin("HUB_BUCKET", keys=["new.>"],
                                                                               domain="hub")],
                                                description="writable filtered KV aggregate", storage="memory")
        ro = await js_leaf.create_kv_aggregate("ORDERS_RO", False, [kv_origin("HUB_BUCKET", domain="hub")],
                                               storage="memory")
        await eventually(lambda: _keys(agg, ["new.2", "new.3"]))
        await eventually(lambda: _keys(ro, ["new.2", "new.3", "shipped.1"]))
        assert (await agg.get("new.2")).value == b"order 2"
        await agg.put("order.10", b"order 10")
        assert (await agg.get("order.10")).value == b"order 10"
        assert (await agg.status()).stream_config["description"] == "writable filtered KV aggregate"
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            await ro.put("order.10", b"read-only")
        # a read-only mirror of the hub bucket in the leaf
        await js_leaf.create_kv_mirror("HUB_COPY", kv_origin("HUB_BUCKET", domain="hub"), storage="memory")
        await eventually(lambda: _count(js_leaf, "HUB_COPY", 3))
        got = await js_leaf.direct_get("HUB_COPY", last_by_subj="$KV.HUB_BUCKET.new.3")
        assert got.data == b"order 3"
        for name in ("NEW_ORDERS", "ORDERS_RO"):
            await js_leaf.delete_key_value(name)
        await js_leaf.delete_stream("HUB_COPY")
        await js_hub.delete_key_value("HUB_BUCKET")
        await c_leaf.close()
        await c_hub.close()
    run(go())


async def _has(kv, key, value):
    return (await kv.get(key)).value == value


async def _keys(kv, keys):
    return sorted(await kv.keys()) == keys


def test_object_store_across_domains(hub_leaf):  # noqa: F811
    async def go():
        c_hub = await tclnats_py.connect(hub_leaf.hub_url)
        c_leaf = await tclnats_py.connect(hub_leaf.leaf_url)
        obs_hub = await c_hub.jetstream().create_object_store("HUB_OBJ", storage="memory")
        await obs_hub.put("from-hub", b"h" * 300_000)
        obs_l2h = await c_leaf.jetstream(domain="hub").object_store("HUB_OBJ")
        assert await obs_l2h.get_bytes("from-hub") == b"h" * 300_000
        assert [i.name for i in await obs_l2h.list()] == ["from-hub"]
        await c_hub.jetstream().delete_object_store("HUB_OBJ")
        await c_leaf.close()
        await c_hub.close()
    run(go())
