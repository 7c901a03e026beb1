"""NatsCluster's JetStream side (tclnats_py.testing.server): each node its own
store, an R3 stream's leader found through $JS.API.STREAM.INFO, killed with
SIGKILL, restarted, waited for until its replicas are current again, and a
node put in lame duck mode.  Checked against the servers' own monitoring
endpoint (jsz) and with raw sockets."""

import os
import socket
import time

import pytest

from tclnats_py.testing.server import NatsCluster, NatsServer, raw_request

pytestmark = pytest.mark.slow


def publish_raw(url_port, subject, n):
    """``n`` JetStream publishes on a raw socket, every ack read."""
    with socket.create_connection(("127.0.0.1", url_port), timeout=5) as s:
        s.recv(4096)
        s.sendall(b'CONNECT {"verbose":false,"headers":true,"no_responders":true,"protocol":1}\r\n'
                  b"SUB _ACK 1\r\n" + b"".join(b"PUB %s _ACK 1\r\nx\r\n" % subject.encode() for _ in range(n)))
        buf = b""
        while buf.count(b"MSG _ACK 1") < n:
            buf += s.recv(65536)
        assert b'"error"' not in buf


def jsz_leader(server, stream):
    """The stream's leader as the monitoring endpoint tells it."""
    for acc in server.varz("jsz?streams=true", timeout=2).get("account_details") or []:
        for st in acc.get("stream_detail") or []:
            if st["name"] == stream and st.get("cluster"):
                return st["cluster"].get("leader")
    return None


@pytest.fixture(scope="module")
def cluster():
    with NatsCluster(3, jetstream=True) as c:
        r = c.js_api("STREAM.CREATE.FX", {"name": "FX", "subjects": ["fx.>"], "num_replicas": 3,
                                          "storage": "file"})
        assert "error" not in r, r
        yield c


def test_each_node_its_own_store_and_the_stream_on_each(cluster):
    assert len(set(cluster.store_dirs)) == 3
    leader = cluster.wait_stream_current("FX")
    publish_raw(cluster[leader].port, "fx.a", 10)
    cluster.wait_stream_current("FX")
    for s in cluster.servers:
        assert s.store_dir.startswith(s._tmp)
        found = [d for d, _, files in os.walk(s.store_dir) if os.path.basename(d) == "FX"]
        assert found, (s.name, list(os.walk(s.store_dir)))
    assert cluster.stream_info("FX")["state"]["messages"] == 10


def test_leader_agrees_with_jsz_and_a_kill_moves_it(cluster):
    leader = cluster.wait_stream_current("FX")
    assert jsz_leader(cluster[(leader + 1) % 3], "FX") == cluster[leader].name
    before = cluster.stream_info("FX")["state"]["messages"]
    killed = cluster.kill_stream_leader("FX")
    assert killed == leader and not cluster[killed].is_running
    deadline = time.monotonic() + 30
    while cluster.stream_leader("FX") in (None, killed):
        assert time.monotonic() < deadline, "no new leader in 30 s"
        time.sleep(0.1)
    with pytest.raises(TimeoutError, match="FX not led and current"):
        cluster.wait_stream_current("FX", timeout=0.5)  # a replica is down: not current
    cluster.restart(killed)
    cluster.wait_stream_current("FX", timeout=30)
    info = cluster.stream_info("FX")
    assert info["state"]["messages"] == before
    assert {p["name"] for p in info["cluster"]["replicas"]} | {info["cluster"]["leader"]} == {"n0", "n1", "n2"}


def test_lame_duck_hands_the_leadership_over(cluster):
    leader = cluster.wait_stream_current("FX")
    cluster.lame_duck(leader, wait=False)
    deadline = time.monotonic() + 30
    while cluster.stream_leader("FX") in (None, leader):
        assert time.monotonic() < deadline, "the leadership stayed on the lame duck"
        time.sleep(0.1)
    cluster.kill(leader)
    cluster.restart(leader)
    cluster.wait_stream_current("FX", timeout=30)


def testraw_request_answers_and_says_no_responders(cluster):
    with NatsServer() as srv:
        assert raw_request(srv, "$JS.API.INFO", b"", 2) == {"error": {"code": 503, "description": "no responders"}}
    assert cluster.stream_leader("NOPE") is None
    assert cluster.stream_info("NOPE")["error"]["err_code"] == 10059
    assert cluster.js_api("INFO")["type"] == "io.nats.jetstream.api.v1.account_info_response"
