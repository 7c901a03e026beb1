"""JetStream on the Python face against a real nats-server, and across faces
(Tcl, nats-py)."""

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

import tclnats_py
from tclnats_py import NatsError
from tclnats_py.aio.jetstream import Consumer as Consumer
from tclnats_py.aio.jetstream import ConsumerConfig as ConsumerConfig
from tclnats_py.aio.jetstream import StreamConfig as StreamConfig
from tclnats_py.aio.jetstream import stream_source as stream_source
from tclnats_py.aio.jetstream import subject_transform as subject_transform


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def connect(server, **kw):
    c = await tclnats_py.connect(server.url)
    return c, c.jetstream(**kw)


def codes(exc_info):
    return exc_info.value.code


# ------------------------------------------------------------------ streams
def test_stream_management(js_server):
    async def go():
        c, js = await connect(js_server)
        s = await js.create_stream("PY_MGMT", subjects=["mgmt.*"], storage="memory", max_age=60, duplicate_window=5,
                                   description="first", metadata={"owner": "py"})
        assert s.name == "PY_MGMT" and s.config.max_age == 60.0 and s.config.duplicate_window == 5.0
        info = await js.stream_info("PY_MGMT")
        assert info["config"]["max_age"] == 60 * 10**9  # the raw reply keeps the wire's units
        assert info.config.metadata["owner"] == "py" and info.state.messages == 0 and info.created_at.year > 2000
        # update with keywords only: the rest of the config stays
        s = await js.update_stream("PY_MGMT", description="second", max_msgs=100)
        assert (s.config.description, s.config.max_msgs, s.config.storage) == ("second", 100, "memory")
        s = await s.update(max_msgs=200)
        assert s.config.max_msgs == 200 and s.config.description == "second"
        s2 = await js.create_or_update_stream(StreamConfig(name="PY_MGMT2", subjects=["mgmt2.>"], storage="memory"))
        s2 = await js.create_or_update_stream("PY_MGMT2", s2.config, description="upd")
        assert s2.config.description == "upd"
        assert {"PY_MGMT", "PY_MGMT2"} <= set(await js.stream_names())
        assert await js.stream_names(subject="mgmt2.x") == ["PY_MGMT2"]
        assert {i.config.name for i in await js.streams()} >= {"PY_MGMT", "PY_MGMT2"}
        for i in range(6):
            await js.publish(f"mgmt.{'a' if i % 2 else 'b'}", str(i))
        assert await s.purge(filter="mgmt.a", keep=1) == 2
        assert await js.purge_stream("PY_MGMT", seq=5) == 2  # below seq 5: messages 1 and 3 (b's)
        assert (await s.refresh()).state.messages == 2
        assert await js.purge_stream("PY_MGMT") == 2
        acct = await js.account_info()
        assert acct.streams >= 2 and "limits" in acct
        # errors
        with pytest.raises(tclnats_py.ErrStreamNotFound) as e:
            await js.stream_info("NOPE")
        assert (str(e.value), e.value.details["code"], e.value.details["err_code"]) == ("stream not found", 404, 10059)
        with pytest.raises(tclnats_py.ErrStreamNotFound):
            await js.delete_stream("NOPE")
        with pytest.raises(tclnats_py.ErrStreamNotFound):
            await js.purge_stream("NOPE")
        with pytest.raises(tclnats_py.ErrStreamNotFound):
            await js.update_stream("NOPE", StreamConfig(subjects=["nope"]))
        with pytest.raises(NatsError) as e:
            await js.create_stream("PY_MGMT", subjects=["other.*"])  # exists with another config
        assert codes(e) == "ErrJSResponse" and e.value.details["err_code"] == 10058
        for bad in ("bad.name", "sp ace", "a*"):
            with pytest.raises(tclnats_py.ErrInvalidArg):
                await js.create_stream(bad, subjects=["x"])
        with pytest.raises(tclnats_py.ErrInvalidArg) as e:
            await js.create_stream("PY_X", subjects=["x"], retention="forever")
        assert "allowed values: limits interest workqueue" in str(e.value)
        with pytest.raises(tclnats_py.ErrInvalidArg) as e:
            await js.create_stream("PY_X", subjectz=["x"])
        assert str(e.value) == "Unknown option subjectz"
        assert await js.delete_stream("PY_MGMT") and await s2.delete()
        await c.close()
    run(go())


