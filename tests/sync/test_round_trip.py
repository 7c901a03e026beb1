"""A lone caller's request round trip (sync/threads.py SyncIO.round_trip):
the reply read by one call of natsproto.c read_reply and ended by the
engine, and its edges: what the server sends besides the reply in the same
read, a reply in many reads, a PING first, timeouts, no responders, a
connection that ends mid-reply, another thread's request meanwhile, and
the pure-Python path (TCLNATS_PY_ACCEL=0).  The edges of the byte stream
come from a proxy between the client and a real server."""

import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter

import pytest

import tclnats_py
from tclnats_py import sync
from tclnats_py.sync import threads

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or threads._read_reply is None,
                                reason="the round trip's C read: Linux, the accelerator built")


class Proxy:
    """Forwards one client at a time to ``port``: client -> server bytes as
    they come (kept in ``up``), server -> client bytes through ``down(data,
    send, close)`` (default: sent as they are)."""

    def __init__(self, port: int):
        self.port = port
        self.down = lambda data, send, close: send(data)
        self.up = bytearray()
        self.slow_up = 0.0  # seconds slept after each client -> server read of at most 16 KiB
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"nats://127.0.0.1:{self.listener.getsockname()[1]}"
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            s = socket.create_connection(("127.0.0.1", self.port))
            self.conns += [c, s]
            threading.Thread(target=self._pump, args=(c, s, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(s, c, False), daemon=True).start()

    def _pump(self, src, dst, up):
        def close():
            for s in (src, dst):
                s.shutdown(socket.SHUT_RDWR)
        while True:
            try:
                data = src.recv(16384 if up and self.slow_up else 65536)
            except OSError:
                return
            if not data:
                return
            try:
                if up:
                    if self.slow_up:
                        time.sleep(self.slow_up)
                    else:
                        self.up += data
                    dst.sendall(data)
                else:
                    self.down(data, dst.sendall, close)
            except OSError:
                return

    def close(self):
        self.listener.close()
        for s in self.conns:
            s.close()


@pytest.fixture
def proxy(nats_server):
    p = Proxy(nats_server.port)
    yield p
    p.close()


@pytest.fixture(scope="module")
def echo(nats_server):
    """An echo responder on rt.echo (its own client)."""
    r = sync.connect(nats_server.url)
    r.subscribe("rt.echo", cb=lambda m: m.respond(m.data))
    r.flush()
    yield "rt.echo"
    r.close()


@pytest.fixture
def reads(monkeypatch):
    """What each read_reply call returned, by kind: "reply", "bytes", "nothing", "end"."""
    kinds: Counter = Counter()
    real = threads._read_reply

    def read_reply(*args):
        out = real(*args)
        kinds["reply" if type(out) is tuple else "bytes" if out else "nothing" if out is None else "end"] += 1
        return out
    monkeypatch.setattr(threads, "_read_reply", read_reply)
    return kinds


def test_a_lone_request_is_one_read_and_counts_as_the_usual_one(nats_server, echo, reads):
    with sync.connect(nats_server.url) as fast, sync.connect(nats_server.url) as usual:
        usual._io.direct = False
        for nc in (fast, usual):
            nc.request(echo, b"first", timeout=5)  # (the request inbox's SUB)
        start = {nc: dict(nc.stats) for nc in (fast, usual)}
        reads.clear()
        for nc in (fast, usual):
            for i in range(20):
                m = nc.request(echo, b"%d" % i, timeout=5)
                assert (m.data, m.reply, m.headers) == (b"%d" % i, None, None)
                assert isinstance(m, sync.SyncMsg) and m.subject.startswith(nc.engine.request_inbox[1])
        assert reads == {"reply": 20}
        deltas = [{k: nc.stats[k] - start[nc][k] for k in start[nc]} for nc in (fast, usual)]
        assert deltas[0] == deltas[1] and deltas[0]["in_msgs"] == deltas[0]["out_msgs"] == 20
        assert not fast.engine.requests


def test_a_reply_read_with_other_messages(nats_server, echo, proxy, reads):
    """A message for a subscription and the reply in one read: both handed to the engine."""
    held = bytearray()

    def hold_until_the_reply(data, send, close):
        held.extend(data)
        if b"MSG _INBOX" in held or b"rt.other" not in held:
            send(bytes(held))
            held.clear()
    with sync.connect(proxy.url) as nc, sync.connect(nats_server.url) as peer:
        sub = nc.subscribe("rt.other")
        nc.request(echo, b"first", timeout=5)
        proxy.down = hold_until_the_reply
        peer.publish("rt.other", b"before the reply")
        peer.flush()
        reads.clear()
        assert nc.request(echo, b"second", timeout=5).data == b"second"
        assert sub.next_msg(5).data == b"before the reply"
        assert reads["bytes"] == 1 and reads["reply"] == 0


def test_a_reply_in_many_reads(nats_server, echo, proxy, reads):
    with sync.connect(proxy.url) as nc:
        nc.request(echo, b"first", timeout=5)
        in_bytes = nc.stats["in_bytes"]

        def trickle(data, send, close):
            for i in range(0, len(data), 7):
                send(data[i:i + 7])
                time.sleep(0.002)
        proxy.down = trickle
        payload = b"y" * 300
        reads.clear()
        assert nc.request(echo, payload, timeout=5).data == payload
        assert reads == {"reply": 1}  # read whole by the one call
        assert nc.stats["in_bytes"] > in_bytes + 300


def test_a_ping_before_the_reply_is_answered(nats_server, echo, proxy, reads):
    def ping_first(data, send, close):
        send((b"PING\r\n" + data) if data.startswith(b"MSG _INBOX") else data)
    with sync.connect(proxy.url) as nc:
        nc.request(echo, b"first", timeout=5)
        proxy.down = ping_first
        proxy.up.clear()
        reads.clear()
        assert nc.request(echo, b"second", timeout=5).data == b"second"
        assert reads["bytes"] == 1
        nc.flush(5)
        assert b"PONG\r\n" in proxy.up


def test_a_request_times_out_and_the_client_goes_on(nats_server, echo, reads):
    silent = sync.connect(nats_server.url)
    silent.subscribe("rt.silent")
    silent.flush()
    with sync.connect(nats_server.url) as nc:
        nc.request(echo, b"first", timeout=5)
        reads.clear()
        t0 = time.monotonic()
        with pytest.raises(tclnats_py.ErrTimeout):
            nc.request("rt.silent", b"", timeout=0.3)
        assert 0.25 < time.monotonic() - t0 < 2
        assert reads["nothing"] == 1
        with nc.lock:
            assert not nc.engine.requests
        assert nc.request(echo, b"after", timeout=5).data == b"after"
    silent.close()


def test_no_responders_come_as_one_read(nats_server, echo, reads):
    with sync.connect(nats_server.url) as nc:
        nc.request(echo, b"first", timeout=5)
        reads.clear()
        with pytest.raises(tclnats_py.ErrNoResponders):
            nc.request("rt.nobody", b"", timeout=5)
        assert reads == {"reply": 1}
        with nc.lock:
            assert not nc.engine.requests


def test_a_connection_that_ends_mid_reply(nats_server, echo, proxy):
    """The server's side closes with half of the reply sent: the same error
    either way (the round trip's read or wait()'s), then the client reconnects."""
    assert ended_mid_reply(echo, proxy, True) == ended_mid_reply(echo, proxy, False)


def ended_mid_reply(echo, proxy, direct):
    cut: list = []

    def half_then_close(data, send, close):
        if data.startswith(b"MSG _INBOX") and not cut:
            cut.append(data)
            send(data[:len(data) // 2])
            close()
        else:
            send(data)
    proxy.down = lambda data, send, close: send(data)
    with sync.connect(proxy.url, reconnect_time_wait=0.05) as nc:
        nc._io.direct = direct
        nc.request(echo, b"first", timeout=5)
        proxy.down = half_then_close
        with pytest.raises(tclnats_py.NatsError) as e:
            nc.request(echo, b"second", timeout=2)
        assert e.value.code in ("ErrTimeout", "ErrConnectionClosed") and cut
        deadline = time.monotonic() + 10
        while not nc.is_connected:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert nc.request(echo, b"third", timeout=5).data == b"third"
        return e.value.code


def test_another_threads_request_while_one_reads(nats_server, echo, reads):
    """A request waiting for a slow reply reads the socket; a second thread's
    requests meanwhile are answered through it (the engine gets the bytes)."""
    slow = sync.connect(nats_server.url)
    slow.subscribe("rt.slow", cb=lambda m: (time.sleep(0.6), m.respond(m.data)))
    slow.flush()
    with sync.connect(nats_server.url) as nc:
        nc.request(echo, b"first", timeout=5)
        got = []
        t = threading.Thread(target=lambda: got.append(nc.request("rt.slow", b"slow", timeout=5).data))
        t.start()
        deadline = time.monotonic() + 5
        while not nc._io.leading:
            assert time.monotonic() < deadline
            time.sleep(0.001)
        t0 = time.monotonic()
        for i in range(5):
            assert nc.request(echo, b"%d" % i, timeout=5).data == b"%d" % i
        assert time.monotonic() - t0 < 0.5 and not got  # not after the slow reply
        t.join(10)
        assert got == [b"slow"]
        with nc.lock:
            assert not nc.engine.requests
    slow.close()


def test_publishes_queued_before_a_request_go_first(nats_server, echo):
    seen = []
    watcher = sync.connect(nats_server.url)
    watcher.subscribe("rt.order.>", cb=lambda m: seen.append(m.subject))
    watcher.flush()
    with sync.connect(nats_server.url) as nc:
        nc.request(echo, b"first", timeout=5)
        for i in range(100):
            nc.publish("rt.order.pub", b"%d" % i)
        nc.subscribe("rt.order.req", cb=None)
        watcher.subscribe("rt.order.req", cb=lambda m: m.respond(b"ok"))
        watcher.flush()
        assert nc.request("rt.order.req", b"", timeout=5).data == b"ok"
    watcher.flush()
    watcher.close()
    assert seen[:100] == ["rt.order.pub"] * 100 and "rt.order.req" in seen[100:]


def test_without_the_accelerator_the_python_path_answers(nats_server, echo):
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import tclnats_py
        from tclnats_py import sync
        from tclnats_py.engine import protocol
        assert not protocol.ACCELERATED
        nc = sync.connect({nats_server.url!r})
        assert not nc._io.direct
        print(nc.request({echo!r}, b"plain", timeout=5).data.decode())
        try:
            nc.request("rt.nobody", b"", timeout=5)
        except tclnats_py.ErrNoResponders:
            print("no responders")
        nc.close()
    """)], env=dict(os.environ, TCLNATS_PY_ACCEL="0"), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:2] == ["plain", "no responders"]


def test_requests_beside_a_publisher_whose_big_writes_leave_unlocked(nats_server, echo, proxy):
    """One thread publishes 1 KiB messages through a server that reads
    slowly (a proxy), so that its big sends, made with the client's lock
    released, block halfway; another thread makes requests on the same
    client meanwhile.  A request's frame must not go out while such a send
    is in flight (the kernel would put it between the send's parts, inside
    a PUB).  Every reply matches, the counter sees every message, no
    reconnect, no error."""
    body = b"p" * 1024
    count = [0]
    counter = sync.connect(nats_server.url)
    counter.subscribe("rt.mix", cb=lambda m: count.__setitem__(0, count[0] + 1) if m.data == body else None,
                      pending_msgs_limit=-1, pending_bytes_limit=-1)
    counter.flush()
    errors: list = []
    published = 12_000
    with sync.connect(proxy.url, error_cb=errors.append) as nc:
        nc.request(echo, b"first", timeout=5)
        proxy.slow_up = 0.001
        start = threading.Barrier(2)

        def publisher():
            start.wait()
            for _ in range(published):
                nc.publish("rt.mix", body)
            nc.flush(60)
        t = threading.Thread(target=publisher)
        t.start()
        start.wait()
        wrong = [i for i in range(300) if nc.request(echo, b"r%d" % i, timeout=30).data != b"r%d" % i]
        t.join(90)
        assert not t.is_alive() and wrong == []
        assert nc.stats["reconnects"] == 0 and not errors
    deadline = time.monotonic() + 20
    while count[0] < published and time.monotonic() < deadline:
        time.sleep(0.05)
    counter.close()
    assert count[0] == published


def test_a_spinning_wait_takes_the_reply_before_it_sleeps(nats_server, echo, reads):
    """spin_time: read_reply polls that long before its blocking read, and
    the back-off (SpinPolicy) counts each wait: caught, or missed when the
    reply is later than the spin (then the blocking read still takes it)."""
    with sync.connect(nats_server.url, spin_time=0.05) as nc:
        assert nc._io.spin_us == 50000
        nc.request(echo, b"first", timeout=5)
        policy = nc._io._spin
        before = policy.caught_n
        for i in range(20):
            assert nc.request(echo, b"%d" % i, timeout=5).data == b"%d" % i
        assert policy.caught_n - before >= 18 and policy.skipped_n == 0
    silent = sync.connect(nats_server.url)
    silent.subscribe("rt.silent")
    silent.flush()
    with sync.connect(nats_server.url, spin_time_ms=2) as nc:
        nc.request(echo, b"first", timeout=5)
        policy = nc._io._spin
        missed = policy.missed_n
        t0 = time.monotonic()
        with pytest.raises(tclnats_py.ErrTimeout):
            nc.request("rt.silent", b"", timeout=0.2)
        assert 0.15 < time.monotonic() - t0 < 2
        assert policy.missed_n == missed + 1
        assert nc.request(echo, b"after", timeout=5).data == b"after"
    silent.close()


def test_spin_time_zero_and_the_environment(nats_server, echo, monkeypatch):
    with sync.connect(nats_server.url, spin_time=0) as nc:
        nc.request(echo, b"x", timeout=5)
        policy = nc._io._spin
        assert nc._io.spin_us == 0 and (policy.caught_n, policy.missed_n, policy.skipped_n) == (0, 0, 0)
    monkeypatch.setenv("TCLNATS_SPIN_US", "120")
    with sync.connect(nats_server.url) as nc:
        assert nc._io.spin_us == 120
    monkeypatch.setenv("TCLNATS_SPIN_US", "soon")
    with pytest.raises(tclnats_py.ErrInvalidArg, match="TCLNATS_SPIN_US"):
        sync.Client(nats_server.url)
    monkeypatch.delenv("TCLNATS_SPIN_US")
    with sync.connect(nats_server.url) as nc:
        assert nc._io.spin_us == 300


def test_read_reply_checks_its_spin_arguments():
    a, b = socket.socketpair()
    with a, b:
        for extra in ((100, object()), ("100", threads._SpinPolicy()), (100,)):
            with pytest.raises(TypeError, match="read_reply"):
                threads._read_reply(a.fileno(), 1, "_INBOX.x", 1.0, *extra)
