"""``nats.js.object_store`` of nats-py 2.x: :class:`ObjectStore` (ADR-20).

The work (chunking, digests, meta messages, links, watching) is the asyncio
face's Object Store (``tclnats_py.aio.objectstore``) over the engine's
``tclnats_py.engine.js.objstore``; this module converts nats-py's arguments
(``ObjectMeta``, readers and writers), results (``ObjectInfo``,
``ObjectResult``) and exceptions.
"""

from __future__ import annotations

import asyncio
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tclnats_py.engine.js import objstore as _obj
from tclnats_py.errors import NatsError
from tclnats_py.natspy.js import api
from tclnats_py.natspy.js import errors as _jserr
from tclnats_py.natspy.js.manager import translate

if TYPE_CHECKING:
    from tclnats_py.aio.objectstore import ObjectStore as _ImplStore
    from tclnats_py.natspy.js.client import JetStreamContext

__all__ = ["ObjectStore", "VALID_BUCKET_RE", "VALID_KEY_RE", "OBJ_DEFAULT_CHUNK_SIZE", "OBJ_STREAM_TEMPLATE",
           "OBJ_ALL_CHUNKS_PRE_TEMPLATE", "OBJ_ALL_META_PRE_TEMPLATE", "OBJ_CHUNKS_PRE_TEMPLATE",
           "OBJ_META_PRE_TEMPLATE", "OBJ_NO_PENDING", "OBJ_DIGEST_TYPE", "OBJ_DIGEST_TEMPLATE"]

from tclnats_py.natspy.js.kv import VALID_BUCKET_RE, VALID_KEY_RE, StopIterSentinel, next_update  # noqa: E402  the same name rules

OBJ_DEFAULT_CHUNK_SIZE = _obj.DEFAULT_CHUNK_SIZE
# nats-py's module constants (the ADR-20 subjects as format templates)
OBJ_STREAM_TEMPLATE = _obj.stream_name("{bucket}")
OBJ_ALL_CHUNKS_PRE_TEMPLATE = _obj.chunk_subject("{bucket}", ">")
OBJ_ALL_META_PRE_TEMPLATE = _obj.meta_filter("{bucket}")
OBJ_CHUNKS_PRE_TEMPLATE = _obj.chunk_subject("{bucket}", "{obj}")
OBJ_META_PRE_TEMPLATE = _obj.meta_filter("{bucket}")[:-1] + "{obj}"
OBJ_NO_PENDING = "0"
# digests are "<algorithm>=<base64url>" (ADR-20; the engine's ObjectDigest)
_DIGEST_ALGO = "SHA-256"
OBJ_DIGEST_TYPE = f"{_DIGEST_ALGO}="
OBJ_DIGEST_TEMPLATE = f"{_DIGEST_ALGO}={{digest}}"


def _info(d: Any) -> api.ObjectInfo:
    """An ObjectInfo; headers (stored as lists, ADR-20) shown as nats-py shows them: the last value of each."""
    info = api.ObjectInfo.from_response(dict(d))
    if info.headers:
        info.headers = {k: (v[-1] if v else "") if isinstance(v, list) else v for k, v in info.headers.items()}
    return info


def _not_found(e: NatsError) -> BaseException:
    if e.code in ("ErrObjectNotFound", "ErrKeyNotFound", "ErrMsgNotFound"):
        return _jserr.ObjectNotFoundError()
    if e.code in ("ErrBucketNotFound", "ErrStreamNotFound"):
        return _jserr.BucketNotFoundError()
    if e.code == "ErrInvalidArg" and "link to the bucket" in e.message:
        return _jserr.LinkIsABucketError()
    return translate(e)