def test_typed_configs_keep_unknown_fields(js_server):
    async def go():
        c, js = await connect(js_server)
        raw = {"name": "PY_TYPED", "subjects": ["typed.*"], "storage": "memory", "max_age": 120 * 10**9,
               "future_field": {"x": 1}}
        cfg = StreamConfig.from_api(raw)
        assert cfg.max_age == 120.0 and cfg.extra == {"future_field": {"x": 1}}
        wire = cfg.to_api()
        assert wire["max_age"] == 120 * 10**9 and wire["future_field"] == {"x": 1} and wire["retention"] == "limits"
        stream = await js.create_stream("PY_TYPED", StreamConfig(subjects=["typed.*"], storage="memory",
                                                                  max_age=120.0, duplicate_window=10.0))
        cfg = stream.config
        assert cfg.max_age == 120.0 and cfg.duplicate_window == 10.0 and cfg.storage == "memory"
        cfg.description = "updated"
        stream = await js.update_stream("PY_TYPED", cfg)
        assert stream.config.description == "updated" and stream.config.extra.keys() == cfg.extra.keys()
        cons = await js.create_consumer("PY_TYPED", ConsumerConfig(durable_name="T", ack_wait=3.5))
        assert cons.config.ack_wait == 3.5 and cons.config.ack_policy == "explicit"
        cons = await js.create_consumer("PY_TYPED", ConsumerConfig(durable_name="B", backoff=[1.0, 2.5],
                                                                    max_deliver=3))
        assert cons.config.backoff == [1.0, 2.5] and cons.info["config"]["backoff"] == [10**9, 2_500_000_000]
        with pytest.raises(tclnats_py.ErrInvalidArg):
            ConsumerConfig(ack_wait="soon").to_api()
        await js.delete_stream("PY_TYPED")
        await c.close()
    run(go())


# ------------------------------------------------------------------ publish
def test_publish_with_expectations(js_server):
    async def go():
        c, js = await connect(js_server)
        await js.create_stream("PY_PUB", subjects=["pub.*"], storage="memory", duplicate_window=60)
        a1 = await js.publish("pub.a", b"one", msg_id="m1", expected_stream="PY_PUB")
        assert (a1.stream, a1.seq, a1.duplicate, a1.domain) == ("PY_PUB", 1, False, None)
        dup = await js.publish("pub.a", b"one", msg_id="m1")
        assert dup.duplicate and dup.seq == 1
        a2 = await js.publish("pub.b", "two", {"K": "v"}, expected_last_seq=1, expected_last_msg_id="m1")
        assert a2.seq == 2
        assert (await js.publish("pub.a", b"3", expected_last_subject_seq=1)).seq == 3
        assert (await js.publish("pub.new", b"4", expected_last_subject_seq=0)).seq == 4
        with pytest.raises(tclnats_py.ErrWrongLastSequence) as e:
            await js.publish("pub.a", b"x", expected_last_subject_seq=1)
        assert e.value.details["err_code"] == 10071
        with pytest.raises(tclnats_py.ErrWrongLastSequence):
            await js.publish("pub.a", b"x", expected_last_seq=1)
        with pytest.raises(NatsError) as e:
            await js.publish("pub.a", b"x", expected_stream="OTHER")
        assert codes(e) == "ErrJSResponse" and e.value.details["err_code"] == 10060 and e.value.details["code"] == 400
        with pytest.raises(NatsError) as e:
            await js.publish("pub.a", b"x", expected_last_msg_id="nope")
        assert codes(e) == "ErrJSResponse" and e.value.details["err_code"] == 10070
        with pytest.raises(tclnats_py.ErrNoResponders):
            await js.publish("nobody.here", b"x")
        msg = await (await js.stream("PY_PUB")).get_msg(seq=2)
        assert msg.headers["K"] == "v" and msg.headers.get_all("K") == ["v"] and msg.data == b"two"
        ack = await js.publish_msg(tclnats_py.Msg("pub.c", b"m", headers={"H": ["1"]}), msg_id="m9")
        assert ack.seq == 5
        await js.delete_stream("PY_PUB")
        await c.close()
    run(go())


def test_publish_async_many_in_flight(js_server):
    async def go():
        c = await tclnats_py.connect(js_server.url)
        js = tclnats_py.aio.jetstream.new(c, publish_async_max_pending=64)
        await js.create_stream("PY_ASYNC", subjects=["async.*"], storage="memory")
        futs = [await js.publish_async("async.x", f"m{i}", msg_id=f"id{i}") for i in range(3000)]
        assert js.publish_async_pending > 0
        await js.publish_async_complete(20)
        assert js.publish_async_pending == 0
        seqs = sorted(f.result().seq for f in futs)
        assert seqs == list(range(1, 3001)), "every publish acknowledged once"
        bad = await js.publish_async("nobody.async", b"x")
        wrong = await js.publish_async("async.x", b"x", expected_stream="OTHER")
        await js.publish_async_complete(5)
        assert bad.exception().code == "ErrNoResponders" and wrong.exception().details["err_code"] == 10060
        assert (await js.stream_info("PY_ASYNC")).state.messages == 3000
        await js.delete_stream("PY_ASYNC")
        await c.close()
    run(go())


