"""Per-message TTL, KV key TTLs with limit markers (ADR-43, ADR-48), consumer
pause/resume/reset and Nats-Expected-Last-Subject-Sequence-Subject on the
asyncio face: against nats-server 2.15.1, and refused before anything is sent
by nats-server 2.10.26 (old_js_server)."""

import asyncio
import datetime
import time

import pytest

import tclnats_py
from tclnats_py.aio.jetstream.config import StreamConfig


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def connect(server):
    c = await tclnats_py.connect(server.url)
    return c, c.jetstream()


async def until(cond, timeout=8.0):
    deadline = time.monotonic() + timeout
    while True:
        v = await cond()
        if v or time.monotonic() > deadline:
            return v
        await asyncio.sleep(0.1)


@pytest.mark.feature("msg_ttl")
def test_message_ttl_and_subject_delete_markers(js_server):
    async def go():
        c, js = await connect(js_server)
        # (max_msgs_per_subject 1: else the marker TTL is also the least TTL of a message, ADR-43)
        s = await js.create_stream("TTL1", subjects=["ttl1.>"], allow_msg_ttl=True, subject_delete_marker_ttl=30,
                                   max_msgs_per_subject=1)
        assert s.config.allow_msg_ttl is True and s.config.subject_delete_marker_ttl == 30
        assert s.info["config"]["subject_delete_marker_ttl"] == 30_000_000_000
        await js.publish("ttl1.a", b"short", ttl=1)
        await js.publish("ttl1.b", b"kept", ttl="never")
        fut = await js.publish_async("ttl1.c", b"async", ttl="1s")
        assert (await fut).seq == 3

        async def marker():
            try:
                m = await js.get_msg("TTL1", last_by_subj="ttl1.a")
            except tclnats_py.ErrMsgNotFound:
                return None
            return m if m.header("Nats-Marker-Reason") else None
        m = await until(marker)
        assert m is not None and m.header("Nats-Marker-Reason") == "MaxAge" and m.data == b""
        assert (await js.get_msg("TTL1", last_by_subj="ttl1.b")).data == b"kept"
        await js.create_stream("TTL2", subjects=["ttl2.>"])
        with pytest.raises(tclnats_py.ErrJSResponse) as e:   # the stream has no per-message TTL
            await js.publish("ttl2.a", b"x", ttl=5)
        assert e.value.err_code == 10166
        await c.close()
    run(go())


@pytest.mark.feature("kv_key_ttl")
def test_kv_key_ttl_and_limit_markers(js_server):
    async def go():
        c, js = await connect(js_server)
        kv = await js.create_key_value("TTLKV", limit_marker_ttl=30)
        st = await kv.status()
        assert st.limit_marker_ttl == 30 and st.stream_config["allow_msg_ttl"] is True
        w = kv.watch("k")
        it = w.__aiter__()
        assert await it.__anext__() is None          # nothing there yet
        rev = await kv.create("k", b"v", ttl=1)
        first = await it.__anext__()
        assert (first.revision, first.operation, first.reason) == (rev, "PUT", None)
        gone = await asyncio.wait_for(it.__anext__(), 10)
        assert (gone.operation, gone.reason, gone.value) == ("PURGE", "MaxAge", b"")
        await w.stop()
        with pytest.raises(tclnats_py.ErrKeyNotFound):
            await kv.get("k")
        assert [(e.operation, e.reason) for e in await kv.history("k")] == [("PURGE", "MaxAge")]
        assert await kv.create("k", b"again") > gone.revision     # created on top of the marker
        # a purge marker that goes away by itself
        await kv.put("p", b"1")
        await kv.purge("p", ttl=1)
        assert [e.operation for e in await kv.history("p")] == ["PURGE"]

        async def purged_gone():
            try:
                await kv.history("p")
            except tclnats_py.ErrKeyNotFound:
                return True
            return False
        assert await until(purged_gone)
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await kv.create("x", b"v", ttl=0.5)
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await js.create_key_value("TTLKV2", limit_marker_ttl=0.5)
        await c.close()
    run(go())


@pytest.mark.feature("expected_last_subject_seq_subject")
def test_expected_last_subject_sequence_subject(js_server):
    async def go():
        c, js = await connect(js_server)
        await js.create_stream("ELS", subjects=["els.>"])
        await js.publish("els.a", b"1")
        last = (await js.publish("els.b", b"2")).seq
        await js.publish("els.x.c", b"other")
        ack = await js.publish("els.c", b"3", expected_last_subject_seq=last, expected_last_subject_seq_subject="els.*")
        assert ack.seq == 4
        with pytest.raises(tclnats_py.ErrWrongLastSequence):
            await js.publish("els.d", b"4", expected_last_subject_seq=last,
                             expected_last_subject_seq_subject="els.*")
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await js.publish("els.d", b"4", expected_last_subject_seq_subject="els.*")
        fut = await js.publish_async("els.e", b"5", expected_last_subject_seq=4,
                                     expected_last_subject_seq_subject="els.*")
        assert (await fut).seq == 5
        await c.close()
    run(go())


