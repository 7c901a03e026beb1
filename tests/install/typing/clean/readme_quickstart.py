import asyncio, tclnats_py

async def main() -> None:
    nc = await tclnats_py.connect("nats://localhost:4222", name="app",    # nats-py's names, times in seconds
                                  reconnect_time_wait=2, max_reconnect_attempts=10)
    sub = await nc.subscribe("greet.*")                                  # or cb=..., queue=..., max_msgs=...
    await nc.publish("greet.py", b"hello", headers={"K": ["v1", "v2"]})  # await: waits if the socket is behind
    msg = await sub.next_msg(timeout=1)                                  # or: async for msg in sub
    assert msg.headers is not None                                       # None for a message without headers
    print(msg.headers["K"], msg.headers.get_all("K"))                    # "v1" ['v1', 'v2']
    await nc.subscribe("svc", cb=lambda m: m.respond(b"re:" + m.data))
    reply = await nc.request("svc", b"ping", timeout=1)                  # ErrTimeout, ErrNoResponders

    js = nc.jetstream()
    await js.create_stream("ORDERS", subjects=["orders.*"])
    ack = await js.publish("orders.new", b"apple", msg_id="o-1")
    cons = await js.create_consumer("ORDERS", durable_name="PACKER")
    for m in await cons.fetch(10, max_wait=1.0):                         # waits up to max_wait (default 30 s)
        await m.ack()
    kv = await js.create_key_value("SETTINGS", history=5)
    await kv.put("theme", b"dark")
    print((await kv.get("theme")).value)
    await nc.close()

asyncio.run(main())