# ------------------------------------------------------------------ messages in streams
def test_get_and_delete_messages(js_server):
    async def go():
        c, js = await connect(js_server)
        s = await js.create_stream("PY_GET", subjects=["get.*"], storage="memory")
        d = await js.create_stream("PY_GETD", subjects=["getd.*"], storage="memory", allow_direct=True)
        for i, subj in enumerate(("a", "b", "a", "c")):
            await js.publish(f"get.{subj}", f"m{i + 1}", {"N": str(i + 1)})
            await js.publish(f"getd.{subj}", f"d{i + 1}")
        m = await js.get_msg("PY_GET", seq=2)
        assert (m.subject, m.data, m.seq, m.headers) == ("get.b", b"m2", 2, {"N": ["2"]})
        assert m.timestamp > 1_600_000_000_000
        assert (await js.get_msg("PY_GET", last_by_subj="get.a")).seq == 3
        assert (await js.get_msg("PY_GET", next_by_subj="get.a")).seq == 1
        assert (await js.get_msg("PY_GET", seq=2, next_by_subj="get.a")).seq == 3
        dm = await js.direct_get("PY_GETD", last_by_subj="getd.a")
        assert (dm.subject, dm.data, dm.seq, dm.stream) == ("getd.a", b"d3", 3, "PY_GETD")
        assert (await js.direct_get("PY_GETD", seq=4)).data == b"d4"
        assert (await d.get_msg(next_by_subj="getd.c")).seq == 4  # a Stream picks DIRECT.GET when allowed
        assert (await s.get_last_msg_for_subject("get.c")).data == b"m4"
        assert await s.delete_msg(2) and await s.secure_delete_msg(3)
        with pytest.raises(tclnats_py.ErrMsgNotFound) as e:
            await js.get_msg("PY_GET", seq=2)
        assert e.value.details["err_code"] == 10037
        with pytest.raises(tclnats_py.ErrMsgNotFound):
            await js.direct_get("PY_GETD", seq=99)
        with pytest.raises(tclnats_py.ErrMsgNotFound):
            await js.get_msg("PY_GET", last_by_subj="get.none")
        with pytest.raises(NatsError):
            await js.delete_msg("PY_GET", 2)  # already gone
        with pytest.raises(tclnats_py.ErrStreamNotFound):
            await js.get_msg("NOPE", seq=1)
        with pytest.raises(tclnats_py.ErrNoResponders):
            await js.direct_get("PY_GET", seq=1)  # no allow_direct: nobody answers
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await js.get_msg("PY_GET")
        await js.delete_stream("PY_GET")
        await js.delete_stream("PY_GETD")
        await c.close()
    run(go())


# ------------------------------------------------------------------ consumers
def test_consumer_management(js_server):
    async def go():
        c, js = await connect(js_server)
        s = await js.create_stream("PY_CONS", subjects=["cons.*"], storage="memory")
        dur = await s.create_consumer(durable_name="DUR", description="d1", filter_subject="cons.a")
        assert (dur.name, dur.config.durable_name, dur.config.filter_subject) == ("DUR", "DUR", "cons.a")
        named = await js.create_consumer("PY_CONS", name="NAMED", filter_subject="cons.*", inactive_threshold=30)
        assert named.config.inactive_threshold == 30.0
        eph = await js.create_consumer("PY_CONS", ack_policy="none", mem_storage=True, inactive_threshold=5)
        assert eph.name and eph.config.ack_policy == "none"
        multi = await js.create_consumer("PY_CONS", name="MULTI", filter_subjects=["cons.a", "cons.b"])
        assert multi.config.filter_subjects == ["cons.a", "cons.b"]
        by_seq = await s.create_consumer(name="SEQ", opt_start_seq=3)
        assert by_seq.config.deliver_policy == "by_start_sequence"
        upd = await js.update_consumer("PY_CONS", dur.config.replace(description="d2"))
        assert upd.config.description == "d2"
        upd = await s.create_or_update_consumer(name="NAMED", filter_subject="cons.*", max_ack_pending=7)
        assert upd.config.max_ack_pending == 7
        with pytest.raises(NatsError) as e:
            await js.create_consumer("PY_CONS", durable_name="DUR", description="other")  # exists, differs
        assert codes(e) == "ErrJSResponse" and e.value.details["err_code"] == 10148
        with pytest.raises(NatsError):
            await js.update_consumer("PY_CONS", name="NEVER")
        assert set(await s.consumer_names()) >= {"DUR", "NAMED", "MULTI", "SEQ", eph.name}
        assert {i.name for i in await s.consumers()} >= {"DUR", "NAMED"}
        info = await (await s.consumer("DUR")).refresh()
        assert info.name == "DUR" and info.stream_name == "PY_CONS" and info.config.description == "d2"
        assert await s.delete_consumer("NAMED")
        with pytest.raises(tclnats_py.ErrConsumerNotFound):
            await named.delete()
        with pytest.raises(tclnats_py.ErrConsumerNotFound) as e:
            await js.consumer("PY_CONS", "NAMED")
        assert e.value.details["err_code"] == 10014
        with pytest.raises(tclnats_py.ErrConsumerNotFound):
            await js.delete_consumer("PY_CONS", "NAMED")
        with pytest.raises(tclnats_py.ErrStreamNotFound):
            await js.create_consumer("NOPE", durable_name="X")
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await js.create_consumer("PY_CONS", durable_name="a.b")
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await js.create_consumer("PY_CONS", name="A", durable_name="B")
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await js.create_consumer("PY_CONS", ack_policy="sometimes")
        await js.delete_stream("PY_CONS")
        await c.close()
    run(go())


