"""Twelve common nats-py usage patterns, run on tclnats_py's asyncio face.

Each pattern is written the way nats-py's README and examples show it, with
``import tclnats_py as nats`` instead of ``import nats``.  Run it against a
server with JetStream (``nats-server -js``)::

    python examples/natspy_patterns.py [nats://127.0.0.1:4222]

It prints one line per pattern and exits non-zero on the first one that
does not behave; tests/natspy/test_natspy_patterns.py runs it in CI.

The patterns:

 1. connect with nats-py's options and callbacks (seconds; reconnect_time_wait, no_echo, ...), close
 2. subscribe with a coroutine callback, publish (``await nc.publish``)
 3. ``sub.next_msg(timeout=...)`` and ``async for msg in sub.messages``
 4. queue groups
 5. request/reply: ``msg.respond``, ``nc.request(..., timeout=...)``, a timeout
 6. headers: publish a dict of str, read ``msg.headers["K"]``
 7. auto-unsubscribe after n messages, unsubscribe
 8. ``nc.flush(timeout=...)``, ``nc.drain()``
 9. JetStream publish and its PubAck (``ack.stream``, ``ack.seq``)
10. JetStream pull consumer: fetch a batch, ack
11. JetStream ordered consumption of a stream from the start
12. Key-Value: create a bucket, put, get, update with the revision, keys, watch

Edits still needed against nats-py code, and why:

* imports: ``import tclnats_py as nats``; the errors are ``nats.ErrTimeout``,
  ``nats.ErrNoResponders``, ``nats.ErrKeyNotFound`` ... (nats-py:
  ``nats.errors.TimeoutError``, ``NoRespondersError``,
  ``nats.js.errors.KeyNotFoundError``).  ErrTimeout is a ``TimeoutError`` and
  an ``asyncio.TimeoutError``, so ``except asyncio.TimeoutError`` code works
  unchanged.  The codes are nats-tcl's, shared with the Tcl face.
* JetStream management is nats.go jetstream's API, not nats-py's legacy one:
  ``js.add_stream(name=..., subjects=...)`` is
  ``js.create_stream(name, subjects=...)``; ``js.pull_subscribe(subject,
  durable)`` is ``js.create_consumer(stream, durable_name=...)`` then
  ``consumer.fetch(batch, max_wait)`` (nats-py's ``fetch(batch, timeout)``);
  ``js.subscribe(subject, ordered_consumer=True)`` is
  ``js.ordered_consumer(stream, filter_subject)``.  The consumer objects carry
  the methods, as in nats.go.
* ``js.publish`` takes ``msg_id=`` / ``expected_stream=`` ... keywords where
  nats-py takes ``headers={"Nats-Msg-Id": ...}`` or ``stream=``.
* KV: ``entry.revision`` is the same; ``kv.update(key, value, last=rev)``
  (nats-py: ``last=`` too); ``kv.create`` of an existing key raises
  ``nats.ErrKeyExists`` (nats-py: KeyWrongLastSequenceError); ``w = await
  kv.watch(key)`` then ``await w.updates(timeout)`` as nats-py (``None``
  once at the end of the initial values), or ``async for``.
"""

from __future__ import annotations

import asyncio
import sys
from typing import TYPE_CHECKING, Any, Awaitable, Callable

import tclnats_py as nats

if TYPE_CHECKING:  # (annotations only)
    from tclnats_py.aio import ClientMsg
    from tclnats_py.aio.jetstream import JetStream

URL = sys.argv[1] if len(sys.argv) > 1 else "nats://127.0.0.1:4222"


def check(cond: bool, what: str) -> None:
    if not cond:
        raise SystemExit(f"pattern failed: {what}")


