"""The shared Object Store logic (tclnats_py.engine.js.objstore) against a scripted server."""

import base64
import hashlib
import json

import pytest

from tclnats_py import NatsError
from tclnats_py.engine.connection import Msg
from tclnats_py.engine.js import JsApi, objstore as O, run_sync
from tclnats_py.engine.js.events import INIT_DONE, WatchInfo
from tests.engine.test_js_engine import Server, jmsg, js_msg, status

TS = "2024-01-02T03:04:05.678Z"


def meta_reply(info, bucket="B"):
    return Msg("_INBOX.r", json.dumps(info).encode(), None, {
        "Nats-Stream": [f"OBJ_{bucket}"], "Nats-Subject": [O.meta_subject(bucket, info["name"])],
        "Nats-Sequence": ["5"], "Nats-Time-Stamp": [TS]})


def test_names_subjects_config():
    assert O.encode_name("report.pdf") == base64.urlsafe_b64encode(b"report.pdf").decode() == "cmVwb3J0LnBkZg=="
    assert O.meta_subject("B", "a b/ü") == "$O.B.M." + base64.urlsafe_b64encode("a b/ü".encode()).decode()
    assert O.chunk_subject("B", "N1") == "$O.B.C.N1" and O.meta_filter("B") == "$O.B.M.>"
    for bad in ("", None):
        with pytest.raises(NatsError):
            O.encode_name(bad)
    with pytest.raises(NatsError):
        O.check_bucket("a.b")
    cfg = O.bucket_config("B", description="d", ttl_ns=5, max_bytes=100, storage="memory", compression=True,
                          metadata={"k": "v"})
    assert cfg == {"name": "OBJ_B", "description": "d", "subjects": ["$O.B.C.>", "$O.B.M.>"], "max_age": 5,
                   "max_bytes": 100, "storage": "memory", "num_replicas": 1, "discard": "new",
                   "allow_rollup_hdrs": True, "allow_direct": True, "compression": "s2", "metadata": {"k": "v"}}


def test_digest():
    want = "SHA-256=" + base64.urlsafe_b64encode(hashlib.sha256(b"hello").digest()).decode()
    assert O.digest_of(b"hello") == want
    d = O.Digest()
    d.update(b"he")
    d.update(b"llo")
    assert d.value() == want
    raw = hashlib.sha256(b"hello").digest()
    assert O.digest_bytes(want) == raw and O.digest_bytes("sha-256=" + want[8:]) == raw
    assert O.digest_bytes("SHA-256=" + base64.urlsafe_b64encode(raw).decode().rstrip("=")) == raw
    for bad in ("", "MD5=abc", "SHA-256=!!", "SHA-256=" + base64.urlsafe_b64encode(b"short").decode()):
        with pytest.raises(NatsError) as e:
            O.digest_bytes(bad)
        assert e.value.code == "ErrBadObjectMeta"


def test_put_chunks_and_meta():
    p = O.Put("B", "obj", "NUID1", chunk_size=4, description="d", headers={"Content-Type": "text/plain"},
              metadata={"m": "1"})
    assert p.chunk_subject == "$O.B.C.NUID1"
    assert p.feed(b"abc") == [] and p.feed("defgh") == [b"abcd", b"efgh"] and p.feed(b"ij") == []
    assert p.finish() == [b"ij"] and p.finish() == []
    info = p.info
    assert {k: info[k] for k in ("name", "bucket", "nuid", "size", "chunks", "digest", "description", "headers",
                                 "metadata", "options")} == {
        "name": "obj", "bucket": "B", "nuid": "NUID1", "size": 10, "chunks": 3, "digest": O.digest_of(b"abcdefghij"),
        "description": "d", "headers": {"Content-Type": ["text/plain"]}, "metadata": {"m": "1"},
        "options": {"max_chunk_size": 4}}
    step = p.meta_step()
    assert step.subject == O.meta_subject("B", "obj") and step.headers == {"Nats-Rollup": ["sub"]}
    stored = json.loads(step.payload)
    assert "mtime" not in stored and stored["digest"] == info["digest"]  # ADR-20: mtime is not stored
    with pytest.raises(NatsError):
        p.feed(b"more")
    empty = O.Put("B", "e", "N2")
    assert empty.finish() == [] and empty.info["chunks"] == 0 and empty.info["size"] == 0
    empty.previous({"nuid": "OLD", "name": "e"})
    assert empty.old_nuid == "OLD"
    empty.previous({"nuid": "OLD", "name": "e", "deleted": True})
    with pytest.raises(NatsError):
        O.Put("B", "x", "N", chunk_size=0)
    with pytest.raises(NatsError):
        O.Put("B", "x", "N").meta_step()


