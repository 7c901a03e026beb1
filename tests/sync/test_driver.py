"""The blocking driver (tclnats_py.sync.driver) against real servers: the
engine's handshake and auth, TLS, requests, reconnection, the server's PINGs,
raw mode, and its effect table."""

import ssl
import threading
import time

import pytest

import tclnats_py
from tclnats_py.engine.effects import UnknownEffect
from tclnats_py.engine.options import Options
from tclnats_py.sync.driver import Driver


def connected(url, **kw):
    opts = {k: kw.pop(k) for k in list(kw) if k in ("user", "password", "token", "creds", "nkey_seed",
                                                     "reconnect_time_wait", "ping_interval", "secure",
                                                     "connect_timeout", "request_timeout")}
    d = Driver(Options(**opts), **kw)
    d.connect([url])
    return d


def responder(url, subject, stop):
    """A second driver on a thread of its own, answering requests on subject."""
    ready = threading.Event()

    def run():
        with connected(url) as d:
            sub = d.subscribe(subject)
            d.flush()
            ready.set()
            while not stop.is_set():
                try:
                    m = sub.next_msg(0.05)
                except tclnats_py.ErrTimeout:
                    continue
                d.publish(m.reply, b"re:" + m.data)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    assert ready.wait(10)
    return t


def test_handshake_publish_subscribe_flush(nats_server):
    with connected(nats_server.url) as d:
        assert d.status == "connected" and d.info["server_id"]
        assert d.server == f"127.0.0.1:{nats_server.port}"
        sub = d.subscribe("sd.*")
        d.publish("sd.a", b"one", headers={"K": ["v"]})
        d.publish("sd.b", b"two")
        d.flush()
        m1, m2 = sub.next_msg(1), sub.next_msg(1)
        assert (m1.subject, m1.data, m1.headers["K"]) == ("sd.a", b"one", ["v"])
        assert (m2.subject, m2.data) == ("sd.b", b"two")
        with pytest.raises(tclnats_py.ErrTimeout):
            sub.next_msg(0.1)
        sub.unsubscribe()
        with pytest.raises(tclnats_py.ErrBadSubscription):
            sub.next_msg(0.1)
    assert d.is_closed


def test_user_password_and_token(auth_server_userpass, auth_server_token):
    srv, user, password = auth_server_userpass
    with connected(srv.url, user=user, password=password) as d:
        assert d.status == "connected"
    with pytest.raises(tclnats_py.NatsError) as e:
        connected(srv.url, user=user, password="wrong")
    assert e.value.code == "ErrAuthorization"
    srv, token = auth_server_token
    with connected(srv.url, token=token) as d:
        d.flush()
    with pytest.raises(tclnats_py.NatsError) as e:
        connected(srv.url, token="nope")
    assert e.value.code == "ErrAuthorization"


def test_nkey_and_creds(nkey_server, creds_server):
    srv, seed = nkey_server
    with connected(srv.url, nkey_seed=seed.decode() if isinstance(seed, bytes) else seed) as d:
        d.flush()
    srv, creds = creds_server
    with connected(srv.url, creds=creds) as d:
        sub = d.subscribe("cr.a")
        d.publish("cr.a", b"x")
        assert sub.next_msg(1).data == b"x"
    with pytest.raises(tclnats_py.NatsError) as e:  # a file that cannot be read: the engine says so
        connected(srv.url, creds=str(creds) + ".missing")
    assert e.value.code == "ErrAuthorization"


def test_tls_with_the_engines_name_rule(tls_server):
    ca = tls_server.certs["ca"]
    ctx = ssl.create_default_context(cafile=ca)
    with connected(tls_server.url, tls=ctx) as d:
        sub = d.subscribe("tl.a")
        d.publish("tl.a", b"secret")
        assert sub.next_msg(1).data == b"secret"
        assert isinstance(d._sock, ssl.SSLSocket)
    # the context as a function, called at the handshake; a name the certificate does not carry fails
    with pytest.raises(tclnats_py.NatsError) as e:
        connected(tls_server.url, tls=lambda: ssl.create_default_context(cafile=ca), tls_hostname="not.there")
    assert e.value.code == "ErrTLS"
    with pytest.raises(tclnats_py.NatsError) as e:  # no CA: the certificate is not trusted
        connected(tls_server.url)
    assert e.value.code == "ErrTLS" and "certificate" in str(e.value).lower()