async def p01_connect() -> None:
    events: list[Any] = []

    async def error_cb(e: Exception) -> None:
        events.append(("error", e))

    async def disconnected_cb() -> None:
        events.append("disconnected")

    async def reconnected_cb() -> None:
        events.append("reconnected")

    async def closed_cb() -> None:
        events.append("closed")

    nc = await nats.connect(servers=[URL], name="patterns", error_cb=error_cb, disconnected_cb=disconnected_cb,
                            reconnected_cb=reconnected_cb, closed_cb=closed_cb, reconnect_time_wait=2,
                            max_reconnect_attempts=10, connect_timeout=2, ping_interval=120, no_echo=False,
                            dont_randomize=True, allow_reconnect=True, drain_timeout=30, flush_timeout=10)
    check(nc.is_connected, "connected")
    check(nc.max_payload > 0, "max_payload")
    await nc.close()
    await asyncio.sleep(0.05)
    check(nc.is_closed and "closed" in events, "closed_cb")


async def p02_subscribe_cb(nc: nats.Client) -> None:
    got: list[tuple[str, str]] = []
    done = asyncio.Event()

    async def message_handler(msg: ClientMsg) -> None:
        subject = msg.subject
        data = msg.data.decode()
        got.append((subject, data))
        if len(got) == 2:
            done.set()

    await nc.subscribe("greet.*", cb=message_handler)
    await nc.publish("greet.joe", b"Hello")
    await nc.publish("greet.pam", b"Hi")
    await asyncio.wait_for(done.wait(), 5)
    check(got == [("greet.joe", "Hello"), ("greet.pam", "Hi")], "callback subscription")


async def p03_next_msg_and_messages(nc: nats.Client) -> None:
    sub = await nc.subscribe("updates")
    await nc.publish("updates", b"one")
    msg = await sub.next_msg(timeout=1)
    check(msg.data == b"one", "next_msg")
    for i in range(3):
        await nc.publish("updates", f"n{i}".encode())
    seen: list[bytes] = []
    async for msg in sub.messages:
        seen.append(msg.data)
        if len(seen) == 3:
            break
    check(seen == [b"n0", b"n1", b"n2"], "async for sub.messages")
    try:
        await sub.next_msg(timeout=0.1)
        check(False, "next_msg timeout")
    except asyncio.TimeoutError:  # ErrTimeout is an asyncio.TimeoutError
        pass
    await sub.unsubscribe()


async def p04_queue_groups(nc: nats.Client) -> None:
    counts = {"a": 0, "b": 0}

    def worker(name: str) -> Callable[[ClientMsg], Awaitable[None]]:
        async def cb(msg: ClientMsg) -> None:
            counts[name] += 1
        return cb
    await nc.subscribe("jobs", queue="workers", cb=worker("a"))
    await nc.subscribe("jobs", queue="workers", cb=worker("b"))
    await nc.flush()
    for _ in range(100):
        await nc.publish("jobs", b"job")
    await nc.flush()
    for _ in range(100):
        if counts["a"] + counts["b"] == 100:
            break
        await asyncio.sleep(0.02)
    check(counts["a"] + counts["b"] == 100, "each job once in the group")


async def p05_request_reply(nc: nats.Client) -> None:
    async def help_request(msg: ClientMsg) -> None:
        await msg.respond(b"I can help " + msg.data)

    await nc.subscribe("help", "workers", help_request)
    await nc.flush()
    response = await nc.request("help", b"me", timeout=1)
    check(response.data == b"I can help me", "request/reply")
    try:
        await nc.request("nobody.home", b"", timeout=0.5)
        check(False, "no responders")
    except nats.ErrNoResponders:  # nats-py: nats.errors.NoRespondersError
        pass


async def p06_headers(nc: nats.Client) -> None:
    sub = await nc.subscribe("hdr")
    await nc.publish("hdr", b"body", headers={"Foo": "Bar", "Trace-Id": "abc"})
    msg = await sub.next_msg(timeout=1)
    assert msg.headers is not None  # (None for a message without headers)
    check(msg.headers["Foo"] == "Bar" and msg.headers.get("Trace-Id") == "abc", "headers read as str")
    check(msg.headers["foo"] == "Bar", "case-insensitive lookup")
    await sub.unsubscribe()


async def p07_auto_unsubscribe(nc: nats.Client) -> None:
    sub = await nc.subscribe("auto")
    await sub.unsubscribe(limit=2)
    for i in range(5):
        await nc.publish("auto", b"%d" % i)
    got: list[bytes] = []
    async for msg in sub.messages:
        got.append(msg.data)
    check(got == [b"0", b"1"], "auto-unsubscribe after 2")


