"""``nats.js.client`` of nats-py 2.x: :class:`JetStreamContext`.

Publishing (``publish``, ``publish_async``), push subscriptions
(``subscribe``/``subscribe_bind``: durable, queue, ordered, flow control,
heartbeats), pull subscriptions (``pull_subscribe``/``pull_subscribe_bind``,
``PullSubscription.fetch``) and the Key-Value / Object Store entry points.

The protocol pieces are the engine's: publish headers and acks
(``engine.js.publish``), pull request bodies and status classification
(``engine.js.pull``), push deliveries (``engine.js.push.PushState``), the
ordered consumer (``engine.js.ordered`` through the asyncio face's
``OrderedConsumer``).  What this module adds is nats-py's shape: its
argument names, its fetch contract (a ``no_wait`` look first, then one
request that waits), its subscription classes and exceptions.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Dict, List, Optional

from tclnats_py.engine.js import pull as _pull
from tclnats_py.engine.js.publish import parse_ack, publish_headers
from tclnats_py.engine.js.push import PushState
from tclnats_py.errors import NatsError
from tclnats_py.natspy import errors as _core
from tclnats_py.natspy.aio.msg import Msg
from tclnats_py.natspy.aio.subscription import Subscription
from tclnats_py.natspy.js import api
from tclnats_py.natspy.js import errors as _jserr
from tclnats_py.natspy.js.manager import JetStreamManager, translate

if TYPE_CHECKING:
    from tclnats_py.natspy.js.kv import KeyValue
    from tclnats_py.natspy.js.object_store import ObjectStore

__all__ = ["JetStreamContext", "DEFAULT_JS_SUB_PENDING_MSGS_LIMIT", "DEFAULT_JS_SUB_PENDING_BYTES_LIMIT"]

DEFAULT_JS_SUB_PENDING_MSGS_LIMIT = 512 * 1024
DEFAULT_JS_SUB_PENDING_BYTES_LIMIT = 256 * 1024 * 1024

Callback = Callable[[Msg], Awaitable[None]]

# nats-py waits for room for an async publish without bound when wait_stall is None
_NO_STALL_LIMIT = 600.0


def _ttl_header(msg_ttl: Optional[float]) -> Optional[str]:
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


class _Status:
    """What a status message is, by the engine's rules (``engine.js.pull.classify``)."""

    @staticmethod
    def kind(m: Any) -> str:
        return _pull.classify(m)


