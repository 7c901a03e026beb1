"""JetStream for the asyncio face, modelled on nats.go's ``jetstream`` package.

    js = client.jetstream()                  # or tclnats_py.aio.jetstream.new(client, domain=..., api_prefix=...)
    stream = await js.create_stream("ORDERS", subjects=["orders.*"], max_age=3600)
    ack = await js.publish("orders.new", b"apple", msg_id="o-1", expected_stream="ORDERS")
    fut = js.publish_async("orders.new", b"pear"); await js.publish_async_complete()
    cons = await stream.create_consumer(durable_name="PACKER", ack_wait=30)
    for msg in await cons.fetch(10, expires=1.0):       # a pull request; [] when none came
        await msg.ack_sync()
    ctx = cons.consume(handle, max_messages=500)         # continuous pull; await ctx.stop()
    async for msg in cons.messages(): ...                # the same as an iterator
    async for msg in js.ordered_consumer("ORDERS"): ...  # ADR-17, repairs itself
    kv = await js.create_key_value("SETTINGS")           # tclnats_py.aio.kv
    obs = await js.create_object_store("FILES")          # tclnats_py.aio.objectstore

JetStream -> Stream -> Consumer -> JsMsg: a user finds what a thing can do on
the thing.  The protocol work is done by ``tclnats_py.engine.js`` (shared with the
Tcl face); this module only awaits its steps on a :class:`tclnats_py.Client`.

Units: durations are seconds (floats) in this face (configs, ``expires``,
``nak(delay)``, timeouts), nanoseconds on the wire.  Replies are dicts that
also read as attributes (:class:`Info`) and keep every field the server
sends; ``StreamInfo.config`` / ``ConsumerInfo.config`` are the typed
:class:`StreamConfig` / :class:`ConsumerConfig`, which keep fields they do
not name in ``extra``.  Errors are the shared codes: ErrStreamNotFound,
ErrConsumerNotFound, ErrMsgNotFound, ErrWrongLastSequence, ErrNoResponders,
ErrJetStreamNotEnabled, ErrJSResponse (``details``: code, err_code) ...
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import datetime
import inspect
from dataclasses import dataclass, field, fields

from tclnats_py.engine.connection import Msg
from tclnats_py.errors import (ErrBadRequest, ErrConsumerDeleted, ErrConsumerNotActive, ErrJetStreamNotEnabled,  # noqa: F401
                      ErrJetStreamNotEnabledForAccount, ErrNoHeartbeat, ErrNotJSMessage, ErrNotPullConsumer,
                      NatsError, make_error)
from tclnats_py.engine.validate import _to_bytes, check_headers, check_int, check_seconds, check_str, check_timeout
from tclnats_py.engine.js import config as _cfg
from tclnats_py.engine.js import ordered as _ordered
from tclnats_py.engine.js.ack import ACK, WPI, AckState, ack_subject, nak_payload, term_payload
from tclnats_py.engine.js.api import Batch, JsApi, Publish, Request, StoredMsg, advance, api_call
from tclnats_py.engine.js.meta import parse_metadata
from tclnats_py.engine.js.publish import AsyncPublisher, parse_ack, parse_ack_fast, publish_headers
from tclnats_py.engine.js.pull import Consume, Fetch
from tclnats_py.engine.protocol import encode_pub

__all__ = ["new", "JetStream", "Stream", "Consumer", "JsMsg", "StoredMsg", "Info", "StreamInfo", "ConsumerInfo",
           "PubAck", "StreamConfig", "ConsumerConfig", "ConsumeContext", "MessagesContext", "OrderedConsumer",
           "stream_source", "subject_transform", "republish"]

# builders of nested config objects (dicts), as nats-tcl's make_* commands
stream_source = _cfg.make_stream_source
subject_transform = _cfg.make_subject_transform
republish = _cfg.make_republish

# error classes this face raises beyond the core ones (all in tclnats_py.errors)
__all__ += ["ErrJetStreamNotEnabled", "ErrJetStreamNotEnabledForAccount", "ErrNotJSMessage", "ErrConsumerDeleted",
            "ErrNoHeartbeat", "ErrConsumerNotActive", "ErrBadRequest", "ErrNotPullConsumer"]


def new(client, domain: str | None = None, api_prefix: str | None = None, timeout: float = 5.0,
        **kw) -> "JetStream":
    """The JetStream context of ``client`` (what ``client.jetstream()`` returns)."""
    return JetStream(client, domain=domain, api_prefix=api_prefix, timeout=timeout, **kw)


# ------------------------------------------------------------------ replies
class Info(dict):
    """A JSON reply: a dict that also reads as attributes (``info.state.messages``)."""

    def __getattr__(self, name):
        try:
            v = self[name]
        except KeyError:
            raise AttributeError(name) from None
        return Info(v) if isinstance(v, dict) and not isinstance(v, Info) else v

    def __dir__(self):
        return list(super().__dir__()) + [k for k in self if isinstance(k, str)]


def _time(s):
    if not s:
        return None
    from tclnats_py.engine.js.api import iso_to_ms
    return datetime.datetime.fromtimestamp(iso_to_ms(s) / 1000, datetime.timezone.utc)


class StreamInfo(Info):
    """STREAM.INFO / CREATE / UPDATE reply; ``config`` is typed (seconds)."""

    @property
    def config(self) -> "StreamConfig":
        return StreamConfig.from_api(self.get("config") or {})

    @property
    def created_at(self) -> datetime.datetime | None:
        return _time(self.get("created"))


class ConsumerInfo(Info):
    """CONSUMER.INFO / CREATE reply; ``config`` is typed (seconds)."""

    @property
    def config(self) -> "ConsumerConfig":
        return ConsumerConfig.from_api(self.get("config") or {})

    @property
    def created_at(self) -> datetime.datetime | None:
        return _time(self.get("created"))


class PubAck(Info):
    """A publish acknowledgement: stream, seq, duplicate, domain."""

    @property
    def duplicate(self) -> bool:
        return bool(self.get("duplicate"))

    @property
    def domain(self):
        return self.get("domain")


# ------------------------------------------------------------------ typed configs
class _ApiConfig:
    _spec: tuple = ()
    _names: frozenset = frozenset()

    def to_api(self, *, defaults: bool = True) -> dict:
        """The wire JSON (ns durations), checked with nats-tcl's rules."""
        opts = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            v = getattr(self, f.name)
            if isinstance(v, datetime.datetime):
                v = v.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            opts[f.name] = v
        out = _cfg.build(self._spec, opts, unit="s", strict=False, defaults=defaults)
        for k, v in self.extra.items():
            out.setdefault(k, v)
        return out

    @classmethod
    def from_api(cls, data: dict):
        """From the wire; fields this class does not name go to ``extra``."""
        kinds = {name: typ for name, typ, _ in cls._spec}
        kw, extra = {}, {}
        for k, v in (data or {}).items():
            if k in cls._names:
                typ = kinds.get(k)
                if typ == "ns":
                    v = _cfg.from_ns(v, "s")
                elif typ == "ns_list" and isinstance(v, list):
                    v = [_cfg.from_ns(x, "s") for x in v]
                kw[k] = v
            else:
                extra[k] = v
        return cls(**kw, extra=extra)

    def replace(self, **changes):
        bad = set(changes) - self._names
        if bad:
            raise make_error("ErrInvalidArg", f"Unknown option {sorted(bad)[0]}")
        return dataclasses.replace(self, **changes)


