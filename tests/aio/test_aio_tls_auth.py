"""TLS and authentication on real servers: server verification (on by default,
hostname included), client certificates, a failed verification, user/password,
token, NKey and JWT .creds, each accepted and rejected.

Certificates are generated for the run (tclnats_py.compat.certs); servers are the shared
launcher's ``NatsServer`` with a config."""

import asyncio
import os
import ssl

import nkeys
import pytest

import tclnats_py
from tclnats_py.compat.certs import generate_certs
from tclnats_py import NatsError
from tclnats_py.testing.server import NatsServer


def run(coro, timeout=30):
    return asyncio.run(asyncio.wait_for(coro, timeout))


async def roundtrip(nc, subject="tls.check"):
    sub = await nc.subscribe(subject)
    nc.publish(subject, bytes(range(256)))
    assert (await sub.next_msg(3)).data == bytes(range(256))


def tls_conf(paths, verify=False):
    return (f'tls {{ cert_file: "{paths["server-cert.pem"]}", key_file: "{paths["server-key.pem"]}", '
            f'ca_file: "{paths["rootCA.pem"]}", verify: {"true" if verify else "false"}, timeout: 2 }}')


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("certs")
    return generate_certs(str(d)), generate_certs(str(d / "other"), ca_name="unrelated CA")


@pytest.fixture(scope="module")
def tls_srv(certs):
    with NatsServer(config=tls_conf(certs[0])) as srv:
        yield srv


@pytest.fixture(scope="module")
def tls_verify_srv(certs):
    with NatsServer(config=tls_conf(certs[0], verify=True)) as srv:
        yield srv


# ====================================================================== TLS

@pytest.mark.parametrize("scheme,host", [("tls", "localhost"), ("tls", "127.0.0.1"), ("nats", "localhost")])
def test_tls_with_the_servers_ca(certs, tls_srv, scheme, host):
    paths, _ = certs

    async def go():
        # nats:// too: the server's INFO says tls_required, the client upgrades
        nc = await tclnats_py.connect(f"{scheme}://{host}:{tls_srv.port}", tls_ca=paths["rootCA.pem"])
        assert nc.server_info["tls_required"] is True
        assert isinstance(nc._transport.get_extra_info("ssl_object"), ssl.SSLObject)
        await roundtrip(nc)
        await nc.close()
    run(go())


def test_tls_with_a_ready_ssl_context(certs, tls_srv):
    paths, _ = certs

    async def go():
        ctx = ssl.create_default_context(cafile=paths["rootCA.pem"])
        nc = await tclnats_py.connect(f"tls://localhost:{tls_srv.port}", tls=ctx)
        await roundtrip(nc)
        await nc.close()
    run(go())


@pytest.mark.parametrize("case", ["unrelated_ca", "system_cas", "wrong_hostname"])
def test_failed_verification_is_err_tls(certs, tls_srv, case):
    paths, other = certs
    opts = {"unrelated_ca": {"tls_ca": other["rootCA.pem"]},
            "system_cas": {},  # verification is on by default
            "wrong_hostname": {"tls_ca": paths["rootCA.pem"], "tls_hostname": "not-this-host.example"}}[case]

    async def go():
        errors = []
        with pytest.raises(tclnats_py.ErrTLS) as e:
            await tclnats_py.connect(f"tls://localhost:{tls_srv.port}", error_cb=errors.append, **opts)
        assert "TLS handshake" in str(e.value)
        assert [x.code for x in errors] == ["ErrTLS"]
    run(go())


def test_verification_can_be_turned_off(tls_srv):
    async def go():
        nc = await tclnats_py.connect(f"tls://localhost:{tls_srv.port}", tls_verify=False)
        await roundtrip(nc)
        await nc.close()
    run(go())


