"""Priority groups of pull consumers (ADR-42) in the asyncio face, against nats-server."""

import asyncio
import os
import subprocess
import sys
import time

import pytest

import tclnats_py
from tclnats_py import NatsError
from tests.aio_helpers import settle


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 90))


async def connect(server):
    c = await tclnats_py.connect(server.url)
    return c, c.jetstream()


async def stream(js, name):
    try:
        await js.delete_stream(name)
    except NatsError:
        pass
    return await js.create_stream(name, subjects=[f"{name.lower()}.>"], storage="memory")


@pytest.mark.feature("priority_groups")
def test_config_round_trip_and_group_required(js_server):
    async def go():
        c, js = await connect(js_server)
        s = await stream(js, "PRIO_CFG")
        cons = await s.create_consumer(durable_name="P", priority_policy="pinned_client", priority_groups=["jobs"],
                                       pinned_ttl=1.5)
        cfg = cons.info.config
        assert (cfg.priority_policy, cfg.priority_groups, cfg.pinned_ttl) == ("pinned_client", ["jobs"], 1.5)
        assert cons.info["config"]["priority_timeout"] == 1_500_000_000  # the wire's name, ns
        assert "pinned_ttl" not in cfg.extra and "priority_timeout" not in cfg.extra
        # a pull without the group: the server's 400 "Priority Group missing"
        with pytest.raises(NatsError) as e:
            await cons.fetch(1, 0.5)
        assert e.value.code == "ErrBadRequest" and "priority group" in str(e.value).lower()
        for bad in ({"group": "x" * 17}, {"group": "a b"}, {"group": "jobs", "priority": 10},
                    {"min_pending": 3}, {"group": "jobs", "min_pending": -1}):
            with pytest.raises(tclnats_py.ErrInvalidArg):
                await cons.fetch(1, 0.5, **bad)
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await s.create_consumer(durable_name="Q", priority_policy="sometimes", priority_groups=["jobs"])
        await js.publish("prio_cfg.a", b"one")
        msgs = await cons.fetch(1, 2, group="jobs")
        assert [m.data for m in msgs] == [b"one"]
        assert cons.pins["jobs"] == msgs[0].headers["Nats-Pin-Id"]
        info = await cons.refresh()
        assert info["priority_groups"][0]["pinned_client_id"] == cons.pins["jobs"]
        await c.close()
    run(go())


@pytest.mark.feature("priority_groups")
def test_stale_pin_is_forgotten_and_unpin(js_server):
    """A pull carrying a pin the server took away (unpin) gets 423: the client
    forgets the pin and pulls again, unpinned, in the same fetch."""
    async def go():
        c, js = await connect(js_server)
        s = await stream(js, "PRIO_PIN")
        a = await s.create_consumer(durable_name="P", priority_policy="pinned_client", priority_groups=["jobs"],
                                    pinned_ttl=60)
        b = await js.consumer("PRIO_PIN", "P")
        await js.publish("prio_pin.a", b"1")
        assert [m.data for m in await a.fetch(1, 2, group="jobs")] == [b"1"]
        pin = a.pins["jobs"]
        # b stands by: the server keeps its pull waiting while a holds the pin
        waiting = asyncio.ensure_future(b.fetch(1, 10, group="jobs"))
        await asyncio.sleep(0.3)
        await js.publish("prio_pin.a", b"2")
        assert [m.data for m in await a.fetch(1, 2, group="jobs")] == [b"2"]
        assert not waiting.done()
        assert await b.unpin("jobs") is True
        await js.publish("prio_pin.a", b"3")
        got = await asyncio.wait_for(waiting, 10)
        assert [m.data for m in got] == [b"3"] and b.pins["jobs"] != pin
        # a's next pull carries the stale pin: 423, forgotten, pulled again without it
        t0 = time.monotonic()
        assert await a.fetch(1, 1.0, group="jobs") == []
        assert a.pins == {} and time.monotonic() - t0 >= 0.9
        with pytest.raises(NatsError):
            await b.unpin("no such group")
        await c.close()
    run(go())


