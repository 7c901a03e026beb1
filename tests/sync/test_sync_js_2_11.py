"""What nats-server 2.11-2.14 added, on the blocking face: schedules, atomic
batches, per-message and key TTLs, consumer pause/resume/reset, and the
"server too old" refusal (against nats-server 2.10)."""

import datetime
import time

import pytest

from tclnats_py.errors import NatsError
from tclnats_py.sync.jetstream import BatchAck, BatchPublisher

from tests.sync.js_helpers import js_client


@pytest.mark.feature("schedules")
def test_schedule_at_fires_once_and_every_until_purged(js_server):
    with js_client(js_server) as (nc, js):
        js.create_stream("SSCH", subjects=["ssch.s.>", "ssch.t.>"], storage="memory", allow_msg_schedules=True)
        c = js.create_consumer("SSCH", durable_name="W", filter_subject="ssch.t.>")
        soon = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)
        ack = js.publish_schedule("ssch.s.once", b"hi", target="ssch.t.once", at=soon)
        assert ack.stream == "SSCH"
        (m,) = c.fetch(1, max_wait=10)
        assert (m.subject, m.data, m.headers["Nats-Scheduler"]) == ("ssch.t.once", b"hi", "ssch.s.once")
        m.ack()
        js.publish_schedule("ssch.s.tick", b"t", target="ssch.t.tick", every=1)
        got = c.fetch(2, max_wait=6)
        assert [x.subject for x in got] == ["ssch.t.tick", "ssch.t.tick"]
        js.purge_stream("SSCH", filter="ssch.s.tick")   # cancels the schedule
        time.sleep(1.5)
        before = js.stream_info("SSCH").state.messages
        time.sleep(1.5)
        assert js.stream_info("SSCH").state.messages == before
        with pytest.raises(NatsError) as e:
            js.publish_schedule("ssch.s.bad", b"", target="ssch.t.x", every=1, cron="@daily")
        assert e.value.code == "ErrInvalidArg"


@pytest.mark.feature("atomic_batch")
def test_batch_all_or_nothing(js_server):
    with js_client(js_server) as (nc, js):
        js.create_stream("SBAT", subjects=["sbat.>"], storage="memory", allow_atomic=True)
        ack = js.publish_batch([("sbat.a", b"1"), ("sbat.b", b"2", {"K": "v"}), ("sbat.a", b"3")])
        assert isinstance(ack, BatchAck) and (ack.batch_size, ack.seq, ack.stream) == (3, 3, "SBAT")
        with js.batch() as b:
            assert isinstance(b, BatchPublisher)
            for i in range(5):
                b.add("sbat.c", b"%d" % i)
        assert b.ack is not None and (b.ack.batch_size, b.ack.seq) == (5, 8)
        # an expectation that fails in the middle: the commit is refused, nothing of the batch stored
        with pytest.raises(NatsError):
            js.publish_batch([("sbat.d", b"x"),
                              ("sbat.a", b"y", {"Nats-Expected-Last-Subject-Sequence": "1"}),
                              ("sbat.d", b"z")])
        assert js.stream_info("SBAT").state.messages == 8
        with pytest.raises(RuntimeError):
            with js.batch() as b2:
                b2.add("sbat.e", b"never")
                raise RuntimeError("given up")
        assert js.stream_info("SBAT").state.messages == 8


@pytest.mark.feature("msg_ttl", "kv_key_ttl")
def test_message_and_key_ttls(js_server):
    with js_client(js_server) as (nc, js):
        js.create_stream("STTL", subjects=["sttl.>"], storage="memory", allow_msg_ttl=True)
        js.publish("sttl.a", b"short", ttl=1)
        js.publish("sttl.b", b"long")
        assert js.stream_info("STTL").state.messages == 2
        deadline = time.monotonic() + 10
        while js.stream_info("STTL").state.messages != 1 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert js.stream_info("STTL").state.messages == 1
        kv = js.create_key_value("SKVTTL", limit_marker_ttl=5)
        kv.create("k", b"v", ttl=1)
        assert kv.get("k").value == b"v"
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                kv.get("k")
            except NatsError as e:
                assert e.code == "ErrKeyNotFound"
                break
            time.sleep(0.2)
        else:
            pytest.fail("the key did not expire")


@pytest.mark.feature("consumer_pause", "consumer_reset")
def test_pause_resume_reset(js_server):
    with js_client(js_server) as (nc, js):
        js.create_stream("SPR", subjects=["spr.>"], storage="memory")
        for i in range(3):
            js.publish("spr.a", b"%d" % i)
        c = js.create_consumer("SPR", durable_name="C")
        until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(minutes=5)
        r = js.pause_consumer("SPR", "C", until)
        assert r.paused
        assert not js.resume_consumer("SPR", "C").paused
        for m in c.fetch(3, max_wait=2):
            m.ack()
        js.reset_consumer("SPR", "C", 2)
        (m,) = c.fetch(1, max_wait=2)
        assert m.data == b"1"


@pytest.mark.feature("schedules", "atomic_batch", "api_level")
def test_a_2_10_server_is_refused_before_sending(old_js_server):
    with js_client(old_js_server) as (nc, js):
        js.create_stream("OLD", subjects=["old.>"], storage="memory")
        for call in (lambda: js.publish_schedule("old.s", b"", target="old.t", every=5),
                     lambda: js.publish_batch([("old.a", b"x")])):
            with pytest.raises(NatsError) as e:
                call()
            assert e.value.code == "ErrServerTooOld"
        assert js.stream_info("OLD").state.messages == 0
