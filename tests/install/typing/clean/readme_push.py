"""docs/python.md's push-consumer lines (section "JetStream, Key-Value, Object Store"), in a typed function."""

from __future__ import annotations

from tclnats_py.aio.jetstream import JetStream, JsMsg


async def handle(msg: JsMsg) -> None:
    await msg.ack()


async def readme_push(js: JetStream) -> None:
    sub = await js.push_subscribe("ORDERS", durable_name="AUDIT", deliver_subject="audit.orders",
                                  deliver_group="auditors", flow_control=True, idle_heartbeat=5)
    async for msg in sub:                       # or cb=..., or await sub.next_msg(timeout)
        await msg.ack()
    sub2 = await js.push_subscribe("ORDERS", consumer="AUDIT", cb=handle)   # bind to an existing push consumer
    await sub.unsubscribe()
    await sub2.unsubscribe()
