"""Ordered consumers (ADR-17): in-order delivery that repairs itself.

An ephemeral push consumer with no acks, flow control and idle heartbeats,
kept in memory on the server.  The client tracks the last stream and
consumer sequences; when the consumer sequence jumps (a message lost), a
heartbeat names another last consumer sequence, or no heartbeat comes for
three intervals (consumer deleted, server restarted, client moved to
another server), the consumer is recreated from the next stream sequence.
This is nats-tcl's ``nats::ordered_consumer`` (and the base of KV watchers
and object reads).

Driver contract for :class:`OrderedConsumer`:

1. subscribe to a fresh inbox, send :meth:`create_request` (with that
   inbox) as a core request, pass the decoded reply to :meth:`on_created`
   (errors of this first creation go to the user);
2. feed every message of the inbox to :meth:`on_msg`, (re)arm a timer of
   :attr:`heartbeat_timeout_ms` on each one and call
   :meth:`on_heartbeat_missed` when it fires;
3. carry out the events (:mod:`tclnats_py.engine.js.events`) of
   :meth:`on_msg` and :meth:`on_heartbeat_missed` (:attr:`MSG_EVENTS`):

   ``Delivered(msg, meta)``  hand the message to the user (in order)
   ``FlowReply(subject)``    answer flow control / a stalled heartbeat
   ``Reset(error)``          unsubscribe the inbox, report ``error`` as an
                             async error (the consumer's last_error), then
                             go to 1 with a new inbox, passing a failure to
                             :meth:`on_create_failed`

   and those of :meth:`on_create_failed` (:attr:`CREATE_FAILED_EVENTS`):

   ``Retry(ms, error)``      report ``error``, try step 1 again after ms
   ``Stop(error)``           report ``error``, unsubscribe, give up
"""

from __future__ import annotations

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.subjects import valid_wildcard_subject
from tclnats_py.engine.js.api import check_name
from tclnats_py.engine.js.events import Delivered, FlowReply, Reset, Retry, Stop, make
from tclnats_py.engine.js.meta import CONSUMER_STALLED, LAST_CONSUMER, parse_metadata

__all__ = ["OrderedConsumer", "DELIVER_POLICIES", "is_heartbeat", "is_flow_control"]

DELIVER_POLICIES = ("all", "last", "new", "by_start_sequence", "by_start_time", "last_per_subject")
_NS_MS = 1_000_000
_ACK_WAIT_MS = 22 * 3600 * 1000  # "something large", as nats.go (ADR-17)


def is_heartbeat(msg) -> bool:
    return msg.status == 100 and "flow" not in msg.description.lower()


def is_flow_control(msg) -> bool:
    return msg.status == 100 and "flow" in msg.description.lower()


