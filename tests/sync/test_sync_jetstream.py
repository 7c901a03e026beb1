"""JetStream on the blocking face (tclnats_py.sync.jetstream) against a real
nats-server: streams, publish (acks, errors), publish_async with many
futures, consumers, fetch/next, the ack family, consume on a thread, the
messages iterator and the ordered consumer."""

import asyncio
import concurrent.futures
import logging
import threading
import time

import pytest

import tclnats_py
import tclnats_py.sync
from tclnats_py.aio.jetstream import PubAck as AioPubAck
from tclnats_py.aio.jetstream import StreamInfo as AioStreamInfo
from tclnats_py.sync.jetstream import ConsumerInfo, JsMsg, PubAck, StreamConfig, StreamInfo, new

from tests.sync.js_helpers import js_client


def fill(js, subject, n, prefix=b"m"):
    for i in range(n):
        js.publish(subject, prefix + b"%d" % i)


def test_values_are_the_asyncio_faces(js_server):
    assert PubAck is AioPubAck and StreamInfo is AioStreamInfo
    with js_client(js_server) as (nc, js):
        js.create_stream("SV", subjects=["sv.*"], storage="memory")
        ack = js.publish("sv.a", b"x")
        assert type(ack) is AioPubAck and (ack.stream, ack.seq, ack.duplicate) == ("SV", 1, False)


def test_streams(js_server):
    with js_client(js_server) as (nc, js):
        s = js.create_stream("ST", subjects=["st.*"], storage="memory", max_age=60)
        assert isinstance(s.info, StreamInfo) and s.config.max_age == 60 and s.config.subjects == ["st.*"]
        fill(js, "st.a", 3)
        assert js.stream_info("ST").state.messages == 3
        s.update(max_msgs=100)
        assert s.refresh().config.max_msgs == 100 and s.config.subjects == ["st.*"]
        js.update_stream(StreamConfig(name="ST", subjects=["st.*", "st2.*"], storage="memory"))
        assert js.stream("ST").config.subjects == ["st.*", "st2.*"]
        js.create_or_update_stream("ST2", subjects=["other.*"], storage="memory")
        assert set(js.stream_names()) >= {"ST", "ST2"} and js.stream_names("other.x") == ["ST2"]
        assert {i.config.name for i in js.streams()} >= {"ST", "ST2"}
        assert s.purge() == 3 and js.stream_info("ST").state.messages == 0
        assert js.delete_stream("ST2") is True
        with pytest.raises(tclnats_py.ErrStreamNotFound):
            js.stream_info("ST2")
        with pytest.raises(tclnats_py.ErrStreamNotFound):
            js.delete_stream("ST2")


def test_messages_by_sequence_and_subject(js_server):
    with js_client(js_server) as (nc, js):
        s = js.create_stream("SM", subjects=["sm.*"], storage="memory")
        js.publish("sm.a", b"1", headers={"K": "v"})
        js.publish("sm.b", b"2")
        m = js.get_msg("SM", 1)
        assert (m.subject, m.data, m.seq, m.headers["K"]) == ("sm.a", b"1", 1, "v")
        assert s.get_last_msg_for_subject("sm.b").data == b"2"
        assert s.delete_msg(1) is True
        with pytest.raises(tclnats_py.ErrMsgNotFound):
            js.get_msg("SM", 1)


def test_publish_acks_and_errors(js_server):
    with js_client(js_server) as (nc, js):
        js.create_stream("SP", subjects=["sp.*"], storage="memory", duplicate_window=60)
        a = js.publish("sp.a", b"1", msg_id="id-1")
        assert (a.seq, a.duplicate) == (1, False)
        assert js.publish("sp.a", b"1", msg_id="id-1").duplicate is True
        assert js.publish("sp.a", b"2", expected_stream="SP", expected_last_seq=1).seq == 2
        with pytest.raises(tclnats_py.ErrWrongLastSequence):
            js.publish("sp.a", b"3", expected_last_seq=1)
        with pytest.raises(tclnats_py.ErrWrongLastSequence):
            js.publish("sp.b", b"3", expected_last_subject_seq=5)
        with pytest.raises(tclnats_py.ErrNoResponders):
            js.publish("nostream.a", b"x")
        with pytest.raises(tclnats_py.ErrBadSubject):
            js.publish("bad subject", b"x", msg_id="m")
        with pytest.raises(tclnats_py.ErrInvalidArg):
            js.publish("sp.a", b"x", msg_id="")
        assert js.stream_info("SP").state.messages == 2


