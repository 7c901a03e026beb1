"""The asyncio face on a real nats-server: pub/sub, queue groups, headers,
binary payloads, every form of request and its errors, unsubscribe, flush,
drain, slow consumers and the connection's state."""

import asyncio
import time

import pytest

import tclnats_py
from tclnats_py import NatsError


def run(coro, timeout=30):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def settle(cond, timeout=3.0):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.01)


# ====================================================================== connection

def test_connect_state_and_close(nats_server):
    async def go():
        statuses, closed = [], []
        nc = await tclnats_py.connect(nats_server.url, name="core-test", status_cb=statuses.append,
                                      closed_cb=lambda: closed.append(True))
        assert isinstance(nc, tclnats_py.Client)
        assert nc.status == "connected" and nc.is_connected and not nc.is_closed
        assert nc.current_server == ("127.0.0.1", nats_server.port)
        assert nc.all_servers[0]["host"] == "127.0.0.1" and nc.all_servers[0]["discovered"] == "false"
        info = nc.server_info
        assert info["headers"] is True and info["max_payload"] == nc.max_payload == 1048576
        assert nc.last_error is None
        assert nc.new_inbox().startswith("_INBOX.") and nc.new_inbox() != nc.new_inbox()
        assert await nc.ping() is True
        await nc.close()
        assert nc.status == "closed" and statuses == ["connecting", "connected", "closed"] and closed == [True]
        await nc.close()  # idempotent
        with pytest.raises(tclnats_py.ErrConnectionClosed):
            nc.publish("x", b"")
        with pytest.raises(tclnats_py.ErrConnectionClosed):
            await nc.subscribe("x")
        with pytest.raises(tclnats_py.ErrConnectionClosed):
            await nc.request("x", b"", timeout=1)
        with pytest.raises(tclnats_py.ErrConnectionClosed):
            await nc.flush()
    run(go())


def test_client_object_then_connect_and_async_with(nats_server):
    async def go():
        nc = tclnats_py.Client(nats_server.url, name="obj")
        assert nc.status == "closed"
        with pytest.raises(tclnats_py.ErrConnectionClosed):
            nc.publish("x", b"")  # nats-tcl: publish before connect
        await nc.connect()
        await nc.connect()  # a no-op when not closed
        assert nc.is_connected
        await nc.close()
        async with tclnats_py.Client(servers=[nats_server.url]) as nc2:
            sub = await nc2.subscribe("ctx")
            nc2.publish("ctx", "text")
            assert (await sub.next_msg(2)).data == b"text"
        assert nc2.is_closed
    run(go())


def test_a_name_given_to_connect_is_the_one_the_server_lists():
    # a Client made without options, named at connect(): the server's view
    import json
    import urllib.request
    from tclnats_py.testing.server import NatsServer

    async def go(srv):
        nc3 = tclnats_py.Client()
        await nc3.connect(servers=srv.url, name="late")
        assert nc3.options.name == "late"
        await nc3.flush()
        with urllib.request.urlopen(f"{srv.monitor_url}/connz", timeout=10) as r:
            names = [c.get("name") for c in json.load(r)["connections"]]
        assert names == ["late"]
        await nc3.close()
    with NatsServer(monitor=True) as srv:
        run(go(srv))


def test_connect_errors():
    from tclnats_py.testing.server import free_port

    async def go():
        port = free_port()
        with pytest.raises(tclnats_py.ErrConnectionRefused):
            await tclnats_py.connect(f"nats://127.0.0.1:{port}")
        with pytest.raises(tclnats_py.ErrNoServers):
            await tclnats_py.connect([f"nats://127.0.0.1:{port}", f"nats://127.0.0.1:{free_port()}"])
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await tclnats_py.connect("http://127.0.0.1:4222")
        with pytest.raises(tclnats_py.ErrInvalidArg):
            tclnats_py.Client("nats://h", no_such_option=1)
        with pytest.raises(tclnats_py.ErrInvalidArg):
            tclnats_py.Client("nats://h", connect_timeout=-5)
    run(go())


