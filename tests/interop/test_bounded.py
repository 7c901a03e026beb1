"""Bounded memory and bounded waits under faults, on both faces.

Short forms run in CI; ``python -m tclnats_py.compat.faults`` runs the long
forms (sizes in the environment, see ``SIZES`` below) and collects the figure
lines each test prints.

1. A process keeps publishing 1 KiB messages through an outage (the server
   killed, down OUTAGE seconds, restarted): what is buffered while
   disconnected stops at ``reconnect_buf_size`` (ErrReconnectBufExceeded
   refuses the rest), its peak RSS grows by at most that plus a fixed
   overhead, and every message accepted from the moment it knew it was
   disconnected reaches a subscriber after the restart.  Python
   (tests/interop/bounded_scripts/outage_pub.py) and Tcl (outage_pub.tcl).  The
   publisher reaches the server through a small gate proxy that the test
   opens only once the subscriber is back on the restarted server, so that
   "every accepted message arrives" does not depend on which client
   reconnects first.
2. ASYNC_MSGS JetStream publish_async calls while the server is SIGSTOPped
   for PAUSE seconds in the middle: never more than max_pending in flight,
   and every publish is accounted for (acked + failed, per error code).
   Python in this process; Tcl (``$js publish ... -callback``) in
   tests/interop/bounded_scripts/js_async.tcl.
3. A "TLS server" (a plain socket here) that sends INFO with tls_required
   and then never answers the handshake: connect fails within its
   connect_timeout; the Tcl event loop keeps running meanwhile; the Python
   process reports no lost task exception.
4. Ten publishers on a server paused for PUB_PAUSE seconds: their process's
   memory stays bounded because writers wait for the socket; after SIGCONT a
   subscriber with small pending limits is flooded and reports
   ErrSlowConsumer.

The peak RSS is VmHWM of the child process (/proc/PID/status), as
compat/bench_memory.py reads it; the figure is the peak minus VmHWM just
before the fault.
"""

from __future__ import annotations

import asyncio
import collections
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import tclnats_py
from tclnats_py import NatsError
from tclnats_py.testing.server import NatsServer, free_port

pytestmark = pytest.mark.fault

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "bounded_scripts")
MiB = 1024 * 1024

# long-form sizes come from python -m tclnats_py.compat.faults (see its --help)
OUTAGE = float(os.environ.get("TCLNATS_BOUND_OUTAGE", "1.5"))            # seconds the server is down (1)
RECONNECT_BUF = int(os.environ.get("TCLNATS_BOUND_RECONNECT_BUF", str(2 * MiB)))  # bytes (1)
ASYNC_MSGS = int(os.environ.get("TCLNATS_BOUND_ASYNC_MSGS", "20000"))     # publish_async calls (2)
PAUSE = float(os.environ.get("TCLNATS_BOUND_PAUSE", "1"))                 # SIGSTOP seconds (2)
PUB_PAUSE = float(os.environ.get("TCLNATS_BOUND_PUB_PAUSE", "2"))         # SIGSTOP seconds (4)
MAX_PENDING = int(os.environ.get("TCLNATS_BOUND_MAX_PENDING", "512"))     # publish_async_max_pending (2)

# what a client process may grow by besides its configured buffers: the
# interpreter's own allocations while it runs flat out (2-3 MB measured in the short forms)
OVERHEAD = 16 * MiB
WRITE_BUF = 256 * 1024  # write_buf_size of the publishers of (4)
# write_buf_size of the publisher of (1): smaller than an eighth of the reconnect
# buffer, so that what goes out on reconnecting is more than 8 x write_buf_size:
# awaited publishes must wait then, never fail with ErrOutboundBufferLimit
OUTAGE_WRITE_BUF = 128 * 1024


def tclsh_cmd() -> list[str]:
    """Our package under stock tclsh, as tests/tclface/test_tcl_suite.py runs it."""
    exe = shutil.which("tclnats-tclsh")
    return [exe] if exe else [sys.executable, "-m", "tclnats_py.tclface.tclsh"]


def child_cmd(face: str, name: str) -> list[str]:
    if face == "python":
        return [sys.executable, os.path.join(SCRIPTS, name + ".py")]
    return tclsh_cmd() + [os.path.join(SCRIPTS, name + ".tcl")]


def child_env() -> dict:
    env = dict(os.environ)
    env.pop("TCLLIBPATH", None)  # our nats package, not another one on the path
    return env


