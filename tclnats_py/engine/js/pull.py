"""Pulling from a consumer (ADR-13, ADR-37): one fetch, or a continuous consume.

A pull request is a publish to ``<api>.CONSUMER.MSG.NEXT.<stream>.<consumer>``
whose reply subject is an inbox the driver subscribes to; the server sends
stream messages there, then maybe a status message ending the request:

====  ============================  ==========================================
100   Idle Heartbeat / FlowControl  the request is alive; nothing to deliver
404   No Messages                   no_wait and nothing there: ends it
408   Request Timeout               expired (``Nats-Pending-*`` tell what it
                                    still owed); also "Interest Expired"
409   Consumer Deleted              ends it; an error (terminal for consume)
409   Consumer is push based        ends it; an error (terminal)
409   Server Shutdown               ends it (sent before the server closes
                                    its connections); an error for a Python
                                    fetch that got nothing, a warning for consume
409   Exceeded MaxWaiting, ...      ends it; a warning for consume
409   Message Size Exceeds MaxBytes ends it; not reported
400   Bad Request                   ends it; an error (terminal)
423   Nats-Wrong-Pin-Id             ends it; the pin is forgotten and the
      / Nats-Pin-Id mismatch        client pulls again without it (ADR-42)
503   (no responders)               no such consumer / no JetStream
====  ============================  ==========================================

:class:`Fetch` is one pull request with nats-tcl's ``fetch`` rules (timeouts
per CoreAPI.md "Requests Error Handling"); :class:`Consume` is the
self-refilling buffer of JetStream client API v2 (nats.go's Consume).
Both are fed every Msg arriving on the inbox and answer with *events*
(:mod:`tclnats_py.engine.js.events`) for the driver; neither touches a
socket or a clock.
"""

from __future__ import annotations

import json

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.headers import encode_headers
from tclnats_py.engine.js.events import HEARTBEAT, Delivered, Ended, Heartbeat, Pull, Stop, Warn, make
from tclnats_py.engine.js.priority import PullGroup

__all__ = ["classify", "status_error", "pending_of", "msg_size", "pull_request_body", "connection_gone",
           "Fetch", "Consume", "PENDING_MSGS", "PENDING_BYTES"]

PENDING_MSGS = "Nats-Pending-Messages"
PENDING_BYTES = "Nats-Pending-Bytes"


def classify(msg) -> str:
    """``msg``, ``heartbeat``, ``flow_control``, ``no_messages`` (404),
    ``timeout`` (408), ``conflict`` (409), ``bad_request`` (400),
    ``pin_mismatch`` (423), ``no_responders`` (503) or ``status`` (other)."""
    status = msg.status
    if status == 0:
        return "msg"
    if status == 100:
        return "flow_control" if "flow" in msg.description.lower() else "heartbeat"
    return {404: "no_messages", 408: "timeout", 409: "conflict", 400: "bad_request", 423: "pin_mismatch",
            503: "no_responders"}.get(status, "status")


def status_error(msg):
    """``(error, terminal)`` for a status that should be reported (ADR-37
    "Status handling"), or ``(None, False)`` for one that should not."""
    status, desc = msg.status, msg.description
    low = desc.lower()
    if status == 400:
        return make_error("ErrBadRequest", desc or "Bad Request"), True
    if status == 409:
        if low.startswith("consumer deleted"):
            return make_error("ErrConsumerDeleted", desc), True
        if "push based" in low:
            return make_error("ErrNotPullConsumer", desc), True
        if low.startswith("exceeded max"):
            return make_error("ErrPullRequestLimit", desc), False
        if "leadership" in low:
            return make_error("ErrConsumerLeadershipChanged", desc), False
        if low.startswith("server shutdown"):
            return make_error("ErrServerShutdown", desc), False
        return None, False  # Message Size Exceeds MaxBytes, ...
    if status == 503:
        return make_error("ErrNoResponders", "No responders available for the pull request"), False
    return None, False


