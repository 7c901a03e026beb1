"""tclnats-tclsh behaves like tclsh: argv/argc/argv0 and [info script], exit
codes, scripts on standard input, [info nameofexecutable] (so tcltest's child
processes are tclnats-tclsh too), the Tcl packages a tclsh script expects,
and the --nats-server option's throw-away server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
from shlex import quote as shlex_quote

import pytest

from tclnats_py.testing.server import free_port

pytestmark = pytest.mark.tcl

EXE = shutil.which("tclnats-tclsh")


def launcher() -> list[str]:
    return [EXE] if EXE else [sys.executable, "-m", "tclnats_py.tclface.tclsh"]


def run(args=(), script=None, stdin=None, tmp_path=None, env=None, name="script.tcl", timeout=60):
    cmd = launcher()
    if script is not None:
        path = os.path.join(str(tmp_path), name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(script))
        cmd = cmd + [path]
    feed = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    return subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=timeout, env=env,
                          check=False, **feed)


def launch(args, timeout=60, **kw):
    """The launcher with these arguments; stdin is empty unless input= is given."""
    if "input" not in kw:
        kw["stdin"] = subprocess.DEVNULL
    return subprocess.run(launcher() + list(args), capture_output=True, text=True, timeout=timeout,
                          check=False, **kw)


def port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def nats_server_processes(port: int) -> list[int]:
    """pids of nats-server processes listening on this port (by command line)."""
    pids = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and os.path.basename(argv[0]) == b"nats-server" and str(port).encode() in argv:
            pids.append(int(pid))
    return pids


# ------------------------------------------------------------ argv, info script

def test_argv_argc_argv0_info_script(tmp_path):
    p = run(["plain", "with space", "{brace", "żółw"],
            'puts [list $argc $argv0 [info script]]\nforeach a $argv {puts "<$a>"}',
            tmp_path=tmp_path)
    assert p.returncode == 0, p.stderr
    first, *rest = p.stdout.splitlines()
    script = os.path.join(str(tmp_path), "script.tcl")
    assert first == f"4 {script} {script}"
    assert rest == ["<plain>", "<with space>", "<{brace>", "<żółw>"]


def test_no_arguments(tmp_path):
    p = run([], 'puts "[llength $argv]|$argc|$tcl_interactive"', tmp_path=tmp_path)
    assert p.returncode == 0 and p.stdout.strip() == "0|0|0"


def test_info_script_follows_source(tmp_path):
    (tmp_path / "inner.tcl").write_text("set ::inner [file tail [info script]]\n")
    p = run([], """
        source [file join [file dirname [info script]] inner.tcl]
        puts "$::inner [file tail [info script]]"
    """, tmp_path=tmp_path)
    assert p.returncode == 0 and p.stdout.strip() == "inner.tcl script.tcl"


# ------------------------------------------------------------ exit codes

@pytest.mark.parametrize("body,code", [
    ("exit 3", 3),
    ("exit", 0),
    ("exit 0", 0),
    ("exit 255", 255),
    ("set x 1", 0),
    ('puts "no exit at all"', 0),
    ("after 30 {exit 7}; vwait forever", 7),
])
def test_exit_codes(tmp_path, body, code):
    p = run([], body, tmp_path=tmp_path)
    assert p.returncode == code, p.stderr


def test_error_exits_1_with_the_trace_on_stderr(tmp_path):
    p = run([], """
        proc inner {} { error "boom from inner" }
        proc outer {} { inner }
        puts "before"
        outer
        puts "never"
    """, tmp_path=tmp_path)
    assert p.returncode == 1
    assert p.stdout.strip() == "before"
    assert "boom from inner" in p.stderr
    assert 'while executing' in p.stderr and '(procedure "inner"' in p.stderr
    assert '(procedure "outer"' in p.stderr


def test_nats_error_exits_1_with_its_message(tmp_path):
    p = run([], """
        package require nats
        set c [nats::connection new]
        $c publish x y
    """, tmp_path=tmp_path)
    assert p.returncode == 1
    assert "No connection to NATS server" in p.stderr


def test_output_is_flushed_on_exit(tmp_path):
    p = run([], """
        fconfigure stdout -buffering full
        puts -nonewline "partial"
        puts stderr "to stderr"
        exit 4
    """, tmp_path=tmp_path)
    assert (p.returncode, p.stdout, p.stderr.strip()) == (4, "partial", "to stderr")


def test_missing_script_file(tmp_path):
    p = launch([os.path.join(str(tmp_path), "nope.tcl")], timeout=60)
    assert p.returncode == 1
    assert "nope.tcl" in p.stderr


# ------------------------------------------------------------ standard input

def test_stdin_script():
    p = run(stdin="puts hi\n")
    assert p.returncode == 0 and p.stdout == "hi\n"


def test_stdin_multiline_commands():
    script = textwrap.dedent("""\
        proc add {a b} {
            return [expr {$a + $b}]
        }
        set total 0
        foreach i {1 2 3} {
            set total [add $total $i]
        }
        puts $total
    """)
    p = run(stdin=script)
    assert p.returncode == 0 and p.stdout.strip() == "6"


def stock(stdin: str) -> subprocess.CompletedProcess:
    return subprocess.run([STOCK_TCLSH], input=stdin, capture_output=True, text=True, timeout=60)


STOCK_TCLSH = shutil.which("tclsh8.6") or shutil.which("tclsh") or "/usr/bin/tclsh"


def test_stdin_exit_code_and_error():
    """As with tclsh: exit codes, and a script on stdin goes on after an error
    and can read its own following lines."""
    for text in ("puts a\nexit 5\nputs b\n", "puts a\nerror stdin-boom\nputs b\n",
                 "set l [gets stdin]\nthis line is read by the script\nputs \"read: $l\"\n"):
        ours, theirs = run(stdin=text), stock(text)
        assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)
    assert run(stdin="puts a\nexit 5\nputs b\n").returncode == 5


def test_stdin_uses_nats(nats_server):
    p = run(stdin=f"""package require nats
