"""The asyncio face's connect options: seconds under the
nats-py names, milliseconds only under ``*_ms`` names, checked values,
nats-py's connect names, each tried against a real server."""

import asyncio
import math
import time

import pytest

import tclnats_py
from tests.aio_helpers import settle
from tclnats_py.aio.options import TABLE, known_names
from tclnats_py.testing.server import NatsCluster, NatsServer, free_port


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


async def in_thread(fn, *a):
    return await asyncio.get_running_loop().run_in_executor(None, fn, *a)



# ---------------------------------------------------------------- units and checks (no server)
@pytest.mark.unit
def test_times_are_seconds_and_ms_only_under_ms_names():
    c = tclnats_py.Client("nats://h", connect_timeout=3, reconnect_time_wait=0.25, ping_interval=20,
                          request_timeout=1.5, flush_timeout=4, reconnect_jitter=0.1, reconnect_jitter_tls=0.2)
    o = c.options  # the engine's view: milliseconds
    assert (o.connect_timeout, o.reconnect_time_wait, o.ping_interval, o.request_timeout, o.flush_timeout,
            o.reconnect_jitter, o.reconnect_jitter_tls) == (3000, 250, 20000, 1500, 4000, 100, 200)
    c = tclnats_py.Client("nats://h", connect_timeout_ms=3000, reconnect_time_wait_ms=250, ping_interval_ms=20000,
                          request_timeout_ms=1500, drain_timeout_ms=1234)
    o = c.options
    assert (o.connect_timeout, o.reconnect_time_wait, o.ping_interval, o.request_timeout) == (3000, 250, 20000, 1500)
    assert c._drain_timeout == 1.234
    assert tclnats_py.Client("nats://h", drain_timeout=3)._drain_timeout == 3
    # a positive time never becomes 0 ms (0 may mean "no wait")
    assert tclnats_py.Client("nats://h", reconnect_time_wait=0.0001).options.reconnect_time_wait == 1
    # defaults (seconds): nats-py's
    o = tclnats_py.Client("nats://h").options
    assert (o.connect_timeout, o.reconnect_time_wait, o.ping_interval) == (2000, 2000, 120000)


@pytest.mark.unit
@pytest.mark.parametrize("kw, words", [
    (dict(connect_timeout=-1), ["connect_timeout", "seconds"]),
    (dict(connect_timeout=math.nan), ["connect_timeout", "seconds"]),
    (dict(ping_interval=math.inf), ["ping_interval", "seconds"]),
    (dict(connect_timeout=5000), ["implausible", "seconds", "connect_timeout_ms=5000"]),
    (dict(reconnect_time_wait=7200), ["implausible", "reconnect_time_wait_ms"]),
    (dict(request_timeout="10"), ["request_timeout", "seconds"]),
    (dict(reconnect_time_wait=True), ["reconnect_time_wait"]),
    (dict(connect_timeout_ms=-5), ["connect_timeout_ms", "milliseconds"]),
    (dict(connect_timeout_ms=10**9), ["implausible", "milliseconds"]),
    (dict(connect_timeout=1, connect_timeout_ms=1000), ["both given"]),
    (dict(no_echo="yes"), ["no_echo"]),
    (dict(allow_reconnect=0), ["allow_reconnect"]),
    (dict(inbox_prefix="a.*"), ["inbox_prefix"]),
    (dict(user_credentials=("a.jwt", "b.nk")), ["not supported", ".creds"]),
    (dict(signature_cb=lambda n: b""), ["user_jwt_cb"]),
    (dict(custom_reconnect_delay=lambda s: 1), ["reconnect_delay"]),
    (dict(discovered_server_cb=5), ["discovered_server_cb"]),
])
def test_bad_values_name_the_option_and_unit(kw, words):
    with pytest.raises(tclnats_py.ErrInvalidArg) as ei:
        tclnats_py.Client("nats://h", **kw)
    for w in words:
        assert w in str(ei.value), (w, str(ei.value))