def connection_gone(closed: bool, lost: bool) -> None:
    """Raise the error of a sync fetch that ended by its timeout, no
    responders or missed heartbeats on a connection that is closed when its
    wait ends (CoreAPI.md, nats-tcl's SyncPullRequest): ``closed`` by the
    user -> ErrConnectionClosed; ``lost`` (closed after an error: the
    servers are gone) -> ErrTimeout "Connection lost".  Nothing while the
    connection lives."""
    if closed:
        raise make_error("ErrConnectionClosed", "Connection closed")
    if lost:
        raise make_error("ErrTimeout", "Connection lost")


def pending_of(msg):
    """``(messages, bytes)`` a status says its pull request still owed, or None."""
    h = msg.headers
    if not h:
        return None
    h = dict(h)  # the stored lists, also of the asyncio face's Headers
    if PENDING_MSGS not in h:
        return None
    try:
        return int(h[PENDING_MSGS][0]), int((h.get(PENDING_BYTES) or ["0"])[0])
    except ValueError:
        return None


def msg_size(msg) -> int:
    """A message's size as the server counts it for max_bytes (ADR-37)."""
    n = len(msg.subject) + len(msg.reply or "") + len(msg.data)
    if msg.headers:
        n += len(encode_headers(msg.headers))
    return n


def pull_request_body(batch: int | None = 1, expires_ns: int | None = None, no_wait: bool = False,
                      max_bytes: int | None = None, idle_heartbeat_ns: int | None = None,
                      group: PullGroup | None = None) -> bytes:
    """The JSON of a pull request (``group``: its priority-group fields)."""
    body: dict = {}
    if expires_ns:
        body["expires"] = int(expires_ns)
    if batch is not None:
        body["batch"] = int(batch)
    if no_wait:
        body["no_wait"] = True
    if max_bytes:
        body["max_bytes"] = int(max_bytes)
    if idle_heartbeat_ns:
        body["idle_heartbeat"] = int(idle_heartbeat_ns)
    if group is not None:
        group.fields(body)
    return json.dumps(body, separators=(",", ":")).encode()


# the server keeps a pull request's batch in an int32
MAX_BATCH = (1 << 31) - 1


def _pos(name, v, allow_zero=False):
    if isinstance(v, bool) or not isinstance(v, int) or v < 0 or (v == 0 and not allow_zero) or v > MAX_BATCH:
        raise make_error("ErrInvalidArg", f"Invalid value for the pos_int option {name} : {v}")
    return v


