"""``nats.js.client`` of nats-py 2.x: :class:`JetStreamContext`.

Publishing (``publish``, ``publish_async``), push subscriptions
(``subscribe``/``subscribe_bind``: durable, queue, ordered, flow control,
heartbeats), pull subscriptions (``pull_subscribe``/``pull_subscribe_bind``,
``PullSubscription.fetch``) and the Key-Value / Object Store entry points.

The protocol pieces are the engine's and the asyncio face's: publish
headers and acks (``engine.js.publish``), push deliveries (the face's
``aio.jetstream.push.PushSubscription``), the ordered consumer (the face's
``aio.jetstream.ordered.OrderedConsumer``), the fetch on a long-lived inbox
(the face's ``JetStream.fetch_on_inbox``).  What this module adds is nats-py's
shape: its argument names, its fetch contract (a ``no_wait`` look first, then
one request that waits), its subscription classes and exceptions.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from typing import Any, Awaitable, Callable

from tclnats_py.aio.jetstream.info import ConsumerInfo
from tclnats_py.aio.jetstream.ordered import OrderedConsumer
from tclnats_py.aio.jetstream.push import PushSubscription
from tclnats_py.engine.js import kv as _kv
from tclnats_py.engine.js.publish import parse_ack_fast, publish_headers
from tclnats_py.errors import NatsError
from tclnats_py.natspy import errors as _core
from tclnats_py.natspy.aio.msg import Msg, headers_arg
from tclnats_py.natspy.aio.subscription import Subscription
from tclnats_py.natspy.js import api
from tclnats_py.natspy.js import errors as _jserr
from tclnats_py.natspy.js import kv as _kv_face
from tclnats_py.natspy.js import object_store as _obj_face
from tclnats_py.natspy.js.kv import KeyValue
from tclnats_py.natspy.js import manager as _manager
from tclnats_py.natspy.js.manager import JetStreamManager, name_required, translate
from tclnats_py.natspy.js.object_store import ObjectStore

__all__ = ["JetStreamContext", "DEFAULT_JS_SUB_PENDING_MSGS_LIMIT", "DEFAULT_JS_SUB_PENDING_BYTES_LIMIT",
           "NO_RESPONDERS_STATUS", "KV_STREAM_TEMPLATE", "KV_PRE_TEMPLATE", "KV_MAX_HISTORY"]

# how much a JetStream subscription may hold undelivered by default: 2**19
# messages, 2**28 bytes (256 MiB); public under nats-py's names
_SUB_PENDING_MSGS = 1 << 19
_SUB_PENDING_BYTES = 1 << 28
DEFAULT_JS_SUB_PENDING_MSGS_LIMIT = _SUB_PENDING_MSGS
DEFAULT_JS_SUB_PENDING_BYTES_LIMIT = _SUB_PENDING_BYTES

# what an ordered consumer's config is forced to (ADR-17): no acks, one
# delivery, flow control, one replica in memory, an ack wait that never matters
_ORDERED_SETTINGS: dict[str, Any] = {
    "flow_control": True, "ack_policy": api.AckPolicy.NONE, "max_deliver": 1, "ack_wait": 22 * 3600,
    "num_replicas": 1, "mem_storage": True}
# idle heartbeat of an ordered consumer when none is given, the wait between
# attempts to recreate it, its inactive threshold when none is given (seconds)
_ORDERED_HEARTBEAT = 5
_ORDERED_RETRY = 10.0
_ORDERED_INACTIVE = 5 * 60

# nats-py's module constants (programs import some of them)
NO_RESPONDERS_STATUS = "503"
NATS_HDR_LINE_SIZE = len(b"NATS/1.0")  # a header block's first line
KV_STREAM_TEMPLATE = _kv.stream_name("{bucket}")
KV_PRE_TEMPLATE = _kv.key_prefix("{bucket}")
KV_MAX_HISTORY = 64

Callback = Callable[[Msg], Awaitable[None]]

# nats-py waits for room for an async publish without bound when wait_stall is None
_NO_STALL_LIMIT = 600.0
# any whitespace (re's \s in a str pattern is str.isspace)
_SPACE = re.compile(r"\s").search


def _ttl_header(msg_ttl: float | None) -> str | None:
    return None if msg_ttl is None else str(int(msg_ttl))


async def _core_subscribe(nc: Any, subject: str, queue: str, impl_cb: Any, cls: type, cb: Any,
                          pending_msgs_limit: int, pending_bytes_limit: int) -> Any:
    """A subscription of the natspy client whose messages reach ``impl_cb``
    as the asyncio face's messages (or queue up when it is None), wrapped
    in ``cls`` (a natspy Subscription) and registered like the client's own."""
    impl = nc._impl
    if impl is None or impl.is_closed:
        raise _core.ConnectionClosedError()
    try:
        isub = await impl.subscribe(subject, queue or None, impl_cb, 0, pending_msgs_limit, pending_bytes_limit)
    except NatsError as e:
        raise translate(e) from e
    sub = cls(nc, isub, cb, None)
    isub.natspy_sub = sub
    nc._subs[isub.sid] = sub
    return sub


