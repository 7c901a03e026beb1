"""The records the engine shares with its drivers: :class:`Msg` (a message
received or to publish), :class:`Subscription`, :class:`Request` and
:class:`Ping`.

The engine makes and updates them; a driver reads them in the effects it is
handed (``Deliver(sub, msg)``, ``RequestDone(req, outcome)``, ``PingDone``)
and keeps its own object in each one's ``handler``, which the engine never
looks into.  Plain classes with ``__slots__``: one ``Msg`` is made per
message received, on the hot path of every face.
"""

from __future__ import annotations

__all__ = ["Msg", "Subscription", "Request", "Ping"]


def _hget(h, key):
    """The stored value of header ``key``: the list of a received message's
    headers, also when they are the asyncio face's Headers (whose ``get``
    gives the first value)."""
    return dict.get(h, key) if isinstance(h, dict) else h.get(key)


class Msg:
    """A received (or to-be-published) message."""

    __slots__ = ("subject", "reply", "data", "headers", "sid", "__weakref__")

    def __init__(self, subject: str, data: bytes = b"", reply: str | None = None,
                 headers: dict | None = None, sid: int | None = None):
        self.subject = subject
        self.data = data
        self.reply = reply
        self.headers = headers
        self.sid = sid

    @property
    def status(self) -> int:
        h = self.headers
        if not h:
            return 0
        s = _hget(h, "Status")  # the stored list, also of a Headers
        if not s:
            return 0
        try:
            return int(s[0])
        except (ValueError, TypeError):
            return 0

    @property
    def no_responders(self) -> bool:
        return self.status == 503

    @property
    def description(self) -> str:
        h = self.headers
        d = _hget(h, "Description") if h else None
        return d[0] if d else ""

    def header(self, key: str, default=None):
        h = self.headers
        v = _hget(h, key) if h else None
        if isinstance(v, (str, bytes)):
            return v
        return v[0] if v else default

    def __repr__(self) -> str:
        return f"Msg(subject={self.subject!r}, reply={self.reply!r}, data={self.data[:40]!r}, headers={self.headers!r})"


class Subscription:
    __slots__ = ("sid", "subject", "queue", "max_msgs", "received", "handler", "kind",
                 "request", "closed", "draining", "__weakref__")

    def __init__(self, sid, subject, queue, max_msgs, handler, kind="user", request=None):
        self.sid = sid
        self.subject = subject
        self.queue = queue
        self.max_msgs = max_msgs
        self.received = 0
        self.handler = handler  # opaque to the engine: the driver's callback
        self.kind = kind        # "user", "mux" (shared request inbox) or "gather"
        self.request = request
        self.closed = False
        self.draining = False   # UNSUB sent, in-flight messages still delivered (drain)

    def __repr__(self):
        return f"Subscription(sid={self.sid}, subject={self.subject!r}, kind={self.kind})"


class Request:
    __slots__ = ("id", "subject", "reply", "timeout", "max_msgs", "sub", "msg", "msgs",
                 "handler", "done", "raw", "__weakref__")

    def __init__(self, rid, subject, reply, timeout, max_msgs, handler):
        self.id = rid
        self.subject = subject
        self.reply = reply
        self.timeout = timeout
        self.max_msgs = max_msgs  # None: new-style, first reply only
        self.sub = None
        self.msg = None
        self.msgs = []
        self.handler = handler
        self.done = False
        # a direct request whose plain reply (a header block of no status)
        # stays its parts, ``msg`` = (reply, header block, payload, size):
        # Engine.direct_request's ``raw``
        self.raw = False

    def __repr__(self):
        return f"Request(id={self.id}, subject={self.subject!r})"


class Ping:
    __slots__ = ("id", "handler", "done", "__weakref__")

    def __init__(self, pid, handler):
        self.id = pid
        self.handler = handler
        self.done = False