def test_publish_async_many_futures(js_server):
    with js_client(js_server, publish_async_max_pending=256) as (nc, js):
        js.create_stream("SA", subjects=["sa.*"], storage="memory")
        futs = [js.publish_async("sa.x", b"%d" % i) for i in range(3000)]
        assert all(isinstance(f, concurrent.futures.Future) for f in futs)
        js.publish_async_complete(timeout=20)
        assert js.publish_async_pending == 0
        seqs = [f.result(0).seq for f in futs]
        assert sorted(seqs) == list(range(1, 3001))
        assert js.stream_info("SA").state.messages == 3000
        # a future of a publish no stream takes fails with the publish's error
        bad = js.publish_async("nostream.x", b"x")
        with pytest.raises(tclnats_py.ErrNoResponders):
            bad.result(5)
        with pytest.raises(tclnats_py.ErrBadSubject):
            js.publish_async("bad subject", b"x")


def test_publish_async_from_threads(js_server):
    with js_client(js_server) as (nc, js):
        js.create_stream("SAT", subjects=["sat.*"], storage="memory")
        out = []

        def worker(k):
            out.extend(js.publish_async(f"sat.{k}", b"x") for _ in range(500))
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        js.publish_async_complete(timeout=20)
        assert sorted(f.result(0).seq for f in out) == list(range(1, 2001))


def test_publish_async_complete_times_out(js_server):
    with js_client(js_server) as (nc, js):
        # an ack that never comes: a responder that does not answer keeps the publish in flight
        sub = nc.subscribe("silent.x")
        nc.flush()
        fut = js.publish_async("silent.x", b"x", timeout=1.0)
        with pytest.raises(tclnats_py.ErrTimeout):
            js.publish_async_complete(timeout=0.2)
        with pytest.raises(tclnats_py.ErrTimeout):
            fut.result(5)  # its own deadline
        js.publish_async_complete(timeout=1)
        sub.unsubscribe()


def test_publish_async_stalls_and_fails_when_the_client_closes(js_server):
    nc = tclnats_py.sync.connect(js_server.url)
    js = new(nc, publish_async_max_pending=1)
    sub = nc.subscribe("silent.y")  # takes the publishes, never acks
    nc.flush()
    first = js.publish_async("silent.y", b"1", timeout=30)
    t = time.monotonic()
    with pytest.raises(tclnats_py.ErrTooManyStalledMsgs):
        js.publish_async("silent.y", b"2", wait_stall=0.2)
    assert 0.15 < time.monotonic() - t < 5
    assert js.publish_async_pending == 1
    nc.close()
    with pytest.raises(tclnats_py.ErrConnectionClosed):
        first.result(5)
    assert js.publish_async_pending == 0 and sub is not None


def test_the_ack_thread_ends_when_idle_and_comes_back(js_server, monkeypatch):
    from tclnats_py.sync.jetstream import publish as pub
    monkeypatch.setattr(pub, "IDLE", 0.3)
    with js_client(js_server) as (nc, js):
        js.create_stream("SAI", subjects=["sai.*"], storage="memory")
        assert js.publish_async("sai.a", b"1").result(5).seq == 1
        first = js._ap.thread
        first.join(5)
        assert not first.is_alive() and js._ap.retired
        assert js.publish_async("sai.a", b"2").result(5).seq == 2  # a new publisher
        assert js._ap.thread is not first and js._ap.thread.is_alive()
        js.close()
        assert js._ap is None


