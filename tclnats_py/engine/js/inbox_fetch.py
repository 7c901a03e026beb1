"""A fetch on a long-lived pull inbox (nats-py's ``PullSubscription.fetch``).

Unlike :class:`~tclnats_py.engine.js.pull.Fetch` (one pull request on an
inbox of its own), the caller keeps one inbox subscribed for many fetches, so
what arrives may belong to an earlier request that outlived its fetch:
messages are kept for the next fetch, statuses of old requests are skipped.
The contract (nats-py 2.x):

* messages already queued on the inbox are taken first (statuses dropped);
* a batch of one: one request (``expires`` the timeout less 100 µs) and the
  first message that comes; a status that ends a request (404, 408, 409) is
  not an answer, the fetch waits out its timeout;
* a larger batch: a ``no_wait`` request for what is there now (without
  ``expires`` when queued messages are in hand, so the server answers at
  once); if that brought messages, the rest of that answer is gathered until
  the batch is full or the request ends; else one request that waits for the
  time left, returning once a message came and the ones after it followed;
* nothing at all: ErrTimeout (``details["heartbeats"]`` True when the
  server's idle heartbeats came: nats-py's FetchTimeoutError); another
  status: ErrJSResponse with ``code`` and ``description``, ErrNoResponders
  for 503.

:func:`inbox_fetch` is an operation (a generator, see ``engine.js.api``)
yielding three kinds of steps: :class:`TakeQueued` (the driver sends back a
queued inbox message or None, without waiting), ``api.Publish`` (the pull
request) and :class:`NextMsg` (the driver sends back ``(msg, now)``; msg is
None when the deadline passed first).  Times are the driver's clock, in
seconds; ``now`` is passed in, the engine reads no clock.
"""

from __future__ import annotations

from typing import Any, Generator, List, Optional

from tclnats_py.errors import error_class, make_error
from tclnats_py.engine.js.api import Publish
from tclnats_py.engine.js.pull import classify, pull_request_body

__all__ = ["TakeQueued", "NextMsg", "inbox_fetch", "EXPIRES_MARGIN_NS"]

#: a request expires this much before the fetch's timeout (nats-py's margin)
EXPIRES_MARGIN_NS = 100_000

_ENDS_REQUEST = ("no_messages", "timeout", "conflict")
_ALIVE = ("heartbeat", "flow_control")


