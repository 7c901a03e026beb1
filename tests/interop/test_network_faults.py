"""Network faults between a client and a real nats-server, on both faces.

A small threaded TCP proxy sits in between and is told, mid-connection, to
- black-hole the connection (a half-open socket: no FIN, no RST, no data),
- half-close it (a FIN towards the client while the proxy still reads), or
- hand the server's bytes to the client one at a time (every frame split at
  every boundary).
The client must detect the fault as the documented error (ErrStaleConnection
through its pings, or a lost connection), reconnect through the proxy, restore
its subscriptions and go on delivering in order.  The Tcl face runs as a
tclnats-tclsh script; its status variable and last_error are checked too.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import textwrap
import threading
import time

import pytest

import tclnats_py
from tclnats_py.testing.server import free_port

pytestmark = pytest.mark.fault


class FaultProxy:
    """Forwards every accepted connection to ``target``; ``mode`` applies to
    the connections open at the moment and to new ones:
    "pass", "blackhole" (swallow both ways), "trickle" (server->client 1 byte
    per send).  ``half_close()`` sends FIN to the current clients."""

    def __init__(self, target_port: int):
        self.target = target_port
        self.mode = "pass"
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.clients: list[socket.socket] = []
        self.accepted = 0
        self.lock = threading.Lock()
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            try:
                s = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                c.close()
                continue
            with self.lock:
                self.clients.append(c)
                self.accepted += 1
            threading.Thread(target=self._pipe, args=(c, s, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(s, c, True), daemon=True).start()

    def _pipe(self, src, dst, to_client):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                mode = self.mode
                if mode == "blackhole":
                    continue
                if mode == "trickle" and to_client:
                    for i in range(len(data)):
                        dst.sendall(data[i:i + 1])
                else:
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def half_close(self):
        with self.lock:
            for c in self.clients:
                try:
                    c.shutdown(socket.SHUT_WR)
                except OSError:
                    pass

    def close(self):
        self.closed = True
        self.sock.close()
        with self.lock:
            for c in self.clients:
                try:
                    c.close()
                except OSError:
                    pass


@pytest.fixture
def proxy(nats_server):
    p = FaultProxy(nats_server.port)
    yield p
    p.close()


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def _until(cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.01)


# ------------------------------------------------------------ Python face

@pytest.mark.parametrize("fault", ["blackhole", "half_close"])
def test_python_face_detects_fault_and_recovers(proxy, nats_server, fault):
    async def go():
        errors, statuses = [], []
        c = await tclnats_py.connect(f"nats://127.0.0.1:{proxy.port}", ping_interval=0.2,
                                     max_outstanding_pings=2, reconnect_time_wait=0.1,
                                     error_cb=errors.append, status_cb=statuses.append)
        sub = await c.subscribe("nf.py")
        await c.flush()
        peer = await tclnats_py.connect(nats_server.url)
        peer.publish("nf.py", b"before")
        assert (await sub.next_msg(5)).data == b"before"
        if fault == "blackhole":
            proxy.mode = "blackhole"
            await _until(lambda: "reconnecting" in statuses)
            assert "ErrStaleConnection" in [e.code for e in errors]
            proxy.mode = "pass"
        else:
            proxy.half_close()
            await _until(lambda: "reconnecting" in statuses)
        # publishes made while reconnecting (or just after) are sent in order
        for i in range(20):
            c.publish("nf.py", f"buffered {i}".encode())
        await _until(lambda: c.status == "connected")
        got = [(await sub.next_msg(5)).data for _ in range(20)]
        assert got == [f"buffered {i}".encode() for i in range(20)]
        # the subscription was restored on the new connection
        peer.publish("nf.py", b"after")
        assert (await sub.next_msg(5)).data == b"after"
        assert proxy.accepted >= 2
        assert statuses[-2:] == ["reconnecting", "connected"]
        await peer.close()
        await c.close()
    run(go())


def test_python_face_every_frame_split(proxy):
    async def go():
        proxy.mode = "trickle"
        c = await tclnats_py.connect(f"nats://127.0.0.1:{proxy.port}")
        sub = await c.subscribe("nf.split")
        for i in range(100):
            c.publish("nf.split", f"m{i}\r\nPUB x 1\r\n".encode(), headers={"H": [f"v{i}", "w"]})
        got = [await sub.next_msg(10) for _ in range(100)]
        assert [m.data for m in got] == [f"m{i}\r\nPUB x 1\r\n".encode() for i in range(100)]
        assert [m.headers.get_all("H") for m in got] == [[f"v{i}", "w"] for i in range(100)]
        await c.close()
    run(go())


# ------------------------------------------------------------ Tcl face

TCL_SCRIPT = r"""
package require nats
lassign $argv proxy_url server_url fault
set c [nats::connection new faulty -log_chan stderr]
$c configure -servers $proxy_url -ping_interval 200 -max_outstanding_pings 2 -reconnect_time_wait 100
set ::statuses [list]
trace add variable [info object namespace $c]::status write \
    [list apply {{ns args} {lappend ::statuses [set ${ns}::status]}} [info object namespace $c]]
