"""The JetStream context of the blocking face: streams, consumers, publish, KV and Object Store entry points."""

from __future__ import annotations

import datetime
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Callable, Generator

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.validate import _to_bytes, check_headers, check_int, check_timeout
from tclnats_py.engine.js import consumer_admin as _admin
from tclnats_py.engine.js import counter as _counter
from tclnats_py.engine.js import kv as _kv
from tclnats_py.engine.js import objstore as _obj
from tclnats_py.engine.js.api import Batch, JsApi, Publish, Request, advance
from tclnats_py.engine.js import schedule as _schedule
from tclnats_py.engine.js.batch import publish_batch
from tclnats_py.engine.js.api_level import require_level
from tclnats_py.engine.js.priority import consumer_create, consumer_unpin
from tclnats_py.engine.js.publish import STALL_WAIT_MS, parse_ack_fast, plain_ack
from tclnats_py.jsface.config import ConsumerConfig, StreamConfig, consumer_body, stream_body
from tclnats_py.jsface.info import (AccountInfo, BatchAck, ConsumerInfo, ConsumerPauseResponse, ConsumerResetResponse, Info,
                                    PubAck, StreamInfo)
from tclnats_py.jsface.kv import aggregate_options, bucket_options, mirror_options
from tclnats_py.jsface.publish import publish_options
from tclnats_py.jsface.push import bindable, check_push_args, push_config
from tclnats_py.jsface.pull import ordered_state
from tclnats_py.jsface.message import stored_msg as _face_headers
from tclnats_py.sync.jetstream.batch import BatchPublisher
from tclnats_py.sync.jetstream.consumer import Consumer
from tclnats_py.sync.jetstream.counter import Counter
from tclnats_py.sync.jetstream.ordered import OrderedConsumer
from tclnats_py.sync.jetstream.publish import AsyncPub, Retired
from tclnats_py.sync.jetstream.push import PushSubscription
from tclnats_py.sync.jetstream.stream import Stream

if TYPE_CHECKING:  # names used in annotations only
    from typing_extensions import Unpack
    from tclnats_py.engine.connection import Msg
    from tclnats_py.engine.js.api import StoredMsg
    from tclnats_py.sync.jetstream.message import JsMsg
    from tclnats_py.jsface.config import ConsumerFields, KeyValueFields, StreamFields
    from tclnats_py.sync.kv import KeyValue
    from tclnats_py.sync.objectstore import ObjectStore