def test_fetch(js_server):
    async def go():
        c, js = await connect(js_server)
        s = await js.create_stream("PY_FETCH", subjects=["fetch.*"], storage="memory")
        cons = await s.create_consumer(durable_name="F")
        t0 = time.monotonic()
        assert await cons.fetch_no_wait(10) == []  # no_wait, nothing there: 404 at once
        assert time.monotonic() - t0 < 5  # not the 30 s default wait (room for a loaded machine)
        t0 = time.monotonic()
        assert await cons.fetch(10, max_wait=0.4) == []  # waits out max_wait (the server's 408)
        assert 0.3 < time.monotonic() - t0 < 10
        # fetch waits 30 s by default (nats.go's Fetch): a message published a second later comes
        fut = asyncio.ensure_future(cons.fetch(1))
        await asyncio.sleep(1.0)
        assert not fut.done()
        await js.publish("fetch.x", b"waited")
        waited = await asyncio.wait_for(fut, 5)
        assert [m.data for m in waited] == [b"waited"]
        await waited[0].ack_sync()
        from tclnats_py.aio.jetstream.consumer import DEFAULT_FETCH_WAIT
        assert DEFAULT_FETCH_WAIT == 30.0
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await cons.fetch(1, 1, expires=1)
        for i in range(5):
            await js.publish("fetch.x", f"m{i}")
        msgs = await cons.fetch(3)
        assert [m.data for m in msgs] == [b"m0", b"m1", b"m2"]
        meta = msgs[0].metadata
        # seq 1: "waited"
        assert (meta.stream, meta.consumer, meta.sequence.stream, meta.num_pending) == ("PY_FETCH", "F", 2, 4)
        for m in msgs:
            await m.ack()
        t0 = time.monotonic()
        msgs = await cons.fetch(10, expires=0.5)  # two there: wait out the expiry, get them
        el = time.monotonic() - t0
        assert [m.data for m in msgs] == [b"m3", b"m4"] and 0.4 < el < 10
        for m in msgs:
            await m.ack_sync()
        # a full batch returns at once
        for i in range(4):
            await js.publish("fetch.x", f"n{i}")
        t0 = time.monotonic()
        assert len(await cons.fetch(4, expires=5)) == 4 and time.monotonic() - t0 < 4  # before the 5 s expiry
        # a message arriving during the wait
        fut = asyncio.ensure_future(cons.fetch(1, expires=3, heartbeat=0.2))
        await asyncio.sleep(0.5)  # heartbeats keep it alive meanwhile
        await js.publish("fetch.x", b"late")
        got = await fut
        assert [m.data for m in got] == [b"late"]
        # max_bytes
        for _ in range(5):
            await js.publish("fetch.x", b"z" * 100)
        few = await cons.fetch_bytes(300, expires=1)
        assert 1 <= len(few) <= 3
        for m in few:
            await m.ack()
        # next(): one message or ErrTimeout
        rest = await cons.fetch(10, expires=0.3)
        for m in rest:
            await m.ack()
        with pytest.raises(tclnats_py.ErrTimeout):
            await cons.next(0.3)
        await js.publish("fetch.x", b"one")
        assert (await cons.next(1)).data == b"one"
        # errors: unknown stream/consumer are found out by a probe (nats-tcl jet_stream-4.5/4.6)
        with pytest.raises(tclnats_py.ErrConsumerNotFound) as e:
            await Consumer(js, "PY_FETCH", "BOGUS", cons.info).fetch(1, expires=0.5)
        assert str(e.value) == "consumer not found"
        with pytest.raises(tclnats_py.ErrStreamNotFound):
            await Consumer(js, "BOGUS", "BOGUS", cons.info).fetch(1)
        # the consumer deleted during a fetch
        doomed = await s.create_consumer(durable_name="DOOMED")
        await doomed.fetch_no_wait(100)  # take what is there
        fut = asyncio.ensure_future(doomed.fetch(5, expires=5))
        await asyncio.sleep(0.3)
        await doomed.delete()
        with pytest.raises(tclnats_py.aio.jetstream.ErrConsumerDeleted):
            await fut
        await js.delete_stream("PY_FETCH")
        await c.close()
    run(go())


def test_acks(js_server):
    async def go():
        c, js = await connect(js_server)
        s = await js.create_stream("PY_ACKS", subjects=["acks.*"], storage="memory")
        cons = await s.create_consumer(durable_name="A", ack_wait=1.0)
        for i in range(4):
            await js.publish("acks.x", f"j{i}")
        m0, m1, m2, m3 = await cons.fetch(4)
        await m0.ack_sync()
        await m1.nak()
        await m2.nak(delay=0.4)
        await m3.in_progress()
        await m3.in_progress()
        await m3.term("no use")
        for m in (m0, m1, m2, m3):
            assert m.acked
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await m0.ack()
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await m3.nak()
        again = await cons.fetch(5, expires=0.2)
        assert [m.data for m in again] == [b"j1"] and again[0].metadata.num_delivered == 2
        await again[0].ack()
        later = await cons.fetch(5, expires=0.6)  # the delayed nak comes back
        assert [m.data for m in later] == [b"j2"]
        await later[0].ack_sync()
        info = await cons.refresh()
        assert info.num_ack_pending == 0 and info.num_pending == 0
        with pytest.raises(tclnats_py.aio.jetstream.ErrNotJSMessage):
            await tclnats_py.aio.jetstream.JsMsg(js, tclnats_py.Msg("x", b"", "_INBOX.y")).ack()
        await js.delete_stream("PY_ACKS")
        await c.close()
    run(go())


