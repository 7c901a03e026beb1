"""OrderedConsumer (ADR-17) on the blocking face: in order, repairing itself."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.connection import CLOSED
from tclnats_py.engine.js.api import api_call
from tclnats_py.engine.js.events import Delivered, FlowReply, Reset, Retry, Stop, event_table
from tclnats_py.jsface.info import ConsumerInfo
from tclnats_py.sync.jetstream.message import JsMsg
from tclnats_py.sync.jetstream.pull import report, unsubscribe_quietly

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.engine.js import ordered as _ordered
    from tclnats_py.sync.jetstream.context import JetStream


class OrderedConsumer:
    """An ordered consumer (ADR-17) over the engine's state machine.

    ``for msg in oc`` (JsMsg, no acks needed), ``oc.next(timeout)``, or
    ``oc.consume(cb)`` on a thread of its own.  Resets are automatic;
    ``resets`` counts them and ``last_error`` says why the last one happened."""

    # what a handler returns for a Reset: the consumer must be recreated
    _RECREATE = object()

    def __init__(self, js: JetStream, state: _ordered.OrderedConsumer):
        self.js = js
        self.state = state
        self._dispatch = event_table(self, state.MSG_EVENTS, "_", inline=(Delivered,))
        self._dispatch_failed = event_table(self, state.CREATE_FAILED_EVENTS, "_")
        self.info: ConsumerInfo | None = None
        self._sub: Any = None
        self._started = False
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"<OrderedConsumer {self.state.stream} name={self.state.name!r}>"

    @property
    def name(self) -> str:
        return self.state.name

    @property
    def resets(self) -> int:
        return self.state.resets

    @property
    def last_error(self) -> NatsError | None:
        return self.state.last_error

    @property
    def stream_seq(self) -> int:
        return self.state.stream_seq

    def start(self) -> OrderedConsumer:
        """Create the consumer now (errors such as ErrStreamNotFound come here)."""
        if not self._started:
            self._create()
            self._started = True
        return self

    def _create(self) -> None:
        client = self.js.client
        inbox = client.new_inbox()
        sub = client.subscribe(inbox)
        req = self.state.create_request(self.js.jsapi, inbox, self.js._server_version)
        try:
            info = self.js._run(api_call(req))
        except BaseException:
            unsubscribe_quietly(sub)
            raise
        self._sub = sub
        self.state.on_created(info)
        self.info = ConsumerInfo(info)

    def _drop_sub(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            unsubscribe_quietly(sub)

    def _recreate(self) -> None:
        self._drop_sub()
        while self.state.stopped is None:
            try:
                self._create()
                return
            except NatsError as e:
                closed = self.js.client.engine.status == CLOSED
                err = make_error("ErrConnectionClosed", "Connection closed") if closed else e
                on = self._dispatch_failed
                for ev in self.state.on_create_failed(err):
                    wait = on[ev.__class__](ev)
                    if wait is not None:
                        time.sleep(wait)

    # -- the engine's events (see engine/js/ordered.py OrderedConsumer)
    def _on_flow_reply(self, ev: FlowReply) -> None:
        self.js.client.publish(ev.subject, b"")

    def _on_reset(self, ev: Reset) -> object:
        return self._RECREATE

    def _on_retry(self, ev: Retry) -> float:
        """The re-creation is tried again after this many seconds."""
        return ev.ms / 1000

    def _on_stop(self, ev: Stop) -> None:
        """No wait: the state has stopped, the re-creation loop ends."""
        return None

    def __iter__(self) -> Iterator[JsMsg]:
        return self

    def _failure(self, err: NatsError | None) -> bool:
        """Whether ``err``, which ended the consumer, is a failure (not stop(),
        not the client closed on purpose)."""
        if err is None or err.code == "ErrConsumerStopped":
            return False
        eng = self.js.client.engine
        return not (err.code == "ErrConnectionClosed" and eng.status == CLOSED and eng.last_error is None)

    def _ended(self) -> None:
        """The consumer has stopped: the iteration ends, or raises the error
        that ended it (ErrConsumerDeleted, ErrStreamNotFound ...)."""
        err = self.state.stopped
        if self._failure(err):
            raise err  # type: ignore[misc]
        raise StopIteration

    def _next(self, deadline: float | None) -> JsMsg | None:
        """The next message, or None when ``deadline`` (monotonic) has passed."""
        if not self._started:
            self.start()
        while True:
            if self.state.stopped is not None:
                self._ended()
            if self._sub is None:
                self._recreate()
                continue
            wait = self.state.heartbeat_timeout_ms / 1000
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                wait = min(wait, left)
            try:
                msg = self._sub.next_msg(wait)
            except NatsError as e:
                if e.code not in ("ErrTimeout", "ErrBadSubscription"):
                    raise
                if self.js.client.engine.status == CLOSED:
                    self.state.stop(make_error("ErrConnectionClosed", "Connection closed"))
                    self._ended()
                if e.code == "ErrTimeout" and deadline is not None and time.monotonic() >= deadline:
                    return None
                events = self.state.on_heartbeat_missed()
            else:
                events = self.state.on_msg(msg)
            on = self._dispatch
            for ev in events:
                if ev.__class__ is Delivered:
                    return JsMsg(self.js, ev.msg, ev.meta)
                if on[ev.__class__](ev) is self._RECREATE:
                    self._recreate()
                    break

    def __next__(self) -> JsMsg:
        m = self._next(None)
        assert m is not None
        return m

    def next(self, timeout: float | None = None) -> JsMsg:
        """The next message; ErrTimeout after ``timeout`` seconds (None: no limit)."""
        m = self._next(None if timeout is None else time.monotonic() + timeout)
        if m is None:
            raise make_error("ErrTimeout", f"No message from the ordered consumer on {self.state.stream}")
        return m

    def consume(self, cb: Callable[[JsMsg], Any],
                error_cb: Callable[[Any], Any] | None = None) -> OrderedConsumer:
        """Deliver every message to ``cb`` on a thread of its own until
        ``stop()``.  ``cb``'s exceptions and the error that ends the consumer
        go to ``error_cb``, else to the "tclnats_py" logger at ERROR."""
        if not callable(cb):
            raise make_error("ErrInvalidArg", f"Invalid callback {cb!r}")
        if error_cb is not None and not callable(error_cb):
            raise make_error("ErrInvalidArg", f"Invalid error callback {error_cb!r}")
        what = f"the ordered consumer on {self.state.stream}"

        def run() -> None:
            try:
                for m in self:
                    try:
                        cb(m)
                    except Exception as e:  # the user's callback failed; go on
                        report(e, error_cb, what)
            except NatsError as e:
                report(e, error_cb, what)
        self._thread = threading.Thread(target=run, name="tclnats-ordered", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float | None = None) -> None:
        """Unsubscribe (the server drops the consumer after its inactive
        threshold); a ``consume`` thread ends, waited for up to ``timeout`` seconds."""
        self.state.stop()
        self._drop_sub()
        t = self._thread
        if t is not None and t is not threading.current_thread() and t.is_alive():
            t.join(timeout)

    def __enter__(self) -> OrderedConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
