"""Continuous pull: ConsumeContext (callbacks) and MessagesContext (iterator)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import asyncio
import inspect

from tclnats_py.errors import NatsError
from tclnats_py.engine.js.events import Delivered, Warn
from tclnats_py.aio.jetstream.message import JsMsg
from tclnats_py.jsface.pull import PullLoop

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.aio.jetstream.consumer import Consumer
    from tclnats_py.engine.js.events import Stop
    from tclnats_py.engine.js.pull import Consume


class ConsumeContext(PullLoop):
    """A running :meth:`Consumer.consume`; ``await ctx.stop()`` ends it."""

    def __init__(self, consumer: Consumer, cb, state: Consume, error_cb):
        super().__init__(consumer, state)
        self.cb = cb
        self.error_cb = error_cb
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task | None = None
        self.closed = asyncio.get_running_loop().create_future()

    @property
    def delivered(self) -> int:
        return self.state.delivered

    @property
    def outstanding(self) -> int:
        return self.state.pending_msgs

    def start(self) -> None:
        """Start pulling (consume() calls it)."""
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
        """A consume warning or its end (ErrNoHeartbeat, ErrConsumerDeleted ...)
        for ``error_cb`` (a coroutine one is awaited in a task); without
        one, the client's error_cb; without that, the "tclnats_py" logger
        (ERROR).  A failing error_cb is logged with its traceback."""
        self.client._report(err, error_cb=self.error_cb)

    def _report_all(self, events):
        on = self._dispatch
        for ev in events:
            on[ev.__class__](ev)

    # -- the engine's events (see engine/js/pull.py Consume)
    def _on_warn(self, ev: Warn) -> None:
        self._report(ev.error)

    def _on_stop(self, ev: Stop) -> None:
        self._report(ev.error)
        self.client._spawn(self.stop())

    async def _on_msg(self, msg):
        if self.state.stopped is not None:
            return
        self._arm()
        if msg.status and self._reconnected():
            self._pulls(self.state.on_reconnect())
        on = self._dispatch
        for ev in self._pulls(self.state.on_msg(msg)):
            if ev.__class__ is not Delivered:
                on[ev.__class__](ev)
                continue
            try:
                r = self.cb(JsMsg(self.consumer.js, ev.msg))
                if inspect.isawaitable(r):
                    await r
            except Exception as e:  # the user's callback failed: report it, keep consuming
                self.client._hook_failed(self.cb, e, f"the consume callback of {self.consumer.stream}/"
                                         f"{self.consumer.name}", error_cb=self.error_cb)

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


class MessagesContext(PullLoop):
    """An async iterator over a consumer's messages (the consume algorithm)."""

    def __aiter__(self) -> "MessagesContext":
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
            on = self._dispatch
            for ev in self._pulls(self.state.on_msg(msg)):
                if ev.__class__ is Delivered:
                    return JsMsg(self.consumer.js, ev.msg)
                on[ev.__class__](ev)

    # -- the engine's events (see engine/js/pull.py Consume)
    def _on_warn(self, ev: Warn) -> None:
        self.warnings.append(ev)

    def _on_stop(self, ev: Stop) -> None:
        raise ev.error

    async def stop(self) -> None:
        """Stop pulling; the iteration ends (what is in flight is dropped, unacked messages come back
        after their ack wait)."""
        self.state.stop()
        if self._sub is not None and self._sub.is_active:
            try:
                await self._sub.unsubscribe()
            except NatsError:
                pass
