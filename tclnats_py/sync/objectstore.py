"""Object Store for the blocking face (ADR-20), over ``tclnats_py.engine.js.objstore``.

    obs = js.create_object_store("FILES")
    info = obs.put("report.pdf", data)           # bytes, str, a file object, or an iterable of parts
    info = obs.put_file("report.pdf", "/tmp/report.pdf")
    data = obs.get_bytes("report.pdf")           # digest checked
    for chunk in obs.get("report.pdf"): ...      # streaming
    obs.get_file("report.pdf", "/tmp/copy.pdf")
    [i.name for i in obs.list()]
    with obs.watch() as w:
        for info in w: ...                       # None marks the end of the current infos

The values (:class:`ObjectInfo`, :class:`ObjectStoreStatus`) are the asyncio
face's (:mod:`tclnats_py.jsface.objectstore`).  Chunks are published with
many acks in flight, then the object's info; a failed put leaves nothing
behind.  Errors: ErrObjectNotFound, ErrBucketNotFound, ErrDigestMismatch,
ErrBadObjectMeta, ErrInvalidArg.
"""

from __future__ import annotations

import builtins
import os
from collections import deque
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Iterator

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.js import objstore as _obj
from tclnats_py.engine.js.events import event_table
from tclnats_py.engine.js.publish import parse_ack
from tclnats_py.engine.nuid import next_token
from tclnats_py.engine.validate import check_headers, check_str
from tclnats_py.jsface.info import StreamInfo
from tclnats_py.jsface.objectstore import (WINDOW, ObjectData, ObjectInfo, ObjectStoreStatus, bucket_options,
                                           check_data, check_metadata, parts)

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.engine.js.events import InitDone, WatchInfo
    from tclnats_py.jsface.info import PubAck
    from tclnats_py.sync.jetstream.context import JetStream
    from tclnats_py.sync.jetstream.ordered import OrderedConsumer

__all__ = ["ObjectStore", "ObjectInfo", "ObjectStoreStatus", "ObjectWatcher", "ObjectData"]


