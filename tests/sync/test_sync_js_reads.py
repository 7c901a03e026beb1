"""The blocking face's counters (ADR-49), batch and multi-last direct gets
(ADR-31), KV get_many, priority groups (ADR-42), and KV aggregates and
mirrors, against nats-server 2.15, and a 2.10 server refusing what it
cannot serve."""

import datetime
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import tclnats_py
from tclnats_py.errors import NatsError
from tclnats_py.sync.jetstream import Counter, DirectGet
from tclnats_py.sync.kv import kv_origin

from tests.sync.js_helpers import js_client


@pytest.mark.feature("counters")
def test_counter_add_get_get_many(js_server):
    with js_client(js_server) as (nc, js):
        js.create_stream("SCTR", subjects=["sctr.>"], allow_msg_counter=True, allow_direct=True)
        js.create_stream("SCTR_PLAIN", subjects=["sctrp.>"])
        c = js.counter("SCTR")
        assert isinstance(c, Counter)
        big = 10 ** 40
        assert (c.add("sctr.a", 5), c.add("sctr.a", -7), c.add("sctr.b", big), c.add("sctr.b", str(big))) == (
            5, -2, big, 2 * big)
        assert (c.get("sctr.a"), c.get("sctr.b")) == (-2, 2 * big)
        assert c.get_many(["sctr.a", "sctr.b", "sctr.none"]) == {"sctr.a": -2, "sctr.b": 2 * big}
        with pytest.raises(NatsError) as e:
            c.get("sctr.none")
        assert e.value.code == "ErrMsgNotFound"
        for bad in ("abc", 1.5, None):
            with pytest.raises(NatsError) as e:
                c.add("sctr.a", bad)
            assert e.value.code == "ErrInvalidArg"
        # without allow_direct the gets go through the stream API
        js.update_stream("SCTR", allow_direct=False)
        c2 = js.counter("SCTR")
        assert c2.get("sctr.a") == -2 and c2.get_many(["sctr.b"]) == {"sctr.b": 2 * big}
        with pytest.raises(NatsError) as e:
            js.counter("SCTR_PLAIN").add("sctrp.a", 1)
        assert e.value.code == "ErrJSResponse" and e.value.details["err_code"] == 10168
        with pytest.raises(NatsError) as e:
            js.counter("SCTR_NONE")
        assert e.value.code == "ErrStreamNotFound"


def seqs(it):
    return [m.seq for m in it]


@pytest.mark.feature("direct_batch")
def test_get_batch_and_get_last_msgs_for(js_server):
    with js_client(js_server) as (nc, js):
        s = js.create_stream("SDB", subjects=["sdb.*"], allow_direct=True)
        for i in range(10):
            js.publish(f"sdb.k{i % 3}", b"m%d" % i, headers={"N": str(i)})
        it = s.get_batch(4, seq=2)
        assert isinstance(it, DirectGet)
        msgs = it.all()
        assert [(m.seq, m.subject, m.data) for m in msgs] == [(2, "sdb.k1", b"m1"), (3, "sdb.k2", b"m2"),
                                                            (4, "sdb.k0", b"m3"), (5, "sdb.k1", b"m4")]
        assert msgs[0].headers["N"] == "1" and isinstance(msgs[0].headers, tclnats_py.Headers)
        assert it.num_pending == 5 and it._sub is None
        assert seqs(s.get_batch(100, subject="sdb.k1")) == [2, 5, 8]
        assert seqs(s.get_batch(5, seq=100)) == []
        assert len(s.get_batch(100, max_bytes=30).all()) < 10
        since = datetime.datetime.fromisoformat(msgs[2].time[:26] + "+00:00")
        assert seqs(s.get_batch(100, start_time=since))[0] >= 3
        last = s.get_last_msgs_for(["sdb.k0", "sdb.k1", "sdb.k2", "sdb.none"])
        assert seqs(last) == [8, 9, 10] and last.up_to_seq == 10
        assert seqs(s.get_last_msgs_for("sdb.*", up_to_seq=5)) == [3, 4, 5]
        it = s.get_batch(10)
        assert next(it).seq == 1
        it.close()
        assert it._sub is None and list(it) == []
        for bad in (lambda: s.get_batch(0),
                    lambda: s.get_last_msgs_for(["sdb.*"], up_to_seq=1, up_to_time="2025-01-01T00:00:00Z")):
            with pytest.raises(NatsError) as e:
                bad()
            assert e.value.code == "ErrInvalidArg"
        # "Too Many Results" past about a thousand subjects
        for i in range(1100):
            js.publish_async(f"sdb.n{i}", b"")
        js.publish_async_complete()
        with pytest.raises(NatsError) as e:
            s.get_last_msgs_for("sdb.*").all()
        assert e.value.code == "ErrInvalidArg"
        assert s.secure_delete_msg(1) is True
        with pytest.raises(NatsError) as e:
            s.get_msg(1)
        assert e.value.code == "ErrMsgNotFound"


