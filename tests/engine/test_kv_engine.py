"""The shared Key-Value logic (tclnats_py.engine.js.kv) against a scripted server."""

import json

import pytest

from tclnats_py import NatsError
from tclnats_py.engine.connection import Msg
from tclnats_py.engine.js import JsApi, kv, run_sync
from tclnats_py.engine.js.events import INIT_DONE, WatchEntry
from tests.engine.test_js_engine import Server, api_error, err, jmsg, js_msg, status

TS = "2024-01-02T03:04:05.678Z"
TS_MS = 1704164645678


def direct(key_subject, seq, data=b"", op=None, stream="KV_B"):
    h = {"Nats-Stream": [stream], "Nats-Subject": [key_subject], "Nats-Sequence": [str(seq)],
         "Nats-Time-Stamp": [TS]}
    if op:
        h["KV-Operation"] = [op]
    return Msg("_INBOX.r", data, None, h)


def bucket(api=None, **cfg):
    return kv.Bucket(api or JsApi(), "B", dict({"name": "KV_B", "allow_direct": True, "max_msgs_per_subject": 5},
                                               **cfg))


def test_names_and_keys():
    assert kv.check_bucket("a-B_9") == "a-B_9"
    for bad in ("a.b", "a b", "", "a*", "ä"):
        with pytest.raises(NatsError):
            kv.check_bucket(bad)
    for good in ("a", "a.b", "a/b=c-d_e", "A1"):
        assert kv.check_key(good) == good
    for bad in (".a", "a.", "_kvx", "a b", "a*", "a>", "", "ä"):
        with pytest.raises(NatsError) as e:
            kv.check_key(bad)
        assert str(e.value) == f"Invalid key name {bad}"
    for good in (">", "*", "a.*", "a.>", "a.*.c"):
        assert kv.check_key_pattern(good) == good
    for bad in ("a.>.c", "a..b", "a b.*"):
        with pytest.raises(NatsError):
            kv.check_key_pattern(bad)
    assert kv.operation_of(None) == "PUT" and kv.operation_of({"KV-Operation": ["DEL"]}) == "DEL"
    assert kv.operation_of({"Nats-Marker-Reason": ["MaxAge"]}) == "PURGE"
    assert kv.operation_of({"Nats-Marker-Reason": ["Remove"]}) == "DEL"


def test_bucket_config():
    cfg = kv.bucket_config("B", history=5, ttl_ms=60000, max_value_size=100, storage="memory", description="d",
                           compression="s2", metadata={"a": "b"})
    assert cfg == {"name": "KV_B", "description": "d", "subjects": ["$KV.B.>"], "retention": "limits",
                   "max_msgs_per_subject": 5, "max_age": 60_000_000_000, "max_msg_size": 100, "storage": "memory",
                   "num_replicas": 1, "duplicate_window": 60_000_000_000, "discard": "new", "deny_delete": True,
                   "deny_purge": False, "allow_rollup_hdrs": True, "allow_direct": True, "compression": "s2",
                   "metadata": {"a": "b"}}
    assert kv.bucket_config("B")["duplicate_window"] == 120_000_000_000 and "max_age" not in kv.bucket_config("B")
    assert kv.bucket_config("B", ttl_ms=600_000)["duplicate_window"] == 120_000_000_000
    for bad in (dict(history=0), dict(history=65), dict(storage="disk"), dict(ttl_ms=-1), dict(compression="zip")):
        with pytest.raises(NatsError):
            kv.bucket_config("B", **bad)


def test_mirrors_and_aggregates():
    m = kv.bucket_config("LEAF", mirror_name="HUB", mirror_domain="hub")
    assert m["mirror"] == {"name": "KV_HUB", "external": {"api": "$JS.hub.API"}} and m["mirror_direct"]
    assert "subjects" not in m
    origin = kv.make_origin("HUB", keys="new.>", domain="hub")
    assert origin == {"bucket": "HUB", "keys": ["new.>"], "api": "$JS.hub.API"}
    with pytest.raises(NatsError):
        kv.make_origin("HUB", domain="a", api="b")
    agg = kv.bucket_config("AGG", origins=[origin, kv.make_origin("OTHER", stream="MIRROR")], writable=True)
    assert agg["subjects"] == ["$KV.AGG.>"]
    assert agg["sources"][0] == {"name": "KV_HUB", "subject_transforms": [{"src": "$KV.HUB.new.>",
                                                                           "dest": "$KV.AGG.new.>"}],
                                 "external": {"api": "$JS.hub.API"}}
    assert agg["sources"][1] == {"name": "MIRROR", "subject_transforms": [{"src": "$KV.OTHER.>",
                                                                           "dest": "$KV.AGG.>"}]}
    assert "subjects" not in kv.bucket_config("RO", origins=[origin], writable=False)
    mir = kv.bucket_config("READ_COPY", mirror_origin=kv.make_origin("HUB", keys=["a.*"], api="imp", deliver="dlv"))
    assert mir["name"] == "READ_COPY" and mir["mirror_direct"] and "subjects" not in mir
    assert mir["mirror"] == {"name": "KV_HUB", "subject_transforms": [{"src": "$KV.HUB.a.*", "dest": "$KV.HUB.a.*"}],
                             "external": {"api": "imp", "deliver": "dlv"}}
    with pytest.raises(NatsError) as e:
        kv.bucket_config("KV_X", mirror_origin=origin)
    assert str(e.value) == "Mirror name must not be KV"


