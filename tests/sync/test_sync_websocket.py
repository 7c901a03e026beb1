"""The blocking face over WebSocket: ws:// and wss:// URLs to a real
nats-server websocket listener, through the engine's framing (the face
does TCP and TLS only): core traffic, JetStream publish and fetch, KV, a
restart of the server."""

import threading

import pytest

from tclnats_py import sync

pytestmark = pytest.mark.feature("websocket")


def traffic(nc, n=200):
    got = []
    done = threading.Event()

    def on_msg(m):
        got.append(m.data)
        if len(got) == n:
            done.set()
    nc.subscribe("sws.data", cb=on_msg)
    nc.subscribe("sws.svc", cb=lambda m: m.respond(b"re:" + m.data))
    nc.flush()
    for i in range(n):
        nc.publish("sws.data", b"%d:" % i + b"x" * (i * 31))
    assert done.wait(10)
    assert got == [b"%d:" % i + b"x" * (i * 31) for i in range(n)]
    assert nc.request("sws.svc", b"q", timeout=5).data == b"re:q"


def test_ws_core_jetstream_fetch_and_kv(ws_server):
    with sync.connect(ws_server.ws_url) as nc:
        traffic(nc)
        js = nc.jetstream()
        s = js.create_stream("SWS", subjects=["sws.js.*"], storage="memory")
        acks = [js.publish("sws.js.a", b"m%d" % i) for i in range(30)]
        assert [a.seq for a in acks] == list(range(1, 31))
        c = s.create_consumer(durable_name="W")
        msgs = c.fetch(30, max_wait=5)
        assert [m.data for m in msgs] == [b"m%d" % i for i in range(30)]
        for m in msgs:
            m.ack()
        kv = js.create_key_value("SWSKV", storage="memory")
        kv.put("k", b"v1")
        kv.put("k", b"v2")
        assert kv.get("k").value == b"v2"


def test_wss_and_a_restart(wss_server):
    url = wss_server.ws_url.replace("127.0.0.1", "localhost")
    with sync.connect(url, tls_ca=wss_server.certs["ca"], reconnect_time_wait=0.05,
                      max_reconnect_attempts=-1) as nc:
        traffic(nc, 50)
        sub = nc.subscribe("sws.kept")
        nc.flush()
        wss_server.restart()
        nc.publish("sws.kept", b"after")  # buffered while reconnecting, or sent
        assert sub.next_msg(timeout=20).data == b"after"
