"""Atomic batch publish (ADR-50) on the asyncio face against nats-server
2.15.1: all of a batch or nothing, the server's errors and limits explained,
and a 2.10 server refusing it before anything is sent."""

import asyncio

import pytest

import tclnats_py
from tclnats_py import NatsError
from tclnats_py.aio.jetstream import BatchAck, BatchPublisher
from tclnats_py.testing.server import NatsServer


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def _stream(js, name, subjects, **kw):
    await js.create_stream(name, subjects=subjects, allow_atomic=True, allow_direct=True, **kw)
    return name


async def _count(js, name):
    return (await js.stream_info(name)).state.messages


@pytest.mark.feature("atomic_batch")
def test_publish_batch_stores_all_with_one_ack(js_server):
    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        await _stream(js, "BAT_ALL", ["bat.>"])
        try:
            await js.publish("bat.before", b"0")
            ack = await js.publish_batch([("bat.a", b"1"), ("bat.b", "2", {"X-Mine": "m"}), ("bat.c", b"3")])
            assert isinstance(ack, BatchAck)
            assert (ack.stream, ack.seq, ack.batch_size) == ("BAT_ALL", 4, 3)
            assert ack.batch_id and len(ack.batch_id) <= 64 and ack.domain is None
            m = await js.get_msg("BAT_ALL", 3)
            assert (m.subject, m.data, m.headers["X-Mine"]) == ("bat.b", b"2", "m")
            assert m.headers["Nats-Batch-Id"] == ack.batch_id and m.headers["Nats-Batch-Sequence"] == "2"
            last = await js.get_msg("BAT_ALL", 4)
            assert last.headers["Nats-Batch-Commit"] == "1"
            # one message is a batch too; every message waiting for its ack changes nothing
            one = await js.publish_batch([("bat.one", b"x")])
            assert (one.seq, one.batch_size) == (5, 1)
            every = await js.publish_batch([(f"bat.e{i}", b"e") for i in range(7)], ack_every=1, timeout=2)
            assert (every.seq, every.batch_size) == (12, 7)
            assert await _count(js, "BAT_ALL") == 12
        finally:
            await js.delete_stream("BAT_ALL")
            await nc.close()
    run(go())


@pytest.mark.feature("atomic_batch")
def test_batch_context_commits_at_the_end_and_discards_on_error(js_server):
    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        await _stream(js, "BAT_CTX", ["ctx.>"])
        try:
            async with js.batch() as b:
                assert isinstance(b, BatchPublisher)
                for i in range(5):
                    await b.add(f"ctx.{i}", str(i).encode())
                assert b.size == 5 and not b.is_closed
            assert b.is_closed and (b.ack.batch_size, b.ack.seq, b.ack.batch_id) == (5, 5, b.batch_id)
            with pytest.raises(RuntimeError):
                async with js.batch() as b2:
                    await b2.add("ctx.x", b"1")
                    await b2.add("ctx.y", b"2")   # sends ctx.x: staged, never committed
                    raise RuntimeError("the application failed mid-batch")
            assert b2.is_closed and b2.ack is None
            # an explicit commit with a last message
            b3 = js.batch()
            await b3.add("ctx.p", b"p")
            ack = await b3.commit("ctx.q", b"q", {"X-Last": "1"})
            assert (ack.batch_size, ack.seq) == (2, 7)
            with pytest.raises(NatsError) as e:
                await b3.add("ctx.r", b"r")
            assert e.value.code == "ErrInvalidArg" and "already" in str(e.value)
            with pytest.raises(NatsError) as e:
                await js.batch().commit()
            assert e.value.code == "ErrInvalidArg" and "empty" in str(e.value)
            async with js.batch() as empty:
                pass                               # nothing added: nothing to commit
            assert empty.is_closed and empty.ack is None
            assert await _count(js, "BAT_CTX") == 7
        finally:
            await js.delete_stream("BAT_CTX")
            await nc.close()
    run(go())


@pytest.mark.feature("atomic_batch")
def test_failed_expectation_in_the_middle_stores_nothing(js_server):
    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        await _stream(js, "BAT_EXP", ["exp.>"])
        try:
            await js.publish("exp.b", b"first")   # exp.b's last sequence is 1
            msgs = [("exp.a", b"1"), ("exp.b", b"2", {"Nats-Expected-Last-Subject-Sequence": "7"}),
                    ("exp.c", b"3")]
            with pytest.raises(NatsError) as e:
                await js.publish_batch(msgs)
            assert e.value.details["err_code"] == 10071
            assert await _count(js, "BAT_EXP") == 1
            # the same in the incremental form: the commit raises, nothing is stored
            with pytest.raises(NatsError) as e:
                async with js.batch() as b:
                    for m in msgs:
                        await b.add(*m)
            assert e.value.details["err_code"] == 10071
            assert await _count(js, "BAT_EXP") == 1
            # with the right expectation the same batch is stored whole
            msgs[1] = ("exp.b", b"2", {"Nats-Expected-Last-Subject-Sequence": "1"})
            ack = await js.publish_batch(msgs)
            assert (ack.seq, ack.batch_size) == (4, 3) and await _count(js, "BAT_EXP") == 4
        finally:
            await js.delete_stream("BAT_EXP")
            await nc.close()
    run(go())