@pytest.mark.unit
def test_unknown_names_get_a_did_you_mean():
    with pytest.raises(tclnats_py.ErrInvalidArg, match=r"Unknown option reconect_time_wait; did you mean "
                                                       r"reconnect_time_wait"):
        tclnats_py.Client("nats://h", reconect_time_wait=1)
    with pytest.raises(tclnats_py.ErrInvalidArg, match="did you mean no_echo"):
        tclnats_py.Client("nats://h", noecho=True)
    with pytest.raises(tclnats_py.ErrInvalidArg, match=r"Unknown option zzz$"):
        tclnats_py.Client("nats://h", zzz=1)
    # nothing of a refused call is applied
    c = tclnats_py.Client("nats://h", connect_timeout=1)
    with pytest.raises(tclnats_py.ErrInvalidArg):
        c._configure(None, dict(connect_timeout=2, nope=1))
    assert c.options.connect_timeout == 1000


@pytest.mark.unit
def test_natspy_names_map_to_the_engine():
    c = tclnats_py.Client("nats://h", no_echo=True, dont_randomize=True, pending_size=12345,
                          nkeys_seed_str="SUAAVWRZG6M5FA5VRRGWSCIHKTOJC7EWNIT4JV3FTOIPO4OBFR5WA7X5TE")
    o = c.options
    assert (o.echo, o.randomize, o.reconnect_buf_size) == (False, False, 12345)
    assert o.nkey_seed.startswith("SU")
    assert tclnats_py.Client("nats://h", user_credentials="/x/u.creds").options.creds == "/x/u.creds"
    assert tclnats_py.Client("nats://h", nkeys_seed="/x/seed.nk").options.nkey_seed == "/x/seed.nk"
    c = tclnats_py.Client("nats://h", inbox_prefix="_MY.in")
    assert c.new_inbox().startswith("_MY.in.")


@pytest.mark.unit
def test_the_options_table_covers_every_name():
    names = set(known_names())
    for row in TABLE:
        assert row.name in names, row
        assert row.doc
    rows = {r.name for r in TABLE}
    for n in ("connect_timeout", "reconnect_time_wait", "ping_interval", "drain_timeout", "flush_timeout",
              "request_timeout", "inbox_prefix", "tls_handshake_first", "discovered_server_cb"):
        assert n in rows


# ---------------------------------------------------------------- against a real server
def test_reconnect_time_wait_is_seconds_against_a_stopped_server():
    """reconnect_time_wait is in seconds: 0.3 s x 3 attempts take about a
    second, not milliseconds."""
    with NatsServer() as srv:
        async def go():
            closed = asyncio.Event()
            nc = await tclnats_py.connect(srv.url, reconnect_time_wait=0.3, max_reconnect_attempts=3,
                                          closed_cb=closed.set)
            await in_thread(srv.stop)
            t0 = time.monotonic()
            await asyncio.wait_for(closed.wait(), 10)
            took = time.monotonic() - t0
            assert 0.55 < took < 5, took
        run(go())


def test_no_echo_and_inbox_prefix(nats_server):
    async def go():
        nc = await tclnats_py.connect(nats_server.url, no_echo=True, inbox_prefix="_APP.replies")
        other = await tclnats_py.connect(nats_server.url)
        sub = await nc.subscribe("echo.x")
        await nc.flush()  # the server has the subscription before the other client publishes
        await nc.publish("echo.x", b"mine")
        await other.publish("echo.x", b"theirs")
        assert (await sub.next_msg(2)).data == b"theirs"  # our own message did not come back
        with pytest.raises(tclnats_py.ErrTimeout):
            await sub.next_msg(0.3)
        replies = []

        async def svc(m):
            replies.append(m.reply)
            await m.respond(b"ok")
        await other.subscribe("svc.p", cb=svc)
        await other.flush()
        assert (await nc.request("svc.p", b"", timeout=2)).data == b"ok"
        assert replies[0].startswith("_APP.replies."), replies
        await nc.close()
        await other.close()
    run(go())