@pytest.mark.feature("direct_batch")
def test_kv_get_many(js_server):
    with js_client(js_server) as (nc, js):
        kv = js.create_key_value("SDBKV", history=3)
        for i in range(1200):
            js.publish_async(f"$KV.SDBKV.k{i}", b"v%d" % i)
        js.publish_async_complete()
        kv.put("k1", b"newer")
        kv.delete("k2")
        got = kv.get_many([f"k{i}" for i in range(1200)] + ["missing"])
        assert len(got) == 1199 and "k2" not in got and "missing" not in got
        assert (got["k1"].value, got["k1"].revision, got["k1199"].value) == (b"newer", 1201, b"v1199")
        assert kv.get_many([]) == {}
        with pytest.raises(NatsError) as e:
            kv.get_many(["bad key"])
        assert e.value.code == "ErrInvalidArg"
        assert js.empty_key_value("SDBKV") >= 1199 and kv.get_many(["k1", "k3"]) == {}


@pytest.mark.feature("direct_batch", "counters", "priority_groups", "api_level")
def test_a_2_10_server_refuses_or_falls_back(old_js_server):
    with js_client(old_js_server) as (nc, js):
        s = js.create_stream("SOLD", subjects=["sold.*"], allow_direct=True)
        kv = js.create_key_value("SOLDKV")
        js.publish("sold.a", b"x")
        for it in (s.get_batch(5), s.get_last_msgs_for(["sold.a"])):
            with pytest.raises(tclnats_py.ErrServerTooOld, match="2.11"):
                it.all()
        with pytest.raises(tclnats_py.ErrServerTooOld):
            js.counter("SOLD")
        kv.put("a", b"1")   # get_many falls back to one get per key
        got = kv.get_many(["a", "b"])
        assert list(got) == ["a"] and got["a"].value == b"1"
        for policy, version in (("pinned_client", "2.11"), ("prioritized", "2.12")):
            with pytest.raises(tclnats_py.ErrServerTooOld, match=f"needs nats-server {version} or newer"):
                s.create_consumer(durable_name="P", priority_policy=policy, priority_groups=["jobs"])
        assert js.consumer_names("SOLD") == []
        cons = s.create_consumer(durable_name="P")
        with pytest.raises(tclnats_py.ErrServerTooOld):
            cons.unpin("jobs")


@pytest.mark.feature("priority_groups")
def test_pin_kept_stale_pin_repulled_and_unpin(js_server):
    """The pin the server gives rides on the next pulls; after an unpin the
    holder's pull gets 423, forgets the pin and pulls again in the same fetch."""
    with js_client(js_server) as (nc, js), ThreadPoolExecutor(1) as pool:
        s = js.create_stream("SPIN", subjects=["spin.*"], storage="memory")
        a = s.create_consumer(durable_name="P", priority_policy="pinned_client", priority_groups=["jobs"],
                              pinned_ttl=60)
        b = js.consumer("SPIN", "P")
        with pytest.raises(NatsError) as e:
            a.fetch(1, 0.5)
        assert e.value.code == "ErrBadRequest"
        with pytest.raises(tclnats_py.ErrInvalidArg):
            a.fetch(1, 0.5, min_pending=3)
        js.publish("spin.a", b"1")
        assert [m.data for m in a.fetch(1, 2, group="jobs")] == [b"1"]
        pin = a.pins["jobs"]
        assert a.refresh()["priority_groups"][0]["pinned_client_id"] == pin
        waiting = pool.submit(b.fetch, 1, 10, group="jobs")   # b stands by while a holds the pin
        time.sleep(0.3)
        js.publish("spin.a", b"2")
        assert [m.data for m in a.fetch(1, 2, group="jobs")] == [b"2"] and not waiting.done()
        assert js.unpin_consumer("SPIN", "P", "jobs") is True
        js.publish("spin.a", b"3")
        assert [m.data for m in waiting.result(10)] == [b"3"] and b.pins["jobs"] != pin
        t0 = time.monotonic()
        assert a.fetch(1, 1.0, group="jobs") == []
        assert a.pins == {} and time.monotonic() - t0 >= 0.9
        assert b.unpin("jobs") is True
        with pytest.raises(NatsError):
            b.unpin("no such group")


