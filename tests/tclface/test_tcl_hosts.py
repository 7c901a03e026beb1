"""``package require nats`` in every kind of Tcl interpreter, through the Tcl
extension: stock tclsh (only tclnats_py's Tcl folder on TCLLIBPATH), Thread
workers, child interpreters, wish with a Tk GUI, a C program that embeds
Tcl, a Python program's tkinter interpreter, and the errors when Python
cannot be found.  Where tclnats-tclsh once differed from tclsh, the same
script runs under both and must give the same result.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from tclnats_py.tclface.bridge import tcl_library_dir
from tclnats_py.tclface.tclsh import find_tclsh

pytestmark = pytest.mark.tcl

TCLSH = find_tclsh()
LIBDIR = tcl_library_dir()
LAUNCHER = shutil.which("tclnats-tclsh")


def stock_env(**extra) -> dict:
    """Only our Tcl folder on TCLLIBPATH, as a Tcl user sets it up."""
    env = {k: v for k, v in os.environ.items() if k != "TCLLIBPATH"}
    env["TCLLIBPATH"] = LIBDIR
    env.update(extra)
    return env


def run_tcl(script: str, tmp_path, *, host=None, env=None, name="script.tcl", timeout=120,
            args=()) -> subprocess.CompletedProcess:
    path = tmp_path / name
    path.write_text(textwrap.dedent(script))
    cmd = [host or TCLSH, str(path), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env=env if env is not None else stock_env(), stdin=subprocess.DEVNULL)


def ok(p: subprocess.CompletedProcess) -> str:
    assert p.returncode == 0, f"rc={p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    return p.stdout


# ------------------------------------------------------------ stock tclsh

def test_stock_tclsh_loads_ours_and_talks(tmp_path, nats_server):
    out = ok(run_tcl(f"""
        package require nats
        puts "provider: $::tclnats::provider"
        set c [nats::connection new app]
        $c configure -servers {nats_server.url}
        $c connect
        $c subscribe svc -callback {{apply {{{{s m r}} {{ $::c publish $r "re:$m" }}}}}}
        $c subscribe greet.* -callback {{apply {{{{s m r}} {{ set ::got "$s $m" }}}}}}
        $c publish greet.tcl hello
        vwait ::got
        puts "got: $::got"
        puts "reply: [$c request svc ping -timeout 2000]"
        catch {{$c request nobody x -timeout 500}} err opts
        puts "error: [dict get $opts -errorcode]"
        $c destroy
    """, tmp_path))
    assert f"provider: tclnats_py {os.path.join(LIBDIR, 'pkgIndex.tcl')}" in out
    assert "got: greet.tcl hello" in out
    assert "reply: re:ping" in out
    assert "error: NATS ErrNoResponders" in out


def test_python_starts_at_the_first_command_that_needs_it(tmp_path, nats_server):
    """[package require nats] loads the extension and the Tcl layer; Python
    starts (and the bridge replaces its stand-in commands) when the first
    connection is made, and a later interpreter command finds it running."""
    out = ok(run_tcl(f"""
        package require nats
        puts "after require: hosted [info exists ::tclnats::hosted] standin [llength [info procs ::tclnats::_new_connection]]"
        set m [nats::msg create subj -data payload]
        puts "msg without Python: [nats::msg data $m] hosted [info exists ::tclnats::hosted]"
        set c [nats::connection new first]
        puts "after new: hosted [info exists ::tclnats::hosted] standin [llength [info procs ::tclnats::_new_connection]]"
        puts "embedded: [dict exists [::tclnats::python] prefix]"
        $c configure -servers {nats_server.url}
        $c connect
        puts "ping: [$c ping]"
        $c destroy
        puts "second start: [catch {{::tclnats::_start}} e] $e"
        puts "usage: [catch {{::tclnats::python extra}} e o] $e / [dict get $o -errorcode]"
        puts "stand-ins left: [llength [info procs ::tclnats::_*]]"
    """, tmp_path))
    assert "after require: hosted 0 standin 1" in out
    assert "msg without Python: payload hosted 0" in out
    assert "after new: hosted 1 standin 0" in out
    assert "embedded: 1" in out
    assert "ping: true" in out
    assert "second start: 0 " in out
    assert 'usage: 1 wrong # args: should be "::tclnats::python" / TCL WRONGARGS' in out
    assert "stand-ins left: 0" in out


def test_python_started_by_tclsh_imports_the_installs_dependencies(tmp_path, nkey_server):
    """The Python that the extension starts runs without site: an NKey
    connection needs the nkeys package from the installation's
    site-packages, which the bridge puts on sys.path itself."""
    srv, _ = nkey_server
    out = ok(run_tcl(f"""
        package require nats
        set c [nats::connection new]
        $c configure -servers {srv.url} -nkey_seed [string trim [read [set f [open {srv.auth.seed_path}]]]]
        close $f
        $c connect
        puts "ping: [$c ping]"
        $c destroy
    """, tmp_path))
    assert "ping: true" in out


def test_python_starts_isolated_whatever_the_environment(tmp_path):
    """PYTHONHOME/PYTHONPATH pointing elsewhere and a PATH without python do
    not change which Python serves Tcl; Python leaves the host's signals alone."""
    env = stock_env(PYTHONHOME="/nonexistent", PYTHONPATH="/nonexistent", PATH="/usr/bin:/bin")
    out = ok(run_tcl("""
        package require nats
        puts [package present nats]
    """, tmp_path, env=env))
    assert out.strip() == "3.2.1"