set c [nats::connection new]
$c configure -servers {nats_server.url}
$c connect
puts [$c ping]
$c destroy
""")
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "true"


# ------------------------------------------------------------ nameofexecutable, tcltest children

def test_nameofexecutable_is_tclsh(tmp_path):
    """tclnats-tclsh is the real tclsh: [info nameofexecutable] names it, and
    what it starts finds tclnats_py's nats through TCLLIBPATH"""
    p = run([], "puts [info nameofexecutable]", tmp_path=tmp_path)
    assert p.returncode == 0
    assert os.path.samefile(p.stdout.strip(), STOCK_TCLSH)
    # exec of [info nameofexecutable] gives a tclsh with our nats again
    p = run([], 'puts [exec [info nameofexecutable] << "puts \\[package require nats\\]"]', tmp_path=tmp_path)
    assert p.returncode == 0 and p.stdout.strip() == "3.2.1", p.stderr


def test_tcltest_child_processes(tmp_path, nats_server):
    """tcltest's runAllTests (-singleproc 0) runs each file in [info nameofexecutable]."""
    d = tmp_path / "suite"
    d.mkdir()
    (d / "all.tcl").write_text(textwrap.dedent("""\
        package require tcltest
        tcltest::configure -testdir [file dirname [file normalize [info script]]] -singleproc 0
        tcltest::configure {*}$argv
        set env(PARENT_PID) [pid]
        exit [tcltest::runAllTests]
    """))
    (d / "child.test").write_text(textwrap.dedent("""\
        package require tcltest
        namespace import tcltest::test
        package require nats
        test child-1 {a separate process} -body {
            expr {[pid] != $env(PARENT_PID)}
        } -result 1
        test child-2 {nats works in the child} -body {
            set c [nats::connection new child]
            $c configure -servers $env(NATS_URL)
            $c connect
            set r [$c ping]
            $c destroy
            set r
        } -result true
        tcltest::cleanupTests
    """))
    (d / "other.test").write_text(textwrap.dedent("""\
        package require tcltest
        namespace import tcltest::test
        test other-1 {a second file, a second child, our nats} -body {
            package require nats
            lindex $::tclnats::provider 0
        } -result tclnats_py
        tcltest::cleanupTests
    """))
    env = dict(os.environ, NATS_URL=nats_server.url)
    p = launch([str(d / "all.tcl")], timeout=120, env=env)
    assert "Test files run in separate interpreters" in p.stdout
    assert "Total\t3\tPassed\t3\tSkipped\t0\tFailed\t0" in p.stdout, p.stdout + p.stderr
    assert p.returncode == 0


