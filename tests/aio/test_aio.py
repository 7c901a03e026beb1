"""The asyncio face against real nats-servers, and interop with nats-py."""

import asyncio
import os

import nkeys
import pytest

import tclnats_py
from tclnats_py.compat.certs import generate_certs
from tclnats_py import NatsError
from tclnats_py.testing.server import NatsCluster, NatsServer


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


def code_of(exc_info):
    return exc_info.value.code


def test_pubsub_headers_binary_queue(nats_server):
    async def go():
        c = await tclnats_py.connect(nats_server.url, name="py")
        sub = await c.subscribe("a.*")
        payload = bytes(range(256))
        c.publish("a.b", payload, reply="r.1", headers={"K": ["v1", "v2"], "X": "y"})
        m = await sub.next_msg(2)
        assert (m.subject, m.reply, m.data) == ("a.b", "r.1", payload)
        assert m.headers == {"K": ["v1", "v2"], "X": ["y"]}
        counts = [0, 0]

        def member(i):
            def cb(msg):
                counts[i] += 1
            return cb
        await c.subscribe("q", queue="grp", cb=member(0))
        await c.subscribe("q", queue="grp", cb=member(1))
        await c.flush()
        for i in range(50):
            c.publish("q", str(i))
        await c.flush()
        await asyncio.sleep(0.1)
        assert sum(counts) == 50
        await c.close()
        assert c.status == "closed"
    run(go())


def test_input_errors_leave_connection_intact(nats_server):
    async def go():
        c = await tclnats_py.connect(nats_server.url)
        for call, code in ((lambda: c.publish("bad subject", b""), "ErrBadSubject"),
                           (lambda: c.publish("x", b"y" * (c.max_payload + 1)), "ErrMaxPayload"),
                           (lambda: c.publish("x", b"", reply="bad reply"), "ErrBadSubject")):
            with pytest.raises(NatsError) as e:
                call()
            assert code_of(e) == code
        with pytest.raises(NatsError) as e:
            await c.subscribe("ok", queue="bad.q")
        assert code_of(e) == "ErrBadQueueName"
        with pytest.raises(NatsError) as e:
            await c.request("x", b"", timeout=-1)
        assert code_of(e) == "ErrBadTimeout"
        assert c.is_connected
        await c.flush()
        await c.close()
        with pytest.raises(tclnats_py.ErrConnectionClosed):
            c.publish("x", b"")
    run(go())


def test_requests_every_form(nats_server):
    async def go():
        c = await tclnats_py.connect(nats_server.url)

        async def echo(msg):
            c.publish(msg.reply, b"re:" + msg.data)
        await c.subscribe("svc", cb=echo)
        await c.subscribe("silent", cb=lambda m: None)
        assert (await c.request("svc", "one", timeout=1)).data == b"re:one"
        many = await c.request_many("svc", b"two", max_msgs=5, timeout=0.3)
        assert [m.data for m in many] == [b"re:two"]
        with pytest.raises(tclnats_py.ErrNoResponders):
            await c.request("nobody.home", b"", timeout=1)
        with pytest.raises(tclnats_py.ErrTimeout):
            await c.request("silent", b"", timeout=0.2)
        results = await asyncio.gather(*(c.request("svc", str(i), timeout=2) for i in range(100)))
        assert sorted(int(r.data[3:]) for r in results) == list(range(100))
        await c.close()
    run(go())


def test_unsubscribe_max_iterator_and_drain(nats_server):
    async def go():
        c = await tclnats_py.connect(nats_server.url)
        sub = await c.subscribe("m")
        await sub.unsubscribe(max_msgs=3)
        for i in range(5):
            c.publish("m", str(i))
        got = [m.data async for m in sub]  # ends after the 3rd message
        assert got == [b"0", b"1", b"2"]
        seen = []
        s2 = await c.subscribe("d", cb=lambda m: seen.append(m.data))
        for i in range(10):
            c.publish("d", str(i))
        await c.flush()
        await s2.drain()
        assert len(seen) == 10
        await c.drain()
        assert c.status == "closed"
    run(go())


def test_reconnect_restores_subscriptions_and_buffered_publishes(fresh_server):
    async def go():
        statuses = []
        c = await tclnats_py.connect(fresh_server.url, reconnect_time_wait=0.1, max_reconnect_attempts=-1,
                                     status_cb=statuses.append)
        sub = await c.subscribe("keep")
        await c.flush()
        fresh_server.stop()
        while c.status != "reconnecting":
            await asyncio.sleep(0.02)
        for i in range(5):
            c.publish("keep", str(i))  # buffered while reconnecting
        await asyncio.get_running_loop().run_in_executor(None, fresh_server.start)
        got = [(await sub.next_msg(5)).data for _ in range(5)]
        assert got == [b"0", b"1", b"2", b"3", b"4"]
        assert "reconnecting" in statuses and statuses[-1] == "connected"
        assert c.last_error is None
        await c.close()
    run(go())


def test_cluster_failover_and_discovery():
    with NatsCluster(3) as cluster:
        async def go():
            c = await tclnats_py.connect(cluster.urls[0], reconnect_time_wait=0.1, randomize=False)
            await asyncio.sleep(0.2)
            assert len(c.all_servers) == 3  # two discovered from INFO connect_urls
            assert any(s["discovered"] == "true" for s in c.all_servers)
            sub = await c.subscribe("ha")
            await c.flush()
            cluster.kill(0)
            while c.status != "connected" or c.current_server[1] == cluster.servers[0].port:
                await asyncio.sleep(0.05)
            await c.flush()
            other = await tclnats_py.connect(cluster.urls[2])
            other.publish("ha", b"after failover")
            await other.flush()
            assert (await sub.next_msg(5)).data == b"after failover"
            await other.close()
            await c.close()
        run(go())


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    d = tmp_path_factory.mktemp("certs")
    paths = generate_certs(str(d))
    other = generate_certs(str(d / "other"), ca_name="unrelated CA")
    return paths, other


