"""The engine's effects carried out on a Tcl connection: the dispatch loop
and the handlers of what the user sees.

:meth:`ConnectionEffects.run` drains :meth:`Engine.take` and hands each
effect to its handler through the connection's table (``self.effects``,
built once by :func:`tclnats_py.engine.driver.effect_table`; an effect class
it does not know raises UnknownEffect).  The handlers here turn deliveries,
request outcomes, status, errors, server INFO and pings into Tcl variables
and callbacks; the I/O ones (open, TLS, close, timers, flush) are in io.py.

Deliveries are gathered in ``self.out`` (five values each: post flag,
callback, subject, message, reply) and handed to ``::nats::_deliver`` in one
call per round of effects, or to the readable handler that asked for them.
"""

from __future__ import annotations

from tclnats_py._tclcross import TclError
from tclnats_py.engine.connection import CONNECTED, Msg
from tclnats_py.engine.effects import (Deliver, DeliverMany, ErrorChanged, InfoReceived, Log, PingDone,
                                       PongReceived, RequestDone, RequestReply, StatusChanged, SubGone,
                                       SubsCleared, UnknownEffect)
from tclnats_py.errors import NatsError, make_error
from tclnats_py.tclface.convert import headers_to_tcl
from tclnats_py.tclface.io import ConnectionIO
from tclnats_py.tclface.results import Op, error_reply, reply
from tclnats_py.tclface.values import tcl_value

__all__ = ["ConnectionEffects", "Sync", "SYNC_PLAIN", "SYNC_DICT"]


class Sync:
    """The handler of a synchronous core request (the caller waits in Tcl
    for ``results($id)``, which on_request_done sets)."""

    __slots__ = ("dictmsg",)

    def __init__(self, dictmsg: bool):
        self.dictmsg = dictmsg


SYNC_PLAIN, SYNC_DICT = Sync(False), Sync(True)


