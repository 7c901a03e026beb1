"""README's Python asyncio quick start, as it is."""

import asyncio

import tclnats_py


async def main() -> None:
    nc = await tclnats_py.connect("nats://localhost:4222", name="quickstart")   # times in seconds
    sub = await nc.subscribe("greet.*")
    await nc.publish("greet.py", b"hello from Python")
    msg = await sub.next_msg(timeout=1)
    print(msg.subject, msg.data)
    js = nc.jetstream()
    kv = await js.create_key_value("SETTINGS", storage="memory")
    await kv.put("theme", b"dark")
    print("theme =", (await kv.get("theme")).value)
    await js.delete_key_value("SETTINGS")
    await nc.close()


asyncio.run(main())
