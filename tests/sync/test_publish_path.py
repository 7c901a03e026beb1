"""The blocking client's publish path (sync/client.py publish, the C
SyncPub of _natsproto, SyncIO's writes with the lock released): many
threads at once, with requests in between, through a reconnect, against
a paused server, the engine's checks and counts, the accelerator off."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request

import pytest

import tclnats_py
from tclnats_py import sync
from tclnats_py.engine.connection import CONNECTED, Engine
from tclnats_py.engine.options import Options
from tclnats_py.engine.protocol import compiled, encode_pub, pub_head
from tclnats_py.sync.threads import WRITE_CHUNK
from tclnats_py.testing.server import NatsServer

THREADS, EACH = 8, 3000


@pytest.fixture(scope="module")
def monitored():
    with NatsServer(monitor=True) as srv:
        yield srv


def server_received(srv, name):
    """The messages the server has received from the connection ``name`` (its monitoring port)."""
    with urllib.request.urlopen(f"{srv.monitor_url}/connz?limit=1000", timeout=10) as r:
        conns = [c for c in json.load(r).get("connections") or [] if c.get("name") == name]
    return sum(c.get("in_msgs", 0) for c in conns)


def payload(i, n):
    """Thread i's message n: its numbers, then a length that varies (0 to 3 KiB of filler)."""
    head = f"{i}.{n}.".encode()
    return head + bytes([65 + (n % 26)]) * ((n * 131 + i * 17) % 3072)


def check_payload(data):
    i, n, _ = data.split(b".", 2)
    assert data == payload(int(i), int(n)), f"message {data[:20]!r}... came changed"
    return int(i), int(n)


