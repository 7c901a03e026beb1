"""The engine's effects: what it asks its driver to do, one small type each.

:meth:`Engine.take` returns a list of these, in order.  A driver carries
each out and dispatches on the class (``f.__class__ is Deliver``) in one
place that raises :class:`UnknownEffect` for a class it does not know, so a
new kind of effect cannot be dropped by a driver nobody updated.

They are tuples with named fields: built and taken apart as cheaply as the
plain tuples they replace on the hot path (one ``Deliver`` per message
received), and readable in a test (``RequestDone(req, "timeout") in fx``).
They are made by :class:`_Effect` rather than ``typing.NamedTuple``, whose
code generation cost ~5 ms of every start (the Tcl face's ``package require
nats`` included) for the same objects.
"""

from __future__ import annotations

try:  # CPython's field accessor of namedtuple: a C descriptor, faster than a property
    from _collections import _tuplegetter as _field
except ImportError:  # pragma: no cover - other Pythons
    from operator import itemgetter as _itemgetter

    def _field(index, doc):
        return property(_itemgetter(index), doc=doc)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional, TypeVar
    _E = TypeVar("_E", bound="_Effect")

__all__ = ["Open", "StartTls", "Close", "StartTimer", "CancelTimer", "StatusChanged",
           "ErrorChanged", "InfoReceived", "Log", "Deliver", "DeliverMany", "SubGone", "SubsCleared",
           "RequestReply", "RequestDone", "PingDone", "Flush", "PongReceived",
           "EFFECTS", "UnknownEffect"]

_tuple_new = tuple.__new__


def _new0(cls):
    return _tuple_new(cls, ())


def _new1(cls, a):
    return _tuple_new(cls, (a,))


def _new2(cls, a, b):
    return _tuple_new(cls, (a, b))


class _EffectType(type):
    """Makes a class of effects: the fields its body annotates (at most two)
    become read-only fields of a tuple, taken by the constructor in order;
    no instance dict."""

    def __new__(mcls, name, bases, ns):
        fields = tuple(ns.get("__annotations__", ()))
        ns["__slots__"] = ()
        ns["_fields"] = fields
        ns["__new__"] = (_new0, _new1, _new2)[len(fields)]
        for i, field in enumerate(fields):
            ns[field] = _field(i, f"field {i} of {name}")
        return super().__new__(mcls, name, bases, ns)


class _Effect(tuple, metaclass=_EffectType):
    if TYPE_CHECKING:
        def __new__(cls: type[_E], *fields: Any) -> _E: ...
        _fields: tuple[str, ...]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={v!r}' for n, v in zip(self._fields, self))})"


class Open(_Effect):
    """Open a TCP connection to ``server.host``/``server.port``; then report
    ``socket_connected`` or ``socket_failed``."""
    server: Any


class StartTls(_Effect):
    """Upgrade the socket to TLS for ``server``; then ``tls_done`` or ``tls_failed``."""
    server: Any


class Close(_Effect):
    """Write what ``data_to_send()`` returns, then close the socket."""


class StartTimer(_Effect):
    """Call ``timer_fired(key)`` after ``ms`` milliseconds (re-arm it if set)."""
    key: Any
    ms: int


class CancelTimer(_Effect):
    """Forget the timer ``key``."""
    key: Any


class StatusChanged(_Effect):
    """The connection status is now ``status`` (closed/connecting/connected/reconnecting)."""
    status: str


class ErrorChanged(_Effect):
    """``last_error`` changed: an asynchronous error, or None when cleared."""
    error: Optional[Exception]


class InfoReceived(_Effect):
    """INFO from the server (the handshake or an update), as a dict."""
    info: dict


class Log(_Effect):
    """A log line; ``level`` is debug, info, warn or error."""
    level: str
    text: str


class Deliver(_Effect):
    """Deliver ``msg`` to the user subscription ``sub``."""
    sub: Any
    msg: Any


class DeliverMany(_Effect):
    """Deliver the messages ``msgs`` (a list, in order) to the user
    subscription ``sub``: what consecutive ``Deliver`` effects for one
    subscription become for a driver that sets ``Engine.deliver_batches``.

    The engine's guarantee, with ``deliver_batches`` set: it emits no
    ``Deliver`` at all, and deliveries to one subscription with no other
    effect between them (within one :meth:`Engine.take`) come as one
    ``DeliverMany``, whatever path the messages took (plain MSG, HMSG,
    max_msgs); so a driver need not merge effects itself."""
    sub: Any
    msgs: list


class SubGone(_Effect):
    """The subscription ``sid`` ended (its max_msgs reached, or unsubscribed)."""
    sid: int


class SubsCleared(_Effect):
    """Every subscription is gone (the connection closed)."""


class RequestReply(_Effect):
    """One reply ``msg`` of a gathering (max_msgs) request ``req``."""
    req: Any
    msg: Any


class RequestDone(_Effect):
    """The request ``req`` ended: ``outcome`` is "msg" (the reply is
    ``req.msg``), "timeout", "no_responders", "lost" or "closed"."""
    req: Any
    outcome: str


class PingDone(_Effect):
    """The user ping ``ping`` ended: ``ok`` True, False on timeout, None when
    the connection closed first."""
    ping: Any
    ok: Optional[bool]


class Flush(_Effect):
    """Bytes are waiting in ``data_to_send()``: schedule a write."""


class PongReceived(_Effect):
    """A PONG arrived (any PONG)."""


EFFECTS = (Open, StartTls, Close, StartTimer, CancelTimer, StatusChanged, ErrorChanged,
           InfoReceived, Log, Deliver, SubGone, SubsCleared, RequestReply, RequestDone,
           PingDone, Flush, PongReceived, DeliverMany)

# the effects without fields: one shared instance each
CLOSE = Close()
SUBS_CLEARED = SubsCleared()
FLUSH = Flush()
PONG_RECEIVED = PongReceived()


class UnknownEffect(TypeError):
    """A driver was handed an effect class it has no branch for."""

    def __init__(self, effect):
        super().__init__(f"the driver has no handler for the engine effect {effect!r}")
