"""Bad input on the Python face: every public call with
wrong types, invalid names, bad timeouts and sizes fails with the documented
error code, before anything is queued for the wire, and leaves the
connection, its subscriptions and its requests working.

The codes (nats-tcl's, CoreAPI.md / JsAPI.md / KvAPI.md): ErrBadSubject for
any subject or reply that is not a valid subject string (wrong type included),
ErrBadQueueName for queue groups, ErrBadTimeout for timeouts that are not
finite numbers >= 0, ErrMaxPayload for payloads over the server's limit, and
ErrInvalidArg for everything else (stream, consumer, bucket, key and object
names, payloads that are not bytes-like or str, header mappings of the wrong
shape, counts and sizes out of range).  Payloads may be ``bytes``,
``bytearray``, ``memoryview`` or ``str`` (encoded as UTF-8) or None (empty).

Each case runs against a real JetStream server: a fresh connection with a
subscription and a responder, the bad call, then checks that nothing was
queued (no PUB counted, no bytes pending), that the subscription still gets a
message and a request still gets its reply.
"""

from __future__ import annotations

import asyncio
import inspect
import math

import pytest

import tclnats_py
from tclnats_py import NatsError

STREAM = "BADIN_S"
CONSUMER = "BADIN_C"
ACKER = "BADIN_ACK"  # where the ack-family cases take their message
KV = "BADIN_KV"
OBJ = "BADIN_OBJ"

NAN = math.nan
INF = math.inf


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 30))


@pytest.fixture(scope="module")
def js_setup(js_server):
    async def go():
        c = await tclnats_py.connect(js_server.url)
        js = c.jetstream()
        await js.create_stream(STREAM, subjects=["badin.s.>"], storage="memory")
        for i in range(20):
            await js.publish_async("badin.s.x", b"m%d" % i)
        await js.publish_async_complete()
        await js.create_consumer(STREAM, durable_name=CONSUMER, ack_policy="explicit")
        await js.create_consumer(STREAM, durable_name=ACKER, ack_policy="explicit", ack_wait=60)
        kv = await js.create_key_value(KV, history=5)
        await kv.put("k1", b"v1")
        obs = await js.create_object_store(OBJ)
        await obs.put("o1", b"data")
        await c.close()
    run(go())
    return js_server


class Env:
    """Lazily bound handles on one connection."""

    def __init__(self, c):
        self.c = c
        self.js = c.jetstream()
        self.sub = None  # a plain subscription (next_msg)
        self.cb_sub = None
        self._kv = self._obs = self._cons = self._jsmsg = None

    async def kv(self):
        if self._kv is None:
            self._kv = await self.js.key_value(KV)
        return self._kv

    async def obs(self):
        if self._obs is None:
            self._obs = await self.js.object_store(OBJ)
        return self._obs

    async def cons(self):
        if self._cons is None:
            self._cons = await self.js.consumer(STREAM, CONSUMER)
        return self._cons

    async def jsmsg(self):
        if self._jsmsg is None:
            cons = await self.js.consumer(STREAM, ACKER)
            msgs = await cons.fetch(1, expires=2)
            assert msgs, "the setup stream ran out of messages"
            self._jsmsg = msgs[0]
        return self._jsmsg


# Each case: (id, expected code, needs, fn).  ``needs`` names the handles to
# bind before the snapshot ("kv", "obs", "cons", "jsmsg"); fn(env, h) gets
# them in ``h`` and may return an awaitable.
CASES: dict = {}
SECTION = "core"


def case(cid, code, fn, needs=()):
    CASES.setdefault(SECTION, []).append((cid, code, needs, fn))


# ------------------------------------------------------------------ core: publish
for i, subj in enumerate([5, None, b"badin.x", ["a"], "", " ", "a b", "a..b", "a.", ".a", ">", "*", "a.*",
                          "a.>", "a\tb", "a\r\nb", "a\x00b"]):
    case(f"publish-subject-{i}", "ErrBadSubject", lambda e, h, s=subj: e.c.publish(s, b"x"))
for i, rep in enumerate([5, b"r", "a b", "a.*", "a..b", "r."]):
    case(f"publish-reply-{i}", "ErrBadSubject", lambda e, h, r=rep: e.c.publish("badin.x", b"x", reply=r))