def test_threads_publishing_at_once_reach_the_server_whole(monitored):
    """8 threads publish at once on one client (plain, with a reply, with
    headers: the fast path and the engine's, payloads of 0 to 3 KiB): the
    server counts every message, a subscriber gets each whole (no frames
    interleaved) and each thread's in the order it sent them."""
    name = f"pp-many-{os.getpid()}"
    with sync.connect(monitored.url, name=name) as nc, sync.connect(monitored.url) as rx:
        sub = rx.subscribe("pp.many.*", pending_msgs_limit=-1, pending_bytes_limit=-1)
        rx.flush()
        failures = []

        def publisher(i):
            try:
                for n in range(EACH):
                    if n % 50 == 7:
                        nc.publish(f"pp.many.{i}", payload(i, n), headers={"N": str(n)})
                    elif n % 10 == 3:
                        nc.publish(f"pp.many.{i}", payload(i, n), reply=f"pp.reply.{i}")
                    else:
                        nc.publish(f"pp.many.{i}", payload(i, n))
            except BaseException as e:  # reported below
                failures.append(e)
        threads = [threading.Thread(target=publisher, args=(i,)) for i in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not failures
        nc.flush(10)
        assert server_received(monitored, name) == THREADS * EACH
        assert nc.stats["out_msgs"] == THREADS * EACH
        last = [-1] * THREADS
        for _ in range(THREADS * EACH):
            m = sub.next_msg(10)
            i, n = check_payload(m.data)
            assert n == last[i] + 1, f"thread {i}: {n} after {last[i]}"
            last[i] = n
            assert m.reply == (f"pp.reply.{i}" if n % 10 == 3 and n % 50 != 7 else None)
            assert (m.headers is not None) == (n % 50 == 7)


def test_publishes_interleaved_with_requests_keep_their_order(nats_server):
    """Publishes (fast path, first of a subject, with headers), requests and
    flushes from one thread: a subscriber to all of them sees them in the
    order they were made."""
    with sync.connect(nats_server.url) as nc, sync.connect(nats_server.url) as other:
        other.subscribe("po.svc", cb=lambda m: m.respond(b"ok"))
        watch = other.subscribe("po.>", pending_msgs_limit=-1, pending_bytes_limit=-1)
        other.flush()
        sent = []
        for n in range(3000):
            data = str(n).encode()
            if n % 100 == 0:
                subject = f"po.new.{n}"  # a subject's first publish: the engine's path
                nc.publish(subject, data)
            elif n % 37 == 0:
                subject = "po.svc"
                assert nc.request(subject, data, timeout=5).data == b"ok"
            elif n % 41 == 0:
                subject = "po.h"
                nc.publish(subject, data, headers={"K": "v"})
            else:
                subject = "po.x"
                nc.publish(subject, data)
                if n % 500 == 1:
                    nc.flush(5)
            sent.append((subject, data))
        nc.flush(5)
        seen = [(m.subject, m.data) for m in (watch.next_msg(5) for _ in sent)]
        assert seen == sent


def test_publish_during_a_reconnect(fresh_nats_server):
    """A thread publishes on while the server restarts: each publish is
    queued (the reconnect buffer while disconnected) or refused with
    ErrReconnectBufExceeded; what arrives comes in order, without
    duplicates, and what was published after the reconnect all arrives."""
    srv = fresh_nats_server
    with sync.connect(srv.url, reconnect_time_wait=0.1, max_reconnect_attempts=-1,
                      pending_size=64 * 1024) as nc:
        sub = nc.subscribe("pr.x", pending_msgs_limit=-1, pending_bytes_limit=-1)
        nc.flush()
        stop = threading.Event()
        refused, failures = [], []
        counter = [0]

        def publisher():
            n = 0
            while not stop.is_set():
                try:
                    nc.publish("pr.x", b"%d" % n + b"." * 200)
                except tclnats_py.ErrReconnectBufExceeded:
                    refused.append(n)
                    time.sleep(0.001)
                except BaseException as e:  # reported below
                    failures.append(e)
                    return
                n += 1
                counter[0] = n
        t = threading.Thread(target=publisher)
        t.start()
        time.sleep(0.3)
        srv.stop()
        deadline = time.monotonic() + 5
        while nc.is_connected and time.monotonic() < deadline:
            time.sleep(0.005)
        assert not nc.is_connected
        time.sleep(0.3)
        srv.start()
        deadline = time.monotonic() + 10
        while not nc.is_connected and time.monotonic() < deadline:
            time.sleep(0.01)
        assert nc.is_connected
        after = counter[0]
        time.sleep(0.3)
        stop.set()
        t.join(10)
        assert not failures
        assert refused, "the reconnect buffer never filled"
        total = counter[0]
        nc.flush(10)
        got = []
        while True:
            try:
                got.append(int(sub.next_msg(1).data.split(b".")[0]))
            except tclnats_py.ErrTimeout:
                break
        assert got == sorted(set(got))
        assert not set(got) & set(refused)
        assert got[-1] == total - 1
        assert set(range(after + 1, total)) <= set(got)


def test_the_fast_path_keeps_the_engines_checks(fresh_nats_server):
    """A subject the fast path knows still gets the engine's answers: past
    max_payload, a bad reply, not connected (the reconnect buffer's bound),
    closed; a str, bytearray or memoryview payload goes through too."""
    with sync.connect(fresh_nats_server.url, reconnect_time_wait=5, pending_size=1000) as nc:
        sub = nc.subscribe("pf.x")
        for _ in range(3):
            nc.publish("pf.x", b"warm")
        big = nc.max_payload
        with pytest.raises(tclnats_py.ErrMaxPayload):
            nc.publish("pf.x", b"x" * (big + 1))
        with pytest.raises(tclnats_py.ErrBadSubject):
            nc.publish("pf.x", b"x", reply="bad..reply")
        with pytest.raises(tclnats_py.ErrBadSubject):
            nc.publish("pf..x", b"x")
        nc.publish("pf.x", "text")
        nc.publish("pf.x", bytearray(b"ba"))
        nc.publish("pf.x", memoryview(b"mv"))
        nc.publish("pf.x", b"x" * big)
        nc.flush()
        assert [sub.next_msg(1).data for _ in range(7)] == [b"warm"] * 3 + [b"text", b"ba", b"mv", b"x" * big]
        fresh_nats_server.stop()
        deadline = time.monotonic() + 5
        while nc.is_connected and time.monotonic() < deadline:
            time.sleep(0.01)
        nc.publish("pf.x", b"x" * 500)
        with pytest.raises(tclnats_py.ErrReconnectBufExceeded):
            nc.publish("pf.x", b"x" * 600)
    with pytest.raises(tclnats_py.ErrConnectionClosed):
        nc.publish("pf.x", b"x")


def test_stats_count_what_the_fast_path_sent(nats_server):
    with sync.connect(nats_server.url) as nc:
        before = nc.stats
        for _ in range(5000):
            nc.publish("ps.x", b"x" * 100)
        nc.flush()
        after = nc.stats
    frame = len(encode_pub("ps.x", None, b"x" * 100))
    assert after["out_msgs"] - before["out_msgs"] == 5000
    assert after["out_bytes"] - before["out_bytes"] >= 5000 * frame


def test_threads_against_a_paused_server_stay_bounded(fresh_nats_server):
    """Backpressure with 4 publishers: while the server takes nothing
    (SIGSTOP) they wait, the client holding at most a write in flight and
    a chunk queued per thread; after SIGCONT every message arrives."""
    srv = fresh_nats_server
    size, each, threads = 1024, 5000, 4
    with sync.connect(srv.url, flush_timeout=30) as nc, sync.connect(srv.url) as rx:
        sub = rx.subscribe("pb.*", pending_msgs_limit=-1, pending_bytes_limit=-1)
        rx.flush()
        sent = [0] * threads
        peak = [0]

        def publish(i):
            for _ in range(each):
                nc.publish(f"pb.{i}", b"x" * size)
                sent[i] += 1
                peak[0] = max(peak[0], nc.pending_data_size)
        os.kill(srv.pid, signal.SIGSTOP)
        try:
            ts = [threading.Thread(target=publish, args=(i,)) for i in range(threads)]
            for t in ts:
                t.start()
            time.sleep(1.0)
            stalled_at = sum(sent)
            time.sleep(0.5)
            assert sum(sent) == stalled_at < threads * each
        finally:
            os.kill(srv.pid, signal.SIGCONT)
        for t in ts:
            t.join(60)
        assert sum(sent) == threads * each
        assert peak[0] <= WRITE_CHUNK + threads * (size + 64)
        nc.flush(10)
        for _ in range(threads * each):
            sub.next_msg(10)


def test_close_while_threads_publish(nats_server):
    """close() from the main thread while 4 threads publish: each ends with
    ErrConnectionClosed (or its loop), none hangs."""
    nc = sync.connect(nats_server.url)
    ends = []

    def publish(i):
        try:
            while True:
                nc.publish(f"pc.{i}", b"x" * 300)
        except tclnats_py.ErrConnectionClosed:
            ends.append(i)
    ts = [threading.Thread(target=publish, args=(i,), daemon=True) for i in range(4)]
    for t in ts:
        t.start()
    time.sleep(0.3)
    nc.close()
    for t in ts:
        t.join(10)
    assert sorted(ends) == [0, 1, 2, 3]


@pytest.mark.skipif(compiled("SyncPub") is None, reason="the accelerator is not built")
def test_syncpub_queues_what_the_python_fast_path_queues():
    """SyncPub.publish and Client._py_fast_pub on two engines (no server):
    the same answers, the same bytes queued, the same counts, work() called
    (the lock held) where _published would be."""
    heads = {"a.b": pub_head("a.b", 3)}
    lock = threading.Lock()
    engines, calls = [], [[], []]
    for _ in range(2):
        eng = Engine(Options())
        eng.status = CONNECTED
        engines.append(eng)
    pub = compiled("SyncPub")(engines[0], lock, heads, CONNECTED, WRITE_CHUNK,
                              lambda: calls[0].append(lock.locked()))
    pub.max_payload = 40_000

    class Face:
        _pub_heads = heads
        _pub_max = 40_000
        _engine = engines[1]
        _io = type("IO", (), {"lock": lock})()

        def _published(self, io, eng):
            calls[1].append(lock.locked())
    py_pub = sync.Client._py_fast_pub.__get__(Face())
    cases = [("a.b", b"xyz", None), ("a.b", b"", None), ("a.b", b"x" * 40_001, None), ("c.d", b"1", None),
             ("a.b", b"r", "r.s"), ("a.b", b"r", "r..s"), ("a b", b"1", None), ("a.b", "str", None),
             ("\u00e9.x", b"1", None)] + [("a.b", b"y" * 30_000, None), ("a.b", b"z", None)] * 3
    answers = []
    for case in cases:
        answers.append(pub.publish(*case))
        assert py_pub(*case) == answers[-1], case
        assert calls[0] == calls[1], case
    assert False in answers and None in answers
    assert calls[0] == [True] * 3  # the first (its Flush), then each publish past WRITE_CHUNK queued
    assert list(engines[0]._out) == list(engines[1]._out)
    assert engines[0]._out_size == engines[1]._out_size
    assert engines[0].stats == engines[1].stats
    assert pub.pubs == engines[0].stats["out_msgs"]
    engines[0].status = "reconnecting"
    assert pub.publish("a.b", b"1") is None


def test_the_pure_python_path_with_the_accelerator_off(nats_server):
    """TCLNATS_PY_ACCEL=0: publish takes the Python fast path; the order of
    fast and general publishes holds there too."""
    program = textwrap.dedent(f"""
        from tclnats_py import sync
        with sync.connect({nats_server.url!r}) as nc:
            assert nc._sync_pub is None and nc._fast_pub == nc._py_fast_pub
            sub = nc.subscribe("pa.>")
            sent = []
            for n in range(2000):
                subject = "pa.h" if n % 7 == 0 else "pa.x"
                nc.publish(subject, b"%d" % n, headers={{"K": "v"}} if n % 7 == 0 else None)
                sent.append((subject, b"%d" % n))
            nc.flush()
            assert [(m.subject, m.data) for m in (sub.next_msg(5) for _ in sent)] == sent
            print("ok")
    """)
    env = dict(os.environ, TCLNATS_PY_ACCEL="0")
    out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
