"""A push consumer's deliveries (the server sends to a deliver subject).

For the subscription a face makes on the deliver subject (with the deliver
group as its queue), :class:`PushState` sorts what arrives into events
(:mod:`tclnats_py.engine.js.events`):

* a message with a JetStream ack reply: ``Delivered(msg, None)``;
* ``100 FlowControl Request``: answer it (``FlowReply(msg.reply)``) so the
  server goes on sending;
* ``100 Idle Heartbeat``: the consumer is alive; a ``Nats-Consumer-Stalled``
  header asks the client to answer on that subject (``FlowReply``: flow
  control that a heartbeat carries after a lost FlowControl request);
* ``409 Consumer Deleted`` and other statuses: ``Stop(err)`` / ``Warn(err)``.

With idle heartbeats on, a face arms a timer of :attr:`heartbeat_timeout_ms`
(twice the heartbeat, re-armed on everything that arrives) and calls
:meth:`on_heartbeat_missed` when it fires: ``Warn(ErrNoHeartbeat)``.
"""

from __future__ import annotations

from tclnats_py.errors import make_error
from tclnats_py.engine.js.events import Delivered, FlowReply, Stop, Warn, make
from tclnats_py.engine.js.meta import CONSUMER_STALLED
from tclnats_py.engine.js.pull import classify, status_error

__all__ = ["PushState"]


class PushState:
    """See the module docstring."""

    EVENTS = (Delivered, FlowReply, Warn, Stop)

    def __init__(self, stream: str, consumer: str, idle_heartbeat_ms: int | None = None):
        self.stream = stream
        self.consumer = consumer
        self.idle_heartbeat_ms = idle_heartbeat_ms or None
        self.delivered = 0
        self.flow_controls = 0
        self.heartbeats = 0

    @property
    def heartbeat_timeout_ms(self) -> int | None:
        return 2 * self.idle_heartbeat_ms if self.idle_heartbeat_ms else None

    def on_msg(self, msg) -> list:
        kind = classify(msg)
        if kind == "msg":
            self.delivered += 1
            return [make(Delivered, (msg, None))]
        if kind == "flow_control":
            self.flow_controls += 1
            return [FlowReply(msg.reply)] if msg.reply else []
        if kind == "heartbeat":
            self.heartbeats += 1
            stalled = msg.header(CONSUMER_STALLED)
            return [FlowReply(stalled)] if stalled else []
        err, terminal = status_error(msg)
        if err is None:
            return []
        return [Stop(err) if terminal else Warn(err)]

    def on_heartbeat_missed(self) -> list:
        return [Warn(make_error(
            "ErrNoHeartbeat", f"No heartbeat from push consumer {self.stream}/{self.consumer} for "
                              f"{self.heartbeat_timeout_ms} ms"))]
