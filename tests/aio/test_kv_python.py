"""Key-Value on the Python face against a real nats-server, and with nats-py."""

import asyncio
import time

import pytest

import tclnats_py
from tclnats_py import NatsError
from tclnats_py.aio.kv import kv_origin as kv_origin


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def connect(server):
    c = await tclnats_py.connect(server.url)
    return c, c.jetstream()


def test_key_value_operations(js_server):
    async def go():
        c, js = await connect(js_server)
        kv = await js.create_key_value("PY_KV", history=5, storage="memory", description="ops",
                                       metadata={"team": "py"})
        r1 = await kv.put("a.b", b"1")
        r2 = await kv.put("a.b", "2")
        e = await kv.get("a.b")
        assert (e.bucket, e.key, e.value, e.revision, e.operation, e.delta) == ("PY_KV", "a.b", b"2", r2, "PUT", 0)
        assert abs(e.created - time.time() * 1000) < 10_000 and e.created_at.year > 2000
        assert (await kv.get("a.b", revision=r1)).value == b"1"
        assert await kv.get_value("a.b") == b"2"
        with pytest.raises(tclnats_py.ErrKeyNotFound):
            await kv.get("a.b", revision=999)
        with pytest.raises(tclnats_py.ErrWrongLastSequence):
            await kv.create("a.b", b"x")
        r3 = await kv.update("a.b", b"3", last=r2)
        with pytest.raises(tclnats_py.ErrWrongLastSequence):
            await kv.update("a.b", b"stale", last=r2)
        with pytest.raises(tclnats_py.ErrWrongLastSequence):
            await kv.delete("a.b", last=r2)
        await kv.delete("a.b", last=r3)
        with pytest.raises(tclnats_py.ErrKeyNotFound) as err:
            await kv.get("a.b")
        assert "deleted" in str(err.value)
        r4 = await kv.create("a.b", b"again")  # created again on top of the delete marker
        assert r4 == r3 + 2
        r5 = await kv.revert("a.b", r1)
        assert (await kv.get("a.b")).value == b"1" and r5 == r4 + 1
        await kv.put("a.c", b"c")
        await kv.put("x", b"x")
        await kv.delete("x")
        assert sorted(await kv.keys()) == ["a.b", "a.c"]
        assert await kv.keys("a.c") == ["a.c"]
        hist = await kv.history("a.b")
        assert [h.value for h in hist] == [b"2", b"3", b"", b"again", b"1"]
        assert [h.operation for h in hist] == ["PUT", "PUT", "DEL", "PUT", "PUT"]
        assert [h.delta for h in hist] == [4, 3, 2, 1, 0]
        await kv.purge("a.c")
        assert [h.operation for h in await kv.history("a.c")] == ["PURGE"]
        with pytest.raises(tclnats_py.ErrKeyNotFound):
            await kv.history("never")
        st = await kv.status()
        assert (st.bucket, st.history, st.ttl, st.is_compressed, st.backing_store) == ("PY_KV", 5, 0, False,
                                                                                      "JetStream")
        assert st.values == 8 and st.bytes > 0 and st.metadata["team"] == "py"  # a.b: 5 of 6 kept, a.c 1, x 2
        assert st.stream_config["description"] == "ops"
        # names and values are checked
        for bad in (".a", "a.", "_kvx", "a b", "a*"):
            with pytest.raises(tclnats_py.ErrInvalidArg):
                await kv.put(bad, b"")
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await js.create_key_value("bad.name")
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await js.create_key_value("H", history=65)
        assert "PY_KV" in await js.key_value_buckets()
        assert await js.empty_key_value("PY_KV") == 8
        with pytest.raises(tclnats_py.ErrNoKeysFound):
            await kv.keys()
        await js.delete_key_value("PY_KV")
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            await js.key_value("PY_KV")
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            await js.delete_key_value("PY_KV")
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            await kv.put("k", b"v")  # nobody listens on $KV.PY_KV.> any more
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            await kv.get("k")
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            await kv.status()
        # a stream that is not a bucket
        await js.create_stream("KV_FAKE", subjects=["fake.>"], storage="memory", max_msgs_per_subject=0)
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            await js.key_value("FAKE")
        await js.delete_stream("KV_FAKE")
        await c.close()
    run(go())


