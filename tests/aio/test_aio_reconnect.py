"""Reconnection on real servers: a restarted server, a 3-node cluster that
loses the node in use, servers discovered from INFO, giving up."""

import asyncio

import pytest

import tclnats_py
from tests.aio_helpers import settle
from tclnats_py.testing.server import NatsServer, free_port


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout))



async def in_thread(fn, *args):
    return await asyncio.get_running_loop().run_in_executor(None, fn, *args)


def test_server_restart_restores_subscriptions_and_delivers_buffered_publishes_in_order():
    with NatsServer() as srv:
        async def go():
            events = []
            nc = await tclnats_py.connect(
                srv.url, reconnect_time_wait=0.05, max_reconnect_attempts=-1,
                status_cb=lambda s: events.append(s), disconnected_cb=lambda: events.append("DISCONNECTED"),
                reconnected_cb=lambda: events.append("RECONNECTED"), error_cb=lambda e: events.append(e.code))
            sub = await nc.subscribe("keep.*")
            got = []
            await nc.subscribe("keep.cb", cb=lambda m: got.append(m.data))
            once = await nc.subscribe("keep.once", max_msgs=3)
            nc.publish("keep.once", b"before")
            assert (await once.next_msg(2)).data == b"before"
            await nc.subscribe("svc.later", cb=lambda m: nc.publish(m.reply, b"a:" + m.data))
            await nc.flush()
            await in_thread(srv.stop)
            await settle(lambda: nc.status == "reconnecting")
            assert nc.last_error.code in ("ErrBrokenSocket", "ErrConnectionRefused")
            for i in range(20):
                nc.publish("keep.x", b"%d" % i)  # buffered while reconnecting
            nc.publish("keep.cb", b"cb")
            for i in range(5):
                nc.publish("keep.once", b"%d" % i)
            late = await nc.subscribe("keep.late")  # subscribed while reconnecting
            nc.publish("keep.late", b"late")
            # a request made while reconnecting goes out after the restored
            # subscriptions (its inbox, the responder's): it gets its answer
            answered = asyncio.ensure_future(nc.request("svc.later", b"q", timeout=20))
            await asyncio.sleep(0)
            await in_thread(srv.start)
            await settle(lambda: nc.status == "connected")
            got_x = [(await sub.next_msg(5)) for _ in range(21)]
            assert [m.data for m in got_x if m.subject == "keep.x"] == [b"%d" % i for i in range(20)]
            # the restored subscription's remaining count: 3 - 1 received before
            assert [m.data async for m in once] == [b"0", b"1"]
            assert (await late.next_msg(5)).data == b"late"
            await settle(lambda: got == [b"cb"])
            assert (await answered).data == b"a:q"
            assert nc.last_error is None
            assert events[:2] == ["connecting", "connected"]
            assert events[2:5] == ["ErrBrokenSocket", "reconnecting", "DISCONNECTED"]
            assert set(events[5:-2]) <= {"ErrConnectionRefused"}  # attempts while the server was down
            assert events[-2:] == ["connected", "RECONNECTED"]
            assert nc.stats["reconnects"] == 1
            await nc.close()
        run(go())


def test_pending_flush_and_ping_during_reconnect():
    with NatsServer() as srv:
        async def go():
            nc = await tclnats_py.connect(srv.url, reconnect_time_wait=0.05, max_reconnect_attempts=-1)
            await in_thread(srv.stop)
            await settle(lambda: nc.status == "reconnecting")
            with pytest.raises(tclnats_py.ErrConnectionClosed):
                await nc.ping(1)  # nats-tcl: ping needs "connected"
            await in_thread(srv.start)
            await settle(lambda: nc.is_connected)
            assert await nc.ping(2)
            await nc.close()
        run(go())


def test_giving_up_closes_and_fails_pending_requests_as_timeouts():
    with NatsServer() as srv:
        async def go():
            closed = []
            nc = await tclnats_py.connect(srv.url, reconnect_time_wait=0.02, max_reconnect_attempts=2,
                                          closed_cb=lambda: closed.append(True))
            sub = await nc.subscribe("gone")
            await nc.subscribe("svc.hang", cb=lambda m: None)
            await nc.flush()
            pending = asyncio.ensure_future(nc.request("svc.hang", b"", timeout=30))
            await asyncio.sleep(0.05)
            await in_thread(srv.stop)
            with pytest.raises(tclnats_py.ErrTimeout):  # nats-tcl's "connection lost" outcome
                await pending
            await settle(lambda: nc.is_closed)
            assert closed == [True] and nc.last_error.code in ("ErrConnectionRefused", "ErrBrokenSocket")
            assert [m async for m in sub] == []  # subscriptions ended
            with pytest.raises(tclnats_py.ErrConnectionClosed):
                nc.publish("x", b"")
            # the pool was emptied by the failures: connect() starts again from the options' servers
            await in_thread(srv.start)
            await nc.connect()
            assert nc.is_connected
            await nc.close()
        run(go())


def test_reconnect_delay_callback_and_reconnect_time_wait():
    with NatsServer() as srv:
        async def go():
            calls = []

            def delay(server):
                calls.append((server["host"], server["port"], server["reconnects"]))
                return 0.03  # seconds
            nc = await tclnats_py.connect(srv.url, reconnect_delay=delay, max_reconnect_attempts=-1)
            await in_thread(srv.stop)
            await settle(lambda: len(calls) >= 3)
            assert calls[0] == ("127.0.0.1", srv.port, 1)
            assert [c[2] for c in calls[:3]] == [1, 2, 3]
            await in_thread(srv.start)
            await settle(lambda: nc.is_connected)
            await nc.close()
        run(go())


def test_cluster_failover_and_discovered_servers(nats_cluster):
    async def go():
        first = nats_cluster.servers[0]
        nc = await tclnats_py.connect(first.url, reconnect_time_wait=0.05, max_reconnect_attempts=-1,
                                      randomize=False)
        await settle(lambda: len(nc.all_servers) >= 3)  # learnt from INFO connect_urls
        discovered = [s for s in nc.all_servers if s["discovered"] == "true"]
        assert {s["port"] for s in discovered} == {s.port for s in nats_cluster.servers[1:]}
        sub = await nc.subscribe("ha.>")
        reqs = await nc.subscribe("ha.svc", cb=lambda m: nc.publish(m.reply, b"from " + m.data))
        await nc.flush()
        other = await tclnats_py.connect(nats_cluster.servers[2].url)
        statuses = []
        nc._status_cb = statuses.append
        nats_cluster.kill(0)
        try:
            await settle(lambda: nc.is_connected and nc.current_server[1] != first.port)
            assert statuses[:1] == ["reconnecting"] and statuses[-1] == "connected"
            await nc.flush()
            await asyncio.sleep(0.2)  # let the route propagate our restored subscriptions
            other.publish("ha.x", b"after failover")
            assert (await sub.next_msg(5)).data == b"after failover"
            r = await other.request("ha.svc", b"other", timeout=5)
            assert r.data == b"from other"
            assert reqs.is_active
        finally:
            await other.close()
            await nc.close()
            await in_thread(nats_cluster.restart, 0)
    run(go())


def test_connect_round_skips_dead_servers():
    with NatsServer() as srv:
        async def go():
            dead = f"nats://127.0.0.1:{free_port()}"
            nc = await tclnats_py.connect([dead, srv.url], randomize=False)
            assert nc.current_server == ("127.0.0.1", srv.port)
            await nc.close()
        run(go())
