"""``nats.js.kv`` of nats-py 2.x: :class:`KeyValue` (ADR-8 buckets).

A bucket is the stream ``KV_<bucket>`` holding one subject per key (ADR-8);
entries are read with the JetStream context's ``get_msg`` (direct gets when
the stream allows them), written with its ``publish`` (expectation headers
for create/update), watched with an ordered push consumer.  Names, the
operation of an entry (``KV-Operation``, or an ADR-48 limit marker) and
the stream's name are the engine's (``tclnats_py.engine.js.kv``); the
shapes (``Entry``, ``BucketStatus``, ``KeyWatcher``) and exceptions are
nats-py's.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import re
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tclnats_py.engine.js import kv as _kv
from tclnats_py.engine.js.events import InitDone, event_table
from tclnats_py.natspy import errors as _core
from tclnats_py.natspy.js import api
from tclnats_py.natspy.js import errors as _jserr

if TYPE_CHECKING:
    from tclnats_py.natspy.js.client import JetStreamContext

__all__ = ["KeyValue", "KV_OP", "KV_DEL", "KV_PURGE", "MSG_ROLLUP_SUBJECT", "KV_MARKER_REASON", "VALID_BUCKET_RE",
           "VALID_KEY_RE", "StopIterSentinel"]

KV_OP = _kv.KV_OPERATION
KV_DEL = _kv.DEL
KV_PURGE = _kv.PURGE
MSG_ROLLUP_SUBJECT = "sub"
KV_MARKER_REASON = _kv.MARKER_REASON  # the header of a TTL or limit marker's reason (ADR-48)


class StopIterSentinel:
    """The queue item that ends a watcher's iteration (after ``stop()``)."""


# the engine's character sets, anchored for re.match as nats-py programs use them
VALID_BUCKET_RE = re.compile(f"^{_kv.BUCKET_RE.pattern}$")
VALID_KEY_RE = re.compile(f"^{_kv.KEY_RE.pattern}$")

# purge_deletes keeps the markers younger than this (seconds) by default
_MARKER_GRACE_S = 1800

_WRONG_LAST_SEQUENCE = (10071, 10164)


def _key_ok(key: Any) -> bool:
    return isinstance(key, str) and bool(VALID_KEY_RE.match(key)) and not key.startswith(".") \
        and not key.endswith(".")


def _bucket_ok(bucket: Any) -> bool:
    return isinstance(bucket, str) and VALID_BUCKET_RE.match(bucket) is not None


def _op(headers: dict[str, str] | None) -> str | None:
    """nats-py's operation: None for a value, DEL or PURGE for markers (the engine's rule)."""
    op = _kv.operation_of({k: [v] for k, v in headers.items()} if headers else None)
    return None if op == _kv.PUT else op