for i, data in enumerate([5, 1.5, ["x"], {"a": 1}, object(), True, [1, 2]]):
    case(f"publish-data-{i}", "ErrInvalidArg", lambda e, h, d=data: e.c.publish("badin.x", d))
BAD_HEADERS = [["K", "v"], "K: v", 5, b"x" if False else 7.5, {"K": None}, {5: "v"}, {"K": 5}, {"K": ["a", 5]},
               {"": "v"}, {"K:X": "v"}, {"K\r\n": "v"}, {"K": "v\r\nX: y"}, {"K V": "v"}]
for i, hdr in enumerate(BAD_HEADERS):
    case(f"publish-headers-{i}", "ErrInvalidArg", lambda e, h, x=hdr: e.c.publish("badin.x", b"x", headers=x))
case("publish-too-big", "ErrMaxPayload", lambda e, h: e.c.publish("badin.x", b"x" * (e.c.max_payload + 1)))
case("publish_msg-not-msg", "ErrInvalidArg", lambda e, h: e.c.publish_msg("badin.x"))
case("publish_msg-none", "ErrInvalidArg", lambda e, h: e.c.publish_msg(None))

# ------------------------------------------------------------------ core: subscribe
for i, subj in enumerate([5, None, b"a", ["a"], "", "a b", "a..b", "a.", ".a", "a.>.b", "a*", "a>", "*a",
                          "a.\tb"]):
    case(f"subscribe-subject-{i}", "ErrBadSubject", lambda e, h, s=subj: e.c.subscribe(s))
for i, q in enumerate([5, b"q", ["q"], "q b", "q.b", "*", ">", "q\n"]):
    case(f"subscribe-queue-{i}", "ErrBadQueueName", lambda e, h, q=q: e.c.subscribe("badin.q", queue=q))
for i, mm in enumerate([-1, "3", 1.5, None, True]):
    case(f"subscribe-max_msgs-{i}", "ErrInvalidArg", lambda e, h, m=mm: e.c.subscribe("badin.q", max_msgs=m))
for i, kw in enumerate([{"cb": 5}, {"cb": "f"}, {"pending_msgs_limit": "x"}, {"pending_bytes_limit": 1.5},
                        {"pending_msgs_limit": None, "pending_bytes_limit": []}]):
    case(f"subscribe-kw-{i}", "ErrInvalidArg", lambda e, h, k=kw: e.c.subscribe("badin.q", **k))
for i, mm in enumerate([-1, "2", 1.5, None]):
    case(f"unsubscribe-max_msgs-{i}", "ErrInvalidArg", lambda e, h, m=mm: e.sub.unsubscribe(m))

# ------------------------------------------------------------------ core: timeouts
SECTION = "timeouts"
BAD_TIMEOUTS = [-1, -0.001, NAN, INF, -INF, "1", [1], True]
for i, t in enumerate(BAD_TIMEOUTS):
    case(f"request-timeout-{i}", "ErrBadTimeout", lambda e, h, t=t: e.c.request("badin.svc", b"", timeout=t))
    case(f"request_many-timeout-{i}", "ErrBadTimeout",
         lambda e, h, t=t: e.c.request_many("badin.svc", b"", timeout=t))
    case(f"flush-timeout-{i}", "ErrBadTimeout", lambda e, h, t=t: e.c.flush(t))
    case(f"ping-timeout-{i}", "ErrBadTimeout", lambda e, h, t=t: e.c.ping(t))
    case(f"next_msg-timeout-{i}", "ErrBadTimeout", lambda e, h, t=t: e.sub.next_msg(t))
    case(f"drain-timeout-{i}", "ErrBadTimeout", lambda e, h, t=t: e.c.drain(t))
    case(f"sub-drain-timeout-{i}", "ErrBadTimeout", lambda e, h, t=t: e.sub.drain(t))
    case(f"jetstream-timeout-{i}", "ErrBadTimeout", lambda e, h, t=t: e.c.jetstream(timeout=t))
    case(f"js-publish-timeout-{i}", "ErrBadTimeout",
         lambda e, h, t=t: e.js.publish("badin.s.x", b"", timeout=t))
    case(f"js-publish_async-timeout-{i}", "ErrBadTimeout",
         lambda e, h, t=t: e.js.publish_async("badin.s.x", b"", timeout=t))
    case(f"js-publish_async_complete-timeout-{i}", "ErrBadTimeout",
         lambda e, h, t=t: e.js.publish_async_complete(timeout=t))
    case(f"fetch-expires-{i}", "ErrBadTimeout", lambda e, h, t=t: h["cons"].fetch(1, expires=t), needs=("cons",))
    case(f"consumer-next-timeout-{i}", "ErrBadTimeout", lambda e, h, t=t: h["cons"].next(t), needs=("cons",))
    case(f"ack_sync-timeout-{i}", "ErrBadTimeout", lambda e, h, t=t: h["jsmsg"].ack_sync(t), needs=("jsmsg",))

