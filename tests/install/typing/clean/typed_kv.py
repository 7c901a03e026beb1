"""Key-Value with types: a bucket, put/get/update/create/delete, history,
keys, status, a watch (``async for``).  tests/install/test_typing.py type-checks it
and runs it."""

from __future__ import annotations

import asyncio
import datetime
import sys

import tclnats_py
from tclnats_py.aio.kv import KeyValue, KvEntry, KvStatus


async def main(url: str) -> None:
    nc = await tclnats_py.connect(url, name="typed-kv")
    js = nc.jetstream()
    try:
        await js.delete_key_value("TYPED_KV")
    except tclnats_py.ErrBucketNotFound:
        pass
    kv: KeyValue = await js.create_key_value("TYPED_KV", history=5, storage="memory")
    rev: int = await kv.put("svc.a", b"one")
    entry: KvEntry = await kv.get("svc.a")
    value: bytes = entry.value
    created: datetime.datetime = entry.created_at
    assert (entry.key, value, entry.revision, entry.operation) == ("svc.a", b"one", rev, "PUT")
    assert created.year >= 2024
    rev2 = await kv.update("svc.a", b"two", last=rev)
    try:
        await kv.update("svc.a", b"late", last=rev)
        raise AssertionError("a stale update must fail")
    except tclnats_py.ErrWrongLastSequence:
        pass
    await kv.create("svc.b", b"bee")
    await kv.delete("svc.b")
    history: list[KvEntry] = await kv.history("svc.a")
    assert [e.revision for e in history] == [rev, rev2]
    keys: list[str] = await kv.keys()
    assert keys == ["svc.a"]
    status: KvStatus = await kv.status()
    assert (status.bucket, status.history, status.values) == ("TYPED_KV", 5, 4)  # 2 of svc.a, svc.b and its delete

    seen: list[tuple[str, str, bytes]] = []
    async for e in kv.watch("svc.>"):
        if e is None:  # the end of the current values
            break
        seen.append((e.key, e.operation, e.value))
    assert seen == [("svc.a", "PUT", b"two"), ("svc.b", "DEL", b"")]

    assert await js.delete_key_value("TYPED_KV")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "nats://127.0.0.1:4222"))
