"""Per-message TTL, KV key TTLs and limit markers (ADR-43, ADR-48), consumer
pause/resume/reset and the 2.11-2.14 config fields, in the engine, against a
scripted server."""

import json

import pytest

from tclnats_py import NatsError
from tclnats_py.engine.connection import Msg
from tclnats_py.engine.js import JsApi, kv, run_sync
from tclnats_py.engine.js import config as cfg
from tclnats_py.engine.js import consumer_admin as admin
from tclnats_py.engine.js.events import WatchEntry
from tclnats_py.engine.js.publish import publish_headers, ttl_from_ms, ttl_from_seconds
from tclnats_py.errors import ErrServerTooOld
from tests.engine.test_js_engine import Server, jmsg, js_msg

INFO = "$JS.API.INFO"
LEVEL5 = jmsg({"api": {"level": 5}})
LEVEL0 = jmsg({"api": {"total": 0}})
ACK = jmsg({"stream": "KV_B", "seq": 7})


def bucket(api=None):
    return kv.Bucket(api or JsApi(), "B", {"name": "KV_B", "allow_direct": True, "max_msgs_per_subject": 1})


# ------------------------------------------------------------------ headers
def test_ttl_values():
    assert ttl_from_seconds(1) == "1" and ttl_from_seconds(90.0) == "90" and ttl_from_seconds("1h") == "1h"
    assert ttl_from_seconds("never") == "never"
    for bad in (0, 0.5, -1, True, None, "", " 1", float("nan"), float("inf")):
        with pytest.raises(NatsError) as e:
            ttl_from_seconds(bad)
        assert e.value.code == "ErrInvalidArg"
    assert ttl_from_ms(1000) == "1" and ttl_from_ms("60000") == "60" and ttl_from_ms(1500) == "1500ms"
    assert ttl_from_ms("never") == "never" and ttl_from_ms(" Never ") == "never"
    for bad in (999, 0, "-5000", "x", "1s", True):
        with pytest.raises(NatsError) as e:
            ttl_from_ms(bad)
        assert e.value.code == "ErrInvalidArg"


def test_expected_last_subject_sequence_subject():
    h = publish_headers(expected_last_subject_seq=3, expected_last_subject_seq_subject="orders.*")
    assert h == {"Nats-Expected-Last-Subject-Sequence": ["3"],
                 "Nats-Expected-Last-Subject-Sequence-Subject": ["orders.*"]}
    with pytest.raises(NatsError) as e:
        publish_headers(expected_last_subject_seq_subject="orders.*")
    assert e.value.code == "ErrInvalidArg"
    with pytest.raises(NatsError) as e:
        publish_headers(expected_last_subject_seq=0, expected_last_subject_seq_subject="a..b")
    assert e.value.code == "ErrBadSubject"
    assert publish_headers(ttl="5") == {"Nats-TTL": ["5"]}


# ------------------------------------------------------------------ config tables
def test_new_stream_and_consumer_fields():
    s = cfg.stream_config("S", {"allow_msg_ttl": True, "subject_delete_marker_ttl": 2, "allow_msg_counter": "1",
                                "allow_atomic": True, "allow_msg_schedules": True, "persist_mode": "async",
                                "allow_batched": True, "discard_new_per_subject": True},
                          unit="s", extended=True)
    assert s["subject_delete_marker_ttl"] == 2_000_000_000 and s["allow_msg_counter"] is True
    assert s["persist_mode"] == "async" and s["allow_batched"] is True and s["discard_new_per_subject"] is True
    with pytest.raises(NatsError, match="allowed values: default async"):
        cfg.stream_config("S", {"persist_mode": "sync"}, extended=True)
    c = cfg.consumer_config({"durable_name": "C", "pause_until": "2030-01-01T00:00:00Z", "priority_groups": ["g"],
                             "priority_policy": "pinned_client", "pinned_ttl": 1500}, extended=True)
    assert c["priority_groups"] == ["g"] and c["priority_timeout"] == 1_500_000_000
    with pytest.raises(NatsError, match="allowed values: none overflow pinned_client prioritized"):
        cfg.consumer_config({"priority_policy": "first"}, extended=True)
    # replies for Tcl: the new durations in ms
    assert cfg.stream_reply_to_ms({"config": {"subject_delete_marker_ttl": 3_000_000_000}}) == \
        {"config": {"subject_delete_marker_ttl": 3000}}
    assert cfg.consumer_reply_to_ms({"config": {"priority_timeout": 2_000_000_000}}) == \
        {"config": {"priority_timeout": 2000}}


