"""nats-py's JetStream API on tclnats_py (tclnats_py.natspy.js), against a real nats-server.

The dataclass tests are server-free (marked unit); the rest use the module's
JetStream server, each with its own stream names."""

import asyncio
import datetime
import io
import logging

import pytest

from tclnats_py import natspy as nats
from tclnats_py.natspy import errors as core_errors
from tclnats_py.natspy.js import api
from tclnats_py.natspy.js import errors as js_errors


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


# ---------------------------------------------------------------- nats.js.api, server-free
@pytest.mark.unit
def test_stream_config_round_trip_in_seconds_and_nanoseconds():
    cfg = api.StreamConfig(name="S", subjects=["s.>"], max_age=1.5, duplicate_window=2,
                           sources=[api.StreamSource(name="O", opt_start_time=datetime.datetime(2024, 1, 2, 3, 4, 5))],
                           consumer_limits=api.StreamConsumerLimits(inactive_threshold=0.25))
    d = cfg.as_dict()
    assert d["max_age"] == 1_500_000_000 and d["duplicate_window"] == 2_000_000_000
    assert d["sources"] == [{"name": "O", "opt_start_time": "2024-01-02T03:04:05Z"}]
    assert d["consumer_limits"] == {"inactive_threshold": 250_000_000}
    assert "subject_delete_marker_ttl" not in d and "description" not in d
    back = api.StreamConfig.from_response(dict(d, unknown_field=1))
    assert back.max_age == 1.5 and back.sources[0].opt_start_time.tzinfo is not None
    assert isinstance(back.consumer_limits, api.StreamConsumerLimits)
    assert back.consumer_limits.inactive_threshold == 0.25
    with pytest.raises(ValueError, match="compression"):
        api.StreamConfig(name="S", compression="zip").as_dict()


@pytest.mark.unit
def test_consumer_info_times_and_durations():
    ci = api.ConsumerInfo.from_response({
        "name": "C", "stream_name": "S", "created": "2025-12-15T16:55:37.20373Z",
        "config": {"ack_wait": 30_000_000_000, "backoff": [1_000_000_000, 2_500_000_000], "durable_name": "C"},
        "delivered": {"consumer_seq": 1, "stream_seq": 2, "last_active": "2024-06-01T12:30:00.123456789+02:00"}})
    assert ci.created == datetime.datetime(2025, 12, 15, 16, 55, 37, 203730, tzinfo=datetime.timezone.utc)
    assert ci.config.ack_wait == 30 and ci.config.backoff == [1, 2.5]
    assert ci.delivered.last_active == datetime.datetime(2024, 6, 1, 10, 30, 0, 123456, tzinfo=datetime.timezone.utc)
    d = api.ConsumerConfig(durable_name="C", backoff=[1, 2]).as_dict()
    assert d["backoff"] == [1_000_000_000, 2_000_000_000]
    assert d["ack_wait"] == 0 and d["idle_heartbeat"] == 0  # always sent: the server refuses null
    assert d["deliver_policy"] == "all" and d["ack_policy"] == "explicit"


@pytest.mark.unit
def test_kv_and_object_store_configs():
    kv = api.KeyValueConfig(bucket="B", ttl=60, limit_marker_ttl=5)
    assert kv.as_dict() == {"bucket": "B", "history": 1, "ttl": 60_000_000_000, "replicas": 1}
    info = api.ObjectInfo.from_response({"name": "n", "bucket": "b", "nuid": "x",
                                         "options": {"link": {"bucket": "o", "name": "t"}}})
    assert info.is_link() and info.options.link.name == "t" and info.meta.name == "n"
    limits = dict.fromkeys(("max_memory", "max_storage", "max_streams", "max_consumers", "max_ack_pending",
                            "memory_max_stream_bytes", "storage_max_stream_bytes"), -1)
    limits["max_bytes_required"] = False
    acc = api.AccountInfo.from_response({"memory": 0, "storage": 0, "streams": 0, "consumers": 0,
                                         "limits": limits, "api": {"total": 1, "errors": 0},
                                         "tiers": {"R1": {"memory": 1, "storage": 2, "streams": 3, "consumers": 4,
                                                          "limits": limits}}})
    assert acc.api.level is None and acc.tiers["R1"].streams == 3 and acc.limits.max_streams == -1


