"""Consumer: one consumer's info, fetch, consume and messages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import asyncio

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.validate import check_int, check_timeout
from tclnats_py.engine.js.events import Pull
from tclnats_py.engine.js.priority import PullGroup, consumer_unpin
from tclnats_py.jsface.pull import DEFAULT_FETCH_WAIT, consume_state, fetch_state, fetch_wait, pull_group
from tclnats_py.aio.jetstream.message import JsMsg
from tclnats_py.aio.jetstream.pull import ConsumeContext, MessagesContext

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.aio.client import ErrorHandler
    from tclnats_py.jsface.config import ConsumerConfig
    from tclnats_py.aio.jetstream.context import JetStream
    from tclnats_py.jsface.info import ConsumerInfo




class Consumer:
    """A pull consumer: ``fetch`` batches, ``consume`` continuously, or iterate
    ``messages()``.  ``info`` is the last ConsumerInfo fetched.

    Priority groups (ADR-42): a consumer with ``priority_groups`` serves pulls
    that name a ``group``; each of the pulling methods takes it, with
    ``min_pending``/``min_ack_pending`` (overflow policy) and ``priority``
    (prioritized policy, 0-9).  Under the pinned_client policy this object
    keeps the pin the server gives it (:attr:`pins`, group -> id) and sends
    it with its later pulls; a pull whose pin went stale forgets it and pulls
    again unpinned, standing by.  :meth:`unpin` takes a group's pin away."""

    def __init__(self, js: JetStream, stream: str, name: str, info: ConsumerInfo):
        self.js = js
        self.stream = stream
        self.name = name
        self.info = info
        self.pins: dict[str, str] = {}

    def _group(self, group: str | None, min_pending: int | None, min_ack_pending: int | None,
               priority: int | None) -> PullGroup | None:
        return pull_group(group, min_pending, min_ack_pending, priority, self.pins)

    async def unpin(self, group: str) -> bool:
        """Take the pin of ``group`` from the client that holds it (ADR-42); the
        server pins one of the waiting pulls next.  True."""
        return await self.js._run(consumer_unpin(self.js.jsapi, self.stream, self.name, group))

    def __repr__(self):
        return f"<Consumer {self.stream}/{self.name}>"

    @property
    def config(self) -> ConsumerConfig:
        return self.info.config

    @property
    def next_subject(self) -> str:
        return self.js.jsapi.next_subject(self.stream, self.name)

    async def refresh(self) -> ConsumerInfo:
        """Fetch the consumer's info again (``self.info``) and return it."""
        self.info = await self.js.consumer_info(self.stream, self.name)
        return self.info

    async def delete(self) -> bool:
        """Delete this consumer; True."""
        return await self.js.delete_consumer(self.stream, self.name)

    async def fetch(self, batch: int = 1, max_wait: float | None = None, *, expires: float | None = None,
                    max_bytes: int | None = None, heartbeat: float | None = None,
                    no_wait: bool | None = None, group: str | None = None, min_pending: int | None = None,
                    min_ack_pending: int | None = None, priority: int | None = None) -> list[JsMsg]:
        """Up to ``batch`` messages (or ``max_bytes``) in one pull request,
        as nats.go jetstream's ``Fetch``: it waits up to ``max_wait`` seconds
        (default :data:`DEFAULT_FETCH_WAIT`, 30 s) for the batch to fill and
        returns early only when it is full or the server ends the request
        (404/408: expired, nothing more; 409: consumer deleted ...).  The list
        may be short or empty.  ``expires`` is an older name of ``max_wait``;
        ``heartbeat`` (seconds) asks for idle heartbeats, two missed ones end
        the fetch.  For what is there now, without waiting, see
        :meth:`fetch_no_wait`.

        Errors: ErrTimeout only when the server did not answer at all (after
        checking that the consumer exists: else ErrConsumerNotFound /
        ErrStreamNotFound); ErrConsumerDeleted etc. when the pull ended with
        that and brought nothing; ErrServerShutdown when the server stopped
        while the pull waited (its 409 comes before it closes the connection)
        and brought nothing; ErrTimeout "Connection lost" when the connection
        was lost and the client gave up reconnecting (closed).  ``group`` ...:
        see the class (priority groups).
        """
        max_wait = fetch_wait(max_wait, expires, no_wait)
        return await self._fetch(batch, max_wait, max_bytes=max_bytes, heartbeat=heartbeat, no_wait=no_wait,
                                 group=self._group(group, min_pending, min_ack_pending, priority))

    async def _fetch(self, batch: int, expires: float | None, *, max_bytes: int | None = None,
                     heartbeat: float | None = None, no_wait: bool | None = None,
                     group: PullGroup | None = None) -> list[JsMsg]:
        f = fetch_state(batch, expires, self.js.timeout, max_bytes=max_bytes, heartbeat=heartbeat, no_wait=no_wait,
                        group=group, deliver=False)
        client = self.js.client
        loop = asyncio.get_running_loop()
        inbox = client.new_inbox()
        sub = await client.subscribe(inbox)
        # a synchronous fetch: its outcome is f.result(), from the state the
        # Fetch keeps (f.done, its messages); deliver=False: its messages
        # make no Delivered events (those are for an asynchronous fetch's
        # callback, the Tcl face's)
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
                    if f.on_wait_failed(e.code, bool(hb_wait) and wait < left):
                        break
                    raise
                for ev in f.on_msg(msg):
                    if ev.__class__ is Pull:  # the pin went stale: the same pull again, unpinned
                        client.publish(self.next_subject, ev.body, reply=inbox)
                        deadline = loop.time() + f.timeout_ms / 1000
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

    async def fetch_no_wait(self, batch: int = 1, *, max_bytes: int | None = None, group: str | None = None,
                            min_pending: int | None = None, min_ack_pending: int | None = None,
                            priority: int | None = None) -> list[JsMsg]:
        """What is there now, up to ``batch`` messages, without waiting for
        more (nats.go's ``FetchNoWait``: a no_wait pull request; the server
        answers at once, 404 when there is nothing).  Bounded by the
        JetStream context's timeout when the server does not answer."""
        return await self._fetch(batch, None, max_bytes=max_bytes,
                                 group=self._group(group, min_pending, min_ack_pending, priority))

    async def fetch_bytes(self, max_bytes: int, max_wait: float | None = None, *,
                          expires: float | None = None, **group: Any) -> list[JsMsg]:
        """:meth:`fetch` bounded by ``max_bytes`` instead of a count (nats.go's
        ``FetchBytes``); waits like fetch (``max_wait``, default 30 s); the
        priority-group keywords of fetch."""
        check_int("max_bytes", max_bytes, 1)
        return await self.fetch(1_000_000, max_wait, expires=expires, max_bytes=max_bytes, **group)

    async def next(self, timeout: float = DEFAULT_FETCH_WAIT, *, group: str | None = None,
                   min_pending: int | None = None, min_ack_pending: int | None = None,
                   priority: int | None = None) -> JsMsg:
        """One message, waiting up to ``timeout`` seconds (default 30, as
        nats.go's ``Next``); ErrTimeout when none came."""
        check_timeout(timeout)
        msgs = await self.fetch(1, timeout, group=group, min_pending=min_pending, min_ack_pending=min_ack_pending,
                                priority=priority)
        if not msgs:
            raise make_error("ErrTimeout", f"No message from consumer {self.stream}/{self.name}")
        return msgs[0]

    def consume(self, cb: Callable[[JsMsg], Any], *, max_messages: int | None = None, max_bytes: int | None = None,
                threshold_messages: int | None = None, threshold_bytes: int | None = None, expires: float = 30.0,
                heartbeat: float | None = None, error_cb: ErrorHandler | None = None, batch: int | None = None,
                threshold: int | None = None, group: str | None = None, min_pending: int | None = None,
                min_ack_pending: int | None = None, priority: int | None = None) -> "ConsumeContext":
        """Continuous pull (JetStream client API v2 "consume", ADR-37).

        Keeps up to ``max_messages`` (default 500; or ``max_bytes``) requested
        and refills when fewer than ``threshold_messages`` (default half)
        remain outstanding.  Pull requests expire after ``expires`` seconds
        and carry idle heartbeats (``heartbeat``, default half of expires up to
        30 s); missed heartbeats go to ``error_cb`` as ErrNoHeartbeat and the
        pulls start over; ErrConsumerDeleted (and other terminal statuses)
        go there too and end it.  ``cb(msg)`` may be a coroutine function; its
        exceptions go to ``error_cb``.  (``batch``/``threshold`` are older
        names of max_messages/threshold_messages; ``group`` ...: see the class.)
        """
        if not callable(cb):
            raise make_error("ErrInvalidArg", f"Invalid callback {cb!r}")
        if error_cb is not None and not callable(error_cb):
            raise make_error("ErrInvalidArg", f"Invalid error callback {error_cb!r}")
        state = consume_state(max_messages if max_messages is not None else batch, max_bytes,
                                    threshold_messages if threshold_messages is not None else threshold,
                                    threshold_bytes, expires, heartbeat,
                                    self._group(group, min_pending, min_ack_pending, priority))
        ctx = ConsumeContext(self, cb, state, error_cb)
        ctx.start()
        return ctx

    def messages(self, *, max_messages: int | None = None, max_bytes: int | None = None,
                 threshold_messages: int | None = None, threshold_bytes: int | None = None, expires: float = 30.0,
                 heartbeat: float | None = None, batch: int | None = None, group: str | None = None,
                 min_pending: int | None = None, min_ack_pending: int | None = None,
                 priority: int | None = None) -> "MessagesContext":
        """``async for msg in consumer.messages(): ...`` — the consume
        algorithm as an iterator (messages are counted as taken when the
        iterator hands them out).  ``await it.stop()`` ends it."""
        state = consume_state(max_messages if max_messages is not None else batch, max_bytes,
                                    threshold_messages, threshold_bytes, expires, heartbeat,
                                    self._group(group, min_pending, min_ack_pending, priority))
        return MessagesContext(self, state)
