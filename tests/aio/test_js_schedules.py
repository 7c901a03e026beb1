"""Message schedules (ADR-51) on the asyncio face against nats-server 2.15.1:
``@at`` and ``@every`` seen firing through a pull consumer on the target, a
cron schedule in a time zone with a TTL, a schedule cancelled by purging its
subject; bad specs refused before sending; the server's refusals; and
nats-server 2.10 refusing with ErrServerTooOld (old_js_server)."""

import asyncio
import datetime
import time

import pytest

import tclnats_py
from tclnats_py import NatsError


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def connect(server, stream="SCHED"):
    nc = await tclnats_py.connect(server.url)
    js = nc.jetstream()
    try:
        await js.delete_stream(stream)
    except NatsError:
        pass
    await js.create_stream(stream, subjects=["sched.>"], storage="memory", allow_msg_schedules=True,
                           allow_msg_ttl=True)
    return nc, js


async def target_consumer(js, subject):
    return await js.create_consumer("SCHED", durable_name=subject.replace(".", "_"), filter_subject=subject)


@pytest.mark.feature("schedules")
def test_at_fires_once_at_its_time(js_server):
    async def go():
        nc, js = await connect(js_server)
        try:
            cons = await target_consumer(js, "sched.fired.at")
            at = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=2)).replace(microsecond=0)
            ack = await js.publish_schedule("sched.at", b"hello", {"X-Order": "42"}, target="sched.fired.at", at=at)
            assert ack.stream == "SCHED" and ack.seq == 1
            assert await cons.fetch(1, max_wait=0.5) == []                # not before its time
            (m,) = await cons.fetch(1, max_wait=8)
            fired = datetime.datetime.now(datetime.timezone.utc)
            assert fired >= at - datetime.timedelta(milliseconds=50)
            assert m.data == b"hello" and m.subject == "sched.fired.at"
            assert m.headers["X-Order"] == "42" and m.headers["Nats-Scheduler"] == "sched.at"
            assert m.headers["Nats-Schedule-Next"] == "purge"
            await m.ack()
            with pytest.raises(tclnats_py.ErrMsgNotFound):            # an @at schedule is removed once it fired
                await js.get_msg("SCHED", last_by_subj="sched.at")
            assert await cons.fetch(1, max_wait=1.5) == []
        finally:
            await js.delete_stream("SCHED")
            await nc.close()
    run(go())


@pytest.mark.feature("schedules")
def test_every_fires_repeatedly_until_its_subject_is_purged(js_server):
    async def go():
        nc, js = await connect(js_server)
        try:
            cons = await target_consumer(js, "sched.fired.every")
            t0 = time.monotonic()
            await js.publish_schedule("sched.every", b"tick", target="sched.fired.every", every=1)
            msgs = await cons.fetch(2, max_wait=8)
            while len(msgs) < 2:
                msgs += await cons.fetch(2 - len(msgs), timeout=8)
            assert time.monotonic() - t0 >= 1.0
            assert [m.data for m in msgs] == [b"tick", b"tick"]
            assert msgs[-1].headers["Nats-Schedule-Next"].endswith("Z")
            # cancelling: the schedule's message goes, nothing more fires
            assert await js.purge_stream("SCHED", filter="sched.every") == 1
            while await cons.fetch(5, max_wait=0.3):
                pass
            assert await cons.fetch(5, max_wait=2.5) == []
        finally:
            await js.delete_stream("SCHED")
            await nc.close()
    run(go())


@pytest.mark.feature("schedules")
def test_cron_in_a_time_zone_with_a_ttl_and_a_source(js_server):
    async def go():
        nc, js = await connect(js_server)
        try:
            cron = await target_consumer(js, "sched.fired.cron")
            await js.publish_schedule("sched.cron", "c", target="sched.fired.cron", cron="* * * * * *",
                                      time_zone="Europe/Amsterdam", ttl=5)
            (m,) = await cron.fetch(1, max_wait=8)
            assert (m.data, m.headers["Nats-TTL"], m.headers["Nats-Scheduler"]) == (b"c", "5", "sched.cron")
            await js.purge_stream("SCHED", filter="sched.cron")
            sampled = await target_consumer(js, "sched.fired.src")
            await js.publish("sched.reading", b"21.5")
            await js.publish_schedule("sched.sample", target="sched.fired.src", every=datetime.timedelta(seconds=1),
                                      source="sched.reading")
            (m,) = await sampled.fetch(1, max_wait=8)
            assert m.data == b"21.5"
        finally:
            await js.delete_stream("SCHED")
            await nc.close()
    run(go())