def test_client_certificate_accepted_and_missing(certs, tls_verify_srv):
    paths, other = certs
    url = f"tls://localhost:{tls_verify_srv.port}"

    async def go():
        nc = await tclnats_py.connect(url, tls_ca=paths["rootCA.pem"], tls_cert=paths["client-cert.pem"],
                                      tls_key=paths["client-key.pem"])
        await roundtrip(nc)
        await nc.close()
        # no client certificate: the server refuses it (during the handshake,
        # or, with TLS 1.3, right after it)
        with pytest.raises(NatsError) as e:
            nc2 = await tclnats_py.connect(url, tls_ca=paths["rootCA.pem"], max_reconnect_attempts=1)
            await nc2.flush(2)
        assert e.value.code in ("ErrTLS", "ErrBrokenSocket", "ErrConnectionClosed")
        # a client certificate from a CA the server does not know
        with pytest.raises(NatsError) as e:
            nc3 = await tclnats_py.connect(url, tls_ca=paths["rootCA.pem"], tls_cert=other["client-cert.pem"],
                                           tls_key=other["client-key.pem"], max_reconnect_attempts=1)
            await nc3.flush(2)
        assert e.value.code in ("ErrTLS", "ErrBrokenSocket", "ErrConnectionClosed")
    run(go())


def test_bad_tls_files_are_err_tls(tls_srv, tmp_path):
    async def go():
        with pytest.raises(tclnats_py.ErrTLS):
            await tclnats_py.connect(f"tls://localhost:{tls_srv.port}", tls_ca=str(tmp_path / "missing.pem"))
    run(go())


def test_tls_wanted_but_not_offered(nats_server):
    async def go():
        with pytest.raises(tclnats_py.ErrSecureConnWanted):
            await tclnats_py.connect(nats_server.url, secure=True)
        with pytest.raises(tclnats_py.ErrSecureConnWanted):
            await tclnats_py.connect(f"tls://127.0.0.1:{nats_server.port}")
    run(go())


def test_tls_reconnects_after_a_restart(certs):
    paths, _ = certs
    with NatsServer(config=tls_conf(paths)) as srv:
        async def go():
            nc = await tclnats_py.connect(f"tls://localhost:{srv.port}", tls_ca=paths["rootCA.pem"],
                                          reconnect_time_wait=0.05, max_reconnect_attempts=-1)
            sub = await nc.subscribe("tls.keep")
            await nc.flush()
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, srv.restart)
            for _ in range(500):
                if nc.is_connected and nc.stats["reconnects"] == 1:
                    break
                await asyncio.sleep(0.01)
            nc.publish("tls.keep", b"again")
            assert (await sub.next_msg(5)).data == b"again"
            assert nc._transport.get_extra_info("ssl_object") is not None
            await nc.close()
        run(go())


# ====================================================================== auth

USER, PASSWORD, TOKEN = "alice", "s3cret-pw", "t0ken-xyz"


@pytest.fixture(scope="module")
def userpass_srv():
    with NatsServer(config=f'authorization {{ user: "{USER}", password: "{PASSWORD}" }}') as srv:
        yield srv


@pytest.fixture(scope="module")
def token_srv():
    with NatsServer(config=f'authorization {{ token: "{TOKEN}" }}') as srv:
        yield srv


def _assert_no_secret(err, *secrets):
    for s in secrets:
        assert s not in str(err) and s not in repr(err)


@pytest.mark.parametrize("how", ["options", "url"])
def test_user_password_accepted(userpass_srv, how):
    async def go():
        if how == "options":
            nc = await tclnats_py.connect(userpass_srv.url, user=USER, password=PASSWORD)
        else:
            nc = await tclnats_py.connect(f"nats://{USER}:{PASSWORD}@127.0.0.1:{userpass_srv.port}")
        await roundtrip(nc)
        await nc.close()
    run(go())


@pytest.mark.parametrize("opts", [{"user": USER, "password": "wrong"}, {"user": "bob", "password": PASSWORD}, {}],
                         ids=["wrong-password", "wrong-user", "none"])