def test_consumers(js_server):
    with js_client(js_server) as (nc, js):
        s = js.create_stream("SC", subjects=["sc.*"], storage="memory")
        c = s.create_consumer(durable_name="C1", ack_wait=10, filter_subject="sc.a")
        assert isinstance(c.info, ConsumerInfo) and c.config.ack_wait == 10 and c.config.ack_policy == "explicit"
        c2 = js.update_consumer("SC", durable_name="C1", ack_wait=20, filter_subject="sc.a")
        assert c2.config.ack_wait == 20
        js.create_or_update_consumer("SC", durable_name="C2")
        assert sorted(s.consumer_names()) == ["C1", "C2"]
        assert {i.name for i in js.consumers("SC")} == {"C1", "C2"}
        assert js.consumer("SC", "C1").name == "C1"
        assert c.delete() is True
        with pytest.raises(tclnats_py.ErrConsumerNotFound):
            js.consumer_info("SC", "C1")
        with pytest.raises(tclnats_py.ErrConsumerNotFound):
            s.consumer("C1")


def test_fetch_next_and_acks(js_server):
    with js_client(js_server) as (nc, js):
        s = js.create_stream("SF", subjects=["sf.*"], storage="memory")
        fill(js, "sf.a", 5)
        c = s.create_consumer(durable_name="F", ack_wait=30)
        msgs = c.fetch(3, max_wait=1)
        assert [m.data for m in msgs] == [b"m0", b"m1", b"m2"] and all(isinstance(m, JsMsg) for m in msgs)
        md = msgs[0].metadata
        assert (md.stream, md.consumer, md.sequence.stream, md.num_delivered, md.num_pending) == ("SF", "F", 1, 1, 4)
        msgs[0].ack()
        msgs[1].ack_sync()
        with pytest.raises(tclnats_py.ErrInvalidArg):
            msgs[1].ack()  # acknowledged already
        msgs[2].in_progress()
        msgs[2].nak()  # redelivered
        rest = c.fetch(10, max_wait=0.5)  # short: three left, m2 among them again
        assert sorted(m.data for m in rest) == [b"m2", b"m3", b"m4"]
        for m in rest:
            if m.data == b"m2":
                assert m.metadata.num_delivered == 2
                m.term("done with it")
                assert m.acked
            else:
                m.ack()
        assert c.fetch_no_wait(5) == []
        with pytest.raises(tclnats_py.ErrTimeout):
            c.next(timeout=0.3)
        js.publish("sf.a", b"one more")
        one = c.next(timeout=2)
        assert one.data == b"one more" and one.metadata.sequence.stream == 6
        one.ack_sync()
        info = c.refresh()
        assert info.num_ack_pending == 0 and info.delivered.stream_seq == 6


def test_fetch_of_a_deleted_consumer(js_server):
    with js_client(js_server) as (nc, js):
        s = js.create_stream("SD", subjects=["sd.*"], storage="memory")
        c = s.create_consumer(durable_name="GONE")
        js.delete_consumer("SD", "GONE")
        with pytest.raises((tclnats_py.ErrConsumerNotFound, tclnats_py.ErrConsumerDeleted)):
            c.fetch(1, max_wait=0.5)


def test_consume_in_a_thread(js_server):
    with js_client(js_server) as (nc, js):
        s = js.create_stream("SCT", subjects=["sct.*"], storage="memory")
        fill(js, "sct.a", 200)
        c = s.create_consumer(durable_name="CT")
        got, errors, threads = [], [], set()
        done = threading.Event()

        def cb(m):
            threads.add(threading.current_thread().name)
            got.append(m.data)
            m.ack()
            if m.data == b"m7":
                raise ValueError("the callback failed")
            if len(got) == 210:
                done.set()
        ctx = c.consume(cb, max_messages=50, error_cb=errors.append)
        fill(js, "sct.a", 10, prefix=b"late")
        assert done.wait(10)
        ctx.stop(timeout=5)
        assert ctx.closed.is_set()
        assert got[:200] == [b"m%d" % i for i in range(200)] and len(got) == 210
        assert threading.current_thread().name not in threads
        assert [type(e) for e in errors] == [ValueError]
        assert c.refresh().num_ack_pending == 0
        fill(js, "sct.a", 1, prefix=b"after")
        time.sleep(0.3)
        assert len(got) == 210  # stopped: no more callbacks


