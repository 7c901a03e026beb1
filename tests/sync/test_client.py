"""The blocking client (tclnats_py.sync.client) against a real server: each
method's behaviour, the asyncio face's options, names and errors."""

import threading
import time

import pytest

import tclnats_py
from tclnats_py import sync
from tclnats_py.engine.headers import Headers


def responder(url, subject, **kw):
    """A second client answering ``subject`` from its keeper thread."""
    nc = sync.connect(url)
    nc.subscribe(subject, cb=lambda m: m.respond(b"re:" + m.data), **kw)
    nc.flush()
    return nc


def no_threads_left(before):
    """The client threads started since ``before`` have ended."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        left = [t for t in threading.enumerate() if t not in before and t.name.startswith("tclnats-sync")]
        if not left:
            return True
        time.sleep(0.01)
    return False


def test_connect_context_manager_status_info_stats(nats_server):
    before = set(threading.enumerate())
    with sync.connect(nats_server.url, name="sync-test") as nc:
        assert nc.status == "connected" and nc.is_connected and not nc.is_closed
        assert nc.server_info["server_id"] and nc.max_payload > 0
        assert nc.current_server == ("127.0.0.1", nats_server.port)
        assert nc.all_servers[0]["port"] == nats_server.port
        nc.publish("stats.x", b"12345")
        nc.flush()
        assert nc.stats["out_msgs"] >= 1
        assert nc.new_inbox().startswith("_INBOX.")
        assert nc.ping(1) is True
    assert nc.status == "closed" and nc.is_closed
    assert no_threads_left(before)
    with sync.Client(nats_server.url) as nc2:  # a Client not connected yet connects in `with`
        assert nc2.is_connected
    assert nc2.is_closed


def test_options_are_the_asyncio_faces(nats_server):
    nc = sync.Client(nats_server.url, connect_timeout=1.5, request_timeout_ms=2500, pending_size=1024,
                     no_echo=True)
    o = nc.options
    assert (o.connect_timeout, o.request_timeout, o.reconnect_buf_size, o.echo) == (1500, 2500, 1024, False)
    with pytest.raises(tclnats_py.ErrInvalidArg, match="did you mean"):
        sync.Client(nats_server.url, conect_timeout=1)
    with pytest.raises(tclnats_py.ErrInvalidArg, match="implausible"):
        sync.Client(nats_server.url, connect_timeout=5000)


def test_connect_errors(nats_server):
    port = nats_server.port
    with pytest.raises(tclnats_py.NatsError) as e:
        sync.connect("nats://127.0.0.1:1", connect_timeout=0.5)
    assert e.value.code in ("ErrConnectionRefused", "ErrNoServers")
    with pytest.raises(tclnats_py.ErrNoServers):
        sync.connect(["nats://127.0.0.1:1", "nats://127.0.0.1:2"], connect_timeout=0.5)
    assert port == nats_server.port


def test_publish_subscribe_next_msg_headers_iterator(nats_server):
    with sync.connect(nats_server.url) as nc:
        sub = nc.subscribe("sc.*")
        nc.publish("sc.a", b"one", headers={"K": ["v1", "v2"]})
        nc.publish("sc.b", "two")
        nc.publish("sc.c")
        nc.flush()
        m = sub.next_msg(1)
        assert isinstance(m, sync.SyncMsg) and isinstance(m.headers, Headers)
        assert (m.subject, m.data, m.headers["K"], m.headers.get_all("K")) == ("sc.a", b"one", "v1", ["v1", "v2"])
        assert sub.next_msg(1).data == b"two"
        assert sub.next_msg(1).data == b""
        with pytest.raises(tclnats_py.ErrTimeout) as e:
            sub.next_msg(0.05)
        assert isinstance(e.value, TimeoutError)
        for i in range(3):
            nc.publish("sc.it", str(i))
        sub.unsubscribe(3 + sub.received)
        assert [x.data for x in sub] == [b"0", b"1", b"2"]  # ends with the subscription
        assert not sub.is_active
        with pytest.raises(tclnats_py.ErrBadSubscription):
            sub.next_msg(0.05)


def test_bad_arguments(nats_server):
    with sync.connect(nats_server.url) as nc:
        with pytest.raises(tclnats_py.ErrBadSubject):
            nc.publish("a b", b"")
        with pytest.raises(tclnats_py.ErrBadSubject):
            nc.subscribe("")
        with pytest.raises(tclnats_py.ErrBadQueueName):
            nc.subscribe("x", queue="a b")
        with pytest.raises(tclnats_py.ErrBadSubject):
            nc.request("bad subject", b"")
        with pytest.raises(tclnats_py.ErrInvalidArg):
            nc.publish("x", 12)  # type: ignore[arg-type]
        with pytest.raises(tclnats_py.ErrBadTimeout):
            nc.request("x", b"", timeout=-1)
        with pytest.raises(tclnats_py.ErrInvalidArg):
            nc.subscribe("x", cb="nope")  # type: ignore[arg-type]
        cbsub = nc.subscribe("x", cb=print)
        with pytest.raises(tclnats_py.ErrInvalidArg):
            cbsub.next_msg(0.1)


def test_request_refuses_what_its_fast_path_does_not_take(nats_server):
    """request() takes a plain number of seconds and a subject it checked
    before without a call: every other timeout and subject still goes
    through check_timeout and the engine's subject rule."""
    r = responder(nats_server.url, "fp.echo")
    try:
        with sync.connect(nats_server.url) as nc:
            for i in range(3):  # the later ones: a subject checked before
                assert nc.request("fp.echo", b"%d" % i, timeout=2).data == b"re:%d" % i
            assert nc.request("fp.echo", b"int", timeout=2).data == b"re:int"
            for bad in ("fp.*", "fp.>", "fp echo", "", "fp..echo"):
                with pytest.raises(tclnats_py.ErrBadSubject):
                    nc.request(bad, b"", timeout=1)
            for t in (True, float("nan"), float("inf"), -0.5, "1"):
                with pytest.raises(tclnats_py.ErrBadTimeout):
                    nc.request("fp.echo", b"", timeout=t)  # type: ignore[arg-type]
    finally:
        r.close()


