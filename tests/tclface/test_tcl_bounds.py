"""Bounded memory and no freezes on the Tcl face.

Each test runs a Tcl script in its own ``tclnats-tclsh`` process (so its
memory is its own, read from /proc/self/status), or in a Tcl interpreter of
this process when Python must act between two steps (restart a server).
A server is stalled with SIGSTOP (the script does ``exec kill -STOP``) and
always continued again here.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import tkinter

import pytest

from tclnats_py.tclface import bridge as tclbridge

pytestmark = pytest.mark.tcl

EXE = shutil.which("tclnats-tclsh")


def run_tcl(tmp_path, script, args=(), timeout=120):
    cmd = [EXE] if EXE else [sys.executable, "-m", "tclnats_py.tclface.tclsh"]
    path = tmp_path / "script.tcl"
    path.write_text(textwrap.dedent(script), encoding="utf-8")
    p = subprocess.run(cmd + [str(path)] + [str(a) for a in args], capture_output=True, text=True,
                       timeout=timeout, check=False)
    assert p.returncode == 0, f"rc={p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    out = {}
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            _, key, value = line.split(" ", 2)
            out[key] = value
    return out, p.stdout


# the helpers every script starts with: RESULT lines, memory, timing
PRELUDE = r"""
package require nats
proc result {key value} { puts "RESULT $key $value"; flush stdout }
proc vm {field} {
    set f [open /proc/self/status]
    set text [read $f]
    close $f
    regexp "$field:\\s+(\\d+) kB" $text -> kb
    return $kb
}
proc code_of {script} {
    try {
        uplevel 1 $script
    } trap NATS {msg opts} {
        return [lindex [dict get $opts -errorcode] 1]
    }
    return ok
}
proc pause {ms} {
    after $ms [list set ::_pause 1]
    vwait ::_pause
}
"""


@pytest.fixture
def stalled_cleanup():
    """Servers stopped with SIGSTOP in a test are continued at its end."""
    pids = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass


# ------------------------------------------------------------------ 1. TLS handshake

class SilentTlsServer:
    """Announces TLS in its INFO and then says nothing (no handshake)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.conns = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        info = {"server_id": "silent", "version": "2.10.0", "proto": 1, "host": "127.0.0.1",
                "port": self.port, "max_payload": 1048576, "headers": True, "tls_required": True}
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            c.sendall(b"INFO " + json.dumps(info).encode() + b"\r\n")
            self.conns.append(c)   # kept open, never answered

    def close(self):
        self.sock.close()
        for c in self.conns:
            c.close()


def test_tls_handshake_with_a_silent_server_times_out_and_timers_run(tmp_path, tls_certs):
    srv = SilentTlsServer()
    try:
        out, text = run_tcl(tmp_path, PRELUDE + r"""
            lassign $argv port ca
            set ::ticks 0
            proc tick {} { incr ::ticks; after 50 tick }
            after 50 tick
            set c [nats::connection new silent -log_chan stdout -log_level error]
            $c configure -servers nats://127.0.0.1:$port -connect_timeout 700 \
                -tls_opts [list -cafile $ca]
            set t0 [clock milliseconds]
            set code [code_of {$c connect}]
            result elapsed [expr {[clock milliseconds] - $t0}]
            result code $code
            result ticks $::ticks
            result last [lindex [dict get [set [info object namespace $c]::last_error] code] 1]
            $c destroy
        """, args=(srv.port, tls_certs["ca"]), timeout=60)
    finally:
        srv.close()
    assert out["code"] == "ErrConnectionTimeout", text
    assert out["last"] == "ErrConnectionTimeout", text
    assert 650 <= int(out["elapsed"]) < 2000, text
    # the application's 50 ms timer kept running during the handshake
    assert int(out["ticks"]) >= 8, text


