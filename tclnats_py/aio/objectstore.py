"""Object Store for the asyncio face (ADR-20), over ``tclnats_py.engine.js.objstore``.

    obs = await js.create_object_store("FILES")
    info = await obs.put("report.pdf", data)        # bytes, str, a file, or a (async) iterable of bytes
    data = await obs.get_bytes("report.pdf")        # digest checked
    async for chunk in obs.get("report.pdf"): ...   # streaming
    await obs.add_link("latest", info)              # links to objects (or whole buckets)
    [i.name for i in await obs.list()]
    async for info in obs.watch(): ...              # None marks the end of the current infos

Chunks are published with many acks in flight, then the object's info; a
failed put leaves nothing behind (its chunks are purged).  Errors:
ErrObjectNotFound, ErrBucketNotFound, ErrDigestMismatch, ErrBadObjectMeta,
ErrInvalidArg.
"""

from __future__ import annotations

import builtins
import inspect
import os
from typing import TYPE_CHECKING, Any, AsyncIterator

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.aio.client import HeadersArg
    from tclnats_py.aio.jetstream.context import JetStream
    from tclnats_py.aio.jetstream.ordered import OrderedConsumer
    from tclnats_py.engine.js.events import InitDone, WatchInfo

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.js import objstore as _obj
from tclnats_py.engine.js.events import event_table
from tclnats_py.engine.js.publish import parse_ack
from tclnats_py.engine.nuid import next_token
from tclnats_py.engine.validate import check_headers, check_str
from tclnats_py.jsface.info import StreamInfo
from tclnats_py.jsface.objectstore import (WINDOW, ObjectData, ObjectInfo, ObjectStoreStatus, bucket_options, check_data,
                                           check_metadata, parts, to_part)

__all__ = ["ObjectStore", "ObjectInfo", "ObjectStoreStatus", "ObjectWatcher", "ObjectData"]


