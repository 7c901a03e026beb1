"""The real-server test harness itself (tclnats_py.testing.server, tclnats_py.testing,
the conftest fixtures), checked with raw sockets and with nats-py as an
independent client."""

import asyncio
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time

import pytest

from tclnats_py.testing.server import (
    NatsCluster,
    NatsServer,
    ServerStartError,
    find_nats_server,
    free_port,
)
from tclnats_py.testing import auth, certs

nats = pytest.importorskip("nats")

CONNECT = b'CONNECT {"verbose":false,"pedantic":false,"protocol":1,"headers":true}\r\n'


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 20))


async def _quiet(_e):
    pass


async def natspy(url, **kw):
    kw.setdefault("allow_reconnect", False)
    kw.setdefault("max_reconnect_attempts", 0)
    kw.setdefault("connect_timeout", 3)
    kw.setdefault("error_cb", _quiet)
    return await nats.connect(url, **kw)


def accepted(url, **kw) -> bool:
    """nats-py connects, and a request round trip works."""
    async def go():
        nc = await natspy(url, **kw)
        try:
            async def echo(m):
                await m.respond(m.data)
            sub = await nc.subscribe("harness.echo", cb=echo)
            await nc.flush()
            msg = await nc.request("harness.echo", b"ping", timeout=2)
            assert msg.data == b"ping"
            await sub.unsubscribe()
        finally:
            await nc.close()
        return True
    return run(go())


def rejected(url, **kw) -> str:
    """nats-py's connect fails; the error text."""
    async def go():
        try:
            nc = await natspy(url, **kw)
        except Exception as e:  # noqa: BLE001  (nats.errors.Error, NoServersError, ssl errors)
            return f"{type(e).__name__}: {e}"
        await nc.close()
        return ""
    err = run(go())
    assert err, f"{url} accepted a client it should have refused ({kw})"
    return err


def raw_info(port, host="127.0.0.1"):
    with socket.create_connection((host, port), timeout=3) as s:
        return read_info(s)


def read_info(sock):
    buf = b""
    while b"\r\n" not in buf:
        chunk = sock.recv(4096)
        assert chunk, "connection closed before INFO"
        buf += chunk
    line = buf.split(b"\r\n", 1)[0]
    assert line.startswith(b"INFO ")
    return json.loads(line[5:])


def ping_pong(sock) -> bytes:
    """CONNECT + PING on an established (maybe TLS) socket; what came back."""
    sock.sendall(CONNECT + b"PING\r\n")
    buf = b""
    deadline = time.monotonic() + 3
    while b"PONG" not in buf and b"-ERR" not in buf and time.monotonic() < deadline:
        chunk = sock.recv(4096)
        if not chunk:
            break
        buf += chunk
    return buf


def read_bytes(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def port_open(port) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


# -- the binary, ports, a plain server -------------------------------------------------------

def test_binary_found_and_overridable(monkeypatch, tmp_path):
    path = find_nats_server()
    assert os.access(path, os.X_OK)
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10,
                         check=False).stdout
    assert "nats-server" in out
    monkeypatch.setenv("TCLNATS_NATS_SERVER", path)
    assert find_nats_server() == path
    monkeypatch.setenv("TCLNATS_NATS_SERVER", str(tmp_path / "nope"))
    with pytest.raises(FileNotFoundError):
        find_nats_server()


def test_free_port_is_bindable():
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def test_info_on_a_raw_socket(nats_server):
    info = raw_info(nats_server.port)
    assert info["port"] == nats_server.port
    assert info["headers"] is True and info["max_payload"] > 0
    assert nats_server.url == f"nats://127.0.0.1:{nats_server.port}"
    assert nats_server.info()["server_id"] == info["server_id"]
    with socket.create_connection(("127.0.0.1", nats_server.port), timeout=3) as s:
        read_info(s)
        assert b"PONG" in ping_pong(s)
    assert accepted(nats_server.url)
    assert os.path.exists(nats_server.log_path) and "Server is ready" in nats_server.log_tail(50)