def test_consume_reports_a_deleted_consumer(js_server):
    with js_client(js_server) as (nc, js):
        s = js.create_stream("SCD", subjects=["scd.*"], storage="memory")
        c = s.create_consumer(durable_name="CD")
        errors = []
        ctx = c.consume(lambda m: m.ack(), error_cb=errors.append, expires=1)
        time.sleep(0.2)
        c.delete()
        assert ctx.closed.wait(10)
        assert any(getattr(e, "code", None) == "ErrConsumerDeleted" for e in errors), errors
        ctx.stop()


def test_consume_errors_go_to_the_log_without_error_cb(js_server, caplog):
    with js_client(js_server) as (nc, js):
        s = js.create_stream("SCL", subjects=["scl.*"], storage="memory")
        fill(js, "scl.a", 1)
        c = s.create_consumer(durable_name="CL")
        seen = threading.Event()

        def cb(m):
            seen.set()
            raise RuntimeError("boom in cb")
        with caplog.at_level(logging.ERROR, logger="tclnats_py"):
            ctx = c.consume(cb)
            assert seen.wait(5)
            ctx.stop(timeout=5)
        assert "boom in cb" in caplog.text


def test_messages_iterator(js_server):
    with js_client(js_server) as (nc, js):
        s = js.create_stream("SI", subjects=["si.*"], storage="memory")
        fill(js, "si.a", 20)
        c = s.create_consumer(durable_name="IT")
        out = []
        with c.messages(max_messages=8) as it:
            for m in it:
                out.append(m.data)
                m.ack()
                if len(out) == 20:
                    break
        assert out == [b"m%d" % i for i in range(20)]
        assert list(it) == []  # stopped


def test_ordered_consumer(js_server):
    with js_client(js_server) as (nc, js):
        js.create_stream("SO", subjects=["so.*"], storage="memory")
        fill(js, "so.a", 5)
        fill(js, "so.b", 5, prefix=b"b")
        with js.ordered_consumer("SO", filter_subject="so.b") as oc:
            assert [oc.next(2).data for _ in range(5)] == [b"b%d" % i for i in range(5)]
            with pytest.raises(tclnats_py.ErrTimeout):
                oc.next(0.3)
            js.publish("so.b", b"later")
            assert oc.next(2).data == b"later" and oc.stream_seq == 11
        it = iter(js.ordered_consumer("SO"))
        assert [next(it).data for _ in range(3)] == [b"m0", b"m1", b"m2"]
        it.stop()
        assert list(it) == []
        with pytest.raises(tclnats_py.ErrStreamNotFound):
            js.ordered_consumer("NOPE").start()


def test_ordered_consumer_repairs_itself(js_server):
    """Its consumer deleted under it: missed heartbeats, recreated from the next sequence."""
    with js_client(js_server) as (nc, js):
        js.create_stream("SOR", subjects=["sor.*"], storage="memory")
        fill(js, "sor.a", 5)
        with js.ordered_consumer("SOR", idle_heartbeat=0.1).start() as oc:
            assert [oc.next(3).data for _ in range(3)] == [b"m0", b"m1", b"m2"]
            js.delete_consumer("SOR", oc.name)
            js.publish("sor.b", b"m5")
            assert [oc.next(3).data for _ in range(3)] == [b"m3", b"m4", b"m5"]
            assert oc.resets >= 1
            assert oc.last_error.code in ("ErrConsumerNotActive", "ErrConsumerSequenceMismatch")
        with pytest.raises(tclnats_py.ErrInvalidArg):
            js.ordered_consumer("SOR", deliver_policy="sometimes")
        with pytest.raises(tclnats_py.ErrBadSubject):
            js.ordered_consumer("SOR", filter_subject="bad subject")