WORKER = """
import asyncio, sys, tclnats_py
async def main():
    c = await tclnats_py.connect(sys.argv[1])
    cons = await c.jetstream().consumer("PRIO_KILL", "W")
    async def cb(m):
        await m.ack()
        print(m.data.decode(), flush=True)
    cons.consume(cb, group="jobs", expires=1.0)
    print("ready", flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""


@pytest.mark.feature("priority_groups")
def test_pinned_worker_killed_the_other_takes_over(js_server, tmp_path):
    """Two workers on a pinned_client consumer: the pinned one (a process)
    gets everything; killed, the other is pinned within pinned_ttl."""
    async def go():
        c, js = await connect(js_server)
        s = await stream(js, "PRIO_KILL")
        ttl = 2.0
        await s.create_consumer(durable_name="W", priority_policy="pinned_client", priority_groups=["jobs"],
                                pinned_ttl=ttl, ack_wait=30)
        script = tmp_path / "worker.py"
        script.write_text(WORKER)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd()] + sys.path))
        proc = subprocess.Popen([sys.executable, str(script), js_server.url], stdout=subprocess.PIPE, env=env,
                                text=True)
        loop = asyncio.get_running_loop()
        try:
            assert await loop.run_in_executor(None, proc.stdout.readline) == "ready\n"
            await js.publish("prio_kill.a", b"first")
            assert await loop.run_in_executor(None, proc.stdout.readline) == "first\n"  # the worker is pinned
            mine = []
            standby = await js.consumer("PRIO_KILL", "W")
            ctx = standby.consume(lambda m: mine.append(m) or m.ack(), group="jobs", expires=1.0)
            await asyncio.sleep(0.5)
            for i in range(5):
                await js.publish("prio_kill.a", b"to-the-pinned-%d" % i)
            for i in range(5):
                assert await loop.run_in_executor(None, proc.stdout.readline) == f"to-the-pinned-{i}\n"
            assert mine == [] and standby.pins == {}
            proc.kill()  # no goodbye: the connection just ends
            proc.wait()
            killed = time.monotonic()
            await js.publish("prio_kill.a", b"after")
            await settle(lambda: mine, timeout=ttl + 10)
            took = time.monotonic() - killed
            assert [m.data for m in mine] == [b"after"] and standby.pins.get("jobs")
            assert took < ttl + 3, took
            await ctx.stop()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            proc.stdout.close()
        await c.close()
    run(go())


@pytest.mark.feature("priority_groups")
def test_overflow_min_pending(js_server):
    async def go():
        c, js = await connect(js_server)
        s = await stream(js, "PRIO_OVER")
        cons = await s.create_consumer(durable_name="O", priority_policy="overflow", priority_groups=["jobs"])
        for i in range(3):
            await js.publish("prio_over.a", b"%d" % i)
        # 3 pending: a pull asking for at least 5 gets nothing, one asking for 3 is served
        assert await cons.fetch(10, 0.5, group="jobs", min_pending=5) == []
        assert len(await cons.fetch(1, 2, group="jobs", min_pending=3)) == 1
        # min_ack_pending: one message is now delivered and not acked
        assert await cons.fetch(1, 0.5, group="jobs", min_ack_pending=2) == []
        got = [m async for m in _take(cons.messages(group="jobs", min_ack_pending=1, expires=1.0), 2)]
        assert [m.data for m in got] == [b"1", b"2"]
        await c.close()
    run(go())


async def _take(it, n):
    async for m in it:
        yield m
        n -= 1
        if n == 0:
            await it.stop()
            return


@pytest.mark.feature("priority_groups")
def test_prioritized(js_server):
    """The lower priority's pull is served first, whatever the order of the pulls."""
    async def go():
        c, js = await connect(js_server)
        s = await stream(js, "PRIO_ORDER")
        cons = await s.create_consumer(durable_name="R", priority_policy="prioritized", priority_groups=["jobs"])
        low = asyncio.ensure_future(cons.fetch(1, 3, group="jobs", priority=5))
        await asyncio.sleep(0.3)
        high = asyncio.ensure_future(cons.fetch(1, 3, group="jobs", priority=0))
        await asyncio.sleep(0.3)
        await js.publish("prio_order.a", b"x")
        assert [m.data for m in await high] == [b"x"]
        assert await low == []
        await c.close()
    run(go())


@pytest.mark.feature("priority_groups", "api_level")
def test_old_server_is_too_old(old_js_server):
    """nats-server 2.10 knows no priority groups (it would drop the fields and
    make a plain consumer): refused before anything is created."""
    async def go():
        c, js = await connect(old_js_server)
        s = await stream(js, "PRIO_OLD")
        for policy, version in (("pinned_client", "2.11"), ("overflow", "2.11"), ("prioritized", "2.12")):
            with pytest.raises(tclnats_py.ErrServerTooOld, match=f"needs nats-server {version} or newer"):
                await s.create_consumer(durable_name="P", priority_policy=policy, priority_groups=["jobs"])
        assert await js.consumer_names("PRIO_OLD") == []
        cons = await s.create_consumer(durable_name="P")  # no priority policy: no level needed
        with pytest.raises(tclnats_py.ErrServerTooOld):
            await cons.unpin("jobs")
        await c.close()
    run(go())