@dataclass
class StreamConfig(_ApiConfig):
    """add_stream's options (JsAPI.md), durations in seconds, plus newer fields."""
    name: str | None = None
    description: str | None = None
    subjects: list | None = None
    retention: str | None = None           # limits, interest, workqueue
    max_consumers: int | None = None
    max_msgs: int | None = None
    max_bytes: int | None = None
    discard: str | None = None             # old, new
    max_age: float | None = None           # seconds
    max_msgs_per_subject: int | None = None
    max_msg_size: int | None = None
    storage: str | None = None             # file, memory
    num_replicas: int | None = None
    no_ack: bool | None = None
    duplicate_window: float | None = None  # seconds
    mirror: dict | None = None             # stream_source(...)
    sources: list | None = None            # [stream_source(...), ...]
    sealed: bool | None = None
    deny_delete: bool | None = None
    deny_purge: bool | None = None
    allow_rollup_hdrs: bool | None = None
    compression: str | None = None         # none, s2
    first_seq: int | None = None
    subject_transform: dict | None = None  # subject_transform(src, dest)
    republish: dict | None = None          # republish(src, dest)
    allow_direct: bool | None = None
    mirror_direct: bool | None = None
    metadata: dict | None = None
    placement: dict | None = None
    consumer_limits: dict | None = None
    allow_msg_ttl: bool | None = None
    subject_delete_marker_ttl: float | None = None  # seconds
    extra: dict = field(default_factory=dict)

    _spec = _cfg.STREAM_SPEC + _cfg.STREAM_EXTRA_SPEC


@dataclass
class ConsumerConfig(_ApiConfig):
    """add_consumer's options (JsAPI.md), durations in seconds, plus newer fields."""
    name: str | None = None
    durable_name: str | None = None
    description: str | None = None
    deliver_policy: str | None = None      # all, last, new, by_start_sequence, by_start_time, last_per_subject
    opt_start_seq: int | None = None
    opt_start_time: str | None = None      # RFC 3339 (or a datetime)
    ack_policy: str | None = None          # explicit (default here), all, none
    ack_wait: float | None = None          # seconds
    max_deliver: int | None = None
    filter_subject: str | None = None
    replay_policy: str | None = None
    rate_limit_bps: int | None = None
    sample_freq: str | None = None
    max_waiting: int | None = None
    max_ack_pending: int | None = None
    flow_control: bool | None = None
    idle_heartbeat: float | None = None
    headers_only: bool | None = None
    deliver_subject: str | None = None
    deliver_group: str | None = None
    inactive_threshold: float | None = None
    num_replicas: int | None = None
    mem_storage: bool | None = None
    metadata: dict | None = None
    filter_subjects: list | None = None
    backoff: list | None = None            # seconds each
    max_batch: int | None = None
    max_expires: float | None = None
    max_bytes: int | None = None
    pause_until: str | None = None
    extra: dict = field(default_factory=dict)

    _spec = _cfg.CONSUMER_SPEC + _cfg.CONSUMER_EXTRA_SPEC

    def to_api(self, *, defaults: bool = True) -> dict:
        out = super().to_api(defaults=defaults)
        if self.deliver_policy is None:
            # a start position implies its policy (the table's default is "all")
            if self.opt_start_seq is not None:
                out["deliver_policy"] = "by_start_sequence"
            elif self.opt_start_time is not None:
                out["deliver_policy"] = "by_start_time"
        return out


StreamConfig._names = frozenset(f.name for f in fields(StreamConfig)) - {"extra"}
ConsumerConfig._names = frozenset(f.name for f in fields(ConsumerConfig)) - {"extra"}


def _merge(cls, config, kw):
    """A typed config from a typed one or a wire-JSON dict, keywords applied."""
    if config is None:
        config = cls()
    elif isinstance(config, dict):
        config = cls.from_api(config)
    return config.replace(**kw) if kw else config


class _AsyncPub:
    """publish_async's driver on one connection: the engine's
    :class:`~tclnats_py.engine.js.publish.AsyncPublisher` keeps what is in flight
    and queued, by reply subject; this keeps the futures and one loop timer.

    Its reply subscription is an engine subscription whose handler is this
    object: the driver hands it each ack as it parses the socket's bytes
    (``_deliver``), so all the acks of one read resolve their futures in one
    pass, with no queue or task between.  PUBs without headers are framed
    here with the engine's encoder (the reply subject is ours, so it needs
    no check) and queued with one engine call each; they leave with the
    connection's next coalesced write.  Deadlines share a single timer,
    armed for the earliest one."""

    def __init__(self, js: "JetStream", old: "_AsyncPub | None"):
        self.js = js
        self.client = client = js.client
        self.loop = asyncio.get_running_loop()
        self.core = AsyncPublisher(client.new_inbox(), js._ap_max)
        self.futures: set = old.futures if old is not None else set()
        self.idle_waiters: list = old.idle_waiters if old is not None else []
        self.timer = None
        self.timer_at = 0.0
        self.sub = client._engine.subscribe(self.core.subscription_subject, handler=self)
        client._run()
        if old is not None:
            # its subscription ended (the connection closed): what it still had fails now
            old._fail_all(make_error("ErrConnectionClosed", "Connection closed"))

    def add(self, subject, data, hdrs, timeout):
        fut = self.loop.create_future()
        self.futures.add(fut)
        now = self.loop.time()
        reply = self.core.add(subject, data, hdrs, fut, timeout, now)
        if reply is not None:
            self._send(reply, subject, data, hdrs, now + timeout)
            client = self.client
            if client._engine.has_effects:
                client._run()
        return fut

    def _send(self, reply, subject, data, hdrs, deadline) -> None:
        eng = self.client._engine
        try:
            if hdrs is None:
                mp = eng.server_info.get("max_payload")
                if mp is not None and len(data) > mp:
                    raise make_error("ErrMaxPayload", f"Maximum size of NATS message is {mp}")
                eng.publish_framed(encode_pub(subject, reply, data), 1)
            else:
                eng.publish(subject, data, reply, hdrs, False)
        except NatsError as e:
            fut = self.core.forget(reply)
            if fut is not None:
                self._finish(fut, None, e)
            return
        if self.timer is None or deadline < self.timer_at:
            self._arm(deadline)

    def _arm(self, when) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer_at = when
        self.timer = self.loop.call_at(when, self._expire)

    def _expire(self) -> None:
        self.timer = None
        now = self.loop.time()
        for fut, err in self.core.expire(now):
            self._finish(fut, None, err)
        self._refill()
        nxt = self.core.next_deadline()
        if nxt is not None and (self.timer is None or nxt < self.timer_at):
            self._arm(nxt)
        client = self.client
        if client._engine.has_effects:
            client._run()

    def _finish(self, fut, ack, err) -> None:
        futures = self.futures
        futures.discard(fut)
        if not futures and self.idle_waiters:
            ws, self.idle_waiters[:] = list(self.idle_waiters), []
            for w in ws:
                if not w.done():
                    w.set_result(None)
        if fut.done():
            return  # cancelled by its owner
        if err is None:
            fut.set_result(PubAck(ack))
        else:
            fut.set_exception(err)
            fut.exception()  # retrieved: failures are the caller's to look at

    def _refill(self) -> None:
        for reply, subject, data, hdrs, deadline in self.core.refill(self.loop.time()):
            self._send(reply, subject, data, hdrs, deadline)

    def _deliver(self, msg) -> None:
        """An ack (the driver calls this for each message of the subscription)."""
        out = self.core.on_reply(msg)
        if out is None:
            return  # a late reply to a publish that timed out
        self._finish(*out)
        if self.core.queued:
            self._refill()

    def _fail_all(self, err) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        for fut in self.core.fail_all(err):
            self._finish(fut, None, err)


