"""Faults, load and bad input (short forms; TCLNATS_FAULT_CYCLES etc. scale them up).

- JetStream publishing across kill -9 / restart cycles: every acknowledged
  message is stored exactly once (message ids + retries);
- a fake server speaking broken protocol: documented codes, reconnects, no
  unhandled exception;
- a TCP proxy that stalls: the stale connection is detected by pings;
- slow consumers have bounded memory; many requesters and subscriptions;
- permission violations keep the connection; secrets stay out of errors and logs.
"""

import asyncio
import os
import subprocess
import shutil
import sys

import pytest

import tclnats_py
from tclnats_py import NatsError
from tclnats_py.testing.server import NatsServer, free_port

pytestmark = pytest.mark.fault

CYCLES = int(os.environ.get("TCLNATS_FAULT_CYCLES", "3"))
MESSAGES = int(os.environ.get("TCLNATS_FAULT_MESSAGES", "600"))


def run(coro, timeout=120):
    return asyncio.run(asyncio.wait_for(coro, timeout))


def test_js_publish_survives_server_crashes(tmp_path):
    srv = NatsServer(jetstream=True, store_dir=str(tmp_path / "js"), port=free_port())
    srv.start()
    try:
        async def go():
            c = await tclnats_py.connect(srv.url, reconnect_time_wait=0.05, max_reconnect_attempts=-1,
                                         connect_timeout=1)
            js = c.jetstream(timeout=2.0)
            await js.create_stream("CRASH", subjects=["crash.*"], storage="file", duplicate_window=300)
            acked = set()
            per_cycle = MESSAGES // CYCLES
            i = 0
            loop = asyncio.get_running_loop()
            for cycle in range(CYCLES):
                target = min(MESSAGES, (cycle + 1) * per_cycle)
                killer = loop.call_later(0.05, srv.kill)
                while i < target:
                    try:
                        await js.publish("crash.x", f"m{i}".encode(), msg_id=f"id-{i}")
                        acked.add(i)
                        i += 1
                    except NatsError:
                        if not srv.is_running:
                            await loop.run_in_executor(None, srv.start)
                        await asyncio.sleep(0.05)
                killer.cancel()
                if not srv.is_running:
                    await loop.run_in_executor(None, srv.start)
            while c.status != "connected":
                await asyncio.sleep(0.05)
            info = await js.stream_info("CRASH")
            cons = await js.create_consumer("CRASH", ack_policy="none")
            seen = []
            while True:
                batch = await cons.fetch(500, expires=1.0)
                if not batch:
                    break
                seen.extend(int(m.data[1:]) for m in batch)
            await c.close()
            return acked, seen, info["state"]["messages"]
        acked, seen, count = run(go(), 300)
        lost = acked - set(seen)
        duplicates = len(seen) - len(set(seen))
        print(f"\ncrash cycles={CYCLES} acknowledged={len(acked)} stored={count} lost={len(lost)} duplicates={duplicates}")
        assert not lost and duplicates == 0 and len(acked) == MESSAGES
    finally:
        srv.cleanup()


class FakeServer:
    """A loopback TCP server that says INFO, then whatever a test scripts.

    Only for what no real nats-server sends to a client that speaks the
    protocol correctly: garbage, malformed frames, a -ERR for a protocol
    error, 'Stale Connection' to a client that answers its pings, a -ERR
    'Authorization Violation' on an open connection (a real server closes the
    socket instead and refuses the next CONNECT: that case runs against a real
    server in test_aio_bounds.py), a broken header block.  Permissions and
    everything else a real server does on demand run against real servers."""

    def __init__(self, script):
        self.script = script  # async fn(reader, writer, connection_number)
        self.port = free_port()
        self.connections = 0

    async def __aenter__(self):
        async def handle(reader, writer):
            self.connections += 1
            writer.write(b'INFO {"server_id":"fake","version":"2.15.1","max_payload":1048576,"headers":true,'
                         b'"proto":1}\r\n')
            await writer.drain()
            try:
                await reader.readuntil(b"PING\r\n")  # CONNECT + PING
                writer.write(b"PONG\r\n")
                await writer.drain()
                await self.script(reader, writer, self.connections)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass
            finally:
                writer.close()
        self.server = await asyncio.start_server(handle, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *exc):
        self.server.close()
        await self.server.wait_closed()


