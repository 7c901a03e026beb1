"""JetStream events: what the state machines of ``engine.js`` ask a face to do.

The JetStream state machines (:class:`~tclnats_py.engine.js.ordered.OrderedConsumer`,
:class:`~tclnats_py.engine.js.push.PushState`, :class:`~tclnats_py.engine.js.pull.Fetch`,
:class:`~tclnats_py.engine.js.pull.Consume`, the KV and Object Store watchers)
are fed the messages of their inbox and answer with a list of these events,
in order.  They are typed tuples made like the core effects
(:mod:`tclnats_py.engine.effects`): cheap to build (the per-message
``Delivered`` with :data:`make`, about three times a tuple display, where a
call of the class is five), and readable in a test
(``Delivered(msg, None) in events``).
Unlike the core effects they compare by class too, so ``Heartbeat()`` is not
equal to ``InitDone()``.

Each state machine names the events it makes in ``EVENTS`` (a tuple of
classes).  A face builds its dispatch once, with :func:`event_table`, from
an object with one ``on_<event>`` method per class it must handle
(:data:`HANDLER_NAMES`); building fails (``TypeError``) when one is missing,
and dispatching a class the table does not know raises :class:`UnknownEvent`,
so an event added to the engine cannot be dropped by a face nobody updated::

    self._dispatch = event_table(self, OrderedConsumer.MSG_EVENTS)
    for ev in state.on_msg(msg):
        self._dispatch[ev.__class__](ev)
"""

from __future__ import annotations

from tclnats_py.engine.effects import UnknownEffect, _Effect

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, Iterable, Optional
    from tclnats_py.errors import NatsError

__all__ = ["Delivered", "FlowReply", "Pull", "Warn", "Stop", "Reset", "Retry", "Ended", "Heartbeat",
           "WatchEntry", "WatchInfo", "InitDone", "HEARTBEAT", "INIT_DONE", "JS_EVENTS", "make", "HANDLER_NAMES",
           "EventTable", "event_table", "UnknownEvent"]


class _Event(_Effect):
    """The base of the JetStream events: equal only to an event of the same class."""

    def __eq__(self, other: object) -> bool:
        return self.__class__ is other.__class__ and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = tuple.__hash__


class Delivered(_Event):
    """Hand ``msg`` to the user, in order.  ``meta`` is its parsed metadata
    (``engine.js.meta.parse_metadata``) when an ordered consumer delivers
    it (the face need not parse it again), else None.  From a
    :class:`~tclnats_py.engine.js.pull.Fetch` it is one message of the
    fetch: for an asynchronous fetch's callback (a synchronous one takes
    ``Fetch.result()`` at the end)."""
    msg: Any
    meta: Optional[dict]


class FlowReply(_Event):
    """Publish an empty message on ``subject``: the answer to a flow-control
    request, or to the ``Nats-Consumer-Stalled`` subject an idle heartbeat
    names, so the server goes on sending."""
    subject: str


class Pull(_Event):
    """Publish the pull request ``body`` (JSON) to the consumer's NEXT
    subject with the consume's inbox as the reply subject."""
    body: bytes


class Warn(_Event):
    """Report ``error`` to the user (the error callback); not fatal, the
    consumer goes on (ErrNoHeartbeat, ErrPullRequestLimit, ErrNoResponders ...)."""
    error: NatsError


class Stop(_Event):
    """The consumer ended for good: report ``error`` and stop (unsubscribe,
    end the iteration).  ErrConsumerDeleted, ErrBadRequest, or for an ordered
    consumer whose re-creation failed, ErrStreamNotFound and ErrConnectionClosed."""
    error: NatsError


class Reset(_Event):
    """The ordered consumer must be recreated: unsubscribe its inbox, report
    ``error`` (its last_error: ErrConsumerSequenceMismatch,
    ErrConsumerNotActive) and send a new creation request on a new inbox."""
    error: NatsError