# ------------------------------------------------------------------ core: requests
for i, subj in enumerate([5, None, "", "a b", "a.*", "a.>", "a..b"]):
    case(f"request-subject-{i}", "ErrBadSubject", lambda e, h, s=subj: e.c.request(s, b""))
    case(f"request_many-subject-{i}", "ErrBadSubject", lambda e, h, s=subj: e.c.request_many(s, b""))
for i, data in enumerate([5, ["x"], object()]):
    case(f"request-data-{i}", "ErrInvalidArg", lambda e, h, d=data: e.c.request("badin.svc", d))
    case(f"request_many-data-{i}", "ErrInvalidArg", lambda e, h, d=data: e.c.request_many("badin.svc", d))
for i, hdr in enumerate(BAD_HEADERS[:7]):
    case(f"request-headers-{i}", "ErrInvalidArg", lambda e, h, x=hdr: e.c.request("badin.svc", b"", headers=x))
for i, mm in enumerate([-1, 0, "2", 1.5, None]):
    case(f"request_many-max_msgs-{i}", "ErrInvalidArg",
         lambda e, h, m=mm: e.c.request_many("badin.svc", b"", max_msgs=m))
case("request_msg-not-msg", "ErrInvalidArg", lambda e, h: e.c.request_msg("badin.svc"))
for i, kw in enumerate([{"domain": 5}, {"domain": "a b"}, {"domain": "a.b"}, {"api_prefix": "a b"},
                        {"api_prefix": 5}, {"domain": "d", "api_prefix": "p"}]):
    case(f"jetstream-kw-{i}", "ErrInvalidArg", lambda e, h, k=kw: e.c.jetstream(**k))

# ------------------------------------------------------------------ JetStream: publish
SECTION = "js"
for i, subj in enumerate([5, None, "", "a b", "badin.s.*", "badin.s.>", "badin..s"]):
    case(f"js-publish-subject-{i}", "ErrBadSubject", lambda e, h, s=subj: e.js.publish(s, b""))
    case(f"js-publish_async-subject-{i}", "ErrBadSubject", lambda e, h, s=subj: e.js.publish_async(s, b""))
for i, data in enumerate([5, ["x"], object()]):
    case(f"js-publish-data-{i}", "ErrInvalidArg", lambda e, h, d=data: e.js.publish("badin.s.x", d))
    case(f"js-publish_async-data-{i}", "ErrInvalidArg", lambda e, h, d=data: e.js.publish_async("badin.s.x", d))
for i, hdr in enumerate(BAD_HEADERS[:7]):
    case(f"js-publish-headers-{i}", "ErrInvalidArg",
         lambda e, h, x=hdr: e.js.publish("badin.s.x", b"", headers=x))
    case(f"js-publish_async-headers-{i}", "ErrInvalidArg",
         lambda e, h, x=hdr: e.js.publish_async("badin.s.x", b"", headers=x))
for i, kw in enumerate([{"msg_id": ""}, {"msg_id": 5}, {"expected_stream": "a.b"}, {"expected_stream": 5},
                        {"expected_last_seq": -1}, {"expected_last_seq": "1"},
                        {"expected_last_subject_seq": -2}, {"expected_last_msg_id": ""}]):
    case(f"js-publish-kw-{i}", "ErrInvalidArg", lambda e, h, k=kw: e.js.publish("badin.s.x", b"", **k))
    case(f"js-publish_async-kw-{i}", "ErrInvalidArg", lambda e, h, k=kw: e.js.publish_async("badin.s.x", b"", **k))

