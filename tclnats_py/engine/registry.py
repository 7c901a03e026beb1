"""Who is waiting for what the server sends: subscriptions, requests (with
the shared request inbox, "mux"), and PINGs; and the delivery of received
messages to them.

Three kinds of subscription: ``user`` (the faces' subscriptions: ``Deliver``
or ``DeliverMany`` effects), ``mux`` (the one wildcard inbox of new-style
requests, first reply only: ``RequestDone``) and ``gather`` (an old-style
request's own inbox, up to max_msgs replies: ``RequestReply`` each, then
``RequestDone``).  Requests and user pings end exactly once, by a reply, a
timeout (their timer, keyed by the record), or the connection's end.

Delivery: :meth:`Registry._on_msg` delivers a message to its subscription
by kind.  ``Engine.receive_data`` (connection.py), the hot path of every
face, does the same steps inline for the common message (a user
subscription, no headers, no max_msgs) and a plain request reply, and calls
``_on_msg`` for the others.  With ``deliver_batches`` set both guarantee: no
``Deliver`` effect at all, and consecutive deliveries to one subscription
with no other effect between them come as ONE ``DeliverMany`` (so a driver
need not merge them itself).

:class:`Registry` is the Engine's second part (it inherits
:class:`~tclnats_py.engine.outbound.Outbound`; the Engine inherits it).
"""

from __future__ import annotations

import itertools

from tclnats_py.engine import protocol as P
from tclnats_py.engine.effects import FLUSH, CancelTimer, Deliver, DeliverMany, PingDone, RequestDone, \
    RequestReply, StartTimer, SubGone
from tclnats_py.engine.headers import parse_headers
from tclnats_py.engine.nuid import Nuid
from tclnats_py.engine.options import Options
from tclnats_py.engine.outbound import Outbound
from tclnats_py.engine.records import Msg, Ping, Request, Subscription
from tclnats_py.engine.state import CONNECTED
from tclnats_py.engine.subjects import valid_subject
from tclnats_py.errors import NatsError, make_error

__all__ = ["Registry", "MAX_SUB_MSGS"]

# the largest max_msgs of a SUB/UNSUB: the server reads at most 9 digits there
# (more and the UNSUB is dropped, the subscription never ends)
MAX_SUB_MSGS = 999_999_999

_tuple_new = tuple.__new__


def _check_max_msgs(max_msgs: int) -> None:
    if not 0 <= max_msgs <= MAX_SUB_MSGS:
        raise make_error("ErrInvalidArg", f"Invalid max_msgs {max_msgs} (0 to {MAX_SUB_MSGS})")


