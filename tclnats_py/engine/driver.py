"""The driver contract: what a driver owes the engine, written as code.

The engine (:class:`~tclnats_py.engine.connection.Engine`) performs no I/O.
A *driver* owns the socket, the clock and the thread, and keeps the engine
going in three directions:

1. **Calls in** (:class:`EngineIO`, the engine's side): the driver reports
   what happened on the wire and the clock, in the order it happened:
   ``socket_connected()`` / ``socket_failed(reason)`` after an ``Open``,
   ``tls_done()`` / ``tls_failed(reason)`` after a ``StartTls``,
   ``receive_data(bytes)`` for every read, ``connection_lost(reason)`` when
   the peer closed or a read failed, ``write_failed(reason)`` when a write
   failed, ``timer_fired(key)`` when a ``StartTimer`` fires.
2. **Bytes out**: while ``want_write`` is true, ``data_to_send()`` gives the
   bytes to write, in order.  During the handshake (status not connected)
   the driver writes them at once after carrying out the effects; once
   connected it writes when a ``Flush`` effect asks (it may batch writes
   within one turn of its loop).
3. **Effects**: after each call in, the driver drains ``take()`` and carries
   out each effect in order, through the handlers of :class:`EffectHandlers`.
   A handler may call the engine again; the driver then drains ``take()``
   once more, until it is empty.

Each driver builds its dispatch table once, with :func:`effect_table`, from
an object that has one ``on_<effect>`` method per effect class; building it
fails (``TypeError``) when a handler is missing.  The table is a plain dict
(a lookup in a dict subclass costs ~30 ns more per effect on CPython 3.11);
an effect class it does not have is a ``KeyError`` that the driver turns
into :class:`UnknownEffect` (:func:`unknown_effect`)::

    try:
        handler = table[f.__class__]
    except KeyError:
        unknown_effect(f)
    handler(f)
  So a new effect
added to the engine cannot be dropped silently by a driver nobody updated.
The drivers: :mod:`tclnats_py.aio.client` (asyncio),
:mod:`tclnats_py.tclface.bridge` (the Tcl event loop), and
:mod:`tclnats_py.sync.driver` (blocking; the Spark reader runs on it).
"""

from __future__ import annotations

from tclnats_py.engine.effects import (EFFECTS, CancelTimer, Close, Deliver, DeliverMany, ErrorChanged, Flush,
                                       InfoReceived, Log, Open, PingDone, PongReceived, RequestDone,
                                       RequestReply, StartTimer, StartTls, StatusChanged, SubGone, SubsCleared,
                                       UnknownEffect)

TYPE_CHECKING = False  # typing costs ~10 ms of every start: type names for the checker only
if TYPE_CHECKING:
    from typing import Any, Callable, NoReturn, Protocol
else:
    Protocol = object

__all__ = ["EngineIO", "EffectHandlers", "HANDLER_NAMES", "effect_table", "unknown_effect", "UnknownEffect"]


class EngineIO(Protocol):
    """What a driver calls on the engine (the engine implements it)."""

    # -- what happened, reported by the driver
    def socket_connected(self) -> None: ...
    def socket_failed(self, reason: str, unresolved: bool = False) -> None: ...
    def tls_done(self) -> None: ...
    def tls_failed(self, reason: str) -> None: ...
    def receive_data(self, data: bytes) -> None: ...
    def connection_lost(self, reason: str | None = None) -> None: ...
    def write_failed(self, reason: str) -> None: ...
    def timer_fired(self, key: Any) -> None: ...

    # -- what the driver must do, asked by the engine
    def take(self, writing: bool = False) -> list: ...
    @property
    def want_write(self) -> bool: ...
    def data_to_send(self, limit: int | None = None) -> bytes: ...