class KeyValue:
    """A bound bucket: get, put, create, update, delete, purge, watch, keys, history, status."""

    @dataclass
    class Entry:
        bucket: str
        key: str
        value: bytes | None
        revision: int | None
        delta: int | None
        created: Any | None
        operation: str | None

    @dataclass(frozen=True)
    class BucketStatus:
        stream_info: api.StreamInfo
        bucket: str

        @property
        def _stream(self) -> api.StreamConfig:
            return self.stream_info.config

        @property
        def values(self) -> int:
            return self.stream_info.state.messages

        @property
        def history(self) -> int:
            return self._stream.max_msgs_per_subject

        @property
        def ttl(self) -> float | None:
            return self._stream.max_age

        @property
        def marker_ttl(self) -> float | None:
            return self._stream.subject_delete_marker_ttl

    def __init__(self, name: str, stream: str, pre: str, js: "JetStreamContext", direct: bool) -> None:
        self._name = name
        self._stream = stream
        self._pre = pre
        self._js = js
        self._direct = direct

    def _subject(self, key: str) -> str:
        """The stream subject that holds ``key``."""
        return self._pre + key

    # ------------------------------------------------------------ reads
    async def get(self, key: str, revision: int | None = None, validate_keys: bool = True) -> "KeyValue.Entry":
        """The latest entry of ``key`` (or the one at ``revision``); KeyNotFoundError when missing or deleted."""
        if validate_keys and not _key_ok(key):
            raise _jserr.InvalidKeyError()
        try:
            return await self._get(key, revision)
        except _jserr.KeyDeletedError as e:
            raise _jserr.KeyNotFoundError(e.entry, e.op) from None

    async def _get(self, key: str, revision: int | None = None) -> "KeyValue.Entry":
        subject = self._subject(key)
        try:
            if revision:
                msg = await self._js.get_msg(self._stream, seq=revision, direct=self._direct)
            else:
                msg = await self._js.get_msg(self._stream, subject=subject, direct=self._direct)
        except _jserr.NotFoundError:
            raise _jserr.KeyNotFoundError() from None
        if msg.subject != subject:
            raise _jserr.KeyNotFoundError(message=f"expected '{subject}', but got '{msg.subject}'")
        entry = KeyValue.Entry(bucket=self._name, key=key, value=msg.data, revision=msg.seq, delta=None,
                               created=None, operation=None)
        op = _op(msg.headers)
        if op in (KV_DEL, KV_PURGE):
            raise _jserr.KeyDeletedError(entry, op)
        return entry

    async def status(self) -> "KeyValue.BucketStatus":
        return KeyValue.BucketStatus(stream_info=await self._js.stream_info(self._stream), bucket=self._name)

    # ------------------------------------------------------------ writes
    async def put(self, key: str, value: bytes, validate_keys: bool = True) -> int:
        """Store ``value``; the new revision."""
        if validate_keys and not _key_ok(key):
            raise _jserr.InvalidKeyError(key)
        return (await self._js.publish(self._subject(key), value)).seq

    async def create(self, key: str, value: bytes, validate_keys: bool = True, msg_ttl: float | None = None) -> int:
        """Store ``value`` only if ``key`` has no value (absent, deleted or purged)."""
        if validate_keys and not _key_ok(key):
            raise _jserr.InvalidKeyError(key)
        try:
            return await self._update(key, value, 0, validate_keys, msg_ttl)
        except _jserr.KeyWrongLastSequenceError as first:
            # a delete or purge marker is the last entry: write on top of it (ADR-8)
            try:
                await self._get(key)
            except _jserr.KeyDeletedError as deleted:
                return await self._update(key, value, deleted.entry.revision, validate_keys, msg_ttl)
            raise first

    async def update(self, key: str, value: bytes, last: int | None = None, validate_keys: bool = True) -> int:
        """Store ``value`` if ``last`` is still the latest revision of ``key``."""
        return await self._update(key, value, last, validate_keys)

    async def _update(self, key: str, value: bytes, last: int | None = None, validate_keys: bool = True,
                      msg_ttl: float | None = None) -> int:
        if validate_keys and not _key_ok(key):
            raise _jserr.InvalidKeyError(key)
        hdrs = {api.Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value: str(last or 0)}
        try:
            ack = await self._js.publish(self._subject(key), value, headers=hdrs, msg_ttl=msg_ttl)
        except _jserr.APIError as e:
            if e.err_code in _WRONG_LAST_SEQUENCE:
                raise _jserr.KeyWrongLastSequenceError(description=e.description) from None
            raise
        return ack.seq

    async def delete(self, key: str, last: int | None = None, validate_keys: bool = True,
                     msg_ttl: float | None = None) -> bool:
        """A delete marker (history kept); with ``last`` only if it is the latest revision."""
        if msg_ttl is not None:
            warnings.warn("msg_ttl on delete() is deprecated and ignored; use create() or purge() for TTL",
                          DeprecationWarning, stacklevel=2)
        if validate_keys and not _key_ok(key):
            raise _jserr.InvalidKeyError(key)
        hdrs = {KV_OP: KV_DEL}
        if last and last > 0:
            hdrs[api.Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value] = str(last)
        await self._js.publish(self._subject(key), headers=hdrs)
        return True

    async def purge(self, key: str, msg_ttl: float | None = None) -> bool:
        """A purge marker that removes the key's history."""
        hdrs = {KV_OP: KV_PURGE, api.Header.ROLLUP.value: MSG_ROLLUP_SUBJECT}
        await self._js.publish(self._subject(key), headers=hdrs, msg_ttl=msg_ttl)
        return True

    async def purge_deletes(self, olderthan: int = _MARKER_GRACE_S) -> bool:
        """Remove the delete and purge markers (keeping those younger than ``olderthan`` seconds, <= 0: all)."""
        markers = [e for e in await _initial_entries(await self.watchall()) if e.operation in (KV_DEL, KV_PURGE)]
        now = datetime.datetime.now(datetime.timezone.utc)
        for entry in markers:
            age = (now - entry.created).total_seconds()
            keep = 1 if olderthan > 0 and olderthan > age else 0
            await self._js.purge_stream(self._stream, subject=self._subject(entry.key), keep=keep)
        return True

    # ------------------------------------------------------------ watching
    class KeyWatcher:
        """The updates of a watch: ``await w.updates(timeout)`` or ``async
        for``; one None after the initial values; ``await w.stop()``."""

        STOP_ITER = StopIterSentinel()  # what stop() puts in the queue: the end of iteration

        def __init__(self, js: "JetStreamContext") -> None:
            self._js = js
            self._updates: asyncio.Queue = asyncio.Queue(maxsize=256)
            self._sub: Any = None
            self._pending: int | None = None
            self._init_done = False

        def _mark_init(self) -> None:
            if not self._init_done:
                self._init_done = True
                self._updates.put_nowait(None) if not self._updates.full() else None

        def _on_init_done(self, ev: InitDone) -> None:
            self._mark_init()

        async def stop(self) -> None:
            if self._sub is not None:
                try:
                    await self._sub.unsubscribe()
                except _core.BadSubscriptionError:
                    pass
            while True:
                try:
                    self._updates.put_nowait(KeyValue.KeyWatcher.STOP_ITER)
                    return
                except asyncio.QueueFull:
                    try:
                        self._updates.get_nowait()
                    except asyncio.QueueEmpty:
                        pass

        async def updates(self, timeout: float | None = 5.0) -> Any:
            return await next_update(self._updates, timeout)

        def __aiter__(self) -> "KeyValue.KeyWatcher":
            return self

        async def __anext__(self) -> Any:
            entry = await self._updates.get()
            if isinstance(entry, StopIterSentinel):
                raise StopAsyncIteration
            return entry

    async def watchall(self, **kwargs: Any) -> "KeyValue.KeyWatcher":
        return await self.watch(">", **kwargs)

    async def watch(self, keys: str, headers_only: bool = False, include_history: bool = False,
                    ignore_deletes: bool = False, meta_only: bool = False,
                    inactive_threshold: float | None = None) -> "KeyValue.KeyWatcher":
        """Entries matching ``keys`` (a key or pattern): the current ones (or
        their history), a None, then each change."""
        watcher = KeyValue.KeyWatcher(self._js)
        ready = asyncio.get_running_loop().create_future()
        pre = self._pre

        async def on_msg(msg: Any) -> None:
            if not ready.done():
                await asyncio.wait_for(asyncio.shield(ready), self._js._timeout)
            meta = msg.metadata
            op = _op(msg.headers)
            last = meta.num_pending == 0
            if ignore_deletes and op in (KV_DEL, KV_PURGE):
                if last:
                    watcher._mark_init()
                return
            await watcher._updates.put(KeyValue.Entry(bucket=self._name, key=msg.subject[len(pre):],
                                                      value=msg.data, revision=meta.sequence.stream,
                                                      delta=meta.num_pending, created=meta.timestamp,
                                                      operation=op))
            if last and not watcher._init_done:
                watcher._init_done = True
                await watcher._updates.put(None)

        sub = await self._js.subscribe(
            self._subject(keys), stream=self._stream, cb=on_msg, ordered_consumer=True,
            deliver_policy=None if include_history else api.DeliverPolicy.LAST_PER_SUBJECT,
            headers_only=meta_only or headers_only or None, inactive_threshold=inactive_threshold or 5 * 60)
        watcher._sub = sub
        # what was pending when the consumer was created: nothing means the
        # initial values are done at once (the engine's rule, InitialData)
        info = sub._created_info
        try:
            if info is None:
                info = await sub.consumer_info()
        except BaseException:
            ready.cancel()
            await sub.unsubscribe()
            raise
        watcher._pending = info.num_pending
        ready.set_result(True)
        initial = _kv.InitialData(ignore_deletes)
        on = event_table(watcher, (InitDone,), "_")
        for ev in initial.on_consumer_created({"num_pending": info.num_pending or 0}):
            on[ev.__class__](ev)
        return watcher

    async def keys(self, filters: list[str] | None = None, **kwargs: Any) -> list[str]:
        """The keys with a value (those containing one of ``filters`` when given); NoKeysError when none.
        With filters, nats-py's warning on its "nats.js.kv" logger (its check
        compares the watcher's filter subject with ">", which it never is)."""
        watcher = await self.watchall(ignore_deletes=True, meta_only=True)
        if filters:
            _logger.warning("Server may ignore filters if version is < 2.10.")
        entries = await _initial_entries(watcher)
        return _some([e.key for e in entries if not filters or any(f in e.key for f in filters)])

    async def history(self, key: str) -> list["KeyValue.Entry"]:
        """Every stored entry of ``key``, oldest first; NoKeysError when none."""
        return _some(await _initial_entries(await self.watch(key, include_history=True)))