class ConnectionEffects(ConnectionIO):
    """The dispatch loop and the handlers of the effects the user sees."""

    def run(self, collect=None, writing=False):
        """Carry out the engine's effects until there are none left.

        Deliveries go to ``::nats::_deliver`` (posted to the event loop), or,
        given a ``collect`` list, are added to it for the caller to run;
        ``writing``: the caller writes at once (see Engine.take).  A handler
        may run the effects it causes itself (a nested run): each run keeps
        its own list of deliveries."""
        eng = self.engine
        table = self.effects
        outer = self.out
        try:
            while True:
                fx = eng.take(writing)
                if not fx:
                    break
                self.out = deliveries = []
                for f in fx:
                    try:
                        handler = table[f.__class__]
                    except KeyError:
                        raise UnknownEffect(f.__class__) from None
                    handler(f)
                if deliveries:
                    if collect is not None:
                        collect.extend(deliveries)
                        continue
                    try:
                        self.tk.call("::nats::_deliver", tuple(deliveries))
                    except TclError as e:
                        self._log("error", f"delivery failed: {e}")
        finally:
            self.out = outer
        # handshake traffic goes out at once; user traffic waits for the flusher
        if self.sock and eng.status != CONNECTED and eng.want_write:
            self._write(eng.data_to_send())
        if self.ended_objs:
            # Tcl objects of operations that ended (a fetch ID)
            ended, self.ended_objs = self.ended_objs, []
            for obj in ended:
                self.tk.call("catch", (obj, "destroy"))

    # ------------------------------------------------------------ status
    def on_status_changed(self, e: StatusChanged) -> None:
        self._push_servers()
        if e.status != CONNECTED and self.tcl_pending:
            # publishes framed in Tcl before the connection broke go to the
            # engine's reconnect buffer, in order
            self._save_tcl_pubs()
        self.tk.call("set", f"{self.ns}::status", e.status)
        self._fast_path()
        self._wake_room()

    def on_error_changed(self, e: ErrorChanged) -> None:
        err = e.error
        if err is None:
            value: tuple | str = ""
        elif isinstance(err, NatsError):  # (the engine reports no other kind)
            value = ("code", ("NATS", err.code), "errorMessage", str(err))
        else:
            raise TypeError(f"an asynchronous error that is not a NatsError: {err!r}")
        self.tk.call("set", f"{self.ns}::last_error", value)

    def on_log(self, e: Log) -> None:
        self._log(e.level, e.text)

    def on_info_received(self, e: InfoReceived) -> None:
        # update the array in place: unsetting the whole variable would drop
        # the user's traces on it (CoreAPI.md: trace serverInfo to learn e.g.
        # of lame duck mode)
        tk = self.tk
        var = f"{self.ns}::serverInfo"
        info = e.info
        for old in tk.splitlist(tk.call("array", "names", var)):
            if old not in info:
                tk.call("unset", f"{var}({old})")
        tk.call("array", "set", var, tcl_value(info))
        self._fast_path()

    def on_pong_received(self, e: PongReceived) -> None:
        self.tk.call("set", f"{self.ns}::pong", 1)

    def on_ping_done(self, e: PingDone) -> None:
        res = {True: 1, False: 0, None: "closed"}[e.ok]
        self.tk.call("set", f"{self.ns}::PingResult({e.ping.id})", res)

    # ------------------------------------------------------------ subscriptions
    def on_sub_gone(self, e: SubGone) -> None:
        self.tk.call("unset", "-nocomplain", f"{self.ns}::subscriptions({e.sid})")
        self._fast_unsub(e.sid)

    def on_subs_cleared(self, e: SubsCleared) -> None:
        self._fast("subclear")
        self.tk.call("array", "unset", f"{self.ns}::subscriptions")
        self.tk.call("set", f"{self.ns}::requestsInboxPrefix", "")
        self.noted_mux = None

    def _msg_value(self, msg: Msg, dictmsg: bool, sid):
        data: bytes | str = msg.data
        if self.utf8:
            data = msg.data.decode("utf-8", "replace")
        if not dictmsg:
            return data
        return ("header", headers_to_tcl(msg.headers), "data", data, "subject", msg.subject,
                "reply", msg.reply or "", "sub_id", sid if sid is not None else "")

    # ------------------------------------------------------------ deliveries
    def on_deliver(self, e: Deliver) -> None:
        """A message for a subscription's callback, counted against its
        pending limits while a read's deliveries wait to run.  (The engine
        batches deliveries for this face, see state.py: what still comes one
        by one is on_deliver_many's step for one message, written out.)"""
        sub = e.sub
        msg = e.msg
        cb, dictmsg, post = sub.handler
        batch = self.batch
        if batch is not None:
            n = len(msg.data)
            p = self.sub_pending.get(sub)
            if p is None:
                p = self.sub_pending[sub] = [0, 0]
            max_msgs, max_bytes = self.limits
            if p[0] >= max_msgs or p[1] + n > max_bytes:
                self._slow_consumer(sub)
                return
            p[0] += 1
            p[1] += n
            b = batch.get(sub)
            if b is None:
                batch[sub] = [1, n]
            else:
                b[0] += 1
                b[1] += n
        self.out.extend((post, cb, msg.subject,
                         msg.data if not (dictmsg or self.utf8) else self._msg_value(msg, dictmsg, sub.sid),
                         msg.reply or ""))

    def on_deliver_many(self, e: DeliverMany) -> None:
        """Messages for one subscription, in order: on_deliver for each,
        with what is the same for all of them looked up once."""
        sub = e.sub
        cb, dictmsg, post = sub.handler
        out = self.out
        convert = dictmsg or self.utf8
        batch = self.batch
        if batch is None:
            for msg in e.msgs:
                out.extend((post, cb, msg.subject, msg.data if not convert else self._msg_value(msg, dictmsg, sub.sid),
                            msg.reply or ""))
            return
        p = self.sub_pending.get(sub)
        if p is None:
            p = self.sub_pending[sub] = [0, 0]
        b = None
        max_msgs, max_bytes = self.limits
        for msg in e.msgs:
            n = len(msg.data)
            if p[0] >= max_msgs or p[1] + n > max_bytes:
                self._slow_consumer(sub)
                continue
            p[0] += 1
            p[1] += n
            if b is None:
                b = batch.get(sub)
                if b is None:
                    b = batch[sub] = [0, 0]
            b[0] += 1
            b[1] += n
            out.extend((post, cb, msg.subject, msg.data if not convert else self._msg_value(msg, dictmsg, sub.sid),
                        msg.reply or ""))

    def _slow_consumer(self, sub):
        """A delivery past pending_msgs_limit / pending_bytes_limit is
        dropped; the first of an episode is reported as an async error (the
        episode ends when the subscription's callbacks have caught up)."""
        if sub in self.slow_subs:
            return
        self.slow_subs.add(sub)
        self._report_slow(sub)

    def batch_done(self):
        """The deliveries of the latest read still running have all run."""
        if not self.batches:
            return
        pend = self.sub_pending
        for sub, (m, n) in self.batches.pop().items():
            p = pend.get(sub)
            if p is None:
                continue
            p[0] -= m
            p[1] -= n
            if p[0] <= 0:
                del pend[sub]
                self.slow_subs.discard(sub)

    # ------------------------------------------------------------ requests
    def on_request_done(self, e: RequestDone) -> None:
        """A request ended (``e.outcome``: msg, timeout, no_responders, lost,
        closed): its result for the Tcl caller waiting for results($id), or
        its callback."""
        req = e.req
        outcome = e.outcome
        out = self.out
        h = req.handler
        ns = self.ns
        if h.__class__ is Sync:
            # a synchronous request: the Tcl call waits for results($id),
            # the result in call()'s form, and needs no Python call to fetch it
            if outcome == "msg":
                msg = req.msg
                r = (0, self._msg_value(msg, h.dictmsg, msg.sid))
            else:
                r = error_reply(self.outcome_error(outcome, req))
            self.tk.setvar(f"{ns}::results({req.id})", r)
            return
        if isinstance(h, Op):
            if h.gather is not None and not h.gather.done:
                h.gather.done = True
                h.gather.on_end(outcome, req, out)
            if h.async_done is not None:
                self.tk.call("unset", "-nocomplain", f"{ns}::requests({req.id})")
                h.async_done(outcome, req, out)
                return
            # the result is made now, for results($id) (see Sync above)
            self.tk.setvar(f"{ns}::results({req.id})", self._op_result(h, outcome, req))
            return
        if h is None:
            # a synchronous gathering request (max_msgs): the list of replies
            if outcome == "msg" or (outcome == "timeout" and req.msgs):
                r = (0, tuple(self._msg_value(m, True, m.sid) for m in req.msgs))
            elif outcome == "no_responders":
                # nats-tcl names the subject here (and not for a plain request)
                r = error_reply(make_error("ErrNoResponders", f"No responders available for request to {req.subject}"))
            else:
                r = error_reply(self.outcome_error(outcome, req))
            self.tk.setvar(f"{ns}::results({req.id})", r)
            return
        self.tk.call("unset", "-nocomplain", f"{ns}::requests({req.id})")
        cb, dictmsg, old_style = h
        if outcome == "msg":
            if not old_style:
                self._post_req(out, cb, 0, self._msg_value(req.msg, dictmsg, req.msg.sid))
        elif outcome == "no_responders":
            if not old_style:
                self._post_req(out, cb, 1, self._msg_value(req.msg, dictmsg, req.msg.sid))
        elif outcome == "timeout" or outcome == "lost":
            self._post_req(out, cb, 1, "")
        elif outcome == "closed":
            if old_style:
                # a pending JetStream fetch is told it is over
                self._post_req(out, cb, 1, "")

    def outcome_msg(self, outcome, req) -> Msg:
        """The reply of a finished request, or the error its outcome means."""
        if outcome == "msg":
            return req.msg
        raise self.outcome_error(outcome, req)

    @staticmethod
    def outcome_error(outcome, req) -> NatsError:
        """The error a request's outcome (other than "msg") means."""
        if outcome == "timeout":
            return make_error("ErrTimeout", f"Request to {req.subject} timed out")
        if outcome == "no_responders":
            return make_error("ErrNoResponders", "No responders available for request")
        if outcome == "lost":
            return make_error("ErrTimeout", "Connection lost")
        return make_error("ErrConnectionClosed", "Connection closed")

    def _op_result(self, op: Op, outcome, req):
        """The result of a finished synchronous operation in call()'s form."""
        try:
            return reply(op.result(outcome, req))
        except NatsError as e:
            return error_reply(e)
        except Exception as e:
            return self._internal_error("a request's result", e)

    def _post_req(self, out, cb, timed_out, value):
        # request callbacks have the signature {timedOut msg}
        out.extend((2, cb, timed_out, value, ""))

    def on_request_reply(self, e: RequestReply) -> None:
        """One reply of a request that gathers several (max_msgs, or a
        JetStream fetch)."""
        req = e.req
        msg = e.msg
        out = self.out
        h = req.handler
        if isinstance(h, Op):
            g = h.gather
            if g is None or g.done:
                return
            if g.on_msg(req, msg, out):
                g.done = True
                if req.done:
                    return  # the engine ended it too (its last expected message)
                # the gatherer has what it wants: end the request now
                self.engine.cancel_request(req.id)
                if req.sub is not None:
                    self.tk.call("unset", "-nocomplain", f"{self.ns}::subscriptions({req.sub.sid})")
                if h.async_done is not None:
                    self.tk.call("unset", "-nocomplain", f"{self.ns}::requests({req.id})")
                    h.async_done("msg", req, out)
                elif h.gather.callback is None:
                    self.tk.setvar(f"{self.ns}::results({req.id})", self._op_result(h, "msg", req))
                else:
                    self.tk.call("unset", "-nocomplain", f"{self.ns}::requests({req.id})")
            return
        if h is None or h.__class__ is Sync:
            return  # gathered in req.msgs for the synchronous caller
        cb, dictmsg, old_style = h
        self._post_req(out, cb, 1 if msg.no_responders else 0, self._msg_value(msg, True, msg.sid))