@pytest.mark.feature("atomic_batch")
def test_batch_refusals_explained(js_server):
    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        await js.create_stream("BAT_OFF", subjects=["off.>"])
        await _stream(js, "BAT_ON", ["on.>"])
        try:
            with pytest.raises(NatsError) as e:
                await js.publish_batch([("off.a", b"1"), ("off.b", b"2")])
            assert e.value.code == "ErrJSResponse" and e.value.details["err_code"] == 10174
            assert "allow_atomic" in str(e.value)
            assert await _count(js, "BAT_OFF") == 0
            with pytest.raises(NatsError) as e:
                await js.publish_batch([("nostream.a", b"1"), ("nostream.b", b"2")])
            assert e.value.code == "ErrNoResponders"
            # a duplicate message id refuses the whole batch
            await js.publish("on.a", b"0", msg_id="dup")
            with pytest.raises(NatsError) as e:
                await js.publish_batch([("on.b", b"1"), ("on.c", b"2", {"Nats-Msg-Id": "dup"})])
            assert e.value.details["err_code"] == 10201 and "Nats-Msg-Id" in str(e.value)
            assert await _count(js, "BAT_ON") == 1
        finally:
            await js.delete_stream("BAT_OFF")
            await js.delete_stream("BAT_ON")
            await nc.close()
    run(go())


@pytest.mark.feature("atomic_batch")
def test_bad_batches_refused_before_sending(js_server):
    async def go():
        nc = await tclnats_py.connect(js_server.url)
        js = nc.jetstream()
        await _stream(js, "BAT_BAD", ["bad.>"])
        try:
            bad = [
                ([], "ErrInvalidArg"), ("bad.a", "ErrInvalidArg"), ([("bad.a",)], "ErrInvalidArg"),
                ([("bad.a", b"1"), ("bad..b", b"2")], "ErrBadSubject"),
                ([("bad.a", b"1"), ("bad.b", 5)], "ErrInvalidArg"),
                ([("bad.a", b"1", {"Nats-Batch-Id": "mine"})], "ErrInvalidArg"),
                ([("bad.a", b"1", {"Nats-Expected-Last-Msg-Id": "x"})], "ErrInvalidArg"),
                ([("bad.a", b"1"), ("bad.b", b"2", {"Nats-Expected-Last-Sequence": "0"})], "ErrInvalidArg"),
            ]
            for msgs, code in bad:
                with pytest.raises(NatsError) as e:
                    await js.publish_batch(msgs)
                assert e.value.code == code, (msgs, e.value)
            with pytest.raises(NatsError) as e:
                await js.publish_batch([("bad.a", b"1")], ack_every=-1)
            assert e.value.code == "ErrInvalidArg"
            # only the first message may expect the stream's last sequence
            ack = await js.publish_batch([("bad.a", b"1", {"Nats-Expected-Last-Sequence": "0"}), ("bad.b", b"2")])
            assert ack.batch_size == 2
            assert await _count(js, "BAT_BAD") == 2
        finally:
            await js.delete_stream("BAT_BAD")
            await nc.close()
    run(go())


# nats-server's batch limits, made small to meet them
LIMITS = 'jetstream { limits { batch { max_msgs: 5, max_inflight_per_stream: 2, timeout: "1s" } } }\n'


@pytest.mark.feature("atomic_batch")
def test_server_batch_limits_explained():
    async def go(url):
        nc = await tclnats_py.connect(url)
        js = nc.jetstream()
        await _stream(js, "BAT_LIM", ["lim.>"])
        try:
            with pytest.raises(NatsError) as e:
                await js.publish_batch([(f"lim.{i}", b"x") for i in range(6)])
            d = e.value.details
            assert (d["err_code"], d["limit"]) == (10199, 5)
            assert "at most 5 messages" in str(e.value) and "max_msgs" in str(e.value)
            # ack_every=1 meets the limit at the 6th message, before the commit
            b = js.batch(ack_every=1)
            for i in range(6):
                await b.add(f"lim.{i}", b"x")
            with pytest.raises(NatsError) as e:
                await b.add("lim.6", b"x")
            assert e.value.details["err_code"] == 10199 and b.is_closed
            # two batches in flight on the stream at most
            open_batches = [js.batch(), js.batch()]
            for ob in open_batches:
                await ob.add("lim.a", b"1")
                await ob.add("lim.b", b"2")
            with pytest.raises(NatsError) as e:
                await js.publish_batch([("lim.c", b"1"), ("lim.d", b"2")])
            assert e.value.details["err_code"] == 10210 and "max_inflight_per_stream" in str(e.value)
            # idle past the server's batch timeout: abandoned, the commit says why
            await asyncio.sleep(2.5)
            with pytest.raises(NatsError) as e:
                await open_batches[0].commit()
            assert e.value.details["err_code"] == 10176 and "idle" in str(e.value)
            assert await _count(js, "BAT_LIM") == 0
            ack = await js.publish_batch([(f"lim.{i}", b"x") for i in range(5)])
            assert ack.batch_size == 5 and await _count(js, "BAT_LIM") == 5
        finally:
            await js.delete_stream("BAT_LIM")
            await nc.close()
    with NatsServer(jetstream=True, config=LIMITS) as srv:
        run(go(srv.url))


@pytest.mark.feature("atomic_batch", "api_level")
def test_batch_on_a_server_too_old(old_js_server):
    async def go():
        nc = await tclnats_py.connect(old_js_server.url)
        js = nc.jetstream()
        await js.create_stream("BAT_OLD", subjects=["old.>"])
        try:
            with pytest.raises(NatsError) as e:
                await js.publish_batch([("old.a", b"1"), ("old.b", b"2")])
            assert e.value.code == "ErrServerTooOld" and "2.12" in str(e.value)
            b = js.batch()
            with pytest.raises(NatsError) as e:
                await b.add("old.a", b"1")
            assert e.value.code == "ErrServerTooOld"
            assert await _count(js, "BAT_OLD") == 0
        finally:
            await js.delete_stream("BAT_OLD")
            await nc.close()
    run(go())
