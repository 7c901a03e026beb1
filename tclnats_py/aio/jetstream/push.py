"""Push consumers: the server sends to a deliver subject, we subscribe to it.

    sub = await js.push_subscribe("ORDERS", durable_name="AUDIT", deliver_subject="audit.orders",
                                  deliver_group="auditors", flow_control=True, idle_heartbeat=5)
    async for msg in sub: await msg.ack()          # or cb=..., or await sub.next_msg(timeout)
    sub = await js.push_subscribe("ORDERS", consumer="AUDIT")   # bind to an existing push consumer
    await sub.unsubscribe()                        # (await sub.delete() removes the consumer too)

Flow control requests are answered and idle heartbeats watched for the
caller (see tclnats_py.engine.js.push); a missed heartbeat is ErrNoHeartbeat
and a deleted consumer ErrConsumerDeleted, both to ``error_cb`` (plain or
coroutine), else the client's error_cb, else the "tclnats_py" logger.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any, Callable

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.js.events import Delivered, event_table
from tclnats_py.engine.js.push import PushState
from tclnats_py.aio.jetstream.message import JsMsg

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.aio.client import Subscription
    from tclnats_py.engine.connection import Msg
    from tclnats_py.aio.jetstream.context import JetStream
    from tclnats_py.jsface.info import ConsumerInfo
    from tclnats_py.engine.js.events import FlowReply, Stop, Warn

__all__ = ["PushSubscription"]


class PushSubscription:
    """A subscription to a push consumer's deliver subject: ``async for msg
    in sub`` / ``await sub.next_msg(timeout)`` (JsMsg), or a callback given
    to :meth:`JetStream.push_subscribe`."""

    def __init__(self, js: JetStream, info: ConsumerInfo, cb: Callable[[JsMsg], Any] | None,
                 error_cb: Callable[[Exception], Any] | None):
        cfg = info["config"]
        self.js = js
        self.info = info
        self.stream: str = info["stream_name"]
        self.name: str = info["name"]
        self.deliver_subject: str = cfg["deliver_subject"]
        self.deliver_group: str | None = cfg.get("deliver_group") or None
        hb = cfg.get("idle_heartbeat") or 0
        self.state = PushState(self.stream, self.name, int(hb / 1_000_000) if hb else None)
        self._dispatch = event_table(self, PushState.EVENTS, "_", inline=(Delivered,))  # see _events
        self._cb = cb
        self._error_cb = error_cb
        self._sub: Subscription | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._queue: asyncio.Queue | None = None if cb is not None else asyncio.Queue()
        self.stopped: NatsError | None = None

    def __repr__(self) -> str:
        return f"<PushSubscription {self.stream}/{self.name} on {self.deliver_subject}>"

    async def _start(self) -> None:
        client = self.js.client
        self._sub = await client.subscribe(self.deliver_subject, queue=self.deliver_group, cb=self._on_msg)
        self._arm()

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        ms = self.state.heartbeat_timeout_ms
        if ms and self.stopped is None:
            self._timer = asyncio.get_running_loop().call_later(ms / 1000, self._silence)

    def _silence(self) -> None:
        self._timer = None
        self._events(self.state.on_heartbeat_missed())
        self._arm()

    def _report(self, err: Exception) -> None:
        self.js.client._report(err, error_cb=self._error_cb)

    def _events(self, events: list) -> list:
        """Carry out the engine's events; the messages for the user (each
        Delivered, made here: the per-message event, without a handler call)."""
        on = self._dispatch
        out = []
        for ev in events:
            if ev.__class__ is Delivered:
                out.append(JsMsg(self.js, ev.msg))
            else:
                on[ev.__class__](ev)
        return out

    # -- the engine's events (see engine/js/push.py)
    def _on_flow_reply(self, ev: FlowReply) -> None:
        self.js.client.publish(ev.subject, b"")

    def _on_warn(self, ev: Warn) -> None:
        self._report(ev.error)

    def _on_stop(self, ev: Stop) -> None:
        self._report(ev.error)
        self.stopped = ev.error
        self.js.client._spawn(self.unsubscribe())

    async def _on_msg(self, msg) -> None:
        self._arm()
        for m in self._events(self.state.on_msg(msg)):
            if self._queue is not None:
                self._queue.put_nowait(m)
                continue
            assert self._cb is not None  # no queue: a callback subscription
            try:
                r = self._cb(m)
                if inspect.isawaitable(r):
                    await r
            except Exception as e:  # the user's callback failed: report it, keep consuming
                self.js.client._hook_failed(self._cb, e, f"the callback of push consumer {self.stream}/{self.name}",
                                            error_cb=self._error_cb)
        if self.stopped is not None and self._queue is not None:
            self._queue.put_nowait(None)

    # ------------------------------------------------------------ API
    @property
    def delivered(self) -> int:
        """Messages delivered to this subscription (flow control and heartbeats not counted)."""
        return self.state.delivered

    async def next_msg(self, timeout: float | None = 30.0) -> JsMsg:
        """The next message; ErrTimeout after ``timeout`` seconds (None: wait
        forever); ErrConsumerDeleted (or the error that ended it) after the end."""
        if self._queue is None:
            raise make_error("ErrInvalidArg", "next_msg on a push subscription with a callback")
        if self.stopped is not None and self._queue.empty():
            raise self.stopped
        try:
            m = await asyncio.wait_for(self._queue.get(), timeout)
        except asyncio.TimeoutError:
            raise make_error("ErrTimeout", f"No message from push consumer {self.stream}/{self.name} "
                                           f"within {timeout} s") from None
        if m is None:
            raise self.stopped or make_error("ErrConsumerStopped", "Push subscription ended")
        return m

    def __aiter__(self) -> "PushSubscription":
        return self

    async def __anext__(self) -> JsMsg:
        if self._queue is None:
            raise make_error("ErrInvalidArg", "iterating a push subscription with a callback")
        if self.stopped is not None and self._queue.empty():
            raise StopAsyncIteration
        m = await self._queue.get()
        if m is None:
            raise StopAsyncIteration
        return m

    def watch(self) -> None:
        """For a face built on this one (tclnats_py.natspy) that subscribes
        to the deliver subject itself and reads that subscription: start
        watching idle heartbeats (a missed one: ErrNoHeartbeat to
        ``error_cb``), then hand each message to :meth:`sort`.  A
        subscription made by :meth:`JetStream.push_subscribe` does both."""
        self._arm()

    def sort(self, msg: Msg) -> JsMsg | None:
        """One message of the deliver subject (see :meth:`watch`): the JsMsg
        for the user, or None when it was flow control or a heartbeat
        (answered here) or a status (to ``error_cb``; ErrConsumerDeleted also
        ends this subscription, :attr:`stopped`)."""
        self._arm()
        out = self._events(self.state.on_msg(msg))
        return out[0] if out else None

    async def consumer_info(self) -> ConsumerInfo:
        """The consumer's info, fetched now."""
        self.info = await self.js.consumer_info(self.stream, self.name)
        return self.info

    async def unsubscribe(self) -> None:
        """Stop receiving; the consumer stays on the server (a durable one
        keeps its place; an ephemeral one goes after its inactive threshold)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self.stopped is None:
            self.stopped = make_error("ErrConsumerStopped", "Push subscription ended")
        if self._queue is not None:
            self._queue.put_nowait(None)
        sub, self._sub = self._sub, None
        if sub is not None and sub.is_active:
            await sub.unsubscribe()

    async def delete(self) -> bool:
        """Unsubscribe and delete the consumer."""
        await self.unsubscribe()
        return await self.js.delete_consumer(self.stream, self.name)
