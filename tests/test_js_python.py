"""JetStream and KV on the Python face, and across faces (Tcl, nats-py)."""

import asyncio
import os
import shutil
import subprocess
import sys

import pytest

import tclnats_py
from tclnats_py import NatsError


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_streams_publish_and_errors(js_server):
    async def go():
        c = await tclnats_py.connect(js_server.url)
        js = c.jetstream()
        await js.create_stream("PY_ORDERS", subjects=["pyo.*"], storage="memory", max_age=60)
        info = await js.stream_info("PY_ORDERS")
        assert info.config.max_age == 60 * 10**9 and info.config.name == "PY_ORDERS"
        assert "PY_ORDERS" in await js.stream_names()
        a1 = await js.publish("pyo.new", b"one", msg_id="m1", expected_stream="PY_ORDERS")
        dup = await js.publish("pyo.new", b"one", msg_id="m1")
        assert a1.seq == 1 and dup.get("duplicate") is True
        with pytest.raises(tclnats_py.ErrWrongLastSequence):
            await js.publish("pyo.new", b"x", expected_last_subject_seq=99)
        with pytest.raises(NatsError) as e:
            await js.publish("pyo.new", b"x", expected_stream="OTHER")
        assert e.value.code == "ErrJSResponse" and e.value.details["err_code"] == 10060
        with pytest.raises(tclnats_py.ErrNoResponders):
            await js.publish("nobody.here", b"x")
        with pytest.raises(tclnats_py.ErrStreamNotFound):
            await js.stream_info("NOPE")
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await js.create_stream("bad.name", subjects=["x"])
        futs = [js.publish_async("pyo.bulk", str(i)) for i in range(500)]
        await js.publish_async_complete(10)
        seqs = sorted(f.result().seq for f in futs)
        assert len(set(seqs)) == 500
        assert await js.purge_stream("PY_ORDERS", filter="pyo.bulk") == 500
        await js.delete_stream("PY_ORDERS")
        await c.close()
    run(go())


def test_consumer_fetch_acks_and_ordered(js_server):
    async def go():
        c = await tclnats_py.connect(js_server.url)
        js = c.jetstream()
        await js.create_stream("PY_WORK", subjects=["pyw.*"], storage="memory")
        for i in range(5):
            await js.publish("pyw.job", f"job{i}")
        cons = await js.create_consumer("PY_WORK", durable_name="W", ack_wait=5)
        msgs = await cons.fetch(3)
        assert [m.data for m in msgs] == [b"job0", b"job1", b"job2"]
        assert msgs[0].metadata["stream"] == "PY_WORK" and msgs[0].metadata["num_pending"] == 4
        await msgs[0].ack_sync()
        await msgs[1].ack()
        await msgs[2].nak()
        rest = await cons.fetch(10, expires=0.5)
        assert sorted(m.data for m in rest) == [b"job2", b"job3", b"job4"]
        for m in rest:
            await m.term()
        assert await cons.fetch(5) == []
        info = await cons.refresh()
        assert info.config.durable_name == "W"
        with pytest.raises(tclnats_py.ErrConsumerNotFound):
            await js.consumer("PY_WORK", "NOPE")
        got = []
        async for m in js.ordered_consumer("PY_WORK", filter_subject="pyw.job"):
            got.append(m.data)
            if len(got) == 5:
                break
        assert got == [b"job0", b"job1", b"job2", b"job3", b"job4"]
        stream = await js.stream("PY_WORK")
        m = await stream.get_msg(seq=2)
        assert m.data == b"job1"
        await stream.delete_msg(2)
        with pytest.raises(tclnats_py.ErrMsgNotFound):
            await js.get_msg("PY_WORK", seq=2)
        await js.delete_stream("PY_WORK")
        await c.close()
    run(go())