def test_bucket_prefixes():
    b = bucket()
    assert (b.read_subject("k"), b.write_subject("k"), b.use_direct) == ("$KV.B.k", "$KV.B.k", True)
    b = bucket(JsApi("hub"))  # ADR-19: writes go through the other domain's prefix
    assert (b.read_subject("k"), b.write_subject("k")) == ("$KV.B.k", "$JS.hub.API.$KV.B.k")
    b = bucket(mirror={"name": "KV_ORIGIN"})
    assert (b.read_subject("k"), b.write_subject("k")) == ("$KV.B.k", "$KV.ORIGIN.k")
    b = bucket(JsApi("leaf"), mirror={"name": "KV_HUB", "external": {"api": "$JS.hub.API"}})
    assert (b.read_subject("k"), b.write_subject("k")) == ("$KV.HUB.k", "$JS.hub.API.$KV.HUB.k")
    assert not bucket(allow_direct=False).use_direct


def test_get():
    b = bucket()
    srv = Server({"$JS.API.DIRECT.GET.KV_B.$KV.B.k": direct("$KV.B.k", 7, b"v"),
                  "$JS.API.DIRECT.GET.KV_B": direct("$KV.B.other", 3, b"o"),
                  "$JS.API.DIRECT.GET.KV_B.$KV.B.gone": direct("$KV.B.gone", 8, op="DEL"),
                  "$JS.API.DIRECT.GET.KV_B.$KV.B.none": status(404, "Message Not Found"),
                  "$JS.API.DIRECT.GET.KV_B.$KV.B.lost": err("ErrNoResponders")})
    e = run_sync(b.get("k"), srv)
    assert e.as_dict() == {"bucket": "B", "key": "k", "value": b"v", "revision": 7, "created": TS_MS,
                           "operation": "PUT"}
    with pytest.raises(NatsError) as x:
        run_sync(b.get("k", revision=3), srv)  # that revision is another key's
    assert x.value.code == "ErrKeyNotFound"
    with pytest.raises(NatsError) as x:
        run_sync(b.get("gone"), srv)
    assert x.value.code == "ErrKeyNotFound" and x.value.details["revision"] == 8
    with pytest.raises(NatsError) as x:
        run_sync(b.get("none"), srv)
    assert (x.value.code, str(x.value)) == ("ErrKeyNotFound", "Key none not found in bucket B")
    with pytest.raises(NatsError) as x:
        run_sync(b.get("lost"), srv)
    assert x.value.code == "ErrBucketNotFound"
    with pytest.raises(NatsError):
        next(b.get("bad key"))
    # without direct get: STREAM.MSG.GET, whose stream-not-found means the bucket is gone
    b = bucket(allow_direct=False)
    srv = Server({"$JS.API.STREAM.MSG.GET.KV_B": api_error(404, 10059, "stream not found")})
    with pytest.raises(NatsError) as x:
        run_sync(b.get("k"), srv)
    assert x.value.code == "ErrBucketNotFound"
    assert json.loads(srv.seen[0].payload) == {"last_by_subj": "$KV.B.k"}


def test_writes():
    b = bucket(JsApi("hub"))
    acks = iter(range(10, 100))
    srv = Server({"$JS.hub.API.$KV.B.*": lambda step: jmsg({"stream": "KV_B", "seq": next(acks)})})
    assert run_sync(b.put("k", "v"), srv) == 10 and srv.seen[-1].payload == b"v"
    assert run_sync(b.update("k", b"v2", 10), srv) == 11
    assert srv.seen[-1].headers == {"Nats-Expected-Last-Subject-Sequence": ["10"]}
    run_sync(b.delete("k"), srv)
    assert srv.seen[-1].headers == {"KV-Operation": ["DEL"]}
    run_sync(b.delete("k", 12), srv)
    assert srv.seen[-1].headers == {"KV-Operation": ["DEL"], "Nats-Expected-Last-Subject-Sequence": ["12"]}
    run_sync(b.purge("k"), srv)
    assert srv.seen[-1].headers == {"KV-Operation": ["PURGE"], "Nats-Rollup": ["sub"]}
    with pytest.raises(NatsError) as x:
        run_sync(bucket().put("k", b""), Server({"$KV.B.k": status(503)}))
    assert x.value.code == "ErrBucketNotFound"
    with pytest.raises(NatsError) as x:
        run_sync(bucket().update("k", b"", 3), Server({"$KV.B.k": api_error(400, 10071, "wrong last sequence: 4")}))
    assert x.value.code == "ErrWrongLastSequence"