def test_tls_still_connects_and_checks_the_name(tmp_path, tls_server):
    certs = tls_server.certs
    out, text = run_tcl(tmp_path, PRELUDE + r"""
        lassign $argv port ca
        set c [nats::connection new tlsok -log_chan stdout -log_level error]
        $c configure -servers tls://localhost:$port -tls_opts [list -cafile $ca]
        $c connect
        set ::got ""
        $c subscribe tls.x -callback {apply {{s m r} {set ::got $m}}}
        $c publish tls.x hello
        vwait ::got
        result got $::got
        $c destroy
        # the certificate is for localhost and 127.0.0.1, not for this name
        set d [nats::connection new tlsbad -log_chan stdout -log_level error]
        $d configure -servers tls://127.0.0.1:$port \
            -tls_opts [list -cafile $ca -servername not-the-server.example]
        result bad [code_of {$d connect}]
        $d destroy
    """, args=(tls_server.port, certs["ca"]), timeout=60)
    assert out["got"] == "hello", text
    assert out["bad"] == "ErrTLS", text


# ------------------------------------------------------------------ 2. close never blocks

def test_disconnect_and_destroy_with_megabytes_for_a_stalled_server_return_promptly(
        tmp_path, fresh_nats_server, stalled_cleanup):
    srv = fresh_nats_server
    stalled_cleanup.append(srv.pid)
    out, text = run_tcl(tmp_path, PRELUDE + r"""
        lassign $argv url pid
        set payload [string repeat x 1000000]
        foreach name {a b} {
            set c [nats::connection new $name -log_chan stdout -log_level error]
            # room for all of it: no publish waits, everything is queued
            $c configure -servers $url -write_buf_size 100000000
            $c connect
            $c publish big.x $payload
            $c ping
            set conns($name) $c
        }
        exec kill -STOP $pid
        foreach name {a b} {
            for {set i 0} {$i < 24} {incr i} {
                $conns($name) publish big.x $payload
            }
            pause 100  ;# the flush runs: the kernel's buffers fill, the rest waits
        }
        set t0 [clock milliseconds]
        $conns(a) disconnect
        result disconnect_ms [expr {[clock milliseconds] - $t0}]
        result status [$conns(a) cget -status]
        set t0 [clock milliseconds]
        $conns(b) destroy
        result destroy_ms [expr {[clock milliseconds] - $t0}]
        $conns(a) destroy
    """, args=(srv.url, srv.pid), timeout=60)
    assert out["status"] == "closed", text
    assert int(out["disconnect_ms"]) < 1000, text
    assert int(out["destroy_ms"]) < 1000, text


# ------------------------------------------------------------------ 3. write backpressure

LOOP_SCRIPT = PRELUDE + r"""
    lassign $argv url pid mode
    set c [nats::connection new loop -log_chan stdout -log_level error]
    $c configure -servers $url -flush_timeout 1500
    $c connect
    set payload [string repeat y 1024]
    $c publish loop.x $payload
    $c ping
    set before [vm VmRSS]
    exec kill -STOP $pid
    set t0 [clock milliseconds]
    set n 0
    set code ok
    set opts [expr {$mode eq "headers" ? {-header {k v}} : {}}]
    try {
        for {} {$n < 200000} {incr n} {
            $c publish loop.x $payload {*}$opts
        }
    } trap NATS {msg err} {
        set code [lindex [dict get $err -errorcode] 1]
        set text $msg
    }
    result code $code
    result published $n
    result elapsed [expr {[clock milliseconds] - $t0}]
    result rss_before $before
    result hwm_after [vm VmHWM]
    if {[info exists text]} { result text [string map {"\n" " "} $text] }
    $c destroy
"""


