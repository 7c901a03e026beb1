"""Our tcltest files under tests/tclsuite, run by tclnats-tclsh against a real
nats-server; every Tcl test is its own pytest item."""

import os
import re
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SUITE = os.path.join(HERE, "tclsuite")
FILES = sorted(f for f in os.listdir(SUITE) if f.endswith(".test"))

pytestmark = pytest.mark.tcl


def tclsh_cmd():
    exe = shutil.which("tclnats-tclsh")
    return [exe] if exe else [sys.executable, "-m", "tclnats_py.tclsh"]


def tcl_test_names(fname):
    with open(os.path.join(SUITE, fname), encoding="utf-8") as f:
        return re.findall(r"^test\s+(\S+)", f.read(), re.M)


_results: dict = {}


@pytest.fixture(scope="module")
def tls_auth_server(tmp_path_factory):
    """TLS (generated certificates) with user/password auth, for the Tcl suite."""
    from compat.certs import generate_certs
    from tclnats_py.server import NatsServer
    paths = generate_certs(str(tmp_path_factory.mktemp("tclcerts")))
    conf = (f'tls {{ cert_file: "{paths["server-cert.pem"]}", key_file: "{paths["server-key.pem"]}" }}\n'
            'authorization { user: "alice", password: "s3cret" }\n')
    with NatsServer(config=conf) as srv:
        yield f"nats://localhost:{srv.port}", paths["rootCA.pem"]


@pytest.fixture(scope="module")
def suite_results(js_server, tls_auth_server):
    """Run each file once (module scope); parse tcltest's verbose output."""
    def run(fname):
        if fname not in _results:
            env = dict(os.environ, TCLNATS_TEST_URL=js_server.url, TCLNATS_TEST_TLS_URL=tls_auth_server[0],
                       TCLNATS_TEST_CA=tls_auth_server[1])
            env.pop("TCLLIBPATH", None)
            proc = subprocess.run(tclsh_cmd() + [os.path.join(SUITE, fname), "-verbose", "pse"],
                                  capture_output=True, text=True, timeout=300, env=env, cwd=SUITE)
            out = proc.stdout + proc.stderr
            outcome = {}
            for m in re.finditer(r"^\+\+\+\+ (\S+) (PASSED|SKIPPED)", out, re.M):
                outcome[m.group(1)] = m.group(2)
            for m in re.finditer(r"^==== (\S+) FAILED", out, re.M):
                outcome[m.group(1)] = "FAILED"
            _results[fname] = (outcome, out)
        return _results[fname]
    return run


@pytest.mark.parametrize("fname,name", [(f, n) for f in FILES for n in tcl_test_names(f)])
def test_tcl(suite_results, fname, name):
    outcome, out = suite_results(fname)
    if outcome.get(name) == "SKIPPED":
        pytest.skip(f"{name}: a tcltest constraint is not met")
    if outcome.get(name) != "PASSED":
        # show this test's part of the tcltest report
        m = re.search(rf"^==== {re.escape(name)} .*?^==== {re.escape(name)} FAILED", out, re.M | re.S)
        pytest.fail(m.group(0) if m else f"{name}: {outcome.get(name, 'did not run')}\n{out[-3000:]}")
