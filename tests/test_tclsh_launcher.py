"""tclnats-tclsh behaves like tclsh; the bridge works in any tkinter interpreter."""

import os
import shutil
import subprocess
import sys
import tkinter

import pytest

from tclnats_py.tclbridge import install

pytestmark = pytest.mark.tcl


def tclsh():
    exe = shutil.which("tclnats-tclsh")
    return [exe] if exe else [sys.executable, "-m", "tclnats_py.tclsh"]


def run(args, script=None, stdin=None, tmp_path=None, env=None):
    cmd = tclsh()
    if script is not None:
        path = os.path.join(tmp_path, "script.tcl")
        with open(path, "w") as f:
            f.write(script)
        cmd = cmd + [path]
    return subprocess.run(cmd + list(args), input=stdin, capture_output=True, text=True, timeout=60,
                          env=env)


def test_argv_and_script(tmp_path):
    p = run(["a", "b c"], 'puts "$argc|[lindex $argv 1]|[file tail $argv0]|[file tail [info script]]"',
            tmp_path=str(tmp_path))
    assert p.returncode == 0
    assert p.stdout.strip() == "2|b c|script.tcl|script.tcl"


@pytest.mark.parametrize("body,code", [("exit 3", 3), ("set x 1", 0), ("error boom", 1)])
def test_exit_codes(tmp_path, body, code):
    p = run([], body, tmp_path=str(tmp_path))
    assert p.returncode == code
    if code == 1:
        assert "boom" in p.stderr and "while executing" in p.stderr


def test_stdin_script():
    p = run([], stdin="puts [expr {6*7}]\n")
    assert p.returncode == 0 and p.stdout.strip() == "42"


def test_nameofexecutable_is_the_launcher(tmp_path):
    p = run([], "puts [info nameofexecutable]", tmp_path=str(tmp_path))
    assert os.path.basename(p.stdout.strip()).startswith(("tclnats-tclsh", "tclsh.py", "python"))
    # a child interpreter started as tcltest does it can load nats again
    child = 'puts [exec [info nameofexecutable] << "puts \\[package require nats\\]"]'
    p = run([], child, tmp_path=str(tmp_path))
    assert p.returncode == 0 and p.stdout.strip() == "3.2.1"


def test_tcl_packages_load(tmp_path):
    p = run([], "puts [list [package require tcltest] [package require Thread] [package require tls] "
                "[package require json] [package require nats]]", tmp_path=str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert p.stdout.split()[-1] == "3.2.1"


def test_nats_server_option(tmp_path):
    script = ("package require nats\n"
              "set c [nats::connection new]\n"
              "$c configure -servers $env(NATS_URL)\n"
              "$c connect\n"
              "puts [dict exists [$c server_info] jetstream]\n")
    cmd = tclsh() + ["--nats-server=0", os.path.join(str(tmp_path), "s.tcl")]
    with open(cmd[-1], "w") as f:
        f.write(script)
    # port 0 is not usable by nats-server: ask for a free one instead
    from tclnats_py.server import free_port
    port = free_port()
    cmd[-2] = f"--nats-server={port}"
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "1"
    # the throw-away server is gone with the script
    import socket
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_install_into_tkinter_interpreter(nats_server):
    interp = tkinter.Tcl()
    install(interp)
    tk = interp.tk
    tk.eval(f"""
        package require nats
        set c [nats::connection new hosted]
        $c configure -servers {nats_server.url}
        $c connect
        $c subscribe hosted.x -callback [list apply {{{{s m r}} {{set ::got $m}}}}]
        $c publish hosted.x from-python-host
    """)
    # drive the Tcl event loop from Python, as a Tk application's mainloop would
    import time
    deadline = time.time() + 5
    while not tk.call("info", "exists", "::got") and time.time() < deadline:
        tk.dooneevent(0)
    assert tk.call("set", "::got") == b"from-python-host"  # a payload is a byte array
    tk.eval("$c destroy")


def test_errors_keep_the_connection(nats_server):
    interp = tkinter.Tcl()
    install(interp)
    tk = interp.tk
    tk.eval(f"""
        package require nats
        set c [nats::connection new]
        $c configure -servers {nats_server.url}
        $c connect
    """)
    for bad in ('$c publish "bad subject" x', "$c subscribe a..b -callback cb", "$c request x y -timeout -5",
                "$c unsubscribe 12345", "$c configure -ping_interval abc"):
        code = tk.eval(f"catch {{{bad}}} err opts; lindex [dict get $opts -errorcode] 0")
        assert code == "NATS", bad
    assert tk.eval("$c cget -status") == "connected"
    assert tk.eval("$c ping") == "true"
    tk.eval("$c destroy")