@pytest.mark.parametrize("mode", ["fast", "headers"])
def test_publish_loop_to_a_stalled_server_times_out_with_bounded_memory(
        tmp_path, fresh_nats_server, stalled_cleanup, mode):
    srv = fresh_nats_server
    stalled_cleanup.append(srv.pid)
    out, text = run_tcl(tmp_path, LOOP_SCRIPT, args=(srv.url, srv.pid, mode), timeout=120)
    assert out["code"] == "ErrTimeout", text
    assert "not published" in out["text"], text
    # it waited flush_timeout for the socket (and the kernel took a few MB first)
    assert 1400 <= int(out["elapsed"]) < 15000, text
    # far fewer than 200k x 1 KiB were taken, and memory grew by little:
    # write_buf_size (4 MiB) in the engine, a chunk in Tcl, the kernel's share
    assert int(out["published"]) < 100000, text
    grown_mb = (int(out["hwm_after"]) - int(out["rss_before"])) / 1024
    assert grown_mb < 48, text


def test_publishers_driven_by_events_wait_too(tmp_path, fresh_nats_server, stalled_cleanup):
    """A publisher looping through the event loop (after 0) never lets the
    fast path's batch grow (posted flushes take it to the engine each turn):
    it must wait all the same once write_buf_size bytes are on their way."""
    srv = fresh_nats_server
    stalled_cleanup.append(srv.pid)
    out, text = run_tcl(tmp_path, PRELUDE + r"""
        lassign $argv url pid
        set c [nats::connection new pump -log_chan stdout -log_level error]
        $c configure -servers $url -write_buf_size 262144 -flush_timeout 1500
        $c connect
        set ::payload [string repeat q 1024]
        $c publish pump.x $::payload
        $c ping
        set before [vm VmRSS]
        exec kill -STOP $pid
        set ::n 0
        set t0 [clock milliseconds]
        proc pump {} {
            try {
                for {set i 0} {$i < 10} {incr i} {
                    $::c publish pump.x $::payload
                    incr ::n
                }
            } trap NATS {msg opts} {
                set ::code [lindex [dict get $opts -errorcode] 1]
                return
            }
            if {$::n >= 200000} {
                set ::code ok
                return
            }
            after 0 pump
        }
        after 0 pump
        vwait ::code
        result code $::code
        result published $::n
        result elapsed [expr {[clock milliseconds] - $t0}]
        result grown_kb [expr {[vm VmHWM] - $before}]
        $c destroy
    """, args=(srv.url, srv.pid), timeout=120)
    assert out["code"] == "ErrTimeout", text
    assert int(out["published"]) < 50000, text
    assert int(out["elapsed"]) >= 1400, text
    assert int(out["grown_kb"]) < 32 * 1024, text


def test_publish_waits_for_room_and_then_everything_arrives(tmp_path, fresh_nats_server):
    """A slow reader (a server stopped for a while) makes the publisher wait,
    not fail, when room comes back within flush_timeout; nothing is lost."""
    srv = fresh_nats_server
    out, text = run_tcl(tmp_path, PRELUDE + r"""
        lassign $argv url pid
        set c [nats::connection new waiter -log_chan stdout -log_level error]
        $c configure -servers $url -write_buf_size 200000 -flush_timeout 10000
        $c connect
        set r [nats::connection new reader -log_chan stdout -log_level error]
        $r configure -servers $url
        $r connect
        set ::count 0
        $r subscribe wait.x -callback {apply {{s m rp} {incr ::count}}}
        $r ping
        exec kill -STOP $pid
        after 700 [list exec kill -CONT $pid]
        set t0 [clock milliseconds]
        set payload [string repeat z 1000]
        for {set i 0} {$i < 20000} {incr i} {
            $c publish wait.x $payload
        }
        result loop_ms [expr {[clock milliseconds] - $t0}]
        $c ping -timeout 20000
        set deadline [expr {[clock milliseconds] + 20000}]
        while {$::count < 20000 && [clock milliseconds] < $deadline} { pause 50 }
        result count $::count
        $c destroy
        $r destroy
    """, args=(srv.url, srv.pid), timeout=120)
    assert out["count"] == "20000", text
    assert int(out["loop_ms"]) >= 600, text   # it waited for the stopped server


# ------------------------------------------------------------------ 4. outage: reconnect buffer