@pytest.mark.feature("priority_groups")
def test_overflow_and_prioritized(js_server):
    with js_client(js_server) as (nc, js), ThreadPoolExecutor(2) as pool:
        s = js.create_stream("SPRIO", subjects=["sprio.*"], storage="memory")
        over = s.create_consumer(durable_name="O", priority_policy="overflow", priority_groups=["jobs"],
                                 filter_subject="sprio.o")
        for i in range(3):
            js.publish("sprio.o", b"%d" % i)
        assert over.fetch(10, 0.5, group="jobs", min_pending=5) == []
        assert len(over.fetch(1, 2, group="jobs", min_pending=3)) == 1
        assert over.fetch(1, 0.5, group="jobs", min_ack_pending=2) == []
        with over.messages(group="jobs", min_ack_pending=1, expires=1.0) as it:
            assert [next(it).data, next(it).data] == [b"1", b"2"]
        ranked = s.create_consumer(durable_name="R", priority_policy="prioritized", priority_groups=["jobs"],
                                   filter_subject="sprio.r")
        low = pool.submit(ranked.fetch, 1, 3, group="jobs", priority=5)
        time.sleep(0.3)
        high = pool.submit(ranked.fetch, 1, 3, group="jobs", priority=0)
        time.sleep(0.3)
        js.publish("sprio.r", b"x")
        assert [m.data for m in high.result(10)] == [b"x"] and low.result(10) == []


def test_kv_mirror_and_aggregate(js_server):
    with js_client(js_server) as (nc, js):
        origin = js.create_key_value("SORIGIN", storage="memory")
        origin.put("new.a", b"1")
        origin.put("old.b", b"2")
        assert js.create_kv_mirror("SREAD_COPY", kv_origin("SORIGIN"), storage="memory") is None
        agg = js.create_kv_aggregate("SAGG", True, [kv_origin("SORIGIN", keys=["new.>"])], storage="memory")
        ro = js.create_kv_aggregate("SRO", False, [kv_origin("SORIGIN")], storage="memory")
        for _ in range(100):
            try:
                if len(agg.keys()) == 1 and len(ro.keys()) == 2:
                    break
            except tclnats_py.ErrNoKeysFound:
                pass
            time.sleep(0.05)
        assert agg.keys() == ["new.a"] and sorted(ro.keys()) == ["new.a", "old.b"]
        assert agg.get("new.a").value == b"1"
        agg.put("own", b"x")
        assert agg.get("own").value == b"x"
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            ro.put("own", b"x")
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            js.key_value("SREAD_COPY")   # a mirror is no bucket one binds to
        info = js.stream_info("SREAD_COPY")
        assert info.config.mirror_direct and info.config.mirror["name"] == "KV_SORIGIN"
        for bad in (lambda: js.create_kv_mirror("KV_SBAD", kv_origin("SORIGIN")),
                    lambda: js.create_kv_mirror("SBAD", kv_origin("SORIGIN"), mirror_name="SORIGIN"),
                    lambda: js.create_kv_aggregate("SNONE", True, [])):
            with pytest.raises(tclnats_py.ErrInvalidArg):
                bad()
        assert js.delete_stream("SREAD_COPY") is True   # a mirror is deleted as a stream
