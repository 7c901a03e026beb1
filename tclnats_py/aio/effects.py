"""The asyncio face's effect handlers: what the client does for each effect.

The driver contract (``tclnats_py.engine.driver``) as the asyncio face
carries it out: :class:`ClientEffects` has one ``on_<effect>`` method per
effect class of the engine, and each client builds its dispatch table once
(``effect_table(self)``, in ``Client.__init__``).  :meth:`ClientEffects._run` drains
the engine's effects through that table; an effect class it does not know
raises ``UnknownEffect``.

The hot path is deliveries: the engine hands a read's plain messages for one
subscription over in one ``DeliverMany``; the ``Deliver`` effects that follow
each other for one subscription (messages with headers, subscriptions with
``max_msgs``) are gathered by :meth:`ClientEffects.on_deliver` into one
call too.  User hooks (error_cb, status_cb ...) are plain or coroutine
functions; their failures go to error_cb, else the "tclnats_py" logger.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from tclnats_py.aio.subscription import Subscription
from tclnats_py.aio.transport import _DEFERRED, ClientIO
from tclnats_py.engine.connection import CLOSED, CONNECTED, RECONNECTING, Request
from tclnats_py.engine.driver import unknown_effect
from tclnats_py.engine.effects import (CancelTimer, Close, Deliver, DeliverMany, ErrorChanged, Flush, InfoReceived,
                                       Log, Open, PingDone, PongReceived, RequestDone, RequestReply, StartTimer,
                                       StartTls, StatusChanged, SubGone, SubsCleared)
from tclnats_py.errors import NatsError, make_error

__all__ = ["ClientEffects"]

# no NullHandler: what this logger says at WARNING and above reaches the
# root logger's handlers, or logging.lastResort (stderr) when there are none,
# as asyncio's "Task exception was never retrieved" does
_log = logging.getLogger("tclnats_py")
_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warn": logging.WARNING, "error": logging.ERROR}


def _call_user(client: ClientEffects, fn, *args, what: str | None = None) -> None:
    """Call a user hook (plain or coroutine function; a coroutine is awaited
    in a task of the client); its failure goes to :meth:`ClientEffects._hook_failed`."""
    try:
        r = fn(*args)
        if inspect.isawaitable(r):
            client._spawn(_await_user(client, fn, r, what))
    except Exception as e:  # the user's hook failed: report it, keep the driver running
        client._hook_failed(fn, e, what)


async def _await_user(client: ClientEffects, fn, awaitable, what: str | None) -> None:
    try:
        await awaitable
    except Exception as e:  # the user's coroutine failed
        client._hook_failed(fn, e, what)


def _name(fn) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


class _Gather:
    """Handler of a request_many: the replies so far and the future of the end."""

    __slots__ = ("msgs", "fut")

    def __init__(self, fut):
        self.msgs = []
        self.fut = fut


class ClientEffects(ClientIO):
    """The effect half of :class:`~tclnats_py.aio.client.Client` (a base
    class of it): the engine's effects carried out, the user's hooks called."""

    _effects: dict[type, Callable[[Any], object]]
    _tasks: set
    _status_waiters: list
    _prev_status: str
    _pub_max: int
    _known_servers: set
    _ldm: bool
    _allow_reconnect: bool
    _error_cb: Any
    _status_cb: Any
    _disconnected_cb: Any
    _reconnected_cb: Any
    _closed_cb: Any
    _discovered_server_cb: Any
    _lame_duck_mode_cb: Any
    _status_hooks: Callable[[str], list[tuple[Any, tuple]]]   # ClientState's
    _info_hooks: Callable[[dict], list[Any]]

    def _spawn(self, coro: Awaitable[Any]) -> None:
        """Run ``coro`` as a task of this client (see Client.spawn)."""
        t = asyncio.ensure_future(coro, loop=self._loop)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    def _report(self, err, logged: bool = False, error_cb=None) -> None:
        """An asynchronous error for ``error_cb`` (default: the client's);
        without one it is logged at ERROR by the "tclnats_py" logger (the
        engine's own errors were logged already, with its "log" effect).
        NatsErrors are logged without a traceback, anything else with it."""
        cb = error_cb or self._error_cb
        if cb is not None:
            _call_user(self, cb, err, what="error_cb")
        elif not logged:
            _log.error("%s: %s", getattr(err, "code", type(err).__name__), err,
                       exc_info=None if isinstance(err, NatsError) else err)

    def _hook_failed(self, fn, err: BaseException, what: str | None = None, error_cb=None) -> None:
        """A user's callback ``fn`` raised ``err``: it goes to ``error_cb``
        (default: the client's), as nats-py does; without one, or when the
        error_cb itself failed, it is logged at ERROR with its traceback,
        as asyncio reports a task's exception nobody retrieved."""
        cb = error_cb or self._error_cb
        if cb is not None and fn is not cb and what != "error_cb":
            _call_user(self, cb, err, what="error_cb")
            return
        _log.error("Exception in %s %s", what or "callback", _name(fn), exc_info=err)

    def _run(self, writing: bool = False) -> None:
        """Carry out the engine's effects, in order, until it has none left
        (``writing``: the caller writes at once, see Engine.take); see Client.run_effects."""
        eng = self._engine
        table = self._effects
        fx = eng.take(writing)
        while fx:
            for f in fx:
                try:
                    handler = table[f.__class__]
                except KeyError:
                    unknown_effect(f)
                handler(f)
            fx = eng.take(writing) if eng._fx else []  # (no call when none came meanwhile)
        if self._transport is not None and eng.status != CONNECTED and eng.want_write:
            # handshake traffic (CONNECT, PING, PONG) goes out at once
            self._transport.write(eng.data_to_send())

    # ------------------------------------------------------------ deliveries
    def on_deliver(self, e: Deliver) -> None:
        """Hand ``e.msg`` to its subscription.  The client sets the engine's
        ``deliver_batches``, so its deliveries come as DeliverMany; a single
        Deliver is carried out all the same."""
        sub = e.sub.handler
        if sub is not None:
            sub._deliver(e.msg)

    def on_deliver_many(self, e: DeliverMany) -> None:
        """Hand the messages ``e.msgs`` to their subscription, in one call."""
        sub = e.sub.handler
        if sub is None:
            return
        if sub.__class__ is Subscription:
            sub._deliver_many(e.msgs)
        else:  # another handler (the JetStream async publisher's acks)
            deliver = sub._deliver
            for m in e.msgs:
                deliver(m)

    def on_sub_gone(self, e: SubGone) -> None:
        sub = self._subs.get(e.sid)
        if sub is not None:
            sub._end()

    def on_subs_cleared(self, e: SubsCleared) -> None:
        for sub in list(self._subs.values()):
            sub._end()

    # ------------------------------------------------------------ requests, pings
    def on_request_reply(self, e: RequestReply) -> None:
        h = e.req.handler
        if h.__class__ is _Gather:
            h.msgs.append(e.msg)

    def on_request_done(self, e: RequestDone) -> None:
        req = e.req
        fut = req.handler
        if fut.__class__ is _Gather:
            fut = fut.fut
        if fut is None or fut.done():
            return
        outcome = e.outcome
        if outcome == "msg":
            fut.set_result(req.msg)
        elif outcome == "no_responders":
            fut.set_exception(make_error("ErrNoResponders", f"No responders available for request to {req.subject}"))
        elif outcome == "timeout":
            fut.set_exception(make_error("ErrTimeout", f"Request to {req.subject} timed out"))
        elif outcome == "lost":
            # nats-tcl: the connection is lost for good -> the request timed out
            fut.set_exception(make_error("ErrTimeout", "Connection lost"))
        else:
            fut.set_exception(make_error("ErrConnectionClosed", "Connection closed"))

    def on_ping_done(self, e: PingDone) -> None:
        fut = e.ping.handler
        if fut is None or fut.done():
            return
        if e.ok is True:
            fut.set_result(True)
        elif e.ok is False:
            fut.set_exception(make_error("ErrTimeout", "PING timeout"))
        else:
            fut.set_exception(make_error("ErrConnectionClosed", "Connection closed"))

    def on_pong_received(self, e: PongReceived) -> None:
        """A PONG matters only to user pings (``on_ping_done``): nothing to do."""

    # ------------------------------------------------------------ the socket and the clock
    def on_flush(self, e: Flush) -> None:
        if self._flush_handle is None:
            self._flush_handle = _DEFERRED if self._reading else self._loop.call_soon(self._flush_now)

    def on_start_timer(self, e: StartTimer) -> None:
        key = e.key
        if key.__class__ is Request:
            # all request deadlines share one loop timer
            when = self._loop.time() + e.ms / 1000.0
            self._deadlines[key] = when
            if self._deadline_timer is None or when < self._deadline_at:
                self._arm_deadlines(when)
            return
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()
        self._timers[key] = self._loop.call_later(e.ms / 1000.0, self._timer_fired, key)

    def on_cancel_timer(self, e: CancelTimer) -> None:
        if e.key.__class__ is Request:
            self._deadlines.pop(e.key, None)
            return
        h = self._timers.pop(e.key, None)
        if h is not None:
            h.cancel()

    def on_open(self, e: Open) -> None:
        self._open(e.server)

    def on_start_tls(self, e: StartTls) -> None:
        self._spawn(self._start_tls(e.server, self._attempt))

    def on_close(self, e: Close) -> None:
        self._close_transport()

    # ------------------------------------------------------------ what the user hears
    def on_log(self, e: Log) -> None:
        lvl = _LEVELS.get(e.level, logging.INFO)
        if _log.isEnabledFor(lvl):
            _log.log(lvl, e.text)

    def on_error_changed(self, e: ErrorChanged) -> None:
        if e.error is not None:
            self._report(e.error, logged=True)

    def on_info_received(self, e: InfoReceived) -> None:
        mp = e.info.get("max_payload")
        self._pub_max = mp if isinstance(mp, int) else sys.maxsize
        if self._discovered_server_cb is not None or self._lame_duck_mode_cb is not None:
            self._info_callbacks(e.info)

    def on_status_changed(self, e: StatusChanged) -> None:
        status = e.status
        if status == RECONNECTING and not self._allow_reconnect:
            # allow_reconnect=False (nats-py): a lost connection closes the client
            self._engine.disconnect()
        waiters, self._status_waiters = self._status_waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(status)
        for hook, args in self._status_hooks(status):
            _call_user(self, hook, *args)

    def _info_callbacks(self, info: dict) -> None:
        for hook in self._info_hooks(info):
            _call_user(self, hook)


    def _awaiting_reply(self) -> bool:
        """For the spinning selector (tclnats_py.aio.spin)."""
        return self._engine.awaiting_reply
