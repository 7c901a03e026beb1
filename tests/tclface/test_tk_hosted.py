"""nats in a Tcl interpreter that a Python program owns.

``tclnats_py.tclface.bridge.install(interp)`` on a ``tkinter.Tcl()`` (no display
needed) or a ``tkinter.Tk()`` (under Xvfb): Tcl code in that interpreter uses
``package require nats`` while Python drives the event loop, with
``dooneevent``/``update`` or with Tk's own ``mainloop``.
"""

from __future__ import annotations

import _tkinter
import time
import tkinter

import pytest

from tclnats_py.tclface.bridge import install

pytestmark = pytest.mark.tcl


def hosted() -> tkinter.Tcl:
    interp = tkinter.Tcl()
    install(interp)
    return interp


def pump(tk, cond, timeout=5.0):
    """Run Tcl events from Python until cond() is true."""
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("timed out pumping Tcl events")
        if not tk.dooneevent(_tkinter.ALL_EVENTS | _tkinter.DONT_WAIT):
            time.sleep(0.002)


def connect(tk, url, name="hosted", var="c"):
    tk.eval(f"""
        package require nats
        set {var} [nats::connection new {name} -log_chan stdout -log_level error]
        ${var} configure -servers {url}
        ${var} connect
    """)


# ------------------------------------------------------------ tkinter.Tcl(), no display

def test_package_and_install_twice():
    interp = hosted()
    install(interp)  # a second install of the same interpreter is harmless
    install(interp.tk)
    assert interp.tk.eval("package require nats") == "3.2.1"
    assert interp.tk.eval("info exists ::tclnats::hosted") == "1"


def test_pubsub_driven_by_dooneevent(nats_server):
    interp = hosted()
    tk = interp.tk
    got = []
    # a Tcl callback that calls into Python
    tk.createcommand("py_got", lambda subject, msg, reply: got.append((subject, msg, reply)))
    connect(tk, nats_server.url)
    tk.eval("""
        $c subscribe hosted.x -callback py_got
        $c publish hosted.x "from Tcl" -reply hosted.r
    """)
    pump(tk, lambda: got)
    assert got == [("hosted.x", "from Tcl", "hosted.r")]
    # publish a byte string from Python through Tcl: it arrives byte-exact
    got.clear()
    tk.call("set", "::payload", b"\x00\x01\xff\r\n")
    tk.eval("$c subscribe hosted.bin -callback [list apply {{s m r} {set ::bin $m}}]; $c publish hosted.bin $::payload")
    pump(tk, lambda: tk.call("info", "exists", "::bin"))
    assert bytes(tk.call("set", "::bin")) == b"\x00\x01\xff\r\n"
    tk.eval("$c destroy")


def test_requests_driven_by_update(nats_server):
    interp = hosted()
    tk = interp.tk
    connect(tk, nats_server.url)
    tk.eval("""
        $c subscribe hosted.svc -callback [list apply {{c s m r} {$c publish $r "re:$m"}} $c]
        set ::answers {}
    """)
    # a sync request blocks in vwait inside this eval: the event loop runs there
    assert tk.eval("$c request hosted.svc sync -timeout 2000") == "re:sync"
    # async requests: Python runs the loop with [update]
    tk.eval("""
        foreach i {1 2 3} {
            $c request hosted.svc $i -timeout 2000 -callback [list apply {{t m} {lappend ::answers $t $m}}]
        }
    """)
    deadline = time.monotonic() + 5
    while len(tk.splitlist(tk.eval("set ::answers"))) < 6 and time.monotonic() < deadline:
        tk.call("update")
        time.sleep(0.005)
    assert tk.splitlist(tk.eval("set ::answers")) == ("0", "re:1", "0", "re:2", "0", "re:3")
    assert tk.eval("$c ping") == "true"
    tk.eval("$c destroy")


def test_request_errors_reach_python(nats_server):
    interp = hosted()
    tk = interp.tk
    connect(tk, nats_server.url)
    with pytest.raises(tkinter.TclError, match="No responders"):
        tk.eval("$c request hosted.nobody x -timeout 1000")
    assert tk.eval("lindex $::errorCode 1") == "ErrNoResponders"
    tk.eval("$c subscribe hosted.silent -callback [list apply {{s m r} {}}]")
    with pytest.raises(tkinter.TclError):
        tk.eval("$c request hosted.silent x -timeout 100")
    assert tk.eval("lindex $::errorCode 1") == "ErrTimeout"
    tk.eval("$c destroy")


def test_errors_keep_the_connection(nats_server):
    interp = hosted()
    tk = interp.tk
    connect(tk, nats_server.url)
    for bad, code in (('$c publish "bad subject" x', "ErrBadSubject"),
                      ("$c subscribe a..b -callback cb", "ErrBadSubject"),
                      ("$c request x y -timeout -5", "ErrBadTimeout"),
                      ("$c unsubscribe 12345", "ErrBadSubscription"),
                      ("$c configure -ping_interval abc", "ErrBadTimeout")):
        assert tk.eval(f"catch {{{bad}}} err opts; dict get $opts -errorcode") == f"NATS {code}", bad
    assert tk.eval("$c cget -status") == "connected"
    assert tk.eval("$c ping") == "true"
    tk.eval("$c destroy")


