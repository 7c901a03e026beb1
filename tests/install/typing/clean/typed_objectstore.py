"""Object Store with types: a store, put (bytes, str), get_bytes, get_info,
a link, list, status, delete.  tests/install/test_typing.py type-checks it and runs it."""

from __future__ import annotations

import asyncio
import io
import sys

import tclnats_py
from tclnats_py.aio.jetstream import StreamInfo
from tclnats_py.aio.objectstore import ObjectInfo, ObjectStore, ObjectStoreStatus


async def main(url: str) -> None:
    nc = await tclnats_py.connect(url, name="typed-obj")
    js = nc.jetstream()
    try:
        await js.delete_object_store("TYPED_FILES")
    except tclnats_py.ErrBucketNotFound:
        pass
    obs: ObjectStore = await js.create_object_store("TYPED_FILES", storage="memory", description="files")
    data = bytes(range(256)) * 1000
    info: ObjectInfo = await obs.put("blob.bin", data, description="a blob", metadata={"kind": "test"})
    size: int = info.size
    assert (info.name, size, info.deleted, info.is_link) == ("blob.bin", len(data), False, False)
    await obs.put("note.txt", "hello")
    await obs.put("file.bin", io.BytesIO(b"from a file"))
    await obs.put("parts.bin", [b"a", b"b", "c"])
    assert await obs.get_bytes("file.bin") == b"from a file" and await obs.get_bytes("parts.bin") == b"abc"
    blob: bytes = await obs.get_bytes("blob.bin")
    assert blob == data
    assert await obs.get_string("note.txt") == "hello"
    link: ObjectInfo = await obs.add_link("latest", info)
    assert link.is_link and link.link == {"bucket": "TYPED_FILES", "name": "blob.bin"}
    assert await obs.get_bytes("latest") == data
    names = sorted(i.name for i in await obs.list())
    assert names == ["blob.bin", "file.bin", "latest", "note.txt", "parts.bin"]
    status: ObjectStoreStatus = await obs.status()
    stream_info: StreamInfo = status.stream_info
    assert (status.bucket, status.description, status.sealed) == ("TYPED_FILES", "files", False)
    assert stream_info.state.messages > 0 and status.size > len(data)
    gone: ObjectInfo = await obs.delete("note.txt")
    assert gone.deleted
    assert await js.delete_object_store("TYPED_FILES")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "nats://127.0.0.1:4222"))
