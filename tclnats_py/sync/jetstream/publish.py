"""publish_async of the blocking face: futures of PubAcks, resolved by a thread reading the acks."""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import Future, InvalidStateError
from typing import TYPE_CHECKING, Any

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.js.publish import AsyncPublisher
from tclnats_py.jsface.info import PubAck

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.sync.jetstream.context import JetStream

# the longest the ack thread waits for an ack before it looks at the deadlines again
_POLL = 0.25
#: seconds without a publish in flight after which the ack thread ends (and
#: its inbox subscription): the next publish_async starts another
IDLE = 10.0


class Retired(Exception):
    """(internal) The publisher went idle and ended; the caller starts another."""


class AsyncPub:
    """publish_async's state on one connection: the engine's
    :class:`~tclnats_py.engine.js.publish.AsyncPublisher` keeps what is in
    flight by reply subject; this keeps the futures, and a daemon thread
    reads the acks on the publisher's wildcard inbox, resolves the futures
    and fails those past their deadline.  It ends when the inbox
    subscription ends (the connection closed): what is left fails with
    ErrConnectionClosed; and after :data:`IDLE` seconds with nothing in
    flight (``retired``: the context starts another when it needs one)."""

    def __init__(self, js: JetStream, max_pending: int):
        client = js.client
        self.core = AsyncPublisher(client.new_inbox(), max_pending)
        self.client = client
        self.cond = threading.Condition()
        self.futures: set[Future[PubAck]] = set()
        self.ended = False
        self.retired = False
        self.busy_at = time.monotonic()  # when a publish was last in flight
        self.due = math.inf  # the earliest deadline of a publish in flight (maybe passed already)
        self.sub = client.subscribe(self.core.subscription_subject)
        self.thread = threading.Thread(target=self._read_acks, name="tclnats-js-acks", daemon=True)
        self.thread.start()

    def add(self, subject: str, data: bytes, hdrs: Any, timeout: float, stall: float) -> Future[PubAck]:
        """Send one publish; its future.  Past ``max_pending`` in flight it
        waits up to ``stall`` seconds for room, then ErrTooManyStalledMsgs."""
        fut: Future[PubAck] = Future()
        with self.cond:
            if self.core.full:
                self.cond.wait_for(lambda: not self.core.full or self.ended, stall)
            if self.ended:
                raise Retired() if self.retired else make_error("ErrConnectionClosed", "Connection closed")
            now = time.monotonic()
            reply = self.core.add(subject, data, hdrs, fut, timeout, now, int(stall * 1000))  # may raise: stalled
            self.futures.add(fut)
            self.due = min(self.due, now + timeout)
        try:
            self.client.publish(subject, data, reply=reply, headers=hdrs)
        except NatsError as e:
            with self.cond:
                done = [(fut, None, e)] if self.core.forget(reply) is not None else []
            self._settle(done)
        return fut

    def wait_idle(self, timeout: float | None) -> bool:
        """Wait until no publish is in flight; whether that happened within ``timeout`` seconds."""
        with self.cond:
            return self.cond.wait_for(lambda: not self.futures, timeout)

    def _settle(self, done: list) -> None:
        """Resolve the futures of ``done`` ((future, ack, error) each), without
        the lock (their callbacks run here), then count them out of flight."""
        if not done:
            return
        for fut, ack, err in done:
            try:
                if err is None:
                    fut.set_result(PubAck(ack))
                else:
                    fut.set_exception(err)
            except InvalidStateError:  # cancelled by its owner
                continue
        with self.cond:
            for fut, _, _ in done:
                self.futures.discard(fut)
            self.busy_at = time.monotonic()
            self.cond.notify_all()

    def _read_acks(self) -> None:
        while True:
            with self.cond:
                due = self.due
            wait = min(_POLL, max(0.0, due - time.monotonic()))
            try:
                msg = self.sub.next_msg(wait)
            except NatsError as e:
                if e.code != "ErrTimeout":
                    self._end(e)
                    return
                if self._retire():
                    return
                msg = None
            with self.cond:
                done = []
                if msg is not None:
                    out = self.core.on_reply(msg)
                    if out is not None:  # (None: a late reply to a publish that timed out)
                        done.append(out)
                if time.monotonic() >= self.due:
                    done += [(fut, None, err) for fut, err in self.core.expire(time.monotonic())]
                    nxt = self.core.next_deadline()
                    self.due = math.inf if nxt is None else nxt
            self._settle(done)

    def _retire(self) -> bool:
        """End when nothing has been in flight for :data:`IDLE` seconds; whether it did."""
        with self.cond:
            if self.futures or time.monotonic() - self.busy_at < IDLE:
                return False
            self.ended = self.retired = True
        try:
            self.sub.unsubscribe()
        except NatsError as e:  # the connection went meanwhile: nothing left to end
            if e.code not in ("ErrConnectionClosed", "ErrBadSubscription"):
                raise
        return True

    def _end(self, why: NatsError) -> None:
        err = why if why.code != "ErrBadSubscription" else make_error("ErrConnectionClosed", "Connection closed")
        with self.cond:
            self.ended = True
            done = [(fut, None, err) for fut in self.core.fail_all(err)]
            self.cond.notify_all()
        self._settle(done)

    def close(self) -> None:
        """End the ack subscription (the thread then fails what is left)."""
        try:
            self.sub.unsubscribe()
        except NatsError as e:
            if e.code not in ("ErrConnectionClosed", "ErrBadSubscription"):
                raise
        if self.thread is not threading.current_thread():
            self.thread.join()