class ObjectStore:
    """One bound object store (``js.object_store(bucket)``)."""

    def __init__(self, js: JetStream, bucket: str, info: dict[str, Any]):
        self.js = js
        self.bucket = bucket
        self.stream = _obj.stream_name(bucket)
        self.info = info

    def __repr__(self) -> str:
        return f"<ObjectStore {self.bucket}>"

    @classmethod
    def create_bucket(cls, js: JetStream, bucket: str, **config: Any) -> ObjectStore:
        """Create an object store; see JetStream.create_object_store."""
        return cls(js, bucket, js._run(_obj.create_bucket(js.jsapi, bucket, **bucket_options(**config))))

    @classmethod
    def bind(cls, js: JetStream, bucket: str) -> ObjectStore:
        return cls(js, bucket, js._run(_obj.bind(js.jsapi, bucket)))

    @property
    def _direct(self) -> bool:
        return bool((self.info.get("config") or {}).get("allow_direct", True))

    # ------------------------------------------------------------ reads
    def get_info(self, name: str, show_deleted: bool = False) -> ObjectInfo:
        """The object's :class:`ObjectInfo` (a deleted one only with ``show_deleted``); ErrObjectNotFound."""
        _obj.check_name(name)
        return ObjectInfo(self.js._run(_obj.info(self.js.jsapi, self.bucket, name, show_deleted, self._direct)))

    def _resolve(self, name: str) -> tuple[ObjectStore, ObjectInfo]:
        """(store, info) of what ``name`` is, following a link."""
        meta = self.get_info(name)
        link = meta.link
        if not link:
            return self, meta
        if not link.get("name"):
            raise make_error("ErrInvalidArg", f"{name} is a link to the bucket {link.get('bucket')}, not an object")
        store = self if link.get("bucket") == self.bucket else ObjectStore.bind(self.js, link["bucket"])
        target = store.get_info(link["name"])
        if target.is_link:
            raise make_error("ErrInvalidArg", "A link to a link")
        return store, target

    def get(self, name: str) -> Iterator[bytes]:
        """The object's bytes chunk by chunk (a generator); follows links;
        ErrDigestMismatch at the end if the bytes are not the ones stored."""
        _obj.check_name(name)
        store, meta = self._resolve(name)
        reader = _obj.Get(meta)
        if not reader.done:
            with self.js.ordered_consumer(store.stream, filter_subject=reader.filter_subject) as oc:
                for m in oc:
                    yield reader.on_chunk(m.msg)
                    if reader.done:
                        break
        reader.check()

    def get_bytes(self, name: str) -> bytes:
        """The whole object as bytes (a link is followed); ErrObjectNotFound, ErrDigestMismatch."""
        return b"".join(self.get(name))

    def get_string(self, name: str, encoding: str = "utf-8") -> str:
        """The whole object decoded as text."""
        return self.get_bytes(name).decode(encoding)

    def get_file(self, name: str, path: str | os.PathLike[str]) -> ObjectInfo:
        """Write the object to the file ``path``; its ObjectInfo."""
        with open(path, "wb") as f:
            for chunk in self.get(name):
                f.write(chunk)
        return self._resolve(name)[1]

    def list(self, show_deleted: bool = False) -> builtins.list[ObjectInfo]:
        """The infos of every object (and link); deleted ones only if asked."""
        out: builtins.list[ObjectInfo] = []
        with self.watch(ignore_deletes=not show_deleted) as w:
            for info in w:
                if info is None:
                    break
                out.append(info)
        return out

    def watch(self, *, include_history: bool = False, ignore_deletes: bool = False,
              updates_only: bool = False) -> ObjectWatcher:
        """Object infos: the current ones, then ``None``, then every change."""
        policy = _obj.watch_options(self.bucket, include_history=include_history,
                                    updates_only=updates_only)["deliver_policy"]
        return ObjectWatcher(self, policy, _obj.Watcher(ignore_deletes=ignore_deletes, updates_only=updates_only))

    def status(self) -> ObjectStoreStatus:
        """ADR-20 status: bucket, description, ttl (ns), storage, replicas,
        sealed, size, backing_store, is_compressed, metadata, stream_info."""
        return ObjectStoreStatus(_obj.status(self.bucket, dict(self.js.stream_info(self.stream))))

    # ------------------------------------------------------------ writes
    def put(self, name: str, data: ObjectData, description: str | None = None, headers: Any = None,
            metadata: dict[str, str] | None = None, chunk_size: int = _obj.DEFAULT_CHUNK_SIZE) -> ObjectInfo:
        """Store an object (bytes, str, a file object, an iterable of parts):
        chunks first (acknowledged), then its info; the chunks of a previous
        version are purged afterwards."""
        check_data(data)
        check_str("description", description)
        check_headers(headers)
        check_metadata(metadata)
        put = _obj.Put(self.bucket, name, next_token(), chunk_size=chunk_size, description=description,
                       headers=headers, metadata=metadata)
        try:
            put.previous(self.get_info(name, show_deleted=True))
        except NatsError as e:
            if e.code != "ErrObjectNotFound":
                raise
        js = self.js
        inflight: deque[Future[PubAck]] = deque()

        def settle(keep: int) -> None:
            while len(inflight) > keep:
                inflight.popleft().result()

        try:
            for part in parts(data, chunk_size):
                for chunk in put.feed(part):
                    inflight.append(js.publish_async(put.chunk_subject, chunk))
                    settle(WINDOW)
            for chunk in put.finish():
                inflight.append(js.publish_async(put.chunk_subject, chunk))
            settle(0)
            step = put.meta_step()
            parse_ack(js.client.request(step.subject, step.payload, timeout=js.timeout, headers=step.headers))
        except BaseException:
            for f in inflight:
                f.cancel()
            try:
                js._run(_obj.purge_chunks(js.jsapi, self.bucket, put.nuid))
            except NatsError as e:  # the put's own error is the one to raise; this one is logged
                from tclnats_py.sync.jetstream.pull import report
                report(e, None, f"purging the chunks of the failed put of {name}")
            raise
        if put.old_nuid:
            js._run(_obj.purge_chunks(js.jsapi, self.bucket, put.old_nuid))
        return ObjectInfo(put.info or {})

    def put_file(self, name: str, path: str | os.PathLike[str], **kw: Any) -> ObjectInfo:
        """Store the file ``path`` as ``name``; see :meth:`put`."""
        with open(path, "rb") as f:
            return self.put(name, f, **kw)

    def delete(self, name: str) -> ObjectInfo:
        """Mark ``name`` deleted and purge its chunks (ErrObjectNotFound if unknown)."""
        _obj.check_name(name)
        return ObjectInfo(self.js._run(_obj.delete(self.js.jsapi, self.bucket, name, self._direct)))

    def add_link(self, name: str, target: ObjectInfo | str) -> ObjectInfo:
        """A link ``name`` to the object ``target`` (its ObjectInfo, or the name of an object of this bucket)."""
        if isinstance(target, str):
            target = self.get_info(target)
        return ObjectInfo(self.js._run(_obj.add_link(self.js.jsapi, self.bucket, name, target, self._direct)))

    def add_bucket_link(self, name: str, bucket: ObjectStore | str) -> ObjectInfo:
        """A link to a whole bucket (an ObjectStore or its name)."""
        target = bucket.bucket if isinstance(bucket, ObjectStore) else bucket
        return ObjectInfo(self.js._run(_obj.add_bucket_link(self.js.jsapi, self.bucket, name, target,
                                                            self._direct)))

    def update_meta(self, name: str, *, new_name: str | None = None, description: str | None = None,
                    headers: Any = None, metadata: dict[str, str] | None = None) -> ObjectInfo:
        """Rename an object or change its description, headers, metadata."""
        check_str("description", description)
        check_headers(headers)
        check_metadata(metadata)
        return ObjectInfo(self.js._run(_obj.update_meta(
            self.js.jsapi, self.bucket, name, new_name=new_name, description=description, headers=headers,
            metadata=metadata, direct=self._direct)))

    def seal(self) -> StreamInfo:
        """No changes any more (the stream is sealed); the stream's info."""
        self.info = self.js._run(_obj.seal(self.js.jsapi, self.bucket))
        return StreamInfo(self.info)