def _check_publish(client, subject, headers, msg_id=None, expected_stream=None, expected_last_seq=None,
                   expected_last_subject_seq=None, expected_last_msg_id=None, ttl=None) -> None:
    """The arguments of a JetStream publish, checked before anything is sent."""
    if not client._engine.check_subject(subject):
        raise make_error("ErrBadSubject", f"Invalid subject {subject}")
    check_headers(headers)
    for name, v in (("msg_id", msg_id), ("expected_last_msg_id", expected_last_msg_id)):
        check_str(name, v, allow_empty=False)
    if expected_stream is not None:
        _check_name("stream", expected_stream)
    check_int("expected_last_seq", expected_last_seq, allow_none=True)
    check_int("expected_last_subject_seq", expected_last_subject_seq, allow_none=True)


def _check_name(what: str, name) -> None:
    from tclnats_py.engine.js.api import check_name
    check_name(what, name)


# ------------------------------------------------------------------ messages
class JsMsg:
    """A message from a consumer: its metadata and the ack family."""

    __slots__ = ("_js", "msg", "_ack", "_meta")

    def __init__(self, js: "JetStream", msg: Msg, meta: dict | None = None):
        self._js = js
        self.msg = msg
        self._ack = AckState()
        self._meta = meta

    subject = property(lambda self: self.msg.subject)
    data = property(lambda self: self.msg.data)
    headers = property(lambda self: self.msg.headers)
    reply = property(lambda self: self.msg.reply)

    def header(self, key: str, default=None):
        return self.msg.header(key, default)

    @property
    def metadata(self) -> dict:
        """nats-tcl's ``nats::metadata``: stream, consumer, num_delivered,
        stream_seq, consumer_seq, timestamp (ms), num_pending (+ domain)."""
        if self._meta is None:
            self._meta = parse_metadata(self.msg.reply, self.msg.subject)
        return self._meta

    def _send(self, payload: bytes) -> None:
        self._ack.check(payload)
        self._js.client.publish(ack_subject(self.msg), payload)
        self._ack.done(payload)

    async def ack(self) -> None:
        """+ACK, not waiting for the server (``ack_sync`` waits)."""
        self._send(ACK)

    async def ack_sync(self, timeout: float | None = None) -> None:
        """+ACK and wait until the server confirms it."""
        check_timeout(timeout)
        self._ack.check(ACK)
        await self._js.client.request(ack_subject(self.msg), ACK, timeout=timeout or self._js.timeout)
        self._ack.done(ACK)

    async def nak(self, delay: float | None = None) -> None:
        """-NAK: redeliver now, or after ``delay`` seconds."""
        check_seconds("delay", delay)
        self._send(nak_payload(None if delay is None else delay * 1000))

    async def in_progress(self) -> None:
        """+WPI: still working on it; the ack wait starts over."""
        self._send(WPI)

    async def term(self, reason: str | None = None) -> None:
        """+TERM: never redeliver."""
        check_str("reason", reason)
        if reason and ("\r" in reason or "\n" in reason):
            raise make_error("ErrInvalidArg", "Invalid reason: it contains a line break")
        self._send(term_payload(reason))

    @property
    def acked(self) -> bool:
        return self._ack.final is not None

    def __repr__(self):
        return f"JsMsg({self.msg!r})"


