"""The arguments of pulls and ordered consumers in the Python faces' units
(seconds) -> the engine's state machines (ms): what both faces' ``fetch``,
``consume``, ``messages`` and ``ordered_consumer`` build, checked once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.connection import CONNECTED
from tclnats_py.engine.js import ordered as _ordered
from tclnats_py.engine.js.priority import PullGroup
from tclnats_py.engine.js.events import Delivered, Pull, Warn, event_table
from tclnats_py.engine.js.pull import Consume, Fetch
from tclnats_py.engine.validate import check_int, check_timeout

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.engine.connection import Engine

__all__ = ["PullLoop", "DEFAULT_FETCH_WAIT", "pull_group", "fetch_state", "consume_state", "ordered_state"]

#: how long ``Consumer.fetch`` and ``Consumer.next`` wait by default, in
#: seconds (nats.go jetstream's DefaultMaxWait for Fetch/Next)
DEFAULT_FETCH_WAIT = 30.0


def pull_group(group: str | None, min_pending: int | None, min_ack_pending: int | None, priority: int | None,
               pins: dict[str, str]) -> PullGroup | None:
    """The priority group of a pull (ADR-42), None without ``group``; ``pins``
    is the consumer's group -> pin id, kept across its pulls."""
    if group is None:
        if min_pending is not None or min_ack_pending is not None or priority is not None:
            raise make_error("ErrInvalidArg", "min_pending, min_ack_pending and priority need a group")
        return None
    return PullGroup(group, min_pending=min_pending, min_ack_pending=min_ack_pending, priority=priority, pins=pins)


def fetch_wait(max_wait: float | None, expires: float | None, no_wait: bool | None) -> float | None:
    """``fetch``'s wait in seconds: ``max_wait`` or its older name ``expires``
    (not both), default :data:`DEFAULT_FETCH_WAIT` unless ``no_wait``."""
    if expires is not None:
        if max_wait is not None:
            raise make_error("ErrInvalidArg", "max_wait and expires both given (expires is its older name)")
        max_wait = expires
    if max_wait is None and not no_wait:
        max_wait = DEFAULT_FETCH_WAIT
    return max_wait