def _one_request(srv, req, result, error):
    """Drive a *_request / *_result pair as a face does (no generator)."""
    try:
        reply = srv(req)
    except NatsError as e:
        raise error(e) from None
    return result(reply)


def test_get_and_put_as_one_request_give_what_the_operations_give():
    b = bucket()
    routes = {"$JS.API.DIRECT.GET.KV_B.$KV.B.k": direct("$KV.B.k", 7, b"v"),
              "$JS.API.DIRECT.GET.KV_B": direct("$KV.B.other", 3, b"o"),
              "$JS.API.DIRECT.GET.KV_B.$KV.B.gone": direct("$KV.B.gone", 8, op="DEL"),
              "$JS.API.DIRECT.GET.KV_B.$KV.B.none": status(404, "Message Not Found"),
              "$JS.API.DIRECT.GET.KV_B.$KV.B.lost": err("ErrNoResponders"),
              "$KV.B.w": api_error(400, 10071, "wrong last sequence: 4"),
              "$KV.B.nobody": status(503),
              "$KV.B.gone2": err("ErrNoResponders"),
              "$KV.B.*": jmsg({"stream": "KV_B", "seq": 12})}

    def outcome(fn):
        try:
            r = fn()
        except NatsError as e:
            return ("error", e.code, str(e), dict(e.details))
        return ("ok", r.as_dict() if hasattr(r, "as_dict") else r)

    for key, rev in (("k", None), ("k", 3), ("k", 7), ("gone", None), ("none", None), ("lost", None)):
        srv = Server(routes)
        op = outcome(lambda: run_sync(b.get(key, rev), srv))
        one = outcome(lambda: _one_request(srv, b.get_request(key, rev),
                                           lambda m: b.get_result(key, rev, m), lambda e: b.get_error(key, e)))
        assert op == one, (key, rev)
        assert [s.subject for s in srv.seen[:1]] == [s.subject for s in srv.seen[1:]]
    for key in ("k", "w", "nobody", "gone2"):
        srv = Server(routes)
        op = outcome(lambda: run_sync(b.put(key, b"v"), srv))
        one = outcome(lambda: _one_request(srv, b.put_request(key, b"v"),
                                           lambda m: b.put_result(m)["seq"], b.put_error))
        assert op == one, key
    assert outcome(lambda: run_sync(b.put("nobody", b"v"), Server(routes)))[1] == "ErrBucketNotFound"
    # checks come first, as the operations' do
    for bad in (lambda: b.get_request("bad key"), lambda: b.get_request("k", 0), lambda: b.put_request("a*", b""),
                lambda: b.put_request("k", 5)):
        with pytest.raises(NatsError) as x:
            bad()
        assert x.value.code in ("ErrInvalidArg", "ErrInvalidKey")
    # without direct gets there is no one-request form
    assert bucket(allow_direct=False).get_request("k") is None


def test_create_retries_over_a_delete():
    b = bucket()
    calls = []

    def put(step):
        calls.append(step.headers)
        if step.headers["Nats-Expected-Last-Subject-Sequence"] == ["0"]:
            return api_error(400, 10071, "wrong last sequence: 5")
        return jmsg({"stream": "KV_B", "seq": 6})
    srv = Server({"$KV.B.k": put, "$JS.API.DIRECT.GET.KV_B.$KV.B.k": direct("$KV.B.k", 5, op="PURGE")})
    assert run_sync(b.create("k", b"x"), srv) == 6
    assert calls[-1] == {"Nats-Expected-Last-Subject-Sequence": ["5"]}
    # a live value: the first error stands
    srv = Server({"$KV.B.k": put, "$JS.API.DIRECT.GET.KV_B.$KV.B.k": direct("$KV.B.k", 5, b"live")})
    with pytest.raises(NatsError) as x:
        run_sync(b.create("k", b"x"), srv)
    assert x.value.code == "ErrWrongLastSequence"