#: nats-py's logger of this module (``logging.getLogger("nats.js.kv")``)
_logger = logging.getLogger("nats.js.kv")


async def _initial_entries(watcher: KeyValue.KeyWatcher) -> list[Any]:
    """What a new watcher delivers before its None (the initial values); the watcher is stopped then."""
    got = []
    async for entry in watcher:
        if entry is None:
            break
        got.append(entry)
    await watcher.stop()
    return got


def _some(found: list) -> list:
    """``found`` unless empty (NoKeysError)."""
    if not found:
        raise _jserr.NoKeysError()
    return found


async def next_update(updates: asyncio.Queue, timeout: float | None) -> Any:
    """The next item of a watcher's queue within ``timeout`` seconds (None:
    no limit), else nats.errors.TimeoutError (the KV and Object Store watchers)."""
    try:
        return await asyncio.wait_for(updates.get(), timeout)
    except asyncio.TimeoutError:
        raise _core.TimeoutError() from None


# ---------------------------------------------------------------- the JetStream context's entry points
def _pre(bucket: str) -> str:
    return _kv.key_prefix(bucket)


async def bind_key_value(js: "JetStreamContext", bucket: str) -> KeyValue:
    if not _bucket_ok(bucket):
        raise _jserr.InvalidBucketNameError()
    stream = _kv.stream_name(bucket)
    try:
        si = await js.stream_info(stream)
    except _jserr.NotFoundError:
        raise _jserr.BucketNotFoundError() from None
    if si.config.max_msgs_per_subject < 1:
        raise _jserr.BadBucketError()
    return KeyValue(bucket, stream, _pre(bucket), js, bool(si.config.allow_direct))