async def _bound_consumer_info(sub: Any) -> api.ConsumerInfo:
    """``consumer_info()`` of a push or pull subscription: its consumer's current info."""
    return await sub._js._jsm.consumer_info(sub._stream, sub._consumer)


class JetStreamContext(_manager.JetStreamManager):
    """JetStream on one connection: ``nc.jetstream(prefix=..., domain=...,
    timeout=5, publish_async_max_pending=4000)``; the management calls of
    :class:`JetStreamManager` too."""

    def __init__(self, conn: Any, prefix: str = api.DEFAULT_PREFIX, domain: str | None = None,
                 timeout: float = 5, publish_async_max_pending: int = 4000) -> None:
        super().__init__(conn, prefix=prefix, timeout=timeout, domain=domain)
        self._async_max = publish_async_max_pending
        self._async_futures: set = set()

    @classmethod
    def is_status_msg(cls, msg: Msg | None) -> str | None:
        """The status code of a status message (its ``Status`` header), else None."""
        found = (msg.headers or {}) if msg is not None else {}
        return found.get(api.Header.STATUS)

    @property
    def _js(self):
        impl = self._impl_js
        if impl is None or impl.client is not self._nc._impl:
            from tclnats_py.aio.jetstream import JetStream
            impl = self._impl_js = JetStream(self._nc._impl, api_prefix=self._prefix, timeout=self._timeout,
                                             publish_async_max_pending=self._async_max)
        return impl

    @property
    def _jsm(self) -> JetStreamManager:
        return JetStreamManager(self._nc, prefix=self._prefix, timeout=self._timeout)

    # ------------------------------------------------------------ publish
    def _headers(self, headers: dict[str, Any] | None, stream: str | None, msg_ttl: float | None):
        if headers:
            headers = headers_arg(headers)  # nats-py's header rules (BadHeaderError)
        try:
            return publish_headers(headers, expected_stream=stream, ttl=_ttl_header(msg_ttl))
        except NatsError as e:
            raise translate(e) from e

    async def _require_ttl(self) -> None:
        """Per-message TTLs need JetStream API level 1 (ADR-43/44), asked once."""
        try:
            await self._js.require_level("msg_ttl")
        except NatsError as e:
            raise translate(e) from e

    async def publish(self, subject: str, payload: bytes = b"", timeout: float | None = None,
                      stream: str | None = None, headers: dict[str, Any] | None = None,
                      msg_ttl: float | None = None) -> api.PubAck:
        """Publish to a stream and wait for its ack (NoStreamResponseError: no stream on ``subject``).
        ``msg_ttl`` needs nats-server 2.11: before, a nats.errors.Error (the
        engine's ErrServerTooOld its cause) and nothing is sent."""
        hdrs = self._headers(headers, stream, msg_ttl)
        if msg_ttl is not None:
            await self._require_ttl()
        impl = self._nc._impl
        if impl is None or impl.is_closed:
            raise _core.ConnectionClosedError()
        try:
            # nats-py sends the subject as given: wildcard tokens too (KV keys
            # with validate_keys=False); only what would break the protocol is refused
            loose = bool(subject) and isinstance(subject, str) and _SPACE(subject) is None
            reply = await impl.request(subject, payload, self._timeout if timeout is None else timeout, hdrs,
                                       check_subject=not loose)
            resp = parse_ack_fast(reply)
        except NatsError as e:
            if e.code == "ErrNoResponders":
                raise _jserr.NoStreamResponseError() from e
            raise translate(e) from e
        return api.PubAck.from_response(resp)

    async def publish_async(self, subject: str, payload: bytes = b"", wait_stall: float | None = None,
                            stream: str | None = None, headers: dict | None = None,
                            msg_ttl: float | None = None) -> "asyncio.Future[api.PubAck]":
        """Publish without waiting: a future of the PubAck.  At most
        ``publish_async_max_pending`` in flight; past it this waits up to
        ``wait_stall`` seconds for room (None: as long as it takes), then
        TooManyStalledMsgsError."""
        hdrs = self._headers(headers, stream, msg_ttl)
        if msg_ttl is not None:
            await self._require_ttl()
        try:
            inner = await self._js.publish_async(subject, payload, hdrs, timeout=self._timeout,
                                                 wait_stall=_NO_STALL_LIMIT if wait_stall is None else wait_stall)
        except NatsError as e:
            raise translate(e) from e
        loop = asyncio.get_running_loop()
        outer: asyncio.Future = loop.create_future()
        self._async_futures.add(outer)
        outer.add_done_callback(self._async_futures.discard)

        def done(f: asyncio.Future) -> None:
            if outer.done():
                return
            if f.cancelled():
                outer.cancel()
                return
            e = f.exception()
            if e is None:
                outer.set_result(api.PubAck.from_response(dict(f.result())))
            elif isinstance(e, NatsError) and e.code == "ErrNoResponders":
                outer.set_exception(_jserr.NoStreamResponseError())
            else:
                outer.set_exception(translate(e))

        inner.add_done_callback(done)
        return outer

    def publish_async_pending(self) -> int:
        """How many async publishes wait for their ack."""
        return len(self._async_futures)

    async def _all_acks(self) -> None:
        """Wait until every async publish so far has its ack (or error)."""
        waiting = list(self._async_futures)
        if waiting:
            await asyncio.wait(waiting)

    publish_async_completed = _all_acks

    # ------------------------------------------------------------ push subscriptions
    async def subscribe(self, subject: str, queue: str | None = None, cb: Callback | None = None,
                        durable: str | None = None, stream: str | None = None,
                        config: api.ConsumerConfig | None = None, manual_ack: bool = False,
                        ordered_consumer: bool = False, idle_heartbeat: float | None = None,
                        flow_control: bool = False, pending_msgs_limit: int = _SUB_PENDING_MSGS,
                        pending_bytes_limit: int = _SUB_PENDING_BYTES,
                        deliver_policy: api.DeliverPolicy | None = None, headers_only: bool | None = None,
                        inactive_threshold: float | None = None) -> "JetStreamContext.PushSubscription":
        """Push-subscribe to ``subject``'s stream: bind to the durable (or
        queue) consumer when it exists, else create one; see nats-py."""
        if stream is None:
            stream = await self.find_stream_name_by_subject(subject)
        if queue:
            if durable and durable != queue:
                raise _jserr.Error(f"cannot create queue subscription '{queue}' to consumer '{durable}'")
            durable = queue
        info = None
        if durable:
            try:
                info = await self.consumer_info(stream, durable)
            except _jserr.NotFoundError:
                info = None
        if info is not None:
            config = info.config
            group = config.deliver_group
            if not group:
                if queue:
                    raise _jserr.Error("cannot create a queue subscription for a consumer without a deliver group")
                if info.push_bound:
                    raise _jserr.Error("consumer is already bound to a subscription")
            elif not queue:
                raise _jserr.Error(f"cannot create a subscription for a consumer with a deliver group {group}")
            elif queue != group:
                raise _jserr.Error(f"cannot create a queue subscription {queue} for a consumer with a deliver "
                                   f"group {group}")
            consumer = durable
        else:
            config = api.ConsumerConfig() if config is None else config
            # the consumer's own settings win over these arguments ...
            defaults: dict[str, Any] = {"durable_name": durable, "deliver_group": queue, "headers_only": headers_only}
            for attr, value in defaults.items():
                if not getattr(config, attr):
                    setattr(config, attr, value)
            # ... and these arguments, when given, over the consumer's settings
            given: dict[str, Any] = {"deliver_policy": deliver_policy, "inactive_threshold": inactive_threshold,
                                     "idle_heartbeat": idle_heartbeat}
            for attr, value in given.items():
                if value:
                    setattr(config, attr, value)
            if config.deliver_subject is None:
                config.deliver_subject = self._nc.new_inbox()
            if not config.filter_subjects:
                config.filter_subject = subject
            config.flow_control = flow_control
            if ordered_consumer:
                for attr, value in _ORDERED_SETTINGS.items():
                    setattr(config, attr, value)
                config.idle_heartbeat = config.idle_heartbeat or _ORDERED_HEARTBEAT
            info = await self.add_consumer(stream, config=config)
            consumer = info.name
        assert consumer is not None
        return await self.subscribe_bind(stream, config, consumer, cb=cb, manual_ack=manual_ack,
                                         ordered_consumer=ordered_consumer, pending_msgs_limit=pending_msgs_limit,
                                         pending_bytes_limit=pending_bytes_limit, _info=info)

    async def subscribe_bind(self, stream: str, config: api.ConsumerConfig, consumer: str,
                             cb: Callback | None = None, manual_ack: bool = False, ordered_consumer: bool = False,
                             pending_msgs_limit: int = _SUB_PENDING_MSGS,
                             pending_bytes_limit: int = _SUB_PENDING_BYTES,
                             _info: api.ConsumerInfo | None = None) -> "JetStreamContext.PushSubscription":
        """Push-subscribe to the existing consumer ``consumer`` (its config
        gives the deliver subject and group).  With ``cb`` messages are acked
        after ``cb`` returns unless ``manual_ack`` (or the consumer acks none)."""
        if config.deliver_subject is None:
            raise TypeError("nats: subscribe_bind needs a push consumer's config (config.deliver_subject is None)")
        auto_ack = cb is not None and not manual_ack and config.ack_policy not in (api.AckPolicy.NONE, "none")
        jsi = _PushState(self, stream, consumer, config, ordered_consumer, cb, auto_ack)
        sub = await _core_subscribe(self._nc, config.deliver_subject, config.deliver_group or "",
                                    jsi.on_impl_msg if cb is not None else None,
                                    JetStreamContext.PushSubscription, cb, pending_msgs_limit, pending_bytes_limit)
        sub._js = self
        sub._stream = stream
        sub._consumer = consumer
        # the limits as given (nats-py keeps them so; <= 0: unbounded)
        sub._pending_msgs_limit = pending_msgs_limit
        sub._pending_bytes_limit = pending_bytes_limit
        sub._jsi = jsi
        jsi.sub = sub
        sub._created_info = _info  # the consumer as created (what was pending then), when this call made it
        if ordered_consumer:
            jsi.created(_info if _info is not None else await self.consumer_info(stream, consumer))
        jsi.start()
        return sub

    # ------------------------------------------------------------ pull subscriptions
    async def pull_subscribe(self, subject: str, durable: str | None = None, stream: str | None = None,
                             config: api.ConsumerConfig | None = None,
                             pending_msgs_limit: int = _SUB_PENDING_MSGS,
                             pending_bytes_limit: int = _SUB_PENDING_BYTES,
                             inbox_prefix: bytes | None = None) -> "JetStreamContext.PullSubscription":
        """A pull subscription on ``subject``'s stream: the durable consumer
        ``durable`` (created when missing), or a new ephemeral one."""
        if stream is None:
            stream = await self.find_stream_name_by_subject(subject)
        create = True
        if durable:
            try:
                await self.consumer_info(stream, durable)
                create = False
            except _jserr.NotFoundError:
                pass
        name = durable
        if create:
            config = api.ConsumerConfig() if config is None else config
            if not config.filter_subjects:
                config.filter_subject = subject
            if durable:
                config.name = durable
                config.durable_name = durable
            else:
                from tclnats_py.engine.nuid import next_token
                name = config.name = next_token()
            await self.add_consumer(stream, config=config)
        return await self.pull_subscribe_bind(durable=durable, stream=stream, inbox_prefix=inbox_prefix,
                                              pending_msgs_limit=pending_msgs_limit,
                                              pending_bytes_limit=pending_bytes_limit, name=name)

    async def pull_subscribe_bind(self, consumer: str | None = None, stream: str | None = None,
                                  inbox_prefix: bytes | None = None,
                                  pending_msgs_limit: int = _SUB_PENDING_MSGS,
                                  pending_bytes_limit: int = _SUB_PENDING_BYTES,
                                  name: str | None = None,
                                  durable: str | None = None) -> "JetStreamContext.PullSubscription":
        """A pull subscription on the existing consumer (``consumer``, or the older ``durable``/``name``)."""
        if not stream:
            raise name_required("stream")
        if inbox_prefix is None:
            deliver = self._nc.new_inbox()
        else:
            from tclnats_py.engine.nuid import next_token
            prefix = inbox_prefix.decode() if isinstance(inbox_prefix, (bytes, bytearray)) else str(inbox_prefix)
            deliver = prefix + next_token()
        sub = await _core_subscribe(self._nc, deliver, "", None, Subscription, None, pending_msgs_limit,
                                    pending_bytes_limit)
        return JetStreamContext.PullSubscription(self, sub, stream, durable or name or consumer or "", deliver)

    # ------------------------------------------------------------ Key-Value, Object Store
    # binding and deleting a bucket are the kv / object_store modules'
    # functions of (js, bucket), used as methods as they are
    key_value = _kv_face.bind_key_value
    delete_key_value = _kv_face.delete_key_value
    object_store = _obj_face.bind_object_store
    delete_object_store = _obj_face.delete_object_store

    async def create_key_value(self, config: api.KeyValueConfig | None = None, **params: Any) -> KeyValue:
        return await _kv_face.create_key_value(self, config, params)

    async def create_object_store(self, bucket: str | None = None,
                                  config: api.ObjectStoreConfig | None = None, **params: Any) -> ObjectStore:
        return await _obj_face.create_object_store(self, bucket, config, params)

    # ------------------------------------------------------------ subscription classes
    class PushSubscription(Subscription):
        """A subscription to a push consumer's deliver subject; flow control
        and heartbeats are handled before messages reach the user."""

        _js: "JetStreamContext"
        _stream: str
        _consumer: str
        _created_info: api.ConsumerInfo | None = None
        _pending_msgs_limit: int = _SUB_PENDING_MSGS
        _pending_bytes_limit: int = _SUB_PENDING_BYTES

        consumer_info = _bound_consumer_info

        @property
        def delivered(self) -> int:
            return self._jsi.delivered if self._jsi is not None else 0

        async def next_msg(self, timeout: float | None = 1.0) -> Msg:
            if self._cb is not None:
                raise _core.Error("nats: next_msg cannot be used in async subscriptions")
            loop = asyncio.get_running_loop()
            deadline = None if timeout is None else loop.time() + timeout
            while True:
                if self._conn.is_closed:
                    raise _core.ConnectionClosedError()
                left = None if deadline is None else max(0.0, deadline - loop.time())
                try:
                    m = await self._impl.next_msg(left)
                except NatsError as e:
                    if self._conn.is_closed:
                        raise _core.ConnectionClosedError() from e
                    if e.code == "ErrBadSubscription":
                        raise _core.TimeoutError() from e
                    raise translate(e) from e
                out = self._jsi.handle(m)
                if out is not None:
                    return out

        @property
        def messages(self):
            if self._cb is not None:
                raise _core.Error("cannot iterate over messages with a non iteration subscription type")
            return _PushMessages(self)

        async def unsubscribe(self, limit: int = 0) -> None:
            await super().unsubscribe(limit)
            if self._jsi is not None:
                await self._jsi.stop()

        async def drain(self) -> None:
            await super().drain()
            if self._jsi is not None:
                await self._jsi.stop()

    class PullSubscription:
        """A subscription to a pull consumer: ``await sub.fetch(batch, timeout)``."""

        def __init__(self, js: "JetStreamContext", sub: Subscription, stream: str, consumer: str,
                     deliver: Any) -> None:
            self._js = js
            self._nc = js._nc
            self._sub = sub
            self._stream = stream
            self._consumer = consumer
            self._nms = js._js.jsapi.next_subject(stream, consumer)
            self._deliver = deliver.decode() if isinstance(deliver, (bytes, bytearray)) else deliver

        @property
        def pending_msgs(self) -> int:
            return self._sub.pending_msgs

        @property
        def pending_bytes(self) -> int:
            return self._sub.pending_bytes

        @property
        def delivered(self) -> int:
            return self._sub.delivered

        async def unsubscribe(self) -> None:
            await self._inbox().unsubscribe()

        consumer_info = _bound_consumer_info

        def _inbox(self) -> Subscription:
            """The subscription to the fetch inbox (ValueError when there is none)."""
            if self._sub is None:
                raise ValueError("nats: this pull subscription has no inbox subscription")
            return self._sub

        async def fetch(self, batch: int = 1, timeout: float | None = 5,
                        heartbeat: float | None = None) -> list[Msg]:
            """Up to ``batch`` messages: what the server has now, else those
            that arrive within ``timeout`` seconds (None: no limit).
            nats.errors.TimeoutError when none came (FetchTimeoutError when
            the server sent heartbeats but no message)."""
            self._inbox()
            if not batch >= 1:
                raise ValueError(f"nats: fetch wants a batch of at least 1 message, not {batch!r}")
            if not (timeout is None or timeout > 0):
                raise ValueError(f"nats: fetch wants a positive timeout (or None), not {timeout!r}")
            return await _Fetch(self, batch, timeout, heartbeat).run()