def test_each_requests_own_timeout_after_the_same_one_before(nats_server):
    """A request keeps the last plain timeout it converted: the next one with
    that same object takes it, any other timeout its own (a short one times
    out after a long one, None is the request_timeout option, a bad one
    still raises)."""
    r = responder(nats_server.url, "lt.echo")
    try:
        with sync.connect(nats_server.url, request_timeout=0.3) as nc:
            silent = nc.subscribe("lt.silent")
            nc.flush()
            five = 5.0
            for _ in range(2):
                assert nc.request("lt.echo", b"a", timeout=five).data == b"re:a"
            for short in (0.2, 0.25, 0.2):
                t0 = time.monotonic()
                with pytest.raises(tclnats_py.ErrTimeout):
                    nc.request("lt.silent", b"", timeout=short)
                assert short - 0.05 < time.monotonic() - t0 < 2
            t0 = time.monotonic()
            with pytest.raises(tclnats_py.ErrTimeout):
                nc.request("lt.silent", b"", timeout=None)  # request_timeout: 300 ms
            assert 0.25 < time.monotonic() - t0 < 2
            assert nc.request("lt.echo", b"b", timeout=five).data == b"re:b"
            for bad in (-1.0, True, float("nan")):
                with pytest.raises(tclnats_py.ErrBadTimeout):
                    nc.request("lt.echo", b"", timeout=bad)
            assert silent.next_msg(1).reply
    finally:
        r.close()


def test_request_reply_no_responders_timeout(nats_server):
    r = responder(nats_server.url, "svc.echo")
    try:
        with sync.connect(nats_server.url) as nc:
            m = nc.request("svc.echo", b"hi", timeout=2)
            assert isinstance(m, sync.SyncMsg) and m.data == b"re:hi"
            m = nc.request_msg(tclnats_py.Msg("svc.echo", b"m"), timeout=2)
            assert m.data == b"re:m"
            with pytest.raises(tclnats_py.ErrNoResponders):
                nc.request("svc.nobody", b"", timeout=1)
            silent = nc.subscribe("svc.silent")
            nc.flush()
            t0 = time.monotonic()
            with pytest.raises(tclnats_py.ErrTimeout) as e:
                nc.request("svc.silent", b"", timeout=0.2)
            assert isinstance(e.value, TimeoutError) and 0.15 < time.monotonic() - t0 < 2
            assert silent.next_msg(1).reply
    finally:
        r.close()


def test_request_many(nats_server):
    rs = [responder(nats_server.url, "svc.many") for _ in range(3)]
    try:
        with sync.connect(nats_server.url) as nc:
            got = nc.request_many("svc.many", b"q", max_msgs=3, timeout=2)
            assert [m.data for m in got] == [b"re:q"] * 3
            got = nc.request_many("svc.many", b"q", max_msgs=10, timeout=0.3)
            assert len(got) == 3  # the timeout ends the gathering: what came
            with pytest.raises(tclnats_py.ErrNoResponders):
                nc.request_many("svc.none.here", b"", max_msgs=2, timeout=1)
            nc.subscribe("svc.silent.many")
            nc.flush()
            with pytest.raises(tclnats_py.ErrTimeout):
                nc.request_many("svc.silent.many", b"", max_msgs=2, timeout=0.2)
    finally:
        for r in rs:
            r.close()