async def p08_flush_and_drain() -> None:
    nc = await nats.connect(URL)
    got: list[bytes] = []

    async def slow(msg: ClientMsg) -> None:
        await asyncio.sleep(0.01)
        got.append(msg.data)
    await nc.subscribe("drain.me", cb=slow)
    await nc.flush(timeout=1)
    for i in range(20):
        await nc.publish("drain.me", b"%d" % i)
    await nc.flush(timeout=1)
    await nc.drain()  # every message handled before the close
    check(len(got) == 20 and nc.is_closed, "drain")


async def p09_jetstream_publish(js: JetStream) -> None:
    await js.create_stream("PATTERNS", subjects=["patterns.>"])  # nats-py: add_stream(name=..., subjects=...)
    ack = await js.publish("patterns.orders", b"order-1")
    check(ack.stream == "PATTERNS" and ack.seq == 1, "PubAck")
    for i in range(2, 6):
        await js.publish("patterns.orders", f"order-{i}".encode())


async def p10_pull_fetch(js: JetStream) -> None:
    consumer = await js.create_consumer("PATTERNS", durable_name="psub")  # nats-py: pull_subscribe
    msgs = await consumer.fetch(5, max_wait=2)
    for msg in msgs:
        await msg.ack()
    check([m.data for m in msgs] == [f"order-{i}".encode() for i in range(1, 6)], "fetch a batch")


async def p11_ordered(js: JetStream) -> None:
    oc = js.ordered_consumer("PATTERNS", "patterns.orders")  # nats-py: js.subscribe(..., ordered_consumer=True)
    seen: list[bytes] = []
    async for msg in oc:
        seen.append(msg.data)
        if len(seen) == 5:
            break
    await oc.stop()
    check(seen[0] == b"order-1" and len(seen) == 5, "ordered consumer")


async def p12_key_value(js: JetStream) -> None:
    kv = await js.create_key_value(bucket="PATTERNS_KV")
    rev = await kv.put("hello", b"world")
    entry = await kv.get("hello")
    check(entry.key == "hello" and entry.value == b"world" and entry.revision == rev, "kv get")
    rev2 = await kv.update("hello", b"there", last=rev)
    check(rev2 > rev, "kv update")
    try:
        await kv.update("hello", b"late", last=rev)
        check(False, "stale update refused")
    except nats.ErrWrongLastSequence:
        pass
    check(await kv.keys() == ["hello"], "kv keys")
    watcher = await kv.watch("hello")
    first = await watcher.updates(timeout=5)
    check(first is not None and first.value == b"there", "kv watch: initial value")
    await watcher.stop()
    await js.delete_key_value("PATTERNS_KV")


async def main() -> None:
    await p01_connect()
    print("1 connect with options and callbacks: ok")
    nc = await nats.connect(URL)
    try:
        core: tuple[Callable[[nats.Client], Awaitable[None]], ...] = (
            p02_subscribe_cb, p03_next_msg_and_messages, p04_queue_groups, p05_request_reply, p06_headers,
            p07_auto_unsubscribe)
        for i, p in enumerate(core, start=2):
            await p(nc)
            print(f"{i} {p.__name__[4:].replace('_', ' ')}: ok")
        await p08_flush_and_drain()
        print("8 flush and drain: ok")
        js = nc.jetstream()
        try:
            await js.delete_stream("PATTERNS")
        except nats.ErrStreamNotFound:
            pass
        try:
            jspatterns: tuple[Callable[[JetStream], Awaitable[None]], ...] = (
                p09_jetstream_publish, p10_pull_fetch, p11_ordered, p12_key_value)
            for i, q in enumerate(jspatterns, start=9):
                await q(js)
                print(f"{i} {q.__name__[4:].replace('_', ' ')}: ok")
        finally:
            await js.delete_stream("PATTERNS")
    finally:
        await nc.close()


if __name__ == "__main__":
    asyncio.run(main())