@pytest.mark.parametrize("kw, code", [
    (dict(target="sched.t"), "ErrInvalidArg"),
    (dict(target="sched.t", every=0.5), "ErrInvalidArg"),
    (dict(target="sched.t", every="500ms"), "ErrInvalidArg"),
    (dict(target="sched.t", every=1, cron="@daily"), "ErrInvalidArg"),
    (dict(target="sched.t", cron="* * * * *"), "ErrInvalidArg"),
    (dict(target="sched.t", cron="0 0 0 1 13 *"), "ErrInvalidArg"),
    (dict(target="sched.t", every=5, time_zone="Europe/Amsterdam"), "ErrInvalidArg"),
    (dict(target="sched.t", at="tomorrow"), "ErrInvalidArg"),
    (dict(target="sched.t", every=5, ttl=0.5), "ErrInvalidArg"),
    (dict(target="sched.bad", every=5), "ErrInvalidArg"),
    (dict(target="sched.>", every=5), "ErrBadSubject"),
    (dict(target="sched.t", every=5, timeout=-1), "ErrBadTimeout"),
])
@pytest.mark.feature("schedules")
def test_bad_specs_are_refused_before_sending(js_server, kw, code):
    async def go():
        nc, js = await connect(js_server)
        try:
            with pytest.raises(NatsError) as e:
                await js.publish_schedule("sched.bad", b"x", **kw)
            assert e.value.code == code
            with pytest.raises(tclnats_py.ErrMsgNotFound):
                await js.get_msg("SCHED", last_by_subj="sched.bad")
        finally:
            await js.delete_stream("SCHED")
            await nc.close()
    run(go())


@pytest.mark.feature("schedules")
def test_the_servers_refusals(js_server):
    async def go():
        nc, js = await connect(js_server)
        await js.create_stream("PLAINSCHED", subjects=["plainsched.>"], storage="memory")
        try:
            with pytest.raises(tclnats_py.ErrJSResponse,
                               match=r"disabled \(the stream needs allow_msg_schedules\)") as e:
                await js.publish_schedule("plainsched.s", target="plainsched.t", every=1)
            assert e.value.err_code == 10188
            with pytest.raises(tclnats_py.ErrJSResponse, match="Nowhere/Land") as e:
                await js.publish_schedule("sched.tz", target="sched.t", cron="@daily", time_zone="Nowhere/Land")
            assert e.value.err_code == 10223
            with pytest.raises(tclnats_py.ErrJSResponse, match="elsewhere.t") as e:
                await js.publish_schedule("sched.out", target="elsewhere.t", every=1)
            assert e.value.err_code == 10190
        finally:
            await js.delete_stream("PLAINSCHED")
            await js.delete_stream("SCHED")
            await nc.close()
    run(go())


@pytest.mark.feature("schedules", "api_level")
def test_a_2_10_server_is_refused_before_anything_is_sent(old_js_server):
    async def go():
        nc = await tclnats_py.connect(old_js_server.url)
        js = nc.jetstream()
        await js.create_stream("OLDSCHED", subjects=["oldsched.>"], storage="memory")
        try:
            with pytest.raises(tclnats_py.ErrServerTooOld, match="schedules needs nats-server 2.12 or newer"):
                await js.publish_schedule("oldsched.s", target="oldsched.t", at="2030-01-01T00:00:00Z")
            with pytest.raises(tclnats_py.ErrServerTooOld, match="2.14"):
                await js.publish_schedule("oldsched.s", target="oldsched.t", every=5)
            with pytest.raises(tclnats_py.ErrServerTooOld, match="2.14"):
                await js.publish_schedule("oldsched.s", target="oldsched.t", cron="@hourly", time_zone="UTC")
            assert (await js.stream_info("OLDSCHED")).state.messages == 0
        finally:
            await js.delete_stream("OLDSCHED")
            await nc.close()
    run(go())
