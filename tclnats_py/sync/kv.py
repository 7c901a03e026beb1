"""Key-Value buckets for the blocking face (ADR-8), over ``tclnats_py.engine.js.kv``.

    kv = js.create_key_value("SETTINGS", history=5, ttl=3600)
    rev = kv.put("theme", b"dark")
    entry = kv.get("theme")                    # KvEntry: bucket key value revision created operation delta
    kv.update("theme", b"light", last=rev)     # ErrWrongLastSequence if someone was first
    kv.create("new.key", b"x")                 # only if absent (or deleted), else ErrKeyExists
    with kv.watch("theme.>") as w:
        for entry in w: ...                    # None marks the end of the initial values
    kv.history("theme"), kv.keys(), kv.status()

The values (:class:`KvEntry`, :class:`KvStatus`) are the asyncio face's
(:mod:`tclnats_py.jsface.kv`).  Errors: ErrKeyNotFound, ErrBucketNotFound,
ErrWrongLastSequence (update), ErrKeyExists (create), ErrInvalidArg, ErrTimeout.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Iterable, Iterator

from tclnats_py.errors import ErrKeyExists, ErrWrongLastSequence, NatsError, make_error
from tclnats_py.engine.js import kv as _kv
from tclnats_py.engine.js.api_level import FEATURES, server_level
from tclnats_py.engine.js.events import event_table
from tclnats_py.engine.js.publish import ack_seq, plain_ack_seq, ttl_from_seconds
from tclnats_py.engine.subjects import valid_subject
from tclnats_py.engine.validate import check_timeout
from tclnats_py.jsface.kv import KvEntry, KvStatus, bucket_options, entry, kv_status, put_entries, watch_consumer_options
from tclnats_py.sync.jetstream.direct import DirectGet

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.engine.js.events import InitDone, WatchEntry
    from tclnats_py.sync.jetstream.context import JetStream
    from tclnats_py.sync.jetstream.ordered import OrderedConsumer

__all__ = ["KeyValue", "KvEntry", "KvStatus", "KvWatcher", "kv_origin"]

kv_origin = _kv.make_origin


class KeyValue:
    """One bound bucket."""

    def __init__(self, js: JetStream, bucket: _kv.Bucket):
        self.js = js
        self._b = bucket
        self.bucket = bucket.bucket
        self.stream = bucket.stream
        self._gets: dict[str, str] = {}  # key -> the subject of its direct get, sent before

    def __repr__(self) -> str:
        return f"<KeyValue {self.bucket}>"

    @property
    def read_prefix(self) -> str:
        """The subject prefix reads go to (another domain's or account's for a bucket seen through one)."""
        return self._b.read_prefix

    @classmethod
    def create_bucket(cls, js: JetStream, bucket: str, *, update: bool = False, **config: Any) -> KeyValue:
        """Create (``update``: change) a bucket; see JetStream.create_key_value."""
        return cls(js, js._run(_kv.create_bucket(js.jsapi, bucket, update=update, **bucket_options(**config))))

    @classmethod
    def bind(cls, js: JetStream, bucket: str) -> KeyValue:
        return cls(js, js._run(_kv.bind(js.jsapi, bucket)))

    # ------------------------------------------------------------ reads
    def get(self, key: str, revision: int | None = None) -> KvEntry:
        """The latest entry (or the one at ``revision``); ErrKeyNotFound if missing or deleted."""
        b = self._b
        subject = self._gets.get(key) if revision is None else None
        if subject is not None:  # a key read before: its checks passed, its request known
            js = self.js
            try:
                reply = js.client._request_raw(subject, js.timeout)
            except NatsError as e:
                raise b.get_error(key, e) from None
            if reply.__class__ is tuple:
                return b.direct_entry(key, reply, KvEntry)  # type: ignore[return-value]  # (made a KvEntry)
            return b.get_result(key, None, reply, KvEntry)  # type: ignore[return-value]
        req = b.get_request(key, revision)
        if req is None:
            return entry(self.js._run(b.get(key, revision)))
        try:
            reply = self.js._request(req)
        except NatsError as e:
            raise b.get_error(key, e) from None
        plain = req.timeout is None and not req.headers and not req.payload
        # (a subject of the publish rule: later sent unchecked, whatever check_subjects says then)
        if revision is None and plain and valid_subject(req.subject):
            if len(self._gets) >= 4096:
                self._gets.clear()
            self._gets[key] = req.subject
        return b.get_result(key, revision, reply, KvEntry)  # type: ignore[return-value]  # (made a KvEntry)

    def get_many(self, keys: Iterable[str]) -> dict[str, KvEntry]:
        """key -> latest KvEntry, for each of ``keys`` that holds a value
        (absent or deleted keys are not in the dict).  On nats-server 2.11+
        with direct gets allowed: multi-last direct gets, up to a thousand
        keys each (ADR-31); on older servers a get per key."""
        keys = list(keys)
        batches = self._b.get_many_batches(keys)
        out: dict[str, KvEntry] = {}
        if batches and self.js.run(server_level(self.js.jsapi)) >= FEATURES["direct_get_multi_last"][0]:
            for get in batches:
                put_entries(self._b, DirectGet(self.js, get), out)
            return out
        for k in keys:
            try:
                out[k] = self.get(k)
            except NatsError as e:
                if e.code != "ErrKeyNotFound":
                    raise
        return out

    def get_value(self, key: str, revision: int | None = None) -> bytes:
        """The value (bytes) of ``key`` (at ``revision``); ErrKeyNotFound."""
        return self.get(key, revision).value

    def status(self) -> KvStatus:
        """The bucket's status (:class:`KvStatus`: values, history, ttl, bytes ...)."""
        return kv_status(self.js._run(self._b.status()))

    # ------------------------------------------------------------ writes
    def put(self, key: str, value: bytes | str) -> int:
        """Store ``value`` (bytes or str); the new revision."""
        b = self._b
        subject = b.put_subjects.get(key)  # a key checked before
        if subject is None or value.__class__ is not bytes:
            req = b.put_request(key, value)
            subject, value = req.subject, req.payload
        js = self.js
        try:
            msg = js.client.request(subject, value, js.timeout)
            if msg.headers is None and plain_ack_seq is not None:  # (ack_seq's first step, without its call)
                seq = plain_ack_seq(msg.data)
                if seq is not None:
                    return seq
            return ack_seq(msg)
        except NatsError as e:  # the request's or the ack's
            raise b.put_error(e) from None

    def create(self, key: str, value: bytes | str, ttl: float | str | None = None) -> int:
        """Store ``value`` only if ``key`` does not exist (or was deleted);
        ErrKeyExists (an ErrWrongLastSequence too) when it has a value.
        ``ttl`` (seconds, or ``"never"``; ADR-48): the key expires after it."""
        t = None if ttl is None else ttl_from_seconds(ttl)
        try:
            return self.js._run(self._b.create(key, value, t))
        except ErrWrongLastSequence as e:
            raise ErrKeyExists(f"Key {key} already exists in bucket {self.bucket}", **e.details) from None

    def update(self, key: str, value: bytes | str, last: int) -> int:
        """Store ``value`` if ``last`` is still the latest revision of ``key``; ErrWrongLastSequence."""
        return self.js._run(self._b.update(key, value, last))

    def delete(self, key: str, last: int | None = None) -> None:
        """A delete marker (history kept); with ``last`` only if it is current."""
        self.js._run(self._b.delete(key, last))

    def purge(self, key: str, ttl: float | str | None = None) -> None:
        """A purge marker; the key's history goes."""
        self.js._run(self._b.purge(key, None if ttl is None else ttl_from_seconds(ttl)))

    def revert(self, key: str, revision: int) -> int:
        """Put the value ``key`` had at ``revision`` again; the new revision."""
        return self.js._run(self._b.revert(key, revision))

    # ------------------------------------------------------------ watch, keys, history
    def watch(self, keys: str | list[str] = ">", *, include_history: bool = False, ignore_deletes: bool = False,
              meta_only: bool = False, updates_only: bool = False, idle_heartbeat: float = 5.0) -> KvWatcher:
        """Entries as they are now (or with their history), then ``None`` (the
        End Of Initial Data), then every change as it happens: iterate it
        (``for e in kv.watch(...)``), or ``w.updates(timeout)``; ``w.stop()``
        (or leaving its ``with`` block) ends it.  The watch starts here:
        ErrBucketNotFound raises now."""
        check_timeout(idle_heartbeat, what="idle_heartbeat")
        opts = self._b.watch_options(keys, include_history=include_history, meta_only=meta_only,
                                     updates_only=updates_only,
                                     idle_heartbeat_ms=max(1, int((idle_heartbeat or 5.0) * 1000)))
        w = KvWatcher(self, opts, self._b.watcher(ignore_deletes=ignore_deletes, updates_only=updates_only))
        w.start()
        return w

    def watch_all(self, **kw: Any) -> KvWatcher:
        """Watch every key; see :meth:`watch`."""
        return self.watch(">", **kw)

    def _gather(self, keys: str | list[str], **kw: Any) -> list[KvEntry]:
        """The initial entries of a watch, within the context's timeout."""
        deadline = time.monotonic() + self.js.timeout
        out: list[KvEntry] = []
        with self.watch(keys, **kw) as w:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise make_error("ErrTimeout", f"Timeout while gathering entries of bucket {self.bucket}")
                e = w.updates(left)
                if e is None:
                    return out
                out.append(e)

    def keys(self, keys: str | list[str] = ">") -> list[str]:
        """Every key (matching ``keys``) that has a value; ErrNoKeysFound (an ErrKeyNotFound too) when none."""
        entries = self._gather(keys, ignore_deletes=True, meta_only=True)
        if not entries:
            raise make_error("ErrNoKeysFound", f"No keys found in bucket {self.bucket}")
        return [e.key for e in entries]

    def history(self, key: str) -> list[KvEntry]:
        """Every stored revision of ``key``, oldest first; ErrKeyNotFound."""
        entries = self._gather(key, include_history=True)
        if not entries:
            raise make_error("ErrKeyNotFound", f"Key {key} not found in bucket {self.bucket}")
        return entries