class TakeQueued:
    """Step: a message already queued on the inbox (None when there is none); no waiting."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "TakeQueued()"


class NextMsg:
    """Step: the next message of the inbox, waiting until ``deadline`` (None:
    no limit).  The driver sends back ``(msg, now)``, msg None on the deadline."""

    __slots__ = ("deadline",)

    def __init__(self, deadline: Optional[float]):
        self.deadline = deadline

    def __repr__(self) -> str:
        return f"NextMsg({self.deadline!r})"


def _status_error(msg: Any):
    if msg.status == 503:
        return make_error("ErrNoResponders", "No responders for the pull request")
    return error_class("ErrJSResponse")(msg.description or f"status {msg.status}", code=msg.status,
                                        err_code=None, description=msg.description)


class _Fetch:
    """One inbox_fetch's state: its request parameters, what it gathered,
    whether the server's idle heartbeats came."""

    __slots__ = ("next_subject", "inbox", "batch", "deadline", "hb_ns", "heartbeats", "msgs")

    def __init__(self, next_subject: str, inbox: str, batch: int, deadline: Optional[float],
                 heartbeat: Optional[float]):
        self.next_subject = next_subject
        self.inbox = inbox
        self.batch = batch
        self.deadline = deadline
        self.hb_ns = int(heartbeat * 1_000_000_000) if heartbeat else None
        self.heartbeats = False
        self.msgs: List[Any] = []

    def request(self, n: int, expires_s: Optional[float], no_wait: bool = False) -> Publish:
        """The pull request for ``n`` messages, expiring a margin before ``expires_s``."""
        ns = int(expires_s * 1_000_000_000) - EXPIRES_MARGIN_NS if expires_s else None
        return Publish(self.next_subject,
                       pull_request_body(n, ns if ns and ns > 0 else None, no_wait, None, self.hb_ns), self.inbox)

    def timed_out(self):
        return make_error("ErrTimeout", "No message from the pull consumer in time", heartbeats=self.heartbeats)

    def sort(self, m: Any) -> str:
        """What ``m`` is: "msg", "alive" (a heartbeat: noted), "ended" (a
        status that ends a request); another status raises its error."""
        kind = classify(m)
        if kind == "msg":
            return kind
        if kind in _ALIVE:
            self.heartbeats = True
            return "alive"
        if kind in _ENDS_REQUEST:
            return "ended"
        raise _status_error(m)

    def take_queued(self) -> Generator[Any, Any, None]:
        """What earlier requests left on the inbox (statuses dropped)."""
        while len(self.msgs) < self.batch:
            m = yield TakeQueued()
            if m is None:
                return
            if classify(m) == "msg":
                self.msgs.append(m)

    def first(self, timeout: Optional[float]) -> Generator[Any, Any, List[Any]]:
        """A batch of one: one request, the first message that comes (a
        status ending the request is not an answer: wait out the time)."""
        yield self.request(1, timeout)
        while True:
            m, _ = yield NextMsg(self.deadline)
            if m is None:
                raise self.timed_out()
            if self.sort(m) == "msg":
                return [m]

    def gather(self) -> Generator[Any, Any, None]:
        """The rest of a request's answer: until the batch is full, the request ends or time is up."""
        # the loop of every message: locals, and sort() only for a status
        msgs, batch, step = self.msgs, self.batch, NextMsg(self.deadline)
        while len(msgs) < batch:
            m, _ = yield step
            if m is None:
                return
            if classify(m) == "msg":
                msgs.append(m)
            elif self.sort(m) == "ended":
                return

    def now(self, timeout: Optional[float]) -> Generator[Any, Any, Optional[float]]:
        """A no_wait request for what is there now (without expires when
        queued messages are in hand) and its first answer (kept when it is a
        message: the caller gathers the rest).  Returns the driver's clock
        after that answer, or None when time ran out."""
        msgs = self.msgs
        yield self.request(self.batch - len(msgs), None if msgs else timeout, no_wait=True)
        m, now = yield NextMsg(self.deadline)
        if m is None:
            if msgs:
                return None
            raise self.timed_out()
        if self.sort(m) == "msg":
            msgs.append(m)
        return now

    def wait(self, now: float) -> Generator[Any, Any, None]:
        """Nothing now: one request that waits for the time left, until a
        message came (a status ending an earlier request on this inbox is
        skipped); the caller gathers the ones after it."""
        left = None if self.deadline is None else self.deadline - now
        if left is not None and left <= EXPIRES_MARGIN_NS / 1e9:
            raise self.timed_out()
        yield self.request(self.batch, left)
        while not self.msgs:
            m, now = yield NextMsg(self.deadline)
            if m is None:
                raise self.timed_out()
            if self.sort(m) == "msg":
                self.msgs.append(m)


def inbox_fetch(next_subject: str, inbox: str, batch: int, timeout: Optional[float], heartbeat: Optional[float],
                start: float) -> Generator[Any, Any, List[Any]]:
    """Operation: up to ``batch`` messages of the consumer whose pull subject
    is ``next_subject``, delivered to ``inbox``; see the module docstring.
    ``timeout`` None waits for good; ``start`` is the driver's clock now."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise make_error("ErrInvalidArg", f"Invalid batch size {batch!r}")
    if timeout is not None and timeout <= 0:
        raise make_error("ErrBadTimeout", f"Invalid fetch timeout {timeout!r}")
    f = _Fetch(next_subject, inbox, batch, None if timeout is None else start + timeout, heartbeat)
    yield from f.take_queued()
    if batch == 1:
        return f.msgs if f.msgs else (yield from f.first(timeout))
    # (the steps gather() yields, one per message, come straight from here)
    queued = len(f.msgs)
    now = yield from f.now(timeout)
    if len(f.msgs) > queued:  # the first answer was a message: the rest of the request's
        yield from f.gather()
    if f.msgs or now is None:
        return f.msgs
    yield from f.wait(now)
    yield from f.gather()
    return f.msgs
