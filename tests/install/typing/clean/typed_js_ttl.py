"""NATS 2.11+ with types: per-message TTL, KV key TTLs and limit markers,
the last-subject-sequence expectation over a wildcard, consumer pause,
resume and reset (docs/python.md's block).  tests/install/test_typing.py
type-checks it and runs it."""

from __future__ import annotations

import asyncio
import sys
from datetime import datetime, timedelta, timezone

import tclnats_py
from tclnats_py.aio.jetstream import ConsumerPauseResponse, ConsumerResetResponse
from tclnats_py.aio.kv import KvEntry, KvStatus


async def main(url: str) -> None:
    nc = await tclnats_py.connect(url, name="typed-js-ttl")
    js = nc.jetstream()
    for name in ("EVENTS", "KV_SESSIONS"):
        try:
            await js.delete_stream(name)
        except tclnats_py.ErrStreamNotFound:
            pass
    await js.create_stream("EVENTS", subjects=["ev.>"], allow_msg_ttl=True, subject_delete_marker_ttl=60)
    await js.publish("ev.a", b"x", ttl=30)                # seconds, a Go duration ("1h") or "never"
    # stored only if the last message on ev.* (any of them) is still seq 1
    await js.publish("ev.b", b"y", expected_last_subject_seq=1, expected_last_subject_seq_subject="ev.*")
    kv = await js.create_key_value("SESSIONS", limit_marker_ttl=60)
    await kv.create("s1", b"token", ttl=900)              # the key expires; watchers see a PURGE entry,
    await kv.purge("s2", ttl=60)                          # e.reason == "MaxAge" (Nats-Marker-Reason)
    await js.create_consumer("EVENTS", durable_name="worker")
    await js.pause_consumer("EVENTS", "worker", datetime.now(timezone.utc) + timedelta(minutes=5))
    await js.resume_consumer("EVENTS", "worker")
    await js.reset_consumer("EVENTS", "worker", seq=2)   # 2.14+: delivery restarts at stream seq 2

    status: KvStatus = await kv.status()
    marker_ttl: float = status.limit_marker_ttl
    assert marker_ttl == 60
    entry: KvEntry = (await kv.history("s2"))[-1]
    reason: str | None = entry.reason
    assert (entry.operation, reason) == ("PURGE", None)   # a client's purge: no marker reason
    paused: ConsumerPauseResponse = await js.pause_consumer("EVENTS", "worker", 4102444800000)
    assert paused.paused and paused.pause_until_at is not None
    reset: ConsumerResetResponse = await js.reset_consumer("EVENTS", "worker")
    assert reset.reset_seq >= 1 and reset.config.durable_name == "worker"
    level: int = await js.require_level("consumer_reset")
    assert level >= 4
    await js.delete_stream("EVENTS")
    assert await js.delete_key_value("SESSIONS")
    await nc.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "nats://127.0.0.1:4222"))
