"""JetStream for the asyncio face, modelled on nats.go's ``jetstream`` package.

    js = client.jetstream()                       # or JetStream(client, domain=..., api_prefix=...)
    await js.create_stream("ORDERS", subjects=["orders.*"])
    ack = await js.publish("orders.new", b"apple", msg_id="o-1")
    fut = js.publish_async("orders.new", b"pear"); await js.publish_async_complete()
    cons = await js.create_consumer("ORDERS", durable_name="PACKER")
    for msg in await cons.fetch(10, expires=1.0):
        await msg.ack_sync()
    async for msg in js.ordered_consumer("ORDERS"): ...
    kv = await js.create_key_value("SETTINGS")

Replies are ``Info`` dicts (attribute access too) that keep every field the
server sends, so fields added by later servers need no client change.
Durations in configs are seconds here (converted to the API's nanoseconds).
Errors are the shared codes: ErrStreamNotFound, ErrConsumerNotFound,
ErrMsgNotFound, ErrWrongLastSequence, ErrJSResponse (with api_code/err_code)...
"""

from __future__ import annotations

import asyncio
import base64
import json

from ._engine import Msg
from ._errors import NatsError, make_error
from ._headers import parse_headers
from .jsconfig import ConsumerConfig, StreamConfig
from ._js import api_prefix as _api_prefix
from ._js import check_js_error, filename_safe, metadata_from_reply, pull_status

__all__ = ["JetStream", "Stream", "Consumer", "JsMsg", "Info", "PubAck", "StreamConfig", "ConsumerConfig"]

_NS = 1_000_000_000
_DURATIONS = {"max_age", "duplicate_window", "ack_wait", "idle_heartbeat", "inactive_threshold"}


class Info(dict):
    """A JSON reply: a dict that also reads as attributes (``info.config.name``)."""

    def __getattr__(self, name):
        try:
            v = self[name]
        except KeyError:
            raise AttributeError(name) from None
        return Info(v) if isinstance(v, dict) else v


PubAck = Info


def _to_api(config: dict) -> dict:
    out = {}
    for k, v in config.items():
        if v is None:
            continue
        if k in _DURATIONS and isinstance(v, (int, float)):
            v = int(v * _NS)
        out[k] = v
    return out


class JsMsg:
    """A message from a consumer, with its metadata and the ack family."""

    __slots__ = ("_js", "msg", "_acked")

    def __init__(self, js: "JetStream", msg: Msg):
        self._js = js
        self.msg = msg
        self._acked = False

    subject = property(lambda self: self.msg.subject)
    data = property(lambda self: self.msg.data)
    headers = property(lambda self: self.msg.headers)
    reply = property(lambda self: self.msg.reply)

    @property
    def metadata(self) -> dict:
        return metadata_from_reply(self.msg.reply, self.msg.subject)

    def _reply(self, payload: bytes):
        if self._acked:
            raise make_error("ErrInvalidArg", "Message was already acknowledged")
        self._js.client.publish(self.msg.reply, payload)

    async def ack(self):
        self._reply(b"+ACK")
        self._acked = True

    async def ack_sync(self, timeout: float | None = None):
        if self._acked:
            raise make_error("ErrInvalidArg", "Message was already acknowledged")
        await self._js.client.request(self.msg.reply, b"+ACK", timeout=timeout or self._js.timeout)
        self._acked = True

    async def nak(self, delay: float | None = None):
        payload = b"-NAK" if delay is None else b"-NAK " + json.dumps({"delay": int(delay * _NS)}).encode()
        self._reply(payload)
        self._acked = True

    async def in_progress(self):
        self._reply(b"+WPI")

    async def term(self):
        self._reply(b"+TERM")
        self._acked = True

    def __repr__(self):
        return f"JsMsg({self.msg!r})"


