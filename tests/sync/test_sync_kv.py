"""Key-Value on the blocking face (tclnats_py.sync.kv) against a real
nats-server: the bucket's life, reads and writes with their errors, keys,
history, status, and a watch read as an iterator while another thread writes."""

import threading

import pytest

import tclnats_py
from tclnats_py.aio.kv import KvEntry as AioKvEntry
from tclnats_py.sync.kv import KvEntry, KvStatus

from tests.sync.js_helpers import js_client


def test_bucket_life(js_server):
    with js_client(js_server) as (nc, js):
        kv = js.create_key_value("SK_LIFE", history=3, storage="memory", ttl=60, description="life")
        assert kv.bucket == "SK_LIFE" and "SK_LIFE" in js.key_value_buckets()
        st = kv.status()
        assert isinstance(st, KvStatus) and (st.bucket, st.history, st.ttl, st.values) == ("SK_LIFE", 3, 60, 0)
        js.update_key_value("SK_LIFE", history=5, storage="memory", ttl=60)
        assert js.key_value("SK_LIFE").status().history == 5
        assert js.delete_key_value("SK_LIFE") is True
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            js.key_value("SK_LIFE")


def test_reads_and_writes(js_server):
    assert KvEntry is AioKvEntry
    with js_client(js_server) as (nc, js):
        kv = js.create_key_value("SK_OPS", history=5, storage="memory")
        r1 = kv.put("a.b", b"1")
        r2 = kv.put("a.b", "2")
        e = kv.get("a.b")
        assert isinstance(e, KvEntry) and (e.key, e.value, e.revision, e.operation) == ("a.b", b"2", r2, "PUT")
        assert e.created_at.year > 2000
        assert kv.get("a.b", revision=r1).value == b"1" and kv.get_value("a.b") == b"2"
        with pytest.raises(tclnats_py.ErrKeyNotFound):
            kv.get("nope")
        with pytest.raises(tclnats_py.ErrKeyExists):
            kv.create("a.b", b"x")
        r3 = kv.update("a.b", b"3", last=r2)
        with pytest.raises(tclnats_py.ErrWrongLastSequence):
            kv.update("a.b", b"stale", last=r2)
        assert kv.create("c", b"new") > r3
        kv.delete("c")
        with pytest.raises(tclnats_py.ErrKeyNotFound):
            kv.get("c")
        assert kv.create("c", b"again")  # a deleted key can be created again
        with pytest.raises(tclnats_py.ErrInvalidArg):
            kv.put("bad key", b"x")
        assert sorted(kv.keys()) == ["a.b", "c"]
        assert [h.value for h in kv.history("a.b")] == [b"1", b"2", b"3"]
        assert kv.revert("a.b", r1) > r3 and kv.get_value("a.b") == b"1"
        kv.purge("a.b")
        with pytest.raises(tclnats_py.ErrKeyNotFound):
            kv.get("a.b")
        assert [h.operation for h in kv.history("a.b")] == ["PURGE"]
        kv.purge("c")
        with pytest.raises(tclnats_py.ErrNoKeysFound):
            kv.keys()
        with pytest.raises(tclnats_py.ErrKeyNotFound):
            kv.history("never")


def test_watch_as_an_iterator(js_server):
    with js_client(js_server) as (nc, js):
        kv = js.create_key_value("SK_WATCH", storage="memory")
        kv.put("k.1", b"a")
        kv.put("other", b"b")
        seen = []
        with kv.watch("k.*") as w:
            writer_go = threading.Event()

            def writer():
                writer_go.wait(5)
                kv.put("k.2", b"c")
                kv.put("other", b"ignored")
                kv.delete("k.1")
            t = threading.Thread(target=writer)
            t.start()
            for e in w:
                if e is None:
                    seen.append(None)
                    writer_go.set()
                    continue
                seen.append((e.key, e.value, e.operation))
                if e.operation == "DEL":
                    break
            t.join()
        assert seen == [("k.1", b"a", "PUT"), None, ("k.2", b"c", "PUT"), ("k.1", b"", "DEL")]
        assert list(w) == []  # stopped
        with kv.watch("k.*", updates_only=True) as w2:
            assert w2.updates(2) is None and w2.init_done  # the marker at once
            with pytest.raises(tclnats_py.ErrTimeout):
                w2.updates(0.3)
            kv.put("k.3", b"d")
            assert w2.updates(2).key == "k.3"
        with pytest.raises(tclnats_py.ErrConsumerStopped):
            w2.updates(0.3)
        js.delete_key_value("SK_WATCH")
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            kv.watch()