def test_jetstream_enabled(js_server):
    assert raw_info(js_server.port).get("jetstream") is True

    async def go():
        nc = await natspy(js_server.url)
        try:
            reply = await nc.request("$JS.API.INFO", b"", timeout=3)
        finally:
            await nc.close()
        return json.loads(reply.data)
    info = run(go())
    assert info["type"] == "io.nats.jetstream.api.v1.account_info_response" and "error" not in info
    assert os.path.isdir(js_server.store_dir)


def test_jetstream_domain():
    with NatsServer(domain="edge") as srv:
        assert srv.jetstream and srv.info().get("domain") == "edge"


# -- cluster -------------------------------------------------------------------------------

def test_cluster_info_lists_every_member_and_routes_messages(nats_cluster):
    addrs = {f"127.0.0.1:{s.port}" for s in nats_cluster.servers}
    assert len(nats_cluster.urls) == 3
    for s in nats_cluster.servers:
        info = raw_info(s.port)
        assert info["cluster"] == nats_cluster.name
        assert set(info["connect_urls"]) == addrs

    async def go():
        a = await natspy(nats_cluster.urls[0])
        b = await natspy(nats_cluster.urls[2])
        try:
            async def answer(m):
                await m.respond(b"from n0")
            await a.subscribe("harness.route", cb=answer)
            await a.flush()
            for _ in range(50):  # the subscription travels over the route
                try:
                    return (await b.request("harness.route", b"", timeout=0.2)).data
                except (nats.errors.NoRespondersError, nats.errors.TimeoutError):
                    await asyncio.sleep(0.05)
        finally:
            await a.close()
            await b.close()
    assert run(go()) == b"from n0"


@pytest.mark.slow
def test_jetstream_cluster_kill_and_restart_a_node():
    with NatsCluster(3, jetstream=True) as cluster:
        assert all(raw_info(s.port).get("jetstream") for s in cluster.servers)
        leader = cluster.meta_leader()
        assert leader is not None
        victim = (leader + 1) % 3  # (killing the leader would cost an election: seconds)
        port = cluster.servers[victim].port
        cluster.kill(victim)
        assert not cluster.servers[victim].is_running and not port_open(port)
        cluster.restart(victim)
        assert cluster.servers[victim].port == port
        assert len(raw_info(port)["connect_urls"]) == 3

        async def go():
            nc = await natspy(cluster.urls[victim])
            try:
                return json.loads((await nc.request("$JS.API.INFO", b"", timeout=3)).data)
            finally:
                await nc.close()
        assert "error" not in run(go())


# -- TLS -------------------------------------------------------------------------------------

def test_generated_certificate_files(tls_certs, unrelated_ca):
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID
    names = {os.path.basename(tls_certs[k]) for k in certs.CERT_FILES}
    assert names == {"rootCA.pem", "rootCA-key.pem", "server-cert.pem", "server-key.pem",
                     "client-cert.pem", "client-key.pem"}
    assert all(os.path.isfile(tls_certs[k]) for k in certs.CERT_FILES)
    assert all(tls_certs[name] == tls_certs[k] for k, name in certs.CERT_FILES.items())
    server = x509.load_pem_x509_certificate(read_bytes(tls_certs["server_cert"]))
    san = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["localhost"]
    assert {str(ip) for ip in san.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "::1"}
    eku = server.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in eku
    client = x509.load_pem_x509_certificate(read_bytes(tls_certs["client_cert"]))
    assert ExtendedKeyUsageOID.CLIENT_AUTH in client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    ca = x509.load_pem_x509_certificate(read_bytes(tls_certs["ca"]))
    assert server.issuer == ca.subject == client.issuer
    other = x509.load_pem_x509_certificate(read_bytes(unrelated_ca["ca"]))
    assert other.subject != ca.subject
    assert oct(os.stat(tls_certs["server_key"]).st_mode & 0o777) == "0o600"


def tls_connect(port, ctx, hostname="127.0.0.1"):
    """Plain INFO first, then the TLS upgrade, as a NATS client does."""
    raw = socket.create_connection(("127.0.0.1", port), timeout=3)
    info = read_info(raw)
    assert info.get("tls_required") is True
    return ctx.wrap_socket(raw, server_hostname=hostname)