def test_callback_subscription_runs_on_the_clients_thread(nats_server):
    seen = []
    done = threading.Event()
    errors = []

    def cb(m):
        seen.append((m.data, threading.current_thread().name))
        if m.data == b"boom":
            raise ValueError("boom")
        if len(seen) == 4:
            done.set()

    with sync.connect(nats_server.url, error_cb=errors.append) as nc:
        nc.subscribe("cbs.x", cb=cb)
        for p in (b"1", b"boom", b"3", b"4"):
            nc.publish("cbs.x", p)
        assert done.wait(5)
        assert [d for d, _ in seen] == [b"1", b"boom", b"3", b"4"]
        assert all(name == nc._io.name for _, name in seen)  # the client's keeper thread
        deadline = time.monotonic() + 2
        while not errors and time.monotonic() < deadline:
            time.sleep(0.01)
        assert isinstance(errors[0], ValueError)


def test_callback_may_call_the_client(nats_server):
    """A callback that requests through its own client: no deadlock (the lock is not held)."""
    r = responder(nats_server.url, "cbr.svc")
    out = []
    done = threading.Event()
    try:
        with sync.connect(nats_server.url) as nc:
            def cb(m):
                out.append(nc.request("cbr.svc", m.data, timeout=2).data)
                done.set()
            nc.subscribe("cbr.in", cb=cb)
            nc.publish("cbr.in", b"x")
            assert done.wait(5) and out == [b"re:x"]
    finally:
        r.close()


def test_queue_groups_and_max_msgs(nats_server):
    with sync.connect(nats_server.url) as nc:
        a = nc.subscribe("qg.x", queue="workers")
        b = nc.subscribe("qg.x", queue="workers")
        capped = nc.subscribe("qg.x", max_msgs=2)
        for i in range(20):
            nc.publish("qg.x", str(i))
        nc.flush()
        assert a.pending_msgs + b.pending_msgs == 20
        assert capped.pending_msgs == 2 and capped.interest_ended


def test_pending_limits_drop_and_report_slow_consumer(nats_server):
    errors = []
    with sync.connect(nats_server.url, error_cb=errors.append) as nc:
        sub = nc.subscribe("slow.x", pending_msgs_limit=5)
        for i in range(20):
            nc.publish("slow.x", str(i))
        nc.flush()
        assert sub.pending_msgs == 5 and sub.dropped == 15
        deadline = time.monotonic() + 2
        while not errors and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [e.code for e in errors] == ["ErrSlowConsumer"]


def test_drain_handles_what_is_on_its_way(nats_server):
    got = []
    with sync.connect(nats_server.url) as pub:
        nc = sync.connect(nats_server.url)
        nc.subscribe("dr.x", cb=lambda m: (time.sleep(0.001), got.append(m.data)))
        nc.flush()
        for i in range(100):
            pub.publish("dr.x", str(i))
        pub.flush()
        nc.drain(5)
        assert nc.is_closed and len(got) == 100


def test_subscription_drain_and_discard(nats_server):
    with sync.connect(nats_server.url) as nc:
        sub = nc.subscribe("sd.x")
        for i in range(5):
            nc.publish("sd.x", str(i))
        nc.flush()
        sub.discard_pending()
        assert sub.pending_msgs == 0
        nc.publish("sd.x", b"last")
        sub.drain(2)
        assert sub.next_msg(0.5).data == b"last" and not sub.is_active


def test_status_hooks_and_close_from_another_thread(fresh_nats_server):
    events = []
    nc = sync.connect(fresh_nats_server.url, status_cb=events.append, closed_cb=lambda: events.append("closed_cb"),
                      disconnected_cb=lambda: events.append("disconnected_cb"))
    sub = nc.subscribe("cl.x")
    t = threading.Thread(target=lambda: (time.sleep(0.2), nc.close()))
    t.start()
    with pytest.raises(tclnats_py.ErrBadSubscription):
        sub.next_msg(5)  # the close from the other thread ends the wait
    t.join(5)
    deadline = time.monotonic() + 2
    while "closed_cb" not in events and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "closed" in events and "closed_cb" in events and "disconnected_cb" in events
    with pytest.raises(tclnats_py.ErrConnectionClosed):
        nc.publish("cl.x", b"")
    nc.close()  # twice: nothing


