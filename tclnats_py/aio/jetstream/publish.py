"""Publishing: the publish_async driver and the checks of a publish's arguments."""

from __future__ import annotations

from typing import TYPE_CHECKING

import asyncio

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.js.publish import AsyncPublisher
from tclnats_py.engine.protocol import encode_pub
from tclnats_py.jsface.info import PubAck

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.aio.jetstream.context import JetStream


class _AsyncPub:
    """publish_async's driver on one connection: the engine's
    :class:`~tclnats_py.engine.js.publish.AsyncPublisher` keeps what is in flight
    and queued, by reply subject; this keeps the futures and one loop timer.

    Its reply subscription is an engine subscription whose handler is this
    object: the driver hands it each ack as it parses the socket's bytes
    (``_deliver``), so all the acks of one read resolve their futures in one
    pass, with no queue or task between.  PUBs without headers are framed
    here with the engine's encoder (the reply subject is ours, so it needs
    no check) and queued with one engine call each; they leave with the
    connection's next coalesced write.  Deadlines share a single timer,
    armed for the earliest one."""

    def __init__(self, js: "JetStream", old: "_AsyncPub | None"):
        self.js = js
        self.client = client = js.client
        self.loop = asyncio.get_running_loop()
        self.core = AsyncPublisher(client.new_inbox(), js._ap_max)
        self.futures: set = old.futures if old is not None else set()
        self.idle_waiters: list = old.idle_waiters if old is not None else []
        self.timer: asyncio.TimerHandle | None = None
        self.timer_at = 0.0
        self.room_waiters: list = old.room_waiters if old is not None else []
        self.sub = client.engine.subscribe(self.core.subscription_subject, handler=self)
        client._run()
        if old is not None:
            # its subscription ended (the connection closed): what it still had fails now
            old._fail_all(make_error("ErrConnectionClosed", "Connection closed"))

    def add(self, subject, data, hdrs, timeout, stall):
        now = self.loop.time()
        fut = self.loop.create_future()
        reply = self.core.add(subject, data, hdrs, fut, timeout, now, int(stall * 1000))  # may raise: stalled
        self.futures.add(fut)
        self._send(reply, subject, data, hdrs, now + timeout)
        client = self.client
        if client.engine.has_effects:
            client._run()
        return fut

    async def wait_room(self, stall: float) -> None:
        """Wait up to ``stall`` seconds for an ack to leave room (or for the
        connection to end); the caller's add() then tells."""
        deadline = self.loop.time() + stall
        while self.core.full and not self.sub.closed:
            left = deadline - self.loop.time()
            if left <= 0:
                return
            w = self.loop.create_future()
            self.room_waiters.append(w)
            try:
                await asyncio.wait_for(w, left)
            except asyncio.TimeoutError:
                return
            finally:
                if w in self.room_waiters:
                    self.room_waiters.remove(w)

    def _send(self, reply, subject, data, hdrs, deadline) -> None:
        eng = self.client.engine
        try:
            if hdrs is None:
                mp = eng.server_info.get("max_payload")
                if mp is not None and len(data) > mp:
                    raise make_error("ErrMaxPayload", f"Maximum size of NATS message is {mp}")
                eng.publish_framed(encode_pub(subject, reply, data), 1)
            else:
                eng.publish(subject, data, reply, hdrs, False)
        except NatsError as e:
            fut = self.core.forget(reply)
            if fut is not None:
                self._finish(fut, None, e)
            return
        if self.timer is None or deadline < self.timer_at:
            self._arm(deadline)

    def _arm(self, when) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer_at = when
        self.timer = self.loop.call_at(when, self._expire)

    def _expire(self) -> None:
        self.timer = None
        now = self.loop.time()
        for fut, err in self.core.expire(now):
            self._finish(fut, None, err)
        nxt = self.core.next_deadline()
        if nxt is not None and (self.timer is None or nxt < self.timer_at):
            self._arm(nxt)
        client = self.client
        if client.engine.has_effects:
            client._run()

    def _finish(self, fut, ack, err) -> None:
        futures = self.futures
        futures.discard(fut)
        if self.room_waiters:
            w = self.room_waiters.pop(0)
            if not w.done():
                w.set_result(None)
        if not futures and self.idle_waiters:
            ws, self.idle_waiters[:] = list(self.idle_waiters), []
            for w in ws:
                if not w.done():
                    w.set_result(None)
        if fut.done():
            return  # cancelled by its owner
        if err is None:
            fut.set_result(PubAck(ack))
        else:
            fut.set_exception(err)
            fut.exception()  # retrieved: failures are the caller's to look at

    def _deliver(self, msg) -> None:
        """An ack (the driver calls this for each message of the subscription)."""
        out = self.core.on_reply(msg)
        if out is None:
            return  # a late reply to a publish that timed out
        self._finish(*out)

    def _fail_all(self, err) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        for fut in self.core.fail_all(err):
            self._finish(fut, None, err)
