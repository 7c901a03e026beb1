"""The asyncio face's bounds against a real nats-server: the reconnect
buffer, waiting for a socket that takes nothing, bounded async JetStream
publishing, the auth-error abort and the options' units."""

import asyncio
import os
import signal
import time

import pytest

import tclnats_py
from tclnats_py.errors import (ErrAuthorization, ErrInvalidArg, ErrOutboundBufferLimit, ErrReconnectBufExceeded,
                               ErrTimeout, ErrTooManyStalledMsgs)
from tclnats_py.testing.server import NatsServer, free_port


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


class _Paused:
    """SIGSTOP a server for the block (SIGCONT after, whatever happens)."""

    def __init__(self, srv):
        self.srv = srv

    def __enter__(self):
        os.kill(self.srv.pid, signal.SIGSTOP)
        return self

    def __exit__(self, *exc):
        os.kill(self.srv.pid, signal.SIGCONT)


def test_publishing_through_an_outage_is_bounded_and_loses_nothing_accepted(fresh_server):
    srv = fresh_server

    async def go():
        sub_c = None
        c = await tclnats_py.connect(srv.url, reconnect_buf_size=64 * 1024, max_reconnect_attempts=-1,
                                     reconnect_time_wait=0.1)
        srv.kill()
        while c.status == "connected":
            await asyncio.sleep(0.01)
        accepted, refused = [], 0
        for i in range(1000):
            try:
                c.publish("out.x", b"%06d" % i + b"x" * 1018)
                accepted.append(i)
            except ErrReconnectBufExceeded:
                refused += 1
        assert 0 < len(accepted) <= 64 and refused == 1000 - len(accepted)
        assert c.pending_data_size <= 64 * 1024
        srv.start()
        sub_c = await tclnats_py.connect(srv.url)
        got = []
        sub = await sub_c.subscribe("out.x", cb=lambda m: got.append(int(m.data[:6])))
        await sub_c.flush()
        # the subscription is in place before the client comes back (it retries every 100 ms)
        while c.status != "connected":
            await asyncio.sleep(0.01)
        await c.flush()
        await sub_c.flush()
        await asyncio.sleep(0.2)
        assert got == accepted
        await sub.unsubscribe()
        await c.close()
        await sub_c.close()
    run(go())


def test_pending_size_is_the_reconnect_buffer_under_its_nats_py_name(nats_server):
    async def go():
        c = tclnats_py.Client(nats_server.url, pending_size=1234)
        assert c.options.reconnect_buf_size == 1234
        with pytest.raises(ErrInvalidArg):
            tclnats_py.Client(nats_server.url, flush_timeout=-1)
        with pytest.raises(ErrInvalidArg):
            tclnats_py.Client(nats_server.url, reconnect_jitter=float("nan"))
        c2 = tclnats_py.Client(nats_server.url, flush_timeout=2.5, reconnect_jitter=0.1, reconnect_jitter_tls=1)
        o = c2.options
        assert (o.flush_timeout, o.reconnect_jitter, o.reconnect_jitter_tls) == (2500, 100, 1000)
    run(go())


def test_a_publisher_waits_for_a_stalled_socket_then_times_out(fresh_server):
    srv = fresh_server

    async def go():
        c = await tclnats_py.connect(srv.url, write_buf_size=256 * 1024, flush_timeout=1.0)
        payload = b"x" * 1024
        sent = 0
        with _Paused(srv):
            t0 = time.monotonic()
            with pytest.raises(ErrTimeout) as ei:
                for _ in range(1_000_000):
                    await c.publish("stall.x", payload)
                    sent += 1
            waited = time.monotonic() - t0
            assert "flush_timeout" in str(ei.value)
            # the kernel's buffers take some megabytes; ours hold about write_buf_size
            assert c.pending_data_size <= 2 * 256 * 1024
            assert sent < 200_000 and waited < 5
            # a publisher that does not await fails once 8 x write_buf_size wait
            with pytest.raises(ErrOutboundBufferLimit):
                for _ in range(10_000):
                    c.publish("stall.x", payload)
        await c.flush(10)  # the server is back: everything accepted goes out
        assert c.status == "connected"
        await c.close()
    run(go())


def test_async_publish_stalls_then_fails_and_accounts_for_everything(tmp_path):
    srv = NatsServer(jetstream=True, store_dir=str(tmp_path / "js"), port=free_port())
    srv.start()
    try:
        async def go():
            c = await tclnats_py.connect(srv.url)
            # acks time out long after the pause (a busy machine must not free room by timeouts)
            js = c.jetstream(timeout=10.0, publish_async_max_pending=100, publish_async_stall_wait=0.3)
            await js.create_stream("STALL", subjects=["stall.*"], storage="memory")
            futs, stalled = [], 0
            with _Paused(srv):
                t0 = time.monotonic()
                for i in range(300):
                    try:
                        futs.append(await js.publish_async("stall.x", b"m%d" % i))
                    except ErrTooManyStalledMsgs:
                        stalled += 1
                    assert js.publish_async_pending <= 100
                    if stalled >= 3:
                        break
                assert time.monotonic() - t0 < 8  # three stalls of 0.3 s: nothing waits longer (slack for a busy machine)
            assert len(futs) == 100 and stalled == 3
            await js.publish_async_complete(10)
            outcomes = [f.exception().code if f.exception() else "ack" for f in futs]
            # each accepted publish has its ack or its error, and the server
            # stored every one of them (a stall refuses, it never drops)
            assert len(outcomes) == 100 and set(outcomes) <= {"ack", "ErrTimeout"}
            seqs = [f.result().seq for f in futs if not f.exception()]
            assert len(set(seqs)) == len(seqs) and seqs, outcomes
            assert (await js.stream_info("STALL")).state["messages"] == 100
            fut = await js.publish_async("stall.x", b"after", wait_stall=1)
            assert (await fut).seq == 101
            await c.close()
        run(go())
    finally:
        srv.cleanup()


def test_the_same_auth_refusal_twice_closes_the_connection():
    port = free_port()
    srv = NatsServer(port=port, config='authorization { user: "u", password: "p1" }\n')
    srv.start()
    try:
        async def go():
            errors = []
            c = await tclnats_py.connect(f"nats://u:p1@127.0.0.1:{port}", reconnect_time_wait=0.05,
                                         max_reconnect_attempts=-1, error_cb=errors.append)
            srv.stop()
            srv.config = 'authorization { user: "u", password: "p2" }\n'  # the command writes it anew
            srv.start()
            t0 = time.monotonic()
            while c.status != "closed" and time.monotonic() - t0 < 10:
                await asyncio.sleep(0.05)
            assert c.status == "closed"
            assert isinstance(c.last_error, ErrAuthorization)
            assert sum(isinstance(e, ErrAuthorization) for e in errors) == 2
        run(go())
    finally:
        srv.cleanup()