# ------------------------------------------------------------------ the context
class JetStream:
    """The JetStream context of one client: streams, consumers, publishing,
    Key-Value and Object Store.  ``timeout`` (seconds) bounds each API call."""

    def __init__(self, client, domain: str | None = None, api_prefix: str | None = None, timeout: float = 5.0,
                 publish_async_max_pending: int = 4000):
        timeout = check_timeout(timeout, 5.0, what="JetStream timeout")
        check_int("publish_async_max_pending", publish_async_max_pending, 1)
        self.client = client
        self.jsapi = JsApi(domain, api_prefix)
        self.domain = domain
        self.timeout = timeout
        self._ap: _AsyncPub | None = None
        self._ap_max = publish_async_max_pending

    def __repr__(self):
        return f"<JetStream {self.jsapi.prefix}>"

    @property
    def prefix(self) -> str:
        """The API prefix (nats-tcl's ``api_prefix``): ``$JS.API``, ``$JS.<domain>.API`` ..."""
        return self.jsapi.prefix

    # ------------------------------------------------------------ driving the shared logic
    async def _step(self, step):
        if step.__class__ is Request:
            t = self.timeout if step.timeout is None else step.timeout / 1000
            return await self.client.request(step.subject, step.payload, timeout=t, headers=step.headers)
        if step.__class__ is Publish:
            self.client.publish(step.subject, step.payload, reply=step.reply, headers=step.headers)
            return None
        if step.__class__ is Batch:
            async def one(s):
                try:
                    return await self._step(s)
                except NatsError as e:
                    return e
            return list(await asyncio.gather(*(one(s) for s in step.steps)))
        raise TypeError(f"unknown step {step!r}")

    async def _run(self, op):
        """Run a shared operation (a generator of steps) to its result."""
        kind, x = advance(op)
        while kind == "step":
            try:
                value = await self._step(x)
            except NatsError as e:
                kind, x = advance(op, error=e)
            else:
                kind, x = advance(op, value)
        return x

    @property
    def _server_version(self):
        return self.client.server_info.get("version")

    async def api(self, tail: str, body=None) -> Info:
        """Any JetStream API call by its subject tail, e.g. ``"STREAM.INFO.S"``."""
        return Info(await self._run(self.jsapi.call(tail, body)))

    # ------------------------------------------------------------ account
    async def account_info(self) -> Info:
        return Info(await self._run(self.jsapi.account_info()))

    # ------------------------------------------------------------ streams
    def _stream_body(self, name, config, kw) -> dict:
        if isinstance(name, StreamConfig):
            name, config = name.name, name
        cfg = _merge(StreamConfig, config, kw)
        if name is None:
            name = cfg.name
        cfg = cfg.replace(name=name)
        return cfg.to_api()

    async def create_stream(self, name, config: StreamConfig | dict | None = None, **kw) -> "Stream":
        """Create a stream from a StreamConfig and/or keyword fields
        (``create_stream("S", subjects=["s.*"], max_age=60)``)."""
        info = StreamInfo(await self._run(self.jsapi.stream_create(self._stream_body(name, config, kw))))
        return Stream(self, info["config"]["name"], info)

    async def update_stream(self, name, config: StreamConfig | dict | None = None, **kw) -> "Stream":
        """Update a stream: with a full config, or (only keywords) the current
        config with those fields changed."""
        if config is None and not isinstance(name, StreamConfig):
            config = (await self.stream_info(name)).config
        info = StreamInfo(await self._run(self.jsapi.stream_update(self._stream_body(name, config, kw))))
        return Stream(self, info["config"]["name"], info)

    async def create_or_update_stream(self, name, config: StreamConfig | dict | None = None, **kw) -> "Stream":
        try:
            body = self._stream_body(name, config, kw)
            info = StreamInfo(await self._run(self.jsapi.stream_update(body)))
        except NatsError as e:
            if e.code != "ErrStreamNotFound":
                raise
            info = StreamInfo(await self._run(self.jsapi.stream_create(body)))
        return Stream(self, info["config"]["name"], info)

    async def stream(self, name: str) -> "Stream":
        info = await self.stream_info(name)
        return Stream(self, name, info)

    async def stream_info(self, name: str, subjects_filter: str | None = None,
                          deleted_details: bool | None = None) -> StreamInfo:
        return StreamInfo(await self._run(self.jsapi.stream_info(name, subjects_filter, deleted_details)))

    async def delete_stream(self, name: str, /) -> bool:
        return await self._run(self.jsapi.stream_delete(name))

    async def stream_names(self, subject: str | None = None) -> list[str]:
        return list(await self._run(self.jsapi.stream_names(subject)))

    async def streams(self, subject: str | None = None) -> list[StreamInfo]:
        return [StreamInfo(s) for s in await self._run(self.jsapi.stream_list(subject))]

    async def purge_stream(self, name: str, filter: str | None = None, keep: int | None = None,
                           seq: int | None = None) -> int:
        """ADR-10 purge: all, or on ``filter``, below ``seq``, or all but ``keep``."""
        return await self._run(self.jsapi.stream_purge(name, filter, keep, seq))

    async def get_msg(self, stream: str, seq: int | None = None, last_by_subj: str | None = None,
                      next_by_subj: str | None = None) -> StoredMsg:
        """STREAM.MSG.GET (read-after-write consistent)."""
        return await self._run(self.jsapi.msg_get(stream, seq, last_by_subj, next_by_subj))

    async def direct_get(self, stream: str, seq: int | None = None, last_by_subj: str | None = None,
                         next_by_subj: str | None = None) -> StoredMsg:
        """DIRECT.GET (ADR-31); the stream needs allow_direct (or mirror_direct)."""
        return await self._run(self.jsapi.direct_get(stream, seq, last_by_subj, next_by_subj))

    async def delete_msg(self, stream: str, seq: int, erase: bool = False) -> bool:
        """Delete one message; ``erase`` overwrites it too (SecureDeleteMsg)."""
        return await self._run(self.jsapi.msg_delete(stream, seq, no_erase=not erase))

    # ------------------------------------------------------------ publish
    async def publish(self, subject: str, data=b"", headers=None, *, msg_id: str | None = None,
                      expected_stream: str | None = None, expected_last_seq: int | None = None,
                      expected_last_subject_seq: int | None = None, expected_last_msg_id: str | None = None,
                      ttl=None, timeout: float | None = None) -> PubAck:
        """Publish to a stream and wait for its ack.  ErrNoResponders: no
        stream on ``subject``; ErrWrongLastSequence, ErrJSResponse (e.g.
        10060 for a wrong expected stream)."""
        check_timeout(timeout)
        _check_publish(self.client, subject, headers, msg_id, expected_stream, expected_last_seq,
                       expected_last_subject_seq, expected_last_msg_id)
        hdrs = publish_headers(headers, msg_id=msg_id, expected_stream=expected_stream,
                               expected_last_seq=expected_last_seq,
                               expected_last_subject_seq=expected_last_subject_seq,
                               expected_last_msg_id=expected_last_msg_id, ttl=ttl)
        msg = await self.client.request(subject, data, timeout=timeout or self.timeout, headers=hdrs)
        return PubAck(parse_ack_fast(msg))

    async def publish_msg(self, msg: Msg, **kw) -> PubAck:
        if not isinstance(msg, Msg):
            raise make_error("ErrInvalidArg", f"A message expected, not {type(msg).__name__}")
        return await self.publish(msg.subject, msg.data, msg.headers, **kw)

    def publish_async(self, subject: str, data=b"", headers=None, *, timeout: float | None = None,
                      **kw) -> "asyncio.Future":
        """Publish without waiting: a future of the PubAck.  Acks come back on
        one wildcard inbox; at most ``publish_async_max_pending`` are in flight,
        the rest wait their turn.  ``publish_async_complete()`` awaits them all.

        The bad-input checks are :meth:`publish`'s, raised here at once."""
        timeout = self.timeout if timeout is None else check_timeout(timeout)
        if data.__class__ is not bytes:
            data = _to_bytes(data)
        client = self.client
        eng = client._engine
        if headers is not None or kw:
            _check_publish(client, subject, headers, **kw)
            hdrs = publish_headers(headers, **kw)
        else:
            if subject.__class__ is not str or not eng.check_subject(subject):
                raise make_error("ErrBadSubject", f"Invalid subject {subject}")
            hdrs = None
        ap = self._ap
        if ap is None or ap.sub.closed:
            ap = self._ap = _AsyncPub(self, ap)
        return ap.add(subject, data, hdrs, timeout)

    async def publish_async_complete(self, timeout: float | None = None) -> None:
        """Wait until every async publish so far has its ack (or error)."""
        timeout = check_timeout(timeout)
        ap = self._ap
        if ap is not None and ap.futures:
            w = ap.loop.create_future()  # resolved when the last one finishes (no callback per future)
            ap.idle_waiters.append(w)
            try:
                await asyncio.wait_for(w, timeout)
            finally:
                if w in ap.idle_waiters:
                    ap.idle_waiters.remove(w)

    @property
    def publish_async_pending(self) -> int:
        return len(self._ap.futures) if self._ap is not None else 0

    # ------------------------------------------------------------ consumers
    async def _consumer_request(self, stream, action, config, kw) -> "Consumer":
        cfg = _merge(ConsumerConfig, config, kw)
        req = self.jsapi.consumer_create_request(stream, cfg.to_api(), action, server_version=self._server_version,
                                                 wildcard_filter_token=False)
        info = ConsumerInfo(await self._run(api_call(req)))
        return Consumer(self, stream, info["name"], info)

    async def create_consumer(self, stream: str, config: ConsumerConfig | dict | None = None, **kw) -> "Consumer":
        """Create a consumer (pull unless it has a deliver_subject); explicit
        acks unless told otherwise (nats-tcl's and nats.go's default)."""
        return await self._consumer_request(stream, "create", config, kw)

    async def update_consumer(self, stream: str, config: ConsumerConfig | dict | None = None, **kw) -> "Consumer":
        return await self._consumer_request(stream, "update", config, kw)

    async def create_or_update_consumer(self, stream: str, config: ConsumerConfig | dict | None = None,
                                        **kw) -> "Consumer":
        return await self._consumer_request(stream, None, config, kw)

    async def consumer(self, stream: str, name: str) -> "Consumer":
        info = await self.consumer_info(stream, name)
        return Consumer(self, stream, name, info)

    async def consumer_info(self, stream: str, name: str) -> ConsumerInfo:
        return ConsumerInfo(await self._run(self.jsapi.consumer_info(stream, name)))

    async def delete_consumer(self, stream: str, name: str) -> bool:
        return await self._run(self.jsapi.consumer_delete(stream, name))

    async def consumer_names(self, stream: str) -> list[str]:
        return list(await self._run(self.jsapi.consumer_names(stream)))

    async def consumers(self, stream: str) -> list[ConsumerInfo]:
        return [ConsumerInfo(c) for c in await self._run(self.jsapi.consumer_list(stream))]

    def ordered_consumer(self, stream: str, filter_subject: str | None = None, deliver_policy: str = "all",
                         headers_only: bool = False, idle_heartbeat: float = 5.0, *, description: str | None = None,
                         filter_subjects=None, opt_start_seq: int | None = None, opt_start_time: str | None = None,
                         retry: float = 1.0) -> "OrderedConsumer":
        """An ordered consumer (ADR-17): iterate it, or ``await oc.start()``
        then ``next()`` / ``consume(cb)``; ``await oc.stop()`` ends it."""
        idle_heartbeat = check_timeout(idle_heartbeat, 5.0, what="idle_heartbeat")
        retry = check_timeout(retry, 1.0, what="retry")
        if filter_subject is not None and not self.client._engine.check_subject(filter_subject, wildcard=True):
            raise make_error("ErrBadSubject", f"Invalid subject {filter_subject}")
        check_int("opt_start_seq", opt_start_seq, 1, allow_none=True)
        state = _ordered.OrderedConsumer(
            stream, filter_subject=filter_subject, filter_subjects=filter_subjects, deliver_policy=deliver_policy,
            opt_start_seq=opt_start_seq, opt_start_time=opt_start_time, headers_only=headers_only,
            idle_heartbeat_ms=max(1, int(idle_heartbeat * 1000)), description=description,
            retry_ms=max(1, int(retry * 1000)))
        return OrderedConsumer(self, state)

    # ------------------------------------------------------------ Key-Value
    async def create_key_value(self, bucket: str, **config):
        """A new bucket (tclnats_py.aio.kv.KeyValue): history, ttl (s),
        max_value_size, max_bucket_size, storage, replicas, description,
        compression, metadata, republish, placement, mirror_name, mirror_domain."""
        from tclnats_py.aio.kv import KeyValue as KeyValue
        return await KeyValue.create_bucket(self, bucket, **config)

    async def update_key_value(self, bucket: str, **config):
        from tclnats_py.aio.kv import KeyValue as KeyValue
        return await KeyValue.create_bucket(self, bucket, update=True, **config)

    async def create_kv_aggregate(self, bucket: str, writable: bool, origins, **config):
        """A bucket gathering other buckets (maybe across domains; origins from
        tclnats_py.aio.kv.kv_origin(...)); read-only unless ``writable``."""
        from tclnats_py.aio.kv import KeyValue as KeyValue
        if not origins:
            raise make_error("ErrInvalidArg", "List of KV origins is required")
        if "mirror_name" in config or "mirror_domain" in config:
            raise make_error("ErrInvalidArg", "-mirror_name and -mirror_domain are not allowed")
        return await KeyValue.create_bucket(self, bucket, origins=list(origins), writable=bool(writable), **config)

    async def create_kv_mirror(self, name: str, origin: dict, **config) -> None:
        """A read-only copy of one bucket (serves direct gets); not bindable,
        deleted with delete_stream(name)."""
        from tclnats_py.aio.kv import KeyValue as KeyValue
        if "mirror_name" in config or "mirror_domain" in config:
            raise make_error("ErrInvalidArg", "-mirror_name and -mirror_domain are not allowed")
        await KeyValue.create_bucket(self, name, mirror_origin=origin, **config)

    async def key_value(self, bucket: str):
        from tclnats_py.aio.kv import KeyValue as KeyValue
        return await KeyValue.bind(self, bucket)

    async def delete_key_value(self, bucket: str, /) -> bool:
        from tclnats_py.engine.js import kv as _kv
        return await self._run(_kv.delete_bucket(self.jsapi, bucket))

    async def key_value_buckets(self) -> list[str]:
        from tclnats_py.engine.js import kv as _kv
        return await self._run(_kv.bucket_names(self.jsapi))

    async def empty_key_value(self, bucket: str) -> int:
        from tclnats_py.engine.js import kv as _kv
        return await self._run(_kv.empty_bucket(self.jsapi, bucket))

    # ------------------------------------------------------------ Object Store
    async def create_object_store(self, bucket: str, **config):
        """A new object store (tclnats_py.aio.objectstore.ObjectStore): description,
        ttl (s), max_bytes, storage, replicas, compression, metadata."""
        from tclnats_py.aio.objectstore import ObjectStore as ObjectStore
        return await ObjectStore.create_bucket(self, bucket, **config)

    async def object_store(self, bucket: str):
        from tclnats_py.aio.objectstore import ObjectStore as ObjectStore
        return await ObjectStore.bind(self, bucket)

    async def delete_object_store(self, bucket: str, /) -> bool:
        from tclnats_py.engine.js import objstore as _obj
        return await self._run(_obj.delete_bucket(self.jsapi, bucket))

    async def object_store_names(self) -> list[str]:
        from tclnats_py.engine.js import objstore as _obj
        return await self._run(_obj.bucket_names(self.jsapi))