def _host():
    host = tkinter.Tcl()
    tclbridge.install(host)
    host.eval("package require nats")
    return host


def _conn(host, var):
    bridge = tclbridge._bridges[tclbridge.Interp.from_address(host.tk.interpaddr()).interpaddr()]
    ns = host.eval(f"info object namespace ${var}")
    return next(c for c in bridge.conns.values() if c.ns == ns)


def test_publishes_during_an_outage_are_bounded_and_arrive_after_reconnect(fresh_nats_server):
    srv = fresh_nats_server
    host = _host()
    host.eval(f"""
        set c [nats::connection new outage -log_chan stdout -log_level error]
        $c configure -servers {srv.url} -reconnect_buf_size 60000 -reconnect_time_wait 100 \\
            -max_reconnect_attempts -1
        $c connect
        set ::got [list]
        $c subscribe out.x -callback {{apply {{{{s m r}} {{lappend ::got $m}}}}}}
        $c publish out.x before   ;# out.x joins the fast path
        $c ping
        set ns [info object namespace $c]
    """)
    assert host.eval("set ${ns}::FastMax") != "-1"
    srv.stop()
    host.eval("""
        set deadline [expr {[clock milliseconds] + 5000}]
        while {[$c cget -status] eq "connected" && [clock milliseconds] < $deadline} {
            after 20 {set ::_w 1}; vwait ::_w
        }
    """)
    assert host.eval("$c cget -status") in ("reconnecting", "connecting")
    # the fast path is closed while not connected
    assert host.eval("set ${ns}::FastMax") == "-1"
    host.eval("""
        set ::accepted 0
        set ::code ok
        set payload [string repeat p 1000]
        try {
            for {set i 0} {$i < 1000} {incr i} {
                $c publish out.x "$i [string range $payload 0 999]"
                incr ::accepted
            }
        } trap NATS {msg opts} {
            set ::code [lindex [dict get $opts -errorcode] 1]
        }
    """)
    assert host.eval("set ::code") == "ErrReconnectBufExceeded"
    accepted = int(host.eval("set ::accepted"))
    assert 40 <= accepted < 60
    srv.start()
    host.eval(f"""
        set deadline [expr {{[clock milliseconds] + 10000}}]
        while {{[llength $::got] < {accepted + 1} && [clock milliseconds] < $deadline}} {{
            after 20 {{set ::_w 1}}; vwait ::_w
        }}
    """)
    got = host.tk.splitlist(host.eval("set ::got"))
    assert got[0] == "before"
    assert [int(g.split(" ", 1)[0]) for g in got[1:]] == list(range(accepted))
    host.eval("$c destroy")


def test_answered_requests_are_not_kept_until_their_timeout(nats_server):
    """A request answered in time leaves nothing behind in the bridge: its
    deadline is forgotten at once, not when its timeout would have passed
    (a 60 s timeout kept every answered request, its message and headers,
    for a minute: memory by the request rate, and a garbage collector
    walking them all)."""
    import gc
    import weakref

    from tclnats_py.engine.connection import Request

    host = _host()
    host.eval(f"""
        set c [nats::connection new kept -log_chan stdout -log_level error]
        $c configure -servers {nats_server.url}
        $c connect
        $c subscribe kept.svc -callback [list apply {{{{c s m r}} {{$c publish $r "re:$m"}}}} $c]
        $c subscribe kept.silent -callback [list apply {{{{s m r}} {{}}}}]
        $c ping
    """)
    conn = _conn(host, "c")
    seen: list = []
    orig = conn.engine.request

    def watch(*a, **kw):
        req = orig(*a, **kw)
        seen.append(weakref.ref(req))
        return req

    conn.engine.request = watch
    host.eval("""
        for {set i 0} {$i < 500} {incr i} {
            set r [$c request kept.svc $i -timeout 60000]
            if {$r ne "re:$i"} { error "reply $i: $r" }
        }
    """)
    conn.engine.request = orig
    gc.collect()
    assert len(seen) == 500
    assert [w for w in seen if w() is not None and isinstance(w(), Request)] == []
    assert conn.deadlines == {} and conn.deadline_keys == {}
    assert len(conn.deadline_heap) <= 130   # cancelled entries are compacted away
    # a request still waiting keeps its deadline, and times out on it
    host.eval("set ::late [$c request kept.silent x -timeout 300 -callback {apply {{t m} {set ::late_out $t}}}]")
    assert len(conn.deadline_keys) == 1
    host.eval("vwait ::late_out")
    assert host.eval("set ::late_out") == "1"
    assert conn.deadline_keys == {}
    host.eval("$c destroy")