def test_allow_reconnect_false_closes_on_a_lost_connection():
    with NatsServer() as srv:
        async def go():
            seen = []
            closed = asyncio.Event()
            nc = await tclnats_py.connect(srv.url, allow_reconnect=False, max_reconnect_attempts=-1,
                                          reconnect_time_wait=0.05, disconnected_cb=lambda: seen.append("disc"),
                                          closed_cb=lambda: (seen.append("closed"), closed.set()))
            await in_thread(srv.stop)
            await asyncio.wait_for(closed.wait(), 5)
            assert seen == ["disc", "closed"] and nc.is_closed
            await in_thread(srv.start)
            await asyncio.sleep(0.3)
            assert nc.is_closed  # it did not come back
        run(go())


def test_discovered_server_cb_and_lame_duck_mode_cb():
    cluster = NatsCluster(size=2)
    a, b = cluster.servers
    try:
        a.start()

        async def go():
            found, ldm = [], []

            async def on_ldm():  # a coroutine callback is awaited too
                ldm.append(True)
            nc = await tclnats_py.connect(a.url, discovered_server_cb=lambda: found.append(len(nc.all_servers)),
                                          lame_duck_mode_cb=on_ldm, max_reconnect_attempts=-1,
                                          reconnect_time_wait=0.1)
            assert found == []  # the pool of the first INFO is not a discovery
            await in_thread(b.start)
            await settle(lambda: found)
            assert found[0] == 2
            await in_thread(a.lame_duck)
            await settle(lambda: ldm)
            await nc.close()
        run(go())
    finally:
        for s in cluster.servers:
            s.cleanup()


def test_user_jwt_cb_and_signature_cb(creds_server):
    from tclnats_py.credentials import load_creds
    from tclnats_py.engine.auth import sign_nonce
    srv, creds_path = creds_server
    jwt, seed = load_creds(creds_path)
    calls = []

    def user_jwt_cb():
        calls.append("jwt")
        return jwt.encode()

    def signature_cb(nonce):
        calls.append("sig")
        return sign_nonce(seed, nonce).encode()

    async def go():
        nc = await tclnats_py.connect(srv.url, user_jwt_cb=user_jwt_cb, signature_cb=signature_cb)
        assert sorted(calls) == ["jwt", "sig"]
        await nc.flush()
        await nc.close()
        with pytest.raises((tclnats_py.ErrAuthorization, tclnats_py.ErrNoServers)):
            await tclnats_py.connect(srv.url, user_jwt_cb=user_jwt_cb, signature_cb=lambda n: b"AAAA",
                                     max_reconnect_attempts=1)
        # user_credentials (nats-py's name of creds) works the same
        nc = await tclnats_py.connect(srv.url, user_credentials=creds_path)
        await nc.flush()
        await nc.close()
    run(go())


def test_nkeys_seed(nkey_server):
    srv, seed = nkey_server

    async def go():
        nc = await tclnats_py.connect(srv.url, nkeys_seed_str=seed if isinstance(seed, str) else seed.decode())
        await nc.flush()
        await nc.close()
    run(go())


def test_tls_handshake_first(tls_certs):
    from tclnats_py.testing.certs import client_context, tls_config
    with NatsServer(config=tls_config(tls_certs, handshake_first=True), tls=True) as srv:
        async def go():
            nc = await tclnats_py.connect(srv.url, tls=client_context(tls_certs), tls_handshake_first=True)
            sub = await nc.subscribe("t.f")
            await nc.publish("t.f", b"over tls")
            assert (await sub.next_msg(2)).data == b"over tls"
            await nc.close()
            # without it this server waits for a TLS hello that never comes: the connect times out
            with pytest.raises((tclnats_py.ErrConnectionTimeout, tclnats_py.ErrTLS, tclnats_py.ErrBrokenSocket,
                                tclnats_py.ErrNoServers)):
                await tclnats_py.connect(srv.url, tls=client_context(tls_certs), connect_timeout=0.5,
                                         max_reconnect_attempts=1)
        run(go())


@pytest.mark.unit
def test_python_guide_documents_every_option():
    import os
    guide = open(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "python.md"),
                 encoding="utf-8").read()
    for row in TABLE:
        assert f"| `{row.name}` | {row.unit} | {row.default} |" in guide, row.name