# ------------------------------------------------------------ Thread workers

def proc_counts() -> str:
    return "[llength [glob -directory /proc/[pid]/task *]] [llength [glob -directory /proc/[pid]/fd *]]"


def test_thread_workers_each_with_a_connection(tmp_path, nats_server):
    """4 Tcl threads, each with its own connection, 10,000 requests each
    (TCLNATS_THREAD_REQUESTS), answered by a responder in a fifth thread;
    afterwards the process has the threads and descriptors it started with."""
    n = int(os.environ.get("TCLNATS_THREAD_REQUESTS", "10000"))
    out = ok(run_tcl(f"""
        package require Thread
        package require nats
        set url {nats_server.url}
        # Python is up in this process from here on
        set c [nats::connection new main]
        $c configure -servers $url
        $c connect
        $c ping
        set before "{proc_counts()}"
        set responder [thread::create -joinable [list apply {{{{url}} {{
            package require nats
            set c [nats::connection new responder]
            $c configure -servers $url
            $c connect
            $c subscribe svc -queue q -callback [list apply {{{{c s m r}} {{ $c publish $r "re:$m" }}}} $c]
            $c ping
            thread::wait
            $c destroy
        }}}} $url]]
        after 300
        tsv::set stats answered 0
        set main [thread::id]
        set workers {{}}
        for {{set w 0}} {{$w < 4}} {{incr w}} {{
            lappend workers [thread::create -joinable [list apply {{{{url w n main}} {{
                package require nats
                set c [nats::connection new worker$w]
                $c configure -servers $url
                $c connect
                set good 0
                for {{set i 0}} {{$i < $n}} {{incr i}} {{
                    if {{[$c request svc "$w-$i" -timeout 5000] eq "re:$w-$i"}} {{ incr good }}
                }}
                tsv::incr stats answered $good
                $c destroy
                thread::send -async $main {{incr ::finished}}
            }}}} $url $w {n} $main]]
        }}
        set ::finished 0
        while {{$::finished < 4}} {{ vwait ::finished }}
        foreach t $workers {{ thread::join $t }}
        thread::send -async $responder {{thread::release}}
        thread::join $responder
        puts "answered [tsv::get stats answered]"
        puts "exists [lmap t $workers {{thread::exists $t}}]"
        set after "{proc_counts()}"
        puts "counts $before -> $after"
        $c destroy
    """, tmp_path, timeout=600))
    assert f"answered {4 * n}" in out, out
    assert "exists 0 0 0 0" in out
    line = next(x for x in out.splitlines() if x.startswith("counts"))
    before, after = line[len("counts "):].split(" -> ")
    assert before == after, line


