"""engine/js/direct.py (ADR-31 batch and multi-last direct gets) fed with
scripted replies: no server."""

import datetime
import json

import pytest

from tclnats_py import NatsError
from tclnats_py.engine.connection import Msg
from tclnats_py.engine.js import JsApi, run_sync
from tclnats_py.engine.js.direct import DirectBatch, check
from tclnats_py.engine.js.kv import MULTI_LAST_MAX, Bucket


def reply(seq, subject="s.a", data=b"x", pending=0, extra=None):
    h = {"Nats-Stream": ["S"], "Nats-Subject": [subject], "Nats-Sequence": [str(seq)],
         "Nats-Time-Stamp": ["2025-01-02T03:04:05.5Z"], "Nats-Num-Pending": [str(pending)],
         "Nats-Last-Sequence": [str(seq - 1)]}
    h.update(extra or {})
    return Msg("_INBOX.b", data, None, h)


def status(code, desc="", **headers):
    h = {"Status": [str(code)], "Description": [desc]}
    h.update({k.replace("_", "-"): [str(v)] for k, v in headers.items()})
    return Msg("_INBOX.b", b"", None, h)


@pytest.mark.parametrize("kw, body", [
    ({"batch": 3}, {"batch": 3, "seq": 1}),
    ({"batch": 3, "seq": 7, "next_by_subj": "s.*", "max_bytes": 100},
     {"batch": 3, "seq": 7, "next_by_subj": "s.*", "max_bytes": 100}),
    ({"batch": 2, "start_time": datetime.datetime(2025, 1, 2, 3, 4, 5)},
     {"batch": 2, "start_time": "2025-01-02T03:04:05Z"}),
    ({"multi_last": ["a.>", "b"]}, {"multi_last": ["a.>", "b"]}),
    ({"multi_last": "a.*", "up_to_seq": 9, "batch": 5}, {"multi_last": ["a.*"], "up_to_seq": 9, "batch": 5}),
    ({"multi_last": ["a"], "up_to_time": "2025-01-01T00:00:00Z"},
     {"multi_last": ["a"], "up_to_time": "2025-01-01T00:00:00Z"}),
])
def test_request_bodies(kw, body):
    get = DirectBatch("S", **kw)
    assert json.loads(get.body) == body
    assert get.subject(JsApi("hub")) == "$JS.hub.API.DIRECT.GET.S"
    assert get.feature == ("direct_get_multi_last" if "multi_last" in kw else "direct_get_batch")


@pytest.mark.parametrize("kw, code", [
    ({}, "ErrInvalidArg"), ({"batch": 0}, "ErrInvalidArg"), ({"batch": True}, "ErrInvalidArg"),
    ({"batch": 2, "seq": 1, "start_time": "2025-01-01T00:00:00Z"}, "ErrInvalidArg"),
    ({"batch": 2, "up_to_seq": 3}, "ErrInvalidArg"), ({"batch": 2, "next_by_subj": "a..b"}, "ErrBadSubject"),
    ({"multi_last": []}, "ErrInvalidArg"), ({"multi_last": ["a b"]}, "ErrBadSubject"),
    ({"multi_last": ["a"], "seq": 2}, "ErrInvalidArg"),
    ({"multi_last": ["a"], "up_to_seq": 2, "up_to_time": "2025-01-01T00:00:00Z"}, "ErrInvalidArg"),
    ({"batch": 2, "start_time": ""}, "ErrInvalidArg"), ({"batch": 2, "max_bytes": -1}, "ErrInvalidArg"),
])
def test_bad_arguments(kw, code):
    with pytest.raises(NatsError) as e:
        DirectBatch("S", **kw)
    assert e.value.code == code
    with pytest.raises(NatsError):
        DirectBatch("bad.stream", batch=1)


def test_messages_then_eob():
    get = DirectBatch("S", batch=2)
    m = get.on_msg(reply(1, pending=4, extra={"Extra": ["v"]}))
    assert (m.seq, m.subject, m.data, m.stream, m.headers) == (1, "s.a", b"x", "S", {"Extra": ["v"]})
    assert get.num_pending == 4 and not get.done
    assert get.on_msg(reply(2, pending=3)).seq == 2
    assert get.on_msg(status(204, "EOB", Nats_Num_Pending=3, Nats_Last_Sequence=2)) is None
    assert get.done and get.count == 2 and get.num_pending == 3 and get.last_seq == 2 and get.up_to_seq is None


def test_multi_last_eob_carries_the_up_to_sequence():
    get = DirectBatch("S", multi_last=["s.>"])
    get.on_msg(reply(5))
    assert get.on_msg(status(204, "EOB", Nats_Num_Pending=0, Nats_Last_Sequence=5, Nats_UpTo_Sequence=7)) is None
    assert get.up_to_seq == 7


def test_nothing_found_ends_empty_and_errors_raise():
    get = DirectBatch("S", batch=5, seq=100)
    assert get.on_msg(status(404, "Message Not Found")) is None and get.done and get.count == 0
    for st, code in ((413, "ErrInvalidArg"), (408, "ErrInvalidArg"), (503, "ErrNoResponders"),
                     (500, "ErrJSResponse")):
        get = DirectBatch("S", multi_last=["s.>"])
        with pytest.raises(NatsError) as e:
            get.on_msg(status(st, "Too Many Results"))
        assert e.value.code == code and get.done
    get = DirectBatch("S", batch=1)
    assert get.on_timeout().code == "ErrTimeout" and get.done


def test_the_level_check_names_the_version():
    def server(level):
        def handler(step):
            return Msg("_INBOX.x", json.dumps({"api": {"level": level}} if level else {}).encode())
        return handler
    assert run_sync(check(JsApi(), DirectBatch("S", batch=1)), server(5)) == 5
    with pytest.raises(NatsError) as e:
        run_sync(check(JsApi(), DirectBatch("S", multi_last="a")), server(0))
    assert e.value.code == "ErrServerTooOld" and "2.11" in str(e.value)


def test_kv_get_many_batches_and_entries():
    b = Bucket(JsApi(), "B", {"allow_direct": True})
    keys = [f"k{i}" for i in range(MULTI_LAST_MAX + 5)]
    gets = b.get_many_batches(keys)
    assert [len(json.loads(g.body)["multi_last"]) for g in gets] == [MULTI_LAST_MAX, 5]
    assert json.loads(gets[1].body)["multi_last"][0] == f"$KV.B.k{MULTI_LAST_MAX}"
    assert Bucket(JsApi(), "B", {}).get_many_batches(keys) == []
    with pytest.raises(NatsError):
        b.get_many_batches(["a.*"])
    m = DirectBatch("KV_B", batch=1).on_msg(reply(4, subject="$KV.B.x.y", data=b"v", extra={"KV-Operation": ["DEL"]}))
    e = b.entry_of_stored(m)
    assert (e.key, e.value, e.revision, e.operation) == ("x.y", b"v", 4, "DEL")