def test_input_errors_keep_the_connection(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)
        for call, code in ((lambda: nc.publish("bad subject", b""), "ErrBadSubject"),
                           (lambda: nc.publish("x.*", b""), "ErrBadSubject"),
                           (lambda: nc.publish("x", b"y" * (nc.max_payload + 1)), "ErrMaxPayload"),
                           (lambda: nc.publish("x", b"", reply="bad reply"), "ErrBadSubject"),
                           (lambda: nc.publish("x", b"", headers={"K": "a\r\nb"}), "ErrInvalidArg")):
            with pytest.raises(NatsError) as e:
                call()
            assert e.value.code == code
        for coro, code in ((nc.subscribe("a..b"), "ErrBadSubject"),
                           (nc.subscribe("ok", queue="bad.q"), "ErrBadQueueName"),
                           (nc.request("x", b"", timeout=-1), "ErrBadTimeout"),
                           (nc.flush(-1), "ErrBadTimeout")):
            with pytest.raises(NatsError) as e:
                await coro
            assert e.value.code == code
        assert nc.is_connected
        await nc.flush()
        await nc.close()
    run(go())


# ====================================================================== pub/sub

def test_pubsub_iterator_wildcards_and_payload_types(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)
        star = await nc.subscribe("pt.*")
        full = await nc.subscribe("pt.>")
        nc.publish("pt.a", b"bytes")
        nc.publish("pt.b", "str é")
        nc.publish("pt.c", bytearray(b"ba"))
        nc.publish("pt.d", memoryview(b"mv"))
        nc.publish("pt.e.f", None)
        nc.publish_msg(tclnats_py.Msg("pt.g", b"msg", "r.1", {"K": ["v"]}))
        got = [(m.subject, m.data) for m in [await star.next_msg(2) for _ in range(5)]]
        assert got == [("pt.a", b"bytes"), ("pt.b", "str é".encode()), ("pt.c", b"ba"), ("pt.d", b"mv"),
                       ("pt.g", b"msg")]
        n = 0
        async for m in full:
            n += 1
            if m.subject == "pt.g":
                assert m.reply == "r.1" and m.headers == {"K": ["v"]}
                break
        assert n == 6
        with pytest.raises(tclnats_py.ErrTimeout):
            await star.next_msg(0.05)
        await nc.close()
    run(go())


def test_callbacks_sync_async_and_failing(nats_server):
    async def go():
        errors = []
        nc = await tclnats_py.connect(nats_server.url, error_cb=errors.append)
        seen_sync, seen_async = [], []

        async def acb(msg):
            await asyncio.sleep(0)
            seen_async.append(msg.data)

        def bad(msg):
            raise ValueError("user bug")
        await nc.subscribe("cb", cb=lambda m: seen_sync.append(m.data))
        await nc.subscribe("cb", cb=acb)
        await nc.subscribe("cb", cb=bad)
        for i in range(100):
            nc.publish("cb", b"%d" % i)
        await settle(lambda: len(seen_sync) == 100 and len(seen_async) == 100 and len(errors) == 100)
        assert seen_sync == seen_async == [b"%d" % i for i in range(100)]  # in order
        assert all(isinstance(e, ValueError) for e in errors) and nc.is_connected
        await nc.close()
    run(go())


def test_echo_false_hides_own_messages(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url, echo=False)
        other = await tclnats_py.connect(nats_server.url)
        sub = await nc.subscribe("echo")
        await nc.flush()
        nc.publish("echo", b"mine")
        other.publish("echo", b"theirs")
        assert (await sub.next_msg(2)).data == b"theirs"
        with pytest.raises(tclnats_py.ErrTimeout):
            await sub.next_msg(0.1)
        await nc.close()
        await other.close()
    run(go())


def test_verbose_and_pedantic_connections_work(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url, verbose=True, pedantic=True)
        sub = await nc.subscribe("vb")
        nc.publish("vb", b"+OK all along")
        assert (await sub.next_msg(2)).data == b"+OK all along"
        await nc.close()
    run(go())


def test_queue_groups_share_the_work(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)
        counts = {"a": 0, "b": 0, "all": 0}

        def count(key):
            def cb(msg):
                counts[key] += 1
            return cb
        await nc.subscribe("work", queue="workers", cb=count("a"))
        await nc.subscribe("work", queue="workers", cb=count("b"))
        await nc.subscribe("work", cb=count("all"))
        await nc.flush()
        for i in range(200):
            nc.publish("work", b"%d" % i)
        await settle(lambda: counts["a"] + counts["b"] == 200 and counts["all"] == 200)
        assert counts["a"] > 0 and counts["b"] > 0
        await nc.close()
    run(go())