def test_message_metadata_is_nats_go_shaped(js_server):
    """JsMsg.metadata: nats.go's MsgMetadata / nats-py's Msg.Metadata
    (sequence.stream, sequence.consumer, num_delivered, num_pending,
    timestamp a datetime, stream, consumer, domain), parsed when read."""
    import datetime
    from tclnats_py.aio.jetstream import JsMsg, MsgMetadata, SequencePair
    from tclnats_py.aio.jetstream.message import message_metadata

    async def go():
        c, js = await connect(js_server)
        s = await js.create_stream("PY_META", subjects=["meta.*"], storage="memory")
        for i in range(3):
            await js.publish("meta.x", f"m{i}")
        cons = await s.create_consumer(durable_name="MD", ack_policy="explicit")
        before = datetime.datetime.now(datetime.timezone.utc)
        msgs = await cons.fetch(2)
        m = msgs[1]
        assert m._md is None  # nothing parsed until asked
        md = m.metadata
        assert isinstance(md, MsgMetadata) and m.metadata is md
        assert md.sequence == SequencePair(stream=2, consumer=2)
        assert (md.sequence.stream, md.sequence.consumer, md.num_delivered, md.num_pending) == (2, 2, 1, 1)
        assert (md.stream, md.consumer, md.domain) == ("PY_META", "MD", None)
        assert isinstance(md.timestamp, datetime.datetime) and md.timestamp.tzinfo is datetime.timezone.utc
        assert abs((before - md.timestamp).total_seconds()) < 60
        await msgs[0].ack_sync()
        await m.nak()
        again = {x.metadata.sequence.stream: x for x in await cons.fetch(2)}
        assert again[2].metadata.num_delivered == 2 and again[3].metadata.num_delivered == 1
        assert again[2].metadata.sequence.consumer > 2  # a redelivery has a consumer sequence of its own
        for x in again.values():
            await x.ack_sync()
        # a message that is not JetStream's: ErrNotJSMessage when its metadata is read
        sub = await c.subscribe("plain.md")
        c.publish("plain.md", b"x", reply="not.an.ack")
        plain = JsMsg(js, await sub.next_msg(2))
        with pytest.raises(tclnats_py.ErrNotJSMessage):
            plain.metadata
        await js.delete_stream("PY_META")
        await c.close()
    run(go())
    # the new reply form: the domain ("_": the default one, "") and nanoseconds kept to the microsecond
    v2 = "$JS.ACK.hub.ACCHASH.S.C.3.10.7.1700000000123456789.4.rand"
    md = message_metadata(v2)
    assert (md.domain, md.stream, md.consumer, md.num_delivered, md.sequence, md.num_pending) == \
        ("hub", "S", "C", 3, SequencePair(10, 7), 4)
    assert abs(md.timestamp.timestamp() - 1700000000.123456789) < 2e-6 and md.timestamp.microsecond > 0
    assert message_metadata(v2.replace(".hub.", "._.")).domain == ""


def test_consume_and_messages(js_server):
    async def go():
        c, js = await connect(js_server)
        s = await js.create_stream("PY_FEED", subjects=["feed.*"], storage="memory")
        cons = await s.create_consumer(durable_name="C")
        got, errors = [], []

        async def handle(m):
            got.append(m.data)
            await m.ack()
        ctx = cons.consume(handle, max_messages=10, expires=2.0, error_cb=errors.append)
        for i in range(35):  # more than a buffer: it must refill
            await js.publish("feed.x", str(i))
        while len(got) < 35:
            await asyncio.sleep(0.01)
        await asyncio.sleep(1.2)  # idle: heartbeats (every second) keep it quiet
        assert got == [str(i).encode() for i in range(35)] and errors == []
        assert ctx.delivered == 35
        await ctx.stop()
        await ctx.closed
        # a failing callback is reported, consuming goes on
        boom = []

        def fragile(m):
            boom.append(m.data)
            raise ValueError("callback failed")
        ctx = cons.consume(fragile, max_messages=5, error_cb=errors.append)
        await js.publish("feed.x", b"a")
        await js.publish("feed.x", b"b")
        while len(boom) < 2:
            await asyncio.sleep(0.01)
        assert [type(e) for e in errors] == [ValueError, ValueError]
        await ctx.stop()
        # the consumer deleted: ErrConsumerDeleted to error_cb, consume ends
        errors.clear()
        doomed = await s.create_consumer(durable_name="DOOMED", deliver_policy="new")
        ctx = doomed.consume(lambda m: None, max_messages=5, expires=5.0, error_cb=errors.append)
        await asyncio.sleep(0.2)
        await doomed.delete()
        await asyncio.wait_for(ctx.closed, 3)
        assert [e.code for e in errors] == ["ErrConsumerDeleted"]
        # the iterator form
        it = cons.messages(max_messages=3, expires=1.0)
        for i in range(7):
            await js.publish("feed.y", f"it{i}")
        seen = []
        async for m in it:
            seen.append(m.data)
            await m.ack()
            if len(seen) == 7:
                break
        await it.stop()
        assert seen == [f"it{i}".encode() for i in range(7)]
        with pytest.raises(tclnats_py.ErrInvalidArg):
            cons.consume(lambda m: None, max_messages=5, max_bytes=100)
        await js.delete_stream("PY_FEED")
        await c.close()
    run(go())