def fetch_state(batch: int, expires: float | None, js_timeout: float, *, max_bytes: int | None = None,
                heartbeat: float | None = None, no_wait: bool | None = None,
                group: PullGroup | None = None, deliver: bool = True) -> Fetch:
    """One fetch's state machine: waiting ``expires`` seconds, or (None) a
    no-wait pull bounded by the context's ``js_timeout``; ``deliver`` False:
    no Delivered event per message, the face takes them from its result."""
    check_int("batch", batch, 1)
    check_int("max_bytes", max_bytes, 1, allow_none=True)
    expires = check_timeout(expires, what="expires")
    heartbeat = check_timeout(heartbeat, what="heartbeat")
    if expires is None:
        return Fetch(batch, max_bytes=max_bytes, js_timeout_ms=int(js_timeout * 1000), group=group, repull=True,
                     deliver=deliver)
    exp = max(1, int(expires * 1000))
    hb = int(heartbeat * 1000) if heartbeat else None
    return Fetch(batch, timeout_ms=exp + max(200, exp // 10), expires_ms=exp, max_bytes=max_bytes,
                 idle_heartbeat_ms=hb, no_wait=no_wait, group=group, repull=True, deliver=deliver)


def consume_state(max_messages: int | None, max_bytes: int | None, threshold_messages: int | None,
                  threshold_bytes: int | None, expires: float | None, heartbeat: float | None,
                  group: PullGroup | None) -> Consume:
    """The state machine of a continuous pull (``consume``/``messages``)."""
    check_int("max_messages", max_messages, 1, allow_none=True)
    check_int("max_bytes", max_bytes, 1, allow_none=True)
    check_int("threshold_messages", threshold_messages, 0, allow_none=True)
    check_int("threshold_bytes", threshold_bytes, 0, allow_none=True)
    if expires is None:
        raise make_error("ErrBadTimeout", "Invalid expires None")
    expires = check_timeout(expires, what="expires")
    heartbeat = check_timeout(heartbeat, what="heartbeat")
    return Consume(max_messages, max_bytes, expires_ms=int(expires * 1000),
                   idle_heartbeat_ms=int(heartbeat * 1000) if heartbeat else None,
                   threshold_messages=threshold_messages, threshold_bytes=threshold_bytes, group=group)


def ordered_state(engine: Engine, stream: str, filter_subject: str | None = None, deliver_policy: str = "all",
                  headers_only: bool = False, idle_heartbeat: float = 5.0, *, description: str | None = None,
                  filter_subjects: list[str] | None = None, opt_start_seq: int | None = None,
                  opt_start_time: str | None = None, retry: float = 1.0,
                  inactive_threshold: float = 2.0) -> _ordered.OrderedConsumer:
    """The state machine of an ordered consumer (ADR-17), its arguments checked (seconds -> ms)."""
    idle_heartbeat = check_timeout(idle_heartbeat, 5.0, what="idle_heartbeat")
    retry = check_timeout(retry, 1.0, what="retry")
    inactive_threshold = check_timeout(inactive_threshold, 2.0, what="inactive_threshold")
    if filter_subject is not None and not engine.check_subject(filter_subject, wildcard=True):
        raise make_error("ErrBadSubject", f"Invalid subject {filter_subject}")
    check_int("opt_start_seq", opt_start_seq, 1, allow_none=True)
    return _ordered.OrderedConsumer(
        stream, filter_subject=filter_subject, filter_subjects=filter_subjects, deliver_policy=deliver_policy,
        opt_start_seq=opt_start_seq, opt_start_time=opt_start_time, headers_only=headers_only,
        idle_heartbeat_ms=max(1, int(idle_heartbeat * 1000)), description=description,
        retry_ms=max(1, int(retry * 1000)), inactive_threshold_ms=max(1, int(inactive_threshold * 1000)))


class PullLoop:
    """What a face's continuous pulls (ConsumeContext, MessagesContext of
    the asyncio and the blocking face) share over the engine's Consume
    state machine: the inbox, sending the Pull requests, reconnect
    detection and what a silence means (Consume.EVENTS: Pull sent here,
    Delivered handed to the user by each face's loop, Warn and Stop through
    ``self._dispatch``).  ``consumer`` is the face's Consumer (``js.client``,
    ``next_subject``); the client's ``publish`` does not wait in either face."""

    def __init__(self, consumer: Any, state: Consume):
        self.consumer = consumer
        self.state = state
        self.client = consumer.js.client
        self._sub: Any = None  # the inbox subscription, once started
        self._inbox = ""
        self._reconnects: int | None = None
        self.warnings: list = []  # MessagesContext: the Warn events met while iterating
        self._dispatch = event_table(self, state.EVENTS, "_", inline=(Delivered,))

    def _pulls(self, events: Any) -> list:
        """Send the pull requests among ``events``; the others are returned
        (a pull that could not be sent becomes a Warn)."""
        rest = []
        for ev in events:
            if ev.__class__ is Pull:
                try:
                    self.client.publish(self.consumer.next_subject, ev.body, reply=self._inbox)
                except NatsError as e:
                    rest.append(Warn(e))
            else:
                rest.append(ev)
        return rest

    def _on_pull(self, ev: Pull) -> None:
        self._pulls((ev,))

    def _reconnected(self) -> bool:
        """The client reconnected since the last look (the first look: no)."""
        n = self.client.engine.stats.get("reconnects", 0)
        if self._reconnects is None:
            self._reconnects = n
            return False
        if n != self._reconnects:
            self._reconnects = n
            return True
        return False

    def _on_silence(self) -> list:
        """The heartbeat clock ran out: disconnected, reconnected (pull
        again) or a missed heartbeat; the events to handle."""
        if self.client.engine.status != CONNECTED:
            self.state.on_disconnect()
            return []
        if self._reconnected() or self.state.paused:
            return self._pulls(self.state.on_reconnect())
        return self._pulls(self.state.on_heartbeat_missed())
