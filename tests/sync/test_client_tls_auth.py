"""The blocking client's TLS and authentication: the asyncio face's options
(tls_ca, tls_cert/tls_key, tls, tls_verify, user/password, token), the same
errors, TLS reads and writes from several threads at once."""

import ssl
import threading

import pytest

import tclnats_py
from tclnats_py import sync


def test_tls_with_the_servers_ca_and_threads(tls_server):
    certs = tls_server.certs
    with sync.connect(f"tls://localhost:{tls_server.port}", tls_ca=certs["ca"]) as nc:
        assert nc.server_info["tls_required"] is True
        assert isinstance(nc._io._sock, ssl.SSLSocket)
        nc.subscribe("tls.svc", cb=lambda m: m.respond(m.data))
        nc.flush()
        got, errors = [], []

        def ask(i):
            try:
                for n in range(50):
                    got.append(nc.request("tls.svc", f"{i}.{n}", timeout=5).data)
            except tclnats_py.NatsError as e:
                errors.append(e)
        ts = [threading.Thread(target=ask, args=(i,)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        assert not errors and len(got) == 200


def test_tls_ready_context_client_certificate_and_verification(tls_verify_server, unrelated_ca):
    certs = tls_verify_server.certs
    url = f"tls://localhost:{tls_verify_server.port}"
    ctx = ssl.create_default_context(cafile=certs["ca"])
    ctx.load_cert_chain(certs["client_cert"], certs["client_key"])
    with sync.connect(url, tls=ctx) as nc:
        nc.ping(2)
    with sync.connect(url, tls_ca=certs["ca"], tls_cert=certs["client_cert"], tls_key=certs["client_key"]) as nc:
        nc.ping(2)
    with pytest.raises(tclnats_py.NatsError):
        sync.connect(url, tls_ca=unrelated_ca["ca"], tls_cert=certs["client_cert"], tls_key=certs["client_key"],
                     max_reconnect_attempts=1)


def test_tls_verify_off(tls_server):
    with sync.connect(f"tls://localhost:{tls_server.port}", tls_verify=False) as nc:
        nc.ping(2)


def test_user_password_and_token(auth_server_userpass, auth_server_token):
    srv, user, password = auth_server_userpass
    with sync.connect(srv.url, user=user, password=password) as nc:
        nc.ping(2)
    with pytest.raises(tclnats_py.NatsError) as e:
        sync.connect(srv.url, user=user, password="wrong", max_reconnect_attempts=1)
    assert e.value.code in ("ErrAuthorization", "ErrNoServers")
    tsrv, token = auth_server_token
    with sync.connect(tsrv.url, token=token) as nc:
        nc.ping(2)