class ObjectStore:
    """A bound object store: put, get, get_info, update_meta, delete, list, watch, status, seal."""

    @dataclass
    class ObjectResult:
        info: api.ObjectInfo
        data: bytes | None = bytes()

    @dataclass(frozen=True)
    class ObjectStoreStatus:
        stream_info: api.StreamInfo
        bucket: str

        @property
        def _stream(self) -> api.StreamConfig:
            return self.stream_info.config

        @property
        def description(self) -> str | None:
            return self._stream.description

        @property
        def ttl(self) -> float | None:
            return self._stream.max_age

        @property
        def storage_type(self) -> api.StorageType | None:
            return self._stream.storage

        @property
        def replicas(self) -> int | None:
            return self._stream.num_replicas

        @property
        def sealed(self) -> bool:
            return self._stream.sealed

        @property
        def size(self) -> int:
            return self.stream_info.state.bytes

    def __init__(self, name: str, stream: str, js: "JetStreamContext") -> None:
        self._name = name
        self._stream = stream
        self._js = js
        self._impl_store: "_ImplStore" | None = None

    @property
    def _impl(self) -> "_ImplStore":
        if self._impl_store is None:
            from tclnats_py.aio.objectstore import ObjectStore as Impl
            self._impl_store = Impl(self._js._js, self._name, {"config": {"allow_direct": True}})
        return self._impl_store

    async def _call(self, coro: Any) -> Any:
        try:
            return await coro
        except NatsError as e:
            raise _not_found(e) from e

    # ------------------------------------------------------------ reads
    async def get_info(self, name: str, show_deleted: bool | None = False) -> api.ObjectInfo:
        if not name:
            raise _jserr.ObjectNotFoundError()  # (nats-py looks the empty name up, and finds nothing)
        return _info(await self._call(self._impl.get_info(name, bool(show_deleted))))

    async def get(self, name: str, writeinto: io.BufferedIOBase | None = None,
                  show_deleted: bool | None = False) -> "ObjectStore.ObjectResult":
        """The object (its info and bytes; into ``writeinto`` when given); links are followed."""
        info = await self.get_info(name, show_deleted)
        link = info.options.link if info.options is not None else None
        if link is not None:
            if not link.name:
                raise _jserr.LinkIsABucketError()
            other = await self._js.object_store(link.bucket)
            return await other.get(link.name)
        result = ObjectStore.ObjectResult(info=info)
        if not info.size:
            return result
        write = None
        if writeinto is not None:
            write = writeinto.buffer.write if hasattr(writeinto, "buffer") else writeinto.write
        loop = asyncio.get_running_loop()
        parts = []
        try:
            async for chunk in self._impl.get(name):
                if write is not None:
                    await loop.run_in_executor(None, write, chunk)
                else:
                    parts.append(chunk)
        except NatsError as e:
            if e.code == "ErrDigestMismatch":
                raise _jserr.DigestMismatchError() from e
            raise _not_found(e) from e
        if write is None:
            result.data = b"".join(parts)
        return result

    async def status(self) -> "ObjectStore.ObjectStoreStatus":
        return ObjectStore.ObjectStoreStatus(stream_info=await self._js.stream_info(self._stream), bucket=self._name)

    async def list(self, ignore_deletes: bool = False) -> list[api.ObjectInfo]:
        """The infos of the objects; NotFoundError when there are none."""
        infos = await self._call(self._impl.list(show_deleted=not ignore_deletes))
        if not infos:
            raise _jserr.NotFoundError()
        return [_info(i) for i in infos]

    # ------------------------------------------------------------ writes
    async def put(self, name: str, data: str | bytes | io.BufferedIOBase,
                  meta: api.ObjectMeta | None = None) -> api.ObjectInfo:
        """Store ``data`` (bytes, str or a reader) as ``name``; its ObjectInfo."""
        if meta is None:
            meta = api.ObjectMeta(name=name)
        elif name:
            meta.name = name
        if meta.options is None:
            meta.options = api.ObjectMetaOptions(max_chunk_size=OBJ_DEFAULT_CHUNK_SIZE)
        chunk = meta.options.max_chunk_size or OBJ_DEFAULT_CHUNK_SIZE
        if not isinstance(data, (str, bytes, bytearray, memoryview)):
            if hasattr(data, "buffer") and not hasattr(data, "readinto"):
                data = data.buffer  # a text file: its bytes
            elif not (hasattr(data, "read") or hasattr(data, "readinto")):
                raise TypeError(f"nats: object store put takes bytes, str or a readable file, "
                                f"not {type(data).__name__}")
            data = _ThreadedReader(data)  # type: ignore[assignment]
        headers = meta.headers
        info = await self._call(self._impl.put(meta.name or name, data, description=meta.description,
                                               headers=headers, chunk_size=chunk))
        out = _info(info)
        if out.options is None or out.options.max_chunk_size is None:
            out.options = api.ObjectMetaOptions(link=out.options.link if out.options else None,
                                                max_chunk_size=chunk)
        return out

    async def update_meta(self, name: str, meta: api.ObjectMeta) -> None:
        """Change an object's name, description or headers."""
        try:
            await self.get_info(name)
        except _jserr.ObjectNotFoundError:
            raise _jserr.ObjectDeletedError() from None
        if name != meta.name:
            # nats-py's rule: a new name only for an object that is deleted
            # (so a live object cannot be renamed)
            existing = await self.get_info(name, show_deleted=True)
            if not existing.deleted:
                raise _jserr.ObjectAlreadyExists()
        await self._call(self._impl.update_meta(name, new_name=meta.name if meta.name != name else None,
                                                description=meta.description, headers=meta.headers))

    async def delete(self, name: str) -> "ObjectStore.ObjectResult":
        info = await self._call(self._impl.delete(name))
        return ObjectStore.ObjectResult(info=_info(info))

    async def seal(self) -> None:
        await self._call(self._impl.seal())

    # ------------------------------------------------------------ watching
    class ObjectWatcher:
        """Object infos as they change: ``await w.updates(timeout)`` or ``async for``; ``await w.stop()``."""

        STOP_ITER = StopIterSentinel()  # what stop() puts in the queue: the end of iteration

        def __init__(self, js: Any) -> None:
            self._js = js
            self._updates: asyncio.Queue = asyncio.Queue(maxsize=256)
            self._task: asyncio.Task | None = None
            self._impl: Any = None

        async def stop(self) -> None:
            if self._impl is not None:
                await self._impl.stop()
            t, self._task = self._task, None
            if t is not None:
                t.cancel()
                try:
                    await t
                except (asyncio.CancelledError, Exception):
                    pass
            try:
                self._updates.put_nowait(ObjectStore.ObjectWatcher.STOP_ITER)
            except asyncio.QueueFull:
                pass

        async def updates(self, timeout: float | None = 5.0) -> api.ObjectInfo | None:
            return await next_update(self._updates, timeout)

        def __aiter__(self) -> "ObjectStore.ObjectWatcher":
            return self

        async def __anext__(self) -> api.ObjectInfo | None:
            item = await self._updates.get()
            if isinstance(item, StopIterSentinel):
                raise StopAsyncIteration
            return item

    async def watch(self, ignore_deletes: bool = False, include_history: bool = False, meta_only: bool = False,
                    updates_only: bool = False) -> "ObjectStore.ObjectWatcher":
        """Infos of the objects: the current ones (or their history), a None
        (not with ``updates_only``), then every change."""
        impl = self._impl.watch(include_history=include_history, ignore_deletes=ignore_deletes,
                                updates_only=updates_only)
        # the ordered consumer is made now (errors here), the updates come in a task
        await self._call(impl.start())
        return _pumped_watcher(self, impl, updates_only)