class JetStream:
    """The JetStream context of one client."""

    def __init__(self, client, domain: str | None = None, api_prefix: str | None = None, timeout: float = 5.0):
        self.client = client
        self.prefix = _api_prefix(domain, api_prefix)
        self.timeout = timeout
        self._async_pending: set = set()
        self._async_limit = asyncio.Semaphore(4000)

    # ------------------------------------------------------------ plumbing
    async def api(self, tail: str, body=None) -> Info:
        payload = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
        try:
            msg = await self.client.request(f"{self.prefix}.{tail}", payload, timeout=self.timeout)
        except NatsError as e:
            if e.code == "ErrNoResponders":
                raise make_error("ErrJetStreamNotEnabled", "JetStream is not enabled in the server") from None
            raise
        resp = json.loads(msg.data) if msg.data else {}
        check_js_error(resp)
        resp.pop("type", None)
        return Info(resp)

    @staticmethod
    def _check(what, name):
        if not filename_safe(name):
            raise make_error("ErrInvalidArg", f"Invalid {what} name {name}")

    # ------------------------------------------------------------ account, streams
    async def account_info(self) -> Info:
        return await self.api("INFO")

    @staticmethod
    def _stream_body(name, config, kw) -> dict:
        body = config.to_api() if config is not None else {}
        body.update(_to_api(kw))
        body["name"] = name
        return body

    async def create_stream(self, name: str, config: StreamConfig | None = None, **kw) -> "Stream":
        """Create a stream from a StreamConfig and/or keyword fields (durations in seconds)."""
        self._check("stream", name)
        info = await self.api(f"STREAM.CREATE.{name}", self._stream_body(name, config, kw))
        return Stream(self, name, info)

    async def update_stream(self, name: str, config: StreamConfig | None = None, **kw) -> "Stream":
        self._check("stream", name)
        info = await self.api(f"STREAM.UPDATE.{name}", self._stream_body(name, config, kw))
        return Stream(self, name, info)

    async def stream(self, name: str) -> "Stream":
        self._check("stream", name)
        return Stream(self, name, await self.api(f"STREAM.INFO.{name}"))

    async def stream_info(self, name: str) -> Info:
        return (await self.stream(name)).info

    async def delete_stream(self, name: str) -> bool:
        return bool((await self.api(f"STREAM.DELETE.{name}")).get("success"))

    async def stream_names(self, subject: str | None = None) -> list[str]:
        resp = await self.api("STREAM.NAMES", {"subject": subject} if subject else None)
        return list(resp.get("streams") or [])

    async def purge_stream(self, name: str, filter: str | None = None, keep: int | None = None,
                           seq: int | None = None) -> int:
        body = {k: v for k, v in (("filter", filter), ("keep", keep), ("seq", seq)) if v is not None}
        return (await self.api(f"STREAM.PURGE.{name}", body or None)).get("purged", 0)

    # ------------------------------------------------------------ publish
    async def publish(self, subject: str, data=b"", headers=None, *, msg_id: str | None = None,
                      expected_stream: str | None = None, expected_last_seq: int | None = None,
                      expected_last_subject_seq: int | None = None, timeout: float | None = None) -> PubAck:
        hdrs = self._pub_headers(headers, msg_id, expected_stream, expected_last_seq, expected_last_subject_seq)
        msg = await self.client.request(subject, data, timeout=timeout or self.timeout, headers=hdrs)
        resp = json.loads(msg.data)
        check_js_error(resp)
        return PubAck(resp)

    @staticmethod
    def _pub_headers(headers, msg_id, stream, last_seq, last_subject_seq):
        hdrs = {k: (list(v) if isinstance(v, (list, tuple)) else [v]) for k, v in (headers or {}).items()}
        for k, v in (("Nats-Msg-Id", msg_id), ("Nats-Expected-Stream", stream),
                     ("Nats-Expected-Last-Sequence", last_seq),
                     ("Nats-Expected-Last-Subject-Sequence", last_subject_seq)):
            if v is not None:
                hdrs[k] = [str(v)]
        return hdrs or None

    def publish_async(self, subject: str, data=b"", headers=None, **kw) -> "asyncio.Future":
        """Publish without waiting: a future of the PubAck.  Many may be in flight."""
        async def one():
            async with self._async_limit:
                return await self.publish(subject, data, headers, **kw)
        task = asyncio.get_running_loop().create_task(one())
        self._async_pending.add(task)
        task.add_done_callback(self._async_pending.discard)
        return task

    async def publish_async_complete(self, timeout: float | None = None) -> None:
        if self._async_pending:
            await asyncio.wait_for(asyncio.gather(*list(self._async_pending), return_exceptions=True), timeout)

    @property
    def publish_async_pending(self) -> int:
        return len(self._async_pending)

    # ------------------------------------------------------------ consumers
    async def create_consumer(self, stream: str, config: ConsumerConfig | None = None, **kw) -> "Consumer":
        return await self._create_consumer(stream, "create", config, kw)

    async def update_consumer(self, stream: str, config: ConsumerConfig | None = None, **kw) -> "Consumer":
        return await self._create_consumer(stream, "update", config, kw)

    async def _create_consumer(self, stream, action, config, kw) -> "Consumer":
        self._check("stream", stream)
        cfg = config.to_api() if config is not None else {}
        cfg.update(_to_api(kw))
        # explicit acks unless told otherwise, like nats-tcl and nats.go (the API's default is none)
        cfg.setdefault("ack_policy", "explicit")
        name = cfg.get("name") or cfg.get("durable_name")
        if name is not None:
            self._check("consumer", name)
        if name:
            fs = cfg.get("filter_subject")
            tail = f"CONSUMER.CREATE.{stream}.{name}" + (f".{fs}" if fs and "*" not in fs and ">" not in fs else "")
        else:
            tail = f"CONSUMER.CREATE.{stream}"
        info = await self.api(tail, {"stream_name": stream, "config": cfg, "action": action})
        return Consumer(self, stream, info["name"], info)

    async def consumer(self, stream: str, name: str) -> "Consumer":
        self._check("consumer", name)
        info = await self.api(f"CONSUMER.INFO.{stream}.{name}")
        return Consumer(self, stream, name, info)

    async def delete_consumer(self, stream: str, name: str) -> bool:
        return bool((await self.api(f"CONSUMER.DELETE.{stream}.{name}")).get("success"))

    async def consumer_names(self, stream: str) -> list[str]:
        return list((await self.api(f"CONSUMER.NAMES.{stream}")).get("consumers") or [])

    def ordered_consumer(self, stream: str, filter_subject: str | None = None, deliver_policy: str = "all",
                         headers_only: bool = False, idle_heartbeat: float = 5.0):
        from .ordered import OrderedConsumer
        return OrderedConsumer(self, stream, filter_subject, deliver_policy, headers_only, idle_heartbeat)

    # ------------------------------------------------------------ messages
    async def get_msg(self, stream: str, seq: int | None = None, last_by_subj: str | None = None,
                      next_by_subj: str | None = None) -> Msg:
        body = {k: v for k, v in (("seq", seq), ("last_by_subj", last_by_subj), ("next_by_subj", next_by_subj))
                if v is not None}
        m = (await self.api(f"STREAM.MSG.GET.{stream}", body)).get("message") or {}
        hdrs = base64.b64decode(m.get("hdrs") or "")
        msg = Msg(m.get("subject", ""), base64.b64decode(m.get("data") or ""), None,
                  parse_headers(hdrs) if hdrs else None)
        msg.headers = dict(msg.headers or {}, **{"Nats-Sequence": [str(m.get("seq"))],
                                                  "Nats-Time-Stamp": [m.get("time", "")]})
        return msg

    async def direct_get(self, stream: str, seq: int | None = None, last_by_subj: str | None = None,
                         next_by_subj: str | None = None) -> Msg:
        """ADR-31 direct get; the stream needs allow_direct."""
        if last_by_subj is not None and seq is None and next_by_subj is None:
            subject, payload = f"{self.prefix}.DIRECT.GET.{stream}.{last_by_subj}", b""
        else:
            body = {k: v for k, v in (("seq", seq), ("next_by_subj", next_by_subj)) if v is not None}
            subject, payload = f"{self.prefix}.DIRECT.GET.{stream}", json.dumps(body).encode()
        msg = await self.client.request(subject, payload, timeout=self.timeout)
        if msg.status == 404:
            raise make_error("ErrMsgNotFound", "no message found")
        if msg.status == 408:
            raise make_error("ErrInvalidArg", "Invalid request")
        subj = msg.header("Nats-Subject", msg.subject)
        return Msg(subj, msg.data, None, msg.headers)

    async def delete_msg(self, stream: str, seq: int, erase: bool = False) -> bool:
        resp = await self.api(f"STREAM.MSG.DELETE.{stream}", {"seq": seq, "no_erase": not erase})
        return bool(resp.get("success"))

    # ------------------------------------------------------------ KV
    async def create_key_value(self, bucket: str, **config):
        from .kv import KeyValue
        return await KeyValue.create_bucket(self, bucket, **config)

    async def key_value(self, bucket: str):
        from .kv import KeyValue
        return await KeyValue.bind(self, bucket)

    async def delete_key_value(self, bucket: str) -> bool:
        try:
            return await self.delete_stream(f"KV_{bucket}")
        except NatsError as e:
            if e.code == "ErrStreamNotFound":
                raise make_error("ErrBucketNotFound", f"Bucket {bucket} not found") from None
            raise

    async def key_value_buckets(self) -> list[str]:
        return [n[3:] for n in await self.stream_names() if n.startswith("KV_")]

    # ------------------------------------------------------------ Object Store
    async def create_object_store(self, bucket: str, **config):
        from .objectstore import ObjectStore
        return await ObjectStore.create_bucket(self, bucket, **config)

    async def object_store(self, bucket: str):
        from .objectstore import ObjectStore
        return await ObjectStore.bind(self, bucket)

    async def delete_object_store(self, bucket: str) -> bool:
        try:
            return await self.delete_stream(f"OBJ_{bucket}")
        except NatsError as e:
            if e.code == "ErrStreamNotFound":
                raise make_error("ErrBucketNotFound", f"Bucket {bucket} not found") from None
            raise

    async def object_store_names(self) -> list[str]:
        return [n[4:] for n in await self.stream_names() if n.startswith("OBJ_")]