def test_get_checks_digest_and_size():
    info = {"name": "o", "bucket": "B", "nuid": "N", "size": 6, "chunks": 2, "digest": O.digest_of(b"abcdef")}
    g = O.Get(info)
    assert g.filter_subject == "$O.B.C.N" and not g.done
    assert g.on_chunk(Msg("$O.B.C.N", b"abc")) == b"abc" and not g.done
    g.on_chunk(Msg("$O.B.C.N", b"def"))
    assert g.done
    g.check()
    g = O.Get(info)
    g.on_chunk(Msg("x", b"abc"))
    g.on_chunk(Msg("x", b"deX"))
    with pytest.raises(NatsError) as e:
        g.check()
    assert e.value.code == "ErrDigestMismatch"
    g = O.Get(info)
    g.on_chunk(Msg("x", b"abcdefg"))
    g.on_chunk(Msg("x", b""))
    with pytest.raises(NatsError) as e:
        g.check()
    assert e.value.code == "ErrBadObjectMeta"
    assert O.Get({"name": "z", "bucket": "B", "nuid": "N", "size": 0, "chunks": 0}).done
    for bad in ({"name": "d", "deleted": True}, {"name": "l", "options": {"link": {"bucket": "X"}}},
                {"name": "c", "size": 5, "chunks": 0}):
        with pytest.raises(NatsError):
            O.Get(bad)


