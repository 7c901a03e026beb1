"""Consumer: one pull consumer's info, fetch, next, consume (a thread) and messages (an iterator)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.connection import CLOSED
from tclnats_py.engine.validate import check_int, check_timeout
from tclnats_py.engine.js.events import Pull
from tclnats_py.engine.js.priority import PullGroup, consumer_unpin
from tclnats_py.jsface.pull import DEFAULT_FETCH_WAIT, consume_state, fetch_state, fetch_wait, pull_group
from tclnats_py.sync.jetstream.message import JsMsg
from tclnats_py.sync.jetstream.pull import ConsumeContext, MessagesContext

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.engine.js.pull import Fetch
    from tclnats_py.jsface.config import ConsumerConfig
    from tclnats_py.jsface.info import ConsumerInfo
    from tclnats_py.sync.jetstream.context import JetStream


class Consumer:
    """A pull consumer: ``fetch`` batches, ``next`` one message, ``consume``
    on a thread of its own, or iterate ``messages()``.  ``info`` is the last
    ConsumerInfo fetched.  Priority groups (ADR-42): ``group``,
    ``min_pending``, ``min_ack_pending``, ``priority`` as in the asyncio face."""

    def __init__(self, js: JetStream, stream: str, name: str, info: ConsumerInfo):
        self.js = js
        self.stream = stream
        self.name = name
        self.info = info
        self.pins: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"<Consumer {self.stream}/{self.name}>"

    def _group(self, group: str | None, min_pending: int | None, min_ack_pending: int | None,
               priority: int | None) -> PullGroup | None:
        return pull_group(group, min_pending, min_ack_pending, priority, self.pins)

    def unpin(self, group: str) -> bool:
        """Take the pin of ``group`` from the client that holds it (ADR-42); True."""
        return self.js._run(consumer_unpin(self.js.jsapi, self.stream, self.name, group))

    @property
    def config(self) -> ConsumerConfig:
        return self.info.config

    @property
    def next_subject(self) -> str:
        return self.js.jsapi.next_subject(self.stream, self.name)

    def refresh(self) -> ConsumerInfo:
        """Fetch the consumer's info again (``self.info``) and return it."""
        self.info = self.js.consumer_info(self.stream, self.name)
        return self.info

    def delete(self) -> bool:
        """Delete this consumer; True."""
        return self.js.delete_consumer(self.stream, self.name)

    def fetch(self, batch: int = 1, max_wait: float | None = None, *, expires: float | None = None,
              max_bytes: int | None = None, heartbeat: float | None = None, no_wait: bool | None = None,
              group: str | None = None, min_pending: int | None = None, min_ack_pending: int | None = None,
              priority: int | None = None) -> list[JsMsg]:
        """Up to ``batch`` messages (or ``max_bytes``) in one pull request:
        waits up to ``max_wait`` seconds (default 30) for the batch to fill;
        the list may be short or empty.  ErrTimeout only when the server did
        not answer at all (ErrConsumerNotFound / ErrStreamNotFound when the
        consumer is gone); ErrConsumerDeleted etc. when the pull ended with
        that and brought nothing; ErrServerShutdown when the server stopped
        while the pull waited, bringing nothing; ErrTimeout "Connection lost"
        when the connection was lost and not regained (closed)."""
        return self._fetch(batch, fetch_wait(max_wait, expires, no_wait), max_bytes=max_bytes,
                           heartbeat=heartbeat, no_wait=no_wait,
                           group=self._group(group, min_pending, min_ack_pending, priority))

    def fetch_no_wait(self, batch: int = 1, *, max_bytes: int | None = None, group: str | None = None,
                      min_pending: int | None = None, min_ack_pending: int | None = None,
                      priority: int | None = None) -> list[JsMsg]:
        """What is there now, up to ``batch`` messages, without waiting for more."""
        return self._fetch(batch, None, max_bytes=max_bytes,
                           group=self._group(group, min_pending, min_ack_pending, priority))

    def fetch_bytes(self, max_bytes: int, max_wait: float | None = None, *, expires: float | None = None,
                    **group: Any) -> list[JsMsg]:
        """:meth:`fetch` bounded by ``max_bytes`` instead of a count."""
        check_int("max_bytes", max_bytes, 1)
        return self.fetch(1_000_000, max_wait, expires=expires, max_bytes=max_bytes, **group)

    def next(self, timeout: float = DEFAULT_FETCH_WAIT, *, group: str | None = None,
             min_pending: int | None = None, min_ack_pending: int | None = None,
             priority: int | None = None) -> JsMsg:
        """One message, waiting up to ``timeout`` seconds (default 30); ErrTimeout when none came."""
        check_timeout(timeout)
        msgs = self.fetch(1, timeout, group=group, min_pending=min_pending, min_ack_pending=min_ack_pending,
                          priority=priority)
        if not msgs:
            raise make_error("ErrTimeout", f"No message from consumer {self.stream}/{self.name}")
        return msgs[0]

    def _fetch(self, batch: int, expires: float | None, *, max_bytes: int | None = None,
               heartbeat: float | None = None, no_wait: bool | None = None,
               group: PullGroup | None = None) -> list[JsMsg]:
        f = fetch_state(batch, expires, self.js.timeout, max_bytes=max_bytes, heartbeat=heartbeat,
                        no_wait=no_wait, group=group)
        client = self.js.client
        inbox = client.new_inbox()
        sub = client.subscribe(inbox)
        try:
            client.publish(self.next_subject, f.body, reply=inbox)
            self._pull(f, sub, inbox)
        finally:
            try:
                sub.unsubscribe()
            except NatsError as e:
                if e.code not in ("ErrConnectionClosed", "ErrBadSubscription"):
                    raise
        eng = client.engine
        closed = eng.status == CLOSED
        try:
            msgs = f.result(closed=closed and eng.last_error is None, lost=closed and eng.last_error is not None,
                            raise_status=True)
        except NatsError as e:
            if e.code == "ErrTimeout" and f.probe and not closed:
                self.refresh()  # raises ErrConsumerNotFound, ErrStreamNotFound, ...
            raise
        return [JsMsg(self.js, m) for m in msgs]

    def _pull(self, f: Fetch, sub: Any, inbox: str) -> None:
        """Read the fetch's messages into its state until it is done (its
        outcome is then ``f.result()``), the time is up or heartbeats stop."""
        deadline = time.monotonic() + f.timeout_ms / 1000
        hb_wait = f.heartbeat_timeout_ms / 1000 if f.heartbeat_timeout_ms else None
        while not f.done:
            left = deadline - time.monotonic()
            if left <= 0:
                f.on_timeout()
                return
            wait = min(left, hb_wait) if hb_wait else left
            try:
                msg = sub.next_msg(wait)
            except NatsError as e:
                if f.on_wait_failed(e.code, bool(hb_wait) and wait < left):
                    return
                raise
            for ev in f.on_msg(msg):
                if ev.__class__ is Pull:  # the pin went stale: the same pull again, unpinned
                    self.js.client.publish(self.next_subject, ev.body, reply=inbox)
                    deadline = time.monotonic() + f.timeout_ms / 1000

    def consume(self, cb: Callable[[JsMsg], Any], *, max_messages: int | None = None, max_bytes: int | None = None,
                threshold_messages: int | None = None, threshold_bytes: int | None = None, expires: float = 30.0,
                heartbeat: float | None = None, error_cb: Callable[[Exception], Any] | None = None,
                group: str | None = None, min_pending: int | None = None, min_ack_pending: int | None = None,
                priority: int | None = None) -> ConsumeContext:
        """Continuous pull (ADR-37) on a thread of its own, calling ``cb(msg)``
        for each message until ``ctx.stop()``.  Keeps up to ``max_messages``
        (default 500; or ``max_bytes``) requested, refilling below
        ``threshold_messages``; pulls expire after ``expires`` seconds and
        carry idle heartbeats (``heartbeat``).  Missed heartbeats
        (ErrNoHeartbeat), terminal statuses (ErrConsumerDeleted: the end)
        and ``cb``'s exceptions go to ``error_cb``, else to the
        "tclnats_py" logger."""
        if not callable(cb):
            raise make_error("ErrInvalidArg", f"Invalid callback {cb!r}")
        if error_cb is not None and not callable(error_cb):
            raise make_error("ErrInvalidArg", f"Invalid error callback {error_cb!r}")
        state = consume_state(max_messages, max_bytes, threshold_messages, threshold_bytes, expires, heartbeat,
                              self._group(group, min_pending, min_ack_pending, priority))
        ctx = ConsumeContext(self, state, cb, error_cb)
        ctx.start()
        return ctx

    def messages(self, *, max_messages: int | None = None, max_bytes: int | None = None,
                 threshold_messages: int | None = None, threshold_bytes: int | None = None, expires: float = 30.0,
                 heartbeat: float | None = None, group: str | None = None, min_pending: int | None = None,
                 min_ack_pending: int | None = None, priority: int | None = None) -> MessagesContext:
        """``for msg in consumer.messages(): ...`` — the consume algorithm as
        an iterator read by the calling thread; ``it.stop()`` ends it,
        ``it.next(timeout)`` takes one message or raises ErrTimeout."""
        state = consume_state(max_messages, max_bytes, threshold_messages, threshold_bytes, expires, heartbeat,
                              self._group(group, min_pending, min_ack_pending, priority))
        return MessagesContext(self, state)