class Stream:
    """A stream, found on the JetStream context (``await js.stream(name)``)."""

    def __init__(self, js: JetStream, name: str, info: Info):
        self.js = js
        self.name = name
        self.info = info

    async def refresh(self) -> Info:
        self.info = await self.js.api(f"STREAM.INFO.{self.name}")
        return self.info

    @property
    def config(self) -> StreamConfig:
        return StreamConfig.from_api(self.info.get("config", {}))

    async def create_consumer(self, **config) -> "Consumer":
        return await self.js.create_consumer(self.name, **config)

    async def consumer(self, name: str) -> "Consumer":
        return await self.js.consumer(self.name, name)

    async def delete_consumer(self, name: str) -> bool:
        return await self.js.delete_consumer(self.name, name)

    async def purge(self, **kw) -> int:
        return await self.js.purge_stream(self.name, **kw)

    async def get_msg(self, **kw) -> Msg:
        if self.info.get("config", {}).get("allow_direct"):
            return await self.js.direct_get(self.name, **kw)
        return await self.js.get_msg(self.name, **kw)

    async def delete_msg(self, seq: int, erase: bool = False) -> bool:
        return await self.js.delete_msg(self.name, seq, erase)

    async def delete(self) -> bool:
        return await self.js.delete_stream(self.name)