def test_heartbeats_missed_are_reported(js_server):
    """Pulls nobody answers: ErrNoHeartbeat; pulls to a missing consumer:
    ErrNoResponders, retried at the heartbeat pace (not in a tight loop)."""
    async def go():
        c, js = await connect(js_server)
        s = await js.create_stream("PY_HB", subjects=["hb.*"], storage="memory")
        cons = await s.create_consumer(durable_name="H")
        # a "JetStream" that swallows pull requests
        fake = tclnats_py.aio.jetstream.new(c, api_prefix="fake")
        swallowed = await c.subscribe("fake.CONSUMER.MSG.NEXT.S.C")
        errors = []
        ctx = Consumer(fake, "S", "C", cons.info).consume(lambda m: None, max_messages=2, expires=1.0,
                                                          heartbeat=0.1, error_cb=errors.append)
        await asyncio.sleep(0.7)
        await ctx.stop()
        assert errors and {e.code for e in errors} == {"ErrNoHeartbeat"}
        assert swallowed.pending_msgs >= 2  # the pulls were re-issued after each silence
        errors.clear()
        ghost = Consumer(js, "PY_HB", "GHOST", cons.info)
        ctx = ghost.consume(lambda m: None, max_messages=2, expires=1.0, heartbeat=0.1, error_cb=errors.append)
        await asyncio.sleep(0.7)
        await ctx.stop()
        assert {e.code for e in errors} == {"ErrNoResponders"} and 2 <= len(errors) <= 6
        await js.delete_stream("PY_HB")
        await c.close()
    run(go())


# ------------------------------------------------------------------ ordered consumers
def test_ordered_consumer(js_server):
    async def go():
        c, js = await connect(js_server)
        s = await js.create_stream("PY_ORD", subjects=["ord.*"], storage="memory")
        for i in range(5):
            await js.publish("ord.a" if i % 2 else "ord.b", f"o{i}")
        oc = s.ordered_consumer(filter_subject="ord.a")
        got = [m async for m in _take(oc, 2)]
        assert [m.data for m in got] == [b"o1", b"o3"] and got[0].metadata.sequence.stream == 2
        await oc.stop()
        # deleting the consumer under it: missed heartbeats, recreated from the next sequence
        oc = await js.ordered_consumer("PY_ORD", idle_heartbeat=0.1).start()
        first = [m.data for m in await _collect(oc, 3)]
        assert first == [b"o0", b"o1", b"o2"]
        await js.delete_consumer("PY_ORD", oc.name)
        await js.publish("ord.c", b"o5")
        rest = [m.data for m in await _collect(oc, 3)]
        assert rest == [b"o3", b"o4", b"o5"] and oc.resets >= 1
        assert oc.last_error.code in ("ErrConsumerNotActive", "ErrConsumerSequenceMismatch")
        await oc.stop()
        # callback form, deliver policy last
        seen = []
        oc = js.ordered_consumer("PY_ORD", deliver_policy="last")
        await oc.start()
        oc.consume(lambda m: seen.append(m.data))
        await js.publish("ord.d", b"o6")
        while len(seen) < 2:
            await asyncio.sleep(0.01)
        assert seen == [b"o5", b"o6"]
        await oc.stop()
        with pytest.raises(tclnats_py.ErrTimeout):
            await (await js.ordered_consumer("PY_ORD", deliver_policy="new").start()).next(0.2)
        with pytest.raises(tclnats_py.ErrStreamNotFound):
            await js.ordered_consumer("NOPE").start()
        with pytest.raises(tclnats_py.ErrInvalidArg):
            js.ordered_consumer("PY_ORD", deliver_policy="sometimes")
        await js.delete_stream("PY_ORD")
        await c.close()
    run(go())


async def _take(oc, n):
    i = 0
    async for m in oc:
        yield m
        i += 1
        if i == n:
            return


async def _collect(oc, n):
    return [await oc.next(3) for _ in range(n)]


def test_no_jetstream(nats_server):
    """A server without JetStream: API calls are ErrJetStreamNotEnabled,
    publishes ErrNoResponders (JsAPI.md "Error handling")."""
    async def go():
        c, js = await connect(nats_server)
        for call in (js.account_info, lambda: js.stream_info("S"), lambda: js.create_stream("S", subjects=["s"]),
                     lambda: js.key_value("B"), lambda: js.stream_names()):
            with pytest.raises(NatsError) as e:
                await call()
            assert e.value.code in ("ErrJetStreamNotEnabled", "ErrBucketNotFound")
        with pytest.raises(tclnats_py.aio.jetstream.ErrJetStreamNotEnabled):
            await js.account_info()
        with pytest.raises(tclnats_py.ErrNoResponders):
            await js.publish("s.x", b"x")
        await c.close()
    run(go())


