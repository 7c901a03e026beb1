"""Continuous pull on the blocking face: ConsumeContext (a thread calling
back) and MessagesContext (an iterator read by the caller's thread)."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator

from tclnats_py.errors import NatsError
from tclnats_py.engine.js.events import Delivered, Warn
from tclnats_py.sync.jetstream.message import JsMsg
from tclnats_py.jsface.pull import PullLoop

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.engine.js.events import Stop
    from tclnats_py.engine.js.pull import Consume
    from tclnats_py.sync.jetstream.consumer import Consumer

_log = logging.getLogger("tclnats_py")


def report(err: BaseException, error_cb: Callable[[Any], Any] | None, what: str) -> None:
    """Hand an error of a background thread (``what`` it was doing) to
    ``error_cb``, else to the "tclnats_py" logger at ERROR; an ``error_cb``
    that fails is logged with its traceback."""
    if error_cb is None:
        _log.error("%s: %s", what, err, exc_info=err if not isinstance(err, NatsError) else None)
        return
    try:
        error_cb(err)
    except Exception:  # the user's error_cb failed: its traceback goes to the log
        _log.exception("the error_cb of %s failed", what)


def unsubscribe_quietly(sub: Any) -> None:
    """End ``sub``; a subscription or connection already gone is no error here."""
    try:
        sub.unsubscribe()
    except NatsError as e:
        if e.code not in ("ErrConnectionClosed", "ErrBadSubscription"):
            raise


class _PullLoop(PullLoop):
    """The blocking face's part of a continuous pull: the inbox read by the caller's thread."""

    def _begin(self) -> list:
        """Subscribe to a new inbox and send the first pulls; the other events."""
        self._inbox = self.client.new_inbox()
        self._sub = self.client.subscribe(self._inbox)
        self._reconnected()
        return self._pulls(self.state.start())

    def _read(self) -> list | None:
        """Wait for the next message (at most the heartbeat timeout): the
        state machine's events for it, or for the silence; None once the
        inbox subscription has ended."""
        try:
            msg = self._sub.next_msg(self.state.heartbeat_timeout_ms / 1000)
        except NatsError as e:
            if e.code == "ErrBadSubscription":
                return None
            if e.code != "ErrTimeout":
                raise
            return self._on_silence()
        if msg.status and self._reconnected():
            self._pulls(self.state.on_reconnect())
        return self._pulls(self.state.on_msg(msg))

    def _end_sub(self) -> None:
        self.state.stop()
        if self._sub is not None:
            unsubscribe_quietly(self._sub)


class ConsumeContext(_PullLoop):
    """A running :meth:`Consumer.consume`: a thread pulls and calls the
    callback; ``ctx.stop()`` ends it (from any thread, the callback too)."""

    def __init__(self, consumer: Consumer, state: Consume, cb: Callable[[JsMsg], Any],
                 error_cb: Callable[[Any], Any] | None):
        super().__init__(consumer, state)
        self.cb = cb
        self.error_cb = error_cb
        self.closed = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=f"tclnats-consume-{consumer.stream}-{consumer.name}")

    @property
    def delivered(self) -> int:
        return self.state.delivered

    @property
    def outstanding(self) -> int:
        return self.state.pending_msgs

    def start(self) -> None:
        """Start the thread (consume() calls it)."""
        self._thread.start()

    def _report(self, err: BaseException) -> None:
        report(err, self.error_cb, f"consume of {self.consumer.stream}/{self.consumer.name}")

    def _run(self) -> None:
        try:
            self._handle(self._begin())
            while self.state.stopped is None:
                events = self._read()
                if events is None:
                    break
                self._handle(events)
        except NatsError as e:
            self._report(e)
        finally:
            self._end_sub()
            self.closed.set()

    def _handle(self, events: list) -> None:
        on = self._dispatch
        for ev in events:
            if ev.__class__ is not Delivered:
                on[ev.__class__](ev)
                continue
            if self.state.stopped is not None:
                return
            try:
                self.cb(JsMsg(self.consumer.js, ev.msg))
            except Exception as e:  # the user's callback failed: report it, keep consuming
                self._report(e)

    # -- the engine's events (see engine/js/pull.py Consume)
    def _on_warn(self, ev: Warn) -> None:
        self._report(ev.error)

    def _on_stop(self, ev: Stop) -> None:
        self._report(ev.error)
        self.state.stop()

    def stop(self, timeout: float | None = None) -> None:
        """Stop pulling and delivering and wait up to ``timeout`` seconds (None:
        no limit) for the thread to end (what is in flight is dropped; unacked
        messages are redelivered by the server after their ack wait)."""
        self.state.stop()
        if self._sub is not None:
            unsubscribe_quietly(self._sub)
        if self._thread is not threading.current_thread() and self._thread.is_alive():
            self._thread.join(timeout)


class MessagesContext(_PullLoop):
    """An iterator over a consumer's messages (the consume algorithm), read
    by the calling thread; ``stop()`` ends it."""

    def __iter__(self) -> Iterator[JsMsg]:
        return self

    def __next__(self) -> JsMsg:
        if self._sub is None:
            self.warnings += self._begin()
        while True:
            stopped = self.state.stopped
            if stopped is not None:
                if stopped.code == "ErrConsumerStopped":
                    raise StopIteration
                raise stopped
            events = self._read()
            if events is None:
                raise StopIteration
            on = self._dispatch
            for ev in events:
                if ev.__class__ is Delivered:
                    return JsMsg(self.consumer.js, ev.msg)
                on[ev.__class__](ev)

    # -- the engine's events (see engine/js/pull.py Consume)
    def _on_warn(self, ev: Warn) -> None:
        self.warnings.append(ev)

    def _on_stop(self, ev: Stop) -> None:
        raise ev.error

    def stop(self) -> None:
        """Stop pulling; the iteration ends (unacked messages come back after their ack wait)."""
        self._end_sub()

    def __enter__(self) -> MessagesContext:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