class _PushMessages:
    """``async for msg in sub.messages`` of a push subscription."""

    def __init__(self, sub: "JetStreamContext.PushSubscription") -> None:
        self._sub = sub

    def __aiter__(self) -> "_PushMessages":
        return self

    async def __anext__(self) -> Msg:
        sub = self._sub
        while True:
            try:
                m = await sub._impl.__anext__()
            except NatsError as e:
                raise translate(e) from e
            out = sub._jsi.handle(m)
            if out is not None:
                return out


class _PushState:
    """The JetStream side of a push subscription, on the asyncio face.

    What arrives on the deliver subject is sorted by the face's
    :class:`~tclnats_py.aio.jetstream.push.PushSubscription` (flow control
    and stalled heartbeats answered, statuses and missed heartbeats reported)
    or, for an ordered consumer, its
    :class:`~tclnats_py.aio.jetstream.ordered.OrderedConsumer` (ADR-17: gaps
    and silence recreate the consumer from the next stream sequence on a new
    deliver subject).  This class turns their messages into nats-py's, runs
    the callback (acking after it unless the subscription acks manually),
    watches an ordered consumer's heartbeats and swaps the subscription under
    the nats-py one when the consumer is recreated."""

    def __init__(self, js: JetStreamContext, stream: str, consumer: str, config: api.ConsumerConfig,
                 ordered: bool, cb: Callback | None, auto_ack: bool) -> None:
        self.js = js
        self.nc = js._nc
        self.stream = stream
        self.consumer = consumer
        self.config = config
        self.cb = cb
        self.auto_ack = auto_ack
        hb = config.idle_heartbeat
        self.push: PushSubscription | None = None
        self.ordered: OrderedConsumer | None = None
        if ordered:
            policy = config.deliver_policy
            threshold = config.inactive_threshold
            self.ordered = js._js.ordered_consumer(
                stream, filter_subject=None if config.filter_subjects else (config.filter_subject or None),
                filter_subjects=config.filter_subjects, deliver_policy=getattr(policy, "value", policy) or "all",
                opt_start_seq=config.opt_start_seq, opt_start_time=api.format_time(config.opt_start_time),
                headers_only=bool(config.headers_only), idle_heartbeat=hb or _ORDERED_HEARTBEAT,
                retry=_ORDERED_RETRY, inactive_threshold=threshold or _ORDERED_INACTIVE)
        else:
            info = {"stream_name": stream, "name": consumer, "config": {
                "deliver_subject": config.deliver_subject, "deliver_group": config.deliver_group,
                "idle_heartbeat": int(hb * 1_000_000_000) if hb else 0}}
            self.push = PushSubscription(js._js, ConsumerInfo(info), None, self._report)
        self.sub: JetStreamContext.PushSubscription | None = None
        self.delivered = 0
        self.last_seen = 0.0  # loop time of the last message or heartbeat (an ordered consumer's)
        self._hb_task: asyncio.Task | None = None
        self._resetting = False

    def created(self, info: api.ConsumerInfo) -> None:
        """The consumer the subscription starts on (an ordered one tracks its sequences from here)."""
        if self.ordered is not None and self.sub is not None:
            d = info.delivered
            self.ordered.adopt({"name": info.name, "delivered": {
                "stream_seq": d.stream_seq if d else 0, "consumer_seq": d.consumer_seq if d else 0}},
                self.sub._impl)

    # -------------------------------------------------------- lifecycle
    def start(self) -> None:
        if self.push is not None:
            self.push.watch()
        elif self.ordered is not None and self.ordered.heartbeat_timeout:
            self._hb_task = asyncio.get_running_loop().create_task(self._watch(self.ordered.heartbeat_timeout))

    async def stop(self) -> None:
        t, self._hb_task = self._hb_task, None
        if t is not None and t is not asyncio.current_task():
            t.cancel()
        if self.ordered is not None:
            await self.ordered.stop()
        if self.push is not None:
            await self.push.unsubscribe()

    async def _watch(self, wait: float) -> None:
        """An ordered consumer's idle heartbeats: nothing from the server for
        its timeout (counted from the last thing that came) resets it."""
        loop = asyncio.get_running_loop()
        self.last_seen = loop.time()
        while not self.nc.is_closed:
            left = self.last_seen + wait - loop.time()
            if left > 0:
                await asyncio.sleep(left)
                continue
            self.last_seen = loop.time()  # the next miss is counted from now
            if self.ordered is not None and self.ordered.heartbeat_missed():
                await self._reset()

    async def _report(self, err: BaseException) -> None:
        cb = getattr(self.nc, "_error_cb", None)
        if cb is None:
            return
        r = cb(translate(err) if isinstance(err, NatsError) else err)
        if inspect.isawaitable(r):
            await r

    # -------------------------------------------------------- messages
    def handle(self, m: Any) -> Msg | None:
        """One message of the deliver subject: the user's Msg, or None when
        it was a control message (carried out by the face)."""
        if self.ordered is not None:
            self.last_seen = asyncio.get_running_loop().time()
            jm, reset = self.ordered.sort(m)
            if reset:
                self.nc._impl.spawn(self._reset())
        else:
            assert self.push is not None
            jm = self.push.sort(m)
        if jm is None:
            return None
        self.delivered += 1
        return Msg._from_impl(self.nc, jm.msg)

    async def on_impl_msg(self, m: Any) -> None:
        """The impl subscription's callback (a callback subscription)."""
        msg = self.handle(m)
        if msg is None:
            return
        cb = self.cb
        assert cb is not None
        r = cb(msg)
        if inspect.isawaitable(r):
            await r
        if self.auto_ack and not msg._ackd:
            try:
                await msg.ack()
            except _core.MsgAlreadyAckdError:
                pass

    # -------------------------------------------------------- ordered consumer
    async def _reset(self) -> None:
        """Recreate the ordered consumer (the face's reset: from the next
        stream sequence, on a new deliver subject, retried as it says)."""
        oc = self.ordered
        sub = self.sub
        if oc is None or self._resetting or sub is None or self.nc.is_closed:
            return
        self._resetting = True
        try:
            await oc.reset(self._resubscribe, self._report)
        finally:
            self._resetting = False
        now = oc.subscription
        if now is not None and now is sub._impl and oc.name:  # recreated (not stopped, not closed)
            sub._consumer = self.consumer = oc.name
            self.config.deliver_subject = now.subject

    async def _resubscribe(self, deliver: str) -> Any:
        """The subscription to the recreated consumer's ``deliver`` subject,
        put under the nats-py subscription in place of the old one."""
        sub = self.sub
        assert sub is not None
        impl = self.nc._impl
        old = sub._impl
        new = await impl.subscribe(deliver, None, old.callback, 0, old.pending_msgs_limit, old.pending_bytes_limit)
        new.natspy_sub = sub
        self.nc._subs.pop(old.sid, None)
        self.nc._subs[new.sid] = sub
        sub._impl = new
        return new


