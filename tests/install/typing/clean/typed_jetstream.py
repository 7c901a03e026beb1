"""JetStream with types: a stream, publish and its PubAck, publish_async,
the stream's and a consumer's info, fetch, consume, messages(), an ordered
consumer.  tests/install/test_typing.py type-checks it and runs it."""

from __future__ import annotations

import asyncio
import sys

import tclnats_py
from tclnats_py.aio.jetstream import (ConsumerConfig, ConsumerInfo, JetStream, JsMsg, PubAck, StreamConfig,
                                      StreamInfo, StreamState)


async def main(url: str) -> None:
    nc = await tclnats_py.connect(url, name="typed-js")
    js: JetStream = nc.jetstream(timeout=5)
    try:
        await js.delete_stream("TYPED_ORDERS")
    except tclnats_py.ErrStreamNotFound:
        pass
    stream = await js.create_stream("TYPED_ORDERS", subjects=["typed.orders.*"], storage="memory", max_age=3600)
    info: StreamInfo = stream.info
    config: StreamConfig = info.config
    assert config.max_age == 3600 and info["config"]["max_age"] == 3600 * 10**9  # typed: s; the JSON: ns
    assert info.created_at is not None

    ack: PubAck = await js.publish("typed.orders.new", b"apple", msg_id="o-1")
    stream_name: str = ack.stream
    seq: int = ack.seq
    assert (stream_name, seq, ack.duplicate) == ("TYPED_ORDERS", 1, False)
    again = await js.publish("typed.orders.new", b"apple", msg_id="o-1")
    assert again.duplicate
    futures = [await js.publish_async("typed.orders.new", f"order-{i}".encode()) for i in range(2, 6)]
    await js.publish_async_complete(timeout=5)
    acks: list[PubAck] = [f.result() for f in futures]
    assert [a.seq for a in acks] == [2, 3, 4, 5]

    state: StreamState = (await stream.refresh()).state
    messages: int = state.messages
    assert messages == 5 and state.last_seq == 5

    cons = await stream.create_consumer(ConsumerConfig(durable_name="PACKER", ack_wait=30.0))
    cinfo: ConsumerInfo = cons.info
    assert cinfo.name == "PACKER" and cinfo.config.ack_wait == 30.0 and cinfo.stream_name == "TYPED_ORDERS"
    batch: list[JsMsg] = await cons.fetch(2, max_wait=2.0)
    for m in batch:
        await m.ack_sync()
    assert [m.data for m in batch] == [b"apple", b"order-2"]
    delivered: int = (await cons.refresh()).delivered.stream_seq
    assert delivered == 2

    got: list[bytes] = []
    done = asyncio.Event()

    async def handle(msg: JsMsg) -> None:
        got.append(msg.data)
        await msg.ack()
        if len(got) == 3:
            done.set()

    ctx = cons.consume(handle, max_messages=10)
    await asyncio.wait_for(done.wait(), 5)
    await ctx.stop()
    assert got == [b"order-3", b"order-4", b"order-5"]

    oc = js.ordered_consumer("TYPED_ORDERS", "typed.orders.*")
    seen: list[bytes] = []
    async for msg in oc:
        seen.append(msg.data)
        if len(seen) == 5:
            break
    await oc.stop()
    assert seen[0] == b"apple" and len(seen) == 5

    names: list[str] = await js.stream_names()
    assert "TYPED_ORDERS" in names
    assert await js.delete_stream("TYPED_ORDERS")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "nats://127.0.0.1:4222"))