class JetStreamContext(JetStreamManager):
    """JetStream on one connection: ``nc.jetstream(prefix=..., domain=...,
    timeout=5, publish_async_max_pending=4000)``; the management calls of
    :class:`JetStreamManager` too."""

    def __init__(self, conn: Any, prefix: str = api.DEFAULT_PREFIX, domain: Optional[str] = None,
                 timeout: float = 5, publish_async_max_pending: int = 4000) -> None:
        super().__init__(conn, prefix=prefix, timeout=timeout, domain=domain)
        self._async_max = publish_async_max_pending
        self._async_futures: set = set()

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
    def _headers(self, headers: Optional[Dict[str, Any]], stream: Optional[str], msg_ttl: Optional[float]):
        try:
            return publish_headers(headers, expected_stream=stream, ttl=_ttl_header(msg_ttl))
        except NatsError as e:
            raise translate(e) from e

    async def publish(self, subject: str, payload: bytes = b"", timeout: Optional[float] = None,
                      stream: Optional[str] = None, headers: Optional[Dict[str, Any]] = None,
                      msg_ttl: Optional[float] = None) -> api.PubAck:
        """Publish to a stream and wait for its ack (NoStreamResponseError: no stream on ``subject``)."""
        hdrs = self._headers(headers, stream, msg_ttl)
        impl = self._nc._impl
        if impl is None or impl.is_closed:
            raise _core.ConnectionClosedError()
        try:
            # nats-py sends the subject as given: wildcard tokens too (KV keys
            # with validate_keys=False); only what would break the protocol is refused
            loose = bool(subject) and isinstance(subject, str) and not any(c.isspace() for c in subject)
            reply = await impl.request(subject, payload, self._timeout if timeout is None else timeout, hdrs,
                                       check_subject=not loose)
            resp = parse_ack(reply)
        except NatsError as e:
            if e.code == "ErrNoResponders":
                raise _jserr.NoStreamResponseError() from e
            raise translate(e) from e
        return api.PubAck.from_response(resp)

    async def publish_async(self, subject: str, payload: bytes = b"", wait_stall: Optional[float] = None,
                            stream: Optional[str] = None, headers: Optional[Dict] = None,
                            msg_ttl: Optional[float] = None) -> "asyncio.Future[api.PubAck]":
        """Publish without waiting: a future of the PubAck.  At most
        ``publish_async_max_pending`` in flight; past it this waits up to
        ``wait_stall`` seconds for room (None: as long as it takes), then
        TooManyStalledMsgsError."""
        hdrs = self._headers(headers, stream, msg_ttl)
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

    async def publish_async_completed(self) -> None:
        """Wait until every async publish so far has its ack (or error)."""
        if self._async_futures:
            await asyncio.wait(list(self._async_futures))

    # ------------------------------------------------------------ push subscriptions
    async def subscribe(self, subject: str, queue: Optional[str] = None, cb: Optional[Callback] = None,
                        durable: Optional[str] = None, stream: Optional[str] = None,
                        config: Optional[api.ConsumerConfig] = None, manual_ack: bool = False,
                        ordered_consumer: bool = False, idle_heartbeat: Optional[float] = None,
                        flow_control: bool = False, pending_msgs_limit: int = DEFAULT_JS_SUB_PENDING_MSGS_LIMIT,
                        pending_bytes_limit: int = DEFAULT_JS_SUB_PENDING_BYTES_LIMIT,
                        deliver_policy: Optional[api.DeliverPolicy] = None, headers_only: Optional[bool] = None,
                        inactive_threshold: Optional[float] = None) -> "JetStreamContext.PushSubscription":
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
            if not config.durable_name:
                config.durable_name = durable
            if not config.deliver_group:
                config.deliver_group = queue
            if not config.headers_only:
                config.headers_only = headers_only
            if deliver_policy:
                config.deliver_policy = deliver_policy
            if inactive_threshold:
                config.inactive_threshold = inactive_threshold
            if config.deliver_subject is None:
                config.deliver_subject = self._nc.new_inbox()
            if not config.filter_subjects:
                config.filter_subject = subject
            config.flow_control = flow_control
            if idle_heartbeat:
                config.idle_heartbeat = idle_heartbeat
            else:
                idle_heartbeat = config.idle_heartbeat or 5
            if ordered_consumer:
                config.flow_control = True
                config.ack_policy = api.AckPolicy.NONE
                config.max_deliver = 1
                config.ack_wait = 22 * 3600
                config.idle_heartbeat = idle_heartbeat
                config.num_replicas = 1
                config.mem_storage = True
            info = await self.add_consumer(stream, config=config)
            consumer = info.name
        assert consumer is not None
        return await self.subscribe_bind(stream, config, consumer, cb=cb, manual_ack=manual_ack,
                                         ordered_consumer=ordered_consumer, pending_msgs_limit=pending_msgs_limit,
                                         pending_bytes_limit=pending_bytes_limit)

    async def subscribe_bind(self, stream: str, config: api.ConsumerConfig, consumer: str,
                             cb: Optional[Callback] = None, manual_ack: bool = False, ordered_consumer: bool = False,
                             pending_msgs_limit: int = DEFAULT_JS_SUB_PENDING_MSGS_LIMIT,
                             pending_bytes_limit: int = DEFAULT_JS_SUB_PENDING_BYTES_LIMIT,
                             ) -> "JetStreamContext.PushSubscription":
        """Push-subscribe to the existing consumer ``consumer`` (its config
        gives the deliver subject and group).  With ``cb`` messages are acked
        after ``cb`` returns unless ``manual_ack`` (or the consumer acks none)."""
        if config.deliver_subject is None:
            raise TypeError("config.deliver_subject is required")
        auto_ack = cb is not None and not manual_ack and config.ack_policy not in (api.AckPolicy.NONE, "none")
        jsi = _PushState(self, stream, consumer, config, ordered_consumer, cb, auto_ack)
        sub = await _core_subscribe(self._nc, config.deliver_subject, config.deliver_group or "",
                                    jsi.on_impl_msg if cb is not None else None,
                                    JetStreamContext.PushSubscription, cb, pending_msgs_limit, pending_bytes_limit)
        sub._js = self
        sub._stream = stream
        sub._consumer = consumer
        sub._jsi = jsi
        jsi.sub = sub
        jsi.start()
        return sub

    # ------------------------------------------------------------ pull subscriptions
    async def pull_subscribe(self, subject: str, durable: Optional[str] = None, stream: Optional[str] = None,
                             config: Optional[api.ConsumerConfig] = None,
                             pending_msgs_limit: int = DEFAULT_JS_SUB_PENDING_MSGS_LIMIT,
                             pending_bytes_limit: int = DEFAULT_JS_SUB_PENDING_BYTES_LIMIT,
                             inbox_prefix: Optional[bytes] = None) -> "JetStreamContext.PullSubscription":
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

    async def pull_subscribe_bind(self, consumer: Optional[str] = None, stream: Optional[str] = None,
                                  inbox_prefix: Optional[bytes] = None,
                                  pending_msgs_limit: int = DEFAULT_JS_SUB_PENDING_MSGS_LIMIT,
                                  pending_bytes_limit: int = DEFAULT_JS_SUB_PENDING_BYTES_LIMIT,
                                  name: Optional[str] = None,
                                  durable: Optional[str] = None) -> "JetStreamContext.PullSubscription":
        """A pull subscription on the existing consumer (``consumer``, or the older ``durable``/``name``)."""
        if not stream:
            raise ValueError("nats: stream name is required")
        if inbox_prefix is None:
            deliver = self._nc.new_inbox()
        else:
            from tclnats_py.engine.nuid import next_token
            prefix = inbox_prefix.decode() if isinstance(inbox_prefix, (bytes, bytearray)) else str(inbox_prefix)
            deliver = prefix + next_token()
        sub = await _core_subscribe(self._nc, deliver, "", None, Subscription, None, pending_msgs_limit,
                                    pending_bytes_limit)
        return JetStreamContext.PullSubscription(self, sub, stream, durable or name or consumer or "", deliver)

    # ------------------------------------------------------------ Key-Value
    async def key_value(self, bucket: str) -> "KeyValue":
        from tclnats_py.natspy.js.kv import bind_key_value
        return await bind_key_value(self, bucket)

    async def create_key_value(self, config: Optional[api.KeyValueConfig] = None, **params: Any) -> "KeyValue":
        from tclnats_py.natspy.js.kv import create_key_value
        return await create_key_value(self, config, params)

    async def delete_key_value(self, bucket: str) -> bool:
        from tclnats_py.natspy.js.kv import delete_key_value
        return await delete_key_value(self, bucket)

    # ------------------------------------------------------------ Object Store
    async def object_store(self, bucket: str) -> "ObjectStore":
        from tclnats_py.natspy.js.object_store import bind_object_store
        return await bind_object_store(self, bucket)

    async def create_object_store(self, bucket: Optional[str] = None,
                                  config: Optional[api.ObjectStoreConfig] = None, **params: Any) -> "ObjectStore":
        from tclnats_py.natspy.js.object_store import create_object_store
        return await create_object_store(self, bucket, config, params)

    async def delete_object_store(self, bucket: str) -> bool:
        from tclnats_py.natspy.js.object_store import delete_object_store
        return await delete_object_store(self, bucket)

    # ------------------------------------------------------------ subscription classes
    class PushSubscription(Subscription):
        """A subscription to a push consumer's deliver subject; flow control
        and heartbeats are handled before messages reach the user."""

        _js: "JetStreamContext"
        _stream: str
        _consumer: str

        async def consumer_info(self) -> api.ConsumerInfo:
            return await self._js._jsm.consumer_info(self._stream, self._consumer)

        @property
        def delivered(self) -> int:
            return self._jsi.state.delivered if self._jsi is not None else 0

        async def next_msg(self, timeout: Optional[float] = 1.0) -> Msg:
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
                self._jsi.stop()

        async def drain(self) -> None:
            await super().drain()
            if self._jsi is not None:
                self._jsi.stop()

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
            if self._sub is None:
                raise ValueError("nats: invalid subscription")
            await self._sub.unsubscribe()

        async def consumer_info(self) -> api.ConsumerInfo:
            return await self._js._jsm.consumer_info(self._stream, self._consumer)

        async def fetch(self, batch: int = 1, timeout: Optional[float] = 5,
                        heartbeat: Optional[float] = None) -> List[Msg]:
            """Up to ``batch`` messages: what the server has now, else those
            that arrive within ``timeout`` seconds (None: no limit).
            nats.errors.TimeoutError when none came (FetchTimeoutError when
            the server sent heartbeats but no message)."""
            if self._sub is None:
                raise ValueError("nats: invalid subscription")
            if batch < 1:
                raise ValueError("nats: invalid batch size")
            if timeout is not None and timeout <= 0:
                raise ValueError("nats: invalid fetch timeout")
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
    """The JetStream side of a push subscription: sorts what arrives on the
    deliver subject with the engine's :class:`PushState` (flow control and
    stalled heartbeats answered, user messages handed on), watches idle
    heartbeats, auto-acks after the callback, and for an ordered consumer
    recreates the consumer from the next stream sequence on a gap or
    silence (ADR-17)."""

    def __init__(self, js: JetStreamContext, stream: str, consumer: str, config: api.ConsumerConfig,
                 ordered: bool, cb: Optional[Callback], auto_ack: bool) -> None:
        self.js = js
        self.nc = js._nc
        self.stream = stream
        self.consumer = consumer
        self.config = config
        self.ordered = ordered
        self.cb = cb
        self.auto_ack = auto_ack
        hb = config.idle_heartbeat
        self.state = PushState(stream, consumer, int(hb * 1000) if hb else None)
        self.sub: Optional[JetStreamContext.PushSubscription] = None
        self.stream_seq = 0        # last stream sequence handed on (ordered)
        self.consumer_seq = 0      # last consumer sequence seen (ordered)
        self.active = True
        self._hb_task: Optional[asyncio.Task] = None
        self._resetting = False

    # -------------------------------------------------------- lifecycle
    def start(self) -> None:
        if self.state.heartbeat_timeout_ms:
            self._hb_task = asyncio.get_running_loop().create_task(self._watch())

    def stop(self) -> None:
        t, self._hb_task = self._hb_task, None
        if t is not None and t is not asyncio.current_task():
            t.cancel()

    async def _watch(self) -> None:
        """Idle heartbeats: two intervals with nothing from the server is a
        missed heartbeat (an ordered consumer starts over)."""
        wait = self.state.heartbeat_timeout_ms / 1000  # type: ignore[operator]
        while not self.nc.is_closed:
            await asyncio.sleep(wait)
            if not self.active:
                if self.ordered:
                    await self._reset()
                else:
                    for ev in self.state.on_heartbeat_missed():
                        await self._report(ev[1])
            self.active = False

    async def _report(self, err: BaseException) -> None:
        cb = getattr(self.nc, "_error_cb", None)
        if cb is None:
            return
        r = cb(translate(err) if isinstance(err, NatsError) else err)
        if inspect.isawaitable(r):
            await r

    # -------------------------------------------------------- messages
    def handle(self, m: Any) -> Optional[Msg]:
        """One message of the deliver subject: the user's Msg, or None when
        it was a control message (answered here)."""
        self.active = True
        for ev in self.state.on_msg(m):
            kind = ev[0]
            if kind == "deliver":
                if self.ordered and not self._in_order(m):
                    return None
                return Msg._from_impl(self.nc, m)
            if kind == "publish":
                self.nc._impl.publish(ev[1], ev[2])
            elif kind in ("warning", "stop"):
                self.nc._impl._spawn(self._report(ev[1]))
        if self.ordered and _Status.kind(m) == "heartbeat":
            last = m.header("Nats-Last-Consumer")
            if last is not None and str(last).isdigit() and int(last) != self.consumer_seq:
                self.nc._impl._spawn(self._reset())
        return None

    def _in_order(self, m: Any) -> bool:
        from tclnats_py.engine.js.meta import parse_metadata
        meta = parse_metadata(m.reply or "", m.subject)
        if self._resetting:
            return False
        if meta["consumer_seq"] != self.consumer_seq + 1:
            self.nc._impl._spawn(self._reset())
            return False
        self.consumer_seq = meta["consumer_seq"]
        self.stream_seq = meta["stream_seq"]
        return True

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
        """Start over from the next stream sequence on a new deliver subject."""
        if self._resetting or self.sub is None or self.nc.is_closed:
            return
        self._resetting = True
        try:
            sub = self.sub
            new_deliver = self.nc.new_inbox()
            impl = self.nc._impl
            old = sub._impl
            new = await impl.subscribe(new_deliver, None, old._cb, 0, old._limit_msgs, old._limit_bytes)
            new.natspy_sub = sub
            self.nc._subs.pop(old.sid, None)
            self.nc._subs[new.sid] = sub
            sub._impl = new
            if old.is_active:
                await old.unsubscribe()
            cfg = self.config
            cfg.deliver_subject = new_deliver
            cfg.deliver_policy = api.DeliverPolicy.BY_START_SEQUENCE
            cfg.opt_start_seq = self.stream_seq + 1
            cfg.durable_name = None
            cfg.name = None
            self.consumer_seq = 0
            try:
                info = await self.js._jsm.add_consumer(self.stream, config=cfg)
                sub._consumer = self.consumer = info.name
            except Exception as e:  # reported: the watcher tries again after the next silence
                await self._report(e)
        finally:
            self._resetting = False