# ------------------------------------------------------------------ KV
def test_bucket_config_limit_markers():
    c = kv.bucket_config("B", limit_marker_ttl_ms=5000)
    assert c["allow_msg_ttl"] is True and c["subject_delete_marker_ttl"] == 5_000_000_000
    assert "allow_msg_ttl" not in kv.bucket_config("B")
    for bad in (999, -1, "5000", True):
        with pytest.raises(NatsError) as e:
            kv.bucket_config("B", limit_marker_ttl_ms=bad)
        assert e.value.code == "ErrInvalidArg"


def test_create_bucket_with_limit_markers_asks_the_level_first():
    created = jmsg({"config": {"name": "KV_B", "max_msgs_per_subject": 1, "subject_delete_marker_ttl": 5}})
    srv = Server({INFO: LEVEL5, "$JS.API.STREAM.CREATE.KV_B": created})
    b = run_sync(kv.create_bucket(JsApi(), "B", limit_marker_ttl_ms=5000), srv)
    assert b.bucket == "B" and [s.subject for s in srv.seen] == [INFO, "$JS.API.STREAM.CREATE.KV_B"]
    old = Server({INFO: LEVEL0})
    with pytest.raises(ErrServerTooOld, match="2.11") as e:
        run_sync(kv.create_bucket(JsApi(), "B", limit_marker_ttl_ms=5000), old)
    assert e.value.details["feature"] == "kv_limit_marker_ttl" and [s.subject for s in old.seen] == [INFO]
    plain = Server({"$JS.API.STREAM.CREATE.KV_B": created})
    run_sync(kv.create_bucket(JsApi(), "B"), plain)
    assert [s.subject for s in plain.seen] == ["$JS.API.STREAM.CREATE.KV_B"]


def test_create_and_purge_with_a_ttl():
    api = JsApi()
    srv = Server({INFO: LEVEL5, "$KV.B.k": ACK})
    assert run_sync(bucket(api).create("k", b"v", "5"), srv) == 7
    info, pub = srv.seen
    assert info.subject == INFO and pub.subject == "$KV.B.k"
    assert pub.headers == {"Nats-Expected-Last-Subject-Sequence": ["0"], "Nats-TTL": ["5"]}
    run_sync(bucket(api).purge("k", "10"), srv)
    assert srv.seen[-1].headers == {"KV-Operation": ["PURGE"], "Nats-Rollup": ["sub"], "Nats-TTL": ["10"]}
    assert [s.subject for s in srv.seen].count(INFO) == 1   # the level is asked once per JsApi
    # without a ttl: no level asked, no header
    plain = Server({"$KV.B.k": ACK})
    run_sync(bucket().create("k", b"v"), plain)
    run_sync(bucket().purge("k"), plain)
    assert [s.subject for s in plain.seen] == ["$KV.B.k", "$KV.B.k"]
    assert "Nats-TTL" not in plain.seen[0].headers and "Nats-TTL" not in plain.seen[1].headers
    old = Server({INFO: LEVEL0, "$KV.B.k": ACK})
    for op in (bucket().create("k", b"v", "5"), bucket().purge("k", "5")):
        with pytest.raises(ErrServerTooOld):
            run_sync(op, old)
    assert all(s.subject == INFO for s in old.seen)
    with pytest.raises(NatsError) as e:   # a bad key is refused before the level is asked
        run_sync(bucket().create("a b", b"v", "5"), Server({}))
    assert e.value.code == "ErrInvalidArg"


def _marker(reason, seq=3):
    return Msg("_INBOX.r", b"", None, {"Nats-Stream": ["KV_B"], "Nats-Subject": ["$KV.B.k"],
                                        "Nats-Sequence": [str(seq)], "Nats-Time-Stamp": ["2024-01-02T03:04:05Z"],
                                        "Nats-Marker-Reason": [reason], "Nats-TTL": ["1m0s"]})