class Fetch:
    """One pull request of up to ``batch`` messages.

    nats-tcl's rules: without ``timeout_ms`` it is a ``no_wait`` request
    (what is there now; the client waits at most ``js_timeout_ms``); with
    it, the server expires the request at ``expires_ms`` (default: 10 ms
    before the timeout, as nats.go v1) and the client gives up at
    ``timeout_ms``.  ``max_bytes`` caps the size; ``idle_heartbeat_ms`` asks
    for heartbeats, and two missed ones end the fetch (``on_heartbeat_missed``).

    The driver publishes :attr:`body` to the NEXT subject with its inbox as
    the reply, arms a timer of :attr:`timeout_ms` (and one of
    :attr:`heartbeat_timeout_ms`, re-armed on every message, if set), feeds
    each inbox message to :meth:`on_msg` and stops when :attr:`done`.

    Events: ``Delivered(msg, None)`` a message for the user;
    ``Ended(status_msg)`` the request ended by a status (nats-tcl's async
    callback gets ``timedOut=1`` and that message), ``Ended(None)`` it ended
    by a timeout, no responders or missed heartbeats (callback gets ``1``
    and an empty message); ``Heartbeat()`` the server is alive.  When the
    user closed the connection, nats-tcl invokes no callback at all; a sync
    fetch asks :meth:`result` (with ``closed``/``lost``) for its outcome.

    ``deliver=False`` is for a synchronous fetch, whose caller takes the
    messages from :meth:`result` at the end: a message then makes no
    ``Delivered`` event (the other events stay), so the per-message call
    builds no event at all.

    ``group`` (:class:`~tclnats_py.engine.js.priority.PullGroup`) puts the
    priority-group fields in the request and keeps the pin its messages
    carry.  A 423 (the pin sent is stale) forgets the pin; with ``repull`` the
    fetch goes on as ``Pull(body)``, the request again without the pin: the
    driver sends it to the same inbox and restarts its timeout; without
    ``repull`` the fetch ends by that status and the next one pulls unpinned.
    """

    EVENTS: tuple = (Delivered, Ended, Heartbeat)

    def __init__(self, batch: int = 1, *, timeout_ms: int | None = None, expires_ms: int | None = None,
                 max_bytes: int | None = None, idle_heartbeat_ms: int | None = None, js_timeout_ms: int = 5000,
                 no_wait: bool | None = None, group: PullGroup | None = None, repull: bool = False,
                 deliver: bool = True):
        self.batch = _pos("batch_size", batch)
        self.deliver = deliver
        self.group = group
        self.repull = repull and group is not None
        if self.repull:
            self.EVENTS = Fetch.EVENTS + (Pull,)
        if max_bytes is not None:
            _pos("max_bytes", max_bytes)
        if timeout_ms is not None:
            if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int) or timeout_ms <= 0:
                raise make_error("ErrBadTimeout", f"Invalid value for the timeout option timeout : {timeout_ms}")
            if expires_ms is None:
                expires_ms = timeout_ms - 10 if timeout_ms >= 20 else timeout_ms
            self.no_wait = bool(no_wait)
            self.timeout_ms = timeout_ms
        else:
            if expires_ms is not None:
                raise make_error("ErrInvalidArg", "-expires requires -timeout")
            self.no_wait = True
            self.timeout_ms = js_timeout_ms
        self.expires_ms = expires_ms
        self.max_bytes = max_bytes
        self.idle_heartbeat_ms = idle_heartbeat_ms
        self.messages: list = []
        self.bytes = 0
        self.status_msg = None
        self.outcome: str | None = None  # complete, status, timeout, no_responders, no_heartbeat, cancelled

    @property
    def body(self) -> bytes:
        return pull_request_body(self.batch, self.expires_ms * 1_000_000 if self.expires_ms else None,
                                 self.no_wait, self.max_bytes,
                                 self.idle_heartbeat_ms * 1_000_000 if self.idle_heartbeat_ms else None,
                                 self.group)

    @property
    def heartbeat_timeout_ms(self) -> int | None:
        return 2 * self.idle_heartbeat_ms if self.idle_heartbeat_ms else None

    @property
    def done(self) -> bool:
        return self.outcome is not None

    def on_msg(self, msg) -> list:
        if self.done:
            return []
        kind = classify(msg)
        if kind == "msg":
            if self.group is not None and msg.headers:
                self.group.saw(msg.headers)
            self.messages.append(msg)
            self.bytes += msg_size(msg)
            if len(self.messages) >= self.batch or (self.max_bytes and self.bytes >= self.max_bytes):
                self.outcome = "complete"
            return [make(Delivered, (msg, None))] if self.deliver else []
        if kind in ("heartbeat", "flow_control"):
            return [HEARTBEAT]
        if kind == "no_responders":
            self.outcome = "no_responders"
            return [Ended(None)]
        if kind == "pin_mismatch" and self.group is not None and self.group.lost() and self.repull:
            return [Pull(self.body)]
        self.outcome = "status"
        self.status_msg = msg
        return [Ended(msg)]

    def on_timeout(self) -> list:
        if self.done:
            return []
        self.outcome = "timeout"
        return [Ended(None)]

    def on_heartbeat_missed(self) -> list:
        if self.done:
            return []
        self.outcome = "no_heartbeat"
        return [Ended(None)]

    def on_wait_failed(self, code: str, heartbeat_wait: bool) -> bool:
        """A driver's wait for the next message ended with the error
        ``code`` (``heartbeat_wait``: it waited only the heartbeat timeout,
        not the rest of the fetch's time): True when that ends the fetch
        (ErrTimeout: the time is up or the heartbeats stopped; the inbox
        subscription ended with the connection: the time is up), False for
        an error the driver raises."""
        if code == "ErrTimeout" and heartbeat_wait:
            self.on_heartbeat_missed()
        elif code == "ErrTimeout" or code == "ErrBadSubscription":
            self.on_timeout()
        else:
            return False
        return True

    def cancel(self) -> None:
        if not self.done:
            self.outcome = "cancelled"

    @property
    def probe(self) -> bool:
        """A sync fetch that got nothing by a timeout or no responders should
        ask CONSUMER.INFO for the real cause (ErrStreamNotFound,
        ErrConsumerNotFound, ...) before raising ErrTimeout, as nats-tcl does
        (an unknown consumer makes a pull request go unanswered)."""
        return self.outcome in ("timeout", "no_responders") and not self.messages

    def result(self, *, closed: bool = False, lost: bool = False, raise_status: bool = False,
               subject: str = "") -> list:
        """The sync fetch's list, or its error (CoreAPI.md table, sync fetch):
        nothing by the timeout -> ErrTimeout; the connection lost ->
        ErrTimeout "Connection lost"; closed by the user -> ErrConnectionClosed
        (:func:`connection_gone`).
        ``raise_status`` (the Python faces, as nats.go's Fetch): with no
        messages, a terminal status error (400, 409 Consumer Deleted) or the
        409 Server Shutdown (ErrServerShutdown) is raised instead of an empty
        list.  ``subject``: the pull request's subject, named in the timeout's text."""
        if self.outcome in ("timeout", "no_responders", "no_heartbeat", None):
            connection_gone(closed, lost)
            if self.messages:
                return self.messages
            if self.outcome == "no_heartbeat":
                raise make_error("ErrNoHeartbeat", "No heartbeat received from the server")
            raise make_error("ErrTimeout", f"Sync pull request timeout, subject={subject}" if subject
                             else "Sync pull request timeout")
        if raise_status and self.outcome == "status" and not self.messages:
            err, terminal = status_error(self.status_msg)
            if err is not None and (terminal or err.code == "ErrServerShutdown"):
                raise err
        return self.messages