@pytest.mark.parametrize("garbage,code", [
    (b"BOGUS op\r\n", "ErrProtocol"),
    (b"MSG a b c d e f\r\n", "ErrProtocol"),
    (b"MSG x 1 3\r\nabcdef\r\n", "ErrProtocol"),
    (b"MSG " + b"y" * 5000, "ErrServer"),
    (b"-ERR 'Unknown Protocol Operation'\r\n", "ErrServer"),
    (b"-ERR 'Stale Connection'\r\n", "ErrStaleConnection"),
    (b"-ERR 'Authorization Violation'\r\n", "ErrAuthorization"),
])
def test_broken_server_input(garbage, code):
    async def script(reader, writer, n):
        if n == 1:
            writer.write(garbage)
            await writer.drain()
        await asyncio.sleep(2)

    async def go():
        async with FakeServer(script) as fake:
            errors = []
            c = await tclnats_py.connect(f"nats://127.0.0.1:{fake.port}", reconnect_time_wait=0.05,
                                         error_cb=errors.append)
            for _ in range(100):
                if fake.connections >= 2 and c.status == "connected":
                    break
                await asyncio.sleep(0.02)
            assert code in [e.code for e in errors]
            assert fake.connections >= 2 and c.status == "connected"  # reconnected after the fatal error
            await c.close()
    run(go())


def test_a_bad_header_block_is_not_fatal():
    # a header block of an unknown version: no real server sends one (the
    # permissions -ERR that was also faked here comes from a real server in
    # test_permission_violation_keeps_connection)
    async def script(reader, writer, n):
        line = await reader.readuntil(b"\r\n")  # SUB h  1
        sid = line.split()[-1]
        writer.write(b"HMSG h " + sid + b" 12 14\r\nNATS/2.0\r\n\r\nhi\r\n")
        writer.write(b"MSG h " + sid + b" 2\r\nok\r\n")
        await writer.drain()
        await asyncio.sleep(2)

    async def go():
        async with FakeServer(script) as fake:
            errors = []
            c = await tclnats_py.connect(f"nats://127.0.0.1:{fake.port}", error_cb=errors.append)
            sub = await c.subscribe("h")  # its SUB goes out on the next loop turn
            first = await sub.next_msg(2)
            second = await sub.next_msg(2)
            assert (first.data, second.data) == (b"hi", b"ok")
            assert [e.code for e in errors] == ["ErrBadHeaderMsg"]
            assert c.status == "connected" and fake.connections == 1
            await c.close()
    run(go())


class StallProxy:
    """Forwards a TCP connection to a server; ``stall()`` stops forwarding."""

    def __init__(self, target_port):
        self.target = target_port
        self.port = free_port()
        self.stalled = False

    async def __aenter__(self):
        async def pipe(r, w):
            try:
                while True:
                    data = await r.read(65536)
                    if not data:
                        break
                    while self.stalled:
                        await asyncio.sleep(0.05)
                    w.write(data)
                    await w.drain()
            except ConnectionError:
                pass
            finally:
                w.close()

        async def handle(cr, cw):
            sr, sw = await asyncio.open_connection("127.0.0.1", self.target)
            asyncio.ensure_future(pipe(cr, sw))
            asyncio.ensure_future(pipe(sr, cw))
        self.server = await asyncio.start_server(handle, "127.0.0.1", self.port)
        return self

    async def __aexit__(self, *exc):
        self.server.close()


def test_stalled_network_detected_by_pings(nats_server):
    async def go():
        async with StallProxy(nats_server.port) as proxy:
            errors = []
            c = await tclnats_py.connect(f"nats://127.0.0.1:{proxy.port}", ping_interval=0.2,
                                         max_outstanding_pings=2, reconnect_time_wait=0.1, error_cb=errors.append)
            proxy.stalled = True
            for _ in range(100):
                if c.status != "connected":
                    break
                await asyncio.sleep(0.02)
            assert "ErrStaleConnection" in [e.code for e in errors]
            proxy.stalled = False
            for _ in range(200):
                if c.status == "connected":
                    break
                await asyncio.sleep(0.02)
            assert c.status == "connected"
            await c.close()
    run(go())