def test_multi_valued_headers_and_reply(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)
        sub = await nc.subscribe("hdr")
        headers = {"Multi": ["v1", "v2", "v3"], "Single": "s", "Case": "upper", "case": "lower",
                   "Unicode": "árvíztűrő"}
        nc.publish("hdr", b"body", reply="back.here", headers=headers)
        nc.publish("hdr", b"", headers={"Only": ["x"]})
        m = await sub.next_msg(2)
        assert m.data == b"body" and m.reply == "back.here"
        assert m.headers == {"Multi": ["v1", "v2", "v3"], "Single": ["s"], "Case": ["upper"], "case": ["lower"],
                             "Unicode": ["árvíztűrő"]}
        assert m.header("Multi") == "v1"
        m2 = await sub.next_msg(2)
        assert m2.data == b"" and m2.headers == {"Only": ["x"]}
        await nc.close()
    run(go())


def test_binary_payloads_byte_exact(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)
        sub = await nc.subscribe("bin")
        big = bytes(range(256)) * (nc.max_payload // 256)
        samples = [b"", b"\r\n", b"\x00" * 10, bytes(range(256)), b"MSG x 1 2\r\nab\r\n", big]
        for s in samples:
            nc.publish("bin", s)
        nc.publish("bin", big[:100], headers={"K": "v"})
        for s in samples:
            assert (await sub.next_msg(5)).data == s
        assert (await sub.next_msg(5)).data == big[:100]
        await nc.close()
    run(go())


def test_publish_is_buffered_and_written_once_per_loop_turn(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)
        sub = await nc.subscribe("burst")
        await nc.flush()
        writes = []
        real = nc._transport.write
        nc._transport.write = lambda data: (writes.append(len(data)), real(data))
        for i in range(1000):
            nc.publish("burst", b"%d" % i)
        assert writes == []  # nothing written synchronously
        await asyncio.sleep(0)
        assert len(writes) == 1
        nc._transport.write = real
        for i in range(1000):
            assert (await sub.next_msg(5)).data == b"%d" % i
        assert nc.stats["out_msgs"] >= 1000 and nc.stats["in_msgs"] >= 1000
        await nc.close()
    run(go())


# ====================================================================== requests

def test_request_reply_forms(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url, request_timeout=0.5)

        async def echo(msg):
            await msg.respond(b"re:" + msg.data, headers={"Seen": msg.headers.get_all("K")} if msg.headers else None)
        await nc.subscribe("svc.echo", cb=echo)
        await nc.subscribe("svc.silent", cb=lambda m: None)
        await nc.flush()
        r = await nc.request("svc.echo", b"one", timeout=2)
        assert r.data == b"re:one" and r.headers is None
        r = await nc.request("svc.echo", "two", headers={"K": ["a", "b"]})
        assert r.data == b"re:two" and r.headers == {"Seen": ["a", "b"]}
        r = await nc.request_msg(tclnats_py.Msg("svc.echo", b"three"), timeout=2)
        assert r.data == b"re:three"
        results = await asyncio.gather(*(nc.request("svc.echo", b"%d" % i, timeout=5) for i in range(200)))
        assert [x.data for x in results] == [b"re:%d" % i for i in range(200)]
        with pytest.raises(tclnats_py.ErrNoResponders):
            await nc.request("svc.nobody", b"", timeout=2)
        t = time.monotonic()
        with pytest.raises(tclnats_py.ErrTimeout):
            await nc.request("svc.silent", b"")  # request_timeout=0.5 s
        assert 0.4 < time.monotonic() - t < 2
        with pytest.raises(tclnats_py.ErrTimeout) as e:
            await nc.request("svc.silent", b"", timeout=0.1)
        assert e.value.code == "ErrTimeout" and isinstance(e.value, NatsError)
        assert not nc._engine.requests
        await nc.close()
    run(go())


def test_request_cancelled_by_the_caller_leaves_nothing_behind(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)
        await nc.subscribe("svc.slow", cb=lambda m: None)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(nc.request("svc.slow", b"", timeout=30), 0.1)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(nc.request_many("svc.slow", b"", max_msgs=3, timeout=30), 0.1)
        assert not nc._engine.requests and not nc._timers.keys() - {"ping"}
        await nc.close()
    run(go())


def test_request_many_gathers_replies(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)
        for i in range(3):
            await nc.subscribe("svc.many", cb=lambda m, i=i: nc.publish(m.reply, b"r%d" % i))
        await nc.subscribe("svc.none", cb=lambda m: None)
        await nc.flush()
        t = time.monotonic()
        got = await nc.request_many("svc.many", b"q", max_msgs=3, timeout=5)
        assert sorted(m.data for m in got) == [b"r0", b"r1", b"r2"]
        assert time.monotonic() - t < 2  # ends at max_msgs, not at the timeout
        got = await nc.request_many("svc.many", b"q", max_msgs=10, timeout=0.3)
        assert len(got) == 3  # the timeout fired: what came so far
        with pytest.raises(tclnats_py.ErrTimeout):
            await nc.request_many("svc.none", b"q", max_msgs=2, timeout=0.1)
        with pytest.raises(tclnats_py.ErrNoResponders):
            await nc.request_many("svc.nobody", b"q", max_msgs=2, timeout=1)
        await nc.close()
    run(go())


def test_pending_request_fails_with_connection_closed_on_close(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)
        await nc.subscribe("svc.hang", cb=lambda m: None)
        task = asyncio.ensure_future(nc.request("svc.hang", b"", timeout=10))
        many = asyncio.ensure_future(nc.request_many("svc.hang", b"", max_msgs=2, timeout=10))
        await asyncio.sleep(0.1)
        await nc.close()
        for t in (task, many):
            with pytest.raises(tclnats_py.ErrConnectionClosed):
                await t
    run(go())


def test_respond_without_reply_is_invalid(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)
        sub = await nc.subscribe("noreply")
        nc.publish("noreply", b"x")
        m = await sub.next_msg(2)
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await m.respond(b"y")
        assert isinstance(m, tclnats_py.Msg)
        await nc.close()
    run(go())


# ====================================================================== unsubscribe / flush / drain

def test_unsubscribe_forms(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)
        sub = await nc.subscribe("un.a")
        await sub.unsubscribe(max_msgs=3)
        for i in range(6):
            nc.publish("un.a", b"%d" % i)
        assert [m.data async for m in sub] == [b"0", b"1", b"2"]  # ends after the 3rd
        assert not sub.is_active
        with pytest.raises(tclnats_py.ErrBadSubscription):
            await sub.next_msg(0.1)
        with pytest.raises(tclnats_py.ErrBadSubscription):
            await sub.unsubscribe()

        sub2 = await nc.subscribe("un.b", max_msgs=2)
        for i in range(4):
            nc.publish("un.b", b"%d" % i)
        assert [m.data async for m in sub2] == [b"0", b"1"]

        # nats-py's name: unsubscribe(limit=n), positional too
        for form in ({"limit": 2}, (2,)):
            s_l = await nc.subscribe("un.limit")
            await (s_l.unsubscribe(**form) if isinstance(form, dict) else s_l.unsubscribe(*form))
            for i in range(4):
                nc.publish("un.limit", b"%d" % i)
            assert [m.data async for m in s_l] == [b"0", b"1"]
        s_l = await nc.subscribe("un.limit")
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await s_l.unsubscribe(2, max_msgs=3)
        with pytest.raises(tclnats_py.ErrInvalidArg):
            await s_l.unsubscribe(limit=-1)
        await s_l.unsubscribe()

        sub3 = await nc.subscribe("un.c")
        for i in range(3):
            nc.publish("un.c", b"%d" % i)
        await nc.flush()
        await settle(lambda: sub3.pending_msgs == 3)
        await sub3.unsubscribe(max_msgs=2)  # 3 received already: ends now (nats-tcl's rule)
        assert [m.data async for m in sub3] == [b"0", b"1", b"2"]  # what was queued is still handed out

        got = []
        sub4 = await nc.subscribe("un.d", cb=got.append)
        nc.publish("un.d", b"1")
        await nc.flush()
        await settle(lambda: got)
        await sub4.unsubscribe()
        nc.publish("un.d", b"2")
        await nc.flush()
        await asyncio.sleep(0.05)
        assert [m.data for m in got] == [b"1"]
        await nc.close()
    run(go())


def test_flush_makes_the_server_see_everything(nats_server):
    async def go():
        a = await tclnats_py.connect(nats_server.url)
        b = await tclnats_py.connect(nats_server.url)
        sub = await b.subscribe("fl")
        await b.flush()  # the SUB has reached the server
        for i in range(10000):
            a.publish("fl", b"x")
        await a.flush(5)
        await b.flush(5)
        await settle(lambda: sub.pending_msgs == 10000)
        await a.close()
        await b.close()
    run(go())


def test_subscription_drain_handles_what_is_on_its_way(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)
        pub = await tclnats_py.connect(nats_server.url)
        seen = []

        async def slow(msg):
            await asyncio.sleep(0.001)
            seen.append(msg.data)
        sub = await nc.subscribe("dr", cb=slow)
        await nc.flush()
        for i in range(200):
            pub.publish("dr", b"%d" % i)
        await pub.flush()
        await sub.drain()
        assert seen == [b"%d" % i for i in range(200)] and not sub.is_active
        pub.publish("dr", b"late")
        await pub.flush()
        await asyncio.sleep(0.05)
        assert len(seen) == 200
        await nc.close()
        await pub.close()
    run(go())


def test_client_drain_finishes_callbacks_then_closes(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)
        pub = await tclnats_py.connect(nats_server.url)
        seen = []

        async def slow(msg):
            await asyncio.sleep(0.002)
            seen.append(msg.data)
        await nc.subscribe("cdr", cb=slow)
        it = await nc.subscribe("cdr")
        await nc.flush()
        for i in range(100):
            pub.publish("cdr", b"%d" % i)
        await pub.flush()
        nc.publish("cdr.out", b"flushed before close")
        await nc.drain()
        assert nc.is_closed and len(seen) == 100
        assert [m.data async for m in it] == [b"%d" % i for i in range(100)]  # the iterator ends
        await pub.close()
    run(go())


# ====================================================================== slow consumers

def test_slow_consumer_drops_and_reports_once_per_episode(nats_server):
    async def go():
        errors = []
        nc = await tclnats_py.connect(nats_server.url, error_cb=errors.append)
        pub = await tclnats_py.connect(nats_server.url)
        sub = await nc.subscribe("slowc", pending_msgs_limit=100)
        bsub = await nc.subscribe("slowb", pending_bytes_limit=1000)
        await nc.flush()
        for _ in range(500):
            pub.publish("slowc", b"x" * 10)
            pub.publish("slowb", b"y" * 100)
        await pub.flush()
        await nc.flush()
        assert sub.pending_msgs == 100 and sub.dropped == 400
        assert bsub.pending_bytes <= 1000 and bsub.dropped == 490
        codes = [e.code for e in errors]
        assert codes == ["ErrSlowConsumer", "ErrSlowConsumer"]
        assert {e.details["subject"] for e in errors} == {"slowc", "slowb"}
        while sub.pending_msgs:  # the consumer catches up: the episode ends
            await sub.next_msg(1)
        pub.publish("slowc", b"again")
        await pub.flush()
        assert (await sub.next_msg(1)).data == b"again"
        for _ in range(200):
            pub.publish("slowc", b"x")
        await pub.flush()
        await nc.flush()
        assert [e.code for e in errors].count("ErrSlowConsumer") == 3  # a new episode
        assert nc.is_connected and nc.last_error is None
        await nc.close()
        await pub.close()
    run(go())


def test_silent_server_connect_timeout_and_caller_cancellation():
    async def go():
        accepted = []
        server = await asyncio.start_server(lambda r, w: accepted.append(w), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        t = time.monotonic()
        with pytest.raises(tclnats_py.ErrConnectionTimeout):
            await tclnats_py.connect(f"nats://127.0.0.1:{port}", connect_timeout=0.2)
        assert 0.15 < time.monotonic() - t < 2
        nc = tclnats_py.Client(f"nats://127.0.0.1:{port}", connect_timeout=60)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(nc.connect(), 0.2)
        assert nc.is_closed and not nc._timers  # the caller gave up: nothing keeps trying
        server.close()
        for w in accepted:
            w.close()
    run(go())


def test_without_error_cb_callback_failures_and_slow_consumers_are_logged(nats_server, caplog):
    async def go():
        nc = await tclnats_py.connect(nats_server.url)

        def bad(msg):
            raise ValueError("user bug")
        await nc.subscribe("log.cb", cb=bad)
        await nc.subscribe("log.slow", pending_msgs_limit=1)
        nc.publish("log.cb", b"")
        nc.publish("log.slow", b"1")
        nc.publish("log.slow", b"2")
        await nc.flush()
        await asyncio.sleep(0.05)
        await nc.close()
    with caplog.at_level("ERROR", logger="tclnats_py"):
        run(go())
    text = caplog.text
    assert "ValueError" in text and "user bug" in text and "ErrSlowConsumer" in text