def test_publishes_framed_in_tcl_when_the_connection_breaks_reach_the_engine_in_order(nats_server):
    host = _host()
    host.eval(f"""
        set c [nats::connection new framed -log_chan stdout -log_level error]
        $c configure -servers {nats_server.url} -max_reconnect_attempts 5 -reconnect_time_wait 50
        $c connect
        $c publish fr.x 0
        $c ping
        set ns [info object namespace $c]
    """)
    conn = _conn(host, "c")
    host.eval("for {set i 1} {$i <= 5} {incr i} { $c publish fr.x $i }")
    assert host.eval("set ${ns}::PendingCount") == "5"   # framed in Tcl, not written yet
    conn.engine.connection_lost("test: the socket broke")
    conn.run()
    assert host.eval("set ${ns}::PendingCount") == "0"
    assert host.eval("set ${ns}::FastMax") == "-1"
    host.eval("$c publish fr.x 6")                       # through Engine.publish now
    pending = b"".join(conn.engine.pending_commands())
    assert pending.count(b"PUB fr.x") == 6
    payloads = [int(line) for line in pending.split(b"\r\n")[1::2] if line]
    assert payloads == [1, 2, 3, 4, 5, 6]
    host.eval("$c destroy")


# ------------------------------------------------------------------ 5. async JetStream publish

def test_async_js_publish_stalls_then_every_callback_fires_once(tmp_path, fresh_server, stalled_cleanup):
    srv = fresh_server
    stalled_cleanup.append(srv.pid)
    out, text = run_tcl(tmp_path, PRELUDE + r"""
        lassign $argv url pid
        set c [nats::connection new jsasync -log_chan stdout -log_level error]
        $c configure -servers $url
        $c connect
        set js [$c jet_stream -publish_async_max_pending 10 -publish_async_stall_wait 300]
        $js add_stream ASYNC -subjects {as.>}
        proc done {id timedOut ack err} {
            incr ::calls($id)
            if {$timedOut || $err ne ""} { incr ::bad }
        }
        set ::bad 0
        # many more than max_pending, the server running: each waits its turn
        for {set i 0} {$i < 200} {incr i} {
            $js publish as.x $i -callback [list done $i] -timeout 10000
        }
        set deadline [expr {[clock milliseconds] + 10000}]
        while {[array size ::calls] < 200 && [clock milliseconds] < $deadline} { pause 20 }
        result first_calls [array size ::calls]
        result first_once [expr {[lsort -unique [lmap {k v} [array get ::calls] {set v}]] eq "1"}]
        # the server stalls: 10 go out, the 11th waits 300 ms and fails
        array unset ::calls
        exec kill -STOP $pid
        for {set i 0} {$i < 10} {incr i} {
            $js publish as.y $i -callback [list done $i] -timeout 10000
        }
        set t0 [clock milliseconds]
        result stall_code [code_of {$js publish as.y 10 -callback [list done 10] -timeout 10000}]
        result stall_ms [expr {[clock milliseconds] - $t0}]
        exec kill -CONT $pid
        set deadline [expr {[clock milliseconds] + 10000}]
        while {[array size ::calls] < 10 && [clock milliseconds] < $deadline} { pause 20 }
        pause 200
        result second_calls [lsort -integer [array names ::calls]]
        result second_once [expr {[lsort -unique [lmap {k v} [array get ::calls] {set v}]] eq "1"}]
        result bad $::bad
        result bad_option [code_of {$c jet_stream -publish_async_max_pending 0}]
        $js delete_stream ASYNC
        $c destroy
    """, args=(srv.url, srv.pid), timeout=120)
    assert out["first_calls"] == "200", text
    assert out["first_once"] == "1", text
    assert out["stall_code"] == "ErrTooManyStalledMsgs", text
    assert 250 <= int(out["stall_ms"]) < 2000, text
    assert out["second_calls"] == " ".join(str(i) for i in range(10)), text
    assert out["second_once"] == "1", text
    assert out["bad"] == "0", text
    assert out["bad_option"] == "ErrInvalidArg", text