class Consumer:
    """A pull consumer: fetch batches, or consume continuously."""

    def __init__(self, js: JetStream, stream: str, name: str, info: Info):
        self.js = js
        self.stream = stream
        self.name = name
        self.info = info

    async def refresh(self) -> Info:
        self.info = await self.js.api(f"CONSUMER.INFO.{self.stream}.{self.name}")
        return self.info

    @property
    def config(self) -> ConsumerConfig:
        return ConsumerConfig.from_api(self.info.get("config", {}))

    async def fetch(self, batch: int = 1, expires: float | None = None, no_wait: bool | None = None,
                    max_bytes: int | None = None, heartbeat: float | None = None) -> list[JsMsg]:
        """Up to ``batch`` messages; waits at most ``expires`` seconds (default: what is there now)."""
        client = self.js.client
        body = {"batch": batch}
        if expires is None:
            body["no_wait"] = True
            wait = self.js.timeout
        else:
            body["expires"] = int(max(expires - 0.01, 0.001) * _NS)
            wait = expires + 0.5
            if no_wait:
                body["no_wait"] = True
        if max_bytes:
            body["max_bytes"] = max_bytes
        if heartbeat:
            body["idle_heartbeat"] = int(heartbeat * _NS)
        inbox = client.new_inbox()
        sub = await client.subscribe(inbox, max_msgs=batch + 8)
        client.publish(f"{self.js.prefix}.CONSUMER.MSG.NEXT.{self.stream}.{self.name}",
                       json.dumps(body).encode(), reply=inbox)
        out: list[JsMsg] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        try:
            while len(out) < batch:
                left = deadline - loop.time()
                if left <= 0:
                    break
                try:
                    msg = await sub.next_msg(left)
                except NatsError as e:
                    if e.code in ("ErrTimeout", "ErrBadSubscription"):
                        break
                    raise
                kind = pull_status(msg)
                if kind == "msg":
                    out.append(JsMsg(self.js, msg))
                elif kind == "end":
                    break
                elif kind == "no_responders":
                    raise make_error("ErrNoResponders", f"No JetStream for consumer {self.stream}/{self.name}")
        finally:
            if not sub._engine_sub.closed:
                await sub.unsubscribe()
        if not out and expires is not None and loop.time() >= deadline:
            # a wrong stream or consumer shows up as a timeout: report the real cause
            await self.refresh()
        return out

    async def messages(self, batch: int = 100, expires: float = 5.0):
        """An endless async iterator of messages, pulling ``batch`` at a time."""
        while True:
            for m in await self.fetch(batch, expires=expires):
                yield m

    def consume(self, cb, batch: int = 100, threshold: int | None = None, expires: float = 30.0,
                heartbeat: float | None = None, error_cb=None) -> "ConsumeContext":
        """Continuous pull (the "consume" of JetStream client API v2).

        Keeps up to ``batch`` messages requested: a new pull request goes out
        whenever fewer than ``threshold`` (default half) remain outstanding, or
        when one expires.  With ``heartbeat`` the server sends idle heartbeats
        and two missed ones are reported to ``error_cb`` (ErrTimeout) and the
        pulls are re-issued.  ``cb(msg)`` may be a coroutine function.
        """
        ctx = ConsumeContext(self, cb, batch, threshold or max(1, batch // 2), expires, heartbeat, error_cb)
        ctx.start()
        return ctx


class ConsumeContext:
    """A running :meth:`Consumer.consume`; ``stop()`` ends it."""

    def __init__(self, consumer, cb, batch, threshold, expires, heartbeat, error_cb):
        self.consumer = consumer
        self.cb = cb
        self.batch = batch
        self.threshold = threshold
        self.expires = expires
        self.heartbeat = heartbeat
        self.error_cb = error_cb
        self.outstanding = 0
        self.delivered = 0
        self._task = None
        self._sub = None

    def start(self):
        self._task = asyncio.get_running_loop().create_task(self._run())

    def _pull(self):
        js = self.consumer.js
        want = self.batch - self.outstanding
        if want <= 0:
            return
        body = {"batch": want, "expires": int(self.expires * _NS)}
        if self.heartbeat:
            body["idle_heartbeat"] = int(self.heartbeat * _NS)
        js.client.publish(f"{js.prefix}.CONSUMER.MSG.NEXT.{self.consumer.stream}.{self.consumer.name}",
                          json.dumps(body).encode(), reply=self._inbox)
        self.outstanding += want

    def _report(self, err):
        if self.error_cb is not None:
            self.error_cb(err)

    async def _run(self):
        client = self.consumer.js.client
        self._inbox = client.new_inbox()
        self._sub = await client.subscribe(self._inbox)
        idle = (self.heartbeat * 2) if self.heartbeat else self.expires + 1.0
        self._pull()
        try:
            while True:
                try:
                    msg = await self._sub.next_msg(idle)
                except NatsError as e:
                    if e.code != "ErrTimeout":
                        raise
                    if self.heartbeat:
                        self._report(make_error("ErrTimeout", "no heartbeat from the server"))
                    self.outstanding = 0
                    self._pull()
                    continue
                kind = pull_status(msg)
                if kind == "heartbeat":
                    continue
                if kind in ("end", "no_responders"):
                    # an expired or ended pull: what it still owed is not coming
                    pending = msg.header("Nats-Pending-Messages")
                    self.outstanding = max(0, self.outstanding - int(pending)) if pending else 0
                    if kind == "no_responders" or msg.status == 409:
                        self._report(make_error("ErrConsumerNotFound" if msg.status == 409 else "ErrNoResponders",
                                                msg.description or "pull request ended"))
                        await asyncio.sleep(min(self.expires, 1.0))
                    self._pull()
                    continue
                self.outstanding -= 1
                self.delivered += 1
                r = self.cb(JsMsg(self.consumer.js, msg))
                if asyncio.iscoroutine(r):
                    await r
                if self.outstanding < self.threshold:
                    self._pull()
        except asyncio.CancelledError:
            pass

    async def stop(self):
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        if self._sub is not None and not self._sub._engine_sub.closed:
            await self._sub.unsubscribe()