@pytest.mark.unit
def test_error_translation_by_api_code():
    from tclnats_py.engine.js.api import error_from_api
    e = js_errors.translate(error_from_api({"code": 404, "err_code": 10059, "description": "stream not found"}))
    assert isinstance(e, js_errors.NotFoundError) and e.err_code == 10059 and e.description == "stream not found"
    e = js_errors.translate(error_from_api({"code": 400, "err_code": 10060, "description": "x"}))
    assert isinstance(e, js_errors.BadRequestError) and e.code == 400
    assert isinstance(js_errors.FetchTimeoutError(), core_errors.TimeoutError)
    assert isinstance(js_errors.FetchTimeoutError(), asyncio.TimeoutError)


# ---------------------------------------------------------------- against the server
def test_streams_consumers_and_messages(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream()
        with pytest.raises(js_errors.NoStreamResponseError):
            await js.publish("np.none", b"x")
        si = await js.add_stream(name="NPJS1", subjects=["np1.>"], max_age=60)
        assert isinstance(si, api.StreamInfo) and si.config.max_age == 60 and si.state.messages == 0
        with pytest.raises(ValueError, match="invalid stream name"):
            await js.add_stream(name="bad.name")
        ack = await js.publish("np1.a", b"one", headers={"K": "v"})
        assert (ack.stream, ack.seq) == ("NPJS1", 1)
        with pytest.raises(js_errors.BadRequestError) as err:
            await js.publish("np1.a", b"x", stream="OTHER")
        assert err.value.err_code == 10060
        msg = await js.get_msg("NPJS1", 1)
        assert (msg.subject, msg.data, msg.headers) == ("np1.a", b"one", {"K": "v"})
        assert isinstance(msg.time, datetime.datetime)
        last = await js.get_last_msg("NPJS1", "np1.a")
        assert last.seq == 1
        with pytest.raises(js_errors.NotFoundError) as err:
            await js.stream_info("NPJS_MISSING")
        assert err.value.err_code == 10059
        ci = await js.add_consumer("NPJS1", durable_name="D", ack_policy="explicit")
        assert ci == await js.consumer_info("NPJS1", "D")
        assert [c.name for c in await js.consumers_info("NPJS1")] == ["D"]
        assert await js.delete_consumer("NPJS1", "D")
        with pytest.raises(js_errors.NotFoundError) as err:
            await js.consumer_info("NPJS1", "D")
        assert err.value.err_code == 10014
        assert await js.delete_msg("NPJS1", 1)
        assert (await js.stream_info("NPJS1")).state.messages == 0
        assert await js.purge_stream("NPJS1")
        assert "NPJS1" in [s.config.name for s in await js.streams_info()]
        assert isinstance(await js.account_info(), api.AccountInfo)
        assert await js.delete_stream("NPJS1")
        await nc.close()
    run(go())


def test_pull_subscribe_fetch(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream()
        await js.add_stream(name="NPJS2", subjects=["np2"])
        for i in range(5):
            await js.publish("np2", b"m%d" % i)
        sub = await js.pull_subscribe("np2", "dur")
        msgs = await sub.fetch(1)
        assert msgs[0].data == b"m0"
        md = msgs[0].metadata
        assert (md.sequence.stream, md.sequence.consumer, md.num_pending, md.stream) == (1, 1, 4, "NPJS2")
        await msgs[0].ack()
        msgs = await sub.fetch(10, timeout=1)  # what there is, without waiting out the timeout
        assert [m.data for m in msgs] == [b"m1", b"m2", b"m3", b"m4"]
        for m in msgs:
            await m.ack_sync()
        with pytest.raises(core_errors.TimeoutError):
            await sub.fetch(1, timeout=0.5)
        with pytest.raises(js_errors.FetchTimeoutError):  # heartbeats came, no message
            await sub.fetch(3, timeout=1, heartbeat=0.1)
        with pytest.raises(ValueError):
            await sub.fetch(0)
        info = await sub.consumer_info()
        assert info.num_ack_pending == 0 and info.num_pending == 0

        waiter = asyncio.ensure_future(sub.fetch(2, timeout=5))
        await asyncio.sleep(0.3)
        await js.publish("np2", b"late")
        assert [m.data for m in await waiter] == [b"late"]

        bound = await js.pull_subscribe_bind("dur", stream="NPJS2")
        await js.publish("np2", b"again")
        got = await bound.fetch(1)
        await got[0].nak()
        assert (await bound.fetch(1))[0].metadata.num_delivered == 2
        with pytest.raises(js_errors.NotFoundError):
            await js.pull_subscribe("np2.none")  # no stream has that subject
        await nc.close()
    run(go())


def test_push_subscribe_durable_queue_and_flow_control(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream()
        await js.add_stream(name="NPJS3", subjects=["np3"])
        for i in range(20):
            await js.publish("np3", b"%d" % i)
        got = []

        async def cb(m):
            got.append(m.data)

        await js.subscribe("np3", cb=cb, durable="solo", flow_control=True, idle_heartbeat=0.5)
        for _ in range(50):
            if len(got) == 20:
                break
            await asyncio.sleep(0.1)
        assert got == [b"%d" % i for i in range(20)]
        info = await js.consumer_info("NPJS3", "solo")
        assert info.push_bound and info.num_ack_pending == 0  # acked after the callback
        with pytest.raises(js_errors.Error, match="already bound"):
            await js.subscribe("np3", cb=cb, durable="solo")

        sync = await js.subscribe("np3", durable="reader", manual_ack=True)
        first = await sync.next_msg(timeout=2)
        assert first.data == b"0" and first.metadata.sequence.consumer == 1
        await first.ack()
        assert sync.delivered >= 1

        q1 = await js.subscribe("np3", "workers", cb=cb)
        q2 = await js.subscribe("np3", "workers", cb=cb)
        assert q1.subject == q2.subject
        await q1.unsubscribe()
        with pytest.raises(core_errors.BadSubscriptionError):
            await q1.unsubscribe()
        await nc.close()
    run(go())


def test_ordered_push_subscription(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream()
        await js.add_stream(name="NPJS4", subjects=["np4.*"])
        for i in range(30):
            await js.publish(f"np4.{i % 3}", b"%d" % i)
        sub = await js.subscribe("np4.*", ordered_consumer=True)
        seen = [(await sub.next_msg(timeout=2)).data for _ in range(30)]
        assert seen == [b"%d" % i for i in range(30)]
        info = await sub.consumer_info()
        assert info.config.ack_policy == "none" and info.config.flow_control
        await sub.unsubscribe()
        await nc.close()
    run(go())


def test_publish_async(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream(publish_async_max_pending=5)
        await js.add_stream(name="NPJS5", subjects=["np5"])
        futs = [await js.publish_async("np5", b"x", wait_stall=5) for _ in range(20)]
        await js.publish_async_completed()
        assert js.publish_async_pending() == 0
        assert [f.result().seq for f in futs] == list(range(1, 21))
        fut = await js.publish_async("np5.none", b"x")
        with pytest.raises(js_errors.NoStreamResponseError):
            await fut
        await nc.close()
    run(go())


def test_key_value(js_server, caplog):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream()
        kv = await js.create_key_value(bucket="NPKV", history=5)
        with pytest.raises(js_errors.InvalidBucketNameError):
            await js.create_key_value(bucket="bad.name")
        r1 = await kv.put("a", b"1")
        r2 = await kv.update("a", b"2", last=r1)
        with pytest.raises(js_errors.KeyWrongLastSequenceError):
            await kv.update("a", b"stale", last=r1)
        with pytest.raises(js_errors.KeyWrongLastSequenceError):
            await kv.create("a", b"again")
        e = await kv.get("a")
        assert (e.key, e.value, e.revision, e.operation) == ("a", b"2", r2, None)
        await kv.delete("a")
        with pytest.raises(js_errors.KeyNotFoundError) as err:
            await kv.get("a")
        assert err.value.op == "DEL"
        assert await kv.create("a", b"3") > r2  # on top of the delete marker
        with pytest.raises(js_errors.InvalidKeyError):
            await kv.put(".bad", b"x")
        await kv.put("b.c", b"4")
        assert sorted(await kv.keys()) == ["a", "b.c"]
        # with filters, nats-py's warning on its logger (its examples/kv.py prints it)
        with caplog.at_level(logging.WARNING, logger="nats.js.kv"):
            assert await kv.keys(filters=["b."]) == ["b.c"]
        assert [r.getMessage() for r in caplog.records if r.name == "nats.js.kv"] == [
            "Server may ignore filters if version is < 2.10."]
        hist = await kv.history("a")
        assert [h.operation for h in hist] == [None, None, "DEL", None]
        assert isinstance(hist[0].created, datetime.datetime)

        w = await kv.watch("b.*")
        first = await w.updates(timeout=2)
        assert (first.key, first.value) == ("b.c", b"4")
        assert await w.updates(timeout=2) is None  # the end of the initial values
        await kv.purge("b.c")
        purged = await w.updates(timeout=2)
        assert (purged.key, purged.operation) == ("b.c", "PURGE")
        await w.stop()
        status = await kv.status()
        assert status.bucket == "NPKV" and status.history == 5
        assert (await js.key_value("NPKV"))._name == "NPKV"
        assert await js.delete_key_value("NPKV")
        with pytest.raises(js_errors.BucketNotFoundError):
            await js.key_value("NPKV")
        await nc.close()
    run(go())


def test_object_store(js_server):
    async def go():
        nc = await nats.connect(js_server.url)
        js = nc.jetstream()
        obs = await js.create_object_store("NPOBJ", config=api.ObjectStoreConfig(description="d"))
        data = bytes(range(256)) * 1000
        info = await obs.put("blob", data, meta=api.ObjectMeta(name="blob", headers={"h": "v"},
                                                               options=api.ObjectMetaOptions(max_chunk_size=4096)))
        assert (info.name, info.size, info.chunks, info.headers) == ("blob", len(data), 63, {"h": "v"})
        res = await obs.get("blob")
        assert res.data == data and res.info.digest == info.digest
        out = io.BytesIO()
        await obs.get("blob", writeinto=out)
        assert out.getvalue() == data
        await obs.put("text", io.BytesIO(b"from a reader"))
        assert (await obs.get("text")).data == b"from a reader"
        assert sorted(i.name for i in await obs.list()) == ["blob", "text"]
        await obs.delete("text")
        with pytest.raises(js_errors.ObjectNotFoundError):
            await obs.get("text")
        assert (await obs.get_info("text", show_deleted=True)).deleted
        w = await obs.watch(updates_only=True)
        with pytest.raises(core_errors.TimeoutError):
            await w.updates(timeout=0.5)
        await obs.put("new", b"n")
        assert (await w.updates(timeout=2)).name == "new"
        await w.stop()
        status = await obs.status()
        assert status.description == "d" and not status.sealed
        await obs.seal()
        assert (await obs.status()).sealed
        assert await js.delete_object_store("NPOBJ")
        with pytest.raises(js_errors.BucketNotFoundError):
            await js.object_store("NPOBJ")
        await nc.close()
    run(go())


def test_manager_calls_take_a_per_call_timeout(js_server):
    """account_info, delete_stream, delete_consumer, delete_msg and
    find_stream_name_by_subject take timeout= (s), which wins over the
    manager's: a responder that never answers ends the call with nats-py's
    TimeoutError long before the manager's 60 s."""
    async def main():
        nc = await nats.connect(js_server.url)
        jsm = nc.jsm()
        await jsm.add_stream(name="PCT", subjects=["pct.>"])
        await nc.jetstream().publish("pct.a", b"1")
        await jsm.add_consumer("PCT", durable_name="D")
        assert (await jsm.account_info(timeout=5)).streams >= 1
        assert await jsm.find_stream_name_by_subject("pct.a", timeout=5) == "PCT"
        assert await jsm.delete_msg("PCT", 1, timeout=5)
        assert await jsm.delete_consumer("PCT", "D", timeout=5)
        assert await jsm.delete_stream("PCT", timeout=5)
        silent = await nc.subscribe("quiet.api.>", cb=None)  # takes the requests, answers none
        slow = nc.jsm(prefix="quiet.api", timeout=60)
        for call in (slow.account_info(timeout=0.2), slow.delete_stream("X", timeout=0.2)):
            with pytest.raises(core_errors.TimeoutError):
                await asyncio.wait_for(call, 30)
        await silent.unsubscribe()
        await nc.close()
    run(main())