def test_slow_consumer_is_bounded(nats_server):
    async def go():
        errors = []
        c = await tclnats_py.connect(nats_server.url, error_cb=errors.append)
        sub = await c.subscribe("slow", pending_msgs_limit=1000)
        pub = await tclnats_py.connect(nats_server.url)
        for _ in range(20000):
            pub.publish("slow", b"x" * 128)
        await pub.flush()
        await c.flush()
        await asyncio.sleep(0.2)
        assert sub.pending_msgs <= 1000 and sub.dropped > 0
        assert any(e.code == "ErrSlowConsumer" for e in errors)
        assert c.status == "connected"
        await pub.close()
        await c.close()
    run(go())


def test_many_requesters_and_subscriptions(nats_server):
    async def go():
        c = await tclnats_py.connect(nats_server.url)
        await c.subscribe("svc.many", cb=lambda m: c.publish(m.reply, m.data))
        subs = [await c.subscribe(f"many.{i}") for i in range(10000)]
        await c.flush(10)
        replies = await asyncio.gather(*(c.request("svc.many", str(i), timeout=5) for i in range(100)))
        assert sorted(int(r.data) for r in replies) == list(range(100))
        c.publish("many.9999", b"last")
        assert (await subs[-1].next_msg(2)).data == b"last"
        await c.close()
    run(go())


def test_permission_violation_keeps_connection():
    conf = ('authorization { users = [ { user: "limited", password: "pw", '
            'permissions: { publish: { deny: ["forbidden.>"] } } } ] }')
    with NatsServer(config=conf) as srv:
        async def go():
            errors = []
            c = await tclnats_py.connect(f"nats://limited:pw@127.0.0.1:{srv.port}", error_cb=errors.append)
            sub = await c.subscribe("allowed")
            c.publish("forbidden.x", b"no")
            c.publish("allowed", b"yes")
            assert (await sub.next_msg(2)).data == b"yes"
            await c.flush()
            assert [e.code for e in errors] == ["ErrPermissions"] and c.status == "connected"
            assert "pw" not in str(errors[0])
            await c.close()
        run(go())


def test_secrets_stay_out_of_tcl_logs_and_errors(tmp_path):
    conf = 'authorization { user: "alice", password: "hunter2-secret" }'
    with NatsServer(config=conf) as srv:
        script = tmp_path / "s.tcl"
        script.write_text(
            "package require nats\n"
            "set c [nats::connection new secrets -log_level debug -log_chan stdout]\n"
            f"$c configure -servers nats://alice:wrong-pw-77@127.0.0.1:{srv.port} -max_reconnect_attempts 1\n"
            "catch {$c connect} err\nputs \"ERR: $err\"\n"
            f"$c configure -servers nats://127.0.0.1:{srv.port} -user alice -password hunter2-secret\n"
            "$c connect\nputs \"OK: [$c ping]\"\n$c destroy\n")
        exe = shutil.which("tclnats-tclsh")
        cmd = [exe] if exe else [sys.executable, "-m", "tclnats_py.tclface.tclsh"]
        p = subprocess.run(cmd + [str(script)], capture_output=True, text=True, timeout=60)
        out = p.stdout + p.stderr
        assert "OK: true" in out and "ERR:" in out
        assert "hunter2-secret" not in out and "wrong-pw-77" not in out


FUZZ = int(os.environ.get("TCLNATS_FUZZ_EXAMPLES", "2000"))


def test_fuzz_engine_with_garbage_after_a_valid_handshake():
    """Random bytes after a valid handshake: only documented codes, bounded buffers."""
    import random
    import resource

    from tclnats_py import Engine, Options
    rng = random.Random(1234)
    info = b'INFO {"server_id":"f","version":"2.15.1","max_payload":1048576,"headers":true}\r\n'
    pieces = [b"MSG a 1 3\r\nabc\r\n", b"HMSG a 1 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", b"PING\r\n", b"PONG\r\n",
              b"+OK\r\n", b"-ERR 'x'\r\n", b"INFO {}\r\n", b"\r\n", b"MSG", b" ", b"\x00\xff", b"HMSG a 1 99 3\r\n"]
    codes = set()
    for _ in range(FUZZ):
        e = Engine(Options(), clock=lambda: 0)
        e.configure_servers(["nats://x"])
        e.connect()
        e.socket_connected()
        e.receive_data(info)
        e.receive_data(b"PONG\r\n")
        e.subscribe("a")
        blob = b"".join(rng.choice(pieces) if rng.random() < 0.7 else bytes([rng.randrange(256)])
                        for _ in range(rng.randrange(1, 40)))
        for i in range(0, len(blob), rng.randrange(1, 8)):
            e.receive_data(blob[i:i + 7])  # never raises: errors become effects
        if e.last_error is not None:
            codes.add(e.last_error.code)
        assert e._parser.buffered <= 4096 + 64
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nfuzz inputs={FUZZ} error codes seen={sorted(codes)} max RSS={rss_mb:.0f} MB")
    assert codes <= {"ErrProtocol", "ErrServer", "ErrBadHeaderMsg"}