def tls_server(paths, verify=False):
    conf = (f'tls {{ cert_file: "{paths["server-cert.pem"]}", key_file: "{paths["server-key.pem"]}", '
            f'ca_file: "{paths["rootCA.pem"]}", verify: {"true" if verify else "false"} }}')
    return NatsServer(config=conf)


def test_tls_verified_client_cert_and_failure(certs):
    paths, other = certs
    with tls_server(paths) as srv:
        async def go():
            c = await tclnats_py.connect(f"tls://localhost:{srv.port}", tls_ca=paths["rootCA.pem"])
            assert c.server_info.get("tls_required")
            await c.flush()
            await c.close()
            with pytest.raises(tclnats_py.ErrTLS):
                await tclnats_py.connect(f"tls://localhost:{srv.port}", tls_ca=other["rootCA.pem"])
        run(go())
    with tls_server(paths, verify=True) as srv:
        async def go2():
            c = await tclnats_py.connect(f"tls://localhost:{srv.port}", tls_ca=paths["rootCA.pem"],
                                         tls_cert=paths["client-cert.pem"], tls_key=paths["client-key.pem"])
            await c.flush()
            await c.close()
            with pytest.raises(NatsError):
                c2 = await tclnats_py.connect(f"tls://localhost:{srv.port}", tls_ca=paths["rootCA.pem"])
                await c2.flush(1)
        run(go2())


def test_secure_wanted_but_not_offered(nats_server):
    with pytest.raises(tclnats_py.ErrSecureConnWanted):
        run(tclnats_py.connect(nats_server.url, secure=True))


@pytest.mark.parametrize("kind", ["userpass", "token", "nkey"])
def test_auth_accepted_and_rejected(kind, tmp_path):
    seed = nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER)
    pub = nkeys.from_seed(bytearray(seed)).public_key.decode()
    conf = {"userpass": 'authorization { user: "alice", password: "s3cret" }',
            "token": 'authorization { token: "tok123" }',
            "nkey": f'authorization {{ users = [ {{ nkey: "{pub}" }} ] }}'}[kind]
    with NatsServer(config=conf) as srv:
        good = {"userpass": {"servers": f"nats://alice:s3cret@127.0.0.1:{srv.port}"},
                "token": {"servers": srv.url, "token": "tok123"},
                "nkey": {"servers": srv.url, "nkey_seed": seed.decode()}}[kind]
        bad = {"userpass": {"servers": srv.url, "user": "alice", "password": "wrong"},
               "token": {"servers": f"nats://nope@127.0.0.1:{srv.port}"},
               "nkey": {"servers": srv.url,
                        "nkey_seed": nkeys.encode_seed(os.urandom(32), nkeys.PREFIX_BYTE_USER).decode()}}[kind]

        async def go():
            c = tclnats_py.Client(**good)
            await c.connect()
            await c.flush()
            await c.close()
            with pytest.raises(tclnats_py.ErrAuthorization) as e:
                await tclnats_py.Client(**bad).connect()
            assert "s3cret" not in str(e.value) and "tok123" not in str(e.value)
        run(go())


def test_interop_with_nats_py(nats_server):
    import nats

    async def go():
        ours = await tclnats_py.connect(nats_server.url)
        theirs = await nats.connect(nats_server.url)
        # theirs -> ours, multi-valued headers and binary data byte-exact
        sub = await ours.subscribe("interop.a")
        await ours.flush()  # the SUB reaches the server before their PUB
        payload = bytes(range(256)) * 4
        await theirs.publish("interop.a", payload, headers={"K": "v"})
        await theirs.flush()
        m = await sub.next_msg(2)
        assert m.data == payload and m.headers == {"K": ["v"]}
        # ours -> theirs
        got = asyncio.get_running_loop().create_future()

        async def cb(msg):
            got.set_result(msg)
        await theirs.subscribe("interop.b", cb=cb)
        await theirs.flush()
        await theirs.flush()  # see below: nats-py's PING can overtake its SUB
        ours.publish("interop.b", payload, headers={"H": ["1", "2"]})
        msg = await asyncio.wait_for(got, 2)
        assert msg.data == payload and msg.headers["H"] in ("1", "2")
        # request/reply both ways
        async def their_echo(msg):
            await theirs.publish(msg.reply, b"nats-py:" + msg.data)
        await theirs.subscribe("interop.svc1", cb=their_echo)
        await theirs.flush()
        await theirs.flush()  # nats-py's PING can overtake its SUB (seen once under load): a second round trip
        assert (await ours.request("interop.svc1", b"x", timeout=2)).data == b"nats-py:x"

        async def our_echo(msg):
            ours.publish(msg.reply, b"tclnats:" + msg.data)
        await ours.subscribe("interop.svc2", cb=our_echo)
        await ours.flush()
        assert (await theirs.request("interop.svc2", b"y", timeout=2)).data == b"tclnats:y"
        await theirs.close()
        await ours.close()
    run(go())


def test_creds_jwt_auth(tmp_path):
    from tests.creds_util import operator_setup
    conf, good, bad = operator_setup(str(tmp_path))
    with NatsServer(config=conf) as srv:
        async def go():
            c = tclnats_py.Client(servers=srv.url, creds=good)
            await c.connect()
            sub = await c.subscribe("creds.x")
            c.publish("creds.x", b"signed in")
            assert (await sub.next_msg(2)).data == b"signed in"
            await c.close()
            with pytest.raises(tclnats_py.ErrAuthorization):
                await tclnats_py.Client(servers=srv.url, creds=bad).connect()
        run(go())
