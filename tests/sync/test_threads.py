"""The blocking client shared by threads: 16 threads on one client through a
server restart, close() from anywhere, interpreter exit, fork."""

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter

import pytest

import tclnats_py
from tclnats_py import sync

OPS = 10_000
REQUESTERS, PUBLISHERS, READERS = 6, 6, 4


def client_threads():
    return [t for t in threading.enumerate() if t.name.startswith("tclnats-sync")]


def test_sixteen_threads_share_one_client_through_a_server_restart(fresh_nats_server):
    """6 threads request, 6 publish, 4 iterate a subscription each, 10,000
    operations per thread, the server restarted on its port once a third
    of the requests are done: every request is answered or ends with a
    NatsError, no subscription sees a message twice, and close() leaves no
    thread of the client behind."""
    srv = fresh_nats_server
    before = set(client_threads())
    opts = dict(reconnect_time_wait=0.05, max_reconnect_attempts=-1, connect_timeout=1)
    responder = sync.connect(srv.url, **opts)
    responder.subscribe("mt.svc", queue="svc", cb=lambda m: m.respond(m.data))
    responder.flush()
    nc = sync.connect(srv.url, **opts)
    subs = [nc.subscribe("mt.pub.*") for _ in range(READERS)]
    nc.flush()
    answered, errors = Counter(), Counter()
    seen: list[Counter] = [Counter() for _ in range(READERS)]
    publishers_done = threading.Event()
    failures: list[BaseException] = []

    def requester(i):
        for n in range(OPS):
            payload = f"{i}.{n}".encode()
            try:
                m = nc.request("mt.svc", payload, timeout=2)
            except tclnats_py.NatsError as e:  # a clear error: counted by its code
                errors[e.code] += 1
                continue
            if m.data != payload:
                failures.append(AssertionError(f"reply {m.data!r} to {payload!r}"))
            answered[i] += 1

    def publisher(i):
        for n in range(OPS):
            try:
                nc.publish(f"mt.pub.{i}", f"{i}.{n}".encode())
            except tclnats_py.NatsError as e:
                errors["pub " + e.code] += 1
            if n % 8 == 0:
                time.sleep(0.001)

    def reader(j):
        sub = subs[j]
        quiet_since = None
        while True:
            try:
                m = sub.next_msg(0.5)
            except tclnats_py.ErrTimeout:
                if publishers_done.is_set():
                    if quiet_since is not None:
                        return
                    quiet_since = time.monotonic()
                continue
            seen[j][m.data] += 1

    def guarded(fn, i):
        def run():
            try:
                fn(i)
            except BaseException as e:  # the test fails with it below
                failures.append(e)
        return threading.Thread(target=run, name=f"mt-{fn.__name__}-{i}")

    threads = ([guarded(requester, i) for i in range(REQUESTERS)] + [guarded(publisher, i) for i in range(PUBLISHERS)]
               + [guarded(reader, j) for j in range(READERS)])
    assert len(threads) == 16
    for t in threads:
        t.start()
    deadline = time.monotonic() + 120
    while sum(answered.values()) < REQUESTERS * OPS // 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    srv.restart()
    for t in threads[:REQUESTERS + PUBLISHERS]:
        t.join(300)
    publishers_done.set()
    for t in threads[REQUESTERS + PUBLISHERS:]:
        t.join(60)
    assert not [t.name for t in threads if t.is_alive()]
    assert not failures, failures[:3]
    for j in range(READERS):
        twice = [d for d, c in seen[j].items() if c > 1]
        assert not twice, f"subscription {j} got {twice[:5]} more than once"
        assert len(seen[j]) > PUBLISHERS * OPS // 2  # at most once: what was on the wire at the restart may be lost
    assert sum(answered.values()) + sum(v for k, v in errors.items() if not k.startswith("pub ")) == REQUESTERS * OPS
    assert sum(answered.values()) > REQUESTERS * OPS // 2
    assert set(errors) <= {"ErrTimeout", "ErrNoResponders", "ErrConnectionClosed", "pub ErrReconnectBufExceeded"}
    assert nc.stats["reconnects"] >= 1
    nc.close()
    responder.close()
    assert set(client_threads()) <= before, [t.name for t in client_threads()]


def test_close_from_many_threads_at_once(nats_server):
    nc = sync.connect(nats_server.url)
    sub = nc.subscribe("cm.x")
    nc.subscribe("cm.y", cb=lambda m: None)
    ts = [threading.Thread(target=nc.close) for _ in range(8)]
    waiter = threading.Thread(target=lambda: pytest.raises(tclnats_py.ErrBadSubscription, sub.next_msg, 10))
    waiter.start()
    for t in ts:
        t.start()
    for t in ts + [waiter]:
        t.join(10)
        assert not t.is_alive()
    assert nc.is_closed
    assert not [t for t in client_threads() if t.name.endswith(("-" + nc._io.name.rsplit("-", 1)[1]))]


def test_close_in_a_callback(nats_server):
    nc = sync.connect(nats_server.url)
    done = threading.Event()
    nc.subscribe("cc.x", cb=lambda m: (nc.close(), done.set()))
    nc.publish("cc.x", b"")
    assert done.wait(5) and nc.is_closed
    deadline = time.monotonic() + 5
    name = nc._callbacks.name
    while any(t.name == name for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(t.name == name for t in threading.enumerate())


def run_script(code, timeout=30):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_interpreter_exit_with_clients_open(nats_server):
    """A program that never closes its client (callbacks, a subscription in use) exits at once."""
    t0 = time.monotonic()
    r = run_script(f"""
        from tclnats_py import sync
        nc = sync.connect({nats_server.url!r})
        nc.subscribe("ex.x", cb=lambda m: None)
        sub = nc.subscribe("ex.y")
        nc.publish("ex.x", b"1")
        nc.publish("ex.y", b"2")
        print(sub.next_msg(2).data.decode())
    """)
    assert r.returncode == 0 and r.stdout.strip() == "2", r.stderr
    assert time.monotonic() - t0 < 20


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_finds_the_client_closed(nats_server):
    r = run_script(f"""
        import os
        from tclnats_py import sync
        nc = sync.connect({nats_server.url!r})
        sub = nc.subscribe("fk.x")
        pid = os.fork()
        if pid == 0:
            os._exit(0 if nc.is_closed else 3)
        _, status = os.waitpid(pid, 0)
        nc.publish("fk.x", b"parent")   # the parent's connection still works
        print(os.waitstatus_to_exitcode(status), sub.next_msg(2).data.decode())
        nc.close()
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["0", "parent"]
