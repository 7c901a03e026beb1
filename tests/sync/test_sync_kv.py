"""Key-Value on the blocking face (tclnats_py.sync.kv) against a real
nats-server: the bucket's life, reads and writes with their errors, keys,
history, status, and a watch read as an iterator while another thread writes."""

import threading
import time

import pytest

import tclnats_py
from tclnats_py.aio.kv import KvEntry as AioKvEntry
from tclnats_py.engine.js import kv as engine_kv
from tclnats_py.engine.protocol import compiled
from tclnats_py.sync.kv import KvEntry, KvStatus

from tests.sync.js_helpers import js_client

_ENTRY_SLOTS = engine_kv.Entry.__slots__


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



def _outcome(get, key):
    """get(key) as ("entry", its class, its slots) or ("error", code, text, details)."""
    try:
        e = get(key)
    except tclnats_py.NatsError as err:
        return "error", err.code, str(err), err.details
    return "entry", type(e), [getattr(e, s) for s in _ENTRY_SLOTS]


def test_a_keys_later_gets_read_the_reply_as_its_first_get_does(js_server, monkeypatch):
    """A key's first get reads the direct get's reply as a Msg; the later ones
    keep its parts (Engine.direct_request's raw) for Bucket.direct_entry,
    read by natsproto.c kv_entry or its Python reference: the same entries
    and errors, on values, deletes, purges, a key's TTL and a limit marker."""
    read = []
    direct_entry = engine_kv.Bucket.direct_entry
    monkeypatch.setattr(engine_kv.Bucket, "direct_entry",
                        lambda self, key, parts, cls=None: read.append(key) or direct_entry(self, key, parts, cls))
    compiled_round_trip = compiled("read_reply") is not None
    with js_client(js_server) as (nc, js):
        kv = js.create_key_value("SK_DIRECT", history=3, storage="memory", limit_marker_ttl=5)
        kv.put("live", b"1")
        kv.put("live", b"2")
        kv.put("gone", b"x")
        kv.delete("gone")
        kv.put("purged", b"x")
        kv.purge("purged")
        kv.create("ttl", b"t", ttl=60)
        kv.create("expired", b"e", ttl=1)
        deadline = time.monotonic() + 10
        while _outcome(js.key_value("SK_DIRECT").get, "expired")[-1] != {"revision": 9}:  # the marker placed
            assert time.monotonic() < deadline, "no limit marker"
            time.sleep(0.2)
        keys = ["live", "gone", "purged", "ttl", "expired", "nope"]
        first = {k: _outcome(js.key_value("SK_DIRECT").get, k) for k in keys}
        assert [first[k][0] for k in keys] == ["entry", "error", "error", "entry", "error", "error"]
        assert first["live"][2][2:4] == [b"2", 2] and first["ttl"][2][2:4] == [b"t", 7]
        assert [first[k][3] for k in keys[1:] if k != "ttl"] == [{"revision": 4}, {"revision": 6}, {"revision": 9}, {}]
        for k in keys:
            _outcome(kv.get, k)  # read once: the later gets keep the reply's parts
        for c_reader in (True, False):
            if not c_reader:
                monkeypatch.setattr(engine_kv, "_kv_entry", None)
            del read[:]
            for _ in range(3):
                assert {k: _outcome(kv.get, k) for k in keys} == first
            # (a 404 status: the Msg's path; without the compiled round trip every reply is a Msg)
            assert set(read) == (set(keys) - {"nope"} if compiled_round_trip else set())
