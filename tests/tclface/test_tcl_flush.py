"""Publishes framed in Tcl (the Tcl face's fast path) go out whatever
flushes the connection first.

nats-tcl's cluster-2 caught this: a connection's posted flush was cancelled
by an early flush that another connection's readable handler ran
(``::tclnats::_flush_dirty``), and that early flush wrote only the engine's
buffer; the publishes framed in Tcl waited until the server's next PING.
"""

from __future__ import annotations

import tkinter

import pytest

from tclnats_py.tclface import bridge as tclbridge

pytestmark = pytest.mark.tcl


def test_an_early_flush_writes_the_publishes_framed_in_tcl(nats_server):
    host = tkinter.Tcl()
    tclbridge.install(host)
    host.eval(f"""
        package require nats
        set a [nats::connection new strand-a]
        $a configure -servers {nats_server.url}
        $a connect
        set r [nats::connection new strand-r]
        $r configure -servers {nats_server.url}
        $r connect
        set ::got [list]
        $r subscribe strand.x -callback {{apply {{{{s m rp}} {{ lappend ::got $m }}}}}}
        $r ping
        $a publish strand.x first   ;# strand.x joins a's fast path
        $a ping
    """)
    bridge = tclbridge._bridges[tclbridge.Interp.from_address(host.tk.interpaddr()).interpaddr()]
    ns = host.eval("info object namespace $a")
    conn = next(c for c in bridge.conns.values() if c.ns == ns)
    host.eval("$a publish strand.x second")      # framed in Tcl, a flush posted
    assert host.eval(f"set {ns}::PendingCount") == "1"
    assert conn.tcl_pending and conn.flush_id
    conn.flush_now()                              # what another connection's read may do first
    assert not conn.tcl_pending                   # handed to the engine and written
    host.eval("""
        set t [after 3000 {lappend ::got timeout}]
        while {[llength $::got] < 2} { vwait ::got }
        after cancel $t
        $a destroy
        $r destroy
    """)
    assert host.eval("set ::got") == "first second"
