"""``nats::ordered_consumer``: the Tcl side of an ordered consumer (ADR-17)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tclnats_py._tclcross import TclError

from tclnats_py.engine.connection import CLOSED
from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.js import ordered as _ordered
from tclnats_py.engine.js.api import api_call
from tclnats_py.engine.js.events import Delivered, FlowReply, Reset, Retry, Stop, event_table
from tclnats_py.tclface.commands import tcl_commands
from tclnats_py.tclface.js.convert import _consumer_reply

if TYPE_CHECKING:  # names used in annotations only
    from tclnats_py.tclface.js.context import JetStream

__all__ = ["OrderedConsumer"]


@tcl_commands
class OrderedConsumer:
    """``nats::ordered_consumer`` (ADR-17) over ``_js.ordered.OrderedConsumer``.

    Messages arrive at the Tcl object's ``OnMsg`` method (so it can be
    wrapped from Tcl), which hands them here.  A reset runs in the Tcl
    object's ``Reset`` method, which waits for the new consumer as nats-tcl
    does; ``last_error``, ``Name`` and ``RetryInterval`` are its variables.
    """

    def __init__(self, js: JetStream, state: _ordered.OrderedConsumer, ns, callback, post, on_created=None):
        self.js = js
        self.conn = js.conn
        self.tk = js.tk
        self.state = state
        self.ns = ns
        self.callback = callback          # Tcl command prefix, or a Python callable (msg, meta)
        self.post = post
        self.on_created = on_created      # Python callable (info dict) after each creation
        self.sid = None
        self.timer = ""
        self.info = ()
        self.dead = False
        self.reset_code = ""
        # the engine's events: of each message (handlers take (event, Tcl
        # msg)), and of a failed re-creation (handlers take (event, code, text))
        self._dispatch = event_table(self, state.MSG_EVENTS)
        self._dispatch_failed = event_table(self, state.CREATE_FAILED_EVENTS)
        self.cmd = f"::tclnats::oc{next(js.js.ids)}"
        js.js.register(self, self.cmd)
        self._set("Name", "")
        self._set("RetryInterval", state.retry_ms)
        self._set("last_error", "")

    def _set(self, var, value):
        self.tk.call("set", f"{self.ns}::{var}", value)

    def _get(self, var):
        return self.tk.call("set", f"{self.ns}::{var}")

    def start(self) -> int:
        """Create the consumer; the Tcl side waits for the request id."""
        inbox = self.conn.engine.new_inbox()
        req = self.state.create_request(self.js.api, inbox, self.js.server_version)
        return self.js.run(api_call(req), lambda info: self._created(info, inbox))

    def _created(self, info, inbox):
        self.state.on_created(info)
        self.info = _consumer_reply(dict(info, config=dict(info.get("config") or {})))
        cb = ("::nats::SafeCallback", f"{self.ns}::my", "OnMsg")
        self.sid = self.conn.tcl_subscribe(inbox, cb, dictmsg=True, post=False)
        self._set("Name", self.state.name)
        self._restart_hb()
        self.conn._log("debug", f"Ordered consumer {self.state.name} subscribed to {self.state.stream}, "
                                f"stream_seq = {self.state.stream_seq}, filter = {self.state.filter_subject or ''}")
        if self.on_created is not None:
            self.on_created(info)
        return self.info

    def _error(self, err: NatsError):
        self.conn._log("warn", f"Ordered consumer {self.ns}: {err}")
        self._set("last_error", ("code", ("NATS", err.code), "errorMessage", str(err)))

    def _after(self, ms, method, *args):
        """Run a method of the Tcl object later (it may wait, like nats-tcl's)."""
        if self.timer:
            self.tk.call("after", "cancel", self.timer)
        self.timer = self.tk.call("after", int(ms), ("::nats::SafeCallback", f"{self.ns}::my", method, *args))

    def _restart_hb(self):
        self._after(self.state.heartbeat_timeout_ms, "MissingHb")

    def _unsubscribe(self):
        if self.sid is not None:
            self.conn.tcl_unsubscribe(self.sid)
            self.sid = None

    def _events(self, events, msg=None):
        on = self._dispatch
        for ev in events:
            on[ev.__class__](ev, msg)

    # -- the engine's events of a message (``msg``: the Tcl nats::msg)
    def on_delivered(self, ev: Delivered, msg) -> None:
        if callable(self.callback):
            self.callback(ev.msg, ev.meta)
        elif self.post:
            self.tk.call("after", 0, (*self.tk.splitlist(self.callback), msg))
        else:
            self.tk.call(*self.tk.splitlist(self.callback), msg)

    def on_flow_reply(self, ev: FlowReply, msg) -> None:
        self.conn.engine.publish(ev.subject, b"")
        self.conn.run()

    def on_reset(self, ev: Reset, msg) -> None:
        self._set("Name", "")
        self._unsubscribe()
        self._after(0, "Reset", ev.error.code)

    def c_missing_hb(self):
        """No heartbeat for 3 intervals: the state's Reset is carried out by
        the Tcl object's MissingHb method, which calls Reset next (so the
        events of on_heartbeat_missed are not dispatched here)."""
        self.timer = ""
        self.state.on_heartbeat_missed()
        self._unsubscribe()
        self._set("Name", "")

    def c_reset_begin(self, err_code):
        """Start recreating the consumer; the Tcl ``Reset`` method waits for it.
        Returns the request id, or "" when the consumer stops instead."""
        self.timer = ""
        if self.dead:
            return ""
        self.reset_code = err_code
        self._error(self.state.reset_error(err_code))
        if self.conn.engine.status == CLOSED:
            return self._stop(make_error("ErrConnectionClosed", "stopped"))
        self.state.resetting = True
        return self.start()

    def _stop(self, err):
        self.state.stop(err)
        self._error(err)
        return ""

    def c_reset_failed(self, code, text):
        if self.dead:
            return
        self.state.retry_ms = int(self._get("RetryInterval"))
        on = self._dispatch_failed
        for ev in self.state.on_create_failed(make_error(code, text)):
            on[ev.__class__](ev, code, text)

    # -- the engine's events of a failed re-creation (``code``, ``text``: its error)
    def on_stop(self, ev: Stop, code, text) -> None:
        self._stop(make_error(code, f"stopped due to {text}"))

    def on_retry(self, ev: Retry, code, text) -> None:
        self._error(make_error(code, f"failed to reset: {text}"))
        if self.conn.engine.status == CLOSED:
            self._stop(make_error("ErrConnectionClosed", "stopped"))
        else:
            self._after(ev.ms, "Reset", self.reset_code)  # the same reset, tried again

    def c_on_msg(self, msg):
        """Called by the Tcl object's OnMsg method with one delivered message."""
        if self.dead:
            return
        self._restart_hb()
        self._events(self.state.on_msg(self.conn.msg_from_tcl(msg)), msg)

    def c_info(self):
        return self.info

    def c_name(self):
        return self._get("Name")

    def c_destroy(self):
        self.dead = True
        self.state.stop()
        if self.timer:
            try:
                self.tk.call("after", "cancel", self.timer)
            except TclError:
                pass
            self.timer = ""
        if self.sid is not None and self.conn.engine.status != CLOSED:
            try:
                self._unsubscribe()
            except NatsError:
                pass
        self.sid = None
        self.js.js.unregister(self.cmd)