def test_ordered_consumer_consume_thread(js_server):
    with js_client(js_server) as (nc, js):
        js.create_stream("SOC", subjects=["soc.*"], storage="memory")
        fill(js, "soc.a", 30)
        got = []
        done = threading.Event()

        def cb(m):
            got.append(m.data)
            if len(got) == 30:
                done.set()
        oc = js.ordered_consumer("SOC").consume(cb)
        assert done.wait(10)
        oc.stop(timeout=5)
        assert got == [b"m%d" % i for i in range(30)]


def test_the_same_stream_from_both_faces(js_server):
    """What the blocking face writes the asyncio face reads, with the same values."""
    with js_client(js_server) as (nc, js):
        js.create_stream("SX", subjects=["sx.*"], storage="memory")
        ack = js.publish("sx.a", b"from sync", msg_id="x1")

        async def read():
            c = await tclnats_py.connect(js_server.url)
            try:
                ajs = c.jetstream()
                again = await ajs.publish("sx.a", b"from sync", msg_id="x1")
                cons = await ajs.create_consumer("SX", durable_name="AX")
                return again, [m.data for m in await cons.fetch(1, max_wait=1)]
            finally:
                await c.close()
        again, data = asyncio.run(read())
        assert (again.seq, again.duplicate, ack.seq, data) == (1, True, 1, [b"from sync"])


def test_closing_the_client_ends_the_consume_threads(js_server):
    nc = tclnats_py.sync.connect(js_server.url)
    js = nc.jetstream()
    js.create_stream("SCX", subjects=["scx.*"], storage="memory")
    fill(js, "scx.a", 3)
    cons = js.create_consumer("SCX", durable_name="X")
    got = []
    ctx = cons.consume(lambda m: got.append(m.data), expires=1)
    oc = js.ordered_consumer("SCX").consume(lambda m: got.append(m.data))
    kv = js.create_key_value("SCX_KV", storage="memory")
    watched = []
    watching = threading.Event()

    def watch():
        with kv.watch() as w:
            for e in w:
                watched.append(e)
                watching.set()
    wt = threading.Thread(target=watch)
    wt.start()
    deadline = time.monotonic() + 5
    while len(got) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert watching.wait(5)
    assert sorted(got) == [b"m0", b"m0", b"m1", b"m1", b"m2", b"m2"]
    nc.close()
    assert ctx.closed.wait(5)
    oc._thread.join(5)
    wt.join(5)
    assert not oc._thread.is_alive() and not wt.is_alive() and watched == [None]



@pytest.mark.parametrize("transport", ["tcp", pytest.param("ws", marks=pytest.mark.feature("websocket"))])
@pytest.mark.parametrize("how", ["stop", "kill"])
def test_fetch_while_the_server_goes_away(ws_server, transport, how):
    # a graceful stop: the pull's 409 Server Shutdown, ErrServerShutdown with
    # nothing fetched (as the asyncio face, nats.go's Fetch); a kill: the
    # connection lost, ErrTimeout "Connection lost" once the client gives up
    url = ws_server.ws_url if transport == "ws" else ws_server.url
    with tclnats_py.sync.connect(url, max_reconnect_attempts=1, reconnect_time_wait=0, connect_timeout=0.5) as nc:
        js = nc.jetstream()
        c = js.create_stream("SJSTOP", subjects=["sjstop.>"], storage="memory").create_consumer(durable_name="W")
        timer = threading.Timer(0.3, getattr(ws_server, how))
        timer.start()
        try:
            with pytest.raises(tclnats_py.NatsError) as e:
                c.fetch(1, max_wait=5)
        finally:
            timer.join()
        if how == "stop":
            assert (e.value.code, str(e.value)) == ("ErrServerShutdown", "Server Shutdown")
        else:
            assert (e.value.code, str(e.value)) == ("ErrTimeout", "Connection lost") and nc.is_closed
