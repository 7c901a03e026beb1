"""Key-Value buckets for the asyncio face (ADR-8), on top of tclnats_py.jetstream.

    kv = await js.create_key_value("SETTINGS", history=5)
    rev = await kv.put("theme", b"dark")
    entry = await kv.get("theme")          # KvEntry: bucket key value revision created operation delta
    await kv.update("theme", b"light", last=rev)
    async for entry in kv.watch("theme.>"): ...   # None marks the end of the initial values
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ._errors import NatsError, make_error
from ._js import check_bucket, check_key, iso_to_ms, kv_operation, kv_stream_config

__all__ = ["KeyValue", "KvEntry"]


@dataclass
class KvEntry:
    bucket: str
    key: str
    value: bytes
    revision: int
    created: int          # ms since the epoch
    operation: str = "PUT"
    delta: int = 0


class KeyValue:
    def __init__(self, js, bucket: str, stream_info):
        self.js = js
        self.bucket = bucket
        self.stream = f"KV_{bucket}"
        self.prefix = f"$KV.{bucket}"
        self.info = stream_info
        self.direct = bool(stream_info.get("config", {}).get("allow_direct"))

    # ------------------------------------------------------------ lifecycle
    @classmethod
    async def create_bucket(cls, js, bucket: str, history: int = 1, ttl: float | None = None, storage: str = "file",
                     max_value_size: int | None = None, max_bucket_size: int | None = None,
                     replicas: int = 1, description: str | None = None, compression: str | None = None,
                     metadata: dict | None = None) -> "KeyValue":
        cfg = kv_stream_config(bucket, history=history, ttl_ms=int(ttl * 1000) if ttl else None, storage=storage,
                               max_value_size=max_value_size, max_bucket_size=max_bucket_size,
                               num_replicas=replicas, description=description, compression=compression,
                               metadata=metadata)
        info = await js.api(f"STREAM.CREATE.KV_{bucket}", cfg)
        return cls(js, bucket, info)

    @classmethod
    async def bind(cls, js, bucket: str) -> "KeyValue":
        check_bucket(bucket)
        try:
            info = await js.api(f"STREAM.INFO.KV_{bucket}")
        except NatsError as e:
            if e.code == "ErrStreamNotFound":
                raise make_error("ErrBucketNotFound", f"Bucket {bucket} not found") from None
            raise
        if (info.get("config", {}).get("max_msgs_per_subject") or 0) < 1:
            raise make_error("ErrBucketNotFound", f"Bucket {bucket} not found")
        return cls(js, bucket, info)

    # ------------------------------------------------------------ reads
    async def _raw_get(self, key: str, revision: int | None):
        try:
            if revision:
                msg = await (self.js.direct_get(self.stream, seq=revision) if self.direct
                             else self.js.get_msg(self.stream, seq=revision))
            else:
                subject = f"{self.prefix}.{key}"
                msg = await (self.js.direct_get(self.stream, last_by_subj=subject) if self.direct
                             else self.js.get_msg(self.stream, last_by_subj=subject))
        except NatsError as e:
            if e.code == "ErrMsgNotFound":
                raise make_error("ErrKeyNotFound", f"Key {key} not found in bucket {self.bucket}") from None
            if e.code == "ErrStreamNotFound":
                raise make_error("ErrBucketNotFound", f"Bucket {self.bucket} not found") from None
            raise
        if revision and msg.subject != f"{self.prefix}.{key}":
            raise make_error("ErrKeyNotFound", f"Key {key} not found in bucket {self.bucket}")
        h = msg.headers or {}
        return KvEntry(self.bucket, key, msg.data, int((h.get("Nats-Sequence") or ["0"])[0]),
                       iso_to_ms((h.get("Nats-Time-Stamp") or [""])[0]), kv_operation(h))

    async def get(self, key: str, revision: int | None = None) -> KvEntry:
        check_key(key)
        entry = await self._raw_get(key, revision)
        if entry.operation in ("DEL", "PURGE"):
            raise make_error("ErrKeyNotFound", f"Key {key} was deleted or purged")
        return entry

    async def status(self):
        return await self.js.api(f"STREAM.INFO.{self.stream}")

    # ------------------------------------------------------------ writes
    async def _publish(self, key: str, value, headers=None, last: int | None = None) -> int:
        check_key(key)
        if isinstance(value, str):
            value = value.encode()
        try:
            ack = await self.js.publish(f"{self.prefix}.{key}", value, headers,
                                        expected_last_subject_seq=last)
        except NatsError as e:
            if e.code == "ErrNoResponders":
                raise make_error("ErrBucketNotFound", f"Bucket {self.bucket} not found") from None
            raise
        return ack["seq"]

    async def put(self, key: str, value) -> int:
        return await self._publish(key, value)

    async def update(self, key: str, value, last: int) -> int:
        return await self._publish(key, value, last=last)

    async def create(self, key: str, value) -> int:
        try:
            return await self.update(key, value, 0)
        except NatsError as e:
            if e.code != "ErrWrongLastSequence":
                raise
            try:
                entry = await self._raw_get(key, None)
            except NatsError:
                raise e from None
            if entry.operation in ("DEL", "PURGE"):
                return await self.update(key, value, entry.revision)
            raise

    async def delete(self, key: str, last: int | None = None) -> None:
        await self._publish(key, b"", {"KV-Operation": ["DEL"]}, last=last if last else None)

    async def purge(self, key: str) -> None:
        await self._publish(key, b"", {"KV-Operation": ["PURGE"], "Nats-Rollup": ["sub"]})

    # ------------------------------------------------------------ watch, keys, history
    async def watch(self, keys: str = ">", include_history: bool = False, ignore_deletes: bool = False,
                    meta_only: bool = False, updates_only: bool = False, idle_heartbeat: float = 5.0):
        """Entries as they are now (then ``None``), then every update."""
        if include_history and updates_only:
            raise make_error("ErrInvalidArg", "include_history conflicts with updates_only")
        policy = "new" if updates_only else ("all" if include_history else "last_per_subject")
        oc = self.js.ordered_consumer(self.stream, filter_subject=f"{self.prefix}.{keys}", deliver_policy=policy,
                                      headers_only=meta_only, idle_heartbeat=idle_heartbeat)
        await oc.start()
        initial_done = updates_only or oc.info.get("num_pending", 0) == 0
        if initial_done:
            yield None
        try:
            async for m in oc:
                meta = m.metadata
                op = kv_operation(m.headers)
                if not (ignore_deletes and op in ("DEL", "PURGE")):
                    yield KvEntry(self.bucket, m.subject[len(self.prefix) + 1:], m.data, meta["stream_seq"],
                                  meta["timestamp"], op, meta["num_pending"])
                if not initial_done and meta["num_pending"] == 0:
                    initial_done = True
                    yield None
        finally:
            await oc.stop()

    async def _gather(self, keys: str, **kw) -> list[KvEntry]:
        out = []
        agen = self.watch(keys, **kw)
        try:
            async for entry in agen:
                if entry is None:
                    break
                out.append(entry)
        finally:
            await agen.aclose()
        return out

    async def keys(self) -> list[str]:
        entries = await asyncio.wait_for(self._gather(">", ignore_deletes=True, meta_only=True), self.js.timeout)
        if not entries:
            raise make_error("ErrKeyNotFound", f"No keys found in bucket {self.bucket}")
        return [e.key for e in entries]

    async def history(self, key: str) -> list[KvEntry]:
        entries = await asyncio.wait_for(self._gather(key, include_history=True), self.js.timeout)
        if not entries:
            raise make_error("ErrKeyNotFound", f"Key {key} not found in bucket {self.bucket}")
        return entries