THREAD_BEHAVIOUR = """
    package require Thread
    # one cycle first: Python and Tcl's notifier thread start once per process
    set t [thread::create -joinable {package require nats; thread::wait}]
    thread::release $t
    thread::join $t
    set before [llength [glob -directory /proc/[pid]/task *]]
    for {set i 0} {$i < 50} {incr i} {
        set t [thread::create -joinable {package require nats; thread::wait}]
        thread::release $t
        thread::join $t
    }
    # a thread from before may still be on its way out: count only growth
    puts "threads leaked by 50 cycles: [expr {max(0, [llength [glob -directory /proc/[pid]/task *]] - $before)}]"
    puts "exists: [thread::exists $t]"
    set t [thread::create {package require nats; thread::wait}]
    puts "sync send: [thread::send $t {expr {6 * 7}}]"
    puts "exit in worker: [thread::send $t {llength [info commands ::exit]}]"
    puts "nameofexecutable: [expr {[thread::send $t {info nameofexecutable}] eq [info nameofexecutable]}]"
    puts "nats in worker: [thread::send $t {lindex $::tclnats::provider 0}]"
    thread::release $t
    thread::errorproc report
    proc report {id info} { set ::reported [lindex [split $info \\n] 0] }
    set t [thread::create {thread::wait}]
    thread::send -async $t {error boom}
    after 2000 {set ::reported timeout}
    vwait ::reported
    puts "errorproc: $::reported"
    thread::release $t
    set pool [tpool::create -minworkers 1 -maxworkers 2 -initcmd {package require nats}]
    set job [tpool::post $pool {lindex $::tclnats::provider 0}]
    tpool::wait $pool $job
    puts "tpool: [tpool::get $pool $job]"
    tpool::release $pool
    tsv::set s k v
    puts "tsv: [thread::send [thread::create {thread::wait}] {tsv::get s k}]"
"""


@pytest.mark.skipif(LAUNCHER is None, reason="tclnats-tclsh is not installed")
def test_thread_behaviour_is_tclsh_s(tmp_path):
    ours = ok(run_tcl(THREAD_BEHAVIOUR, tmp_path, host=LAUNCHER, env=dict(os.environ)))
    stock = ok(run_tcl(THREAD_BEHAVIOUR, tmp_path))
    assert ours == stock
    assert "threads leaked by 50 cycles: 0" in ours
    assert "exists: 0" in ours
    assert "sync send: 42" in ours and "exit in worker: 1" in ours and "nameofexecutable: 1" in ours
    assert "nats in worker: tclnats_py" in ours and "tpool: tclnats_py" in ours
    assert "errorproc: boom" in ours and "tsv: v" in ours


# ------------------------------------------------------------ child interpreters

def test_child_interpreters(tmp_path, nats_server):
    from tclnats_py import _tclcross
    lib = os.path.dirname(_tclcross.__file__)   # the extension's folder
    out = ok(run_tcl(f"""
        proc fds {{}} {{ llength [glob -directory /proc/[pid]/fd *] }}
        set url {nats_server.url}
        foreach child {{c1 c2}} {{
            interp create $child
            $child eval [list set url $url]
            $child eval [list set me $child]
            $child eval {{
                package require nats
                set c [nats::connection new]
                $c configure -servers $url
                $c connect
                $c subscribe svc.$me -callback {{apply {{{{s m r}} {{ $::c publish $r ok-$::me }}}}}}
                $c ping
            }}
        }}
        package require nats
        set c [nats::connection new]
        $c configure -servers $url
        $c connect
        puts "c1 answers: [$c request svc.c1 x -timeout 2000]"
        set before [fds]
        interp delete c1
        puts "fds freed by interp delete: [expr {{$before - [fds]}}]"
        puts "c1 gone: [catch {{$c request svc.c1 x -timeout 500}} err opts] [dict get $opts -errorcode]"
        puts "c2 still connected: [c2 eval {{$c cget -status}}]"
        puts "c2 answers: [$c request svc.c2 x -timeout 2000]"
        interp delete c2
        interp create -safe s
        set lib [lindex [glob -directory {lib} _tclload*[info sharedlibextension]] 0]
        catch {{load $lib Tclnats s}} err
        puts "safe: $err"
        $c destroy
    """, tmp_path))
    assert "fds freed by interp delete: 1" in out, out
    assert "c1 answers: ok-c1" in out
    assert "c1 gone: 1 NATS ErrNoResponders" in out
    assert "c2 still connected: connected" in out
    assert "c2 answers: ok-c2" in out
    assert "cannot be loaded into a safe interpreter" in out