def test_bucket_options(js_server):
    async def go():
        c, js = await connect(js_server)
        kv = await js.create_key_value("PY_KVO", ttl=0.5, max_value_size=10, compression=True, storage="memory",
                                       replicas=1)
        st = await kv.status()
        assert st.ttl == 0.5 and st.is_compressed and st.stream_config["max_msg_size"] == 10
        assert st.stream_config["duplicate_window"] == 500_000_000  # <= ttl (ADR-8)
        assert st.stream_config["allow_direct"] and st.stream_config["allow_rollup_hdrs"]
        with pytest.raises(NatsError) as e:
            await kv.put("big", b"x" * 11)
        assert e.value.code == "ErrJSResponse"
        await kv.put("short", b"lived")
        await asyncio.sleep(0.8)
        with pytest.raises(tclnats_py.ErrKeyNotFound):
            await kv.get("short")  # aged out
        kv = await js.update_key_value("PY_KVO", ttl=60, history=3, storage="memory", compression=True,
                                       max_value_size=10)
        st = await kv.status()
        assert (st.ttl, st.history) == (60.0, 3)
        await js.delete_key_value("PY_KVO")
        await c.close()
    run(go())


def test_watchers(js_server):
    async def go():
        c, js = await connect(js_server)
        kv = await js.create_key_value("PY_KVW", history=10, storage="memory")
        # an empty bucket: the end of initial data first
        w = kv.watch()
        assert await w.__anext__() is None
        await kv.put("a.1", b"v1")
        assert (await w.__anext__()).value == b"v1"
        await w.stop()
        await kv.put("a.1", b"v2")
        await kv.put("a.2", b"w1")
        await kv.put("b.1", b"x1")
        await kv.delete("a.2")
        seen = []

        async def watch(**kw):
            out = []
            async for e in kv.watch(**kw):
                out.append(e if e is None else (e.key, e.value, e.operation, e.delta))
                if e is None:
                    return out
        assert await watch(keys="a.*") == [("a.1", b"v2", "PUT", 1), ("a.2", b"", "DEL", 0), None]
        assert await watch(keys="a.*", ignore_deletes=True) == [("a.1", b"v2", "PUT", 1), None]
        assert await watch(keys=["a.1", "b.>"], include_history=True) == [
            ("a.1", b"v1", "PUT", 2), ("a.1", b"v2", "PUT", 1), ("b.1", b"x1", "PUT", 0), None]
        meta = await watch(keys="b.1", meta_only=True)
        assert meta == [("b.1", b"", "PUT", 0), None]
        # updates only: the marker at once, then what changes
        w = kv.watch(updates_only=True)
        assert await w.__anext__() is None and w.init_done
        task = asyncio.ensure_future(w.__anext__())
        await asyncio.sleep(0.05)
        await kv.put("c", b"new")
        e = await asyncio.wait_for(task, 2)
        assert (e.key, e.value) == ("c", b"new")
        await kv.purge("c")
        assert (await w.__anext__()).operation == "PURGE"
        await w.stop()
        # a live watch sees later changes after the marker
        async with kv.watch("b.*") as w:
            async for e in w:
                seen.append(e)
                if e is None:
                    await kv.put("b.2", b"later")
                elif e.key == "b.2":
                    break
        assert [getattr(e, "value", None) for e in seen] == [b"x1", None, b"later"]
        with pytest.raises(tclnats_py.ErrInvalidArg):
            kv.watch("a", include_history=True, updates_only=True)
        with pytest.raises(tclnats_py.ErrInvalidArg):
            kv.watch("a.>.b")
        await js.delete_key_value("PY_KVW")
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            await kv.watch().__anext__()
        await c.close()
    run(go())


