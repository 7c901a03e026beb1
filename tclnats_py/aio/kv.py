"""Key-Value buckets for the asyncio face (ADR-8), over ``tclnats_py.engine.js.kv``.

    kv = await js.create_key_value("SETTINGS", history=5, ttl=3600)
    rev = await kv.put("theme", b"dark")
    entry = await kv.get("theme")           # KvEntry: bucket key value revision created operation delta
    await kv.update("theme", b"light", last=rev)      # ErrWrongLastSequence if someone was first
    await kv.create("new.key", b"x")                  # only if absent (or deleted), else ErrKeyExists
    async for entry in kv.watch("theme.>"): ...       # None marks the end of the initial values
    w = await kv.watch("theme.>"); e = await w.updates(timeout=5); await w.stop()   # nats-py's way
    await kv.history("theme"), await kv.keys(), await kv.status()

Buckets in another domain or account work through the JetStream context's
prefix (``client.jetstream(domain="hub")``); aggregates and mirrors are made
with ``js.create_kv_aggregate`` / ``js.create_kv_mirror`` and
:func:`kv_origin`.  ``created`` is ms since the epoch (``created_at`` a
datetime); ``ttl`` is in seconds.  Errors: ErrKeyNotFound, ErrBucketNotFound,
ErrWrongLastSequence (update), ErrKeyExists (create; also an ErrWrongLastSequence),
ErrInvalidArg (bad key or bucket name), ErrTimeout.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Iterable

from tclnats_py.errors import ErrKeyExists, ErrWrongLastSequence, NatsError, make_error
from tclnats_py.engine.js import kv as _kv
from tclnats_py.engine.js.events import event_table
from tclnats_py.engine.js.api_level import FEATURES, server_level
from tclnats_py.aio.jetstream.direct import DirectGet
from tclnats_py.engine.js.publish import ttl_from_seconds
from tclnats_py.engine.validate import check_timeout
from tclnats_py.jsface.kv import KvEntry, KvStatus, bucket_options, kv_status, put_entries, watch_consumer_options
from tclnats_py.jsface.kv import entry as _entry

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.aio.jetstream.context import JetStream
    from tclnats_py.aio.jetstream.ordered import OrderedConsumer
    from tclnats_py.engine.js.events import InitDone, WatchEntry

__all__ = ["KeyValue", "KvEntry", "KvStatus", "KvWatcher", "kv_origin"]

kv_origin = _kv.make_origin


class KeyValue:
    """One bound bucket."""

    def __init__(self, js: JetStream, bucket: _kv.Bucket):
        self.js = js
        self._b = bucket
        self.bucket = bucket.bucket
        self.stream = bucket.stream

    def __repr__(self):
        return f"<KeyValue {self.bucket}>"

    # ------------------------------------------------------------ lifecycle
    @classmethod
    async def create_bucket(cls, js: JetStream, bucket: str, *, update: bool = False,
                            **config: Any) -> "KeyValue | None":
        """Create (``update``: change) a bucket; see JetStream.create_key_value."""
        b = await js._run(_kv.create_bucket(js.jsapi, bucket, update=update, **bucket_options(**config)))
        return cls(js, b) if b is not None else None

    @classmethod
    async def bind(cls, js: JetStream, bucket: str) -> "KeyValue":
        return cls(js, await js._run(_kv.bind(js.jsapi, bucket)))

    @property
    def read_prefix(self) -> str:
        return self._b.read_prefix

    # ------------------------------------------------------------ reads
    async def get(self, key: str, revision: int | None = None) -> KvEntry:
        """The latest entry (or the one at ``revision``); ErrKeyNotFound if
        missing or deleted."""
        b = self._b
        req = b.get_request(key, revision)
        if req is None:
            return _entry(await self.js._run(b.get(key, revision)))
        try:
            reply = await self.js._request(req)
        except NatsError as e:
            raise b.get_error(key, e) from None
        return b.get_result(key, revision, reply, KvEntry)  # type: ignore[return-value]  # (made a KvEntry)

    async def _direct_level(self, feature: str) -> bool:
        """The server serves ``feature`` (an ``api_level`` name): False on a
        server before 2.11, where the reads fall back to the older ways."""
        return await self.js.run(server_level(self.js.jsapi)) >= FEATURES[feature][0]

    async def get_many(self, keys: Iterable[str]) -> dict[str, KvEntry]:
        """The latest entries of ``keys``: key -> KvEntry for the keys that
        have a value (missing and deleted ones left out).  By multi-last
        direct gets (ADR-31, a thousand keys a request) when the bucket
        allows direct gets on nats-server 2.11 or newer, else one get per key."""
        keys = list(keys)
        batches = self._b.get_many_batches(keys)
        out: dict[str, KvEntry] = {}
        if batches and await self._direct_level("direct_get_multi_last"):
            for get in batches:
                put_entries(self._b, await DirectGet(self.js, get).all(), out)
            return out
        for k in keys:
            try:
                out[k] = await self.get(k)
            except NatsError as e:
                if e.code != "ErrKeyNotFound":
                    raise
        return out

    async def get_value(self, key: str, revision: int | None = None) -> bytes:
        """The value (bytes) of ``key`` (at ``revision``); ErrKeyNotFound."""
        return (await self.get(key, revision)).value

    async def status(self) -> KvStatus:
        """The bucket's status (:class:`KvStatus`: values, history, ttl, bytes ...)."""
        return kv_status(await self.js._run(self._b.status()))

    # ------------------------------------------------------------ writes
    async def put(self, key: str, value: bytes | str) -> int:
        """Store ``value`` (bytes or str); the new revision."""
        b = self._b
        req = b.put_request(key, value)
        try:
            reply = await self.js._request(req)
        except NatsError as e:
            raise b.put_error(e) from None
        return b.put_result(reply)["seq"]

    async def create(self, key: str, value: bytes | str, ttl: float | str | None = None) -> int:
        """Store ``value`` only if ``key`` does not exist (or was deleted);
        ErrKeyExists (a KeyValueError, and an ErrWrongLastSequence as the
        server's refusal is) when it has a value.  ``ttl`` (seconds, 1 or
        more, or ``"never"``; ADR-48): the key expires after it, in a bucket
        made with ``limit_marker_ttl``; ErrServerTooOld before nats-server 2.11."""
        t = None if ttl is None else ttl_from_seconds(ttl)
        try:
            return await self.js._run(self._b.create(key, value, t))
        except ErrWrongLastSequence as e:
            raise ErrKeyExists(f"Key {key} already exists in bucket {self.bucket}", **e.details) from None

    async def update(self, key: str, value: bytes | str, last: int) -> int:
        """Store ``value`` if ``last`` is still the latest revision of ``key``."""
        return await self.js._run(self._b.update(key, value, last))

    async def delete(self, key: str, last: int | None = None) -> None:
        """A delete marker (history kept); with ``last`` only if it is current."""
        await self.js._run(self._b.delete(key, last))

    async def purge(self, key: str, ttl: float | str | None = None) -> None:
        """A purge marker; the key's history goes.  ``ttl`` (seconds, ADR-48):
        the marker itself goes after it; ErrServerTooOld before nats-server 2.11."""
        await self.js._run(self._b.purge(key, None if ttl is None else ttl_from_seconds(ttl)))

    async def revert(self, key: str, revision: int) -> int:
        """Put the value ``key`` had at ``revision`` again; the new revision."""
        return await self.js._run(self._b.revert(key, revision))

    # ------------------------------------------------------------ watch, keys, history
    def watch(self, keys: str | list[str] = ">", *, include_history: bool = False, ignore_deletes: bool = False,
              meta_only: bool = False, updates_only: bool = False, idle_heartbeat: float = 5.0) -> "KvWatcher":
        """Entries as they are now (or with their history), then ``None`` (the
        End Of Initial Data), then every change as it happens.  ``keys`` is a
        key, a wildcard pattern or a list of them.  Iterate it (``async for e
        in kv.watch(...)``: the watch starts with the iteration), or await it
        as nats-py does (``w = await kv.watch(...)``: the watch has started,
        ErrBucketNotFound is raised here), then ``async for e in w`` or ``await
        w.updates(timeout)``; ``await w.stop()`` (or ``aclose()``) ends it."""
        check_timeout(idle_heartbeat, what="idle_heartbeat")
        opts = self._b.watch_options(keys, include_history=include_history, meta_only=meta_only,
                                     updates_only=updates_only,
                                     idle_heartbeat_ms=max(1, int((idle_heartbeat or 5.0) * 1000)))
        return KvWatcher(self, opts, self._b.watcher(ignore_deletes=ignore_deletes, updates_only=updates_only))

    def watch_all(self, **kw) -> "KvWatcher":
        """Watch every key; see :meth:`watch`."""
        return self.watch(">", **kw)

    async def _gather(self, keys, **kw) -> list[KvEntry]:
        w = self.watch(keys, **kw)
        out = []

        async def gather():
            async for entry in w:
                if entry is None:
                    break
                out.append(entry)
        try:
            # asyncio.wait_for, not asyncio.timeout: Python 3.10 has no asyncio.timeout
            await asyncio.wait_for(gather(), self.js.timeout)
        except asyncio.TimeoutError:
            raise make_error("ErrTimeout", f"Timeout while gathering entries of bucket {self.bucket}") from None
        finally:
            await w.stop()
        return out

    async def keys(self, keys: str | list[str] = ">") -> list[str]:
        """Every key (matching ``keys``) that has a value; ErrNoKeysFound
        (an ErrKeyNotFound too) when none, as nats.go's Keys."""
        entries = await self._gather(keys, ignore_deletes=True, meta_only=True)
        if not entries:
            raise make_error("ErrNoKeysFound", f"No keys found in bucket {self.bucket}")
        return [e.key for e in entries]

    async def history(self, key: str) -> list[KvEntry]:
        """Every stored revision of ``key`` (a pattern works too), oldest first."""
        entries = await self._gather(key, include_history=True)
        if not entries:
            raise make_error("ErrKeyNotFound", f"Key {key} not found in bucket {self.bucket}")
        return entries