# ------------------------------------------------------------ wish, Tk

WISH = shutil.which("wish8.6") or shutil.which("wish")


@pytest.mark.skipif(WISH is None, reason="wish is not installed (apt-get install tk)")
def test_wish_gui_updates_widgets_from_callbacks(tmp_path, x_display, nats_server):
    out = ok(run_tcl(f"""
        package require nats
        label .l -text waiting
        pack .l
        set c [nats::connection new gui]
        $c configure -servers {nats_server.url}
        $c connect
        $c subscribe ui.text -callback {{apply {{{{s m r}} {{ .l configure -text $m; set ::shown 1 }}}}}}
        after 100 {{$c publish ui.text "hello from NATS"}}
        after 5000 {{set ::shown timeout}}
        vwait ::shown
        update
        puts "label: [.l cget -text]"
        $c destroy
        exit 0
    """, tmp_path, host=WISH, env=stock_env(DISPLAY=x_display)))
    assert "label: hello from NATS" in out


@pytest.mark.skipif(LAUNCHER is None, reason="tclnats-tclsh is not installed")
def test_tk_script_enters_the_event_loop_as_in_tclsh(tmp_path, x_display):
    script = """
        package require Tk
        package require nats
        after 200 {puts looped; exit 3}
    """
    ours = run_tcl(script, tmp_path, host=LAUNCHER, env=dict(os.environ, DISPLAY=x_display))
    stock = run_tcl(script, tmp_path, env=stock_env(DISPLAY=x_display))
    assert (ours.returncode, ours.stdout) == (stock.returncode, stock.stdout) == (3, "looped\n")


# ------------------------------------------------------------ a C program that embeds Tcl

HOST_C = r"""
#include <stdio.h>
#include <tcl.h>
int main(int argc, char **argv) {
    Tcl_Interp *interp;
    int code;
    Tcl_FindExecutable(argv[0]);
    interp = Tcl_CreateInterp();
    if (Tcl_Init(interp) != TCL_OK) { fprintf(stderr, "init: %s\n", Tcl_GetStringResult(interp)); return 2; }
    code = Tcl_EvalFile(interp, argv[1]);
    printf("result: %s\n", Tcl_GetStringResult(interp));
    if (code != TCL_OK) printf("errorInfo: %s\n", Tcl_GetVar(interp, "errorInfo", TCL_GLOBAL_ONLY));
    Tcl_DeleteInterp(interp);
    Tcl_Finalize();
    return code == TCL_OK ? 0 : 1;
}
"""


def test_c_program_embedding_tcl(tmp_path, nats_server):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not os.path.exists("/usr/include/tcl8.6/tcl.h"):
        pytest.skip("needs a C compiler and Tcl's headers (apt-get install gcc tcl-dev)")
    (tmp_path / "host.c").write_text(HOST_C)
    exe = tmp_path / "host"
    subprocess.run([cc, str(tmp_path / "host.c"), "-I/usr/include/tcl8.6", "-ltcl8.6", "-o", str(exe)],
                   check=True, capture_output=True)
    (tmp_path / "app.tcl").write_text(textwrap.dedent(f"""
        package require nats
        set c [nats::connection new embedded]
        $c configure -servers {nats_server.url}
        $c connect
        $c subscribe echo -callback {{apply {{{{s m r}} {{ $::c publish $r $m }}}}}}
        set r [$c request echo "from C" -timeout 2000]
        $c destroy
        set r
    """))
    p = subprocess.run([str(exe), str(tmp_path / "app.tcl")], capture_output=True, text=True, timeout=60,
                       env=stock_env())
    assert ok(p).strip() == "result: from C"