# ------------------------------------------------------------------ JetStream: streams and consumers
BAD_NAMES = [5, None, "", "a.b", "a*", "a>", "a b", "a/b", "a\\b", "a\tb", ["S"]]
for i, name in enumerate(BAD_NAMES):
    case(f"create_stream-name-{i}", "ErrInvalidArg",
         lambda e, h, n=name: e.js.create_stream(n, subjects=["badin.new.>"], storage="memory"))
    case(f"update_stream-name-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.update_stream(n, max_msgs=5))
    case(f"create_or_update_stream-name-{i}", "ErrInvalidArg",
         lambda e, h, n=name: e.js.create_or_update_stream(n, subjects=["badin.new.>"]))
    case(f"stream-name-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.stream(n))
    case(f"stream_info-name-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.stream_info(n))
    case(f"delete_stream-name-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.delete_stream(n))
    case(f"purge_stream-name-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.purge_stream(n))
    case(f"get_msg-stream-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.get_msg(n, 1))
    case(f"direct_get-stream-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.direct_get(n, 1))
    case(f"delete_msg-stream-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.delete_msg(n, 1))
    case(f"create_consumer-stream-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.create_consumer(n))
    case(f"consumer-stream-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.consumer(n, CONSUMER))
    case(f"consumer_names-stream-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.consumer_names(n))
    case(f"consumers-stream-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.consumers(n))
    case(f"ordered_consumer-stream-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.ordered_consumer(n))
    case(f"consumer-name-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.consumer(STREAM, n))
    case(f"consumer_info-name-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.consumer_info(STREAM, n))
    case(f"delete_consumer-name-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.delete_consumer(STREAM, n))
for i, name in enumerate([5, "a.b", "a*", "a b", "a>"]):
    case(f"create_consumer-durable-{i}", "ErrInvalidArg",
         lambda e, h, n=name: e.js.create_consumer(STREAM, durable_name=n))
    case(f"create_consumer-cname-{i}", "ErrInvalidArg", lambda e, h, n=name: e.js.create_consumer(STREAM, name=n))
for i, kw in enumerate([{"seq": -1}, {"seq": 0}, {"seq": "1"}, {"seq": 1.5}, {"last_by_subj": "a b"},
                        {"last_by_subj": 5}, {"next_by_subj": "a..b"}, {}]):
    case(f"get_msg-kw-{i}", "ErrInvalidArg" if "subj" not in str(kw) else "ErrBadSubject",
         lambda e, h, k=kw: e.js.get_msg(STREAM, **k))
for i, seq in enumerate([-1, 0, "1", None, 1.5]):
    case(f"delete_msg-seq-{i}", "ErrInvalidArg", lambda e, h, s=seq: e.js.delete_msg(STREAM, s))
for i, kw in enumerate([{"keep": -1}, {"seq": -1}, {"keep": "1"}, {"keep": 1, "seq": 2}]):
    case(f"purge_stream-kw-{i}", "ErrInvalidArg", lambda e, h, k=kw: e.js.purge_stream(STREAM, **k))
for i, flt in enumerate([5, "a b", "a..b"]):
    case(f"purge_stream-filter-{i}", "ErrBadSubject", lambda e, h, f=flt: e.js.purge_stream(STREAM, filter=f))
for i, kw in enumerate([{"deliver_policy": "bogus"}, {"idle_heartbeat": -1}, {"idle_heartbeat": NAN},
                        {"filter_subject": "a b"}, {"opt_start_seq": -1}, {"retry": -1}]):
    code = "ErrBadTimeout" if "idle" in str(kw) or "retry" in str(kw) else (
        "ErrBadSubject" if "filter" in str(kw) else "ErrInvalidArg")
    case(f"ordered_consumer-kw-{i}", code, lambda e, h, k=kw: e.js.ordered_consumer(STREAM, **k))

# ------------------------------------------------------------------ JetStream: pull and acks
for i, b in enumerate([0, -1, "1", 1.5, None]):
    case(f"fetch-batch-{i}", "ErrInvalidArg", lambda e, h, b=b: h["cons"].fetch(b), needs=("cons",))
for i, mb in enumerate([0, -1, "1"]):
    case(f"fetch-max_bytes-{i}", "ErrInvalidArg", lambda e, h, m=mb: h["cons"].fetch(1, max_bytes=m),
         needs=("cons",))
    case(f"fetch_bytes-{i}", "ErrInvalidArg", lambda e, h, m=mb: h["cons"].fetch_bytes(m), needs=("cons",))
for i, kw in enumerate([{"max_messages": -1}, {"max_messages": 0}, {"max_messages": "5"}, {"max_bytes": -1},
                        {"expires": -1}, {"expires": NAN}, {"heartbeat": -1}, {"threshold_messages": -1}]):
    code = "ErrBadTimeout" if ("expires" in str(kw) or "heartbeat" in str(kw)) else "ErrInvalidArg"
    case(f"consume-kw-{i}", code, lambda e, h, k=kw: h["cons"].consume(lambda m: None, **k), needs=("cons",))
    case(f"messages-kw-{i}", code, lambda e, h, k=kw: h["cons"].messages(**k), needs=("cons",))
for i, cb in enumerate([None, 5, "f"]):
    case(f"consume-cb-{i}", "ErrInvalidArg", lambda e, h, cb=cb: h["cons"].consume(cb), needs=("cons",))
for i, d in enumerate([-1, NAN, INF, "1"]):
    case(f"nak-delay-{i}", "ErrInvalidArg", lambda e, h, d=d: h["jsmsg"].nak(d), needs=("jsmsg",))
case("term-reason-type", "ErrInvalidArg", lambda e, h: h["jsmsg"].term(5), needs=("jsmsg",))
case("term-reason-newline", "ErrInvalidArg", lambda e, h: h["jsmsg"].term("a\r\nb"), needs=("jsmsg",))

# ------------------------------------------------------------------ Key-Value
SECTION = "kv"
BAD_BUCKETS = [5, None, "", "a.b", "a b", "a*", "a>", "a/b"]
for i, b in enumerate(BAD_BUCKETS):
    case(f"create_key_value-{i}", "ErrInvalidArg", lambda e, h, b=b: e.js.create_key_value(b))
    case(f"update_key_value-{i}", "ErrInvalidArg", lambda e, h, b=b: e.js.update_key_value(b))
    case(f"key_value-{i}", "ErrInvalidArg", lambda e, h, b=b: e.js.key_value(b))
    case(f"delete_key_value-{i}", "ErrInvalidArg", lambda e, h, b=b: e.js.delete_key_value(b))
    case(f"empty_key_value-{i}", "ErrInvalidArg", lambda e, h, b=b: e.js.empty_key_value(b))
    case(f"create_object_store-{i}", "ErrInvalidArg", lambda e, h, b=b: e.js.create_object_store(b))
    case(f"object_store-{i}", "ErrInvalidArg", lambda e, h, b=b: e.js.object_store(b))
    case(f"delete_object_store-{i}", "ErrInvalidArg", lambda e, h, b=b: e.js.delete_object_store(b))
for i, kw in enumerate([{"history": 0}, {"history": 65}, {"history": "2"}, {"ttl": -1}, {"ttl": NAN},
                        {"max_value_size": -5}, {"storage": "disk"}, {"replicas": 6}, {"replicas": -1},
                        {"replicas": "1"}]):
    case(f"create_key_value-kw-{i}", "ErrInvalidArg", lambda e, h, k=kw: e.js.create_key_value("BADIN_NEW", **k))
BAD_KEYS = [5, None, b"k", "", " ", "a b", ".a", "a.", "a..b", "a*", "a>", "_kv_x", "k\n"]
for i, k in enumerate(BAD_KEYS):
    case(f"kv-get-{i}", "ErrInvalidArg", lambda e, h, k=k: h["kv"].get(k), needs=("kv",))
    case(f"kv-put-{i}", "ErrInvalidArg", lambda e, h, k=k: h["kv"].put(k, b"v"), needs=("kv",))
    case(f"kv-create-{i}", "ErrInvalidArg", lambda e, h, k=k: h["kv"].create(k, b"v"), needs=("kv",))
    case(f"kv-update-{i}", "ErrInvalidArg", lambda e, h, k=k: h["kv"].update(k, b"v", 1), needs=("kv",))
    case(f"kv-delete-{i}", "ErrInvalidArg", lambda e, h, k=k: h["kv"].delete(k), needs=("kv",))
    case(f"kv-purge-{i}", "ErrInvalidArg", lambda e, h, k=k: h["kv"].purge(k), needs=("kv",))
    if k != "_kv_x":  # history takes patterns too, and reading a reserved key is no harm
        case(f"kv-history-{i}", "ErrInvalidArg", lambda e, h, k=k: h["kv"].history(k), needs=("kv",))
    case(f"kv-revert-{i}", "ErrInvalidArg", lambda e, h, k=k: h["kv"].revert(k, 1), needs=("kv",))
for i, p in enumerate([5, None, "", "a b", "a.>.b", ".a", "a..b", [], ["a b"], [5]]):
    case(f"kv-watch-{i}", "ErrInvalidArg", lambda e, h, p=p: h["kv"].watch(p), needs=("kv",))
    case(f"kv-keys-{i}", "ErrInvalidArg", lambda e, h, p=p: h["kv"].keys(p), needs=("kv",))
for i, v in enumerate([5, ["v"], object(), 1.5]):
    case(f"kv-put-value-{i}", "ErrInvalidArg", lambda e, h, v=v: h["kv"].put("k1", v), needs=("kv",))
    case(f"kv-create-value-{i}", "ErrInvalidArg", lambda e, h, v=v: h["kv"].create("k9", v), needs=("kv",))
    case(f"kv-update-value-{i}", "ErrInvalidArg", lambda e, h, v=v: h["kv"].update("k1", v, 1), needs=("kv",))
for i, r in enumerate([0, -1, "1", 1.5, None]):
    if r != 0:  # update(key, value, 0): "only if the key does not exist"
        case(f"kv-update-rev-{i}", "ErrInvalidArg", lambda e, h, r=r: h["kv"].update("k1", b"v", r),
             needs=("kv",))
    case(f"kv-revert-rev-{i}", "ErrInvalidArg", lambda e, h, r=r: h["kv"].revert("k1", r), needs=("kv",))
for i, r in enumerate([0, -1, "1", 1.5]):
    case(f"kv-get-rev-{i}", "ErrInvalidArg", lambda e, h, r=r: h["kv"].get("k1", r), needs=("kv",))
    if r != 0:  # delete(key, 0): no expectation, as without one (test_js_config: kv_delete_revision_0)
        case(f"kv-delete-last-{i}", "ErrInvalidArg", lambda e, h, r=r: h["kv"].delete("k1", r), needs=("kv",))
for i, t in enumerate([-1, NAN, "1"]):
    case(f"kv-watch-heartbeat-{i}", "ErrBadTimeout", lambda e, h, t=t: h["kv"].watch(idle_heartbeat=t),
         needs=("kv",))

# ------------------------------------------------------------------ Object Store
SECTION = "obj"
for i, n in enumerate([5, None, "", b"o", ["o"]]):
    case(f"obj-put-name-{i}", "ErrInvalidArg", lambda e, h, n=n: h["obs"].put(n, b"d"), needs=("obs",))
    case(f"obj-get-name-{i}", "ErrInvalidArg", lambda e, h, n=n: h["obs"].get(n).__anext__(), needs=("obs",))
    case(f"obj-get_bytes-name-{i}", "ErrInvalidArg", lambda e, h, n=n: h["obs"].get_bytes(n), needs=("obs",))
    case(f"obj-get_info-name-{i}", "ErrInvalidArg", lambda e, h, n=n: h["obs"].get_info(n), needs=("obs",))
    case(f"obj-delete-name-{i}", "ErrInvalidArg", lambda e, h, n=n: h["obs"].delete(n), needs=("obs",))
    case(f"obj-add_link-name-{i}", "ErrInvalidArg", lambda e, h, n=n: h["obs"].add_link(n, {"name": "o1"}),
         needs=("obs",))
    case(f"obj-update_meta-name-{i}", "ErrInvalidArg",
         lambda e, h, n=n: h["obs"].update_meta(n, description="d"), needs=("obs",))
    case(f"obj-update_meta-new_name-{i}", "ErrInvalidArg",
         lambda e, h, n=n: h["obs"].update_meta("o1", new_name=n) if n is not None else h["obs"].update_meta(
             "o1", new_name=""), needs=("obs",))
for i, d in enumerate([5, 1.5, object(), [1, 2]]):
    case(f"obj-put-data-{i}", "ErrInvalidArg", lambda e, h, d=d: h["obs"].put("o2", d), needs=("obs",))
for i, cs in enumerate([0, -1, "1", 1.5]):
    case(f"obj-put-chunk-{i}", "ErrInvalidArg", lambda e, h, c=cs: h["obs"].put("o2", b"d", chunk_size=c),
         needs=("obs",))
for i, kw in enumerate([{"description": 5}, {"headers": ["x"]}, {"metadata": "m"}, {"metadata": {"k": 5}}]):
    case(f"obj-put-kw-{i}", "ErrInvalidArg", lambda e, h, k=kw: h["obs"].put("o2", b"d", **k), needs=("obs",))
for i, t in enumerate([5, None, "", {"bucket": OBJ}]):  # a str names an object
    case(f"obj-add_link-target-{i}", "ErrInvalidArg", lambda e, h, t=t: h["obs"].add_link("l1", t),
         needs=("obs",))
for i, b in enumerate(BAD_BUCKETS):
    case(f"obj-add_bucket_link-{i}", "ErrInvalidArg", lambda e, h, b=b: h["obs"].add_bucket_link("l2", b),
         needs=("obs",))
# replicas: one rule for every bucket and stream, 0..5 (0: the server's default; tests/engine/test_js_config.py)
for i, kw in enumerate([{"ttl": -1}, {"ttl": NAN}, {"max_bytes": -5}, {"storage": "disk"}, {"replicas": 6},
                        {"replicas": -1}, {"replicas": True}]):
    case(f"create_object_store-kw-{i}", "ErrInvalidArg",
         lambda e, h, k=kw: e.js.create_object_store("BADIN_NEW_OBJ", **k))


# ------------------------------------------------------------------ the runner
async def _env(url):
    c = await tclnats_py.connect(url)
    e = Env(c)
    e.sub = await c.subscribe("badin.probe")

    async def echo(msg):
        await msg.respond(b"pong:" + msg.data)
    e.cb_sub = await c.subscribe("badin.svc", cb=echo)
    await c.flush()
    return e


async def _still_working(e: Env, tag: str) -> None:
    c = e.c
    assert c.is_connected, f"{tag}: the connection is {c.status}"
    assert c.last_error is None, f"{tag}: {c.last_error!r}"
    assert e.sub.is_active and e.cb_sub.is_active
    c.publish("badin.probe", b"probe")
    m = await e.sub.next_msg(5)
    assert m.data == b"probe"
    r = await c.request("badin.svc", b"x", timeout=5)
    assert r.data == b"pong:x"


async def _one(e: Env, cid, code, needs, fn):
    """Run one case on ``e``; returns a failure text or None."""
    h = {}
    for n in needs:
        h[n] = await getattr(e, n)()
    await e.c.flush()  # what binding them queued (an UNSUB...) is out
    eng = e.c._engine
    out_before, pending_before = eng.stats["out_msgs"], eng.pending_bytes
    subs_before = set(eng.subs)
    r = None
    try:
        r = fn(e, h)
        if inspect.isawaitable(r):
            await asyncio.wait_for(r, 5)
    except asyncio.TimeoutError:
        return f"{cid}: hung instead of raising {code}"
    except NatsError as err:
        if err.code != code:
            return f"{cid}: {err.code} ({err}) instead of {code}"
        if not isinstance(err, getattr(tclnats_py, code)) or not str(err):
            return f"{cid}: {err!r} is not a {code} with a message"
    except Exception as err:  # noqa: BLE001  what the test is looking for
        return f"{cid}: {type(err).__name__}: {err} instead of {code}"
    else:
        if inspect.iscoroutine(r):
            r.close()
        return f"{cid}: no error (expected {code})"
    # nothing went on the wire, nothing was left behind
    if eng.stats["out_msgs"] != out_before or eng.pending_bytes != pending_before:
        return f"{cid}: {code} raised after something was queued for the wire"
    if set(eng.subs) != subs_before:
        return f"{cid}: {code} raised but the subscriptions changed"
    return None


@pytest.mark.parametrize("section", list(CASES))
def test_bad_input(js_setup, section):
    """Every case of a section on one connection, checking after each one
    that the connection, its subscriptions and requests still work; a case
    that broke the connection is reported and the next ones get a new one."""
    async def go():
        failures = []
        e = await _env(js_setup.url)
        for cid, code, needs, fn in CASES[section]:
            fail = await _one(e, cid, code, needs, fn)
            await asyncio.sleep(0)  # stray tasks get a chance to do damage
            try:
                await _still_working(e, cid)
            except (AssertionError, NatsError) as err:
                fail = (fail + "; " if fail else f"{cid}: ") + f"connection damaged: {err!r}"
                await e.c.close()
                e = await _env(js_setup.url)
            if fail:
                failures.append(fail)
        await e.c.close()
        return failures
    failures = asyncio.run(asyncio.wait_for(go(), 120))
    assert not failures, f"{len(failures)} of {len(CASES[section])} cases failed:\n" + "\n".join(failures)


def test_first_bad_request_leaves_no_state(js_setup):
    """A bad first request does not even make the shared reply subscription."""
    async def go():
        c = await tclnats_py.connect(js_setup.url)
        await c.flush()
        for subj in ("a b", 5, "x.*"):
            with pytest.raises(tclnats_py.ErrBadSubject):
                await c.request(subj, b"")
        assert not c._engine.subs and c._engine.pending_bytes == 0
        await c.close()
    run(go())


def test_bad_calls_in_callbacks_keep_the_reader_going(js_setup):
    """Bad input inside a callback goes to error_cb; the connection reads on."""
    async def go():
        errors = []
        c = await tclnats_py.connect(js_setup.url, error_cb=errors.append)
        got = []

        async def bad(msg):
            got.append(msg.data)
            if msg.data == b"bad":
                c.publish("a b", b"x")  # ErrBadSubject, raised in the callback
            await msg.respond(b"ok")
        await c.subscribe("badin.cb", cb=bad)
        with pytest.raises(tclnats_py.ErrTimeout):
            await c.request("badin.cb", b"bad", timeout=0.3)
        r = await c.request("badin.cb", b"good", timeout=5)
        assert r.data == b"ok" and got == [b"bad", b"good"]
        assert [e.code for e in errors] == ["ErrBadSubject"] and c.is_connected
        await c.close()
    run(go())


def test_accepted_edge_inputs(js_setup):
    """What is documented as accepted: str payloads (UTF-8), bytearray and
    memoryview, None as an empty payload, huge finite timeouts, timeout 0
    for flush, a huge fetch batch."""
    async def go():
        e = await _env(js_setup.url)
        c = e.c
        c.publish("badin.probe", "héllo")
        assert (await e.sub.next_msg(5)).data == "héllo".encode()
        c.publish("badin.probe", bytearray(b"ba"))
        assert (await e.sub.next_msg(5)).data == b"ba"
        c.publish("badin.probe", memoryview(b"mv"))
        assert (await e.sub.next_msg(5)).data == b"mv"
        c.publish("badin.probe", None)
        assert (await e.sub.next_msg(5)).data == b""
        r = await c.request("badin.svc", "s", timeout=1e9)
        assert r.data == b"pong:s"
        r = await c.request("badin.svc", b"i", timeout=10**12)
        assert r.data == b"pong:i"
        assert len(await c.request_many("badin.svc", b"m", max_msgs=1, timeout=1e9)) == 1
        await c.flush(1e9)
        cons = await e.js.consumer(STREAM, CONSUMER)
        msgs = await cons.fetch(10**6, expires=0.2)
        assert msgs
        for m in msgs:
            await m.nak()
        ack = await e.js.publish("badin.s.x", "text", timeout=1e9)
        assert ack.stream == STREAM
        kv = await e.js.key_value(KV)
        rev = await kv.put("k.str", "text")
        assert (await kv.get("k.str")).value == b"text" and rev > 0
        await _still_working(e, "edge")
        await c.close()
    run(go())