def _pumped_watcher(store: ObjectStore, impl: Any, updates_only: bool) -> ObjectStore.ObjectWatcher:
    """An ObjectWatcher fed by a task that moves the asyncio face's watch
    items (infos as dicts, the None after the initial ones) into its queue."""
    w = ObjectStore.ObjectWatcher(store)
    w._impl = impl

    async def forward() -> None:
        async for item in impl:
            if item is None:
                if not updates_only:  # nats-py: no end-of-initial-data marker for updates only
                    await w._updates.put(None)
            else:
                await w._updates.put(_info(item))

    w._task = asyncio.get_running_loop().create_task(forward())
    return w


class _ThreadedReader:
    """A blocking reader read in the default executor (as nats-py reads files)."""

    def __init__(self, f: Any) -> None:
        self._f = f

    async def read(self, n: int) -> bytes:
        return await asyncio.get_running_loop().run_in_executor(None, self._f.read, n)


# ---------------------------------------------------------------- the JetStream context's entry points
def _check_bucket(bucket: Any) -> str:
    """``bucket``, if it is a valid bucket name (else InvalidBucketNameError)."""
    if not isinstance(bucket, str) or VALID_BUCKET_RE.match(bucket) is None:
        raise _jserr.InvalidBucketNameError()
    return bucket


async def bind_object_store(js: "JetStreamContext", bucket: str) -> ObjectStore:
    _check_bucket(bucket)
    stream = _obj.stream_name(bucket)
    try:
        await js.stream_info(stream)
    except _jserr.NotFoundError:
        raise _jserr.BucketNotFoundError() from None
    return ObjectStore(bucket, stream, js)


async def create_object_store(js: "JetStreamContext", bucket: str | None, config: api.ObjectStoreConfig | None,
                              params: dict[str, Any]) -> ObjectStore:
    if config is not None:
        config.bucket = bucket  # as nats-py: the argument wins, in the caller's config too
    config = (api.ObjectStoreConfig(bucket=bucket) if config is None else config).evolve(**params)
    name = _check_bucket(config.bucket)
    stream = api.StreamConfig(
        name=_obj.stream_name(name), description=config.description,
        subjects=[_obj.chunk_subject(name, ">"), _obj.meta_filter(name)], max_age=config.ttl,
        max_bytes=-1 if config.max_bytes == 0 else config.max_bytes, max_consumers=0, storage=config.storage,
        num_replicas=config.replicas, placement=config.placement, discard=api.DiscardPolicy.NEW,
        allow_rollup_hdrs=True, allow_direct=True)
    await js.add_stream(stream)
    return ObjectStore(name, stream.name or "", js)


async def delete_object_store(js: "JetStreamContext", bucket: str) -> bool:
    _check_bucket(bucket)
    return await js.delete_stream(_obj.stream_name(bucket))
