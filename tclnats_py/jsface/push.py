"""Push consumers for the Python faces: ``push_subscribe``'s arguments ->
the consumer to create or the one to bind, and what both faces'
``PushSubscription`` share (the engine's PushState, its events, the
messages it hands out).  Each face reads the deliver subject its own way."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.js.events import Delivered, event_table
from tclnats_py.engine.js.push import PushState
from tclnats_py.engine.validate import check_timeout
from tclnats_py.jsface.config import ConsumerConfig, _merge

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.engine.js.events import FlowReply
    from tclnats_py.jsface.info import ConsumerInfo

__all__ = ["PushBase", "check_push_args", "push_config", "bindable"]


def check_push_args(cb: Any, error_cb: Any, consumer: str | None, deliver_subject: str | None,
                    deliver_group: str | None, flow_control: bool, idle_heartbeat: float | None,
                    config: Any, kw: dict[str, Any]) -> None:
    """ErrInvalidArg for callbacks that are not callable, or consumer
    settings given with a consumer to bind."""
    if cb is not None and not callable(cb):
        raise make_error("ErrInvalidArg", f"Invalid callback {cb!r}")
    if error_cb is not None and not callable(error_cb):
        raise make_error("ErrInvalidArg", f"Invalid error callback {error_cb!r}")
    if consumer is not None and (deliver_subject or deliver_group or flow_control or idle_heartbeat is not None
                                 or config or kw):
        raise make_error("ErrInvalidArg", "binding to an existing consumer takes no consumer configuration")


def bindable(info: ConsumerInfo, stream: str, consumer: str) -> ConsumerInfo:
    """``info`` of the consumer to bind; ErrInvalidArg for a pull consumer."""
    if not info["config"].get("deliver_subject"):
        raise make_error("ErrInvalidArg", f"Consumer {stream}/{consumer} is a pull consumer: use "
                                          "stream.consumer(...).fetch/consume")
    return info


def push_config(new_inbox: Callable[[], str], deliver_subject: str | None, deliver_group: str | None,
                flow_control: bool, idle_heartbeat: float | None, config: Any, kw: dict[str, Any]) -> ConsumerConfig:
    """The config of the push consumer to create (deliver subject by default
    a new inbox); ErrInvalidArg for flow control without heartbeats."""
    if flow_control and not idle_heartbeat:
        raise make_error("ErrInvalidArg", "flow_control needs idle_heartbeat (the server requires both)")
    cfg = _merge(ConsumerConfig, config, kw)
    over: dict = {"deliver_subject": deliver_subject or cfg.deliver_subject or new_inbox()}
    if deliver_group is not None:
        over["deliver_group"] = deliver_group
    if flow_control:
        over["flow_control"] = True
    if idle_heartbeat is not None:
        over["idle_heartbeat"] = check_timeout(idle_heartbeat, what="idle_heartbeat")
    return cfg.replace(**over)


class PushBase:
    """A subscription to a push consumer's deliver subject, over the engine's
    :class:`~tclnats_py.engine.js.push.PushState` (flow control answered,
    idle heartbeats watched).  ``msg_class`` is the face's JsMsg."""

    msg_class: Any = None

    def __init__(self, js: Any, info: ConsumerInfo, cb: Callable[[Any], Any] | None,
                 error_cb: Callable[[Exception], Any] | None):
        cfg = info["config"]
        self.js = js
        self.info = info
        self.stream: str = info["stream_name"]
        self.name: str = info["name"]
        self.deliver_subject: str = cfg["deliver_subject"]
        self.deliver_group: str | None = cfg.get("deliver_group") or None
        hb = cfg.get("idle_heartbeat") or 0
        self.state = PushState(self.stream, self.name, int(hb / 1_000_000) if hb else None)
        self._dispatch = event_table(self, PushState.EVENTS, "_", inline=(Delivered,))  # see _events
        self._cb = cb
        self._error_cb = error_cb
        self.stopped: NatsError | None = None

    def __repr__(self) -> str:
        return f"<PushSubscription {self.stream}/{self.name} on {self.deliver_subject}>"

    def _events(self, events: list) -> list:
        """Carry out the engine's events; the messages for the user (each
        Delivered, made here: the per-message event, without a handler call)."""
        on = self._dispatch
        out = []
        for ev in events:
            if ev.__class__ is Delivered:
                out.append(self.msg_class(self.js, ev.msg))
            else:
                on[ev.__class__](ev)
        return out

    # -- the engine's events (see engine/js/push.py); Warn and Stop are each face's
    def _on_flow_reply(self, ev: FlowReply) -> None:
        self.js.client.publish(ev.subject, b"")

    @property
    def delivered(self) -> int:
        """Messages delivered to this subscription (flow control and heartbeats not counted)."""
        return self.state.delivered