def test_fetch_when_the_connection_closes_or_is_lost(fresh_server):
    """CoreAPI.md "Requests Error Handling", sync fetch: closed by the user ->
    ErrConnectionClosed; lost for good -> ErrTimeout "Connection lost"."""
    async def go():
        c, js = await connect(fresh_server)
        s = await js.create_stream("PY_LOST", subjects=["lost.*"], storage="memory")
        cons = await s.create_consumer(durable_name="L")
        fut = asyncio.ensure_future(cons.fetch(5, expires=5))
        await asyncio.sleep(0.2)
        await c.close()
        with pytest.raises(tclnats_py.ErrConnectionClosed):
            await fut
        c = await tclnats_py.connect(fresh_server.url, max_reconnect_attempts=1, reconnect_time_wait=0,
                                     connect_timeout=0.3)
        cons = await c.jetstream().consumer("PY_LOST", "L")
        fut = asyncio.ensure_future(cons.fetch(5, expires=5))
        await asyncio.sleep(0.2)
        fresh_server.kill()  # (a clean shutdown would end the pull with 409 Server Shutdown)
        with pytest.raises(tclnats_py.ErrTimeout) as e:
            await asyncio.wait_for(fut, 4)
        assert str(e.value) == "Connection lost" and c.is_closed
    run(go())


# ------------------------------------------------------------------ prefixes
def test_api_prefix_import():
    """Another account reaches this JetStream through an imported API prefix (ADR-19)."""
    from tclnats_py.testing.server import NatsServer
    conf = """
jetstream: enabled
accounts: {
  JS: { jetstream: enabled, users: [ {user: u1, password: p1} ],
        exports [ { service: "$JS.API.>", response_type: stream }, { service: "$KV.>" } ] }
  U: { users: [ {user: u2, password: p2} ],
       imports [ { service: { subject: "$JS.API.>", account: JS }, to: "imported.>" },
                 { service: { subject: "$KV.>", account: JS }, to: "imported.$KV.>" } ] }
}
"""
    with NatsServer(jetstream=True, config=conf) as srv:
        async def go():
            owner = await tclnats_py.connect(f"nats://u1:p1@127.0.0.1:{srv.port}")
            js = owner.jetstream()
            await js.create_stream("FEED", subjects=["feed.*"], storage="memory")
            kv = await js.create_key_value("SHARED", storage="memory")
            await kv.put("k", b"owner")
            other = await tclnats_py.connect(f"nats://u2:p2@127.0.0.1:{srv.port}")
            with pytest.raises(NatsError) as e:
                await other.jetstream().stream_info("FEED")
            assert e.value.code == "ErrJetStreamNotEnabledForAccount" and e.value.details["err_code"] == 10039
            imported = tclnats_py.aio.jetstream.new(other, api_prefix="imported")
            assert imported.prefix == "imported"
            assert (await imported.stream_info("FEED")).config.name == "FEED"
            kv2 = await imported.key_value("SHARED")
            assert (await kv2.get("k")).value == b"owner"
            await kv2.put("k", b"importer")  # written as imported.$KV.SHARED.k
            assert (await kv.get("k")).value == b"importer"
            await other.close()
            await owner.close()
        run(go())


# ------------------------------------------------------------------ interop
def test_streams_interop_with_nats_py(js_server):
    import nats

    async def go():
        theirs = await nats.connect(js_server.url)
        tjs = theirs.jetstream()
        c, js = await connect(js_server)
        # written by tclnats_py, read by nats-py
        await js.create_stream("X_OURS", subjects=["xo.*"], storage="memory")
        for i in range(3):
            await js.publish("xo.a", f"ours{i}", {"Ours": str(i)}, msg_id=f"o{i}")
        psub = await tjs.pull_subscribe("xo.a", "NATSPY", stream="X_OURS")
        msgs = await psub.fetch(3, timeout=2)
        assert [m.data for m in msgs] == [b"ours0", b"ours1", b"ours2"] and msgs[1].headers["Ours"] == "1"
        for m in msgs:
            await m.ack()
        sinfo = await tjs.stream_info("X_OURS")
        assert sinfo.state.messages == 3
        # written by nats-py, read by tclnats_py (stream made by nats-py too)
        await tjs.add_stream(name="X_THEIRS", subjects=["xt.*"], storage="memory")
        for i in range(3):
            await tjs.publish("xt.b", f"theirs{i}".encode(), headers={"Theirs": str(i)})
        s = await js.stream("X_THEIRS")
        assert s.config.storage == "memory" and s.info.state.messages == 3
        cons = await s.create_consumer(durable_name="OURS")
        got = await cons.fetch(3, expires=1)
        assert [m.data for m in got] == [b"theirs0", b"theirs1", b"theirs2"]
        assert got[2].headers == {"Theirs": ["2"]} and got[2].metadata.consumer == "OURS"
        for m in got:
            await m.ack_sync()
        # a consumer made by nats-py, fetched by us; ours fetched by nats-py
        await tjs.add_consumer("X_THEIRS", durable_name="NPY", ack_policy="explicit")
        npy = await s.consumer("NPY")
        assert npy.config.ack_policy == "explicit" and len(await npy.fetch(3)) == 3
        ours = await tjs.pull_subscribe_bind("OURS", stream="X_THEIRS")
        await tjs.publish("xt.b", b"more")
        assert [m.data for m in await ours.fetch(1, timeout=2)] == [b"more"]
        await js.delete_stream("X_OURS")
        await js.delete_stream("X_THEIRS")
        await c.close()
        await theirs.close()
    run(go())