def test_create_of_an_existing_key_is_key_exists(js_server):
    """nats.go's Create: ErrKeyExists, a KeyValueError; ``except
    ErrWrongLastSequence`` (what the server says, what the Tcl face throws)
    still catches it."""
    async def go():
        c, js = await connect(js_server)
        kv = await js.create_key_value("PY_KVX", history=3, storage="memory")
        r1 = await kv.create("k", b"first")
        with pytest.raises(tclnats_py.ErrKeyExists) as e:
            await kv.create("k", b"second")
        err = e.value
        assert isinstance(err, tclnats_py.KeyValueError) and isinstance(err, tclnats_py.ErrWrongLastSequence)
        assert err.code == "ErrKeyExists" and "Key k already exists in bucket PY_KVX" in str(err)
        assert err.err_code == 10071  # the server's wrong-last-sequence code travels with it
        try:
            await kv.create("k", b"third")
        except tclnats_py.ErrWrongLastSequence as old_style:
            assert type(old_style) is tclnats_py.ErrKeyExists
        # update keeps the server's error: a stale revision is not "exists"
        with pytest.raises(tclnats_py.ErrWrongLastSequence) as u:
            await kv.update("k", b"x", last=r1 + 5)
        assert type(u.value) is tclnats_py.ErrWrongLastSequence
        # a deleted key can be created again
        await kv.delete("k")
        assert (await kv.get("k", revision=await kv.create("k", b"again"))).value == b"again"
        assert (await kv.get("k")).value == b"again"
        await js.delete_key_value("PY_KVX")
        await c.close()
    run(go())


def test_watch_awaited_as_nats_py(js_server):
    """``w = await kv.watch(...)`` (nats-py's KeyWatcher): started once
    awaited (a missing bucket raises there), then ``updates(timeout)``,
    ``async for`` and ``stop()``; the iterator form keeps working."""
    async def go():
        c, js = await connect(js_server)
        kv = await js.create_key_value("PY_KVA", history=5, storage="memory")
        await kv.put("a", b"1")
        w = await kv.watch("a")
        assert w.consumer is not None  # started by the await, before any read
        e = await w.updates(timeout=5)
        assert (e.key, e.value) == ("a", b"1")
        assert await w.updates(timeout=5) is None  # the End Of Initial Data
        with pytest.raises(tclnats_py.ErrTimeout) as t:
            await w.updates(timeout=0.2)
        assert isinstance(t.value, TimeoutError) and "PY_KVA" in str(t.value)
        await kv.put("a", b"2")
        assert (await w.updates(timeout=5)).value == b"2"
        await kv.put("a", b"3")
        async for e in w:  # the same watcher, iterated
            assert e.value == b"3"
            break
        await w.stop()
        with pytest.raises(tclnats_py.ErrConsumerStopped):
            await w.updates(timeout=1)
        assert [e async for e in w] == []
        # awaited, then iterated to the marker
        w2 = await kv.watch_all(include_history=True)
        got = []
        async for e in w2:
            if e is None:
                break
            got.append(e.value)
        await w2.stop()
        assert got == [b"1", b"2", b"3"]
        # the iterator form: no await
        async for e in kv.watch("a"):
            assert e.value == b"3"
            break
        with pytest.raises(tclnats_py.ErrBadTimeout):
            await w.updates(timeout=-1)
        await js.delete_key_value("PY_KVA")
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            await kv.watch("a")
        await c.close()
    run(go())