@pytest.mark.parametrize("hostname", ["127.0.0.1", "localhost"])
def test_tls_handshake_with_generated_ca(tls_server, tls_certs, hostname):
    assert tls_server.url.startswith("tls://")
    ctx = certs.client_context(tls_certs)
    with tls_connect(tls_server.port, ctx, hostname) as s:
        assert s.version() in ("TLSv1.2", "TLSv1.3")
        assert b"PONG" in ping_pong(s)
    assert accepted(tls_server.url, tls=ctx, tls_hostname="127.0.0.1")


def test_tls_verification_fails_against_unrelated_ca(tls_server, unrelated_ca):
    ctx = certs.client_context(ca=unrelated_ca["ca"])
    with pytest.raises(ssl.SSLCertVerificationError):
        tls_connect(tls_server.port, ctx).close()
    rejected(tls_server.url, tls=ctx, tls_hostname="127.0.0.1")


def _refused_over_tls(port, ctx) -> None:
    """The server ends the TLS session (alert or close) instead of answering PING."""
    try:
        with tls_connect(port, ctx) as s:  # TLS 1.3: the client may finish the handshake first
            got = ping_pong(s)
    except (ssl.SSLError, ConnectionError):
        return
    assert b"PONG" not in got, got


def test_client_certificate_required(tls_verify_server, tls_certs, unrelated_ca):
    _refused_over_tls(tls_verify_server.port, certs.client_context(tls_certs))
    # a certificate from a CA the server does not trust is refused too
    wrong = certs.client_context(tls_certs)
    wrong.load_cert_chain(unrelated_ca["client_cert"], unrelated_ca["client_key"])
    _refused_over_tls(tls_verify_server.port, wrong)
    good = certs.client_context(tls_certs, client_cert=True)
    with tls_connect(tls_verify_server.port, good) as s:
        assert b"PONG" in ping_pong(s)
    assert accepted(tls_verify_server.url, tls=good, tls_hostname="127.0.0.1")


# -- auth ------------------------------------------------------------------------------------

def test_user_password(auth_server_userpass):
    srv, user, password = auth_server_userpass
    assert raw_info(srv.port).get("auth_required") is True
    assert accepted(srv.url, user=user, password=password)
    assert accepted(srv.auth.url(srv))
    assert "Authorization" in rejected(srv.url, user=user, password=password + "x")
    assert "Authorization" in rejected(srv.url)


def test_token(auth_server_token):
    srv, token = auth_server_token
    assert accepted(srv.url, token=token)
    assert "Authorization" in rejected(srv.url, token=token[:-1])


def test_nkey(nkey_server):
    srv, seed = nkey_server
    info = raw_info(srv.port)
    assert info.get("auth_required") is True and info.get("nonce")
    assert seed.startswith(b"SU")
    assert accepted(srv.url, nkeys_seed_str=seed.decode())
    assert accepted(srv.url, nkeys_seed=srv.auth.seed_path)
    other = auth.new_keypair("user")
    assert "Authorization" in rejected(srv.url, nkeys_seed_str=other.seed.decode())


def test_creds(creds_server):
    srv, creds = creds_server
    op = srv.auth
    assert read_bytes(creds).decode().startswith("-----BEGIN NATS USER JWT-----\n" + op.user_jwt + "\n")
    claims = auth.decode_jwt(op.user_jwt)
    assert claims["iss"] == op.account.public_key and claims["sub"] == op.user.public_key
    assert claims["nats"] == {**claims["nats"], "type": "user", "version": 2}
    assert auth.decode_jwt(op.account_jwt)["iss"] == op.operator.public_key
    assert accepted(srv.url, user_credentials=creds)
    assert "Authorization" in rejected(srv.url, user_credentials=op.bad_creds_path)
    # the right JWT with somebody else's seed fails the nonce signature
    forged = auth.write_creds(os.path.join(op.directory, "forged.creds"), op.user_jwt,
                              auth.new_keypair("user").seed)
    assert "Authorization" in rejected(srv.url, user_credentials=forged)
    # another user with permissions, and JetStream in the account
    limited = op.new_user("limited", pub_allow=["allowed.>", "_INBOX.>", "$JS.API.>"])

    async def go():
        errors = []

        async def on_err(e):
            errors.append(str(e))
        nc = await natspy(srv.url, user_credentials=limited, error_cb=on_err)
        try:
            js_info = json.loads((await nc.request("$JS.API.INFO", b"", timeout=3)).data)
            await nc.publish("denied.subject", b"")
            await nc.flush()
            for _ in range(40):
                if errors:
                    break
                await asyncio.sleep(0.05)
        finally:
            await nc.close()
        return js_info, errors
    js_info, errors = run(go())
    assert "error" not in js_info
    assert any("permissions violation" in e.lower() for e in errors), errors