# ------------------------------------------------------------ a Python host joins

def test_python_tkinter_interpreter_joins_the_running_python(tmp_path, nats_server):
    code = textwrap.dedent(f"""
        import tkinter
        from tclnats_py import _tclcross
        tcl = tkinter.Tcl()
        tcl.eval("lappend auto_path {{{LIBDIR}}}")
        tcl.eval("package require nats")
        tcl.eval("set c [nats::connection new]; $c configure -servers {nats_server.url}; $c connect")
        print("ping", tcl.eval("$c ping"), "embedded", _tclcross.embedded())
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in os.environ.items() if k != "TCLLIBPATH"})
    assert ok(p).strip() == "ping true embedded False"


def test_plain_connection_loads_no_jetstream_and_leaves_a_no_site_host_alone(tmp_path, nats_server):
    """A connection, subscription, publish and request load only the start's
    modules (test_layout pins those): no JetStream layer, typing, datetime,
    hashlib, ssl...  A host Python run with -S keeps its sys.prefix and
    sys.path: only a Python that the extension started gets site-packages."""
    code = textwrap.dedent(f"""
        import sys, tkinter
        tcl = tkinter.Tcl()
        before, path, prefix = set(sys.modules), list(sys.path), sys.prefix
        tcl.eval("lappend auto_path {{{LIBDIR}}}")
        tcl.eval('''package require nats
            set c [nats::connection new]
            $c configure -servers {nats_server.url}
            $c connect
            $c subscribe svc -callback {{apply {{{{s m r}} {{ $::c publish $r "re:$m" }}}}}}
            $c publish svc hello
            set reply [$c request svc ping -timeout 2000]
            $c disconnect''')
        print("reply", tcl.eval("set reply"))
        print("path", [p for p in sys.path if p not in path], "prefix", sys.prefix == prefix)
        print("new", " ".join(sorted(set(sys.modules) - before)))
    """)
    p = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in os.environ.items() if k != "TCLLIBPATH"})
    lines = ok(p).splitlines()
    assert lines[0] == "reply re:ping"
    # the folder that holds the extension's tclnats_py goes on sys.path, nothing else
    import tclnats_py
    sitedir = os.path.dirname(os.path.dirname(os.path.realpath(tclnats_py.__file__)))
    assert lines[1] == f"path {[sitedir]} prefix True", lines[1]
    new = set(lines[2].split()[1:])
    heavy = {"typing", "datetime", "calendar", "locale", "hashlib", "ssl", "asyncio", "ipaddress", "urllib.parse",
             "base64", "tclnats_py.tclface.js", "tclnats_py.engine.js", "tclnats_py.engine.auth", "traceback"}
    if sys.version_info < (3, 11):
        # ErrTimeout's base there is asyncio's own TimeoutError, and importing
        # asyncio loads ssl, traceback, and through them base64 and typing
        heavy -= {"asyncio", "ssl", "traceback", "base64", "typing"}
    assert not new & heavy, sorted(new & heavy)


# ------------------------------------------------------------ when Python cannot be found

def test_missing_python_library_is_a_tcl_error(tmp_path):
    out = ok(run_tcl("""
        puts [catch {package require nats} err opts]
        puts $err
        puts [dict get $opts -errorcode]
    """, tmp_path, env=stock_env(TCLNATS_PYTHON_LIBRARY="/nonexistent/libpython3.so")))
    lines = out.splitlines()
    assert lines[0] == "1"
    assert "cannot load the Python library" in out and "/nonexistent/libpython3.so" in out
    assert "pip install" in out
    assert lines[-1] == "NATS ErrPython"


def test_missing_extension_is_a_tcl_error(tmp_path):
    """The Tcl files without the built extension (a copy of the folder alone)."""
    lib = tmp_path / "lib" / "tcl"
    shutil.copytree(LIBDIR, lib, ignore=shutil.ignore_patterns("__pycache__"))
    out = ok(run_tcl("""
        puts [catch {package require nats} err opts]
        puts $err
    """, tmp_path, env=stock_env(TCLLIBPATH=str(lib))))
    assert out.startswith("1\n") and "its Tcl extension" in out and "pip install" in out


# ------------------------------------------------------------ tclnats-tclsh is tclsh

DIVERGENCES = {
    "exit flushes file channels": """
        set f [open [file join [file dirname [info script]] out.txt] w]
        puts -nonewline $f [string repeat x 40]
        exit 0
    """,
    "exit flushes pipes": """
        set p [open "|cat" w]
        puts -nonewline $p [string repeat y 40]
        exit 0
    """,
    "encoding and locale": """
        puts [encoding system]
        puts [info exists env(LC_CTYPE)]
        puts [exec sh -c {echo ${LC_CTYPE-unset}}]
    """,
    "errorInfo of the main script": """
        proc inner {} { error "deep failure" }
        proc outer {} { inner }
        outer
    """,
    "nats then errorInfo": """
        package require nats
        set c [nats::connection new]
        $c configure -servers nats://127.0.0.1:1
        $c connect -async
        error "after nats"
    """,
}


@pytest.mark.skipif(LAUNCHER is None, reason="tclnats-tclsh is not installed")
@pytest.mark.parametrize("what", sorted(DIVERGENCES))
def test_tclnats_tclsh_matches_stock_tclsh(tmp_path, what):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LC_")}
    env["LANG"] = "C"
    script = DIVERGENCES[what]
    ours = run_tcl(script, tmp_path, host=LAUNCHER, env=env)
    ours_file = (tmp_path / "out.txt").read_text() if (tmp_path / "out.txt").exists() else None
    (tmp_path / "out.txt").unlink(missing_ok=True)
    stock = run_tcl(script, tmp_path, env=dict(env, TCLLIBPATH=LIBDIR))
    stock_file = (tmp_path / "out.txt").read_text() if (tmp_path / "out.txt").exists() else None
    assert (ours.returncode, ours.stdout, ours.stderr, ours_file) == \
        (stock.returncode, stock.stdout, stock.stderr, stock_file)
    if what == "exit flushes file channels":
        assert ours_file == "x" * 40
    if what == "exit flushes pipes":
        assert ours.stdout == "y" * 40


# ------------------------------------------------------------ another nats on the path

def old_checkout(root, versions=("3.2.1",)):
    """A stand-in for a nats-tcl checkout: its pkgIndex.tcl offers these
    versions of nats; sourcing the index and loading a version are recorded
    in files (so a test sees that the index was in the scan)."""
    root.mkdir(parents=True, exist_ok=True)
    lines = [f"set f [open {{{root / 'indexed'}}} a]; puts $f $dir; close $f"]
    for v in versions:
        lines.append(
            f"package ifneeded nats {v} [list apply {{{{}} {{"
            f"set f [open {{{root / 'loaded'}}} a]; puts $f {v}; close $f; "
            f"namespace eval ::tclnats {{variable provider [list original {v}]}}; package provide nats {v}}}}}]")
    (root / "pkgIndex.tcl").write_text("\n".join(lines) + "\n")
    return root


def launcher_cmd() -> list[str]:
    """This tree's tclnats-tclsh (the one on PATH may be another install)."""
    return [sys.executable, "-m", "tclnats_py.tclface.tclsh"]


def launcher_env(env: dict) -> dict:
    import tclnats_py
    top = os.path.dirname(os.path.dirname(os.path.abspath(tclnats_py.__file__)))
    return dict(env, PYTHONPATH=top)


WHICH_NATS = """
    set v [package require {req}]
    puts "$v [lindex $::tclnats::provider 0]"
    set c [interp create]
    $c eval {{set v [package require {req}]; puts "child: $v [lindex $::tclnats::provider 0]"}}
"""

# TCLLIBPATH as a user may have it: OLD a nats-tcl checkout, LIB our Tcl
# folder (tclnats-tclsh --libdir), PARENT the folder above it (what the
# README once exported; its scan covers LIB), LIBS a folder holding the checkout
ORDERS = {
    "checkout in front": "OLD LIB",
    "checkout behind": "LIB OLD",
    "checkout in front of the parent folder": "OLD PARENT",
    "checkout behind the parent folder": "PARENT OLD",
    "ours, checkout, parent": "LIB OLD PARENT",
    "checkout in a folder on the path, in front": "LIBS LIB",
    "checkout in a folder on the path, behind": "LIB LIBS",
}


@pytest.mark.parametrize("host", ["tclsh", "tclnats-tclsh"])
@pytest.mark.parametrize("old_versions", [("3.2.1",), ("3.2.1", "2.0.4")], ids=["old 3.2.1", "old 3.2.1+2.0.4"])
@pytest.mark.parametrize("order", list(ORDERS))
@pytest.mark.parametrize("req,api,want", [("nats", "", "3.2.1"), ("nats 2", "", "2.0.4"), ("nats", "2", "2.0.4")],
                         ids=["require nats", "require nats 2", "TCLNATS_API=2"])
def test_another_nats_on_the_path_never_shadows_ours(tmp_path, host, old_versions, order, req, api, want):
    """Ours answers whatever the order of TCLLIBPATH, in stock tclsh and in
    tclnats-tclsh, in the main interpreter and in a child interpreter."""
    old = old_checkout(tmp_path / "libs" / "nats-tcl", old_versions)
    places = {"OLD": str(old), "LIB": LIBDIR, "PARENT": os.path.dirname(LIBDIR), "LIBS": str(tmp_path / "libs")}
    env = {k: v for k, v in os.environ.items() if k not in ("TCLLIBPATH", "TCLNATS_API")}
    env["TCLLIBPATH"] = " ".join("{" + places[w] + "}" for w in ORDERS[order].split())
    if api:
        env["TCLNATS_API"] = api
    (tmp_path / "s.tcl").write_text(textwrap.dedent(WHICH_NATS.format(req=req)))
    cmd = [TCLSH] if host == "tclsh" else launcher_cmd()
    p = subprocess.run(cmd + [str(tmp_path / "s.tcl")], capture_output=True, text=True, timeout=60,
                       env=env if host == "tclsh" else launcher_env(env), stdin=subprocess.DEVNULL)
    assert ok(p).splitlines() == [f"{want} tclnats_py", f"child: {want} tclnats_py"]
    assert (old / "indexed").exists(), "the checkout's index was not scanned: the test tests nothing"
    assert not (old / "loaded").exists()


@pytest.mark.parametrize("where", ["linsert $auto_path 0 $old", "concat $auto_path [list $old]"])
def test_a_checkout_added_to_auto_path_by_the_script(tmp_path, where):
    """A script that puts a nats-tcl checkout on auto_path (in front or at
    the end) before `package require nats` still gets ours."""
    old = old_checkout(tmp_path / "nats-tcl")
    out = ok(run_tcl(f"""
        set old {{{old}}}
        set auto_path [{where}]
        package require Tcl
        puts "[package require nats] [lindex $::tclnats::provider 0]"
    """, tmp_path))
    assert out.strip() == "3.2.1 tclnats_py"
    assert (old / "indexed").exists() and not (old / "loaded").exists()


def test_a_thread_worker_gets_ours_with_a_checkout_in_front(tmp_path):
    """A Thread worker scans the path itself: ours there too, and in a
    script that loses tcllib (no json: a scan during our own load)."""
    old = old_checkout(tmp_path / "nats-tcl", ("3.2.1", "2.0.4"))
    env = stock_env(TCLLIBPATH=f"{{{old}}} {{{os.path.dirname(LIBDIR)}}}")
    out = ok(run_tcl("""
        package require Thread
        set t [thread::create]
        puts [thread::send $t {list [package require nats] [lindex $::tclnats::provider 0]}]
        puts [thread::send $t {list [package require nats 3] [lindex $::tclnats::provider 0]}]
        thread::release $t
        set c [interp create]
        puts [$c eval {
            set auto_path [list [lindex $auto_path 0] [lindex $auto_path 1] [info library]]
            list [package require nats 2] [lindex $::tclnats::provider 0] json: [package provide json]
        }]
    """, tmp_path, env=env))
    assert out.splitlines() == ["3.2.1 tclnats_py", "3.2.1 tclnats_py", "2.0.4 tclnats_py json: {}"]
    assert not (old / "loaded").exists()


def test_a_newer_nats_on_the_path_stays_available(tmp_path):
    """Only the numbers ours serves are taken over: a newer nats package on
    the path is still the one `package require nats` picks (the highest),
    and `package require nats 3.2` still gets ours."""
    newer = old_checkout(tmp_path / "nats-tcl-4", ("4.0",))
    env = stock_env(TCLLIBPATH=f"{{{LIBDIR}}} {{{newer}}}")
    out = ok(run_tcl("""
        puts "[package require nats] [lindex $::tclnats::provider 0]"
        puts [lsort [package versions nats]]
    """, tmp_path, env=env))
    assert out.splitlines() == ["4.0 original", "2.0.4 3.2.1 4.0"]
    out = ok(run_tcl("""puts "[package require nats 3.2] [lindex $::tclnats::provider 0]" """, tmp_path, env=env))
    assert out.strip() == "3.2.1 tclnats_py"


def test_the_c_publish_fast_path_command(tmp_path):
    """::tclnats::_fastpub_new: what the publish method's fast path frames
    (ASCII subjects by the naming rules; others once the engine accepted
    them), what it leaves to the general path (0), when it asks for room
    (2); its variables keep a value set before the link."""
    out = ok(run_tcl("""
        package require nats
        ::tclnats::_start
        namespace eval ::x {set FastRoom 1000; set FastMax 8}
        ::tclnats::_fastpub_new ::x::Fast [list lappend ::pending 1]
        puts "kept: $::x::FastRoom $::x::FastMax $::x::PendingCount"
        set e caf\u00e9
        ::x::Fast subject $e.b
        puts "fast: [::x::Fast pub a.b hello] [::x::Fast pub a.b hi r.s] [::x::Fast pub a.b hi -reply r.s] [::x::Fast pub $e.b hi]"
        set g [list [::x::Fast pub a.b 123456789] [::x::Fast pub $e.d hi] [::x::Fast pub a.b hi $e.y]]
        lappend g [::x::Fast pub a.b hi -header {}] [::x::Fast pub a.b hi {}] [::x::Fast pub a.b hi -reply r.s extra]
        lappend g [::x::Fast pub a..b hi] [::x::Fast pub a.b hi "r s"] [::x::Fast pub a.b hi -reply]
        puts "general: $g"
        puts "batch: count $::x::PendingCount bytes $::x::PendingBytes pending [llength $::pending]"
        lassign [::x::Fast take] n bytes
        puts "take: $n [string map {\\r\\n |} [encoding convertfrom utf-8 $bytes]] count $::x::PendingCount"
        ::x::Fast clear
        puts "cleared: [::x::Fast pub $e.b hi] [::x::Fast pub a.b hi]"
        set ::x::FastRoom -1
        puts "room: [::x::Fast pub a.b hi]"
        set ::x::FastMax -1
        set ::x::FastRoom 1000
        puts "closed: [::x::Fast pub a.b hi]"
        puts "bad: [catch {::x::Fast frobnicate} e] $e"
    """, tmp_path))
    assert "kept: 1000 8 0" in out
    assert "fast: 1 1 1 1" in out
    assert "general: 0 0 0 0 0 0 0 0 0" in out
    assert "batch: count 4 bytes 139 pending 1" in out  # payload + 32 each
    assert "take: 4 PUB a.b  5|hello|PUB a.b r.s 2|hi|PUB a.b r.s 2|hi|PUB caf\u00e9.b  2|hi| count 0" in out
    assert "cleared: 0 1" in out
    assert "room: 2" in out
    assert "closed: 0" in out
    assert "bad: 1 bad operation" in out