def test_reconnect_resubscribes_and_buffers(fresh_nats_server):
    events = []
    with sync.connect(fresh_nats_server.url, reconnect_time_wait=0.1, reconnected_cb=lambda: events.append("re"),
                      max_reconnect_attempts=100) as nc:
        sub = nc.subscribe("rc.x")
        nc.flush()
        fresh_nats_server.stop()
        deadline = time.monotonic() + 5
        while nc.is_connected and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not nc.is_connected
        nc.publish("rc.x", b"buffered")  # held in the reconnect buffer
        fresh_nats_server.start()
        assert sub.next_msg(10).data == b"buffered"
        assert nc.is_connected
        deadline = time.monotonic() + 2
        while not events and time.monotonic() < deadline:
            time.sleep(0.01)
        assert events == ["re"]


def test_reconnect_buffer_bound(fresh_nats_server):
    with sync.connect(fresh_nats_server.url, reconnect_time_wait=5, pending_size=1000) as nc:
        fresh_nats_server.stop()
        deadline = time.monotonic() + 5
        while nc.is_connected and time.monotonic() < deadline:
            time.sleep(0.01)
        nc.publish("rb.x", b"x" * 500)
        with pytest.raises(tclnats_py.ErrReconnectBufExceeded):
            nc.publish("rb.x", b"x" * 600)


def test_allow_reconnect_false_closes(fresh_nats_server):
    nc = sync.connect(fresh_nats_server.url, allow_reconnect=False)
    fresh_nats_server.stop()
    deadline = time.monotonic() + 5
    while not nc.is_closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert nc.is_closed
    nc.close()


def test_respond_without_reply_and_publish_msg(nats_server):
    with sync.connect(nats_server.url) as nc:
        sub = nc.subscribe("pm.x")
        nc.publish_msg(tclnats_py.Msg("pm.x", b"d", headers={"H": ["1"]}))
        m = sub.next_msg(1)
        assert m.data == b"d" and m.header("H") == "1"
        with pytest.raises(tclnats_py.ErrInvalidArg):
            m.respond(b"x")


def test_a_publisher_waits_for_a_paused_server(fresh_nats_server):
    """Backpressure: with the server stopped (SIGSTOP) a fast publisher
    blocks once the socket's buffers are full, the client holding at most a
    chunk of it; after SIGCONT everything arrives."""
    import os
    import signal
    srv = fresh_nats_server
    payload = b"x" * 1024
    total = 20_000  # 20 MB: more than the kernel's socket buffers hold
    with sync.connect(srv.url, flush_timeout=30) as nc, sync.connect(srv.url) as rx:
        sub = rx.subscribe("bp.x", pending_msgs_limit=-1, pending_bytes_limit=-1)
        rx.flush()
        sent = [0]
        peak = [0]

        def publish():
            for _ in range(total):
                nc.publish("bp.x", payload)
                sent[0] += 1
                peak[0] = max(peak[0], nc.pending_data_size)
        os.kill(srv.pid, signal.SIGSTOP)
        try:
            t = threading.Thread(target=publish)
            t.start()
            time.sleep(1.0)
            stalled_at = sent[0]
            time.sleep(0.5)
            assert sent[0] == stalled_at < total  # waiting for the socket, not queueing without end
        finally:
            os.kill(srv.pid, signal.SIGCONT)
        t.join(60)
        assert sent[0] == total
        assert peak[0] <= 64 * 1024 + len(payload) + 64
        nc.flush(10)
        got = 0
        while got < total:
            sub.next_msg(10)
            got += 1


def test_a_write_past_flush_timeout_drops_the_connection(fresh_nats_server):
    """A server that takes nothing (SIGSTOP) for longer than flush_timeout:
    the write that waits for it fails, the connection is dropped (the
    engine reconnects) and the publisher is not held any longer."""
    import os
    import signal
    srv = fresh_nats_server
    gone = threading.Event()
    nc = sync.connect(srv.url, flush_timeout=0.5, connect_timeout=0.5, reconnect_time_wait=0.2,
                      disconnected_cb=gone.set)
    stopped = []

    def flood():
        try:
            for _ in range(40_000):  # 40 MB: more than the socket buffers and the reconnect buffer
                nc.publish("ft.x", b"x" * 1024)
        except tclnats_py.NatsError as e:  # the reconnect buffer full while disconnected
            stopped.append(e)
    try:
        os.kill(srv.pid, signal.SIGSTOP)
        th = threading.Thread(target=flood, daemon=True)
        th.start()
        assert gone.wait(20), "the connection was never dropped"
        th.join(20)
        assert not th.is_alive(), "the publisher is still held"
    finally:
        os.kill(srv.pid, signal.SIGCONT)
        nc.close()