def test_tcltest_failure_is_reported(tmp_path):
    d = tmp_path / "failing"
    d.mkdir()
    (d / "all.tcl").write_text("package require tcltest\n"
                               "tcltest::configure -testdir [file dirname [file normalize [info script]]]\n"
                               "exit [tcltest::runAllTests]\n")
    (d / "bad.test").write_text("package require tcltest\nnamespace import tcltest::test\n"
                                "test bad-1 {fails} -body {expr 1} -result 2\ntcltest::cleanupTests\n")
    p = launch([str(d / "all.tcl")], timeout=120)
    assert "==== bad-1 fails FAILED" in p.stdout
    assert p.returncode == 1


# ------------------------------------------------------------ packages

def test_tcl_packages_load(tmp_path):
    p = run([], """
        foreach pkg {Tcl tcltest Thread tls json json::write logger coroutine struct::list nats} {
            puts "$pkg [package require $pkg]"
        }
        puts "thread [thread::id]"
    """, tmp_path=tmp_path)
    assert p.returncode == 0, p.stderr
    versions = dict(line.split(" ", 1) for line in p.stdout.splitlines())
    assert versions["nats"] == "3.2.1"
    assert versions["Tcl"].startswith("8.6")
    assert versions["thread"].startswith("tid")
    assert all(versions[k] for k in ("tcltest", "Thread", "tls", "json", "logger", "coroutine"))