def test_mirror_and_aggregate_in_one_domain(js_server):
    async def go():
        c, js = await connect(js_server)
        origin = await js.create_key_value("PY_ORIGIN", history=5, storage="memory")
        await origin.put("new.1", b"n1")
        await origin.put("old.1", b"o1")
        await js.create_kv_mirror("PY_READ_COPY", kv_origin("PY_ORIGIN"), storage="memory")
        agg = await js.create_kv_aggregate("PY_AGG", True, [kv_origin("PY_ORIGIN", keys=["new.>"])],
                                           storage="memory")
        ro = await js.create_kv_aggregate("PY_RO", False, [kv_origin("PY_ORIGIN")], storage="memory")
        for _ in range(100):
            try:
                if len(await agg.keys()) == 1 and len(await ro.keys()) == 2:
                    break
            except tclnats_py.ErrNoKeysFound:
                pass
            await asyncio.sleep(0.05)
        assert await agg.keys() == ["new.1"] and sorted(await ro.keys()) == ["new.1", "old.1"]
        assert (await agg.get("new.1")).value == b"n1"
        await agg.put("local", b"l")
        assert (await agg.get("local")).value == b"l"
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            await ro.put("x", b"read-only")
        assert "subjects" not in (await ro.status()).stream_config
        mirror_info = await js.stream_info("PY_READ_COPY")
        assert mirror_info.config.mirror_direct and mirror_info.config.mirror["name"] == "KV_PY_ORIGIN"
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            await js.key_value("PY_READ_COPY")  # not a bucket one binds to
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await js.create_kv_mirror("KV_BAD", kv_origin("PY_ORIGIN"))
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await js.create_kv_aggregate("PY_NONE", True, [])
        # the deprecated mirror (ADR-8 v1.0) writes to its origin
        old_style = await js.create_key_value("PY_OLD_MIRROR", mirror_name="PY_ORIGIN", history=5,
                                              storage="memory")
        await old_style.put("via.mirror", b"m")
        # a direct get may be answered by PY_READ_COPY (mirror_direct), which
        # catches up a moment later: read after write is eventual there
        for _ in range(100):
            try:
                got = await origin.get("via.mirror")
                break
            except tclnats_py.ErrKeyNotFound:
                await asyncio.sleep(0.05)
        assert got.value == b"m"
        st = await old_style.status()
        assert st.mirror_name == "PY_ORIGIN" and st.mirror_domain is None
        for name in ("PY_READ_COPY",):
            await js.delete_stream(name)
        for b in ("PY_ORIGIN", "PY_AGG", "PY_RO", "PY_OLD_MIRROR"):
            await js.delete_key_value(b)
        await c.close()
    run(go())


def test_key_value_interop_with_nats_py(js_server):
    import nats
    from nats.js.errors import KeyNotFoundError

    async def go():
        theirs = await nats.connect(js_server.url)
        tjs = theirs.jetstream()
        tkv = await tjs.create_key_value(bucket="X_KVI", history=5)
        c, js = await connect(js_server)
        # written by nats-py, read by tclnats_py
        await tkv.put("cfg.a", b"from nats-py")
        await tkv.put("cfg.a", b"from nats-py 2")
        await tkv.put("cfg.b", b"b")
        await tkv.delete("cfg.b")
        kv = await js.key_value("X_KVI")
        assert (await kv.get("cfg.a")).value == b"from nats-py 2"
        with pytest.raises(tclnats_py.ErrKeyNotFound):
            await kv.get("cfg.b")
        assert [h.value for h in await kv.history("cfg.a")] == [b"from nats-py", b"from nats-py 2"]
        assert await kv.keys() == ["cfg.a"]
        st = await kv.status()
        assert st.history == 5
        # written by tclnats_py, read by nats-py
        rev = await kv.put("cfg.c", b"from tclnats")
        entry = await tkv.get("cfg.c")
        assert entry.value == b"from tclnats" and entry.revision == rev
        await kv.delete("cfg.c")
        with pytest.raises(KeyNotFoundError):  # nats-py: key deleted
            await tkv.get("cfg.c")
        await kv.create("cfg.c", b"back")
        assert (await tkv.get("cfg.c")).value == b"back"
        await kv.purge("cfg.a")
        assert sorted(await tkv.keys()) == ["cfg.c"]
        # nats-py's update against our revisions, and ours against theirs
        r = (await kv.get("cfg.c")).revision
        r2 = await tkv.update("cfg.c", b"by nats-py", last=r)
        assert await kv.update("cfg.c", b"by tclnats", last=r2) == r2 + 1
        # a bucket made by tclnats_py, used by nats-py
        ours = await js.create_key_value("X_KVO", history=2)
        await ours.put("k", b"ours")
        tours = await tjs.key_value("X_KVO")
        assert (await tours.get("k")).value == b"ours"
        assert (await tours.status()).history == 2
        await tjs.delete_key_value("X_KVI")
        await tjs.delete_key_value("X_KVO")
        await c.close()
        await theirs.close()
    run(go())