def test_revert_status_bind_manage():
    b = bucket()
    srv = Server({"$JS.API.DIRECT.GET.KV_B": direct("$KV.B.k", 2, b"old"),
                  "$KV.B.k": jmsg({"stream": "KV_B", "seq": 9})})
    assert run_sync(b.revert("k", 2), srv) == 9 and srv.seen[-1].payload == b"old"
    info = {"config": {"name": "KV_L", "max_msgs_per_subject": 3, "max_age": 5_000_000_000, "compression": "s2",
                       "duplicate_window": 5_000_000_000,
                       "mirror": {"name": "KV_HUB", "external": {"api": "$JS.hub.API"}}},
            "state": {"messages": 4, "bytes": 400}}
    st = kv.status("L", info)
    assert {k: st[k] for k in ("bucket", "bytes", "history", "ttl", "values", "is_compressed", "mirror_name",
                               "mirror_domain")} == {"bucket": "L", "bytes": 400, "history": 3, "ttl": 5_000_000_000,
                                                     "values": 4, "is_compressed": True, "mirror_name": "HUB",
                                                     "mirror_domain": "hub"}
    ms = kv.status_to_ms(st)
    assert ms["ttl"] == 5000 and ms["stream_config"]["duplicate_window"] == 5000
    api = JsApi()
    srv = Server({"$JS.API.STREAM.INFO.KV_B": jmsg(info), "$JS.API.STREAM.INFO.KV_S": jmsg(
        {"config": {"name": "KV_S", "max_msgs_per_subject": 0}}), "$JS.API.STREAM.INFO.KV_N": api_error(404, 10059),
        "$JS.API.STREAM.NAMES": jmsg({"total": 3, "streams": ["KV_B", "ORDERS", "KV_x"]}),
        "$JS.API.STREAM.DELETE.KV_N": api_error(404, 10059), "$JS.API.STREAM.PURGE.KV_B": jmsg({"purged": 4})})
    assert info["config"]["duplicate_window"] == 5_000_000_000  # status_to_ms works on a copy
    assert run_sync(kv.bind(api, "B"), srv).write_subject("k") == "$JS.hub.API.$KV.HUB.k"
    for name in ("S", "N"):
        with pytest.raises(NatsError) as x:
            run_sync(kv.bind(api, name), srv)
        assert x.value.code == "ErrBucketNotFound"
    with pytest.raises(NatsError) as x:
        run_sync(kv.delete_bucket(api, "N"), srv)
    assert x.value.code == "ErrBucketNotFound"
    assert run_sync(kv.bucket_names(api), srv) == ["B", "x"]
    assert run_sync(kv.empty_bucket(api, "B"), srv) == 4
    created = run_sync(kv.create_bucket(api, "NEW", history=2), Server(
        {"$JS.API.STREAM.CREATE.KV_NEW": lambda s: jmsg({"config": json.loads(s.payload)})}))
    assert created.bucket == "NEW" and created.config["max_msgs_per_subject"] == 2
    assert run_sync(kv.create_bucket(api, "RO", mirror_origin=kv.make_origin("NEW")), Server(
        {"$JS.API.STREAM.CREATE.RO": jmsg({"config": {}})})) is None


def test_watch_options_and_watcher():
    b = bucket()
    o = b.watch_options("a.*", meta_only=True)
    assert o == {"description": "KV watcher", "headers_only": True, "deliver_policy": "last_per_subject",
                 "filter_subject": "$KV.B.a.*"}
    assert b.watch_options(">", include_history=True)["deliver_policy"] == "all"
    assert b.watch_options(["a", "b.>"], updates_only=True, idle_heartbeat_ms=100) == {
        "description": "KV watcher", "headers_only": False, "deliver_policy": "new",
        "filter_subjects": ["$KV.B.a", "$KV.B.b.>"], "idle_heartbeat_ms": 100}
    with pytest.raises(NatsError) as x:
        b.watch_options(">", include_history=True, updates_only=True)
    assert str(x.value) == "-include_history conflicts with -updates_only"
    w = b.watcher()
    assert w.on_consumer_created({"num_pending": 2}) == []
    ev = w.on_msg(js_msg(3, 1, pending=1, data=b"1", subject="$KV.B.a.x"))
    assert ev == [WatchEntry(kv.Entry("B", "a.x", b"1", 3, 1700000000123, "PUT", 1))]
    ev = w.on_msg(js_msg(4, 2, pending=0, data=b"", subject="$KV.B.a.y", headers={"KV-Operation": ["DEL"]}))
    assert ev[0].entry.operation == "DEL" and ev[1] is INIT_DONE and w.init_done
    assert ev[0].entry.as_dict(with_delta=True)["delta"] == 0
    assert w.on_msg(js_msg(5, 3, subject="$KV.B.a.z")) == [WatchEntry(w.entry_of(js_msg(5, 3, subject="$KV.B.a.z")))]
    # nothing there: the end of initial data at once; deletes ignored but counted
    assert b.watcher().on_consumer_created({"num_pending": 0}) == [INIT_DONE]
    assert b.watcher(updates_only=True).on_consumer_created({"num_pending": 9}) == [INIT_DONE]
    w = b.watcher(ignore_deletes=True)
    w.on_consumer_created({"num_pending": 1})
    assert w.on_msg(js_msg(4, 1, subject="$KV.B.q", headers={"KV-Operation": ["PURGE"]})) == [INIT_DONE]