def test_coroutine_util_vwait_with_nats(tmp_path, nats_server):
    """tcllib's coroutine::util and nats' coroutine-aware calls together."""
    p = run([nats_server.url], """
        package require nats
        package require coroutine
        set c [nats::connection new]
        $c configure -servers [lindex $argv 0]
        $c connect
        $c subscribe svc -callback [list apply {{c s m r} {$c publish $r ok:$m}} $c]
        coroutine main apply {{c} {
            coroutine::util after 10
            set ::result [$c request svc x -timeout 2000]
        }} $c
        vwait ::result
        puts $::result
    """, tmp_path=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "ok:x"


# ------------------------------------------------------------ --nats-server

SERVER_SCRIPT = """
    package require nats
    puts $env(NATS_URL)
    set c [nats::connection new]
    $c configure -servers $env(NATS_URL)
    $c connect
    $c subscribe t -callback [list apply {{c s m r} {$c publish $r pong:$m}} $c]
    puts [$c request t x -timeout 2000]
    puts [dict exists [$c server_info] jetstream]
"""


def _check_server_gone(url: str):
    port = int(url.rsplit(":", 1)[1])
    assert not port_open(port), f"the throw-away server at {url} is still listening"
    assert nats_server_processes(port) == []


def test_nats_server_option_with_port(tmp_path):
    port = free_port()
    path = tmp_path / "s.tcl"
    path.write_text(textwrap.dedent(SERVER_SCRIPT))
    p = launch([f"--nats-server={port}", str(path)], timeout=60)
    assert p.returncode == 0, p.stderr
    url, reply, js = p.stdout.split()
    assert url == f"nats://127.0.0.1:{port}"
    assert (reply, js) == ("pong:x", "1")
    _check_server_gone(url)


def test_nats_server_option_without_port(tmp_path):
    path = tmp_path / "s.tcl"
    path.write_text(textwrap.dedent(SERVER_SCRIPT))
    p = launch(["--nats-server", str(path)], timeout=60)
    assert p.returncode == 0, p.stderr
    url, reply, _ = p.stdout.split()
    assert url.startswith("nats://127.0.0.1:") and reply == "pong:x"
    _check_server_gone(url)


@pytest.mark.parametrize("ending,code", [("exit 3", 3), ("error failed-here", 1)])
def test_nats_server_stopped_whatever_the_ending(tmp_path, ending, code):
    path = tmp_path / "s.tcl"
    path.write_text(f"puts $env(NATS_URL)\nflush stdout\n{ending}\n")
    p = launch(["--nats-server", str(path)], timeout=60)
    assert p.returncode == code, p.stderr
    _check_server_gone(p.stdout.split()[0])


def test_nats_server_option_with_stdin():
    p = launch(["--nats-server"], input="puts $env(NATS_URL)\n")
    assert p.returncode == 0, p.stderr
    url = p.stdout.strip()
    assert url.startswith("nats://")
    _check_server_gone(url)


# ------------------------------------------------------------ --libdir, --env

def this_launcher() -> tuple[list[str], dict]:
    """This tree's launcher (the tclnats-tclsh on PATH may be another install)
    and an environment without TCLLIBPATH."""
    import tclnats_py
    top = os.path.dirname(os.path.dirname(os.path.abspath(tclnats_py.__file__)))
    env = {k: v for k, v in os.environ.items() if k not in ("TCLLIBPATH", "TCLNATS_API")}
    env["PYTHONPATH"] = top
    return [sys.executable, "-m", "tclnats_py.tclface.tclsh"], env


def test_libdir_is_the_folder_of_pkgindex():
    from tclnats_py.tclface import tcl_library_dir
    cmd, env = this_launcher()
    p = subprocess.run(cmd + ["--libdir"], capture_output=True, text=True, env=env, check=False)
    assert p.returncode == 0, p.stderr
    assert p.stdout == tcl_library_dir() + "\n"
    assert os.path.isfile(os.path.join(p.stdout.strip(), "pkgIndex.tcl"))


def test_env_line_makes_stock_tclsh_load_ours(tmp_path):
    """What the README says: eval "$(tclnats-tclsh --env)", then tclsh."""
    from tclnats_py.tclface import tcl_library_dir
    from tclnats_py.tclface.tclsh import find_tclsh
    cmd, env = this_launcher()
    script = tmp_path / "app.tcl"
    script.write_text('puts "[package require nats] [lindex $::tclnats::provider 1]"\n')
    shell = f'eval "$({" ".join(map(shlex_quote, cmd))} --env)" && exec {shlex_quote(find_tclsh())} {shlex_quote(str(script))}'
    p = subprocess.run(["sh", "-c", shell], capture_output=True, text=True, env=env, check=False,
                       stdin=subprocess.DEVNULL, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == f"3.2.1 {os.path.join(tcl_library_dir(), 'pkgIndex.tcl')}\n"


def test_env_formats():
    from tclnats_py.tclface import tcl_library_dir
    cmd, env = this_launcher()
    lib = tcl_library_dir()
    got = {}
    for fmt in ("", "sh", "systemd", "cron"):
        p = subprocess.run(cmd + ["--env"] + ([fmt] if fmt else []), capture_output=True, text=True, env=env,
                           check=False)
        assert p.returncode == 0, p.stderr
        got[fmt] = p.stdout
    if " " not in lib:
        assert got[""] == got["sh"] == f"export TCLLIBPATH={lib}\n"
        assert got["systemd"] == f"Environment=TCLLIBPATH={lib}\n"
        assert got["cron"] == f"TCLLIBPATH={lib}\n"
    p = subprocess.run(cmd + ["--env", "fish"], capture_output=True, text=True, env=env, check=False)
    assert (p.returncode, p.stdout) == (2, "")
    assert p.stderr == "tclnats-tclsh --env: unknown format 'fish' (one of: sh, systemd, cron)\n"


@pytest.mark.parametrize("folder", ["/opt/my apps/site-packages/tclnats_py/tcl", "/srv/100%/it's/tcl"])
def test_env_lines_quote_a_folder_for_their_reader(monkeypatch, folder):
    """A folder with blanks, quotes or % reaches Tcl as one auto_path
    element: through sh for the profile line; systemd's and cron's quoting
    rules (%% for systemd, double quotes) for theirs."""
    from tclnats_py.tclface import tclsh
    from tclnats_py.tclface.tclsh import find_tclsh
    monkeypatch.setattr(tclsh, "tcl_library_dir", lambda: folder)
    line = tclsh.env_line("sh")
    p = subprocess.run(["sh", "-c", line + '\nexec "$0" "$1"', find_tclsh(), "/dev/stdin"],
                       input="puts [lindex $env(TCLLIBPATH) 0]|[llength $env(TCLLIBPATH)]\n",
                       capture_output=True, text=True, check=False, timeout=60)
    assert p.stdout == f"{folder}|1\n", p.stderr
    value = "{" + folder + "}" if " " in folder else folder   # a Tcl list of one
    assert tclsh.env_line("systemd") == 'Environment="TCLLIBPATH=' + value.replace("%", "%%") + '"'
    assert tclsh.env_line("cron") == 'TCLLIBPATH="' + value + '"'
