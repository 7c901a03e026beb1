"""Object Store for the asyncio face (ADR-20).

    obs = await js.create_object_store("FILES")
    info = await obs.put("report.pdf", data)             # bytes, or an async/sync iterable of chunks
    data = await obs.get_bytes("report.pdf")             # digest checked
    async for chunk in obs.get("report.pdf"): ...        # streaming
    await obs.add_link("latest", info)                   # links to objects (or other buckets)
    [i.name for i in await obs.list()]
"""

from __future__ import annotations

import json

from ._errors import NatsError, make_error
from ._objstore import (DEFAULT_CHUNK, Digest, check_bucket, chunk_subject, meta_subject, new_meta,
                        parse_meta, stream_config, stream_name)
from .jetstream import Info

__all__ = ["ObjectStore"]


class ObjectStore:
    def __init__(self, js, bucket: str, info):
        self.js = js
        self.bucket = bucket
        self.stream = stream_name(bucket)
        self.info = info

    @classmethod
    async def create_bucket(cls, js, bucket: str, description=None, ttl: float | None = None,
                            max_bytes=None, storage: str = "file", replicas: int = 1, metadata=None):
        cfg = stream_config(bucket, description=description, ttl_ns=int(ttl * 1e9) if ttl else None,
                            max_bytes=max_bytes, storage=storage, replicas=replicas, metadata=metadata)
        return cls(js, bucket, await js.api(f"STREAM.CREATE.{stream_name(bucket)}", cfg))

    @classmethod
    async def bind(cls, js, bucket: str):
        check_bucket(bucket)
        try:
            return cls(js, bucket, await js.api(f"STREAM.INFO.{stream_name(bucket)}"))
        except NatsError as e:
            if e.code == "ErrStreamNotFound":
                raise make_error("ErrBucketNotFound", f"Bucket {bucket} not found") from None
            raise

    # ------------------------------------------------------------ reads
    async def info_of(self, name: str, show_deleted: bool = False) -> Info:
        try:
            msg = await self.js.get_msg(self.stream, last_by_subj=meta_subject(self.bucket, name))
        except NatsError as e:
            if e.code == "ErrMsgNotFound":
                raise make_error("ErrObjectNotFound", f"Object {name} not found in bucket {self.bucket}") from None
            raise
        meta = Info(parse_meta(msg.data))
        if meta.get("deleted") and not show_deleted:
            raise make_error("ErrObjectNotFound", f"Object {name} not found in bucket {self.bucket}")
        return meta

    async def get(self, name: str):
        """The object's chunks, in order (an async generator); follows links."""
        meta = await self.info_of(name)
        link = (meta.get("options") or {}).get("link")
        if link:
            if not link.get("name"):
                raise make_error("ErrInvalidArg", f"{name} links to a whole bucket")
            target = self if link.get("bucket") == self.bucket else await ObjectStore.bind(self.js, link["bucket"])
            async for chunk in target.get(link["name"]):
                yield chunk
            return
        if not meta.get("chunks"):
            if meta.get("size"):
                raise make_error("ErrBadObjectMeta", f"Object {name} has no chunks")
            return
        digest = Digest()
        got = 0
        oc = self.js.ordered_consumer(self.stream, filter_subject=chunk_subject(self.bucket, meta["nuid"]))
        try:
            async for m in oc:
                digest.update(m.data)
                got += 1
                yield m.data
                if got == meta["chunks"]:
                    break
        finally:
            await oc.stop()
        if digest.value() != meta.get("digest"):
            raise make_error("ErrDigestMismatch", f"Digest of {name} does not match")

    async def get_bytes(self, name: str) -> bytes:
        return b"".join([c async for c in self.get(name)])

    async def list(self, show_deleted: bool = False) -> list[Info]:
        out = []
        async for meta in self.watch(include_history=False, updates_only=False, stop_at_end=True):
            if show_deleted or not meta.get("deleted"):
                out.append(meta)
        return out

    async def watch(self, include_history: bool = False, updates_only: bool = False, stop_at_end: bool = False):
        """Object infos: the current ones, then ``None``, then every change."""
        policy = "new" if updates_only else ("all" if include_history else "last_per_subject")
        oc = self.js.ordered_consumer(self.stream, filter_subject=f"$O.{self.bucket}.M.>", deliver_policy=policy)
        await oc.start()
        done = updates_only or oc.info.get("num_pending", 0) == 0
        try:
            if done:
                if stop_at_end:
                    return
                yield None
            async for m in oc:
                yield Info(parse_meta(m.data))
                if not done and m.metadata["num_pending"] == 0:
                    done = True
                    if stop_at_end:
                        return
                    yield None
        finally:
            await oc.stop()

    async def status(self) -> Info:
        return await self.js.api(f"STREAM.INFO.{self.stream}")

    # ------------------------------------------------------------ writes
    async def put(self, name: str, data, description: str | None = None, headers=None, metadata=None,
                  chunk_size: int = DEFAULT_CHUNK) -> Info:
        """Store an object: chunks first (acknowledged), then its meta; the
        chunks of a previous version are purged afterwards."""
        try:
            old = await self.info_of(name, show_deleted=True)
        except NatsError as e:
            if e.code != "ErrObjectNotFound":
                raise
            old = None
        nuid = self.js.client.new_inbox().rpartition(".")[2]
        subject = chunk_subject(self.bucket, nuid)
        digest = Digest()
        size = chunks = 0
        pending = []
        try:
            async for chunk in _chunks(data, chunk_size):
                digest.update(chunk)
                size += len(chunk)
                chunks += 1
                pending.append(self.js.publish_async(subject, chunk))
                if len(pending) >= 64:
                    for f in pending:
                        await f
                    pending = []
            for f in pending:
                await f
        except BaseException:
            await self._purge_chunks(nuid)
            raise
        meta = new_meta(self.bucket, name, nuid, size, chunks, digest.value(), description=description,
                        headers=headers, metadata=metadata, chunk_size=chunk_size)
        await self.js.publish(meta_subject(self.bucket, name), json.dumps(meta).encode(),
                              headers={"Nats-Rollup": ["sub"]})
        if old is not None and old.get("nuid") and old["nuid"] != nuid:
            await self._purge_chunks(old["nuid"])
        return Info(meta)

    async def _purge_chunks(self, nuid: str) -> None:
        await self.js.purge_stream(self.stream, filter=chunk_subject(self.bucket, nuid))

    async def delete(self, name: str) -> None:
        meta = await self.info_of(name)
        gone = new_meta(self.bucket, name, meta.get("nuid", ""), 0, 0, "", deleted=True)
        await self.js.publish(meta_subject(self.bucket, name), json.dumps(gone).encode(),
                              headers={"Nats-Rollup": ["sub"]})
        if meta.get("nuid"):
            await self._purge_chunks(meta["nuid"])

    async def add_link(self, name: str, target: Info) -> Info:
        """A link to an object (an ObjectInfo from put/info_of) of this or another bucket."""
        if (target.get("options") or {}).get("link"):
            raise make_error("ErrInvalidArg", "Cannot link to a link")
        link = {"bucket": target["bucket"], "name": target["name"]}
        meta = new_meta(self.bucket, name, "", 0, 0, "", link=link)
        await self.js.publish(meta_subject(self.bucket, name), json.dumps(meta).encode(),
                              headers={"Nats-Rollup": ["sub"]})
        return Info(meta)

    async def add_bucket_link(self, name: str, bucket: "ObjectStore") -> Info:
        meta = new_meta(self.bucket, name, "", 0, 0, "", link={"bucket": bucket.bucket})
        await self.js.publish(meta_subject(self.bucket, name), json.dumps(meta).encode(),
                              headers={"Nats-Rollup": ["sub"]})
        return Info(meta)


async def _chunks(data, size):
    if isinstance(data, str):
        data = data.encode()
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = bytes(data)
        for i in range(0, len(data), size):
            yield data[i:i + size]
        return
    if hasattr(data, "__aiter__"):
        async for part in data:
            for i in range(0, len(part), size):
                yield bytes(part[i:i + size])
        return
    if hasattr(data, "read"):
        while True:
            part = data.read(size)
            if not part:
                return
            yield part
    for part in data:
        for i in range(0, len(part), size):
            yield bytes(part[i:i + size])