class JetStream:
    """The JetStream context of one blocking client (``client.jetstream()``):
    streams, consumers, publishing, Key-Value and Object Store, with the
    asyncio face's names, arguments (seconds) and replies, returning instead
    of awaiting.  ``timeout`` (seconds) bounds each API call.

    ``client`` is the blocking client (``tclnats_py.sync``): this uses its
    ``request``, ``publish``, ``subscribe`` (``next_msg``, ``unsubscribe``),
    ``new_inbox`` and ``engine`` (subject checks, the server's INFO)."""

    def __init__(self, client: Any, domain: str | None = None, api_prefix: str | None = None, timeout: float = 5.0,
                 publish_async_max_pending: int = 4000, publish_async_stall_wait: float = STALL_WAIT_MS / 1000):
        timeout = check_timeout(timeout, 5.0, what="JetStream timeout")
        check_int("publish_async_max_pending", publish_async_max_pending, 1)
        self._stall_wait = check_timeout(publish_async_stall_wait, what="publish_async_stall_wait")
        self.client = client
        self.jsapi = JsApi(domain, api_prefix)
        self.domain = domain
        self.timeout = timeout
        self._ap: AsyncPub | None = None
        self._ap_lock = threading.Lock()
        self._ap_max = publish_async_max_pending

    def __repr__(self) -> str:
        return f"<JetStream {self.jsapi.prefix}>"

    @property
    def prefix(self) -> str:
        """The API prefix: ``$JS.API``, ``$JS.<domain>.API`` ..."""
        return self.jsapi.prefix

    # ------------------------------------------------------------ driving the shared logic
    def _request(self, step: Request) -> Msg:
        """The reply to one Request step of a shared operation."""
        t = self.timeout if step.timeout is None else step.timeout / 1000
        return self.client.request(step.subject, step.payload, timeout=t, headers=step.headers)

    def _step(self, step: Any) -> Any:
        if step.__class__ is Request:
            return self._request(step)
        if step.__class__ is Publish:
            self.client.publish(step.subject, step.payload, reply=step.reply, headers=step.headers)
            return None
        if step.__class__ is Batch:  # one after the other; each one's error is its result
            out: list = []
            for s in step.steps:
                try:
                    out.append(self._step(s))
                except NatsError as e:
                    out.append(e)
            return out
        raise TypeError(f"unknown step {step!r}")

    def run(self, op: Generator[Any, Any, Any]) -> Any:
        """Run a shared operation of the engine (a generator of steps, e.g.
        ``tclnats_py.engine.js.api.api_call(request)``) to its result; its
        errors raise as the engine's NatsError."""
        kind, x = advance(op)
        while kind == "step":
            try:
                value = self._step(x)
            except NatsError as e:
                kind, x = advance(op, error=e)
            else:
                kind, x = advance(op, value)
        return x

    _run = run

    def require_level(self, feature: str) -> int:
        """The server's JetStream API level (ADR-44, asked once), or
        ErrServerTooOld when ``feature`` needs a newer server."""
        return self._run(require_level(self.jsapi, feature))

    @property
    def _server_version(self) -> str | None:
        return self.client.engine.server_info.get("version")

    def api(self, tail: str, body: dict[str, Any] | bytes | str | None = None) -> Info:
        """Any JetStream API call by its subject tail, e.g. ``"STREAM.INFO.S"``."""
        return Info(self._run(self.jsapi.call(tail, body)))

    def account_info(self) -> AccountInfo:
        """The account's JetStream usage and limits ($JS.API.INFO)."""
        return AccountInfo(self._run(self.jsapi.account_info()))

    # ------------------------------------------------------------ streams
    def create_stream(self, name: str, config: StreamConfig | dict[str, Any] | None = None,
                      **kw: Unpack[StreamFields]) -> Stream:
        """Create a stream from a StreamConfig and/or keyword fields
        (``create_stream("S", subjects=["s.*"], max_age=60)``)."""
        info = StreamInfo(self._run(self.jsapi.stream_create(stream_body(name, config, kw))))
        return Stream(self, info["config"]["name"], info)

    def update_stream(self, name: str, config: StreamConfig | dict[str, Any] | None = None,
                      **kw: Unpack[StreamFields]) -> Stream:
        """Update a stream: with a full config, or (only keywords) the current
        config with those fields changed."""
        if config is None and not isinstance(name, StreamConfig):
            config = self.stream_info(name).config
        info = StreamInfo(self._run(self.jsapi.stream_update(stream_body(name, config, kw))))
        return Stream(self, info["config"]["name"], info)

    def create_or_update_stream(self, name: str, config: StreamConfig | dict[str, Any] | None = None,
                                **kw: Unpack[StreamFields]) -> Stream:
        """Create the stream, or update it when it exists."""
        body = stream_body(name, config, kw)
        try:
            info = StreamInfo(self._run(self.jsapi.stream_update(body)))
        except NatsError as e:
            if e.code != "ErrStreamNotFound":
                raise
            info = StreamInfo(self._run(self.jsapi.stream_create(body)))
        return Stream(self, info["config"]["name"], info)

    def stream(self, name: str) -> Stream:
        """The :class:`Stream` ``name`` (its info fetched now); ErrStreamNotFound."""
        return Stream(self, name, self.stream_info(name))

    def counter(self, stream: str) -> Counter:
        """The :class:`Counter` of ``stream`` (ADR-49; the stream needs
        ``allow_msg_counter``); ErrStreamNotFound, ErrServerTooOld."""
        self._run(require_level(self.jsapi, _counter.FEATURE))
        return Counter(self, stream, self.stream_info(stream))

    def stream_info(self, name: str, subjects_filter: str | None = None,
                    deleted_details: bool | None = None) -> StreamInfo:
        """The stream's info (config and state); ErrStreamNotFound."""
        return StreamInfo(self._run(self.jsapi.stream_info(name, subjects_filter, deleted_details)))

    def delete_stream(self, name: str, /) -> bool:
        """Delete the stream and its messages; True.  ErrStreamNotFound."""
        return self._run(self.jsapi.stream_delete(name))

    def stream_names(self, subject: str | None = None) -> list[str]:
        """The names of the streams (those with a subject matching ``subject`` when given)."""
        return list(self._run(self.jsapi.stream_names(subject)))

    def streams(self, subject: str | None = None) -> list[StreamInfo]:
        """The infos of the streams (those with a subject matching ``subject`` when given)."""
        return [StreamInfo(s) for s in self._run(self.jsapi.stream_list(subject))]

    def purge_stream(self, name: str, filter: str | None = None, keep: int | None = None,
                     seq: int | None = None) -> int:
        """ADR-10 purge: all, or on ``filter``, below ``seq``, or all but ``keep``; how many went."""
        return self._run(self.jsapi.stream_purge(name, filter, keep, seq))

    def get_msg(self, stream: str, seq: int | None = None, last_by_subj: str | None = None,
                next_by_subj: str | None = None) -> StoredMsg:
        """STREAM.MSG.GET; ``headers`` read as :class:`tclnats_py.Headers`.  ErrMsgNotFound."""
        return _face_headers(self._run(self.jsapi.msg_get(stream, seq, last_by_subj, next_by_subj)))

    def direct_get(self, stream: str, seq: int | None = None, last_by_subj: str | None = None,
                   next_by_subj: str | None = None) -> StoredMsg:
        """DIRECT.GET (ADR-31); the stream needs allow_direct (or mirror_direct)."""
        return _face_headers(self._run(self.jsapi.direct_get(stream, seq, last_by_subj, next_by_subj)))

    def delete_msg(self, stream: str, seq: int, erase: bool = False) -> bool:
        """Delete one message; ``erase`` overwrites it too."""
        return self._run(self.jsapi.msg_delete(stream, seq, no_erase=not erase))

    # ------------------------------------------------------------ publish
    def publish(self, subject: str, data: bytes | str = b"", headers: Any = None, *, timeout: float | None = None,
                **kw: Any) -> PubAck:
        """Publish to a stream and wait for its ack.  ``kw``: ``msg_id``,
        ``expected_stream``, ``expected_last_seq``, ``expected_last_subject_seq``,
        ``expected_last_msg_id``, ``ttl`` (seconds or a Go duration; ADR-43),
        ``expected_last_subject_seq_subject``.  ErrNoResponders: no stream
        on ``subject``; ErrWrongLastSequence, ErrJSResponse, ErrTimeout."""
        hdrs = None  # without options nothing to check but the subject, which request() checks
        if timeout is not None or headers is not None or kw:
            if timeout is not None:
                check_timeout(timeout)
            if headers is not None or any(v is not None for v in kw.values()):
                hdrs, features = publish_options(self.client.engine, subject, headers, **kw)
                for feature in features:
                    self._run(require_level(self.jsapi, feature))
        msg = self.client.request(subject, data, timeout or self.timeout, hdrs)
        if msg.headers is None and plain_ack is not None:  # (parse_ack_fast's first step, without its call)
            ack = plain_ack(msg.data, PubAck)
            if ack is not None:
                return ack  # (made a PubAck)
        return parse_ack_fast(msg, PubAck)  # type: ignore[return-value]  # (made a PubAck)

    def publish_msg(self, msg: Msg, **kw: Any) -> PubAck:
        """Publish a :class:`Msg` to its stream (subject, data, headers); see :meth:`publish`."""
        from tclnats_py.engine.connection import Msg
        if not isinstance(msg, Msg):
            raise make_error("ErrInvalidArg", f"A message expected, not {type(msg).__name__}")
        return self.publish(msg.subject, msg.data, msg.headers, **kw)

    def publish_async(self, subject: str, data: bytes | str = b"", headers: Any = None, *,
                      timeout: float | None = None, wait_stall: float | None = None, **kw: Any) -> Future[PubAck]:
        """Publish without waiting for the ack: a ``concurrent.futures.Future``
        of the PubAck (``fut.result(timeout)``; its exception the publish's
        error).  Acks come back on one wildcard inbox, read by a thread of
        this context.  At most ``publish_async_max_pending`` are in flight:
        past it this waits up to ``wait_stall`` seconds (default the
        context's ``publish_async_stall_wait``, 0.2 s) for one to finish,
        then raises ErrTooManyStalledMsgs and the message is not published.
        :meth:`publish_async_complete` waits for them all.  The bad-input
        checks are :meth:`publish`'s, raised here at once."""
        timeout = self.timeout if timeout is None else check_timeout(timeout)
        stall = self._stall_wait if wait_stall is None else check_timeout(wait_stall, what="wait_stall")
        payload = data if data.__class__ is bytes else _to_bytes(data)
        eng = self.client.engine
        if headers is not None or kw:
            hdrs, features = publish_options(eng, subject, headers, **kw)
            for feature in features:
                self._run(require_level(self.jsapi, feature))
        else:
            if subject.__class__ is not str or not eng.check_subject(subject):
                raise make_error("ErrBadSubject", f"Invalid subject {subject}")
            hdrs = None
        while True:
            with self._ap_lock:
                ap = self._ap
                if ap is None or ap.ended:
                    ap = self._ap = AsyncPub(self, self._ap_max)
            try:
                return ap.add(subject, payload, hdrs, timeout, stall)
            except Retired:  # it went idle and ended just now: the next one takes the publish
                continue

    def publish_schedule(self, subject: str, data: bytes | str = b"", headers: Any = None, *, target: str,
                         at: datetime.datetime | str | None = None,
                         every: float | datetime.timedelta | str | None = None, cron: str | None = None,
                         time_zone: str | None = None, ttl: str | int | None = None, source: str | None = None,
                         timeout: float | None = None) -> PubAck:
        """Store a message schedule (ADR-51) on ``subject`` that publishes to
        ``target`` ``at`` a time, ``every`` so many seconds or on a ``cron``
        spec; the asyncio face's :meth:`~tclnats_py.aio.jetstream.JetStream.publish_schedule`
        (same arguments, checks and errors) without ``await``."""
        check_timeout(timeout)
        check_headers(headers)
        hdrs, features = _schedule.schedule_headers(subject, headers, target=target, at=at, every=every, cron=cron,
                                                    time_zone=time_zone, ttl=ttl, source=source)
        ms = None if timeout is None else int(timeout * 1000)
        return PubAck(self._run(_schedule.publish_schedule(self.jsapi, subject, _to_bytes(data), hdrs, features, ms)))

    def publish_batch(self, msgs: Any, *, ack_every: int = 0, timeout: float | None = None) -> BatchAck:
        """Publish ``msgs``, each ``(subject, data)`` or ``(subject, data,
        headers)``, as one atomic batch (ADR-50): all stored, or none; its
        :class:`BatchAck`.  The asyncio face's
        :meth:`~tclnats_py.aio.jetstream.JetStream.publish_batch` without ``await``."""
        ms = None if timeout is None else int(check_timeout(timeout) * 1000)
        return BatchAck(self._run(publish_batch(self.jsapi, msgs, ack_every, ms)))

    def batch(self, *, ack_every: int = 0, timeout: float | None = None) -> BatchPublisher:
        """An atomic batch to fill message by message: ``with js.batch() as b:
        b.add(subject, data)`` commits at the end of the block (``b.ack``)."""
        return BatchPublisher(self, ack_every, None if timeout is None else check_timeout(timeout))

    def publish_async_complete(self, timeout: float | None = None) -> None:
        """Wait until every async publish so far has its ack (or error);
        ErrTimeout after ``timeout`` seconds (None: no limit)."""
        timeout = check_timeout(timeout)
        ap = self._ap
        if ap is not None and not ap.wait_idle(timeout):
            raise make_error("ErrTimeout", f"{len(ap.futures)} async publishes still wait for their ack")

    @property
    def publish_async_pending(self) -> int:
        """Async publishes waiting for their ack."""
        return len(self._ap.futures) if self._ap is not None else 0

    def close(self) -> None:
        """End this context's ack thread (what still waits for an ack fails
        with ErrConnectionClosed).  Closing the client does it too."""
        with self._ap_lock:
            ap, self._ap = self._ap, None
        if ap is not None:
            ap.close()

    # ------------------------------------------------------------ consumers
    def _consumer_request(self, stream: str, action: str | None, config: ConsumerConfig | dict[str, Any] | None,
                          kw: Any) -> Consumer:
        cfg = consumer_body(config, kw)
        req = self.jsapi.consumer_create_request(stream, cfg, action, server_version=self._server_version,
                                                 wildcard_filter_token=False)
        info = ConsumerInfo(self._run(consumer_create(self.jsapi, req, cfg)))
        return Consumer(self, stream, info["name"], info)

    def create_consumer(self, stream: str, config: ConsumerConfig | dict[str, Any] | None = None,
                        **kw: Unpack[ConsumerFields]) -> Consumer:
        """Create a (pull) consumer; explicit acks unless told otherwise."""
        return self._consumer_request(stream, "create", config, kw)

    def update_consumer(self, stream: str, config: ConsumerConfig | dict[str, Any] | None = None,
                        **kw: Unpack[ConsumerFields]) -> Consumer:
        """Change a consumer's config; see :meth:`create_consumer`."""
        return self._consumer_request(stream, "update", config, kw)

    def create_or_update_consumer(self, stream: str, config: ConsumerConfig | dict[str, Any] | None = None,
                                  **kw: Unpack[ConsumerFields]) -> Consumer:
        """Create the consumer, or update it when it exists."""
        return self._consumer_request(stream, None, config, kw)

    def push_subscribe(self, stream: str, cb: Callable[[JsMsg], Any] | None = None, *, consumer: str | None = None,
                       deliver_subject: str | None = None, deliver_group: str | None = None,
                       flow_control: bool = False, idle_heartbeat: float | None = None,
                       error_cb: Callable[[Exception], Any] | None = None,
                       config: ConsumerConfig | dict[str, Any] | None = None, **kw: Any) -> PushSubscription:
        """Receive from a push consumer of ``stream`` (older servers' and
        apps' kind; new code: pull consumers): bind to the existing
        ``consumer``, or create one (``deliver_subject``, default a new
        inbox; ``deliver_group``; ``flow_control`` with ``idle_heartbeat``
        seconds; other ConsumerConfig fields in ``config``/``kw``).  A thread
        of the subscription calls ``cb(msg)``, else read it with ``for`` or
        ``next_msg``; see :class:`~tclnats_py.sync.jetstream.push.PushSubscription`.
        ErrInvalidArg when the consumer to bind is a pull consumer."""
        check_push_args(cb, error_cb, consumer, deliver_subject, deliver_group, flow_control, idle_heartbeat,
                        config, kw)
        if consumer is not None:
            info = bindable(self.consumer_info(stream, consumer), stream, consumer)
        else:
            cfg = push_config(self.client.new_inbox, deliver_subject, deliver_group, flow_control, idle_heartbeat,
                              config, kw)
            info = self._consumer_request(stream, "create", cfg, {}).info
        ps = PushSubscription(self, info, cb, error_cb)
        ps._start()
        return ps

    def consumer(self, stream: str, name: str) -> Consumer:
        """The pull :class:`Consumer` ``name`` of ``stream`` (its info fetched now); ErrConsumerNotFound."""
        return Consumer(self, stream, name, self.consumer_info(stream, name))

    def consumer_info(self, stream: str, name: str) -> ConsumerInfo:
        """The consumer's info; ErrConsumerNotFound, ErrStreamNotFound."""
        return ConsumerInfo(self._run(self.jsapi.consumer_info(stream, name)))

    def delete_consumer(self, stream: str, name: str) -> bool:
        """Delete the consumer; True.  ErrConsumerNotFound."""
        return self._run(self.jsapi.consumer_delete(stream, name))

    def consumer_names(self, stream: str) -> list[str]:
        """The names of the consumers of ``stream``."""
        return list(self._run(self.jsapi.consumer_names(stream)))

    def consumers(self, stream: str) -> list[ConsumerInfo]:
        """The infos of the consumers of ``stream``."""
        return [ConsumerInfo(c) for c in self._run(self.jsapi.consumer_list(stream))]

    def pause_consumer(self, stream: str, consumer: str,
                       pause_until: datetime.datetime | int | str) -> ConsumerPauseResponse:
        """Stop deliveries of ``consumer`` until ``pause_until`` (nats-server 2.11+)."""
        return ConsumerPauseResponse(self._run(_admin.pause_consumer(self.jsapi, stream, consumer, pause_until)))

    def resume_consumer(self, stream: str, consumer: str) -> ConsumerPauseResponse:
        """Let a paused consumer deliver again now (nats-server 2.11+)."""
        return ConsumerPauseResponse(self._run(_admin.resume_consumer(self.jsapi, stream, consumer)))

    def unpin_consumer(self, stream: str, consumer: str, group: str) -> bool:
        """Take the pin of priority group ``group`` of a pinned_client
        consumer from the client holding it (ADR-42); True."""
        return self._run(consumer_unpin(self.jsapi, stream, consumer, group))

    def reset_consumer(self, stream: str, consumer: str, seq: int | None = None) -> ConsumerResetResponse:
        """Clear the consumer's pending and redelivered state (ADR-60, nats-server 2.14+)."""
        return ConsumerResetResponse(self._run(_admin.reset_consumer(self.jsapi, stream, consumer, seq)))

    def ordered_consumer(self, stream: str, filter_subject: str | None = None, deliver_policy: str = "all",
                         headers_only: bool = False, idle_heartbeat: float = 5.0, *, description: str | None = None,
                         filter_subjects: list[str] | None = None, opt_start_seq: int | None = None,
                         opt_start_time: str | None = None, retry: float = 1.0,
                         inactive_threshold: float = 2.0) -> OrderedConsumer:
        """An ordered consumer (ADR-17): iterate it (``for msg in oc``), or
        ``oc.next(timeout)``, or ``oc.consume(cb)`` on a thread; ``oc.stop()``
        ends it.  ``retry``: seconds between attempts to recreate it; the
        server drops a consumer nobody reads after ``inactive_threshold`` seconds."""
        return OrderedConsumer(self, ordered_state(
            self.client.engine, stream, filter_subject, deliver_policy, headers_only, idle_heartbeat,
            description=description, filter_subjects=filter_subjects, opt_start_seq=opt_start_seq,
            opt_start_time=opt_start_time, retry=retry, inactive_threshold=inactive_threshold))

    # ------------------------------------------------------------ Key-Value
    def create_key_value(self, bucket: str, **config: Unpack[KeyValueFields]) -> KeyValue:
        """A new bucket (:class:`tclnats_py.sync.kv.KeyValue`): history, ttl (s),
        max_value_size, max_bucket_size, storage, replicas, description,
        compression, metadata, republish, placement."""
        from tclnats_py.sync.kv import KeyValue
        return KeyValue.create_bucket(self, bucket, **config)

    def update_key_value(self, bucket: str, **config: Unpack[KeyValueFields]) -> KeyValue:
        """Change a bucket's settings; see :meth:`create_key_value`."""
        from tclnats_py.sync.kv import KeyValue
        return KeyValue.create_bucket(self, bucket, update=True, **config)

    def create_kv_aggregate(self, bucket: str, writable: bool, origins: list[dict[str, Any]],
                            **config: Unpack[KeyValueFields]) -> KeyValue:
        """A bucket gathering other buckets (maybe across domains; origins from
        :func:`tclnats_py.sync.kv.kv_origin`); read-only unless ``writable``."""
        from tclnats_py.sync.kv import KeyValue
        return KeyValue.create_bucket(self, bucket, **aggregate_options(writable, origins, dict(config)))

    def create_kv_mirror(self, name: str, origin: dict[str, Any], **config: Unpack[KeyValueFields]) -> None:
        """A read-only copy of one bucket (serves direct gets); not bindable,
        deleted with delete_stream(name)."""
        self._run(_kv.create_bucket(self.jsapi, name, mirror_origin=origin,
                                    **bucket_options(**mirror_options(dict(config)))))

    def empty_key_value(self, bucket: str) -> int:
        """Purge every key of the bucket; the number of messages removed."""
        return self._run(_kv.empty_bucket(self.jsapi, bucket))

    def key_value(self, bucket: str) -> KeyValue:
        """Bind the existing bucket ``bucket``; ErrBucketNotFound."""
        from tclnats_py.sync.kv import KeyValue
        return KeyValue.bind(self, bucket)

    def delete_key_value(self, bucket: str, /) -> bool:
        """Delete the bucket and its history; True.  ErrBucketNotFound."""
        return self._run(_kv.delete_bucket(self.jsapi, bucket))

    def key_value_buckets(self) -> list[str]:
        """The names of the Key-Value buckets."""
        return self._run(_kv.bucket_names(self.jsapi))

    # ------------------------------------------------------------ Object Store
    def create_object_store(self, bucket: str, **config: Any) -> ObjectStore:
        """A new object store (:class:`tclnats_py.sync.objectstore.ObjectStore`):
        description, ttl (s), max_bytes, storage, replicas, compression, metadata."""
        from tclnats_py.sync.objectstore import ObjectStore
        return ObjectStore.create_bucket(self, bucket, **config)

    def object_store(self, bucket: str) -> ObjectStore:
        """Bind the existing object store ``bucket``; ErrBucketNotFound."""
        from tclnats_py.sync.objectstore import ObjectStore
        return ObjectStore.bind(self, bucket)

    def delete_object_store(self, bucket: str, /) -> bool:
        """Delete the object store and its objects; True."""
        return self._run(_obj.delete_bucket(self.jsapi, bucket))

    def object_store_names(self) -> list[str]:
        """The names of the object stores."""
        return self._run(_obj.bucket_names(self.jsapi))