def test_request_reply_timeout_and_no_responders(nats_server):
    stop = threading.Event()
    t = responder(nats_server.url, "svc.echo", stop)
    try:
        with connected(nats_server.url) as d:
            for i in range(50):
                assert d.request("svc.echo", b"%d" % i, timeout=2).data == b"re:%d" % i
            with pytest.raises(tclnats_py.ErrNoResponders):
                d.request("svc.nobody", b"", timeout=2)
            silent = d.subscribe("svc.silent")  # a subscriber that never answers
            d.flush()
            t0 = time.monotonic()
            with pytest.raises(tclnats_py.ErrTimeout):
                d.request("svc.silent", b"", timeout=0.3)
            assert 0.25 < time.monotonic() - t0 < 2
            assert silent.next_msg(1).reply  # it got the request
            assert d.request("svc.echo", b"after", timeout=2).data == b"re:after"
    finally:
        stop.set()
        t.join(5)


def test_a_restarted_server_is_reconnected_by_the_engine(fresh_nats_server):
    statuses = []
    d = connected(fresh_nats_server.url, reconnect_time_wait=100, status_cb=statuses.append)
    try:
        sub = d.subscribe("rc.a")
        d.flush()
        fresh_nats_server.restart()
        assert d.wait(lambda: statuses[-1:] == ["connected"] and "reconnecting" in statuses, 15), statuses
        d.publish("rc.a", b"again")  # the subscription was restored by the engine
        assert sub.next_msg(2).data == b"again"
        assert d.engine.stats["reconnects"] >= 1
    finally:
        d.close()
    assert statuses[-1] == "closed"


def test_without_reconnect_a_lost_connection_closes(fresh_nats_server):
    d = connected(fresh_nats_server.url, allow_reconnect=False)
    fresh_nats_server.stop()
    with pytest.raises(tclnats_py.NatsError):
        d.request("x.y", b"", timeout=5)
    assert d.is_closed


def test_the_servers_pings_are_answered():
    from tclnats_py.testing.server import NatsServer
    # the server pings every 100 ms and drops a client that leaves one PING unanswered
    with NatsServer(config='ping_interval: "100ms"\nping_max: 1\n') as srv:
        statuses = []
        with connected(srv.url, status_cb=statuses.append) as d:
            before = d.engine.stats["in_bytes"]
            assert not d.wait(lambda: d.status != "connected", 1.5)
            assert d.engine.stats["in_bytes"] >= before + 10 * len(b"PING\r\n")
            d.flush()
        assert "reconnecting" not in statuses


def test_connect_timeout_and_refused():
    import socket
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)  # accepts, never says INFO
    try:
        t0 = time.monotonic()
        with pytest.raises(tclnats_py.NatsError) as e:
            connected(f"nats://127.0.0.1:{ls.getsockname()[1]}", connect_timeout=300)
        assert e.value.code == "ErrConnectionTimeout" and time.monotonic() - t0 < 3
    finally:
        ls.close()
    with pytest.raises(tclnats_py.NatsError) as e:
        connected("nats://127.0.0.1:1")
    assert e.value.code == "ErrConnectionRefused"
    d = Driver(Options())
    with pytest.raises(tclnats_py.NatsError) as e:  # two servers: ErrNoServers, the last error its cause
        d.connect(["nats://127.0.0.1:1", "nats://127.0.0.1:2"])
    assert e.value.code == "ErrNoServers" and e.value.__cause__.code == "ErrConnectionRefused"


def test_raw_mode_hands_the_scanner_its_bytes_and_the_engine_the_rest(nats_server):
    with connected(nats_server.url) as d, connected(nats_server.url) as other:
        sub = d.subscribe("raw.a")
        d.flush()
        for i in range(3):
            other.publish("raw.a", b"m%d" % i)
        other.flush()
        seen = []

        def first_frame(buf):
            # the first MSG frame is the scanner's, the rest waits for the next call
            eol = buf.find(b"\r\n")
            size = int(buf[:eol].split()[-1])
            end = eol + 2 + size + 2
            if end > len(buf):
                return 0
            seen.append(buf[:end])
            return end
        d.read_raw(first_frame, 5)
        assert seen and seen[0].startswith(b"MSG raw.a ") and seen[0].endswith(b"m0\r\n")
        assert not sub.queue  # nothing reached the engine in raw mode
        d.feed(b"PING\r\n")  # a frame of the engine's, found by the scanner: answered
        d.end_raw()
        d.wait(lambda: len(sub.queue) == 2, 2)
        assert [m.data for m in sub.queue] == [b"m1", b"m2"]
        d.flush()  # the connection is in order afterwards
        with pytest.raises(tclnats_py.ErrTimeout):
            d.read_raw(lambda buf: len(buf), 0.2)
        d.end_raw()


def test_an_unknown_effect_is_refused(nats_server):
    class Bogus(tuple):
        """An effect the driver has no handler for."""
    with connected(nats_server.url) as d:
        d.engine._fx.append(Bogus())
        with pytest.raises(UnknownEffect):
            d.flush()
