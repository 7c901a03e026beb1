"""The blocking face's figures for compat/bench_py.py: the rows it can run,
measured the way bench_py measures the asyncio sides (same subjects' shape,
same counts, the server's count of what was published checked).

    publish   COUNT publishes, then a flush
    deliver   COUNT publishes to a callback subscription on a second connection
    request   sequential requests to the round's echo responder, a process of its
              own (compat/bench_raw.py EchoResponder) that every requester of
              bench_py's round talks to: the requester's cost alone

and, once the blocking face has JetStream (``sync.Client.jetstream``, the
syncjs work: the asyncio face's names without ``await``), js_publish (one
at a time, each PubAck awaited), kv_put and kv_get (100 keys of a memory
bucket).  Without it those rows are absent from the column (and the table
says "-").
"""

from __future__ import annotations

import json
import os
import threading
import time

PAYLOAD = b"x" * 128
#: the rows this side may give
ROWS = ("publish", "deliver", "request", "js_publish", "kv_put", "kv_get")


def _figure(n: int, t: float, c: float) -> tuple:
    """(messages per second, CPU microseconds of this process per message)."""
    return n / (time.perf_counter() - t), (time.process_time() - c) / n * 1e6


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise RuntimeError(f"sync: {what}")


def _publish_figures(a, b, count: int, rows, received_from, pubname: str, out: dict) -> None:
    publish = a.publish
    if "publish" in rows:
        t, c = time.perf_counter(), time.process_time()
        for _ in range(count):
            publish("bp.sync.pub", PAYLOAD)
        a.flush(30)
        out["publish"] = _figure(count, t, c)
        if received_from is not None:
            sent = received_from(pubname)
            _check(sent == count, f"publish: the server received {sent} of {count} messages")
    if "deliver" in rows:
        done = threading.Event()
        got = [0]

        def on_msg(msg) -> None:
            got[0] += 1
            if got[0] == count:
                done.set()
        b.subscribe("bp.sync.deliver", cb=on_msg, pending_msgs_limit=-1, pending_bytes_limit=-1)
        b.flush()
        t, c = time.perf_counter(), time.process_time()
        for _ in range(count):
            publish("bp.sync.deliver", PAYLOAD)
        a.flush(30)
        _check(done.wait(120), f"deliver: {got[0]} of {count} messages came")
        out["deliver"] = _figure(count, t, c)


def _request_figure(a, echo: str, rounds: int, out: dict) -> None:
    request = a.request
    wrong = 0
    t, c = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        if request(echo, PAYLOAD, timeout=5).data != PAYLOAD:
            wrong += 1
    out["request"] = _figure(rounds, t, c)
    _check(not wrong, f"request: {wrong} of {rounds} replies differ from the request")


def _js_figures(a, rounds: int, rows, out: dict) -> None:
    """js_publish, kv_put, kv_get through the blocking JetStream face (the
    asyncio face's calls without await)."""
    stream, bucket = "BP_SYNC", "BP_SYNC_KV"
    for s in (stream, "KV_" + bucket):
        a.request(f"$JS.API.STREAM.DELETE.{s}", b"", timeout=5)
    js = a.jetstream()
    if "js_publish" in rows:
        cfg = json.dumps({"name": stream, "subjects": ["bpjs.sync.>"], "storage": "memory"}).encode()
        a.request(f"$JS.API.STREAM.CREATE.{stream}", cfg, timeout=5)
        acked = 0
        t, c = time.perf_counter(), time.process_time()
        for _ in range(rounds):
            if js.publish("bpjs.sync.x", PAYLOAD).seq > 0:
                acked += 1
        out["js_publish"] = _figure(rounds, t, c)
        _check(acked == rounds, f"js_publish: {acked} of {rounds} publishes acked")
        a.request(f"$JS.API.STREAM.DELETE.{stream}", b"", timeout=5)
    if "kv_put" in rows or "kv_get" in rows:
        kv = js.create_key_value(bucket, storage="memory")
        keys = [f"key.{i}" for i in range(100)]
        put, get = kv.put, kv.get
        t, c = time.perf_counter(), time.process_time()
        for i in range(rounds):
            revision = put(keys[i % 100], PAYLOAD)
        out["kv_put"] = _figure(rounds, t, c)
        _check(revision == rounds, f"kv_put: the last of {rounds} puts has revision {revision}")
        wrong = 0
        t, c = time.perf_counter(), time.process_time()
        for i in range(rounds):
            if get(keys[i % 100]).value != PAYLOAD:
                wrong += 1
        out["kv_get"] = _figure(rounds, t, c)
        _check(not wrong, f"kv_get: {wrong} of {rounds} gets read another value")
        a.request(f"$JS.API.STREAM.DELETE.KV_{bucket}", b"", timeout=5)


def workload(url: str, count: int, rows=ROWS, received_from=None, echo: str | None = None) -> dict:
    """The blocking face's figures of ``rows``; ``received_from(name)``: the
    server's count of what the connection ``name`` published (bench_py's
    monitor check), or None; ``echo``: the subject of the request row's
    echo responder (None: one of this call's own)."""
    from tclnats_py import sync
    out: dict = {}
    pubname = f"bp-pub-sync-{os.getpid()}-{time.monotonic_ns()}"
    a = sync.connect(url, name=pubname)
    b = sync.connect(url)
    try:
        _publish_figures(a, b, count, rows, received_from, pubname, out)
        rounds = max(500, count // 50)
        if "request" in rows:
            if echo:
                _request_figure(a, echo, rounds, out)
            else:
                from tclnats_py.compat.bench_raw import EchoResponder
                with EchoResponder(url) as subject:
                    _request_figure(a, subject, rounds, out)
        if hasattr(a, "jetstream") and any(r in rows for r in ("js_publish", "kv_put", "kv_get")):
            _js_figures(a, rounds, rows, out)
    finally:
        a.close()
        b.close()
    return out