class KvWatcher:
    """A running watch: async iterator of KvEntry, with one ``None`` at the
    End Of Initial Data.  It stops when its stream goes away (nats-tcl: "the
    KV watcher stops as well"), or on ``stop()``."""

    def __init__(self, kv: KeyValue, consumer_opts: dict, state: _kv.Watcher):
        self.kv = kv
        self.state = state
        self._opts = consumer_opts
        self.consumer: OrderedConsumer | None = None
        self._queue: list = []
        self._dispatch = event_table(self, state.EVENTS, "_")

    @property
    def init_done(self) -> bool:
        return self.state.init_done

    def __aiter__(self):
        return self

    def __await__(self):
        """``w = await kv.watch(...)``: start the watch, then hand it out."""
        return self._started().__await__()

    async def _started(self) -> "KvWatcher":
        if self.consumer is None:
            await self._start()
        return self

    async def updates(self, timeout: float | None = 5.0) -> KvEntry | None:
        """The next entry, or ``None`` once (the End Of Initial Data), as
        nats-py's ``KeyWatcher.updates``: ErrTimeout (a TimeoutError) when
        nothing came within ``timeout`` seconds (None: wait for good),
        ErrConsumerStopped once the watch has ended (stop(), or its bucket
        went away)."""
        timeout = check_timeout(timeout)
        if self.consumer is None:
            await self._start()
        try:
            # asyncio.wait_for, not asyncio.timeout: Python 3.10 has no asyncio.timeout
            return await asyncio.wait_for(self.__anext__(), timeout)
        except asyncio.TimeoutError:
            raise make_error("ErrTimeout", f"No update of bucket {self.kv.bucket} within {timeout} s") from None
        except StopAsyncIteration:
            raise make_error("ErrConsumerStopped", f"The watcher of bucket {self.kv.bucket} has stopped") from None

    async def _start(self):
        self.consumer = self.kv.js.ordered_consumer(self.kv.stream, **watch_consumer_options(self._opts))
        try:
            await self.consumer.start()
        except NatsError as e:
            if e.code == "ErrStreamNotFound":
                raise make_error("ErrBucketNotFound", f"Bucket {self.kv.bucket} not found") from None
            raise
        self._queue += self.state.on_consumer_created(self.consumer.info)

    async def __anext__(self) -> KvEntry | None:
        consumer = self.consumer
        if consumer is None:
            await self._start()
            consumer = self.consumer
            assert consumer is not None
        while not self._queue:
            msg = await consumer.__anext__()  # StopAsyncIteration ends us too
            self._queue += self.state.on_msg(msg.msg, msg._engine_meta())
        ev = self._queue.pop(0)
        return self._dispatch[ev.__class__](ev)

    # -- the engine's events (see engine/js/kv.py Watcher): what the iteration yields
    def _on_watch_entry(self, ev: WatchEntry) -> KvEntry:
        return _entry(ev.entry)

    def _on_init_done(self, ev: InitDone) -> None:
        return None  # the End Of Initial Data

    async def stop(self) -> None:
        """End the watch (its consumer goes); the iteration ends."""
        if self.consumer is not None:
            await self.consumer.stop()

    aclose = stop

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.stop()