class ObjectStore:
    """One bound object store (``await js.object_store(bucket)``)."""

    def __init__(self, js: JetStream, bucket: str, info: dict[str, Any]):
        self.js = js
        self.bucket = bucket
        self.stream = _obj.stream_name(bucket)
        self.info = info

    def __repr__(self):
        return f"<ObjectStore {self.bucket}>"

    # ------------------------------------------------------------ lifecycle
    @classmethod
    async def create_bucket(cls, js: JetStream, bucket: str, *, description=None, ttl: float | None = None, max_bytes=None,
                            storage: str = "file", replicas: int = 1, compression: bool = False, metadata=None,
                            placement=None) -> "ObjectStore":
        info = await js._run(_obj.create_bucket(js.jsapi, bucket, **bucket_options(
            description, ttl, max_bytes, storage, replicas, compression, metadata, placement)))
        return cls(js, bucket, info)

    @classmethod
    async def bind(cls, js: JetStream, bucket: str) -> "ObjectStore":
        return cls(js, bucket, await js._run(_obj.bind(js.jsapi, bucket)))

    @property
    def _direct(self) -> bool:
        return bool((self.info.get("config") or {}).get("allow_direct", True))

    # ------------------------------------------------------------ reads
    async def get_info(self, name: str, show_deleted: bool = False) -> ObjectInfo:
        """The object's :class:`ObjectInfo` (a deleted one only with ``show_deleted``); ErrObjectNotFound."""
        _obj.check_name(name)
        return ObjectInfo(await self.js._run(_obj.info(self.js.jsapi, self.bucket, name, show_deleted, self._direct)))

    async def _resolve(self, name: str) -> tuple[ObjectStore, ObjectInfo]:
        """(store, info) of what ``name`` is, following a link."""
        meta = await self.get_info(name)
        link = meta.link
        if not link:
            return self, meta
        if not link.get("name"):
            raise make_error("ErrInvalidArg", f"{name} is a link to the bucket {link.get('bucket')}, not an object")
        store = self if link.get("bucket") == self.bucket else await ObjectStore.bind(self.js, link["bucket"])
        target = await store.get_info(link["name"])
        if target.is_link:
            raise make_error("ErrInvalidArg", "A link to a link")
        return store, target

    async def get(self, name: str) -> AsyncIterator[bytes]:
        """The object's bytes chunk by chunk (an async generator); follows
        links; ErrDigestMismatch at the end if the bytes are not the ones stored."""
        _obj.check_name(name)
        store, meta = await self._resolve(name)
        reader = _obj.Get(meta)
        if reader.done:
            reader.check()
            return
        oc = self.js.ordered_consumer(store.stream, filter_subject=reader.filter_subject)
        try:
            async for m in oc:
                yield reader.on_chunk(m.msg)
                if reader.done:
                    break
        finally:
            await oc.stop()
        reader.check()

    async def get_bytes(self, name: str) -> bytes:
        """The whole object as bytes (a link is followed); ErrObjectNotFound, ErrDigestMismatch."""
        return b"".join([c async for c in self.get(name)])

    async def get_string(self, name: str, encoding: str = "utf-8") -> str:
        """The whole object decoded as UTF-8 text."""
        return (await self.get_bytes(name)).decode(encoding)

    async def get_file(self, name: str, path: str | os.PathLike) -> ObjectInfo:
        """Write the object to the file ``path``; its ObjectInfo."""
        with open(path, "wb") as f:
            async for chunk in self.get(name):
                f.write(chunk)
        return (await self._resolve(name))[1]

    async def list(self, show_deleted: bool = False) -> builtins.list[ObjectInfo]:
        """The infos of every object (and link); deleted ones only if asked."""
        w = self.watch(ignore_deletes=not show_deleted)
        out: builtins.list[ObjectInfo] = []
        try:
            async for info in w:
                if info is None:
                    break
                out.append(info)
        finally:
            await w.stop()
        return out

    def watch(self, *, include_history: bool = False, ignore_deletes: bool = False,
              updates_only: bool = False) -> "ObjectWatcher":
        """Object infos: the current ones, then ``None``, then every change."""
        policy = _obj.watch_options(self.bucket, include_history=include_history,
                                    updates_only=updates_only)["deliver_policy"]
        return ObjectWatcher(self, policy, _obj.Watcher(ignore_deletes=ignore_deletes, updates_only=updates_only))

    async def status(self) -> ObjectStoreStatus:
        """ADR-20 status: bucket, description, ttl (ns), storage, replicas,
        sealed, size, backing_store, is_compressed, metadata, stream_info."""
        return ObjectStoreStatus(_obj.status(self.bucket, dict(await self.js.stream_info(self.stream))))

    # ------------------------------------------------------------ writes
    async def put(self, name: str, data: ObjectData, description: str | None = None, headers: HeadersArg = None,
                  metadata: dict[str, str] | None = None,
                  chunk_size: int = _obj.DEFAULT_CHUNK_SIZE) -> ObjectInfo:
        """Store an object: chunks first (acknowledged), then its info; the
        chunks of a previous version are purged afterwards."""
        check_data(data)
        check_str("description", description)
        check_headers(headers)
        check_metadata(metadata)
        put = _obj.Put(self.bucket, name, next_token(), chunk_size=chunk_size, description=description,
                       headers=headers, metadata=metadata)
        try:
            put.previous(await self.get_info(name, show_deleted=True))
        except NatsError as e:
            if e.code != "ErrObjectNotFound":
                raise
        js = self.js
        inflight: list = []

        async def settle(keep: int):
            while len(inflight) > keep:
                await inflight.pop(0)

        try:
            async for part in _parts(data, chunk_size):
                for chunk in put.feed(part):
                    inflight.append(await js.publish_async(put.chunk_subject, chunk))
                    await settle(WINDOW)
            for chunk in put.finish():
                inflight.append(await js.publish_async(put.chunk_subject, chunk))
            await settle(0)
            step = put.meta_step()
            parse_ack(await js.client.request(step.subject, step.payload, timeout=js.timeout, headers=step.headers))
        except BaseException:
            for f in inflight:
                f.cancel()
            try:
                await js._run(_obj.purge_chunks(js.jsapi, self.bucket, put.nuid))
            except NatsError:
                pass
            raise
        if put.old_nuid:
            await js._run(_obj.purge_chunks(js.jsapi, self.bucket, put.old_nuid))
        return ObjectInfo(put.info or {})

    async def delete(self, name: str) -> ObjectInfo:
        """Mark ``name`` deleted and purge its chunks (ErrObjectNotFound if unknown)."""
        _obj.check_name(name)
        return ObjectInfo(await self.js._run(_obj.delete(self.js.jsapi, self.bucket, name, self._direct)))

    async def add_link(self, name: str, target: "ObjectInfo | str") -> ObjectInfo:
        """Add a link ``name`` in this bucket to the object ``target`` (as
        nats.go's ``AddLink(name, obj)``): the :class:`ObjectInfo` that
        ``put`` or ``get_info`` returned, of this or another bucket, or the
        name of an object of this bucket.  Reading the link
        (``get_bytes(name)``, ``get(name)``) reads that object.
        ErrInvalidArg for a deleted object, a link (no links to links) or a
        name a live object already has; ErrObjectNotFound for a name that is
        no object."""
        if isinstance(target, str):
            target = await self.get_info(target)
        return ObjectInfo(await self.js._run(_obj.add_link(self.js.jsapi, self.bucket, name, target, self._direct)))

    async def add_bucket_link(self, name: str, bucket: "ObjectStore | str") -> ObjectInfo:
        """A link to a whole bucket (an ObjectStore or its name)."""
        target = bucket.bucket if isinstance(bucket, ObjectStore) else bucket
        return ObjectInfo(await self.js._run(_obj.add_bucket_link(self.js.jsapi, self.bucket, name, target,
                                                                  self._direct)))

    async def update_meta(self, name: str, *, new_name: str | None = None, description: str | None = None,
                          headers: HeadersArg = None, metadata: dict[str, str] | None = None) -> ObjectInfo:
        """Rename an object or change its description, headers, metadata."""
        check_str("description", description)
        check_headers(headers)
        check_metadata(metadata)
        return ObjectInfo(await self.js._run(_obj.update_meta(
            self.js.jsapi, self.bucket, name, new_name=new_name, description=description, headers=headers,
            metadata=metadata, direct=self._direct)))

    async def seal(self) -> StreamInfo:
        """No changes any more (the stream is sealed); the stream's info."""
        self.info = await self.js._run(_obj.seal(self.js.jsapi, self.bucket))
        return StreamInfo(self.info)