class ObjectWatcher:
    """A running watch of object infos (an iterator; ``None`` at the End Of Initial Data)."""

    def __init__(self, store: ObjectStore, policy: str, state: _obj.Watcher):
        self.store = store
        self.policy = policy
        self.state = state
        self.consumer: OrderedConsumer | None = None
        self._queue: builtins.list = []
        self._dispatch = event_table(self, state.EVENTS, "_")

    def __iter__(self) -> Iterator[ObjectInfo | None]:
        return self

    def start(self) -> None:
        """Create the watch's ordered consumer now, so that its errors raise
        here (else the first ``next`` does it)."""
        if self.consumer is None:
            consumer = self.consumer = self.store.js.ordered_consumer(
                self.store.stream, _obj.meta_filter(self.store.bucket), self.policy)
            consumer.start()
            self._queue += self.state.on_consumer_created(consumer.info or {})

    def __next__(self) -> ObjectInfo | None:
        if self.consumer is None:
            self.start()
        consumer = self.consumer
        assert consumer is not None
        while not self._queue:
            m = next(consumer)
            self._queue += self.state.on_msg(m.msg, m._engine_meta())
        ev = self._queue.pop(0)
        return self._dispatch[ev.__class__](ev)

    # -- the engine's events (see engine/js/objstore.py Watcher): what the iteration yields
    def _on_watch_info(self, ev: WatchInfo) -> ObjectInfo:
        return ObjectInfo(ev.info)

    def _on_init_done(self, ev: InitDone) -> None:
        return None  # the End Of Initial Data

    def stop(self) -> None:
        """End the watch."""
        if self.consumer is not None:
            self.consumer.stop()

    def __enter__(self) -> ObjectWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