class _Fetch:
    """One ``PullSubscription.fetch``: nats-py's contract over the engine's
    pull request bodies and status classification.

    Messages left on the subscription's inbox (from an earlier request that
    outlived its fetch) are taken first.  Then, for a batch of one: one
    request that waits up to the timeout.  For more: a ``no_wait`` request
    (what is there now); when that brought nothing, one request that waits,
    and returns once a message came and the rest followed (or the request
    ended).  No message at all: TimeoutError (FetchTimeoutError when the
    server sent heartbeats)."""

    def __init__(self, ps: "JetStreamContext.PullSubscription", batch: int, timeout: Optional[float],
                 heartbeat: Optional[float]) -> None:
        self.ps = ps
        self.batch = batch
        self.timeout = timeout
        self.heartbeat_ns = int(heartbeat * 1_000_000_000) if heartbeat else None
        self.loop = asyncio.get_running_loop()
        self.start = self.loop.time()
        self.got_heartbeat = False
        self.msgs: List[Msg] = []

    def _left(self) -> Optional[float]:
        return None if self.timeout is None else self.timeout - (self.loop.time() - self.start)

    def _request(self, batch: int, expires: Optional[float], no_wait: bool = False) -> None:
        ns = int(expires * 1_000_000_000) - 100_000 if expires else None
        body = _pull.pull_request_body(batch, ns if ns and ns > 0 else None, no_wait, None, self.heartbeat_ns)
        ps = self.ps
        impl = ps._nc._impl
        if impl is None or impl.is_closed:
            raise _core.ConnectionClosedError()
        try:
            impl.publish(ps._nms, body, ps._deliver)
        except NatsError as e:
            raise translate(e) from e

    async def _next(self, timeout: Optional[float]) -> Any:
        """The next raw message of the inbox (the asyncio face's Msg); asyncio.TimeoutError."""
        sub = self.ps._sub
        if timeout is not None and timeout <= 0:
            raise _core.TimeoutError()
        try:
            return await sub._impl.next_msg(timeout)
        except NatsError as e:
            if e.code in ("ErrTimeout", "ErrBadSubscription"):
                raise _core.TimeoutError() from e
            raise translate(e) from e

    def _user(self, m: Any) -> Msg:
        return Msg._from_impl(self.ps._nc, m)

    def _drain_left_over(self) -> None:
        impl = self.ps._sub._impl
        while impl.pending_msgs and len(self.msgs) < self.batch:
            m = impl._take()
            if _pull.classify(m) == "msg":
                self.msgs.append(self._user(m))

    def _timed_out(self) -> BaseException:
        return _jserr.FetchTimeoutError() if self.got_heartbeat else _core.TimeoutError()

    async def run(self) -> List[Msg]:
        self._drain_left_over()
        if self.batch == 1:
            if self.msgs:
                return self.msgs
            return [await self._one()]
        return await self._many()

    async def _one(self) -> Msg:
        self._request(1, self.timeout)
        while True:
            try:
                m = await self._next(self._left())
            except _core.TimeoutError:
                raise self._timed_out() from None
            kind = _pull.classify(m)
            if kind == "msg":
                return self._user(m)
            if kind in ("heartbeat", "flow_control"):
                self.got_heartbeat = True
                continue
            if kind in ("no_messages", "timeout", "conflict"):
                # the request ended (or one of an earlier fetch did): nothing
                # more will come for it, the fetch ends at its timeout
                continue
            raise _status_error(m)

    async def _gather(self) -> None:
        """Take messages until the batch is full, the request ends or time is up."""
        while len(self.msgs) < self.batch:
            left = self._left()
            if left is not None and left <= 0:
                return
            try:
                m = await self._next(left)
            except _core.TimeoutError:
                return
            kind = _pull.classify(m)
            if kind == "msg":
                self.msgs.append(self._user(m))
            elif kind in ("heartbeat", "flow_control"):
                self.got_heartbeat = True
            elif kind in ("no_messages", "timeout"):
                return
            elif kind == "conflict":
                return
            else:
                raise _status_error(m)

    async def _many(self) -> List[Msg]:
        needed = self.batch - len(self.msgs)
        if needed <= 0:
            return self.msgs
        had = bool(self.msgs)
        # what is there now (without expires when messages are in hand already:
        # with one the server would hold the no_wait request for its duration)
        self._request(needed, None if had else self.timeout, no_wait=True)
        await asyncio.sleep(0)
        try:
            first = await self._next(self.timeout)
        except _core.TimeoutError:
            if self.msgs:
                return self.msgs
            raise
        kind = _pull.classify(first)
        if kind in ("heartbeat", "flow_control"):
            self.got_heartbeat = True
        elif kind == "msg":
            self.msgs.append(self._user(first))
            await self._gather()
        elif kind not in ("no_messages", "timeout", "conflict"):
            raise _status_error(first)
        if self.msgs:
            return self.msgs
        # nothing now: one request that waits for the rest of the time
        left = self._left()
        if left is not None and left <= 0.0001:
            raise self._timed_out()
        self._request(self.batch, left)
        await asyncio.sleep(0)
        while not self.msgs:
            left = self._left()
            try:
                m = await self._next(left)
            except _core.TimeoutError:
                raise self._timed_out() from None
            kind = _pull.classify(m)
            if kind in ("heartbeat", "flow_control"):
                self.got_heartbeat = True
                continue
            if kind == "msg":
                self.msgs.append(self._user(m))
                break
            if kind in ("no_messages", "timeout", "conflict"):
                # a status for an earlier request on this inbox: go on waiting
                # until the time is up
                continue
            raise _status_error(m)
        await self._gather()
        return self.msgs


def _status_error(m: Any) -> BaseException:
    """A status that ends a fetch with an error (nats-py's APIError.from_msg)."""
    if m.status == 503:
        return _jserr.ServiceUnavailableError()
    return _jserr.APIError(code=m.status, description=m.description)