class ObjectWatcher:
    """A running watch of object infos (async iterator; ``None`` at the End
    Of Initial Data)."""

    def __init__(self, store: ObjectStore, policy: str, state: _obj.Watcher):
        self.store = store
        self.policy = policy
        self.state = state
        self.consumer: OrderedConsumer | None = None
        self._queue: list = []
        self._dispatch = event_table(self, state.EVENTS, "_")

    def __aiter__(self) -> ObjectWatcher:
        return self

    async def start(self) -> None:
        """Create the watch's ordered consumer now, so that its errors raise
        here (else the first ``__anext__`` does it)."""
        if self.consumer is None:
            consumer = self.consumer = self.store.js.ordered_consumer(
                self.store.stream, _obj.meta_filter(self.store.bucket), self.policy)
            await consumer.start()
            self._queue += self.state.on_consumer_created(consumer.info or {})

    async def __anext__(self) -> ObjectInfo | None:
        consumer = self.consumer
        if consumer is None:
            await self.start()
            consumer = self.consumer
            assert consumer is not None
        while not self._queue:
            m = await consumer.__anext__()
            self._queue += self.state.on_msg(m.msg, m._engine_meta())
        ev = self._queue.pop(0)
        return self._dispatch[ev.__class__](ev)

    # -- the engine's events (see engine/js/objstore.py Watcher): what the iteration yields
    def _on_watch_info(self, ev: WatchInfo) -> ObjectInfo:
        return ObjectInfo(ev.info)

    def _on_init_done(self, ev: InitDone) -> None:
        return None  # the End Of Initial Data

    async def stop(self) -> None:
        if self.consumer is not None:
            await self.consumer.stop()

    aclose = stop


async def _parts(data: Any, size: int) -> AsyncIterator[bytes]:
    """The object's bytes in pieces, from bytes, str, a file (its ``read``
    awaitable or not), or a (async) iterable."""
    if hasattr(data, "read"):
        while True:
            part = data.read(size)
            if inspect.isawaitable(part):
                part = await part
            if not part:
                return
            yield to_part(part)
    if hasattr(data, "__aiter__"):
        async for part in data:
            yield to_part(part)
        return
    for part in parts(data, size):
        yield part
