"""OrderedConsumer (ADR-17): in order, repairing itself."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Awaitable, Callable

import asyncio
import inspect

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.js.api import api_call
from tclnats_py.engine.js.events import Delivered, FlowReply, Reset, Retry, Stop, UnknownEvent, event_table
from tclnats_py.jsface.info import ConsumerInfo
from tclnats_py.aio.jetstream.message import JsMsg

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.aio.client import ErrorHandler
    from tclnats_py.aio.client import Subscription
    from tclnats_py.aio.jetstream.context import JetStream
    from tclnats_py.engine.connection import Msg
    from tclnats_py.engine.js import ordered as _ordered


class OrderedConsumer:
    """An ordered consumer (ADR-17) over the shared state machine.

    ``async for msg in oc`` (JsMsg, no acks needed), ``await oc.next(t)``,
    or ``oc.consume(cb)``.  Resets are automatic; ``resets`` counts them and
    ``last_error`` says why the last one happened (nats-tcl's ``last_error``).
    """

    # what a handler returns for a Reset: the consumer must be recreated
    _RECREATE = object()

    def __init__(self, js: JetStream, state: _ordered.OrderedConsumer):
        self.js = js
        self.state = state
        # the engine's events: of each message (Delivered is carried out in
        # __anext__, the others here), and of a failed re-creation (_on_retry
        # returns the wait)
        self._dispatch = event_table(self, state.MSG_EVENTS, "_", inline=(Delivered,))
        self._dispatch_failed = event_table(self, state.CREATE_FAILED_EVENTS, "_")
        self.info: ConsumerInfo | None = None
        self._sub: Subscription | None = None
        self._started = False
        self._task: asyncio.Task | None = None
        self._report_stop = True  # an error ending the iteration is reported (see _stopped)

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
                on = self._dispatch_failed
                for ev in self.state.on_create_failed(err):
                    wait = on[ev.__class__](ev)
                    if wait is not None:
                        await asyncio.sleep(wait)

    # -- the engine's events (see _ordered.OrderedConsumer)
    def _on_flow_reply(self, ev: FlowReply) -> None:
        self.js.client.publish(ev.subject, b"")

    def _on_reset(self, ev: Reset) -> object:
        return self._RECREATE

    def _on_retry(self, ev: Retry) -> float:
        """The re-creation is tried again after this many seconds (its error
        is the consumer's last_error)."""
        return ev.ms / 1000

    def _on_stop(self, ev: Stop) -> None:
        """No wait: the state has stopped with ``ev.error``, so the re-creation
        loop ends and the iteration reports it (_stopped)."""
        return None

    def __aiter__(self) -> "OrderedConsumer":
        return self

    def _failure(self, err) -> bool:
        """Whether ``err``, which ended the consumer, is a failure to report
        (not stop(), not the client closed on purpose)."""
        if err is None or err.code == "ErrConsumerStopped":
            return False
        c = self.js.client
        return not (err.code == "ErrConnectionClosed" and c.is_closed and c.last_error is None)

    def _stopped(self):
        """The iteration ends: an error other than stop() is reported once
        (the client's error_cb, else the logger), as an iterator cannot both
        end and raise."""
        err = self.state.stopped
        if self._report_stop and self._failure(err):
            self._report_stop = False
            self.js.client._report(err)
        raise StopAsyncIteration

    async def __anext__(self) -> JsMsg:
        if not self._started:
            await self.start()
        client = self.js.client
        while True:
            if self.state.stopped is not None:
                self._stopped()
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
                    self._stopped()
                events = self.state.on_heartbeat_missed()
            else:
                events = self.state.on_msg(msg)
            on = self._dispatch
            for ev in events:
                if ev.__class__ is Delivered:
                    return JsMsg(self.js, ev.msg, ev.meta)
                if on[ev.__class__](ev) is self._RECREATE:
                    await self._recreate()
                    break

    async def next(self, timeout: float | None = None) -> JsMsg:
        """The next message; ErrTimeout after ``timeout`` seconds."""
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except asyncio.TimeoutError:
            raise make_error("ErrTimeout", f"No message from the ordered consumer on {self.state.stream}") from None

    def consume(self, cb: Callable[[JsMsg], Any], error_cb: ErrorHandler | None = None) -> "OrderedConsumer":
        """Deliver every message to ``cb`` (plain or coroutine function) in a
        task until ``stop()``.  ``cb``'s exceptions, and the error that ends
        the consumer (ErrConsumerDeleted, ErrConnectionClosed ...), go to
        ``error_cb`` (plain or coroutine function, awaited), else to the
        client's error_cb, else to the "tclnats_py" logger at ERROR."""
        if not callable(cb):
            raise make_error("ErrInvalidArg", f"Invalid callback {cb!r}")
        if error_cb is not None and not callable(error_cb):
            raise make_error("ErrInvalidArg", f"Invalid error callback {error_cb!r}")
        client = self.js.client
        what = f"the callback of the ordered consumer on {self.state.stream}"

        async def call_error_cb(err):
            if error_cb is None:
                client._report(err)
                return
            try:
                r = error_cb(err)
                if inspect.isawaitable(r):
                    await r
            except Exception as e:  # the error_cb failed: logged with its traceback
                client._hook_failed(error_cb, e, "error_cb")

        async def run():
            self._report_stop = False  # run() reports the end itself
            try:
                async for m in self:
                    try:
                        r = cb(m)
                        if inspect.isawaitable(r):
                            await r
                    except Exception as e:  # the user's callback failed; go on
                        if error_cb is None:
                            client._hook_failed(cb, e, what)
                        else:
                            await call_error_cb(e)
                if self._failure(self.state.stopped):
                    await call_error_cb(self.state.stopped)
            except NatsError as e:
                await call_error_cb(e)
        self._task = asyncio.get_running_loop().create_task(run())
        return self

    # ------------------------------------------------------------ driven by a face built on this one
    # (tclnats_py.natspy's ordered push subscription: it creates the first
    # consumer, subscribes to its deliver subject and reads that subscription)
    def adopt(self, info: dict, sub: Subscription) -> None:
        """Go on from a consumer the caller created (``info``: its CREATE or
        INFO reply, ``name`` and ``delivered`` read), delivering to ``sub``,
        a subscription the caller reads: it hands each message to
        :meth:`sort`, calls :meth:`heartbeat_missed` after
        :attr:`heartbeat_timeout` seconds of silence, and awaits
        :meth:`reset` when either says so."""
        self._sub = sub
        self.state.on_created(info)
        self._started = True

    @property
    def subscription(self) -> Subscription | None:
        """The subscription to the current deliver subject (another one after each reset)."""
        return self._sub

    @property
    def heartbeat_timeout(self) -> float:
        """Seconds of silence after which the consumer is taken for lost (three idle heartbeats)."""
        return self.state.heartbeat_timeout_ms / 1000

    def sort(self, msg: Msg) -> tuple[JsMsg | None, bool]:
        """One message of the deliver subject (see :meth:`adopt`): the JsMsg
        for the user (None for flow control, heartbeats and messages of a
        consumer being replaced), and whether the consumer must be reset
        (a gap in the sequence: await :meth:`reset`)."""
        out = None
        reset = False
        for ev in self.state.on_msg(msg):
            cls = ev.__class__
            if cls is Delivered:
                out = JsMsg(self.js, ev.msg, ev.meta)
            elif cls is FlowReply:
                self.js.client.publish(ev.subject, b"")
            elif cls is Reset:
                reset = True
            else:
                raise UnknownEvent(ev)
        return out, reset

    def heartbeat_missed(self) -> bool:
        """Nothing came for :attr:`heartbeat_timeout`: whether the consumer must be reset."""
        reset = False
        for ev in self.state.on_heartbeat_missed():
            if ev.__class__ is not Reset:
                raise UnknownEvent(ev)
            reset = True
        return reset

    async def reset(self, subscribe: Callable[[str], Awaitable[Subscription]],
                    report: Callable[[NatsError], Awaitable[Any]]) -> None:
        """Recreate the consumer from the next stream sequence on a new
        deliver subject: ``subscribe(subject)`` makes the caller's
        subscription to it (the previous one is unsubscribed), each failure
        is awaited with ``report(err)`` and the attempt repeated as the state
        machine says, until it succeeds, stops (ErrStreamNotFound ...) or the
        client closes."""
        client = self.js.client
        while self.state.stopped is None and not client.is_closed:
            try:
                deliver = client.new_inbox()
                old, self._sub = self._sub, await subscribe(deliver)
                if old is not None and old.is_active:
                    await old.unsubscribe()
                req = self.state.create_request(self.js.jsapi, deliver, self.js._server_version)
                self.state.on_created(await self.js._run(api_call(req)))
                return
            except NatsError as e:
                for ev in self.state.on_create_failed(e):
                    if ev.__class__ not in (Retry, Stop):
                        raise UnknownEvent(ev) from e
                    await report(ev.error)
                    if ev.__class__ is Retry:
                        await asyncio.sleep(ev.ms / 1000)

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