def test_limit_markers_read_as_deletes_with_their_reason():
    assert kv.marker_reason({"Nats-Marker-Reason": ["MaxAge"]}) == "MaxAge"
    assert kv.marker_reason({"KV-Operation": ["DEL"]}) is None and kv.marker_reason(None) is None
    for reason, op in (("MaxAge", "PURGE"), ("Purge", "PURGE"), ("Remove", "DEL")):
        with pytest.raises(NatsError) as e:
            run_sync(bucket().get("k"), Server({"$JS.API.DIRECT.GET.KV_B.$KV.B.k": _marker(reason)}))
        assert e.value.code == "ErrKeyNotFound" and e.value.details["revision"] == 3
        entry = run_sync(bucket()._read("k", None), Server({"$JS.API.DIRECT.GET.KV_B.$KV.B.k": _marker(reason)}))
        assert (entry.operation, entry.reason) == (op, reason)
        assert entry.as_dict()["reason"] == reason
    w = bucket().watcher()
    w.on_consumer_created({"num_pending": 2})
    m = js_msg(4, 1, pending=1, subject="$KV.B.k", stream="KV_B")
    m.headers = {"Nats-Marker-Reason": ["MaxAge"]}
    (ev,) = w.on_msg(m)
    assert isinstance(ev, WatchEntry) and (ev.entry.operation, ev.entry.reason) == ("PURGE", "MaxAge")
    m2 = js_msg(5, 2, pending=0, subject="$KV.B.k", stream="KV_B")
    m2.headers = {"KV-Operation": ["DEL"]}
    ev2 = w.on_msg(m2)[0]
    assert (ev2.entry.operation, ev2.entry.reason) == ("DEL", None) and "reason" not in ev2.entry.as_dict()
    plain = w.on_msg(js_msg(6, 3, pending=0, subject="$KV.B.k", stream="KV_B"))[0]
    assert (plain.entry.operation, plain.entry.reason) == ("PUT", None)


def test_status_reports_the_limit_marker_ttl():
    st = kv.status("B", {"config": {"subject_delete_marker_ttl": 5_000_000_000, "max_age": 0}, "state": {}})
    assert st["limit_marker_ttl"] == 5_000_000_000 and kv.status_to_ms(st)["limit_marker_ttl"] == 5000
    assert "limit_marker_ttl" not in kv.status("B", {"config": {}, "state": {}})


# ------------------------------------------------------------------ pause, resume, reset
def test_pause_resume_reset_requests():
    srv = Server({INFO: LEVEL5,
                  "$JS.API.CONSUMER.PAUSE.S.C": jmsg({"paused": True, "pause_until": "2030-01-01T00:00:00Z"}),
                  "$JS.API.CONSUMER.RESET.S.C": jmsg({"name": "C", "reset_seq": 4})})
    api = JsApi()
    assert run_sync(admin.pause_consumer(api, "S", "C", "2030-01-01T00:00:00Z"), srv)["paused"] is True
    pause = srv.seen[-1]
    assert json.loads(pause.payload) == {"pause_until": "2030-01-01T00:00:00Z"}
    assert pause.headers == {"Nats-Required-Api-Level": ["1"]}
    run_sync(admin.pause_consumer(api, "S", "C", 1_893_456_000_000), srv)
    assert json.loads(srv.seen[-1].payload) == {"pause_until": "2030-01-01T00:00:00.000Z"}
    run_sync(admin.resume_consumer(api, "S", "C"), srv)
    assert json.loads(srv.seen[-1].payload) == {"pause_until": "1970-01-01T00:00:00Z"}
    assert run_sync(admin.reset_consumer(api, "S", "C", 4), srv)["reset_seq"] == 4
    reset = srv.seen[-1]
    assert json.loads(reset.payload) == {"seq": 4} and reset.headers == {"Nats-Required-Api-Level": ["4"]}
    run_sync(admin.reset_consumer(api, "S", "C"), srv)
    assert srv.seen[-1].payload == b""
    assert [s.subject for s in srv.seen].count(INFO) == 1
    for bad in (lambda: admin.pause_consumer(api, "S", "C", "tomorrow"),
                lambda: admin.pause_consumer(api, "S", "C", -1),
                lambda: admin.reset_consumer(api, "S", "C", -2),
                lambda: admin.pause_consumer(api, "S.x", "C", "2030-01-01T00:00:00Z")):
        with pytest.raises(NatsError) as e:
            run_sync(bad(), Server({}))
        assert e.value.code == "ErrInvalidArg"


def test_pause_and_reset_on_old_servers():
    with pytest.raises(ErrServerTooOld, match="nats-server 2.11"):
        run_sync(admin.resume_consumer(JsApi(), "S", "C"), Server({INFO: LEVEL0}))
    with pytest.raises(ErrServerTooOld, match="nats-server 2.14 or newer .JetStream API level 4.; the server has "
                                              "API level 2"):
        run_sync(admin.reset_consumer(JsApi(), "S", "C"), Server({INFO: jmsg({"api": {"level": 2}})}))
