"""Lines that must fail type checking, each for its own reason.

tests/install/test_typing.py runs mypy --strict and pyright (strict) on this file
and checks, line by line, that every line marked ``# must fail:`` gets an
error with the mypy code and the pyright rule named there, and that no
other line gets one (the setup lines are correct code).  Not run.
"""

from __future__ import annotations

import tclnats_py
from tclnats_py import sync
from tclnats_py.aio.jetstream import ConsumerInfo, JetStream, PubAck, StreamInfo
from tclnats_py.aio.kv import KeyValue, KvEntry
from tclnats_py.aio.objectstore import ObjectInfo, ObjectStore


async def must_fail(url: str, nc: tclnats_py.Client, js: JetStream, kv: KeyValue, obs: ObjectStore,
                    info: StreamInfo, cinfo: ConsumerInfo, ack: PubAck, entry: KvEntry, oinfo: ObjectInfo) -> None:
    await nc.request("svc", 1)  # must fail: mypy[arg-type] pyright[reportArgumentType]
    await tclnats_py.connect(url, conect_timeout=2)  # must fail: mypy[call-arg] pyright[reportCallIssue]
    await tclnats_py.connect(url, connect_timeout="2")  # must fail: mypy[arg-type] pyright[reportArgumentType]
    await tclnats_py.connect(url, retry_on_failed_conect=True)  # must fail: mypy[call-arg] pyright[reportCallIssue]
    tclnats_py.Client(url, max_reconect_attempts=3)  # must fail: mypy[call-arg] pyright[reportCallIssue]
    await tclnats_py.connect(url, error_cb=lambda: None)  # must fail: mypy[arg-type] pyright[reportArgumentType]
    await tclnats_py.conect(url)  # must fail: mypy[attr-defined] pyright[reportAttributeAccessIssue]
    print(info.stat)  # must fail: mypy[attr-defined] pyright[reportAttributeAccessIssue]
    print(info.state.msgs)  # must fail: mypy[attr-defined] pyright[reportAttributeAccessIssue]
    print(info.state.messages.upper())  # must fail: mypy[attr-defined] pyright[reportAttributeAccessIssue]
    print(cinfo.num_pendng)  # must fail: mypy[attr-defined] pyright[reportAttributeAccessIssue]
    print(ack.sequence)  # must fail: mypy[attr-defined] pyright[reportAttributeAccessIssue]
    print(oinfo.length)  # must fail: mypy[attr-defined] pyright[reportAttributeAccessIssue]
    tclnats_py.Msg("subject", "text payload")  # must fail: mypy[arg-type] pyright[reportArgumentType]
    text: str = entry.value  # must fail: mypy[assignment] pyright[reportAssignmentType]
    blob: str = await obs.get_bytes("name")  # must fail: mypy[assignment] pyright[reportAssignmentType]
    await nc.publish(123, b"x")  # must fail: mypy[arg-type] pyright[reportArgumentType]
    await nc.request("svc", b"x", timeout="1")  # must fail: mypy[arg-type] pyright[reportArgumentType]
    await nc.subscribe("s", cb=lambda: None)  # must fail: mypy[arg-type] pyright[reportArgumentType]
    msg = await nc.request("svc", b"x")
    print(msg.headers["K"])  # must fail: mypy[index] pyright[reportOptionalSubscript]
    await nc.publish(msg.reply, b"answer")  # must fail: mypy[arg-type] pyright[reportArgumentType]
    await kv.put("key", 1)  # must fail: mypy[arg-type] pyright[reportArgumentType]
    await js.publish("orders.new", b"x", msg_id=5)  # must fail: mypy[arg-type] pyright[reportArgumentType]
    seq: str = (await js.publish("orders.new", b"x")).seq  # must fail: mypy[assignment] pyright[reportAssignmentType]
    await js.create_stream("ORDERS", subjectz=["orders.*"])  # must fail: mypy[call-arg] pyright[reportCallIssue]
    await js.create_stream("ORDERS", subjects=["orders.*"], max_age="1h")  # must fail: mypy[arg-type] pyright[reportArgumentType]
    await js.create_consumer("ORDERS", durable="PACKER")  # must fail: mypy[call-arg] pyright[reportCallIssue]
    await js.create_consumer("ORDERS", durable_name="PACKER", ack_wait="30s")  # must fail: mypy[arg-type] pyright[reportArgumentType]
    await js.create_key_value("SETTINGS", histroy=5)  # must fail: mypy[call-arg] pyright[reportCallIssue]
    await js.create_key_value("SETTINGS", ttl="1d")  # must fail: mypy[arg-type] pyright[reportArgumentType]
    nc.jetstream(publish_async_max_pendin=5)  # must fail: mypy[call-arg] pyright[reportCallIssue]
    await obs.put("name", 123)  # must fail: mypy[arg-type] pyright[reportArgumentType]
    print(text, blob, seq)


def must_fail_sync(url: str, snc: sync.Client, ssub: sync.Subscription) -> None:
    sync.connect(url, conect_timeout=2)  # must fail: mypy[call-arg] pyright[reportCallIssue]
    sync.connect(url, connect_timeout="2")  # must fail: mypy[arg-type] pyright[reportArgumentType]
    snc.request("svc", 1)  # must fail: mypy[arg-type] pyright[reportArgumentType]
    snc.subscribe("s", cb=lambda: None)  # must fail: mypy[arg-type] pyright[reportArgumentType]
    text: str = ssub.next_msg(1).data  # must fail: mypy[assignment] pyright[reportAssignmentType]
    reply = snc.request("svc", b"x")
    snc.publish(reply.reply, b"answer")  # must fail: mypy[arg-type] pyright[reportArgumentType]
    print(text)