class Retry(_Event):
    """A re-creation of the ordered consumer failed with ``error``: report
    it and try again after ``ms`` milliseconds."""
    ms: int
    error: NatsError


class Ended(_Event):
    """The fetch is over.  ``status`` is the status message that ended it
    (404, 408, 409 ...: an asynchronous fetch's callback gets timedOut=1 and
    that message), or None when a timeout, no responders or missed
    heartbeats ended it (the callback gets 1 and an empty message)."""
    status: Any


class Heartbeat(_Event):
    """The server is alive (an idle heartbeat or flow control reached a
    fetch): re-arm the heartbeat clock; nothing to deliver."""


class WatchEntry(_Event):
    """A KV watcher's entry (``engine.js.kv.Entry``) for the user (a
    deleted or purged key too, unless the watch ignores deletes)."""
    entry: Any


class WatchInfo(_Event):
    """An Object Store watcher's object info (a dict, ``mtime`` set) for the user."""
    info: dict


class InitDone(_Event):
    """The watch delivered every entry that was there when it began (the
    End Of Initial Data): the asyncio face yields None, the Tcl face sets
    ``InitDone`` and calls the callback with an empty entry.  Comes once."""


# ``make(Delivered, (msg, meta))`` is ``Delivered(msg, meta)`` without the
# Python-level __new__ in between: half the cost, for the per-message events
# (a delivery of an ordered consumer, a push or a pull consumer)
make = tuple.__new__

# the events without fields: one shared instance each
HEARTBEAT = Heartbeat()
INIT_DONE = InitDone()

JS_EVENTS = (Delivered, FlowReply, Pull, Warn, Stop, Reset, Retry, Ended, Heartbeat, WatchEntry, WatchInfo,
             InitDone)

# event class -> the name of its handler in a face
HANDLER_NAMES: dict[type, str] = {
    Delivered: "on_delivered",
    FlowReply: "on_flow_reply",
    Pull: "on_pull",
    Warn: "on_warn",
    Stop: "on_stop",
    Reset: "on_reset",
    Retry: "on_retry",
    Ended: "on_ended",
    Heartbeat: "on_heartbeat",
    WatchEntry: "on_watch_entry",
    WatchInfo: "on_watch_info",
    InitDone: "on_init_done",
}

assert set(HANDLER_NAMES) == set(JS_EVENTS), "every JetStream event has a handler name"


class UnknownEvent(UnknownEffect):
    """A face was handed a JetStream event class it has no handler for."""

    def __init__(self, event: object):
        TypeError.__init__(self, f"the face has no handler for the JetStream event {event!r}")


class EventTable(dict):
    """event class -> bound handler; ``table[ev.__class__](ev)`` carries out
    ``ev``, and a class it does not know raises :class:`UnknownEvent`."""

    __slots__ = ()

    def __missing__(self, cls: type) -> Callable[[Any], Any]:
        raise UnknownEvent(cls)


def event_table(handlers: object, events: Iterable[type], prefix: str = "", inline: tuple = ()) -> EventTable:
    """The dispatch table of ``handlers`` for ``events`` (the ``EVENTS`` of
    the state machines the face drives): its ``on_<event>`` methods, bound,
    by event class; ``prefix`` goes before each name (``"_"``: the handlers
    of a public class stay out of its API).  A handler's return value is the
    face's to use.  ``inline``: classes the face's loop carries out itself
    before it looks in the table (``Delivered`` on the asyncio face's
    per-message paths, where a handler call would cost a tenth of the
    delivery); no handler is asked for them, and the table refuses them as
    it does an unknown class.  TypeError names every missing handler."""
    table = EventTable()
    missing = []
    for cls in events:
        if cls in inline:
            continue
        name = prefix + HANDLER_NAMES[cls]
        fn = getattr(handlers, name, None)
        if not callable(fn):
            missing.append(name)
            continue
        table[cls] = fn
    if missing:
        raise TypeError(f"{type(handlers).__name__} has no handler for: {', '.join(missing)}")
    return table