def tclsh():
    exe = shutil.which("tclnats-tclsh")
    return [exe] if exe else [sys.executable, "-m", "tclnats_py.tclface.tclsh"]


@pytest.mark.tcl
def test_cross_faces(js_server, tmp_path):
    """A stream written from Tcl is read by the Python face and by nats-py;
    a KV entry written by nats-py is read from Tcl."""
    import nats
    script = tmp_path / "writer.tcl"
    script.write_text(
        "package require nats\n"
        "set c [nats::connection new]\n$c configure -servers $env(NATS_URL)\n$c connect\n"
        "set js [$c jet_stream]\n"
        "$js add_stream X_FACES -subjects {xf.*} -storage memory\n"
        "foreach i {1 2 3} { $js publish xf.tcl \"from tcl $i\" }\n"
        "set kv [$js bind_kv_bucket X_KV]\n"
        "puts [$kv get_value shared]\n"
        "$c destroy\n")

    async def go():
        theirs = await nats.connect(js_server.url)
        tjs = theirs.jetstream()
        kv = await tjs.create_key_value(bucket="X_KV")
        await kv.put("shared", b"written by nats-py")
        env = dict(os.environ, NATS_URL=js_server.url)
        p = await asyncio.get_running_loop().run_in_executor(None, lambda: subprocess.run(
            tclsh() + [str(script)], capture_output=True, text=True, timeout=60, env=env))
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == "written by nats-py"
        ours = await tclnats_py.connect(js_server.url)
        cons = await ours.jetstream().create_consumer("X_FACES", durable_name="PY")
        assert [m.data for m in await cons.fetch(3, expires=1)] == [b"from tcl 1", b"from tcl 2", b"from tcl 3"]
        psub = await tjs.pull_subscribe("xf.tcl", "NATSPY", stream="X_FACES")
        msgs = await psub.fetch(3, timeout=2)
        assert [m.data for m in msgs] == [b"from tcl 1", b"from tcl 2", b"from tcl 3"]
        await tjs.delete_stream("X_FACES")
        await tjs.delete_key_value("X_KV")
        await ours.close()
        await theirs.close()
    run(go())


def test_sources_and_transforms(js_server):
    """Streams configured with sources, subject transforms and republish."""
    async def go():
        c, js = await connect(js_server)
        await js.create_stream("PY_SRC1", subjects=["src1.*"], storage="memory")
        await js.create_stream("PY_SRC2", subjects=["src2.*"], storage="memory")
        agg = await js.create_stream("PY_AGG", storage="memory", sources=[
            stream_source("PY_SRC1", subject_transforms=[subject_transform("src1.*", "agg.one.{{wildcard(1)}}")]),
            stream_source("PY_SRC2", filter_subject="src2.keep")])
        assert len(agg.config.sources) == 2
        mirror = await js.create_stream("PY_MIR", storage="memory", mirror=stream_source("PY_SRC1"),
                                        mirror_direct=True)
        assert mirror.config.mirror["name"] == "PY_SRC1"
        rp = await js.create_stream("PY_REPUB", subjects=["rp.*"], storage="memory",
                                    republish=tclnats_py.aio.jetstream.republish("rp.>", "out.>"))
        sub = await c.subscribe("out.>")
        await js.publish("rp.x", b"again")
        assert (await sub.next_msg(2)).data == b"again"
        assert rp.config.republish["dest"] == "out.>"
        await js.publish("src1.a", b"1")
        await js.publish("src2.keep", b"2")
        await js.publish("src2.drop", b"3")
        for _ in range(100):
            if (await js.stream_info("PY_AGG")).state.messages == 2 and \
                    (await js.stream_info("PY_MIR")).state.messages == 1:
                break
            await asyncio.sleep(0.05)
        got = await js.get_msg("PY_AGG", last_by_subj="agg.one.a")
        assert got.data == b"1"
        for name in ("PY_SRC1", "PY_SRC2", "PY_AGG", "PY_MIR", "PY_REPUB"):
            await js.delete_stream(name)
        await c.close()
    run(go())


def test_json_roundtrip_of_info_is_plain(js_server):
    """Replies are plain dicts underneath (json-serialisable as received)."""
    async def go():
        c, js = await connect(js_server)
        s = await js.create_stream("PY_JSON", subjects=["json.*"], storage="memory")
        assert json.loads(json.dumps(s.info))["config"]["name"] == "PY_JSON"
        await js.delete_stream("PY_JSON")
        await c.close()
    run(go())