class Consume:
    """Continuous pulling into a buffer that refills (ADR-37 "Consume").

    Either ``max_messages`` (default 500) or ``max_bytes`` bounds what is
    requested and not yet delivered; when it drops below the threshold
    (default half) a new pull request tops it up.  Pull requests expire after
    ``expires_ms`` (default 30 s, at least 1 s) and ask for idle heartbeats
    every ``idle_heartbeat_ms`` (default: half of expires, 0.5 s to 30 s);
    two missed ones are a warning (ErrNoHeartbeat) after which the buffer
    is refilled from zero.

    Driver contract: send every ``Pull(body)`` to the consumer's NEXT
    subject with the inbox as reply; hand each ``Delivered(msg, None)`` to
    the user; report ``Warn(err)`` (not fatal) and ``Stop(err)`` (fatal:
    the consumer is gone or unusable); (re)arm a timer of
    :attr:`heartbeat_timeout_ms` on every inbox message, and call
    :meth:`on_heartbeat_missed` when it fires; call :meth:`on_disconnect`
    / :meth:`on_reconnect` on connection changes.

    ``group`` puts the priority-group fields in every pull and keeps the
    pin the messages carry; a 423 (stale pin) forgets it and pulls again
    without it.
    """

    EVENTS = (Pull, Delivered, Warn, Stop)

    def __init__(self, max_messages: int | None = None, max_bytes: int | None = None, *,
                 expires_ms: int = 30000, idle_heartbeat_ms: int | None = None,
                 threshold_messages: int | None = None, threshold_bytes: int | None = None,
                 group: PullGroup | None = None):
        self.group = group
        if max_messages is not None and max_bytes is not None:
            raise make_error("ErrInvalidArg", "max_messages and max_bytes are mutually exclusive")
        if expires_ms < 1000:
            raise make_error("ErrInvalidArg", f"expires must be at least 1000 ms, not {expires_ms}")
        if max_bytes is not None:
            self.max_bytes = _pos("max_bytes", max_bytes)
            self.max_messages = 1_000_000
            self.threshold_bytes = threshold_bytes if threshold_bytes is not None else self.max_bytes // 2
            if self.threshold_bytes > self.max_bytes:
                raise make_error("ErrInvalidArg", "threshold_bytes exceeds max_bytes")
        else:
            self.max_bytes = 0
            self.threshold_bytes = 0
            self.max_messages = _pos("max_messages", 500 if max_messages is None else max_messages)
        self.threshold_messages = (threshold_messages if threshold_messages is not None
                                   else max(self.max_messages // 2, 0))
        if self.threshold_messages > self.max_messages:
            raise make_error("ErrInvalidArg", "threshold_messages exceeds max_messages")
        self.expires_ms = expires_ms
        if idle_heartbeat_ms is None:
            idle_heartbeat_ms = min(max(expires_ms // 2, 500), 30000)
        if idle_heartbeat_ms > expires_ms // 2:
            raise make_error("ErrInvalidArg", "idle_heartbeat must be at most half of expires")
        self.idle_heartbeat_ms = idle_heartbeat_ms
        self.pending_msgs = 0
        self.pending_bytes = 0
        self.delivered = 0
        self.paused = False
        self.stopped: NatsError | None = None
        self._started = False
        # no responders: the next pull waits for the heartbeat clock, so a
        # missing consumer is retried at that pace, not in a tight loop
        self.backoff = False

    @property
    def heartbeat_timeout_ms(self) -> int:
        return 2 * self.idle_heartbeat_ms

    def _pull(self, events: list) -> None:
        if self.paused or self.stopped is not None or self.backoff:
            return
        if self.max_bytes:
            want = self.max_bytes - self.pending_bytes
            if want <= 0 or self.pending_bytes > self.threshold_bytes:
                return
            body = pull_request_body(self.max_messages, self.expires_ms * 1_000_000, False, want,
                                     self.idle_heartbeat_ms * 1_000_000, self.group)
            self.pending_bytes += want
            self.pending_msgs += self.max_messages
        else:
            want = self.max_messages - self.pending_msgs
            if want <= 0 or (self._started and self.pending_msgs > self.threshold_messages):
                return
            body = pull_request_body(want, self.expires_ms * 1_000_000, False, None,
                                     self.idle_heartbeat_ms * 1_000_000, self.group)
            self.pending_msgs += want
        events.append(Pull(body))

    def start(self) -> list:
        events: list = []
        self._pull(events)
        self._started = True
        return events

    def on_msg(self, msg) -> list:
        if self.stopped is not None:
            return []
        events: list = []
        kind = classify(msg)
        if kind == "msg":
            self.pending_msgs = max(0, self.pending_msgs - 1)
            if self.max_bytes:
                self.pending_bytes = max(0, self.pending_bytes - msg_size(msg))
            self.delivered += 1
            if self.group is not None and msg.headers:
                self.group.saw(msg.headers)
            events.append(make(Delivered, (msg, None)))
        elif kind in ("heartbeat", "flow_control"):
            return events
        elif kind == "pin_mismatch":
            # the pulls sent with the stale pin all end so; the first one
            # forgets it and the buffer is refilled unpinned, once
            if self.group is not None and self.group.lost():
                self.pending_msgs = self.pending_bytes = 0
        else:
            owed = pending_of(msg)
            if owed is not None:
                self.pending_msgs = max(0, self.pending_msgs - owed[0])
                self.pending_bytes = max(0, self.pending_bytes - owed[1])
            elif kind in ("no_messages", "timeout", "no_responders"):
                self.pending_msgs = self.pending_bytes = 0
            err, terminal = status_error(msg)
            if err is not None:
                if terminal:
                    self.stopped = err
                    return [Stop(err)]
                events.append(Warn(err))
                if kind == "no_responders":
                    self.backoff = True
        self._pull(events)
        return events

    def on_heartbeat_missed(self) -> list:
        """The driver's heartbeat clock ran out: a warning (unless this was
        the wait after no responders), and the buffer is refilled from zero."""
        if self.stopped is not None or self.paused:
            return []
        events: list = []
        if not self.backoff:
            events.append(Warn(make_error("ErrNoHeartbeat", "No heartbeat received from the server")))
        self.backoff = False
        self.pending_msgs = self.pending_bytes = 0
        self._pull(events)
        return events

    def on_disconnect(self) -> None:
        self.paused = True

    def on_reconnect(self) -> list:
        """Pull requests may be gone with the old server: start over."""
        self.paused = False
        self.backoff = False
        self.pending_msgs = self.pending_bytes = 0
        events: list = []
        self._pull(events)
        return events

    def stop(self) -> None:
        if self.stopped is None:
            self.stopped = make_error("ErrConsumerStopped", "Consume stopped")