class KvWatcher:
    """A running watch: an iterator of KvEntry, with one ``None`` at the End
    Of Initial Data.  It ends when its stream goes away or on ``stop()``."""

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

    def start(self) -> None:
        """Create the watch's ordered consumer (``watch()`` calls it); ErrBucketNotFound."""
        if self.consumer is not None:
            return
        self.consumer = self.kv.js.ordered_consumer(self.kv.stream, **watch_consumer_options(self._opts))
        try:
            self.consumer.start()
        except NatsError as e:
            if e.code == "ErrStreamNotFound":
                raise make_error("ErrBucketNotFound", f"Bucket {self.kv.bucket} not found") from None
            raise
        self._queue += self.state.on_consumer_created(self.consumer.info or {})

    def __iter__(self) -> Iterator[KvEntry | None]:
        return self

    def _take(self, timeout: float | None) -> KvEntry | None:
        if self.consumer is None:
            self.start()
        consumer = self.consumer
        assert consumer is not None
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._queue:
            msg = consumer.next(None if deadline is None else max(0.0, deadline - time.monotonic()))
            self._queue += self.state.on_msg(msg.msg, msg._engine_meta())
        ev = self._queue.pop(0)
        return self._dispatch[ev.__class__](ev)

    def __next__(self) -> KvEntry | None:
        return self._take(None)  # StopIteration from the consumer ends us too

    def updates(self, timeout: float | None = 5.0) -> KvEntry | None:
        """The next entry, or ``None`` once (the End Of Initial Data):
        ErrTimeout (a TimeoutError) when nothing came within ``timeout``
        seconds (None: wait for good), ErrConsumerStopped once the watch
        has ended."""
        timeout = check_timeout(timeout)
        try:
            return self._take(timeout)
        except StopIteration:
            raise make_error("ErrConsumerStopped", f"The watcher of bucket {self.kv.bucket} has stopped") from None

    # -- the engine's events (see engine/js/kv.py Watcher): what the iteration yields
    def _on_watch_entry(self, ev: WatchEntry) -> KvEntry:
        return entry(ev.entry)

    def _on_init_done(self, ev: InitDone) -> None:
        return None  # the End Of Initial Data

    def stop(self) -> None:
        """End the watch (its consumer goes); the iteration ends."""
        if self.consumer is not None:
            self.consumer.stop()

    def __enter__(self) -> KvWatcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