def test_user_password_rejected(userpass_srv, opts):
    async def go():
        with pytest.raises(tclnats_py.ErrAuthorization) as e:
            await tclnats_py.connect(userpass_srv.url, **opts)
        _assert_no_secret(e.value, PASSWORD, "wrong")
    run(go())


@pytest.mark.parametrize("how", ["options", "url"])
def test_token_accepted(token_srv, how):
    async def go():
        if how == "options":
            nc = await tclnats_py.connect(token_srv.url, token=TOKEN)
        else:
            nc = await tclnats_py.connect(f"nats://{TOKEN}@127.0.0.1:{token_srv.port}")
        await roundtrip(nc)
        await nc.close()
    run(go())


def test_token_rejected(token_srv):
    async def go():
        for kw in ({"token": "nope-token"}, {"servers": f"nats://nope-token@127.0.0.1:{token_srv.port}"}):
            servers = kw.pop("servers", token_srv.url)
            with pytest.raises(tclnats_py.ErrAuthorization) as e:
                await tclnats_py.connect(servers, **kw)
            _assert_no_secret(e.value, "nope-token", TOKEN)
    run(go())


def _new_user_seed() -> bytes:
    return nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)


@pytest.fixture(scope="module")
def nkey_env():
    seed = _new_user_seed()
    pub = nkeys.from_seed(bytearray(seed)).public_key.decode()
    with NatsServer(config=f'authorization {{ users = [ {{ nkey: "{pub}" }} ] }}') as srv:
        yield srv, seed


def test_nkey_accepted_from_seed_and_file(nkey_env, tmp_path):
    srv, seed = nkey_env
    path = tmp_path / "user.nk"
    path.write_bytes(seed + b"\n")

    async def go():
        for value in (seed.decode(), str(path)):
            nc = await tclnats_py.connect(srv.url, nkey_seed=value)
            await roundtrip(nc)
            await nc.close()
    run(go())


def test_nkey_rejected(nkey_env, tmp_path):
    srv, _ = nkey_env
    stranger = _new_user_seed()

    async def go():
        with pytest.raises(tclnats_py.ErrAuthorization) as e:
            await tclnats_py.connect(srv.url, nkey_seed=stranger.decode())
        _assert_no_secret(e.value, stranger.decode())
        with pytest.raises(tclnats_py.ErrAuthorization):
            await tclnats_py.connect(srv.url, nkey_seed=str(tmp_path / "missing.nk"))
        with pytest.raises(tclnats_py.ErrAuthorization):
            await tclnats_py.connect(srv.url)  # no credentials at all
    run(go())


@pytest.fixture(scope="module")
def creds_env(tmp_path_factory):
    from tests.creds_util import operator_setup
    conf, good, bad = operator_setup(str(tmp_path_factory.mktemp("creds")))
    with NatsServer(config=conf) as srv:
        yield srv, good, bad


def test_creds_accepted(creds_env):
    srv, good, _ = creds_env

    async def go():
        nc = await tclnats_py.connect(srv.url, creds=good)
        await roundtrip(nc, "creds.x")
        await nc.close()
    run(go())


def test_creds_rejected(creds_env, tmp_path):
    srv, _, bad = creds_env
    broken = tmp_path / "broken.creds"
    broken.write_text("not a creds file")

    async def go():
        with pytest.raises(tclnats_py.ErrAuthorization) as e:
            await tclnats_py.connect(srv.url, creds=bad)  # a user of an account the server does not know
        with open(bad) as f:
            seed_line = [ln for ln in f.read().splitlines() if ln.startswith("SU")][0]
        _assert_no_secret(e.value, seed_line)
        for path in (str(tmp_path / "missing.creds"), str(broken)):
            with pytest.raises(tclnats_py.ErrAuthorization):
                await tclnats_py.connect(srv.url, creds=path)
    run(go())