class OrderedConsumer:
    """State of one ordered consumer on ``stream``."""

    MSG_EVENTS = (Delivered, FlowReply, Reset)
    CREATE_FAILED_EVENTS = (Retry, Stop)
    EVENTS = MSG_EVENTS + CREATE_FAILED_EVENTS

    def __init__(self, stream: str, *, filter_subject: str | None = None, filter_subjects=None,
                 deliver_policy: str = "all", opt_start_seq: int | None = None, opt_start_time: str | None = None,
                 headers_only: bool = False, idle_heartbeat_ms: int = 5000, description: str | None = None,
                 inactive_threshold_ms: int = 2000, retry_ms: int = 10000, replay_policy: str | None = None):
        check_name("stream", stream)
        if deliver_policy not in DELIVER_POLICIES:
            raise make_error("ErrInvalidArg", f"Invalid value for the enum deliver_policy : {deliver_policy}; "
                                              f"allowed values: {' '.join(DELIVER_POLICIES)}")
        if filter_subject and filter_subjects:
            raise make_error("ErrInvalidArg", "filter_subject and filter_subjects are mutually exclusive")
        for subject in [filter_subject] + list(filter_subjects or ()):
            if subject is not None and not valid_wildcard_subject(subject):
                raise make_error("ErrInvalidArg", f"Invalid filter subject {subject}")
        if isinstance(idle_heartbeat_ms, bool) or not isinstance(idle_heartbeat_ms, int) or idle_heartbeat_ms <= 0:
            raise make_error("ErrInvalidArg", f"Invalid value for the ns option idle_heartbeat : {idle_heartbeat_ms}")
        self.stream = stream
        self.filter_subject = filter_subject
        self.filter_subjects = list(filter_subjects) if filter_subjects else None
        self.deliver_policy = deliver_policy
        self.opt_start_seq = opt_start_seq
        self.opt_start_time = opt_start_time
        self.headers_only = bool(headers_only)
        self.idle_heartbeat_ms = idle_heartbeat_ms
        self.description = description
        self.inactive_threshold_ms = inactive_threshold_ms
        self.retry_ms = retry_ms
        self.replay_policy = replay_policy
        self.stream_seq = 0
        self.consumer_seq = 0
        self.name = ""          # "" while a reset is in progress (nats-tcl)
        self.info: dict | None = None
        self.resets = 0
        self.resetting = False
        self.stopped: NatsError | None = None
        self.last_error: NatsError | None = None

    @property
    def heartbeat_timeout_ms(self) -> int:
        return 3 * self.idle_heartbeat_ms

    def config(self, deliver_subject: str) -> dict:
        """The consumer config (wire units) for the next creation."""
        cfg = {"deliver_subject": deliver_subject, "ack_policy": "none", "max_deliver": 1, "flow_control": True,
               "idle_heartbeat": self.idle_heartbeat_ms * _NS_MS, "mem_storage": True, "num_replicas": 1,
               "inactive_threshold": self.inactive_threshold_ms * _NS_MS, "ack_wait": _ACK_WAIT_MS * _NS_MS}
        if self.description:
            cfg["description"] = self.description
        if self.headers_only:
            cfg["headers_only"] = True
        if self.filter_subject:
            cfg["filter_subject"] = self.filter_subject
        if self.filter_subjects:
            cfg["filter_subjects"] = list(self.filter_subjects)
        if self.replay_policy:
            cfg["replay_policy"] = self.replay_policy
        if self.stream_seq > 0:
            # a re-creation continues after the last message seen; before
            # any, the original start still holds (nothing was missed)
            cfg["deliver_policy"] = "by_start_sequence"
            cfg["opt_start_seq"] = self.stream_seq + 1
        else:
            cfg["deliver_policy"] = self.deliver_policy
            if self.opt_start_seq is not None:
                cfg["opt_start_seq"] = self.opt_start_seq
            if self.opt_start_time is not None:
                cfg["opt_start_time"] = self.opt_start_time
        return cfg

    def create_request(self, api, deliver_subject: str, server_version: str | None = None):
        """The CONSUMER.CREATE request step (an ephemeral consumer)."""
        return api.consumer_create_request(self.stream, self.config(deliver_subject), "create",
                                           server_version=server_version)

    def on_created(self, info: dict) -> None:
        self.info = info
        self.name = info.get("name", "")
        delivered = info.get("delivered") or {}
        self.stream_seq = delivered.get("stream_seq", self.stream_seq)
        self.consumer_seq = delivered.get("consumer_seq", 0)
        self.resetting = False

    def on_create_failed(self, err: NatsError) -> list:
        """A re-creation failed: give up when the stream is gone or the
        connection closed for good, else try again after ``retry_ms``."""
        self.last_error = err
        if err.code in ("ErrStreamNotFound", "ErrConnectionClosed"):
            self.stopped = err
            return [Stop(err)]
        return [Retry(self.retry_ms, err)]

    def reset_error(self, code: str) -> NatsError:
        """The error a reset for ``code`` reports (the consumer's last_error)."""
        return make_error(code, f"reset with opt_start_seq = {self.stream_seq + 1} due to {code}")

    def _reset(self, code: str) -> list:
        if self.resetting or self.stopped is not None:
            return []
        self.resetting = True
        self.resets += 1
        self.name = ""
        err = self.last_error = self.reset_error(code)
        return [Reset(err)]

    def on_msg(self, msg) -> list:
        if self.resetting or self.stopped is not None:
            return []  # left over from the consumer being replaced
        if msg.status == 100:
            if is_flow_control(msg):
                return [FlowReply(msg.reply)] if msg.reply else []
            events = []
            stalled = msg.header(CONSUMER_STALLED)
            if stalled:
                events.append(FlowReply(stalled))
            last = msg.header(LAST_CONSUMER)
            if last is not None:
                try:
                    if int(last) != self.consumer_seq:
                        events += self._reset("ErrConsumerSequenceMismatch")
                except ValueError:
                    pass
            return events
        if msg.status:
            return []  # other statuses do not reach push consumers; ignore
        meta = parse_metadata(msg.reply, msg.subject)
        if meta["consumer_seq"] != self.consumer_seq + 1:
            return self._reset("ErrConsumerSequenceMismatch")
        self.consumer_seq = meta["consumer_seq"]
        self.stream_seq = meta["stream_seq"]
        return [make(Delivered, (msg, meta))]

    def on_heartbeat_missed(self) -> list:
        return self._reset("ErrConsumerNotActive")

    def stop(self, err: NatsError | None = None) -> None:
        if self.stopped is None:
            self.stopped = err or make_error("ErrConsumerStopped", "Ordered consumer stopped")