def vm_hwm(pid: int) -> int:
    """Peak resident set size of ``pid`` so far, in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for pid {pid}")


def parse_result(line: str) -> dict:
    assert line.startswith("result "), line
    return dict(kv.split("=", 1) for kv in line.split()[1:])


def parse_codes(text: str) -> dict:
    if text == "-":
        return {}
    return {k: int(v) for k, v in (item.rsplit(":", 1) for item in text.split(","))}


class Child:
    """A client process driven line by line (stdin commands, stdout reports);
    its stderr goes to a file that failures show."""

    def __init__(self, cmd, tmp_path, name):
        self.err_path = tmp_path / f"{name}.stderr"
        self.err = open(self.err_path, "w")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
                                     text=True, env=child_env(), bufsize=1)
        self.pid = None

    async def line(self, timeout=30.0) -> str:
        loop = asyncio.get_running_loop()
        text = await asyncio.wait_for(loop.run_in_executor(None, self.proc.stdout.readline), timeout)
        if not text:
            self.proc.wait(5)
            raise AssertionError(f"child exited ({self.proc.returncode}) early; stderr:\n{self.stderr()}")
        return text.strip()

    async def hello(self) -> int:
        first = await self.line()
        assert first.startswith("pid "), f"{first!r}; stderr:\n{self.stderr()}"
        self.pid = int(first.split()[1])
        return self.pid

    def send(self, text: str) -> None:
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def stderr(self) -> str:
        self.err.flush()
        return self.err_path.read_text()[-4000:]

    def finish(self, timeout=30.0) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            self.close()

    def close(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.err.close()


def run(coro, timeout=120):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def until(cond, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not met in {timeout} s")
        await asyncio.sleep(0.02)


async def settle(cond, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``cond``; whether it came (the
    caller's assertions then say what is wrong, with the figures printed)."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


# ------------------------------------------------------------------------- (1) outage

class GateProxy:
    """Forwards TCP connections to ``target``; while ``open`` is False new
    connections are closed at once (the client sees the server as down)."""

    def __init__(self, target_port: int):
        self.target = target_port
        self.open = True
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.socks: list[socket.socket] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, name="gate-proxy", daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return  # closed
            if not self.open:
                c.close()
                continue
            try:
                s = socket.create_connection(("127.0.0.1", self.target), timeout=2)
            except OSError:
                c.close()  # the server is down: so is the proxy, for the client
                continue
            s.settimeout(None)
            with self.lock:
                self.socks += [c, s]
            threading.Thread(target=self._pipe, args=(c, s), daemon=True).start()
            threading.Thread(target=self._pipe, args=(s, c), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(256 * 1024)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass  # either side went away: end both, as a dead server would
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # already shut

    def close(self):
        self.sock.close()
        with self.lock:
            for s in self.socks:
                s.close()


@pytest.mark.parametrize("face", ["python", "tcl"])
def test_publishing_through_an_outage_is_bounded(tmp_path, face):
    srv = NatsServer(port=free_port())
    srv.start()
    proxy = GateProxy(srv.port)
    child = Child(child_cmd(face, "outage_pub") + [f"nats://127.0.0.1:{proxy.port}", str(RECONNECT_BUF),
                                                    str(OUTAGE_WRITE_BUF)],
                  tmp_path, f"outage-{face}")
    try:
        async def go():
            loop = asyncio.get_running_loop()
            seqs = []
            sub_statuses = []

            def got(msg):
                seqs.append(int(msg.data[:10]))
            snc = await tclnats_py.connect(srv.url, reconnect_time_wait=0.05, max_reconnect_attempts=-1,
                                           status_cb=sub_statuses.append)
            await snc.subscribe("bound.out", cb=got, pending_msgs_limit=-1, pending_bytes_limit=-1)
            await snc.flush()
            await child.hello()
            child.send("go")
            await until(lambda: len(seqs) > 1000, 20, "messages before the outage")
            await asyncio.sleep(0.3)
            base = vm_hwm(child.pid)
            before = len(seqs)
            proxy.open = False
            srv.kill()
            t0 = time.monotonic()
            await asyncio.sleep(OUTAGE)
            await loop.run_in_executor(None, srv.start)
            down = time.monotonic() - t0
            await until(lambda: snc.status == "connected", 20, "the subscriber back")
            await snc.flush()
            restarted_at = len(seqs)
            proxy.open = True
            await asyncio.sleep(1.0)  # the buffer goes out, and it keeps publishing while connected
            child.send("stop")
            res = parse_result(await child.line(60))
            peak = vm_hwm(child.pid)
            accepted, outage_from = int(res["accepted"]), int(res["outage_from"])
            # the last accepted one arrives last (one publisher, in order); missing ones are counted below
            await settle(lambda: seqs and seqs[-1] >= accepted - 1, 20)
            await asyncio.sleep(0.2)  # anything past them (there must be nothing) shows up too
            child.send("quit")
            await snc.close()
            return res, seqs, base, peak, before, restarted_at, down
        res, seqs, base, peak, before, restarted_at, down = run(go(), 120)
        rc = child.finish()
        accepted, outage_from = int(res["accepted"]), int(res["outage_from"])
        codes = parse_codes(res["codes"])
        got = set(seqs)
        must = set(range(max(outage_from, 0), accepted))
        missing = must - got
        lost_in_flight = sum(1 for s in range(max(outage_from, 0)) if s not in got)
        duplicates = len(seqs) - len(got)
        after_restart = len(seqs) - restarted_at
        growth = peak - base
        print(f"\noutage {face} down_s={down:.1f} reconnect_buf_mb={RECONNECT_BUF / MiB:.1f} accepted={accepted} "
              f"refused={res['refused']} refused_codes={res['codes']} received_after_restart={after_restart} "
              f"received_total={len(seqs)} accepted_while_down={res['while_down']} "
              f"missing={len(missing)} lost_in_flight_at_kill={lost_in_flight} duplicates={duplicates} "
              f"base_rss_mb={base / MiB:.1f} peak_rss_growth_mb={growth / MiB:.1f} "
              f"write_buf_kb={OUTAGE_WRITE_BUF // 1024} bound_mb={(RECONNECT_BUF + OVERHEAD) / MiB:.0f} errors={res['errors']} statuses={res['statuses']}")
        assert rc == 0, child.stderr()
        assert outage_from >= 0, "nothing was accepted while disconnected"
        assert codes.get("ErrReconnectBufExceeded", 0) > 0, res  # the buffer filled up
        assert not missing, f"{len(missing)} accepted messages never arrived, e.g. {sorted(missing)[:10]}"
        assert duplicates == 0
        assert max(seqs) == accepted - 1  # nothing refused went out
        # while down it buffered at most reconnect_buf_size (each message is 1 KiB and a PUB line)
        assert 0 < int(res["while_down"]) * 1024 <= RECONNECT_BUF, res
        assert growth <= RECONNECT_BUF + OVERHEAD, f"peak RSS grew by {growth / MiB:.1f} MB"
        others = {k: v for k, v in codes.items() if k != "ErrReconnectBufExceeded"}
        assert not others, res  # only the reconnect buffer refused anything
    finally:
        child.close()
        proxy.close()
        srv.cleanup()


# ---------------------------------------------------------- (2) publish_async vs SIGSTOP

def test_publish_async_through_a_paused_server(tmp_path):
    srv = NatsServer(jetstream=True, port=free_port())
    srv.start()
    stopped = [False]

    def cont():
        if stopped[0]:
            os.kill(srv.pid, signal.SIGCONT)
            stopped[0] = False
    try:
        async def go():
            loop = asyncio.get_running_loop()
            nc = await tclnats_py.connect(srv.url)
            js = nc.jetstream(timeout=0.5, publish_async_max_pending=MAX_PENDING,
                              publish_async_stall_wait=0.2)
            await js.create_stream("BOUNDJS", subjects=["bound.js"], storage="memory")
            outcomes = collections.Counter()

            def done(fut):
                if fut.cancelled():
                    outcomes["cancelled"] += 1
                elif fut.exception() is not None:
                    e = fut.exception()
                    outcomes[getattr(e, "code", type(e).__name__)] += 1
                else:
                    outcomes["acked"] += 1
            refused = collections.Counter()
            attempted = 0
            max_seen = 0
            payload = b"j" * 64
            t0 = time.monotonic()
            for i in range(ASYNC_MSGS):
                if i == ASYNC_MSGS // 2:
                    os.kill(srv.pid, signal.SIGSTOP)
                    stopped[0] = True
                    loop.call_later(PAUSE, cont)
                attempted += 1
                try:
                    fut = await js.publish_async("bound.js", payload)
                except NatsError as e:
                    refused[e.code] += 1
                    continue
                fut.add_done_callback(done)
                p = js.publish_async_pending
                if p > max_seen:
                    max_seen = p
            sent_s = time.monotonic() - t0
            await until(lambda: not stopped[0], PAUSE + 5, "SIGCONT")
            await js.publish_async_complete(60)
            await until(lambda: sum(outcomes.values()) + sum(refused.values()) == attempted, 10,
                        "every publish accounted for")
            info = await js.stream_info("BOUNDJS")
            await nc.close()
            return attempted, outcomes, refused, max_seen, info["state"]["messages"], sent_s
        attempted, outcomes, refused, max_seen, stored, sent_s = run(go(), 600)
        acked = outcomes.pop("acked", 0)
        failed = collections.Counter(outcomes)
        failed.update(refused)
        by_code = ",".join(f"{k}:{v}" for k, v in sorted(failed.items())) or "-"
        print(f"\njetstream publish_async attempted={attempted} acked={acked} failed={sum(failed.values())} "
              f"failed_codes={by_code} refused_at_call={sum(refused.values())} max_in_flight={max_seen} "
              f"max_pending={MAX_PENDING} pause_s={PAUSE:g} stream_messages={stored} seconds={sent_s:.1f}")
        assert max_seen <= MAX_PENDING
        assert acked + sum(failed.values()) == attempted
        assert "cancelled" not in failed
        assert set(failed) <= {"ErrTimeout", "ErrTooManyStalledMsgs"}, failed
        assert sum(failed.values()) > 0, "a pause longer than the ack timeout failed nothing"
        # what the stream holds: every acked one, perhaps some that timed out, nothing never sent
        assert acked <= stored <= attempted - failed["ErrTooManyStalledMsgs"]
    finally:
        cont()
        srv.cleanup()


def test_publish_async_through_a_paused_server_tcl(tmp_path):
    """The same on the Tcl face: ``$js publish ... -callback`` with
    -publish_async_max_pending; the script stops and resumes the server itself."""
    srv = NatsServer(jetstream=True, port=free_port())
    srv.start()
    pid = srv.pid
    try:
        cmd = child_cmd("tcl", "js_async") + [srv.url, str(ASYNC_MSGS), str(int(PAUSE * 1000)), str(pid),
                                               str(MAX_PENDING), "200", "500"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=max(120, ASYNC_MSGS / 1000),
                           env=child_env(), stdin=subprocess.DEVNULL)
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("result ")]
        assert p.returncode == 0 and lines, f"rc={p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr[-4000:]}"
        res = parse_result(lines[-1])
        outcomes = parse_codes(res["outcomes"])
        attempted, sent, callbacks = int(res["attempted"]), int(res["sent"]), int(res["callbacks"])
        acked = outcomes.pop("acked", 0)
        failed = sum(outcomes.values())
        stored = int(res["stream_messages"])
        by_code = ",".join(f"{k}:{v}" for k, v in sorted(outcomes.items())) or "-"
        print(f"\njetstream publish_async tcl attempted={attempted} acked={acked} failed={failed} failed_codes={by_code} "
              f"refused_at_call={attempted - sent} max_callbacks_outstanding={res['max_in_flight']} max_pending={MAX_PENDING} "
              f"pause_s={PAUSE:g} stream_messages={stored} seconds={res['seconds']}")
        assert callbacks == sent, "some callbacks never ran"
        # what the script sees is publishes whose callback has not run yet: those
        # in flight (at most max_pending) and those whose ack came in and whose
        # callback waits its turn in the event loop (their room is free already;
        # at most one max_pending's worth)
        assert int(res["max_in_flight"]) <= 2 * MAX_PENDING
        assert acked + failed == attempted
        assert set(outcomes) <= {"ErrTimeout", "ErrTooManyStalledMsgs"}, outcomes
        assert failed > 0, "a pause longer than the ack timeout failed nothing"
        assert acked <= stored <= sent
    finally:
        if srv.pid is not None:
            os.kill(srv.pid, signal.SIGCONT)
        srv.cleanup()


# ---------------------------------------------------------------- (3) silent TLS server

class SilentTls:
    """Says INFO with tls_required, then reads whatever comes and never answers."""

    INFO = (b'INFO {"server_id":"x","version":"2.10.0","proto":1,"max_payload":1048576,'
            b'"tls_required":true}\r\n')

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.first_bytes: list[bytes] = []
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, name="silent-tls", daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return  # closed
            self.conns.append(c)
            c.sendall(self.INFO)
            threading.Thread(target=self._read, args=(c,), daemon=True).start()

    def _read(self, c):
        first = True
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    return
                if first:
                    self.first_bytes.append(data[:1])
                    first = False
        except OSError:
            return  # closed by the test or the client

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


CONNECT_TIMEOUT_MS = 1000


@pytest.mark.parametrize("face", ["python", "tcl"])
def test_silent_tls_server_connect_times_out(tmp_path, face):
    server = SilentTls()
    try:
        cmd = child_cmd(face, "silent_tls") + [f"tls://127.0.0.1:{server.port}", str(CONNECT_TIMEOUT_MS)]
        t0 = time.monotonic()
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=child_env(),
                           stdin=subprocess.DEVNULL)
        wall = time.monotonic() - t0
        lines = [ln for ln in p.stdout.splitlines() if ln.startswith("result ")]
        assert p.returncode == 0 and lines, f"rc={p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
        res = parse_result(lines[-1])
        elapsed = int(res["elapsed_ms"])
        hello = b"\x16" in server.first_bytes
        lost = [m for m in ("Task exception was never retrieved", "Exception in callback", "Traceback")
                if m in p.stderr]
        print(f"\nsilent tls {face} raised={res['raised']} elapsed_ms={elapsed} connect_timeout_ms={CONNECT_TIMEOUT_MS} "
              f"ticks={res.get('ticks', '-')} client_hello_seen={hello} attempts={len(server.conns)} "
              f"stderr_reports={len(lost)} process_s={wall:.1f}")
        assert res["raised"] not in ("-", "connected") and not res["raised"].startswith("other:"), res
        assert hello, f"the client never started the TLS handshake: {server.first_bytes}"
        assert elapsed <= CONNECT_TIMEOUT_MS + 500, f"connect took {elapsed} ms"
        assert not lost, p.stderr
        if face == "tcl":
            # the event loop ran while connect waited: a 50 ms timer kept ticking
            assert int(res["ticks"]) >= (elapsed // 50) // 2 and int(res["ticks"]) >= 5, res
    finally:
        server.close()


# ------------------------------------------------- (4) paused server, ten publishers

PENDING_MSGS = 100


@pytest.mark.parametrize("face", ["python", "tcl"])
def test_paused_server_publishers_wait_and_subscriber_overflows(tmp_path, face):
    # the server keeps a subscriber that reads slowly (the flood must reach the client's own limits)
    srv = NatsServer(port=free_port(), config='max_pending: 512MB\nwrite_deadline: "30s"\n')
    srv.start()
    stopped = [False]
    child = Child(child_cmd(face, "paused_pubs") + [srv.url, str(WRITE_BUF), str(PENDING_MSGS)],
                  tmp_path, f"paused-{face}")
    try:
        async def go():
            await child.hello()
            await asyncio.sleep(0.2)
            base = vm_hwm(child.pid)
            os.kill(srv.pid, signal.SIGSTOP)
            stopped[0] = True
            child.send("go")
            await asyncio.sleep(PUB_PAUSE)
            paused_peak = vm_hwm(child.pid)
            child.send("cont")  # errors from now on count as after the pause
            assert await child.line(30) == "cont", "the child did not take the cont mark"
            os.kill(srv.pid, signal.SIGCONT)
            stopped[0] = False
            await asyncio.sleep(1.5)
            child.send("stop")
            res = parse_result(await child.line(90))
            peak = vm_hwm(child.pid)
            child.send("quit")
            return res, base, paused_peak, peak
        res, base, paused_peak, peak = run(go(), 180)
        rc = child.finish()
        sub_errors = parse_codes(res["sub_errors"])
        growth = peak - base
        bound = 10 * 2 * WRITE_BUF + OVERHEAD
        print(f"\npaused server {face} pause_s={PUB_PAUSE:g} publishers=10 write_buf_kb={WRITE_BUF // 1024} "
              f"published={res['published']} refused={res['refused']} refused_codes={res['codes']} "
              f"pub_errors={res['pub_errors']} received={res['received']} dropped={res.get('dropped', '-')} "
              f"sub_errors={res['sub_errors']} base_rss_mb={base / MiB:.1f} "
              f"paused_rss_growth_mb={(paused_peak - base) / MiB:.1f} peak_rss_growth_mb={growth / MiB:.1f} "
              f"bound_mb={bound / MiB:.0f}")
        assert rc == 0, child.stderr()
        assert int(res["published"]) > 0
        assert res["codes"] == "-", res  # writers waited; none was refused
        assert growth <= bound, f"peak RSS grew by {growth / MiB:.1f} MB"
        assert sub_errors.get("ErrSlowConsumer@after", 0) > 0, res
        assert sub_errors.get("ErrSlowConsumer@before", 0) == 0, res  # nothing flowed while paused
    finally:
        if stopped[0]:
            os.kill(srv.pid, signal.SIGCONT)
        child.close()
        srv.cleanup()
