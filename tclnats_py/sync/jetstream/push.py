"""Push consumers on the blocking face: the server sends to a deliver
subject; a thread of the subscription reads it (flow control answered,
idle heartbeats watched) and calls the callback or queues the messages.

    sub = js.push_subscribe("ORDERS", durable_name="AUDIT", deliver_group="auditors",
                            flow_control=True, idle_heartbeat=5)
    for msg in sub: msg.ack()                     # or cb=..., or sub.next_msg(timeout)
    sub = js.push_subscribe("ORDERS", consumer="AUDIT")   # bind to an existing push consumer
    sub.unsubscribe()                             # (sub.delete() removes the consumer too)

A missed heartbeat is ErrNoHeartbeat, a deleted consumer ErrConsumerDeleted
(the end); both, and the callback's exceptions, go to ``error_cb``, else to
the "tclnats_py" logger.
"""

from __future__ import annotations

import queue
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator

from tclnats_py.errors import NatsError, make_error
from tclnats_py.jsface.push import PushBase
from tclnats_py.sync.jetstream.message import JsMsg
from tclnats_py.sync.jetstream.pull import report, unsubscribe_quietly

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.engine.js.events import Stop, Warn
    from tclnats_py.jsface.info import ConsumerInfo
    from tclnats_py.sync.jetstream.context import JetStream

__all__ = ["PushSubscription"]


class PushSubscription(PushBase):
    """A subscription to a push consumer's deliver subject: ``for msg in
    sub`` / ``sub.next_msg(timeout)`` (JsMsg), or a callback given to
    :meth:`JetStream.push_subscribe`, called on the subscription's thread."""

    msg_class = JsMsg

    def __init__(self, js: JetStream, info: ConsumerInfo, cb: Callable[[JsMsg], Any] | None,
                 error_cb: Callable[[Exception], Any] | None):
        super().__init__(js, info, cb, error_cb)
        self._sub: Any = None
        self._queue: queue.Queue[JsMsg | None] | None = None if cb is not None else queue.Queue()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"tclnats-push-{self.stream}-{self.name}")

    def _start(self) -> None:
        self._sub = self.js.client.subscribe(self.deliver_subject, queue=self.deliver_group)
        self._thread.start()

    def _report(self, err: BaseException) -> None:
        report(err, self._error_cb, f"push consumer {self.stream}/{self.name}")

    def _run(self) -> None:
        sub = self._sub
        ms = self.state.heartbeat_timeout_ms
        try:
            while self.stopped is None:
                try:
                    msg = sub.next_msg(ms / 1000 if ms else None)
                except NatsError as e:
                    if e.code == "ErrBadSubscription":  # unsubscribed, or the connection closed
                        return
                    if e.code != "ErrTimeout":
                        raise
                    self._events(self.state.on_heartbeat_missed())
                    continue
                for m in self._events(self.state.on_msg(msg)):
                    self._deliver(m)
        except NatsError as e:
            self._report(e)
        finally:
            if self._queue is not None:
                self._queue.put(None)

    def _deliver(self, m: JsMsg) -> None:
        if self._queue is not None:
            self._queue.put(m)
            return
        assert self._cb is not None  # no queue: a callback subscription
        try:
            self._cb(m)
        except Exception as e:  # the user's callback failed: report it, keep consuming
            self._report(e)

    # -- the engine's events (see engine/js/push.py)
    def _on_warn(self, ev: Warn | Stop) -> None:
        self._report(ev.error)

    def _on_stop(self, ev: Stop) -> None:
        """The end (ErrConsumerDeleted ...): reported, and the reading stops."""
        self.stopped = ev.error
        self._on_warn(ev)
        unsubscribe_quietly(self._sub)

    # ------------------------------------------------------------ API
    def next_msg(self, timeout: float | None = 30.0) -> JsMsg:
        """The next message; ErrTimeout after ``timeout`` seconds (None: wait
        forever); ErrConsumerDeleted (or the error that ended it) after the end."""
        q = self._queue
        if q is None:
            raise make_error("ErrInvalidArg", "next_msg on a push subscription with a callback")
        try:
            m = q.get(timeout=timeout)
        except queue.Empty:
            raise make_error("ErrTimeout", f"No message from push consumer {self.stream}/{self.name} "
                                           f"within {timeout} s") from None
        if m is None:
            q.put(None)  # the end stays visible to the next call
            raise self.stopped or make_error("ErrConsumerStopped", "Push subscription ended")
        return m

    def __iter__(self) -> Iterator[JsMsg]:
        if self._queue is None:
            raise make_error("ErrInvalidArg", "iterating a push subscription with a callback")
        return self

    def __next__(self) -> JsMsg:
        try:
            return self.next_msg(None)
        except NatsError as e:
            if e is self.stopped or e.code == "ErrConsumerStopped":
                raise StopIteration from None
            raise

    def consumer_info(self) -> ConsumerInfo:
        """The consumer's info, fetched now."""
        self.info = self.js.consumer_info(self.stream, self.name)
        return self.info

    def unsubscribe(self, timeout: float | None = 5.0) -> None:
        """Stop receiving (waiting up to ``timeout`` seconds for the thread to
        end); the consumer stays on the server (a durable one keeps its
        place; an ephemeral one goes after its inactive threshold)."""
        if self.stopped is None:
            self.stopped = make_error("ErrConsumerStopped", "Push subscription ended")
        if self._sub is not None:
            unsubscribe_quietly(self._sub)
        if self._thread is not threading.current_thread() and self._thread.is_alive():
            self._thread.join(timeout)

    def delete(self) -> bool:
        """Unsubscribe and delete the consumer."""
        self.unsubscribe()
        return self.js.delete_consumer(self.stream, self.name)

    def __enter__(self) -> PushSubscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.unsubscribe()