def test_two_interpreters_in_one_thread(nats_server):
    """Two hosted interpreters share the thread's event loop: one serves, the other asks."""
    server, client = hosted(), hosted()
    connect(server.tk, nats_server.url, "server_side")
    connect(client.tk, nats_server.url, "client_side")
    server.tk.eval("""
        set ::served 0
        $c subscribe two.svc -callback [list apply {{c s m r} {incr ::served; $c publish $r "served:$m"}} $c]
        $c ping
    """)
    # the client's vwait also runs the server interpreter's events
    assert client.tk.eval("$c request two.svc a -timeout 2000") == "served:a"
    client.tk.eval("set ::got {}; $c request two.svc b -timeout 2000 -callback [list apply {{t m} {set ::got $m}}]")
    pump(client.tk, lambda: client.tk.eval("set ::got") != "")
    assert client.tk.eval("set ::got") == "served:b"
    assert server.tk.eval("set ::served") == "2"
    client.tk.eval("$c destroy")
    server.tk.eval("$c destroy")


def test_status_trace_calls_python(nats_server):
    interp = hosted()
    tk = interp.tk
    statuses = []
    tk.createcommand("py_status", lambda var, idx, op: statuses.append(tk.call("set", var)))
    tk.eval(f"""
        package require nats
        set c [nats::connection new traced -log_chan stdout -log_level error]
        $c configure -servers {nats_server.url}
        trace add variable [info object namespace $c]::status write py_status
        $c connect -async
    """)
    pump(tk, lambda: "connected" in statuses)
    tk.eval("$c disconnect")
    assert statuses == ["connecting", "connected", "closed"]
    tk.eval("$c destroy")


# ------------------------------------------------------------ tkinter.Tk() under Xvfb

@pytest.fixture
def tk_root(x_display):
    try:
        root = tkinter.Tk(screenName=x_display)
    except tkinter.TclError as e:
        pytest.skip(f"tkinter.Tk() cannot open display {x_display}: {e}")
    install(root)
    yield root
    try:
        root.destroy()
    except tkinter.TclError:
        pass


def test_tk_mainloop_gui(tk_root, nats_server):
    """A small GUI: a label shows NATS messages, a button makes a request; Tk's mainloop drives it all."""
    root = tk_root
    tk = root.tk
    root.createcommand("py_quit", root.quit)
    tk.eval(f"""
        package require nats
        set c [nats::connection new gui -log_chan stdout -log_level error]
        $c configure -servers {nats_server.url}
        $c connect -async                       ;# a GUI does not block
        set ::label_text waiting
        label .status -textvariable ::label_text
        button .ask -text Ask -command ask
        pack .status .ask
        # a service, and the GUI's subscription
        $c subscribe gui.svc -callback [list apply {{{{c s m r}} {{$c publish $r "answer to $m"}}}} $c]
        $c subscribe gui.update -callback [list apply {{{{s m r}} {{set ::label_text $m}}}}]
        $c publish gui.update "hello GUI"
        # the button does a blocking request (a nested vwait inside Tk's mainloop)
        proc ask {{}} {{
            global c
            set ::answer [$c request gui.svc question -timeout 2000]
            py_quit
        }}
    """)
    # once the label changed, press the button; a guard ends the loop anyway
    def poll():
        if tk.eval("set ::label_text") == "hello GUI":
            tk.call(".ask", "invoke")
        else:
            root.after(20, poll)
    root.after(20, poll)
    root.after(5000, root.quit)
    root.mainloop()
    assert tk.eval("set ::label_text") == "hello GUI"
    assert tk.eval("set ::answer") == "answer to question"
    root.update()
    assert tk.eval("winfo ismapped .status") == "1"
    assert tk.eval(".status cget -textvariable") == "::label_text"
    assert tk.eval("$c cget -status") == "connected"
    tk.eval("$c destroy")


def test_tk_update_loop(tk_root, nats_server):
    """A Python-driven GUI loop (root.update) instead of mainloop."""
    root = tk_root
    tk = root.tk
    tk.eval(f"""
        package require nats
        set c [nats::connection new gui2 -log_chan stdout -log_level error]
        $c configure -servers {nats_server.url}
        $c connect
        set ::count 0
        label .n -textvariable ::count
        pack .n
        $c subscribe gui.count -callback [list apply {{{{s m r}} {{incr ::count}}}}]
        for {{set i 0}} {{$i < 50}} {{incr i}} {{ $c publish gui.count $i }}
    """)
    deadline = time.monotonic() + 5
    while int(tk.eval("set ::count")) < 50 and time.monotonic() < deadline:
        root.update()
        time.sleep(0.002)
    assert int(tk.eval("set ::count")) == 50
    tk.eval("$c destroy")
