"""engine/js/batch.py (ADR-50 atomic batches) fed with scripted replies: no server."""

import json

import pytest

from tclnats_py import NatsError
from tclnats_py.engine.connection import Msg
from tclnats_py.engine.js import JsApi, Publish, Request, run_sync
from tclnats_py.engine.js import batch
from tclnats_py.engine.js.publish import BATCH_COMMIT, BATCH_ID, BATCH_SEQUENCE


def jmsg(obj):
    return Msg("_INBOX.x", json.dumps(obj).encode())


def api_error(code, err_code, description):
    return jmsg({"error": {"code": code, "err_code": err_code, "description": description}, "stream": "B", "seq": 0})


class Server:
    """API level ``level`` on $JS.API.INFO; an empty reply to a batch message
    sent as a request, ``commit(step)`` to the commit; Publish steps kept."""

    def __init__(self, commit=None, level=5, staged=None):
        self.level = level
        self.commit = commit or (lambda s: jmsg({"stream": "B", "seq": 9, "batch": s.headers[BATCH_ID][0],
                                                 "count": int(s.headers[BATCH_SEQUENCE][0])}))
        self.staged = staged or (lambda s: Msg("_INBOX.x", b""))
        self.seen = []

    def __call__(self, step):
        if isinstance(step, Request) and step.subject.endswith(".INFO"):
            return jmsg({"api": {"level": self.level}})
        self.seen.append(step)
        if isinstance(step, Publish):
            return None
        return (self.commit if BATCH_COMMIT in step.headers else self.staged)(step)


def test_publish_batch_numbers_the_messages_and_commits_the_last():
    srv = Server()
    msgs = [("b.a", b"1"), ("b.b", "two", {"X-K": "v"}), ("b.c", b"3"), ("b.d", b"4")]
    ack = run_sync(batch.publish_batch(JsApi(), msgs), srv)
    kinds = [type(s).__name__ for s in srv.seen]
    assert kinds == ["Request", "Publish", "Publish", "Request"]   # ack_first, then the commit
    ids = {s.headers[BATCH_ID][0] for s in srv.seen}
    assert len(ids) == 1 and len(ids.pop()) <= 64
    assert [s.headers[BATCH_SEQUENCE] for s in srv.seen] == [["1"], ["2"], ["3"], ["4"]]
    assert [BATCH_COMMIT in s.headers for s in srv.seen] == [False, False, False, True]
    assert srv.seen[1].payload == b"two" and srv.seen[1].headers["X-K"] == ["v"]
    assert ack == {"stream": "B", "seq": 9, "batch_id": srv.seen[0].headers[BATCH_ID][0], "batch_size": 4}


def test_ack_every_makes_every_nth_message_a_request():
    srv = Server()
    run_sync(batch.publish_batch(JsApi(), [(f"b.{i}", b"x") for i in range(7)], ack_every=3), srv)
    assert [type(s).__name__[0] for s in srv.seen] == list("RPRPPRR")


def test_incremental_batch_holds_the_last_message_back():
    srv = Server()
    b = batch.AtomicBatch(JsApi())
    run_sync(b.add(("b.a", b"1")), srv)
    assert srv.seen == [] and b.size == 1       # held back, nothing sent yet
    run_sync(b.add(("b.b", b"2")), srv)
    assert [s.subject for s in srv.seen] == ["b.a"] and b.size == 2
    ack = run_sync(b.commit(), srv)
    assert [s.subject for s in srv.seen] == ["b.a", "b.b"] and ack["batch_size"] == 2 and b.closed
    with pytest.raises(NatsError) as e:
        run_sync(b.add(("b.c", b"3")), srv)
    assert e.value.code == "ErrInvalidArg"


def test_discarded_batch_sends_nothing_more():
    srv = Server()
    b = batch.AtomicBatch(JsApi())
    run_sync(b.add(("b.a", b"1")), srv)
    b.discard()
    with pytest.raises(NatsError):
        run_sync(b.commit(), srv)
    assert srv.seen == []


