"""Core NATS with types: connect with typed options, publish/subscribe
(callback, iteration, next_msg), headers, request/reply, request_many,
flush, drain.  tests/install/test_typing.py type-checks it and runs it."""

from __future__ import annotations

import asyncio
import sys

import tclnats_py
from tclnats_py import ClientMsg, Headers


async def main(url: str) -> None:
    statuses: list[str] = []

    def on_status(status: str) -> None:
        statuses.append(status)

    async def on_error(err: Exception) -> None:
        print("async error:", err)

    nc: tclnats_py.Client = await tclnats_py.connect(
        url, name="typed-core", connect_timeout=2, reconnect_time_wait=0.5, max_reconnect_attempts=3,
        ping_interval=60, no_echo=False, status_cb=on_status, error_cb=on_error, drain_timeout=5)
    assert nc.is_connected and nc.max_payload > 0

    # a callback subscription (a coroutine function of the message)
    got: list[bytes] = []
    done = asyncio.Event()

    async def on_msg(msg: ClientMsg) -> None:
        got.append(msg.data)
        if len(got) == 2:
            done.set()

    cb_sub: tclnats_py.Subscription = await nc.subscribe("typed.cb.*", cb=on_msg)
    await nc.publish("typed.cb.a", b"one")
    await nc.publish("typed.cb.b", "two")  # str goes as UTF-8
    await asyncio.wait_for(done.wait(), 5)
    assert got == [b"one", b"two"]
    await cb_sub.unsubscribe()

    # next_msg and headers
    sub = await nc.subscribe("typed.hdr")
    await nc.publish("typed.hdr", b"body", headers={"Trace-Id": "t-1", "K": ["v1", "v2"]})
    msg = await sub.next_msg(timeout=2)
    headers: Headers | None = msg.headers
    assert headers is not None
    first: str = headers["K"]
    every: list[str] = headers.get_all("K")
    assert (first, every, msg.header("Trace-Id")) == ("v1", ["v1", "v2"], "t-1")

    await sub.unsubscribe()

    # iteration, ended by max_msgs
    it = await nc.subscribe("typed.iter", max_msgs=2)
    await nc.publish("typed.iter", b"x")
    await nc.publish("typed.iter", b"y")
    seen = [m.data async for m in it]
    assert seen == [b"x", b"y"]

    # request/reply
    async def responder(m: ClientMsg) -> None:
        await m.respond(b"re:" + m.data)

    await nc.subscribe("typed.svc", queue="workers", cb=responder)
    await nc.flush(timeout=2)
    reply: ClientMsg = await nc.request("typed.svc", b"ping", timeout=2)
    assert reply.data == b"re:ping"
    replies: list[ClientMsg] = await nc.request_many("typed.svc", b"all", max_msgs=1, timeout=2)
    assert [r.data for r in replies] == [b"re:all"]
    try:
        await nc.request("typed.nobody", b"", timeout=0.5)
        raise AssertionError("no responders expected")
    except tclnats_py.ErrNoResponders as e:
        assert e.code == "ErrNoResponders"

    await nc.drain()
    assert nc.is_closed and "closed" in statuses


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "nats://127.0.0.1:4222"))
