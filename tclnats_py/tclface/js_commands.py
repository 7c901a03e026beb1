"""What the JetStream, Key-Value, Object Store and service objects of a Tcl
connection use: requests whose result is made in Python, and conversions of
Tcl messages, dicts, headers and payloads.

tclface/js.py (``$js ...``, ``$kv ...``) and tclface/micro.py
(``nats::service``) drive a connection through the methods of
:class:`JsCommands`: :meth:`~JsCommands.start_request` starts a request
whose outcome an :class:`~tclnats_py.tclface.results.Op` turns into a Tcl
result (or into a follow-up request: js.py's ``Chain``).  The ops
``$conn js_new`` and ``$conn service_new`` make those objects; js.py itself
is imported at first use (results.py's ``load_js``), not by
``package require nats``.
"""

from __future__ import annotations

from tclnats_py.engine.connection import Msg
from tclnats_py.errors import make_error
from tclnats_py.tclface.conn_commands import CoreCommands
from tclnats_py.tclface.convert import to_bytes
from tclnats_py.tclface.results import Op, load_js

__all__ = ["JsCommands"]


class JsCommands(CoreCommands):
    """Requests with results made in Python, and the conversions js.py and micro.py use."""

    def start_request(self, subject, payload: bytes, timeout, finish, headers=None, max_msgs=None,
                      gather=None, check_subj=True, async_done=None) -> int:
        """A request whose result is made in Python (JetStream operations)."""
        op = Op(finish, gather, async_done)
        if gather is not None and gather.callback is not None and async_done is None:
            op.async_done = lambda outcome, req, out: None
        req = self.engine.request(subject, payload, int(timeout), headers, max_msgs, op, check_subj)
        self._note_internal_subs(req)
        self.last_rid = req.id
        if finish is not None and op.async_done is None:
            self.run_and_write()  # synchronous: the result comes in results($id)
        else:
            self.tk.call("set", f"{self.ns}::requests({req.id})", "pending")
            self.run()
        return req.id

    def _op(self, rid) -> Op:
        req = self.engine.requests.get(rid)
        if req is not None and isinstance(req.handler, Op):
            return req.handler
        raise make_error("ErrInvalidArg", f"Invalid request ID {rid}")

    def map_error(self, rid, from_code, to_code, text):
        def remap(err):
            raise make_error(to_code, text) from None
        self._op(rid).on_error[from_code] = remap

    def on_error(self, rid, code, fn):
        self._op(rid).on_error[code] = fn

    def after_result(self, rid, fn):
        self._op(rid).after.append(fn)

    def make_async(self, rid, done):
        op = self._op(rid)
        op.async_done = done

    def msg_dict(self, msg: Msg, extra=()):
        return self._msg_value(msg, True, msg.sid) + tuple(extra)

    def dict_from_tcl(self, value) -> dict:
        items = self.tk.splitlist(value)
        if len(items) % 2:
            raise make_error("ErrInvalidArg", "Invalid message")
        return {str(items[i]): items[i + 1] for i in range(0, len(items), 2)}

    def headers_from_tcl(self, header):
        return self._headers_from_tcl(header) if header else None

    def payload_bytes(self, value) -> bytes:
        if self.utf8 and isinstance(value, str):
            return value.encode("utf-8")
        return to_bytes(value)

    def msg_from_tcl(self, value) -> Msg:
        d = self.dict_from_tcl(value)
        hdr = self.headers_from_tcl(d.get("header", ""))
        return Msg(str(d.get("subject", "")), to_bytes(d.get("data", "")), str(d.get("reply", "")) or None,
                   hdr or None)

    def tcl_subscribe(self, subject, callback, dictmsg=True, post=True) -> int:
        cb = callback if isinstance(callback, str) else tuple(callback)
        sub = self.engine.subscribe(subject, "", 0, handler=(cb, dictmsg, 1 if post else 0))
        self.tk.call("set", f"{self.ns}::subscriptions({sub.sid})",
                     ("subj", subject, "queue", "", "callback", cb))
        self.run()
        return sub.sid

    def tcl_unsubscribe(self, sid):
        if sid in self.engine.subs and self.engine.status != "closed":
            self.engine.unsubscribe(sid)
        self.tk.call("unset", "-nocomplain", f"{self.ns}::subscriptions({sid})")
        self.run()

    def c_js_new(self, ns, timeout, api_prefix, domain, trace, max_pending=4000, stall_ms=200):
        js = load_js()
        JetStream, JsBridge = js.JetStream, js.JsBridge
        if self.js is None:
            self.js = JsBridge(self)
        return JetStream(self.js, ns, timeout, api_prefix, domain, trace, max_pending, stall_ms).cmd

    def c_service_new(self, serve, name, version, description, metadata, queue_group):
        """A ``nats::service`` (tcl/service.tcl): the command of its Python side."""
        from tclnats_py.tclface.micro import TclService
        return TclService(self, serve, name, version, description, metadata, queue_group).cmd
