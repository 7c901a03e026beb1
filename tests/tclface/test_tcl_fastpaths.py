"""The Tcl face's per-message paths in C (tclnats_py/_ext/tclfast.c), run by
stock tclsh with the extension:

- the method ``publish`` of ``nats::connection`` in C: the same results and
  errors as the Tcl method it replaces, whichever path a publish takes (the
  fast path for ASCII subjects by the engine's rule and subjects the engine
  accepted before, the general path
  otherwise, room first when the batch is full), in callbacks and in
  coroutines;
- the C reader: plain messages of callback subscriptions go to their
  callbacks without Python, everything else through the engine, all in the
  order of the stream, with -dictmsg, headers, -max_msgs, unsubscribing in
  a callback, errors in callbacks and slow consumers as before.
"""

from __future__ import annotations

import os
import subprocess
import textwrap

import pytest

from tclnats_py.tclface.bridge import tcl_library_dir
from tclnats_py.tclface.tclsh import find_tclsh

pytestmark = pytest.mark.tcl

TCLSH = find_tclsh()

PRELUDE = r"""
package require nats
proc result {key value} { puts "RESULT $key $value"; flush stdout }
proc wait_for {cond {ms 5000}} {
    set deadline [expr {[clock milliseconds] + $ms}]
    while {![uplevel #0 [list expr $cond]] && [clock milliseconds] < $deadline} {
        after 10 {set ::tick 1}
        vwait ::tick
    }
}
proc error_of {script} {
    if {[catch {uplevel 1 $script} err opts]} {
        return [list [dict get $opts -errorcode] $err]
    }
    return ok
}
"""