async def create_key_value(js: "JetStreamContext", config: api.KeyValueConfig | None,
                           params: dict[str, Any]) -> KeyValue:
    config = (api.KeyValueConfig(bucket=params["bucket"]) if config is None else config).evolve(**params)
    if not _bucket_ok(config.bucket):
        raise _jserr.InvalidBucketNameError()
    if config.history > 64:
        raise _jserr.KeyHistoryTooLargeError()
    dup_window = 120.0
    if config.ttl and config.ttl < dup_window:
        dup_window = config.ttl
    marker_ttl = None
    if (config.limit_marker_ttl or 0) > 0:
        # limit markers need JetStream API level 1 (nats-server 2.11)
        if ((await js.account_info()).api.level or 0) < 1:
            raise _jserr.KeyValueLimitMarkerTTLNotSupportedError()
        marker_ttl = config.limit_marker_ttl
    stream = api.StreamConfig(
        name=_kv.stream_name(config.bucket), description=config.description, subjects=[_pre(config.bucket) + ">"],
        allow_direct=config.direct, allow_rollup_hdrs=True, allow_msg_ttl=True, deny_delete=True,
        discard=api.DiscardPolicy.NEW, duplicate_window=dup_window, max_age=config.ttl, max_bytes=config.max_bytes,
        max_consumers=-1, max_msg_size=config.max_value_size, max_msgs=-1, max_msgs_per_subject=config.history,
        num_replicas=config.replicas, storage=config.storage, republish=config.republish,
        subject_delete_marker_ttl=marker_ttl)
    si = await js.add_stream(stream)
    return KeyValue(config.bucket, stream.name or "", _pre(config.bucket), js, bool(si.config.allow_direct))


async def delete_key_value(js: "JetStreamContext", bucket: str) -> bool:
    if not _bucket_ok(bucket):
        raise _jserr.InvalidBucketNameError()
    return await js.delete_stream(_kv.stream_name(bucket))