def test_key_value(js_server):
    async def go():
        c = await tclnats_py.connect(js_server.url)
        js = c.jetstream()
        kv = await js.create_key_value("PY_KV", history=5, storage="memory")
        r1 = await kv.put("a.b", b"1")
        r2 = await kv.put("a.b", "2")
        e = await kv.get("a.b")
        assert (e.value, e.revision, e.operation) == (b"2", r2, "PUT")
        assert (await kv.get("a.b", revision=r1)).value == b"1"
        with pytest.raises(tclnats_py.ErrWrongLastSequence):
            await kv.create("a.b", b"x")
        r3 = await kv.update("a.b", b"3", last=r2)
        await kv.delete("a.b")
        with pytest.raises(tclnats_py.ErrKeyNotFound):
            await kv.get("a.b")
        r4 = await kv.create("a.b", b"again")
        assert r4 > r3
        await kv.put("a.c", b"c")
        assert sorted(await kv.keys()) == ["a.b", "a.c"]
        assert [h.value for h in await kv.history("a.b")][-1] == b"again"
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await kv.put(".bad", b"")
        seen = []

        async def watcher():
            async for entry in kv.watch("a.*"):
                seen.append(entry)
                if len(seen) == 4:
                    return
        t = asyncio.get_running_loop().create_task(watcher())
        while len(seen) < 3:
            await asyncio.sleep(0.02)
        await kv.put("a.c", b"new")
        await asyncio.wait_for(t, 5)
        assert seen[2] is None and seen[3].value == b"new"
        with pytest.raises(tclnats_py.ErrBucketNotFound):
            await js.key_value("NOPE")
        assert "PY_KV" in await js.key_value_buckets()
        await js.delete_key_value("PY_KV")
        await c.close()
    run(go())


def tclsh():
    exe = shutil.which("tclnats-tclsh")
    return [exe] if exe else [sys.executable, "-m", "tclnats_py.tclsh"]


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


def test_typed_configs_keep_unknown_fields(js_server):
    from tclnats_py.jetstream import ConsumerConfig, StreamConfig

    async def go():
        c = await tclnats_py.connect(js_server.url)
        js = c.jetstream()
        stream = await js.create_stream("PY_TYPED", StreamConfig(subjects=["typed.*"], storage="memory",
                                                                  max_age=120.0, duplicate_window=10.0))
        cfg = stream.config
        assert cfg.max_age == 120.0 and cfg.duplicate_window == 10.0 and cfg.storage == "memory"
        assert cfg.extra  # fields this client does not name (e.g. consumer_limits) are kept
        cfg.description = "updated"
        stream = await js.update_stream("PY_TYPED", cfg)
        assert stream.config.description == "updated" and stream.config.extra.keys() == cfg.extra.keys()
        cons = await js.create_consumer("PY_TYPED", ConsumerConfig(durable_name="T", ack_wait=3.5))
        assert cons.config.ack_wait == 3.5 and cons.config.ack_policy == "explicit"
        await js.delete_stream("PY_TYPED")
        await c.close()
    run(go())


def test_consume_refills_and_api_prefix_import():
    from tclnats_py.server import NatsServer
    conf = """
jetstream: enabled
accounts: {
  JS: { jetstream: enabled, users: [ {user: u1, password: p1} ],
        exports [ { service: "$JS.API.>", response_type: stream } ] }
  U: { users: [ {user: u2, password: p2} ],
       imports [ { service: { subject: "$JS.API.>", account: JS }, to: "imported.>" } ] }
}
"""
    with NatsServer(jetstream=True, config=conf) as srv:
        async def go():
            owner = await tclnats_py.connect(f"nats://u1:p1@127.0.0.1:{srv.port}")
            js = owner.jetstream()
            await js.create_stream("FEED", subjects=["feed.*"], storage="memory")
            cons = await js.create_consumer("FEED", durable_name="C")
            got = []
            ctx = cons.consume(lambda m: got.append(m.data), batch=10, expires=2.0)
            for i in range(35):  # more than a batch: the consumer must refill
                await js.publish("feed.x", str(i))
            while len(got) < 35:
                await asyncio.sleep(0.02)
            await ctx.stop()
            assert got == [str(i).encode() for i in range(35)]
            # another account reaches this JetStream through an imported API prefix
            other = await tclnats_py.connect(f"nats://u2:p2@127.0.0.1:{srv.port}")
            with pytest.raises(NatsError) as e:
                await other.jetstream().stream_info("FEED")
            assert e.value.code in ("ErrJetStreamNotEnabledForAccount", "ErrJetStreamNotEnabled")
            imported = other.jetstream(api_prefix="imported")
            assert (await imported.stream_info("FEED")).config.name == "FEED"
            await other.close()
            await owner.close()
        run(go())