def run_tcl(tmp_path, script, *args, timeout=120):
    path = tmp_path / "script.tcl"
    path.write_text(PRELUDE + textwrap.dedent(script), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "TCLLIBPATH"}
    env["TCLLIBPATH"] = tcl_library_dir()
    p = subprocess.run([TCLSH, str(path), *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, f"rc={p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    out = {}
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            _, key, value = (line + " ").split(" ", 2)
            value = value[:-1]
            out[key] = value
    return out, p.stdout + p.stderr


# ------------------------------------------------------------ publish

def test_publish_is_the_c_method_with_the_tcl_methods_results(tmp_path, nats_server):
    out, text = run_tcl(tmp_path, r"""
        lassign $argv url
        set c [nats::connection new pubm]
        $c configure -servers $url
        $c connect
        set ::got [list]
        $c subscribe fp.> -callback {apply {{s m r} {lappend ::got [list $s $m $r]}}}
        $c ping
        # the first publish of a subject takes the general path, the next ones the C path
        result first [$c publish fp.a one]
        result second [$c publish fp.a two]
        result reply [$c publish fp.a three fp.r]
        result reply_opt [$c publish fp.a four -reply fp.r]
        result header [$c publish fp.a five -header {k v}]
        # errors: the same as the general path gives, first use or not
        result bad_subject [error_of {$c publish "fp a" x}]
        result bad_subject_again [error_of {$c publish "fp a" x}]
        result bad_reply [error_of {$c publish fp.a x "r r"}]
        result bad_reply_opt [error_of {$c publish fp.a x -reply "r r"}]
        result missing_value [error_of {$c publish fp.a x -reply}]
        result bad_option [error_of {$c publish fp.a x -nope 1}]
        result few_args [error_of {$c publish fp.a}]
        set big [string repeat x [expr {[dict get [$c server_info] max_payload] + 1}]]
        result too_big [lindex [error_of {$c publish fp.a $big}] 0]
        result kind [expr {"publish" in [info class methods ::nats::connection]}]
        $c ping
        wait_for {[llength $::got] >= 5}
        result got $::got
        $c destroy
    """, nats_server.url)
    assert out["first"] == "" and out["second"] == "" and out["reply"] == "", text
    assert out["header"] == "", text
    assert out["bad_subject"] == "{NATS ErrBadSubject} {Invalid subject fp a}", text
    assert out["bad_subject_again"] == out["bad_subject"], text
    assert out["bad_reply"].startswith("{NATS ErrBadSubject}"), text
    assert out["bad_reply_opt"] == out["bad_reply"], text
    assert out["missing_value"] == "{NATS ErrInvalidArg} {Missing value for option -reply}", text
    assert out["bad_option"].startswith("{NATS ErrInvalidArg}"), text
    assert out["few_args"].startswith("{TCL WRONGARGS} {wrong # args: should be"), text
    assert out["few_args"].endswith('publish subject message ?arg ...?"}'), text
    assert out["too_big"] == "NATS ErrMaxPayload", text
    assert out["kind"] == "1", text
    assert out["got"] == ("{fp.a one {}} {fp.a two {}} {fp.a three fp.r} {fp.a four fp.r} {fp.a five {}}"), text


def test_the_c_path_takes_exactly_the_ascii_subjects_the_engine_accepts(tmp_path, nats_server):
    """A subject or reply never published before (a reply inbox, a unique
    subject) is framed in C when it passes the engine's rule for ASCII
    subjects (tclnats_py.engine.subjects); every other one goes to the
    engine, which accepts or refuses it as before."""
    import random
    from tclnats_py.engine.subjects import valid_subject
    rnd = random.Random(7)
    alphabet = "ab.Z9-_$*>. \t\"[]{}\\!~|`^@:;,=?%&'()+/#\u00e9\u0101"
    subjects = ["a", "a.b", ".a", "a.", "a..b", "_INBOX.x1y2.42", "$JS.API.INFO", "a b", "a*", "a.*", "a.>",
                ">", "caf\u00e9.x", "a\tb", "{x}", "a.b.c.d.e.f"]
    subjects += ["".join(rnd.choice(alphabet) for _ in range(rnd.randint(1, 8))) for _ in range(400)]
    subjects = [x for x in dict.fromkeys(subjects) if x]
    hexes = " ".join(x.encode().hex() for x in subjects)
    out, text = run_tcl(tmp_path, r"""
        lassign $argv url
        set c [nats::connection new subjects]
        $c configure -servers $url
        $c connect
        set fast [info object namespace $c]::Fast
        set taken [list]
        set replies [list]
        foreach h [lrange $argv 1 end] {
            set subj [encoding convertfrom utf-8 [binary decode hex $h]]
            lappend taken [$fast pub $subj x]
            lappend replies [$fast pub ok.subject x $subj]
        }
        result taken $taken
        result replies $replies
        # and through the method: the errors the engine gives
        result bad [error_of {$c publish "a..b" x}]
        result bad_reply [error_of {$c publish ok.x y "r r"}]
        $c ping
        $c destroy
    """, nats_server.url, *hexes.split())
    taken = out["taken"].split()
    replies = out["replies"].split()
    assert len(taken) == len(subjects) == len(replies), text
    for subj, t, r in zip(subjects, taken, replies):
        want = "1" if subj.isascii() and valid_subject(subj) else "0"
        # a lone argument starting with "-" (-reply without its value?) is the engine's to judge
        assert (t, r) == (want, "0" if subj.startswith("-") else want), (subj, t, r)
    assert taken.count("1") > 20 and taken.count("0") > 20
    assert out["bad"] == "{NATS ErrBadSubject} {Invalid subject a..b}", text
    assert out["bad_reply"].startswith("{NATS ErrBadSubject}"), text


def test_payloads_on_the_c_path_are_the_bytes_the_general_path_sends(tmp_path, nats_server):
    """ASCII strings, byte arrays, characters past ASCII (written as their
    low byte, as the general path writes them), the empty payload, and
    payloads bigger than a batch: the subscriber gets the same bytes."""
    out, text = run_tcl(tmp_path, r"""
        lassign $argv url
        set c [nats::connection new payloads]
        $c configure -servers $url
        $c connect
        set ::got [list]
        $c subscribe pl.x -callback {apply {{s m r} {lappend ::got $m}}}
        $c ping
        $c publish pl.x first
        set values [list ascii [binary format H* 00ff10e9] "caf\u00e9" "" [string repeat ab 200000]]
        foreach v $values { $c publish pl.x $v }
        $c ping
        wait_for {[llength $::got] >= 6}
        set i 0
        foreach v $values {
            incr i
            set m [lindex $::got $i]
            result len$i [string length $m]
            result same$i [expr {[binary encode hex $m] eq [binary encode hex [encoding convertto iso8859-1 $v]]}]
        }
        $c destroy
    """, nats_server.url)
    for i in range(1, 6):
        assert out[f"same{i}"] == "1", (i, text)
    assert out["len5"] == "400000", text


def test_publish_in_callbacks_and_coroutines_waits_for_room(tmp_path, nats_server):
    """A tiny -write_buf_size makes the fast path ask for room every few
    messages (PublishRoom, MakeRoom): from a callback and from a coroutine
    (which yields while it waits) every message still arrives, in order."""
    out, text = run_tcl(tmp_path, r"""
        lassign $argv url
        set c [nats::connection new room]
        $c configure -servers $url -write_buf_size 2000
        $c connect
        set ::got [list]
        $c subscribe room.out -callback {apply {{s m r} {lappend ::got $m}}}
        # a responder that publishes from its callback
        $c subscribe room.in -callback {apply {{s m r} {
            for {set i 0} {$i < 200} {incr i} { $::c publish room.out "cb$m.$i" }
        }}}
        $c ping
        $c publish room.in 1
        wait_for {[llength $::got] >= 200}
        result from_callback [llength $::got]
        result callback_order [expr {[lindex $::got 0] eq "cb1.0" && [lindex $::got end] eq "cb1.199"}]
        set ::got [list]
        coroutine pubco apply {{} {
            for {set i 0} {$i < 2000} {incr i} { $::c publish room.out "co$i" }
            set ::co_done 1
        }}
        wait_for {[info exists ::co_done] && [llength $::got] >= 2000} 20000
        result from_coroutine [llength $::got]
        set ok 1
        for {set i 0} {$i < 2000} {incr i} {
            if {[lindex $::got $i] ne "co$i"} { set ok 0 }
        }
        result coroutine_order $ok
        $c destroy
    """, nats_server.url)
    assert out["from_callback"] == "200" and out["callback_order"] == "1", text
    assert out["from_coroutine"] == "2000" and out["coroutine_order"] == "1", text


# ------------------------------------------------------------ the C reader

def test_mixed_subscriptions_keep_the_order_of_the_stream(tmp_path, nats_server):
    """Plain messages go to the callback in C, header messages and -dictmsg
    subscriptions through the engine: one callback sees them in the order
    they were published, and each kind in its own form."""
    out, text = run_tcl(tmp_path, r"""
        lassign $argv url
        set p [nats::connection new pub]
        $p configure -servers $url
        $p connect
        set c [nats::connection new sub]
        $c configure -servers $url
        $c connect
        set ::plain [list]
        set ::dict [list]
        $c subscribe mx.> -callback {apply {{s m r} {lappend ::plain "$s=$m"}}}
        $c subscribe mx.> -callback {apply {{s m r} {lappend ::dict [dict get $m data]}}} -dictmsg true
        $c ping
        for {set i 0} {$i < 300} {incr i} {
            if {$i % 7 == 3} {
                $p publish mx.h $i -header [list k $i]
            } elseif {$i % 11 == 5} {
                $p publish mx.r $i -reply mx.back
            } else {
                $p publish mx.p $i
            }
        }
        $p ping
        wait_for {[llength $::plain] >= 300 && [llength $::dict] >= 300}
        set ok 1
        for {set i 0} {$i < 300} {incr i} {
            set want [expr {$i % 7 == 3 ? "mx.h" : ($i % 11 == 5 ? "mx.r" : "mx.p")}]
            if {[lindex $::plain $i] ne "$want=$i" || [lindex $::dict $i] ne $i} { set ok 0 }
        }
        result count [llength $::plain]
        result order $ok
        $p destroy
        $c destroy
    """, nats_server.url)
    assert out["count"] == "300" and out["order"] == "1", text


def test_max_msgs_and_unsubscribe_on_c_subscriptions(tmp_path, nats_server):
    """-max_msgs at subscribe and at unsubscribe counts the messages the C
    reader delivered before; unsubscribing in a callback stops later ones."""
    out, text = run_tcl(tmp_path, r"""
        lassign $argv url
        set c [nats::connection new mm]
        $c configure -servers $url
        $c connect
        set ::a 0
        set ::b 0
        set ::u 0
        $c subscribe mm.a -callback {apply {{s m r} {incr ::a}}} -max_msgs 3
        set sid [$c subscribe mm.b -callback {apply {{s m r} {incr ::b}}}]
        set ::usid [$c subscribe mm.u -callback {apply {{s m r} {
            incr ::u
            $::c unsubscribe $::usid
        }}}]
        $c ping
        for {set i 0} {$i < 10} {incr i} { $c publish mm.a $i }
        for {set i 0} {$i < 4} {incr i} { $c publish mm.b $i }
        $c publish mm.u first
        $c ping
        wait_for {$::b >= 4 && $::u >= 1}
        # 4 received in C: at most 6 in all now
        $c unsubscribe $sid -max_msgs 6
        for {set i 0} {$i < 10} {incr i} { $c publish mm.b $i }
        for {set i 0} {$i < 5} {incr i} { $c publish mm.u later }
        $c ping
        wait_for {$::b >= 6}
        after 200 {set ::settle 1}
        vwait ::settle
        result a $::a
        result b $::b
        result u $::u
        result subs [lsort [array names [info object namespace $c]::subscriptions]]
        $c destroy
    """, nats_server.url)
    assert out["a"] == "3", text
    assert out["b"] == "6", text
    assert out["u"] == "1", text
    assert out["subs"] == "", text


def test_errors_in_c_delivered_callbacks_are_background_errors(tmp_path, nats_server):
    out, text = run_tcl(tmp_path, r"""
        lassign $argv url
        set c [nats::connection new errs]
        $c configure -servers $url
        $c connect
        set ::errs [list]
        interp bgerror {} {apply {{msg opts} {lappend ::errs $msg [dict get $opts -errorcode]}}}
        set ::got [list]
        $c subscribe er.x -callback {apply {{s m r} {
            lappend ::got $m
            if {$m == 2} { throw {MY CODE} "bad message $m" }
        }}}
        $c subscribe er.y -callback no_such_command
        $c ping
        for {set i 0} {$i < 5} {incr i} { $c publish er.x $i }
        $c publish er.y z
        $c ping
        wait_for {[llength $::got] >= 5 && [llength $::errs] >= 4}
        result got $::got
        result errs $::errs
        $c destroy
    """, nats_server.url)
    assert out["got"] == "0 1 2 3 4", text
    assert out["errs"].startswith('{bad message 2} {MY CODE} {invalid command name "no_such_command"}'), text


def test_callbacks_may_run_coroutines_that_wait(tmp_path, nats_server):
    """A callback that starts a coroutine making a request (which yields
    while it waits) and a callback that is a coroutine command itself."""
    out, text = run_tcl(tmp_path, r"""
        lassign $argv url
        set c [nats::connection new co]
        $c configure -servers $url
        $c connect
        $c subscribe co.svc -callback {apply {{s m r} { $::c publish $r "re:$m" }}}
        set ::answers [list]
        $c subscribe co.ask -callback {apply {{s m r} {
            coroutine asker[incr ::n] apply {{m} {
                lappend ::answers [$::c request co.svc $m -timeout 2000]
            }} $m
        }}}
        # (yieldto: the coroutine takes the three arguments of a callback)
        coroutine collector apply {{} {
            set args [yieldto string cat]
            while 1 {
                lappend ::collected [lindex $args 1]
                set args [yieldto string cat]
            }
        }}
        $c subscribe co.col -callback collector
        $c ping
        foreach m {a b c} { $c publish co.ask $m; $c publish co.col $m }
        wait_for {[llength $::answers] >= 3 && [llength $::collected] >= 3}
        result answers [lsort $::answers]
        result collected $::collected
        $c destroy
    """, nats_server.url)
    assert out["answers"] == "re:a re:b re:c", text
    assert out["collected"] == "a b c", text


def test_a_connection_destroyed_in_a_callback(tmp_path, nats_server):
    """The C reader holds its state while it runs a read's callbacks: a
    callback that destroys the connection ends nothing but it."""
    out, text = run_tcl(tmp_path, r"""
        lassign $argv url
        set p [nats::connection new pub]
        $p configure -servers $url
        $p connect
        set c [nats::connection new victim]
        $c configure -servers $url
        $c connect
        set ::got 0
        $c subscribe gone.x -callback {apply {{s m r} {
            incr ::got
            if {$::got == 1} { $::c destroy }
        }}}
        $c ping
        for {set i 0} {$i < 50} {incr i} { $p publish gone.x $i }
        $p ping
        wait_for {$::got >= 1}
        after 200 {set ::settle 1}
        vwait ::settle
        result alive [llength [info commands $c]]
        result pub_ok [$p publish gone.x more]
        $p destroy
        result done 1
    """, nats_server.url)
    assert out["alive"] == "0" and out["done"] == "1", text


def test_stream_parser_hands_odd_frames_to_the_engine(tmp_path):
    """A fake server: the C reader delivers plain MSG frames split across
    reads at every byte; an odd line (lower-case verb) makes it hand the
    rest of the stream to the engine, which still delivers and then reports
    its protocol error."""
    import socket
    import threading

    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(1)
    port = lsock.getsockname()[1]
    done = threading.Event()

    def serve():
        conn, _ = lsock.accept()
        conn.sendall(b'INFO {"server_id":"fake","version":"2.10.0","max_payload":1048576,"proto":1}\r\n')
        buf = b""
        while b"PING\r\n" not in buf:
            buf += conn.recv(4096)
        conn.sendall(b"PONG\r\n")
        buf = b""
        while b"SUB odd.x" not in buf or b"PING" not in buf:
            buf += conn.recv(4096)
        frames = b"".join(b"MSG odd.x 1 %d\r\n%s\r\n" % (len(p), p) for p in (b"one", b"", b"three\r\nx"))
        frames += b"MSG odd.x 1 reply.to 3\r\nfor\r\nPING\r\n"
        for i in range(len(frames)):   # one byte per write
            conn.sendall(frames[i:i + 1])
            if i % 7 == 0:
                threading.Event().wait(0.001)
        conn.sendall(b"PONG\r\nmsg odd.x 1 4\r\nfive\r\nMSG odd.x 1 3\r\nsix\r\n")
        threading.Event().wait(0.3)
        conn.sendall(b"BOGUS\r\n")
        done.wait(10)
        conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        out, text = run_tcl(tmp_path, r"""
            lassign $argv port
            set c [nats::connection new odd -log_chan stdout -log_level error]
            $c configure -servers nats://127.0.0.1:$port
            $c connect
            set ::got [list]
            $c subscribe odd.x -callback {apply {{s m r} {lappend ::got [list [string map {\r\n |} $m] $r]}}}
            $c ping -timeout 5000
            wait_for {[llength $::got] >= 6}
            wait_for {[set [info object namespace $c]::last_error] ne ""}
            result got $::got
            result error [lindex [dict get [set [info object namespace $c]::last_error] code] 1]
        """, port, timeout=60)
    finally:
        done.set()
        lsock.close()
    assert out["got"] == "{one {}} {{} {}} {three|x {}} {for reply.to} {five {}} {six {}}", text
    assert out["error"] == "ErrProtocol", text


def test_dictmsg_messages_from_the_c_reader(tmp_path, nats_server):
    """-dictmsg: the C reader gives the dict the engine's delivery gives
    (header, data, subject, reply, sub_id, in that order); a message with
    headers (through the engine) has the same keys."""
    out, text = run_tcl(tmp_path, r"""
        lassign $argv url
        set c [nats::connection new dm]
        $c configure -servers $url -dictmsg true
        $c connect
        set ::got [list]
        set sid [$c subscribe dm.x -callback {apply {{s m r} {lappend ::got [list $s $r $m]}}}]
        $c ping
        $c publish dm.x plain
        $c publish dm.x withreply -reply dm.back
        $c publish dm.x hdr -header {k v}
        $c ping
        wait_for {[llength $::got] >= 3}
        lassign $::got a b h
        result a $a
        result b $b
        result keys [dict keys [lindex $h 2]]
        result hdr [dict get [lindex $h 2] header]
        result sid $sid
        $c destroy
    """, nats_server.url)
    sid = out["sid"]
    assert out["a"] == "dm.x {} {header {} data plain subject dm.x reply {} sub_id %s}" % sid, text
    assert out["b"] == "dm.x dm.back {header {} data withreply subject dm.x reply dm.back sub_id %s}" % sid, text
    assert out["keys"] == "header data subject reply sub_id", text
    assert out["hdr"] == "k v", text