# ------------------------------------------------------------------ streams
class Stream:
    """A stream (``await js.stream(name)``); ``info`` is the last one fetched."""

    def __init__(self, js: JetStream, name: str, info: StreamInfo):
        self.js = js
        self.name = name
        self.info = info

    def __repr__(self):
        return f"<Stream {self.name}>"

    @property
    def config(self) -> StreamConfig:
        return self.info.config

    async def refresh(self) -> StreamInfo:
        self.info = await self.js.stream_info(self.name)
        return self.info

    async def update(self, config: StreamConfig | None = None, **kw) -> "Stream":
        s = await self.js.update_stream(self.name, config or self.config, **kw)
        self.info = s.info
        return self

    async def delete(self) -> bool:
        return await self.js.delete_stream(self.name)

    async def purge(self, filter: str | None = None, keep: int | None = None, seq: int | None = None) -> int:
        return await self.js.purge_stream(self.name, filter, keep, seq)

    async def create_consumer(self, config: ConsumerConfig | dict | None = None, **kw) -> "Consumer":
        return await self.js.create_consumer(self.name, config, **kw)

    async def update_consumer(self, config: ConsumerConfig | dict | None = None, **kw) -> "Consumer":
        return await self.js.update_consumer(self.name, config, **kw)

    async def create_or_update_consumer(self, config: ConsumerConfig | dict | None = None, **kw) -> "Consumer":
        return await self.js.create_or_update_consumer(self.name, config, **kw)

    async def consumer(self, name: str) -> "Consumer":
        return await self.js.consumer(self.name, name)

    async def delete_consumer(self, name: str) -> bool:
        return await self.js.delete_consumer(self.name, name)

    async def consumer_names(self) -> list[str]:
        return await self.js.consumer_names(self.name)

    async def consumers(self) -> list[ConsumerInfo]:
        return await self.js.consumers(self.name)

    def ordered_consumer(self, **kw) -> "OrderedConsumer":
        return self.js.ordered_consumer(self.name, **kw)

    async def get_msg(self, seq: int | None = None, last_by_subj: str | None = None,
                      next_by_subj: str | None = None) -> StoredMsg:
        """A message by sequence or subject; DIRECT.GET when the stream
        allows it (as nats.go's Stream.GetMsg), STREAM.MSG.GET otherwise."""
        cfg = self.info.get("config") or {}
        if cfg.get("allow_direct"):
            return await self.js.direct_get(self.name, seq, last_by_subj, next_by_subj)
        return await self.js.get_msg(self.name, seq, last_by_subj, next_by_subj)

    async def get_last_msg_for_subject(self, subject: str) -> StoredMsg:
        return await self.get_msg(last_by_subj=subject)

    async def delete_msg(self, seq: int, erase: bool = False) -> bool:
        return await self.js.delete_msg(self.name, seq, erase)

    async def secure_delete_msg(self, seq: int) -> bool:
        return await self.js.delete_msg(self.name, seq, erase=True)