class _Fetch:
    """One ``PullSubscription.fetch``: the engine's operation for nats-py's
    contract (``engine.js.inbox_fetch``) stepped on the subscription's inbox;
    its messages become nats-py Msgs, its errors nats-py's."""

    def __init__(self, ps: "JetStreamContext.PullSubscription", batch: int, timeout: float | None,
                 heartbeat: float | None) -> None:
        self.ps = ps
        self.batch = batch
        self.timeout = timeout
        self.heartbeat = heartbeat

    async def run(self) -> list[Msg]:
        ps = self.ps
        impl = ps._nc._impl
        if impl is None or impl.is_closed:
            raise _core.ConnectionClosedError()
        try:
            got = await ps._js._js.fetch_on_inbox(ps._sub._impl, ps._nms, self.batch, self.timeout, self.heartbeat,
                                                  ps._deliver)
        except NatsError as e:
            if e.code == "ErrTimeout":
                raise (_jserr.FetchTimeoutError() if e.details.get("heartbeats") else _core.TimeoutError()) from e
            if e.code == "ErrNoResponders":
                raise _jserr.ServiceUnavailableError() from e
            if e.code == "ErrJSResponse":
                raise _jserr.APIError(code=e.details.get("code"), description=e.details.get("description")) from e
            raise translate(e) from e
        return [Msg._from_impl(ps._nc, m) for m in got]