set ::errors [list]
trace add variable [info object namespace $c]::last_error write \
    [list apply {{ns args} {
        set e [set ${ns}::last_error]
        if {$e ne ""} { lappend ::errors [lindex [dict get $e code] 1] }
    }} [info object namespace $c]]
$c connect
set peer [nats::connection new peer -log_chan stderr]
$peer configure -servers $server_url
$peer connect
set ::got [list]
$c subscribe nf.tcl -callback [list apply {{s m r} {lappend ::got $m}}]
$c ping
proc wait_until {cond ms} {
    set deadline [expr {[clock milliseconds] + $ms}]
    while {![uplevel #0 [list expr $cond]]} {
        if {[clock milliseconds] > $deadline} { error "timed out waiting for $cond" }
        after 10 {set ::tick 1}
        vwait ::tick
    }
}
$peer publish nf.tcl before
wait_until {[llength $::got] == 1} 5000
puts "fault_start"
flush stdout
# the harness applies the fault now, then answers on stdin
gets stdin
if {$fault ne "trickle"} {
    wait_until {"reconnecting" in $::statuses} 10000
    puts "detected"
    flush stdout
    gets stdin
    for {set i 0} {$i < 20} {incr i} { $c publish nf.tcl "buffered $i" }
    wait_until {[$c cget -status] eq "connected"} 10000
    wait_until {[llength $::got] == 21} 10000
    $peer publish nf.tcl after
    wait_until {[llength $::got] == 22} 5000
} else {
    for {set i 0} {$i < 100} {incr i} {
        $peer publish nf.tcl "m$i\r\nMSG x 1 1\r\n" -header [dict create H [list v$i w]]
    }
    wait_until {[llength $::got] == 101} 20000
}
foreach m $::got { puts "item [string map {\r <CR> \n <LF>} $m]" }
puts "statuses [join $::statuses]"
puts "errors [join $::errors]"
$peer destroy
$c destroy
"""


@pytest.mark.parametrize("fault", ["blackhole", "half_close", "trickle"])
def test_tcl_face_detects_fault_and_recovers(proxy, nats_server, tmp_path, fault):
    script = tmp_path / "faulty.tcl"
    script.write_text(TCL_SCRIPT)
    p = subprocess.Popen(["tclnats-tclsh", str(script), f"nats://127.0.0.1:{proxy.port}", nats_server.url, fault],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "fault_start"
        if fault == "blackhole":
            proxy.mode = "blackhole"
        elif fault == "half_close":
            proxy.half_close()
        else:
            proxy.mode = "trickle"
        p.stdin.write("go\n")
        p.stdin.flush()
        if fault != "trickle":
            assert p.stdout.readline().strip() == "detected"
            proxy.mode = "pass"
            p.stdin.write("go\n")
            p.stdin.flush()
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    got, statuses, errors = [], [], []
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        if key == "item":
            got.append(value.replace("<CR>", "\r").replace("<LF>", "\n"))
        elif key == "statuses":
            statuses = value.split()
        elif key == "errors":
            errors = value.split()
    if fault == "trickle":
        assert list(got) == ["before"] + [f"m{i}\r\nMSG x 1 1\r\n" for i in range(100)]
        assert list(statuses) == ["connecting", "connected"]
    else:
        assert list(got) == ["before"] + [f"buffered {i}" for i in range(20)] + ["after"]
        assert list(statuses) == ["connecting", "connected", "reconnecting", "connected"]
        if fault == "blackhole":
            assert "ErrStaleConnection" in errors
        assert proxy.accepted >= 2


# ------------------------------------------------------------ cluster failover, Tcl face

KILLS = int(os.environ.get("TCLNATS_FAILOVER_KILLS", "2"))
INTERVAL = float(os.environ.get("TCLNATS_FAILOVER_INTERVAL", "0.5"))


def test_tcl_face_cluster_failover_requests_and_buffered_order():
    """The node the Tcl client uses is killed again and again (the long form:
    TCLNATS_FAILOVER_KILLS=20 TCLNATS_FAILOVER_INTERVAL=3, about a minute).
    After each failover: publishes made while reconnecting arrive complete and
    in order, requests are answered, and the status trace shows
    reconnecting -> connected.  One watcher/responder connection starts on each
    node (responders in one queue group); each cycle is checked on a watcher
    whose node survived it."""
    import tkinter

    from tclnats_py.testing.server import NatsCluster
    from tclnats_py.tclface.bridge import install

    def pump(tk, cond, timeout=15.0):
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                raise AssertionError("timed out pumping Tcl events")
            if not tk.dooneevent(2):  # DONT_WAIT
                time.sleep(0.002)

    with NatsCluster(3) as cluster:
        interp = tkinter.Tcl()
        install(interp)
        tk = interp.tk
        servers = " ".join(cluster.urls)
        tk.eval(f"""
            package require nats
            set ::statuses [list]
            set c [nats::connection new client -log_chan stderr -log_level error]
            $c configure -servers [list {servers}] -randomize false -reconnect_time_wait 100 \\
                -max_reconnect_attempts -1 -connect_timeout 500
            trace add variable [info object namespace $c]::status write \\
                [list apply {{{{ns args}} {{lappend ::statuses [set ${{ns}}::status]}}}} [info object namespace $c]]
            $c connect
        """)
        tk.eval("""
            proc make_watcher {i url} {
                set ::w($i) [nats::connection new watcher$i -log_chan stderr -log_level error]
                $::w($i) configure -servers $url -randomize false -reconnect_time_wait 100 \\
                    -max_reconnect_attempts -1 -connect_timeout 500
                $::w($i) connect
                $::w($i) subscribe ha.svc -queue svc \\
                    -callback [list apply {{conn s m reply} {$conn publish $reply "re:$m"}} $::w($i)]
                if {![info exists ::seen($i)]} { set ::seen($i) [list] }
                $::w($i) subscribe ha.buf -callback [list apply {{i s m reply} {lappend ::seen($i) $m}} $i]
                $::w($i) ping
            }
        """)
        for i, url in enumerate(cluster.urls):
            tk.call("make_watcher", i, url)
        start = time.monotonic()
        no_responders = 0
        for cycle in range(KILLS):
            port = int(tk.eval("lindex [$c current_server] 1"))
            victim = next(k for k, srv in enumerate(cluster.servers) if srv.port == port)
            # a watcher that stays up this cycle: connected now, to another node
            # (watchers fail over too; one is sent back to its own node if needed)
            others = [i for i in range(3) if int(tk.eval(f"lindex [$w({i}) current_server] 1")) != port]
            if others:
                witness = others[0]
            else:
                witness = (victim + 1) % 3
                tk.eval(f"$w({witness}) destroy")
                tk.call("make_watcher", witness, cluster.urls[witness])
            before = len(tk.splitlist(tk.eval(f"set ::seen({witness})")))
            cluster.kill(victim)
            pump(tk, lambda: tk.eval("$c cget -status") != "connected")
            expected = [f"c{cycle}-{k}" for k in range(10)]
            for msg in expected:
                tk.eval(f"$c publish ha.buf {msg}")   # buffered while reconnecting
            pump(tk, lambda: tk.eval("$c cget -status") == "connected")
            # a node that was just restarted may learn its routes' interest a
            # moment after the client lands on it: retry "no responders" briefly
            deadline = time.monotonic() + 3
            while True:
                try:
                    answer = tk.eval(f"$c request ha.svc q{cycle} -timeout 3000")
                    break
                except tkinter.TclError as e:
                    if "No responders" not in str(e) or time.monotonic() > deadline:
                        raise
                    no_responders += 1
                    pause = time.monotonic() + 0.05
                    pump(tk, lambda: time.monotonic() >= pause)
            assert answer == f"re:q{cycle}"
            pump(tk, lambda: len(tk.splitlist(tk.eval(f"set ::seen({witness})"))) >= before + 10)
            assert list(tk.splitlist(tk.eval(f"set ::seen({witness})")))[before:] == expected
            cluster.restart(victim)
            for i in range(3):
                pump(tk, lambda: tk.eval(f"$w({i}) cget -status") == "connected")
                tk.eval(f"$w({i}) ping")
            pause = time.monotonic() + INTERVAL
            pump(tk, lambda: time.monotonic() >= pause)
        statuses = tk.eval("set ::statuses").split()
        tk.eval("$c destroy; foreach i {0 1 2} { $w($i) destroy }")
        print(f"\nfailovers={KILLS} seconds={time.monotonic() - start:.1f} buffered={10 * KILLS} lost=0 "
              f"out_of_order=0 statuses={len(statuses)} no_responders_retries={no_responders}")
        assert statuses[:2] == ["connecting", "connected"]
        assert statuses[2:] == ["reconnecting", "connected"] * KILLS
