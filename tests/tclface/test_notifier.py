"""The poll(2) notifier that a Python program can install under the Tcl event
loop of its tkinter interpreters (tclnats_py.tclface.notifier).

Each script runs in a Python-hosted interpreter twice, with our notifier and
with Tcl's own, and must print the same lines: timers, file events on
sockets and pipes, nested event loops inside a file handler.  (It serves the thread that
installs it; Thread-package workers need Tcl's own notifier.)
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.tcl


def run(script: str, tmp_path, notifier: str, timeout=60) -> subprocess.CompletedProcess:
    path = tmp_path / f"script_{notifier}.tcl"
    path.write_text(textwrap.dedent(script))
    return subprocess.run([sys.executable, "-c", HOST, notifier, str(path)], capture_output=True,
                          text=True, timeout=timeout)


HOST = """
import sys
from tclnats_py.tclface import notifier as _notifier
if sys.argv[1] == "poll":
    _notifier.install()
from tclnats_py.tclface.tclsh import new_interp
tk = new_interp().tk
tk.call("set", "::tclnats::notifier", "poll" if _notifier.installed() else "tcl")
tk.call("source", sys.argv[2])
"""


def both(script: str, tmp_path) -> str:
    ours = run(script, tmp_path, "poll")
    theirs = run(script, tmp_path, "tcl")
    assert ours.returncode == 0, ours.stderr
    assert theirs.returncode == 0, theirs.stderr
    assert ours.stdout == theirs.stdout
    return ours.stdout


def test_poll_notifier_is_the_one_in_use(tmp_path):
    script = "puts $::tclnats::notifier"
    assert run(script, tmp_path, "poll").stdout.strip() == "poll"
    assert run(script, tmp_path, "tcl").stdout.strip() == "tcl"


def test_timers_idle_and_vwait(tmp_path):
    out = both("""
        set ::log [list]
        after 30 {lappend ::log t30}
        after 10 {lappend ::log t10}
        after idle {lappend ::log idle}
        after 0 {lappend ::log t0}
        set id [after 20 {lappend ::log never}]
        after cancel $id
        after 50 {set ::done 1}
        vwait ::done
        puts $::log
        # update with nothing to do returns at once
        update
        puts [llength [after info]]
    """, tmp_path)
    assert out.split("\n")[:2] == ["t0 idle t10 t30", "0"]


def test_socket_file_events_and_nested_vwait(tmp_path):
    out = both("""
        proc accept {s addr port} {
            fconfigure $s -translation binary -blocking 0 -buffering none
            set ::server $s
        }
        set listener [socket -server accept -myaddr 127.0.0.1 0]
        set port [lindex [fconfigure $listener -sockname] 2]
        set c [socket -async 127.0.0.1 $port]
        fconfigure $c -translation binary -blocking 0 -buffering none
        fileevent $c writable {fileevent $c writable {}; set ::connected 1}
        # both ends become ready together: wait for whichever is still missing
        foreach var {::connected ::server} {
            if {![info exists $var]} { vwait $var }
        }
        set ::depth 0
        set ::reads [list]
        proc on_read {} {
            set data [read $::c]
            if {[eof $::c]} {
                fileevent $::c readable {}
                set ::eof 1
                return
            }
            incr ::depth
            lappend ::reads "$::depth:$data"
            if {$data eq "first"} {
                # a nested event loop inside the handler sees the next read
                after 5 {puts -nonewline $::server second}
                vwait ::second
            } else {
                set ::second 1
            }
            incr ::depth -1
        }
        fileevent $c readable on_read
        puts -nonewline $::server first
        vwait ::second
        close $::server
        vwait ::eof
        puts $::reads
        close $c
        close $listener
    """, tmp_path)
    assert out.strip() == "1:first 2:second"


def test_pipe_file_events(tmp_path):
    out = both("""
        set p [open "|cat" r+]
        fconfigure $p -buffering line -blocking 0
        set ::lines [list]
        fileevent $p readable {
            if {[gets $p line] >= 0} { lappend ::lines $line }
            if {[llength $::lines] == 3} { set ::done 1 }
        }
        foreach w {alpha beta gamma} { puts $p $w }
        after 10000 {set ::done timeout}
        vwait ::done
        puts $::lines
        close $p
    """, tmp_path)
    assert out.strip() == "alpha beta gamma"


def test_nats_request_reply_under_both_notifiers(tmp_path, nats_server):
    out = both(f"""
        package require nats
        set a [nats::connection new a]
        $a configure -servers {nats_server.url}
        $a connect
        set b [nats::connection new b]
        $b configure -servers {nats_server.url}
        $b connect
        $b subscribe svc -callback [list apply {{{{c s m r}} {{$c publish $r "re:$m"}}}} $b]
        $b ping
        set out [list]
        for {{set i 0}} {{$i < 200}} {{incr i}} {{
            lappend out [$a request svc $i -timeout 2000]
        }}
        puts [lrange $out 0 2][llength $out]
        $a destroy
        $b destroy
    """, tmp_path)
    assert out.strip() == "re:0 re:1 re:2200"