class Registry(Outbound):
    """Subscriptions, requests and pings of one connection (see the module
    docstring); the Engine's second part."""

    def __init__(self, options: Options) -> None:
        super().__init__(options)
        self.subs: dict[int, Subscription] = {}
        self.requests: dict[int, Request] = {}
        # the first token(s) of new_inbox() subjects (nats-py's inbox_prefix)
        self.inbox_prefix = "_INBOX"
        # nats-py's reply subjects of new-style requests: <prefix>.<22-character
        # NUID><4+ hex digits> (here the hex digits are the request id) instead
        # of nats-tcl's <prefix>.<request id>
        self.nuid_reply_tokens = False
        # a driver's dict subclass for received headers (the asyncio face's
        # Headers); it gets the parsed dict of lists
        self.headers_class: type | None = None
        # the class of delivered messages: a driver may use a subclass of Msg
        # (same constructor) to add methods such as respond()
        self.msg_class: type = Msg
        # True: consecutive plain deliveries to one subscription come as one
        # DeliverMany(sub, msgs) effect, never as Deliver (the asyncio face's
        # choice; the order of all effects is the same)
        self.deliver_batches = False
        self._sid = itertools.count(1)
        self._rid = itertools.count(1)
        self._pid = itertools.count(1)
        self._pings: list = []           # outstanding PINGs: Ping objects or None (keep-alive)
        self._orphan_pings: list = []    # user pings whose connection broke
        self._pending_pings = 0          # keep-alive PINGs unanswered
        self._mux: Subscription | None = None
        self._mux_prefix = ""
        self._nuid = Nuid()
        # subjects of new-style requests that publish() accepted by the strict
        # subject rule (so under any check_subjects): the next requests to
        # them are framed by request() itself; a face may skip its own check
        # of a subject found here
        self.request_subjects: set[str] = set()

    @property
    def request_inbox(self):
        """The subscription that gathers replies of requests (None until the
        first request), and its subject prefix: ``(sub, prefix)``."""
        return self._mux, self._mux_prefix

    @property
    def awaiting_reply(self) -> bool:
        """A request or a PING of ours is waiting for the server's answer
        (a driver may poll its socket without sleeping meanwhile)."""
        return bool(self.requests or self._pings)

    # ------------------------------------------------------------------ subscriptions
    def subscribe(self, subject: str, queue: str = "", max_msgs: int = 0, handler=None,
                  kind: str = "user", request=None) -> Subscription:
        self._check_open()
        if not self.check_subject(subject, wildcard=True):
            raise make_error("ErrBadSubject", f"Invalid subject {subject}")
        if queue and not self.check_subject(queue, queue=True):
            raise make_error("ErrBadQueueName", f"Invalid queue {queue}")
        _check_max_msgs(max_msgs)
        sid = next(self._sid)
        sub = Subscription(sid, subject, queue or "", max_msgs, handler, kind, request)
        self.subs[sid] = sub
        if self.status == CONNECTED:
            # while (re)connecting the SUB goes out with the restored ones
            self._queue(P.encode_sub(subject, queue, sid))
            if max_msgs > 0:
                self._queue(P.encode_unsub(sid, max_msgs))
        return sub

    def unsubscribe(self, sid: int, max_msgs: int = 0) -> bool:
        """Returns True when the subscription is gone now, False when it ends later."""
        self._check_open()
        _check_max_msgs(max_msgs)
        sub = self.subs.get(sid)
        if sub is None:
            raise make_error("ErrBadSubscription", f"Invalid subscription ID {sid}")
        if max_msgs == 0 or sub.received >= max_msgs:
            del self.subs[sid]
            sub.closed = True
            if sub.draining:
                return True  # its UNSUB went out with drain()
            data = P.encode_unsub(sid)
            gone = True
        else:
            sub.max_msgs = max_msgs
            data = P.encode_unsub(sid, max_msgs)
            gone = False
        if self.status == CONNECTED:
            self._queue(data)
        return gone

    def drain(self, sid: int) -> None:
        """Stop the server's interest in ``sid`` (UNSUB) but keep delivering the
        messages already on their way; after a PING/PONG round trip has shown
        that none are left, the driver ends it with :meth:`unsubscribe`, which
        then only forgets it locally.  (nats.go's Subscription.Drain.)"""
        self._check_open()
        sub = self.subs.get(sid)
        if sub is None:
            raise make_error("ErrBadSubscription", f"Invalid subscription ID {sid}")
        if sub.draining:
            return
        sub.draining = True
        if self.status == CONNECTED:
            self._queue(P.encode_unsub(sid))

    def _drop_sub(self, sub) -> None:
        """End an internal subscription (UNSUB if connected) and report it."""
        if sub is None or sub.closed:
            return
        sub.closed = True
        self.subs.pop(sub.sid, None)
        if self.status == CONNECTED:
            self._queue(P.encode_unsub(sub.sid))
        self._fx.append(SubGone(sub.sid))

    def _restore_commands(self) -> list[bytes]:
        """The SUB (and UNSUB max_msgs) commands that give a new connection
        the subscriptions of the old one; a draining one is left out (the
        server forgot it with the old connection)."""
        restore = []
        for s in self.subs.values():
            if s.draining:
                continue
            restore.append(P.encode_sub(s.subject, s.queue, s.sid))
            if s.max_msgs:
                restore.append(P.encode_unsub(s.sid, s.max_msgs - s.received))
        return restore

    # ------------------------------------------------------------------ requests
    def new_inbox(self) -> str:
        return self.inbox_prefix + "." + self._nuid.next()

    def request(self, subject: str, payload: bytes = b"", timeout: int = 0, headers=None,
                max_msgs: int | None = None, handler=None, check_subject: bool = True) -> Request:
        """Start a request; its end comes as a ``RequestDone(req, outcome)`` effect.

        ``max_msgs`` None: a "new-style" request on the shared wildcard inbox,
        first reply only.  An int: an "old-style" request with its own inbox
        subscription gathering up to max_msgs replies (``req_msg`` effects).
        ``timeout`` 0 means no timeout.
        """
        self._check_open()
        if timeout < 0:
            raise make_error("ErrBadTimeout", f"Invalid timeout {timeout}")
        rid = next(self._rid)
        if max_msgs is None:
            if self._mux is None:
                self._mux_prefix = self.new_inbox()
                self._mux = self.subscribe(self._mux_prefix + ".*", kind="mux")
            if self.nuid_reply_tokens:
                reply = f"{self._mux_prefix}.{self._nuid.next()}{rid:04x}"
            else:
                reply = f"{self._mux_prefix}.{rid}"
            req = Request(rid, subject, reply, timeout, None, handler)
            info = self.server_info
            mp = info.get("max_payload") if info else None
            if (headers or self.status != CONNECTED or (mp is not None and len(payload) > mp)
                    or (check_subject and subject not in self.request_subjects)):
                # publish first: it raises on a bad subject etc. before we keep any state
                self.publish(subject, payload, reply, headers, check_subject, False)
                if check_subject and not headers and valid_subject(subject):
                    if len(self.request_subjects) >= 4096:
                        self.request_subjects.clear()
                    self.request_subjects.add(subject)
            else:  # publish()'s steps for a subject it accepted before, connected, no headers
                data = b"".join((f"PUB {subject} {reply} {len(payload)}\r\n".encode(), payload, b"\r\n"))
                self.stats["out_msgs"] += 1
                self._out.append(data)
                self._out_size += len(data)
                if not self._flush_signalled:
                    self._flush_signalled = True
                    self._fx.append(FLUSH)
        else:
            _check_max_msgs(max_msgs)
            reply = self.new_inbox()
            req = Request(rid, subject, reply, timeout, max_msgs, handler)
            req.sub = self.subscribe(reply, max_msgs=max_msgs, kind="gather", request=req)
            try:
                self.publish(subject, payload, reply, headers, check_subject, False)
            except NatsError:
                self.unsubscribe(req.sub.sid)
                raise
        self.requests[rid] = req
        if timeout:
            self._fx.append(_tuple_new(StartTimer, (req, timeout)))  # StartTimer(req, timeout), no Python __new__
        return req

    def repeat_request(self, rid: int, subject: str, payload: bytes) -> None:
        """Send the next step of a gathering request: ``payload`` to
        ``subject`` with the request's own inbox as the reply (a JetStream
        pull sent again), its timeout counted anew from now."""
        req = self.requests.get(rid)
        if req is None or req.done or req.sub is None:
            raise make_error("ErrInvalidArg", f"Invalid request ID {rid}")
        self.publish(subject, payload, req.reply, None, True, False)
        if req.timeout:
            self._fx.append(StartTimer(req, req.timeout))  # the driver replaces the running timer

    def cancel_request(self, rid: int) -> None:
        req = self.requests.get(rid)
        if req is None:
            raise make_error("ErrInvalidArg", f"Invalid request ID {rid}")
        req.done = True
        del self.requests[rid]
        self._fx.append(CancelTimer(req))
        self._drop_sub(req.sub)
        self._log("debug", f"Cancelled request {rid}")

    def _finish(self, req: Request, outcome: str) -> None:
        """``req`` ends with ``outcome``: its timer (if it has one) is cancelled."""
        req.done = True
        self.requests.pop(req.id, None)
        fx = self._fx  # CancelTimer(req), RequestDone(req, outcome) without their Python __new__
        if req.timeout:
            fx.append(_tuple_new(CancelTimer, (req,)))
        fx.append(_tuple_new(RequestDone, (req, outcome)))

    def _on_mux_reply(self, msg: Msg) -> None:
        # reply subjects are <prefix>.<request id> (or <NUID><request id in hex>)
        tail = msg.subject.rpartition(".")[2]
        try:
            rid = int(tail[22:], 16) if self.nuid_reply_tokens else int(tail)
        except ValueError:
            return
        req = self.requests.pop(rid, None)
        if req is None or req.done:
            return  # a late or second reply
        req.msg = msg
        req.done = True  # _finish's steps
        fx = self._fx
        if req.timeout:
            fx.append(_tuple_new(CancelTimer, (req,)))
        fx.append(_tuple_new(RequestDone, (req, "no_responders" if msg.headers and msg.no_responders else "msg")))

    def _on_gather_reply(self, req: Request, msg: Msg, last: bool) -> None:
        if req is None or req.done:
            return
        req.msgs.append(msg)
        if req.msg is None:
            req.msg = msg
        self._fx.append(RequestReply(req, msg))
        if msg.no_responders and len(req.msgs) == 1:
            self._drop_sub(req.sub)
            self._finish(req, "no_responders")
        elif last:
            self._finish(req, "msg")

    def _record_timer(self, key) -> None:
        """The timer of a request or a user ping fired (its key is the record)."""
        if isinstance(key, Request):
            if key.done:
                return
            self._drop_sub(key.sub)
            self._finish(key, "timeout")
        elif isinstance(key, Ping):
            if not key.done:
                key.done = True
                self._fx.append(PingDone(key, False))

    def _end_requests(self, outcome: str) -> None:
        """The connection closed: every request ends with ``outcome`` and
        every subscription (the request inbox too) is gone."""
        reqs = list(self.requests.values())
        self.requests.clear()
        for r in reqs:
            if not r.done:
                r.done = True
                self._fx.append(CancelTimer(r))
                self._fx.append(RequestDone(r, outcome))
        for s in self.subs.values():
            s.closed = True
        self.subs.clear()
        self._mux = None
        self._mux_prefix = ""

    # ------------------------------------------------------------------ pings
    def ping(self, timeout: int = 10000, handler=None) -> Ping:
        if self.status != CONNECTED:
            raise make_error("ErrConnectionClosed", "No connection to NATS server")
        if timeout < 0:
            raise make_error("ErrBadTimeout", f"Invalid timeout {timeout}")
        p = Ping(next(self._pid), handler)
        self._pings.append(p)
        self._log("debug", "sending PING")
        self._queue(P.PING_BYTES)
        if timeout:
            self._fx.append(StartTimer(p, timeout))
        return p

    def _ping_done(self, p: Ping, ok) -> None:
        p.done = True
        self._fx.append(CancelTimer(p))
        self._fx.append(PingDone(p, ok))

    def _pong_answers(self) -> None:
        """A PONG outside the handshake: it answers the oldest PING in flight
        (a keep-alive one, or a user ping, which ends)."""
        self._pending_pings = 0
        pings = self._pings
        while pings:
            p = pings.pop(0)
            if p is None:
                break
            if not p.done:
                self._ping_done(p, True)
                break

    def _orphan_pings_now(self) -> None:
        """The connection broke: user pings in flight wait for the outcome
        of reconnecting (as in nats-tcl): the next server answering ends
        them, closing fails them."""
        self._orphan_pings.extend(p for p in self._pings if p is not None and not p.done)
        self._pings = []

    def _pings_on_connected(self) -> None:
        """A new connection is up: no PING in flight on it, and the orphans
        of the old one end well."""
        self._pending_pings = 0
        self._pings = []
        if self._orphan_pings:
            orphans, self._orphan_pings = self._orphan_pings, []
            for p in orphans:
                if not p.done:
                    self._ping_done(p, True)

    def _fail_pings(self, result) -> None:
        pings = self._pings + self._orphan_pings
        self._pings = []
        self._orphan_pings = []
        for p in pings:
            if p is not None and not p.done:
                self._ping_done(p, result)

    # ------------------------------------------------------------------ delivery
    def _msg_headers(self, hdr: bytes):
        """The headers of a received message from its header block, made
        ``headers_class``; a bad block is an async error and None (the body
        is still delivered, like nats.go processMsg).  (:meth:`_on_msg` has
        these steps inline: no call more per message there.)"""
        try:
            # the compiled parser of the plain block (None: anything else)
            headers = P.headers(hdr) if P.headers is not None else None
            if headers is None:
                headers = parse_headers(hdr)
            return headers if self.headers_class is None else self.headers_class(headers)
        except NatsError as e:
            self._async_error(e.code, str(e))
            return None

    def _on_msg(self, op) -> None:
        _, subject, sid, reply, hdr, payload = op
        self.stats["in_msgs"] += 1
        sub = self.subs.get(sid)
        if sub is None:
            return  # unsubscribed while messages were in flight
        headers = None
        if hdr is not None:  # (_msg_headers's steps, inline on this delivery path)
            try:
                # the compiled parser of the plain block (None: anything else)
                headers = P.headers(hdr) if P.headers is not None else None
                if headers is None:
                    headers = parse_headers(hdr)
                if self.headers_class is not None:
                    headers = self.headers_class(headers)
            except NatsError as e:
                # the body is still delivered (like nats.go processMsg)
                self._async_error(e.code, str(e))
        msg = self.msg_class(subject, payload, reply, headers, sid)
        sub.received += 1
        gone = False
        if sub.max_msgs and sub.received >= sub.max_msgs:
            del self.subs[sid]
            sub.closed = True
            gone = True
        kind = sub.kind
        if kind == "user":
            fx = self._fx
            if not self.deliver_batches:
                fx.append(_tuple_new(Deliver, (sub, msg)))  # Deliver(sub, msg) without its Python __new__
            elif fx and fx[-1].__class__ is DeliverMany and fx[-1][0] is sub:
                fx[-1][1].append(msg)
            else:
                fx.append(_tuple_new(DeliverMany, (sub, [msg])))
            if gone:
                fx.append(SubGone(sid))
        elif kind == "mux":
            self._on_mux_reply(msg)
        else:
            if gone:
                self._fx.append(SubGone(sid))
            self._on_gather_reply(sub.request, msg, gone)
