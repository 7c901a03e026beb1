"""The engine's effects: what it asks its driver to do, one small type each.

:meth:`Engine.take` returns a list of these, in order.  A driver carries
each out and dispatches on the class (``f.__class__ is Deliver``) in one
place that raises :class:`UnknownEffect` for a class it does not know, so a
new kind of effect cannot be dropped by a driver nobody updated.

They are NamedTuples: built and taken apart as cheaply as the plain tuples
they replace on the hot path (one ``Deliver`` per message received), and
readable in a test (``RequestDone(req, "timeout") in fx``).
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional

__all__ = ["Open", "StartTls", "Close", "StartTimer", "CancelTimer", "StatusChanged",
           "ErrorChanged", "InfoReceived", "Log", "Deliver", "SubGone", "SubsCleared",
           "RequestReply", "RequestDone", "PingDone", "Flush", "PongReceived",
           "EFFECTS", "UnknownEffect"]


class Open(NamedTuple):
    """Open a TCP connection to ``server.host``/``server.port``; then report
    ``socket_connected`` or ``socket_failed``."""
    server: Any


class StartTls(NamedTuple):
    """Upgrade the socket to TLS for ``server``; then ``tls_done`` or ``tls_failed``."""
    server: Any


class Close(NamedTuple):
    """Write what ``data_to_send()`` returns, then close the socket."""


class StartTimer(NamedTuple):
    """Call ``timer_fired(key)`` after ``ms`` milliseconds (re-arm it if set)."""
    key: Any
    ms: int


class CancelTimer(NamedTuple):
    """Forget the timer ``key``."""
    key: Any


class StatusChanged(NamedTuple):
    """The connection status is now ``status`` (closed/connecting/connected/reconnecting)."""
    status: str


class ErrorChanged(NamedTuple):
    """``last_error`` changed: an asynchronous error, or None when cleared."""
    error: Optional[Exception]


class InfoReceived(NamedTuple):
    """INFO from the server (the handshake or an update), as a dict."""
    info: dict


class Log(NamedTuple):
    """A log line; ``level`` is debug, info, warn or error."""
    level: str
    text: str


class Deliver(NamedTuple):
    """Deliver ``msg`` to the user subscription ``sub``."""
    sub: Any
    msg: Any


class SubGone(NamedTuple):
    """The subscription ``sid`` ended (its max_msgs reached, or unsubscribed)."""
    sid: int


class SubsCleared(NamedTuple):
    """Every subscription is gone (the connection closed)."""


class RequestReply(NamedTuple):
    """One reply ``msg`` of a gathering (max_msgs) request ``req``."""
    req: Any
    msg: Any


class RequestDone(NamedTuple):
    """The request ``req`` ended: ``outcome`` is "msg" (the reply is
    ``req.msg``), "timeout", "no_responders", "lost" or "closed"."""
    req: Any
    outcome: str


class PingDone(NamedTuple):
    """The user ping ``ping`` ended: ``ok`` True, False on timeout, None when
    the connection closed first."""
    ping: Any
    ok: Optional[bool]


class Flush(NamedTuple):
    """Bytes are waiting in ``data_to_send()``: schedule a write."""


class PongReceived(NamedTuple):
    """A PONG arrived (any PONG)."""


EFFECTS = (Open, StartTls, Close, StartTimer, CancelTimer, StatusChanged, ErrorChanged,
           InfoReceived, Log, Deliver, SubGone, SubsCleared, RequestReply, RequestDone,
           PingDone, Flush, PongReceived)

# the effects without fields: one shared instance each
CLOSE = Close()
SUBS_CLEARED = SubsCleared()
FLUSH = Flush()
PONG_RECEIVED = PongReceived()


class UnknownEffect(TypeError):
    """A driver was handed an effect class it has no branch for."""

    def __init__(self, effect):
        super().__init__(f"the driver has no handler for the engine effect {effect!r}")
