"""A fetch of the Tcl face (``$js fetch``): one pull request."""

from __future__ import annotations

from tclnats_py.errors import NatsError
from tclnats_py.engine.js.events import Delivered, Ended, Heartbeat, Pull, event_table
from tclnats_py.engine.js.pull import Fetch

__all__ = ["PullRequest"]


class PullRequest:
    """A fetch for the Tcl face: the request's messages go to a ``_js``
    Fetch (ADR-13 rules); its events become fetch callbacks, its result the
    sync fetch's list."""

    def __init__(self, conn, fetch: Fetch, callback, closed_returns: bool = False):
        self.conn = conn
        self.fetch = fetch
        self.callback = callback
        self.closed_returns = closed_returns
        self.rid = None
        self.done = False       # set by the connection when the request is over
        self.owner = None
        self.tcl_obj = None
        # handlers take (event, req, out); on_msg hands a Delivered (one per
        # message of an asynchronous fetch) to the callback itself
        self._dispatch = event_table(self, fetch.EVENTS, inline=(Delivered,))

    def ended(self):
        """The pull is over: its fetch ID object goes away."""
        if self.owner is not None:
            self.owner.pop(self.rid, None)
        if self.tcl_obj:
            obj, self.tcl_obj = self.tcl_obj, None
            # destroyed when the engine's effects of this event are done,
            # before the callbacks they deliver run (nats-tcl's fetch ID is
            # gone once the last callback of the fetch is called)
            self.conn.ended_objs.append(obj)

    def _kind(self):
        return "Sync" if self.callback is None else "Async"

    def on_msg(self, req, msg, out) -> bool:
        """One message of the pull; True when the pull is over."""
        on = self._dispatch
        for ev in self.fetch.on_msg(msg):
            if ev.__class__ is Delivered:  # only with a callback (the Fetch's deliver)
                out.extend((2, self.callback, 0, self.conn.msg_dict(ev.msg), ""))
            else:
                on[ev.__class__](ev, req, out)
        if self.fetch.done:
            self.ended()
            return True
        return False

    # -- the Fetch's events: callbacks of an asynchronous fetch, put in ``out``
    def on_ended(self, ev: Ended, req, out) -> None:
        status = ev.status
        if status is not None:
            self.conn._log("debug", f"{self._kind()} pull request {req.id} got status message {status.status}")
        if self.callback:
            out.extend((2, self.callback, 1, self.conn.msg_dict(status) if status is not None else "", ""))

    def on_pull(self, ev: Pull, req, out) -> None:
        """The pin this fetch sent went stale (a 423): the same pull again,
        unpinned, to the same inbox, its timeout counted anew (unless the
        request ended meanwhile: the fetch then ends with what it has)."""
        if not req.done:
            self.conn.engine.repeat_request(req.id, req.subject, ev.body)
            self.conn.run()

    def on_heartbeat(self, ev: Heartbeat, req, out) -> None:
        """Nothing to do: a Tcl fetch keeps no heartbeat clock (it asks for
        no idle heartbeats), and the request's own timeout still runs."""
        return None

    def on_end(self, outcome, req, out):
        """The request ended without on_msg saying so (timeout, close, batch)."""
        self.ended()
        if outcome not in ("timeout", "lost"):
            # closed by the user: the callback is not invoked (CoreAPI.md); a
            # sync fetch throws ErrConnectionClosed, dropping what it got
            # (its result, with closed=True), unless closed_returns
            if self.callback or self.closed_returns:
                self.fetch.cancel()
            return
        if self.fetch.on_timeout() and self.callback:
            self.conn._log("debug", f"Async pull request {req.id} timed out")
            out.extend((2, self.callback, 1, "", ""))

    def finish(self, outcome, req):
        """Result of a synchronous fetch."""
        if outcome == "timeout":
            self.fetch.on_timeout()
        try:
            msgs = self.fetch.result(closed=outcome == "closed", lost=outcome == "lost", subject=req.subject)
        except NatsError as e:
            if e.code == "ErrTimeout" and outcome != "lost":
                self.conn._log("debug", f"Sync pull request {req.id} timed out")
            raise
        return tuple(self.conn.msg_dict(m) for m in msgs)
