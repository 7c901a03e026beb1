"""The JetStream context: streams, consumers, publish, KV and Object Store entry points."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable, Generator, Iterable, cast

import asyncio
import datetime

from tclnats_py.engine.connection import Msg
from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.validate import _to_bytes, check_headers, check_int, check_timeout
from tclnats_py.engine.js.api import Batch, JsApi, Publish, Request, advance, api_call
from tclnats_py.engine.js import counter as _counter
from tclnats_py.engine.js import schedule as _schedule
from tclnats_py.engine.js.batch import publish_batch
from tclnats_py.engine.js.api_level import require_level
from tclnats_py.engine.js.priority import consumer_create
from tclnats_py.engine.js.publish import STALL_WAIT_MS, parse_ack_fast
from tclnats_py.jsface.info import (AccountInfo, BatchAck, ConsumerInfo, ConsumerPauseResponse, ConsumerResetResponse,
                                           Info, PubAck, StreamInfo)
from tclnats_py.engine.js import consumer_admin as _admin
from tclnats_py.jsface.config import ConsumerConfig, StreamConfig, consumer_body, stream_body
from tclnats_py.aio.jetstream.publish import _AsyncPub
from tclnats_py.jsface.publish import publish_options
from tclnats_py.jsface.kv import aggregate_options, mirror_options
from tclnats_py.jsface.push import bindable, check_push_args, push_config
from tclnats_py.jsface.pull import ordered_state
from tclnats_py.jsface.message import stored_msg as _face_headers
from tclnats_py.aio.jetstream.stream import Stream
from tclnats_py.aio.jetstream.counter import Counter
from tclnats_py.aio.jetstream.batch import BatchPublisher
from tclnats_py.aio.jetstream.consumer import Consumer
from tclnats_py.aio.jetstream.ordered import OrderedConsumer
from tclnats_py.aio.jetstream.message import JsMsg

if TYPE_CHECKING:  # names used in annotations only
    from typing_extensions import Unpack
    from tclnats_py.jsface.config import ConsumerFields, KeyValueFields, StreamFields
    from tclnats_py.aio.client import Client, ClientMsg, ErrorHandler, HeadersArg, Payload, Subscription
    from tclnats_py.aio.jetstream.pull import ConsumeContext  # noqa: F401
    from tclnats_py.aio.kv import KeyValue
    from tclnats_py.aio.objectstore import ObjectStore
    from tclnats_py.engine.js.api import StoredMsg
    from tclnats_py.aio.jetstream.push import PushSubscription



class JetStream:
    """The JetStream context of one client: streams, consumers, publishing,
    Key-Value and Object Store.  ``timeout`` (seconds) bounds each API call."""

    def __init__(self, client: Client, domain: str | None = None, api_prefix: str | None = None, timeout: float = 5.0,
                 publish_async_max_pending: int = 4000, publish_async_stall_wait: float = STALL_WAIT_MS / 1000):
        timeout = check_timeout(timeout, 5.0, what="JetStream timeout")
        check_int("publish_async_max_pending", publish_async_max_pending, 1)
        self._stall_wait = check_timeout(publish_async_stall_wait, what="publish_async_stall_wait")
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
    def _request(self, step: Request) -> Awaitable[Msg]:
        """The reply to one Request step of a shared operation."""
        t = self.timeout if step.timeout is None else step.timeout / 1000
        return self.client.request(step.subject, step.payload, timeout=t, headers=step.headers)

    async def _step(self, step):
        if step.__class__ is Request:
            return await self._request(step)
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

    async def run(self, op: Generator[Any, Any, Any]) -> Any:
        """Run a shared operation of the engine (a generator of steps, e.g.
        ``tclnats_py.engine.js.api.api_call(request)``) to its result; its
        errors raise as the engine's NatsError."""
        kind, x = advance(op)
        while kind == "step":
            try:
                value = await self._step(x)
            except NatsError as e:
                kind, x = advance(op, error=e)
            else:
                kind, x = advance(op, value)
        return x

    _run = run

    async def require_level(self, feature: str) -> int:
        """The server's JetStream API level (ADR-44, asked once), or
        ErrServerTooOld when ``feature`` (a key of
        ``tclnats_py.engine.js.api_level.FEATURES``) needs a newer server."""
        return await self._run(require_level(self.jsapi, feature))

    @property
    def _server_version(self):
        return self.client.server_info.get("version")

    async def api(self, tail: str, body: dict[str, Any] | bytes | str | None = None) -> Info:
        """Any JetStream API call by its subject tail, e.g. ``"STREAM.INFO.S"``."""
        return Info(await self._run(self.jsapi.call(tail, body)))

    # ------------------------------------------------------------ account
    async def account_info(self) -> AccountInfo:
        """The account's JetStream usage and limits ($JS.API.INFO)."""
        return AccountInfo(await self._run(self.jsapi.account_info()))

    # ------------------------------------------------------------ streams
    async def create_stream(self, name: str, config: StreamConfig | dict[str, Any] | None = None,
                            **kw: Unpack[StreamFields]) -> "Stream":
        """Create a stream from a StreamConfig and/or keyword fields
        (``create_stream("S", subjects=["s.*"], max_age=60)``)."""
        info = StreamInfo(await self._run(self.jsapi.stream_create(stream_body(name, config, kw))))
        return Stream(self, info["config"]["name"], info)

    async def update_stream(self, name: str, config: StreamConfig | dict[str, Any] | None = None,
                            **kw: Unpack[StreamFields]) -> "Stream":
        """Update a stream: with a full config, or (only keywords) the current
        config with those fields changed."""
        if config is None and not isinstance(name, StreamConfig):
            config = (await self.stream_info(name)).config
        info = StreamInfo(await self._run(self.jsapi.stream_update(stream_body(name, config, kw))))
        return Stream(self, info["config"]["name"], info)

    async def create_or_update_stream(self, name: str, config: StreamConfig | dict[str, Any] | None = None,
                                      **kw: Unpack[StreamFields]) -> "Stream":
        """Create the stream, or update it when it exists; see :meth:`create_stream`."""
        try:
            body = stream_body(name, config, kw)
            info = StreamInfo(await self._run(self.jsapi.stream_update(body)))
        except NatsError as e:
            if e.code != "ErrStreamNotFound":
                raise
            info = StreamInfo(await self._run(self.jsapi.stream_create(body)))
        return Stream(self, info["config"]["name"], info)

    async def stream(self, name: str) -> "Stream":
        """The :class:`Stream` ``name`` (its info fetched now); ErrStreamNotFound."""
        info = await self.stream_info(name)
        return Stream(self, name, info)

    async def counter(self, stream: str) -> "Counter":
        """The :class:`Counter` of ``stream`` (ADR-49; the stream needs
        ``allow_msg_counter``); ErrStreamNotFound, ErrServerTooOld."""
        await self._run(require_level(self.jsapi, _counter.FEATURE))
        return Counter(self, stream, await self.stream_info(stream))

    async def stream_info(self, name: str, subjects_filter: str | None = None,
                          deleted_details: bool | None = None) -> StreamInfo:
        """The stream's info (config and state); ``subjects_filter`` lists the subjects matching it
        in ``state.subjects``; ``deleted_details`` lists deleted sequences.  ErrStreamNotFound."""
        return StreamInfo(await self._run(self.jsapi.stream_info(name, subjects_filter, deleted_details)))

    async def delete_stream(self, name: str, /) -> bool:
        """Delete the stream and its messages; True.  ErrStreamNotFound."""
        return await self._run(self.jsapi.stream_delete(name))

    async def stream_names(self, subject: str | None = None) -> list[str]:
        """The names of the streams (those with a subject matching ``subject`` when given)."""
        return list(await self._run(self.jsapi.stream_names(subject)))

    async def streams(self, subject: str | None = None) -> list[StreamInfo]:
        """The infos of the streams (those with a subject matching ``subject`` when given)."""
        return [StreamInfo(s) for s in await self._run(self.jsapi.stream_list(subject))]

    async def purge_stream(self, name: str, filter: str | None = None, keep: int | None = None,
                           seq: int | None = None) -> int:
        """ADR-10 purge: all, or on ``filter``, below ``seq``, or all but ``keep``."""
        return await self._run(self.jsapi.stream_purge(name, filter, keep, seq))

    async def get_msg(self, stream: str, seq: int | None = None, last_by_subj: str | None = None,
                      next_by_subj: str | None = None) -> StoredMsg:
        """STREAM.MSG.GET (read-after-write consistent); ``headers`` read as
        :class:`tclnats_py.Headers` (``h["K"]`` the first value)."""
        return _face_headers(await self._run(self.jsapi.msg_get(stream, seq, last_by_subj, next_by_subj)))

    async def direct_get(self, stream: str, seq: int | None = None, last_by_subj: str | None = None,
                         next_by_subj: str | None = None) -> StoredMsg:
        """DIRECT.GET (ADR-31); the stream needs allow_direct (or mirror_direct)."""
        return _face_headers(await self._run(self.jsapi.direct_get(stream, seq, last_by_subj, next_by_subj)))

    async def delete_msg(self, stream: str, seq: int, erase: bool = False) -> bool:
        """Delete one message; ``erase`` overwrites it too (SecureDeleteMsg)."""
        return await self._run(self.jsapi.msg_delete(stream, seq, no_erase=not erase))

    # ------------------------------------------------------------ publish
    async def publish(self, subject: str, data: Payload = b"", headers: HeadersArg = None, *, msg_id: str | None = None,
                      expected_stream: str | None = None, expected_last_seq: int | None = None,
                      expected_last_subject_seq: int | None = None, expected_last_msg_id: str | None = None,
                      ttl: str | int | None = None, timeout: float | None = None,
                      expected_last_subject_seq_subject: str | None = None) -> PubAck:
        """Publish to a stream and wait for its ack.  ErrNoResponders: no
        stream on ``subject``; ErrWrongLastSequence, ErrJSResponse (e.g.
        10060 for a wrong expected stream).  ``ttl`` (seconds, or a Go
        duration such as ``"1h"``, or ``"never"``; ADR-43) needs a stream
        with ``allow_msg_ttl`` and nats-server 2.11 (ErrServerTooOld before).
        ``expected_last_subject_seq_subject``: the subject (wildcards
        allowed) whose last sequence ``expected_last_subject_seq`` is."""
        check_timeout(timeout)
        if (headers is None and msg_id is None and expected_stream is None and expected_last_seq is None
                and expected_last_subject_seq is None and expected_last_msg_id is None and ttl is None
                and expected_last_subject_seq_subject is None):
            hdrs = None  # nothing to check but the subject, which request() checks
        else:
            hdrs, features = publish_options(
                self.client.engine, subject, headers, msg_id=msg_id, expected_stream=expected_stream,
                expected_last_seq=expected_last_seq, expected_last_subject_seq=expected_last_subject_seq,
                expected_last_msg_id=expected_last_msg_id, ttl=ttl,
                expected_last_subject_seq_subject=expected_last_subject_seq_subject)
            for feature in features:
                await self._run(require_level(self.jsapi, feature))
        msg = await self.client.request(subject, data, timeout=timeout or self.timeout, headers=hdrs)
        return parse_ack_fast(msg, PubAck)  # type: ignore[return-value]  # (made a PubAck)

    async def publish_msg(self, msg: Msg, **kw: Any) -> PubAck:
        """Publish a :class:`Msg` to its stream (subject, data, headers); see :meth:`publish`."""
        if not isinstance(msg, Msg):
            raise make_error("ErrInvalidArg", f"A message expected, not {type(msg).__name__}")
        return await self.publish(msg.subject, msg.data, msg.headers, **kw)

    async def publish_async(self, subject: str, data: Payload = b"", headers: HeadersArg = None, *, timeout: float | None = None,
                            wait_stall: float | None = None, **kw: Any) -> "asyncio.Future[PubAck]":
        """Publish without waiting for the ack: ``fut = await js.publish_async(...)``
        gives a future of the PubAck (nats-py's form).  Acks come back on one
        wildcard inbox.  At most ``publish_async_max_pending`` are in flight:
        past it this waits up to ``wait_stall`` seconds (default the context's
        ``publish_async_stall_wait``, 0.2 s as nats.go) for one to finish, then
        raises ErrTooManyStalledMsgs and the message is not published.
        ``publish_async_complete()`` awaits them all.

        The bad-input checks are :meth:`publish`'s, raised here at once."""
        timeout = self.timeout if timeout is None else check_timeout(timeout)
        stall = self._stall_wait if wait_stall is None else check_timeout(wait_stall, what="wait_stall")
        if data.__class__ is not bytes:
            data = _to_bytes(data)
        client = self.client
        eng = client.engine
        if headers is not None or kw:
            hdrs, features = publish_options(eng, subject, headers, **kw)
            for feature in features:
                await self._run(require_level(self.jsapi, feature))
        else:
            if subject.__class__ is not str or not eng.check_subject(subject):
                raise make_error("ErrBadSubject", f"Invalid subject {subject}")
            hdrs = None
        ap = self._ap
        if ap is None or ap.sub.closed:
            ap = self._ap = _AsyncPub(self, ap)
        if ap.core.full:
            await ap.wait_room(stall)
            if ap.sub.closed:  # the connection closed meanwhile
                ap = self._ap = _AsyncPub(self, ap)
        return ap.add(subject, data, hdrs, timeout, stall)

    async def publish_schedule(self, subject: str, data: Payload = b"", headers: HeadersArg = None, *, target: str,
                               at: datetime.datetime | str | None = None,
                               every: float | datetime.timedelta | str | None = None, cron: str | None = None,
                               time_zone: str | None = None, ttl: str | int | None = None,
                               source: str | None = None, timeout: float | None = None) -> PubAck:
        """Store a message schedule (ADR-51) on ``subject``, its own subject in
        a stream with ``allow_msg_schedules``: the stream publishes ``data``
        (and ``headers``) to ``target``, a subject of the same stream, ``at``
        a time (a datetime, or RFC 3339 text), ``every`` so many seconds (1 or
        more; a timedelta or a Go duration such as ``"5m"``), or on a ``cron``
        spec (six fields, seconds first, or ``"@hourly"`` ...; in
        ``time_zone``, an IANA name, UTC by default).  ``ttl``: the TTL of
        each message produced (seconds or a Go duration; the stream needs
        ``allow_msg_ttl``); ``source``: publish the last message of that
        subject instead.  Publishing to ``subject`` again replaces the
        schedule; ``purge_stream(stream, filter=subject)`` cancels it.
        ErrInvalidArg/ErrBadSubject for what the client can check;
        ErrServerTooOld (``at``: nats-server 2.12; the rest: 2.14)."""
        check_timeout(timeout)
        check_headers(headers)
        hdrs, features = _schedule.schedule_headers(subject, headers, target=target, at=at, every=every, cron=cron,
                                                    time_zone=time_zone, ttl=ttl, source=source)
        ms = None if timeout is None else int(timeout * 1000)
        return PubAck(await self._run(_schedule.publish_schedule(self.jsapi, subject, _to_bytes(data), hdrs,
                                                                 features, ms)))

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

    async def publish_batch(self, msgs: Iterable[tuple[Any, ...]], *, ack_every: int = 0,
                            timeout: float | None = None) -> BatchAck:
        """Publish ``msgs``, each ``(subject, data)`` or ``(subject, data,
        headers)``, as one atomic batch (ADR-50; a stream with
        ``allow_atomic``, nats-server 2.12): all are stored, or none.  Its
        :class:`BatchAck` (``batch_id``, ``batch_size``, ``stream``, ``seq`` of
        the last).  Every message is checked before the first is sent; the
        server's refusal raises its error with what it means (ErrJSResponse,
        ``details["err_code"]``); ErrServerTooOld before 2.12.  ``ack_every``
        n: every n-th message waits for the server's word, so a long batch
        fails early; ``timeout`` (seconds) bounds each wait."""
        ms = None if timeout is None else int(check_timeout(timeout) * 1000)
        return BatchAck(await self._run(publish_batch(self.jsapi, msgs, ack_every, ms)))

    def batch(self, *, ack_every: int = 0, timeout: float | None = None) -> BatchPublisher:
        """An atomic batch to fill message by message (:class:`BatchPublisher`):
        ``async with js.batch() as b: await b.add(subject, data)`` commits at
        the end of the block (``b.ack``); see :meth:`publish_batch`."""
        return BatchPublisher(self, ack_every, None if timeout is None else check_timeout(timeout))

    @property
    def publish_async_pending(self) -> int:
        return len(self._ap.futures) if self._ap is not None else 0

    # ------------------------------------------------------------ consumers
    async def _consumer_request(self, stream, action, config, kw) -> "Consumer":
        cfg = consumer_body(config, kw)
        req = self.jsapi.consumer_create_request(stream, cfg, action, server_version=self._server_version,
                                                 wildcard_filter_token=False)
        info = ConsumerInfo(await self._run(consumer_create(self.jsapi, req, cfg)))
        return Consumer(self, stream, info["name"], info)

    async def create_consumer(self, stream: str, config: ConsumerConfig | dict[str, Any] | None = None,
                              **kw: Unpack[ConsumerFields]) -> "Consumer":
        """Create a consumer (pull unless it has a deliver_subject); explicit
        acks unless told otherwise (nats-tcl's and nats.go's default)."""
        return await self._consumer_request(stream, "create", config, kw)

    async def update_consumer(self, stream: str, config: ConsumerConfig | dict[str, Any] | None = None,
                              **kw: Unpack[ConsumerFields]) -> "Consumer":
        """Change a consumer's config; see :meth:`create_consumer`."""
        return await self._consumer_request(stream, "update", config, kw)

    async def create_or_update_consumer(self, stream: str, config: ConsumerConfig | dict[str, Any] | None = None,
                                        **kw: Unpack[ConsumerFields]) -> "Consumer":
        """Create the consumer, or update it when it exists; see :meth:`create_consumer`."""
        return await self._consumer_request(stream, None, config, kw)

    async def fetch_on_inbox(self, sub: Subscription, next_subject: str, batch: int, timeout: float | None,
                             heartbeat: float | None = None, reply_to: str | None = None) -> list[ClientMsg]:
        """Up to ``batch`` messages of a pull consumer, asked for with pull
        requests to ``next_subject`` (``self.jsapi.next_subject(stream,
        consumer)``) answered on ``sub``, a subscription to an inbox kept for
        many fetches (nats-py's ``PullSubscription.fetch``; the contract is
        :mod:`tclnats_py.engine.js.inbox_fetch`): messages already queued on
        ``sub`` first, then what comes within ``timeout`` seconds (None: no
        limit).  The requests ask for answers on ``reply_to`` (default:
        ``sub``'s subject).  Raises NatsError: ErrTimeout when none came
        (``details["heartbeats"]`` true when the server sent heartbeats but
        no message), ErrNoResponders, ErrJSResponse (``details`` has the
        status ``code`` and ``description``)."""
        from tclnats_py.engine.js.inbox_fetch import NextMsg, TakeQueued, inbox_fetch
        client = self.client
        loop = asyncio.get_running_loop()
        op = inbox_fetch(next_subject, reply_to or sub.subject, batch, timeout, heartbeat, loop.time())
        kind, step = advance(op)
        while kind == "step":
            if step.__class__ is NextMsg:
                left = None if step.deadline is None else step.deadline - loop.time()
                msg = None
                if left is None or left > 0:
                    try:
                        msg = await sub.next_msg(left)
                    except NatsError as e:
                        if e.code not in ("ErrTimeout", "ErrBadSubscription"):
                            raise
                kind, step = advance(op, (msg, loop.time()))
            elif step.__class__ is TakeQueued:
                kind, step = advance(op, sub.take() if sub.pending_msgs else None)
            else:  # the pull request
                client.publish(step.subject, step.payload, step.reply)
                await asyncio.sleep(0)
                kind, step = advance(op)
        return step

    async def push_subscribe(self, stream: str, cb: Callable[[JsMsg], Any] | None = None, *, consumer: str | None = None,
                             deliver_subject: str | None = None, deliver_group: str | None = None,
                             flow_control: bool = False, idle_heartbeat: float | None = None,
                             error_cb: ErrorHandler | None = None,
                             config: ConsumerConfig | dict[str, Any] | None = None, **kw: Any) -> "PushSubscription":
        """Receive from a push consumer of ``stream`` (the consumers older
        servers and apps use; new code: pull consumers).

        ``consumer``: bind to that existing push consumer (its deliver
        subject and group come from its info).  Else a consumer is created
        with ``deliver_subject`` (default: a new inbox), ``deliver_group``
        (the queue group its subscribers share), ``flow_control`` (needs
        ``idle_heartbeat``), ``idle_heartbeat`` (seconds) and the other
        ConsumerConfig fields in ``config``/``kw`` (``durable_name``,
        ``ack_policy``, ``filter_subject`` ...).  Messages go to ``cb``
        (plain or coroutine function) or are read with ``async for`` /
        ``next_msg``.  Flow control is answered and heartbeats watched (a
        missed one: ErrNoHeartbeat to ``error_cb``).  ErrInvalidArg when the
        consumer to bind is a pull consumer."""
        from tclnats_py.aio.jetstream.push import PushSubscription
        check_push_args(cb, error_cb, consumer, deliver_subject, deliver_group, flow_control, idle_heartbeat,
                        config, kw)
        if consumer is not None:
            info = bindable(await self.consumer_info(stream, consumer), stream, consumer)
        else:
            cfg = push_config(self.client.new_inbox, deliver_subject, deliver_group, flow_control, idle_heartbeat,
                              config, kw)
            info = (await self._consumer_request(stream, "create", cfg, {})).info
        ps = PushSubscription(self, info, cb, error_cb)
        await ps._start()
        return ps

    async def consumer(self, stream: str, name: str) -> "Consumer":
        """The pull :class:`Consumer` ``name`` of ``stream`` (its info fetched now); ErrConsumerNotFound."""
        info = await self.consumer_info(stream, name)
        return Consumer(self, stream, name, info)

    async def consumer_info(self, stream: str, name: str) -> ConsumerInfo:
        """The consumer's info (config and delivery state); ErrConsumerNotFound, ErrStreamNotFound."""
        return ConsumerInfo(await self._run(self.jsapi.consumer_info(stream, name)))

    async def delete_consumer(self, stream: str, name: str) -> bool:
        """Delete the consumer; True.  ErrConsumerNotFound."""
        return await self._run(self.jsapi.consumer_delete(stream, name))

    async def pause_consumer(self, stream: str, consumer: str,
                             pause_until: datetime.datetime | int | str) -> ConsumerPauseResponse:
        """Stop deliveries of ``consumer`` until ``pause_until`` (a datetime,
        naive meaning UTC; ms since the epoch; or RFC 3339 text).
        nats-server 2.11+ (ErrServerTooOld before)."""
        return ConsumerPauseResponse(await self._run(_admin.pause_consumer(self.jsapi, stream, consumer,
                                                                           pause_until)))

    async def resume_consumer(self, stream: str, consumer: str) -> ConsumerPauseResponse:
        """Let a paused consumer deliver again now.  nats-server 2.11+."""
        return ConsumerPauseResponse(await self._run(_admin.resume_consumer(self.jsapi, stream, consumer)))

    async def reset_consumer(self, stream: str, consumer: str, seq: int | None = None) -> ConsumerResetResponse:
        """Clear the consumer's pending and redelivered state; delivery goes on
        above its ack floor, or at stream sequence ``seq`` (ADR-60).
        nats-server 2.14+ (ErrServerTooOld before)."""
        return ConsumerResetResponse(await self._run(_admin.reset_consumer(self.jsapi, stream, consumer, seq)))

    async def consumer_names(self, stream: str) -> list[str]:
        """The names of the consumers of ``stream``."""
        return list(await self._run(self.jsapi.consumer_names(stream)))

    async def consumers(self, stream: str) -> list[ConsumerInfo]:
        """The infos of the consumers of ``stream``."""
        return [ConsumerInfo(c) for c in await self._run(self.jsapi.consumer_list(stream))]

    def ordered_consumer(self, stream: str, filter_subject: str | None = None, deliver_policy: str = "all",
                         headers_only: bool = False, idle_heartbeat: float = 5.0, *, description: str | None = None,
                         filter_subjects: list[str] | None = None, opt_start_seq: int | None = None, opt_start_time: str | None = None,
                         retry: float = 1.0, inactive_threshold: float = 2.0) -> "OrderedConsumer":
        """An ordered consumer (ADR-17): iterate it, or ``await oc.start()``
        then ``next()`` / ``consume(cb)``; ``await oc.stop()`` ends it.
        ``retry``: seconds between attempts to recreate it; the server drops
        a consumer nobody reads after ``inactive_threshold`` seconds."""
        state = ordered_state(self.client.engine, stream, filter_subject, deliver_policy, headers_only,
                              idle_heartbeat, description=description, filter_subjects=filter_subjects,
                              opt_start_seq=opt_start_seq, opt_start_time=opt_start_time, retry=retry,
                              inactive_threshold=inactive_threshold)
        return OrderedConsumer(self, state)

    # ------------------------------------------------------------ Key-Value
    async def create_key_value(self, bucket: str, **config: Unpack[KeyValueFields]) -> "KeyValue":
        """A new bucket (tclnats_py.aio.kv.KeyValue): history, ttl (s),
        max_value_size, max_bucket_size, storage, replicas, description,
        compression, metadata, republish, placement, mirror_name, mirror_domain."""
        from tclnats_py.aio.kv import KeyValue as KeyValue
        # (None only for a KV mirror, which create_kv_mirror makes)
        return cast("KeyValue", await KeyValue.create_bucket(self, bucket, **config))

    async def update_key_value(self, bucket: str, **config: Unpack[KeyValueFields]) -> "KeyValue":
        """Change a bucket's settings (history, ttl, max_bytes ...); see :meth:`create_key_value`."""
        from tclnats_py.aio.kv import KeyValue as KeyValue
        return cast("KeyValue", await KeyValue.create_bucket(self, bucket, update=True, **config))

    async def create_kv_aggregate(self, bucket: str, writable: bool, origins: list[dict[str, Any]],
                                  **config: Unpack[KeyValueFields]) -> "KeyValue":
        """A bucket gathering other buckets (maybe across domains; origins from
        tclnats_py.aio.kv.kv_origin(...)); read-only unless ``writable``."""
        from tclnats_py.aio.kv import KeyValue as KeyValue
        opts = aggregate_options(writable, origins, dict(config))
        return cast("KeyValue", await KeyValue.create_bucket(self, bucket, **opts))

    async def create_kv_mirror(self, name: str, origin: dict[str, Any], **config: Unpack[KeyValueFields]) -> None:
        """A read-only copy of one bucket (serves direct gets); not bindable,
        deleted with delete_stream(name)."""
        from tclnats_py.aio.kv import KeyValue as KeyValue
        await KeyValue.create_bucket(self, name, mirror_origin=origin, **mirror_options(dict(config)))

    async def key_value(self, bucket: str) -> "KeyValue":
        """Bind the existing bucket ``bucket`` (:class:`tclnats_py.aio.kv.KeyValue`); ErrBucketNotFound."""
        from tclnats_py.aio.kv import KeyValue as KeyValue
        return await KeyValue.bind(self, bucket)

    async def delete_key_value(self, bucket: str, /) -> bool:
        """Delete the bucket and its history; True.  ErrBucketNotFound."""
        from tclnats_py.engine.js import kv as _kv
        return await self._run(_kv.delete_bucket(self.jsapi, bucket))

    async def key_value_buckets(self) -> list[str]:
        """The names of the Key-Value buckets."""
        from tclnats_py.engine.js import kv as _kv
        return await self._run(_kv.bucket_names(self.jsapi))

    async def empty_key_value(self, bucket: str) -> int:
        """Purge every key of the bucket; the number of messages removed."""
        from tclnats_py.engine.js import kv as _kv
        return await self._run(_kv.empty_bucket(self.jsapi, bucket))

    # ------------------------------------------------------------ Object Store
    async def create_object_store(self, bucket: str, **config: Any) -> "ObjectStore":
        """A new object store (tclnats_py.aio.objectstore.ObjectStore): description,
        ttl (s), max_bytes, storage, replicas, compression, metadata."""
        from tclnats_py.aio.objectstore import ObjectStore as ObjectStore
        return await ObjectStore.create_bucket(self, bucket, **config)

    async def object_store(self, bucket: str) -> "ObjectStore":
        """Bind the existing object store ``bucket`` (:class:`tclnats_py.aio.objectstore.ObjectStore`)."""
        from tclnats_py.aio.objectstore import ObjectStore as ObjectStore
        return await ObjectStore.bind(self, bucket)

    async def delete_object_store(self, bucket: str, /) -> bool:
        """Delete the object store and its objects; True."""
        from tclnats_py.engine.js import objstore as _obj
        return await self._run(_obj.delete_bucket(self.jsapi, bucket))

    async def object_store_names(self) -> list[str]:
        """The names of the object stores."""
        from tclnats_py.engine.js import objstore as _obj
        return await self._run(_obj.bucket_names(self.jsapi))