# -- lifecycle -------------------------------------------------------------------------------

def test_restart_keeps_port_and_store(fresh_server):
    port, store = fresh_server.port, fresh_server.store_dir

    async def add_stream():
        nc = await natspy(fresh_server.url)
        try:
            cfg = {"name": "HARNESS", "subjects": ["harness.s"], "storage": "file"}
            r = json.loads((await nc.request("$JS.API.STREAM.CREATE.HARNESS", json.dumps(cfg).encode(),
                                             timeout=3)).data)
            assert "error" not in r, r
        finally:
            await nc.close()

    async def stream_names():
        nc = await natspy(fresh_server.url)
        try:
            return json.loads((await nc.request("$JS.API.STREAM.NAMES", b"", timeout=3)).data)["streams"]
        finally:
            await nc.close()

    run(add_stream())
    first_id = raw_info(port)["server_id"]
    fresh_server.restart()
    assert fresh_server.is_running and fresh_server.port == port and fresh_server.store_dir == store
    assert raw_info(port)["server_id"] != first_id  # a new process
    assert run(stream_names()) == ["HARNESS"]
    fresh_server.stop()
    assert not fresh_server.is_running and not port_open(port)
    fresh_server.start()
    assert raw_info(port)["port"] == port


def test_kill_really_kills(fresh_nats_server):
    pid, port = fresh_nats_server.pid, fresh_nats_server.port
    assert pid and port_open(port)
    fresh_nats_server.kill()
    assert not fresh_nats_server.is_running and fresh_nats_server.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not port_open(port)
    fresh_nats_server.restart()
    assert raw_info(port)["port"] == port


def test_lame_duck_tells_clients():
    with NatsServer(config='lame_duck_duration: "30s"\nlame_duck_grace_period: "0s"\n') as srv:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=5) as s:
            read_info(s)
            assert b"PONG" in ping_pong(s)
            srv.lame_duck()
            buf = b""
            while b'"ldm":true' not in buf:
                chunk = s.recv(4096)
                assert chunk, buf
                buf += chunk
        assert not port_open(srv.port)  # the listener closes at once in lame duck mode
        srv.kill()  # (it would take lame_duck_duration to go by itself, and ignores SIGTERM meanwhile)


def test_context_manager_cleans_up_and_start_errors_show_the_log():
    with NatsServer() as srv:
        tmp, port = srv._tmp, srv.port
        assert os.path.isdir(tmp)
    assert not srv.is_running and not os.path.exists(tmp) and not port_open(port)
    bad = NatsServer(config="this is { not a config")
    with pytest.raises(ServerStartError) as e:
        bad.start(timeout=5)
    assert "exited" in str(e.value) and "nats-server" in str(e.value)
    assert not bad.is_running
    bad.cleanup()
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        with pytest.raises(ServerStartError, match="(?i)address already in use"):
            NatsServer(port=taken.getsockname()[1]).start(timeout=5)
    finally:
        taken.close()


def test_cli_runs_until_sigterm():
    proc = subprocess.Popen([sys.executable, "-m", "tclnats_py.testing.server", "--port", "0", "--jetstream"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("nats://127.0.0.1:"), (url, proc.stderr.read() if proc.poll() is not None else "")
        port = int(url.rsplit(":", 1)[1])
        assert raw_info(port)["jetstream"] is True
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert not port_open(port)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
