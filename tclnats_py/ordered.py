"""Ordered consumers for the asyncio face (ADR-17).

An ephemeral push consumer with flow control and idle heartbeats, no acks,
whose messages are handed out strictly in consumer-sequence order.  A gap,
a heartbeat naming another last sequence, or silence for three heartbeat
intervals (the consumer or server is gone) recreate it from the last stream
sequence seen.  Iterate it: ``async for msg in js.ordered_consumer("S")``.
"""

from __future__ import annotations

import asyncio

from ._errors import NatsError
from ._js import metadata_from_reply

__all__ = ["OrderedConsumer"]

_NS = 1_000_000_000


class OrderedConsumer:
    def __init__(self, js, stream, filter_subject=None, deliver_policy="all", headers_only=False,
                 idle_heartbeat=5.0):
        self.js = js
        self.stream = stream
        self.filter_subject = filter_subject
        self.deliver_policy = deliver_policy
        self.headers_only = headers_only
        self.idle_heartbeat = idle_heartbeat
        self.stream_seq = 0
        self.consumer_seq = 0
        self.name = ""
        self.resets = 0
        self.info = None
        self._sub = None
        self._stopped = False

    async def start(self):
        await self._create(None)
        return self

    async def _create(self, start_seq):
        client = self.js.client
        inbox = client.new_inbox()
        self._sub = await client.subscribe(inbox)
        cfg = {"deliver_subject": inbox, "ack_policy": "none", "flow_control": True, "max_deliver": 1,
               "idle_heartbeat": int(self.idle_heartbeat * _NS), "mem_storage": True, "num_replicas": 1,
               "inactive_threshold": 2 * _NS, "ack_wait": 22 * 3600 * _NS,
               "deliver_policy": self.deliver_policy, "headers_only": self.headers_only}
        if self.filter_subject:
            cfg["filter_subject"] = self.filter_subject
        if start_seq is not None:
            cfg["deliver_policy"] = "by_start_sequence"
            cfg["opt_start_seq"] = start_seq
        self.info = await self.js.api(f"CONSUMER.CREATE.{self.stream}",
                                      {"stream_name": self.stream, "config": cfg})
        self.name = self.info["name"]
        delivered = self.info.get("delivered") or {}
        self.consumer_seq = delivered.get("consumer_seq", 0)
        self.stream_seq = delivered.get("stream_seq", self.stream_seq)

    async def _reset(self):
        self.resets += 1
        if self._sub is not None and not self._sub._engine_sub.closed:
            await self._sub.unsubscribe()
        self.name = ""
        while not self._stopped:
            try:
                await self._create(self.stream_seq + 1)
                return
            except NatsError as e:
                if e.code == "ErrStreamNotFound":
                    raise
                await asyncio.sleep(min(1.0, self.idle_heartbeat))

    def __aiter__(self):
        return self

    async def __anext__(self):
        from .jetstream import JsMsg
        if self._sub is None:
            await self.start()
        client = self.js.client
        while not self._stopped:
            try:
                msg = await self._sub.next_msg(self.idle_heartbeat * 3)
            except NatsError as e:
                if e.code in ("ErrTimeout", "ErrBadSubscription"):
                    await self._reset()
                    continue
                raise
            if msg.status == 100 and not msg.data:
                if msg.description.startswith("Flow"):
                    client.publish(msg.reply, b"")
                    continue
                stalled = msg.header("Nats-Consumer-Stalled")
                if stalled:
                    client.publish(stalled, b"")
                last = msg.header("Nats-Last-Consumer")
                if last is not None and int(last) != self.consumer_seq:
                    await self._reset()
                continue
            meta = metadata_from_reply(msg.reply, msg.subject)
            if meta["consumer_seq"] != self.consumer_seq + 1:
                await self._reset()
                continue
            self.consumer_seq += 1
            self.stream_seq = meta["stream_seq"]
            return JsMsg(self.js, msg)
        raise StopAsyncIteration

    async def stop(self):
        self._stopped = True
        if self._sub is not None and not self._sub._engine_sub.closed:
            await self._sub.unsubscribe()