class EffectHandlers(Protocol):
    """One method per effect: what a driver does when the engine asks.

    Every handler takes the effect and returns nothing; it must not block
    (the Tcl face and asyncio run them on their event loop)."""

    def on_open(self, e: Open) -> None:
        """Open a TCP connection to ``e.server.host``/``e.server.port``, then
        call ``socket_connected()`` or ``socket_failed(reason)``."""
    def on_start_tls(self, e: StartTls) -> None:
        """Wrap the socket in TLS for ``e.server`` (its name and the options'
        context), then call ``tls_done()`` or ``tls_failed(reason)``."""
    def on_close(self, e: Close) -> None:
        """Write what ``data_to_send()`` still gives, then close the socket."""
    def on_start_timer(self, e: StartTimer) -> None:
        """Call ``timer_fired(e.key)`` after ``e.ms`` milliseconds; a timer
        with the same key that is still set is replaced."""
    def on_cancel_timer(self, e: CancelTimer) -> None:
        """Forget the timer ``e.key`` (no error when it is not set)."""
    def on_status_changed(self, e: StatusChanged) -> None:
        """Tell the user the connection status is now ``e.status``."""
    def on_error_changed(self, e: ErrorChanged) -> None:
        """Report ``e.error`` (an asynchronous error), or clear the last one."""
    def on_info_received(self, e: InfoReceived) -> None:
        """The server's INFO ``e.info``: update what the face shows of it."""
    def on_log(self, e: Log) -> None:
        """Log ``e.text`` at ``e.level`` (debug, info, warn, error)."""
    def on_deliver(self, e: Deliver) -> None:
        """Hand ``e.msg`` to the subscription ``e.sub`` (its ``handler``).
        Never called for a driver that set ``Engine.deliver_batches``."""
    def on_deliver_many(self, e: DeliverMany) -> None:
        """Hand the messages ``e.msgs`` to ``e.sub``, in order.  With
        ``Engine.deliver_batches`` set, every delivery comes so, and the
        deliveries to one subscription with no other effect between them
        come in one ``DeliverMany``: the driver merges nothing itself."""
    def on_sub_gone(self, e: SubGone) -> None:
        """The subscription ``e.sid`` ended: end the face's object for it."""
    def on_subs_cleared(self, e: SubsCleared) -> None:
        """Every subscription ended (the connection closed)."""
    def on_request_reply(self, e: RequestReply) -> None:
        """One reply ``e.msg`` of a request that gathers several."""
    def on_request_done(self, e: RequestDone) -> None:
        """The request ``e.req`` ended with ``e.outcome``: wake its caller."""
    def on_ping_done(self, e: PingDone) -> None:
        """The user ping ``e.ping`` ended: ``e.ok`` True, False, or None."""
    def on_flush(self, e: Flush) -> None:
        """Bytes wait in ``data_to_send()``: schedule a write."""
    def on_pong_received(self, e: PongReceived) -> None:
        """A PONG arrived (for a face that shows it; may do nothing)."""


# effect class -> the name of its handler in EffectHandlers
HANDLER_NAMES: dict[type, str] = {
    Open: "on_open",
    StartTls: "on_start_tls",
    Close: "on_close",
    StartTimer: "on_start_timer",
    CancelTimer: "on_cancel_timer",
    StatusChanged: "on_status_changed",
    ErrorChanged: "on_error_changed",
    InfoReceived: "on_info_received",
    Log: "on_log",
    Deliver: "on_deliver",
    DeliverMany: "on_deliver_many",
    SubGone: "on_sub_gone",
    SubsCleared: "on_subs_cleared",
    RequestReply: "on_request_reply",
    RequestDone: "on_request_done",
    PingDone: "on_ping_done",
    Flush: "on_flush",
    PongReceived: "on_pong_received",
}

assert set(HANDLER_NAMES) == set(EFFECTS), "every effect has a handler name"


def unknown_effect(f: object) -> NoReturn:
    """Raise :class:`UnknownEffect` for ``f``: what a driver does with an
    effect whose class its table does not have."""
    raise UnknownEffect(f)


def effect_table(handlers: object, **overrides: Callable[[Any], object]) -> dict[type, Callable[[Any], object]]:
    """The dispatch table of ``handlers`` (an :class:`EffectHandlers`): its
    ``on_<effect>`` methods, bound, by effect class.  ``overrides`` replaces
    a handler by name (``on_log=...``).  TypeError names every missing one."""
    table: dict[type, Callable[[Any], object]] = {}
    missing = []
    for cls, name in HANDLER_NAMES.items():
        fn = overrides.pop(name, None) or getattr(handlers, name, None)
        if not callable(fn):
            missing.append(name)
            continue
        table[cls] = fn
    if overrides:
        raise TypeError(f"no such effect handler: {', '.join(sorted(overrides))}")
    if missing:
        raise TypeError(f"{type(handlers).__name__} has no handler for: {', '.join(missing)}")
    return table