# ------------------------------------------------------------------ consumers
class Consumer:
    """A pull consumer: ``fetch`` batches, ``consume`` continuously, or iterate
    ``messages()``.  ``info`` is the last ConsumerInfo fetched."""

    def __init__(self, js: JetStream, stream: str, name: str, info: ConsumerInfo):
        self.js = js
        self.stream = stream
        self.name = name
        self.info = info

    def __repr__(self):
        return f"<Consumer {self.stream}/{self.name}>"

    @property
    def config(self) -> ConsumerConfig:
        return self.info.config

    @property
    def next_subject(self) -> str:
        return self.js.jsapi.next_subject(self.stream, self.name)

    async def refresh(self) -> ConsumerInfo:
        self.info = await self.js.consumer_info(self.stream, self.name)
        return self.info

    async def delete(self) -> bool:
        return await self.js.delete_consumer(self.stream, self.name)

    async def fetch(self, batch: int = 1, expires: float | None = None, *, max_bytes: int | None = None,
                    heartbeat: float | None = None, no_wait: bool | None = None) -> list[JsMsg]:
        """One pull request: up to ``batch`` messages (or ``max_bytes``).

        Without ``expires`` it takes what is there now (no_wait); with it the
        server waits up to ``expires`` seconds for the batch to fill.  The
        list may be short or empty.  ErrTimeout only when the server did not
        answer at all (after checking that the consumer exists: else
        ErrConsumerNotFound / ErrStreamNotFound); ErrConsumerDeleted etc.
        when the pull ended with that and brought nothing.
        """
        check_int("batch", batch, 1)
        check_int("max_bytes", max_bytes, 1, allow_none=True)
        expires = check_timeout(expires, what="expires")
        heartbeat = check_timeout(heartbeat, what="heartbeat")
        if expires is None:
            f = Fetch(batch, max_bytes=max_bytes, js_timeout_ms=int(self.js.timeout * 1000))
        else:
            exp = max(1, int(expires * 1000))
            hb = int(heartbeat * 1000) if heartbeat else None
            f = Fetch(batch, timeout_ms=exp + max(200, exp // 10), expires_ms=exp, max_bytes=max_bytes,
                      idle_heartbeat_ms=hb, no_wait=no_wait)
        client = self.js.client
        loop = asyncio.get_running_loop()
        inbox = client.new_inbox()
        sub = await client.subscribe(inbox)
        try:
            client.publish(self.next_subject, f.body, reply=inbox)
            deadline = loop.time() + f.timeout_ms / 1000
            hb_wait = f.heartbeat_timeout_ms / 1000 if f.heartbeat_timeout_ms else None
            while not f.done:
                left = deadline - loop.time()
                if left <= 0:
                    f.on_timeout()
                    break
                wait = min(left, hb_wait) if hb_wait else left
                try:
                    msg = await sub.next_msg(wait)
                except NatsError as e:
                    if e.code == "ErrTimeout":
                        if hb_wait and wait < left:
                            f.on_heartbeat_missed()
                        else:
                            f.on_timeout()
                        break
                    if e.code == "ErrBadSubscription":  # the connection closed
                        f.on_timeout()
                        break
                    raise
                f.on_msg(msg)
        finally:
            if sub.is_active:
                try:
                    await sub.unsubscribe()
                except NatsError:
                    pass
        closed = client.is_closed
        try:
            msgs = f.result(closed=closed and client.last_error is None, lost=closed and client.last_error is not None,
                            raise_status=True)
        except NatsError as e:
            if e.code == "ErrTimeout" and f.probe and not closed:
                await self.refresh()  # raises ErrConsumerNotFound, ErrStreamNotFound, ...
            raise
        return [JsMsg(self.js, m) for m in msgs]

    async def fetch_no_wait(self, batch: int = 1) -> list[JsMsg]:
        return await self.fetch(batch)

    async def fetch_bytes(self, max_bytes: int, expires: float | None = None) -> list[JsMsg]:
        check_int("max_bytes", max_bytes, 1)
        return await self.fetch(1_000_000, expires, max_bytes=max_bytes)

    async def next(self, timeout: float = 5.0) -> JsMsg:
        """One message, waiting up to ``timeout``; ErrTimeout when none came."""
        check_timeout(timeout)
        msgs = await self.fetch(1, expires=timeout)
        if not msgs:
            raise make_error("ErrTimeout", f"No message from consumer {self.stream}/{self.name}")
        return msgs[0]

    def _consume_state(self, max_messages, max_bytes, threshold_messages, threshold_bytes, expires, heartbeat):
        check_int("max_messages", max_messages, 1, allow_none=True)
        check_int("max_bytes", max_bytes, 1, allow_none=True)
        check_int("threshold_messages", threshold_messages, 0, allow_none=True)
        check_int("threshold_bytes", threshold_bytes, 0, allow_none=True)
        if expires is None:
            raise make_error("ErrBadTimeout", "Invalid expires None")
        expires = check_timeout(expires, what="expires")
        heartbeat = check_timeout(heartbeat, what="heartbeat")
        return Consume(max_messages, max_bytes, expires_ms=int(expires * 1000),
                       idle_heartbeat_ms=int(heartbeat * 1000) if heartbeat else None,
                       threshold_messages=threshold_messages, threshold_bytes=threshold_bytes)

    def consume(self, cb, *, max_messages: int | None = None, max_bytes: int | None = None,
                threshold_messages: int | None = None, threshold_bytes: int | None = None, expires: float = 30.0,
                heartbeat: float | None = None, error_cb=None, batch: int | None = None,
                threshold: int | None = None) -> "ConsumeContext":
        """Continuous pull (JetStream client API v2 "consume", ADR-37).

        Keeps up to ``max_messages`` (default 500; or ``max_bytes``) requested
        and refills when fewer than ``threshold_messages`` (default half)
        remain outstanding.  Pull requests expire after ``expires`` seconds
        and carry idle heartbeats (``heartbeat``, default half of expires up to
        30 s); missed heartbeats go to ``error_cb`` as ErrNoHeartbeat and the
        pulls start over; ErrConsumerDeleted (and other terminal statuses)
        go there too and end it.  ``cb(msg)`` may be a coroutine function; its
        exceptions go to ``error_cb``.  (``batch``/``threshold`` are older
        names of max_messages/threshold_messages.)
        """
        if not callable(cb):
            raise make_error("ErrInvalidArg", f"Invalid callback {cb!r}")
        if error_cb is not None and not callable(error_cb):
            raise make_error("ErrInvalidArg", f"Invalid error callback {error_cb!r}")
        state = self._consume_state(max_messages if max_messages is not None else batch, max_bytes,
                                    threshold_messages if threshold_messages is not None else threshold,
                                    threshold_bytes, expires, heartbeat)
        ctx = ConsumeContext(self, cb, state, error_cb)
        ctx.start()
        return ctx

    def messages(self, *, max_messages: int | None = None, max_bytes: int | None = None,
                 threshold_messages: int | None = None, threshold_bytes: int | None = None, expires: float = 30.0,
                 heartbeat: float | None = None, batch: int | None = None) -> "MessagesContext":
        """``async for msg in consumer.messages(): ...`` — the consume
        algorithm as an iterator (messages are counted as taken when the
        iterator hands them out).  ``await it.stop()`` ends it."""
        state = self._consume_state(max_messages if max_messages is not None else batch, max_bytes,
                                    threshold_messages, threshold_bytes, expires, heartbeat)
        return MessagesContext(self, state)


class _PullLoop:
    """What ConsumeContext and MessagesContext share: the inbox, the pulls,
    the heartbeat clock and reconnect detection."""

    def __init__(self, consumer: Consumer, state: Consume):
        self.consumer = consumer
        self.state = state
        self.client = consumer.js.client
        self._sub = None
        self._inbox = None
        self._reconnects = None
        self.warnings: list = []

    def _pulls(self, events) -> list:
        """Send the pull requests among ``events``; the others are returned."""
        rest = []
        for ev in events:
            if ev[0] == "pull":
                try:
                    self.client.publish(self.consumer.next_subject, ev[1], reply=self._inbox)
                except NatsError as e:
                    rest.append(("warning", e))
            else:
                rest.append(ev)
        return rest

    def _reconnected(self) -> bool:
        n = self.client.stats.get("reconnects", 0)
        if self._reconnects is None:
            self._reconnects = n
            return False
        if n != self._reconnects:
            self._reconnects = n
            return True
        return False

    def _on_silence(self) -> list:
        """The heartbeat clock ran out: reconnected, disconnected or a warning."""
        if not self.client.is_connected:
            self.state.on_disconnect()
            return []
        if self._reconnected() or self.state.paused:
            return self._pulls(self.state.on_reconnect())
        return self._pulls(self.state.on_heartbeat_missed())


class ConsumeContext(_PullLoop):
    """A running :meth:`Consumer.consume`; ``await ctx.stop()`` ends it."""

    def __init__(self, consumer: Consumer, cb, state: Consume, error_cb):
        super().__init__(consumer, state)
        self.cb = cb
        self.error_cb = error_cb
        self._timer = None
        self._task = None
        self.closed = asyncio.get_running_loop().create_future()

    @property
    def delivered(self) -> int:
        return self.state.delivered

    @property
    def outstanding(self) -> int:
        return self.state.pending_msgs

    def start(self):
        self._task = asyncio.get_running_loop().create_task(self._start())

    async def _start(self):
        try:
            self._inbox = self.client.new_inbox()
            self._sub = await self.client.subscribe(self._inbox, cb=self._on_msg)
            self._reconnected()
            self._arm()
            self._report_all(self._pulls(self.state.start()))
        except NatsError as e:
            self._report(e)
            await self.stop()

    def _arm(self):
        if self._timer is not None:
            self._timer.cancel()
        if self.state.stopped is None:
            self._timer = asyncio.get_running_loop().call_later(self.state.heartbeat_timeout_ms / 1000, self._silence)

    def _silence(self):
        self._timer = None
        if self.state.stopped is not None:
            return
        self._report_all(self._on_silence())
        self._arm()

    def _report(self, err):
        if self.error_cb is not None:
            try:
                r = self.error_cb(err)
                if inspect.isawaitable(r):
                    asyncio.ensure_future(r)
            except Exception:  # a failing error_cb must not stop consuming
                pass

    def _report_all(self, events):
        for ev in events:
            if ev[0] in ("warning", "stop"):
                self._report(ev[1])
                if ev[0] == "stop":
                    asyncio.ensure_future(self.stop())

    async def _on_msg(self, msg):
        if self.state.stopped is not None:
            return
        self._arm()
        if msg.status and self._reconnected():
            self._pulls(self.state.on_reconnect())
        for ev in self._pulls(self.state.on_msg(msg)):
            if ev[0] == "deliver":
                try:
                    r = self.cb(JsMsg(self.consumer.js, ev[1]))
                    if inspect.isawaitable(r):
                        await r
                except Exception as e:  # the user's callback failed: report it, keep consuming
                    self._report(e)
            else:
                self._report_all([ev])

    async def stop(self) -> None:
        """Stop pulling and delivering (what is in flight is dropped; unacked
        messages are redelivered by the server after their ack wait)."""
        self.state.stop()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._sub is not None and self._sub.is_active:
            try:
                await self._sub.unsubscribe()
            except NatsError:
                pass
        if not self.closed.done():
            self.closed.set_result(None)


class MessagesContext(_PullLoop):
    """An async iterator over a consumer's messages (the consume algorithm)."""

    def __aiter__(self):
        return self

    async def _start(self):
        self._inbox = self.client.new_inbox()
        self._sub = await self.client.subscribe(self._inbox)
        self._reconnected()
        self.warnings += self._pulls(self.state.start())

    async def __anext__(self) -> JsMsg:
        if self._sub is None:
            await self._start()
        while True:
            if self.state.stopped is not None:
                if self.state.stopped.code in ("ErrConsumerStopped",):
                    raise StopAsyncIteration
                raise self.state.stopped
            try:
                msg = await self._sub.next_msg(self.state.heartbeat_timeout_ms / 1000)
            except NatsError as e:
                if e.code == "ErrBadSubscription":
                    raise StopAsyncIteration from None
                if e.code != "ErrTimeout":
                    raise
                self.warnings += self._on_silence()
                continue
            if msg.status and self._reconnected():
                self._pulls(self.state.on_reconnect())
            for ev in self._pulls(self.state.on_msg(msg)):
                if ev[0] == "deliver":
                    return JsMsg(self.consumer.js, ev[1])
                if ev[0] == "stop":
                    raise ev[1]
                self.warnings.append(ev)

    async def stop(self) -> None:
        self.state.stop()
        if self._sub is not None and self._sub.is_active:
            try:
                await self._sub.unsubscribe()
            except NatsError:
                pass


# ------------------------------------------------------------------ ordered consumers
class OrderedConsumer:
    """An ordered consumer (ADR-17) over the shared state machine.

    ``async for msg in oc`` (JsMsg, no acks needed), ``await oc.next(t)``,
    or ``oc.consume(cb)``.  Resets are automatic; ``resets`` counts them and
    ``last_error`` says why the last one happened (nats-tcl's ``last_error``).
    """

    def __init__(self, js: JetStream, state: _ordered.OrderedConsumer):
        self.js = js
        self.state = state
        self.info: ConsumerInfo | None = None
        self._sub = None
        self._started = False
        self._task = None

    def __repr__(self):
        return f"<OrderedConsumer {self.state.stream} name={self.state.name!r}>"

    @property
    def name(self) -> str:
        return self.state.name

    @property
    def resets(self) -> int:
        return self.state.resets

    @property
    def last_error(self):
        return self.state.last_error

    @property
    def stream_seq(self) -> int:
        return self.state.stream_seq

    async def start(self) -> "OrderedConsumer":
        """Create the consumer now (errors such as ErrStreamNotFound come here)."""
        if not self._started:
            await self._create()
            self._started = True
        return self

    async def _create(self):
        client = self.js.client
        inbox = client.new_inbox()
        sub = await client.subscribe(inbox)
        req = self.state.create_request(self.js.jsapi, inbox, self.js._server_version)
        try:
            info = await self.js._run(api_call(req))
        except BaseException:
            if sub.is_active:
                await sub.unsubscribe()
            raise
        self._sub = sub
        self.state.on_created(info)
        self.info = ConsumerInfo(info)

    async def _drop_sub(self):
        sub, self._sub = self._sub, None
        if sub is not None and sub.is_active:
            try:
                await sub.unsubscribe()
            except NatsError:
                pass

    async def _recreate(self):
        await self._drop_sub()
        while self.state.stopped is None:
            try:
                await self._create()
                return
            except NatsError as e:
                err = make_error("ErrConnectionClosed", "Connection closed") if self.js.client.is_closed else e
                for ev in self.state.on_create_failed(err):
                    if ev[0] == "retry":
                        await asyncio.sleep(ev[1] / 1000)

    def __aiter__(self):
        return self

    async def __anext__(self) -> JsMsg:
        if not self._started:
            await self.start()
        client = self.js.client
        while True:
            if self.state.stopped is not None:
                raise StopAsyncIteration
            if self._sub is None:
                await self._recreate()
                continue
            try:
                msg = await self._sub.next_msg(self.state.heartbeat_timeout_ms / 1000)
            except NatsError as e:
                if e.code not in ("ErrTimeout", "ErrBadSubscription"):
                    raise
                if client.is_closed:
                    self.state.stop(make_error("ErrConnectionClosed", "Connection closed"))
                    raise StopAsyncIteration from None
                events = self.state.on_heartbeat_missed()
            else:
                events = self.state.on_msg(msg)
            for ev in events:
                kind = ev[0]
                if kind == "deliver":
                    return JsMsg(self.js, ev[1], ev[2])
                if kind == "publish":
                    client.publish(ev[1], ev[2])
                elif kind == "reset":
                    await self._recreate()
                    break

    async def next(self, timeout: float | None = None) -> JsMsg:
        """The next message; ErrTimeout after ``timeout`` seconds."""
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except asyncio.TimeoutError:
            raise make_error("ErrTimeout", f"No message from the ordered consumer on {self.state.stream}") from None

    def consume(self, cb, error_cb=None) -> "OrderedConsumer":
        """Deliver every message to ``cb`` (plain or coroutine function) in a
        task until ``stop()``."""
        async def run():
            try:
                async for m in self:
                    try:
                        r = cb(m)
                        if inspect.isawaitable(r):
                            await r
                    except Exception as e:  # the user's callback failed; go on
                        if error_cb is not None:
                            error_cb(e)
            except NatsError as e:
                if error_cb is not None:
                    error_cb(e)
        self._task = asyncio.get_running_loop().create_task(run())
        return self

    async def stop(self) -> None:
        """Unsubscribe; the server drops the consumer after its inactive threshold."""
        self.state.stop()
        await self._drop_sub()
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