@pytest.mark.parametrize("items, code", [
    ([], "ErrInvalidArg"), ("b.a", "ErrInvalidArg"), (None, "ErrInvalidArg"), ([("b.a",)], "ErrInvalidArg"),
    ([("b.a", b"1", {}, 1)], "ErrInvalidArg"), ([("b a", b"1")], "ErrBadSubject"), ([(1, b"1")], "ErrBadSubject"),
    ([("b.a", object())], "ErrInvalidArg"), ([("b.a", b"1", {"nats-batch-commit": "1"})], "ErrInvalidArg"),
    ([("b.a", b"1", {"Nats-Batch-Sequence": "1"})], "ErrInvalidArg"),
    ([("b.a", b"1", {"Nats-Expected-Last-Msg-Id": "m"})], "ErrInvalidArg"),
    ([("b.a", b"1"), ("b.b", b"2", {"Nats-Expected-Last-Sequence": "3"})], "ErrInvalidArg"),
])
def test_bad_batches_are_refused_before_anything_is_sent(items, code):
    srv = Server()
    with pytest.raises(NatsError) as e:
        run_sync(batch.publish_batch(JsApi(), items), srv)
    assert e.value.code == code and srv.seen == []


def test_a_server_before_2_12_is_refused_before_anything_is_sent():
    srv = Server(level=1)
    with pytest.raises(NatsError) as e:
        run_sync(batch.publish_batch(JsApi(), [("b.a", b"1")]), srv)
    assert e.value.code == "ErrServerTooOld" and "2.12" in str(e.value) and srv.seen == []


def test_a_refusal_of_the_first_message_stops_the_batch():
    srv = Server(staged=lambda s: api_error(400, 10174, "atomic publish is disabled"))
    with pytest.raises(NatsError) as e:
        run_sync(batch.publish_batch(JsApi(), [("b.a", b"1"), ("b.b", b"2")]), srv)
    assert e.value.code == "ErrJSResponse" and e.value.details["err_code"] == 10174
    assert "allow_atomic" in str(e.value) and str(e.value).startswith("atomic publish is disabled")
    assert len(srv.seen) == 1


@pytest.mark.parametrize("reply, err_code, words", [
    (api_error(400, 10199, "atomic publish batch is too large: 5"), 10199, ["at most 5 messages", "max_msgs"]),
    (api_error(429, 10210, "atomic publish too many inflight"), 10210, ["max_inflight_per_stream", "50"]),
    (api_error(400, 10176, "atomic publish batch is incomplete"), 10176, ["idle", "10s", "nothing of it"]),
    (api_error(400, 10201, "atomic publish batch contains duplicate message id"), 10201, ["Nats-Msg-Id"]),
])
def test_commit_errors_are_explained(reply, err_code, words):
    srv = Server(commit=lambda s: reply)
    with pytest.raises(NatsError) as e:
        run_sync(batch.publish_batch(JsApi(), [("b.a", b"1"), ("b.b", b"2")]), srv)
    assert e.value.details["err_code"] == err_code
    assert all(w in str(e.value) for w in words), str(e.value)
    if err_code == 10199:
        assert e.value.details["limit"] == 5


def test_other_commit_errors_pass_as_the_server_says():
    srv = Server(commit=lambda s: api_error(400, 10071, "wrong last sequence: 0"))
    with pytest.raises(NatsError) as e:
        run_sync(batch.publish_batch(JsApi(), [("b.a", b"1")]), srv)
    assert str(e.value) == "wrong last sequence: 0" and e.value.details["err_code"] == 10071


def test_a_commit_reply_without_batch_fields_is_an_error():
    srv = Server(commit=lambda s: jmsg({"stream": "B", "seq": 3}))
    with pytest.raises(NatsError) as e:
        run_sync(batch.publish_batch(JsApi(), [("b.a", b"1")]), srv)
    assert e.value.code == "ErrJSResponse"


def test_the_callers_headers_are_not_changed():
    srv = Server()
    mine = {"X-K": "v"}
    run_sync(batch.publish_batch(JsApi(), [("b.a", b"1", mine)]), srv)
    assert mine == {"X-K": "v"}