def test_info_delete_links_update_seal():
    api = JsApi()
    live = {"name": "doc", "bucket": "B", "nuid": "N1", "size": 3, "chunks": 1, "digest": O.digest_of(b"abc")}
    gone = dict(live, deleted=True, size=0, chunks=0)
    link = {"name": "lnk", "bucket": "B", "nuid": "", "options": {"link": {"bucket": "B", "name": "doc"}}}
    metas = {O.meta_subject("B", "doc"): meta_reply(live), O.meta_subject("B", "old"): meta_reply(gone),
             O.meta_subject("B", "lnk"): meta_reply(link)}

    def get(step):
        subject = step.subject[len("$JS.API.DIRECT.GET.OBJ_B."):]
        return metas.get(subject) or status(404, "Message Not Found")
    pubs = []

    def meta_pub(step):
        pubs.append((step.subject, json.loads(step.payload), step.headers))
        return jmsg({"stream": "OBJ_B", "seq": 9})
    purges = []
    srv = Server({"$JS.API.DIRECT.GET.OBJ_B.*": get, "$O.B.M.*": meta_pub,
                  "$JS.API.STREAM.PURGE.OBJ_B": lambda s: purges.append(json.loads(s.payload)) or jmsg({"purged": 1}),
                  "$JS.API.STREAM.INFO.OBJ_B": jmsg({"config": {"name": "OBJ_B", "subjects": ["x"]}}),
                  "$JS.API.STREAM.UPDATE.OBJ_B": lambda s: jmsg({"config": json.loads(s.payload)})})
    i = run_sync(O.info(api, "B", "doc"), srv)
    assert i["mtime"] == TS and i["size"] == 3
    for name, kw in (("old", {}), ("nothing", {})):
        with pytest.raises(NatsError) as e:
            run_sync(O.info(api, "B", name, **kw), srv)
        assert e.value.code == "ErrObjectNotFound"
    assert run_sync(O.info(api, "B", "old", show_deleted=True), srv)["deleted"] is True
    # delete: a deleted info rolled up, then the chunks purged
    d = run_sync(O.delete(api, "B", "doc"), srv)
    assert d["deleted"] and pubs[-1][2] == {"Nats-Rollup": ["sub"]} and pubs[-1][1]["nuid"] == "N1"
    assert purges[-1] == {"filter": "$O.B.C.N1"}
    assert run_sync(O.delete(api, "B", "old"), srv)["deleted"]  # already deleted: nothing to do
    with pytest.raises(NatsError):
        run_sync(O.delete(api, "B", "nothing"), srv)
    # links: not to a link or a deleted object, not over a live object
    lk = run_sync(O.add_link(api, "B", "new-link", live), srv)
    assert lk["options"] == {"link": {"bucket": "B", "name": "doc"}} and pubs[-1][1]["nuid"] == ""
    run_sync(O.add_link(api, "B", "lnk", live), srv)  # replacing a link is fine
    run_sync(O.add_link(api, "B", "old", live), srv)  # so is a deleted object's name
    for target, name in ((link, "x"), (gone, "x"), (live, "doc")):
        with pytest.raises(NatsError) as e:
            run_sync(O.add_link(api, "B", name, target), srv)
        assert e.value.code == "ErrInvalidArg"
    bl = run_sync(O.add_bucket_link(api, "B", "all-of-C", "C"), srv)
    assert bl["options"] == {"link": {"bucket": "C"}}
    # update_meta: rename onto a free name, the old name purged
    new = run_sync(O.update_meta(api, "B", "doc", new_name="renamed", description="new"), srv)
    assert new["name"] == "renamed" and new["description"] == "new" and new["nuid"] == "N1"
    assert purges[-1] == {"filter": O.meta_subject("B", "doc")}
    with pytest.raises(NatsError):
        run_sync(O.update_meta(api, "B", "doc", new_name="lnk"), srv)  # a live link has that name
    sealed = run_sync(O.seal(api, "B"), srv)
    assert sealed["config"]["sealed"] is True


def test_status_and_watcher():
    st = O.status("B", {"config": {"description": "d", "max_age": 7, "storage": "memory", "num_replicas": 1,
                                   "compression": "s2", "metadata": {"a": "b"}}, "state": {"bytes": 99}})
    assert {k: st[k] for k in ("bucket", "description", "ttl", "storage", "replicas", "sealed", "size",
                               "backing_store", "is_compressed", "metadata")} == {
        "bucket": "B", "description": "d", "ttl": 7, "storage": "memory", "replicas": 1, "sealed": False,
        "size": 99, "backing_store": "JetStream", "is_compressed": True, "metadata": {"a": "b"}}
    w = O.Watcher()
    assert w.on_consumer_created({"num_pending": 2}) == []
    info = {"name": "a", "bucket": "B", "nuid": "N", "size": 1, "chunks": 1}
    ev = w.on_msg(js_msg(1, 1, pending=1, data=json.dumps(info).encode(), subject="$O.B.M.YQ=="))
    assert type(ev[0]) is WatchInfo and ev[0].info["name"] == "a" and ev[0].info["mtime"].startswith("2023-11-14T22:13:20")
    ev = w.on_msg(js_msg(2, 2, pending=0, data=json.dumps(dict(info, name="b", deleted=True)).encode()))
    assert ev[0].info["deleted"] and ev[1] is INIT_DONE
    w = O.Watcher(ignore_deletes=True)
    w.on_consumer_created({"num_pending": 1})
    assert w.on_msg(js_msg(2, 1, data=json.dumps(dict(info, deleted=True)).encode())) == [INIT_DONE]
    assert O.Watcher(updates_only=True).on_consumer_created({"num_pending": 3}) == [INIT_DONE]
    with pytest.raises(NatsError):
        O.info_from_meta(b"[1,2]")