# ------------------------------------------------------------------ 6. slow consumer

def test_slow_consumer_drops_past_the_pending_limit_and_reports_once(tmp_path, nats_server):
    """Deliveries handed to Tcl by a read and not run yet count, per
    subscription: the first callback of a burst waits in the event loop (a
    nested vwait) while the rest of the burst waits behind it; past
    -pending_msgs_limit the burst is dropped, ErrSlowConsumer is reported once
    for the episode (later reads during it add no report), and once the
    callbacks have caught up, deliveries flow again."""
    out, text = run_tcl(tmp_path, PRELUDE + r"""
        lassign $argv url
        set c [nats::connection new slow -log_chan stdout -log_level error]
        $c configure -servers $url -pending_msgs_limit 20
        $c connect
        set p [nats::connection new pub -log_chan stdout -log_level error]
        $p configure -servers $url
        $p connect
        set ::got 0
        set ::errors 0
        trace add variable [info object namespace $c]::last_error write {apply {args {incr ::errors}}}
        proc on_msg {s m r} {
            incr ::got
            if {$::got == 1} {
                # the first callback waits in the event loop: the next reads go on meanwhile
                pause 1500
            }
        }
        $c subscribe slow.x -callback on_msg
        $c ping
        for {set i 0} {$i < 500} {incr i} {
            $p publish slow.x $i
        }
        $p ping
        set deadline [expr {[clock milliseconds] + 5000}]
        while {$::got < 21 && [clock milliseconds] < $deadline} { pause 50 }
        pause 300
        result first_got $::got
        result errors $::errors
        result code [lindex [dict get [set [info object namespace $c]::last_error] code] 1]
        # caught up: a new burst is delivered in full
        set before $::got
        for {set i 0} {$i < 10} {incr i} { $p publish slow.x again }
        $p ping
        set deadline [expr {[clock milliseconds] + 3000}]
        while {$::got < $before + 10 && [clock milliseconds] < $deadline} { pause 20 }
        result second [expr {$::got - $before}]
        $c destroy
        $p destroy
    """, args=(nats_server.url,), timeout=60)
    # the one running and 19 waiting behind it: the rest of the 500 was dropped
    assert out["first_got"] == "20", text
    assert out["errors"] == "1", text
    assert out["code"] == "ErrSlowConsumer", text
    assert out["second"] == "10", text


def test_default_limits_drop_nothing(tmp_path, nats_server):
    out, text = run_tcl(tmp_path, PRELUDE + r"""
        lassign $argv url
        set c [nats::connection new fast -log_chan stdout -log_level error]
        $c configure -servers $url
        $c connect
        set ::got 0
        $c subscribe all.x -callback {apply {{s m r} {incr ::got}}}
        $c ping
        for {set i 0} {$i < 20000} {incr i} { $c publish all.x $i }
        $c ping
        set deadline [expr {[clock milliseconds] + 10000}]
        while {$::got < 20000 && [clock milliseconds] < $deadline} { pause 20 }
        result got $::got
        result last_error [set [info object namespace $c]::last_error]
        $c destroy
    """, args=(nats_server.url,), timeout=60)
    assert out["got"] == "20000", text
    assert out.get("last_error", "") == "", text
