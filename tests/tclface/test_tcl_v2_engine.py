"""The engine rules the nats-tcl 2.x API selects (server-free): the server
pool's wait counted from a successful connection too, 2.x's KV reads (no
direct get, a mirror read by its origin's subjects), and a purge's PubAck,
which the Aug 2023 KV API returns."""

from __future__ import annotations

import pytest

from tclnats_py.engine.js import JsApi, kv, run_sync
from tclnats_py.engine.pool import ServerPool
from tests.engine.test_js_engine import Server, jmsg

pytestmark = pytest.mark.unit


def _pool(wait_after_connect: bool) -> ServerPool:
    p = ServerPool()
    p.set_servers(["nats://a:4222"], randomize=False)
    p.wait_after_connect = wait_after_connect
    return p


def test_2x_pool_waits_reconnect_time_wait_after_a_connection_too():
    for rule, expected in ((True, 1500), (False, 0)):
        p = _pool(rule)
        s, wait = p.next_server(True, 60, lambda s: 2000, now=0)
        assert wait == 0                          # the first attempt never waits
        p.current_done(True, now=1000)            # connected at 1000
        s, wait = p.next_server(False, 60, lambda s: 2000, now=1500)   # lost at 1500
        assert (s.host, wait) == ("a", expected), rule
        p.current_done(False, now=1500 + wait)   # refused: both rules wait after a failure
        _, wait = p.next_server(False, 60, lambda s: 2000, now=2000 + expected)
        assert wait == 1500, rule


def test_2x_pool_still_drops_a_server_past_max_reconnect_attempts():
    p = _pool(True)
    p.next_server(True, 1, lambda s: 2000, now=0)
    p.current_done(True, now=0)
    p.next_server(False, 1, lambda s: 2000, now=10)
    p.current_done(False, now=2000)
    with pytest.raises(Exception) as e:
        p.next_server(False, 1, lambda s: 2000, now=2001)
    assert "empty" in str(e.value)


def test_2x_kv_reads_use_msg_get_and_a_mirror_reads_its_origins_subjects():
    plain = kv.Bucket(JsApi(), "B", {"name": "KV_B", "allow_direct": True})
    assert plain.use_direct
    plain.read_as_2x()
    assert (plain.use_direct, plain.read_subject("k")) == (False, "$KV.B.k")

    mirror = kv.Bucket(JsApi(), "M", {"name": "KV_M", "allow_direct": True, "mirror": {"name": "KV_ORIG"}})
    assert mirror.read_subject("k") == "$KV.M.k"          # 3.x: its own prefix (direct get answers for it)
    mirror.read_as_2x()
    assert mirror.read_subject("k") == "$KV.ORIG.k"
    assert mirror.write_subject("k") == "$KV.ORIG.k"
    assert mirror.watch_options("a.*")["filter_subject"] == "$KV.ORIG.a.*"

    srv = Server({"$JS.API.STREAM.MSG.GET.KV_M": lambda step: jmsg(
        {"message": {"subject": "$KV.ORIG.k", "seq": 4, "data": "dg==", "time": "2024-01-02T03:04:05Z"}})})
    entry = run_sync(mirror.get("k"), srv)
    assert (entry.key, entry.value, entry.revision) == ("k", b"v", 4)
    assert srv.seen[-1].subject == "$JS.API.STREAM.MSG.GET.KV_M"


def test_purge_returns_the_markers_puback():
    b = kv.Bucket(JsApi(), "B", {"name": "KV_B"})
    srv = Server({"$KV.B.k": lambda step: jmsg({"stream": "KV_B", "seq": 9})})
    assert run_sync(b.purge("k"), srv) == {"stream": "KV_B", "seq": 9}
    assert srv.seen[-1].headers == {"KV-Operation": ["PURGE"], "Nats-Rollup": ["sub"]}