def test_tcl_face_cluster_failover_status_transitions():
    """A Tcl connection on a 3-node cluster: the node it uses is killed
    repeatedly; it fails over, keeps its subscription, and its status variable
    shows every transition."""
    import time
    import tkinter

    from tclnats_py.testing.server import NatsCluster
    from tclnats_py.tclface.bridge import install
    kills = int(os.environ.get("TCLNATS_FAILOVER_KILLS", "2"))
    with NatsCluster(3) as cluster:
        interp = tkinter.Tcl()
        install(interp)
        tk = interp.tk
        urls = " ".join(cluster.urls)
        tk.eval(f"""
            package require nats
            set ::statuses [list]
            set c [nats::connection new failover -log_chan stderr -log_level error]
            $c configure -servers [list {urls}] -randomize false -reconnect_time_wait 100 \\
                -max_reconnect_attempts -1 -connect_timeout 500
            trace add variable [info object namespace $c]::status write \\
                [list apply {{{{ns n1 n2 op}} {{lappend ::statuses [set ${{ns}}::status]}}}} [info object namespace $c]]
            $c connect
            set ::got [list]
            $c subscribe ha.tcl -callback [list apply {{{{s m r}} {{lappend ::got $m}}}}]
            $c ping
        """)

        def pump(cond, timeout=10):
            deadline = time.time() + timeout
            while not cond() and time.time() < deadline:
                if not tk.dooneevent(2):  # any pending Tcl event, without blocking
                    time.sleep(0.002)
            return cond()

        async def publish(i):
            c = await tclnats_py.connect(cluster.urls[(i + 1) % 3] if i % 3 != 0 else cluster.urls[2])
            c.publish("ha.tcl", f"after-{i}".encode())
            await c.flush()
            await c.close()
        for i in range(kills):
            port = int(tk.eval("lindex [$c current_server] 1"))
            victim = next(k for k, s in enumerate(cluster.servers) if s.port == port)
            cluster.kill(victim)
            assert pump(lambda: tk.eval("$c cget -status") == "reconnecting")
            assert pump(lambda: tk.eval("$c cget -status") == "connected")
            tk.eval("$c ping")  # the subscription is restored on the new node before publishing
            asyncio.run(publish(victim))
            assert pump(lambda: int(tk.eval("llength $::got")) == i + 1)
            cluster.restart(victim)
        statuses = tk.eval("set ::statuses").split()
        tk.eval("$c destroy")
        print(f"\nfailovers={kills} statuses={statuses}")
        assert statuses[:2] == ["connecting", "connected"]
        assert statuses[2:2 + 2 * kills] == ["reconnecting", "connected"] * kills


def test_slow_reads_through_a_trickling_proxy(nats_server):
    class Trickle(StallProxy):
        async def __aenter__(self):
            async def pipe(r, w):
                try:
                    while True:
                        data = await r.read(7)  # a few bytes at a time, frames split anywhere
                        if not data:
                            break
                        w.write(data)
                        await w.drain()
                        await asyncio.sleep(0)
                except ConnectionError:
                    pass
                finally:
                    w.close()

            async def handle(cr, cw):
                sr, sw = await asyncio.open_connection("127.0.0.1", self.target)
                asyncio.ensure_future(pipe(cr, sw))
                asyncio.ensure_future(pipe(sr, cw))
            self.server = await asyncio.start_server(handle, "127.0.0.1", self.port)
            return self

    async def go():
        async with Trickle(nats_server.port) as proxy:
            c = await tclnats_py.connect(f"nats://127.0.0.1:{proxy.port}")
            sub = await c.subscribe("trickle")
            for i in range(300):
                c.publish("trickle", f"payload {i} \r\n with CRLF".encode(), headers={"N": [str(i)]})
            got = [await sub.next_msg(10) for _ in range(300)]
            assert [m.data for m in got] == [f"payload {i} \r\n with CRLF".encode() for i in range(300)]
            assert [m.headers["N"] for m in got] == [str(i) for i in range(300)]
            await c.close()
    run(go())