@pytest.mark.feature("consumer_pause", "consumer_reset")
def test_pause_resume_reset_consumer(js_server):
    async def go():
        c, js = await connect(js_server)
        s = await js.create_stream("PAUSE", subjects=["pause.>"])
        for i in range(3):
            await js.publish("pause.a", str(i).encode())
        until_time = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=5)
        cons = await js.create_consumer("PAUSE", durable_name="C", pause_until=until_time)
        assert cons.info.paused is True and cons.info.pause_remaining > 0
        assert await cons.fetch(1, 0.5) == []
        r = await js.resume_consumer("PAUSE", "C")
        assert r.paused is False
        msgs = await cons.fetch(3, 2)
        assert [m.data for m in msgs] == [b"0", b"1", b"2"]
        for m in msgs:
            await m.ack_sync()
        p = await s.pause_consumer("C", int(time.time() * 1000) + 60_000)
        assert p.paused is True and p.pause_remaining > 50_000_000_000
        assert abs(p.pause_until_at.timestamp() - (time.time() + 60)) < 10
        assert (await js.consumer_info("PAUSE", "C")).paused is True
        assert (await s.resume_consumer("C")).paused is False
        reset = await js.reset_consumer("PAUSE", "C", 2)
        assert reset.reset_seq == 2 and reset.name == "C" and reset.config.durable_name == "C"
        assert [m.data for m in await cons.fetch(2, 2)] == [b"1", b"2"]
        again = await s.reset_consumer("C")
        assert again.reset_seq >= 1
        with pytest.raises(tclnats_py.ErrConsumerNotFound):
            await js.pause_consumer("PAUSE", "NOPE", until_time)
        await c.close()
    run(go())


@pytest.mark.feature("config_fields")
def test_new_config_fields_round_trip(js_server):
    async def go():
        c, js = await connect(js_server)
        s = await js.create_stream("NEWF", subjects=["newf.>"], allow_msg_counter=True, persist_mode="async",
                                   discard_new_per_subject=False)
        assert s.config.allow_msg_counter is True and s.config.persist_mode == "async" and s.config.extra == {}
        s1 = await js.create_stream("NEWF1", subjects=["newf1.>"], allow_msg_schedules=True)
        assert s1.config.allow_msg_schedules is True
        s2 = await js.create_stream(StreamConfig(name="NEWF2", subjects=["newf2.>"], allow_atomic=True,
                                                 allow_batched=True))
        assert s2.config.allow_atomic is True and s2.config.allow_batched is True
        cons = await js.create_consumer("NEWF2", durable_name="P", priority_groups=["jobs"],
                                        priority_policy="pinned_client", pinned_ttl=30)
        assert cons.config.priority_groups == ["jobs"] and cons.config.priority_policy == "pinned_client"
        assert cons.config.pinned_ttl == 30 and cons.info["config"]["priority_timeout"] == 30_000_000_000
        await c.close()
    run(go())


# ------------------------------------------------------------------ nats-server 2.10: too old
@pytest.mark.feature("api_level")
def test_old_server_refuses_before_sending(old_js_server):
    async def go():
        c, js = await connect(old_js_server)
        await js.create_stream("OLD", subjects=["old.>"])
        with pytest.raises(tclnats_py.ErrServerTooOld, match="msg ttl needs nats-server 2.11 or newer"):
            await js.publish("old.a", b"x", ttl=5)
        with pytest.raises(tclnats_py.ErrServerTooOld):
            await js.publish_async("old.a", b"x", ttl=5)
        with pytest.raises(tclnats_py.ErrServerTooOld, match="2.11"):
            await js.publish("old.a", b"x", expected_last_subject_seq=0, expected_last_subject_seq_subject="old.*")
        assert (await js.stream_info("OLD")).state.messages == 0      # nothing was stored
        with pytest.raises(tclnats_py.ErrServerTooOld, match="kv limit marker ttl"):
            await js.create_key_value("OLDKV", limit_marker_ttl=5)
        assert "OLDKV" not in await js.key_value_buckets()
        kv = await js.create_key_value("OLDKV2")
        with pytest.raises(tclnats_py.ErrServerTooOld, match="kv key ttl"):
            await kv.create("k", b"v", ttl=5)
        with pytest.raises(tclnats_py.ErrServerTooOld):
            await kv.purge("k", ttl=5)
        with pytest.raises(tclnats_py.ErrKeyNotFound):
            await kv.get("k")
        await kv.create("k", b"v")                   # without a ttl it works as ever
        await js.create_consumer("OLD", durable_name="C")
        with pytest.raises(tclnats_py.ErrServerTooOld, match="consumer pause needs nats-server 2.11"):
            await js.pause_consumer("OLD", "C", datetime.datetime(2030, 1, 1))
        with pytest.raises(tclnats_py.ErrServerTooOld):
            await js.resume_consumer("OLD", "C")
        with pytest.raises(tclnats_py.ErrServerTooOld, match="consumer reset needs nats-server 2.14"):
            await js.reset_consumer("OLD", "C")
        with pytest.raises(tclnats_py.ErrServerTooOld) as e:
            await js.require_level("counters")
        assert e.value.details == {"feature": "counters", "level": 2, "version": "2.12", "server_level": 0}
        await c.close()
    run(go())
