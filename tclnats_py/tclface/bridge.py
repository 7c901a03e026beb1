"""The Tcl driver: runs the engine on a Tcl interpreter's event loop.

:func:`install` puts ``package require nats`` into a Tcl interpreter hosted
by Python (``tkinter.Tcl()`` or ``tkinter.Tk()``).  The Tcl sources in
``tcl/`` give the TclOO shape of nats-tcl; each ``nats::connection`` object
gets one :class:`TclConnection` here, reachable from Tcl as a command.

I/O stays in Tcl, as in nats-tcl: the socket is a Tcl channel opened with
``socket -async`` (so ``chan push`` transforms see the wire), TLS is
``tls::import``, timers are ``after``, and blocking calls ``vwait`` (or
yield in a coroutine) in the Tcl layer.  This module only carries the
engine's effects out with Tcl commands, and turns readable/writable/timer
events into engine calls.  It never raises into Tcl: a Python exception in
a Tcl command would be re-raised later in the Tcl host's main loop, so
errors are returned as values and thrown by the Tcl layer.

Crossings: one Tcl->Python call per API call and per timer.  The
per-message paths are C (tclnats_py/_ext/tclfast.c): plain publishes are
framed in a C buffer that a flush writes to the socket; the socket's
readable handler reads in C and calls the callbacks of plain messages
itself, handing every other frame to the engine here (one call per read
that has any); the deliveries the engine makes go back to Tcl in one call.
"""

from __future__ import annotations

# (a plain False, no typing import at start: the checkers read it as True)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

import functools
import heapq
import itertools
import math
import os
import sys
import time
from tclnats_py._tclcross import Interp, TclError

from tclnats_py.engine.effects import (CancelTimer, Close, Deliver, ErrorChanged, Flush, InfoReceived, Log, Open,
                       PingDone, PongReceived, RequestDone, RequestReply, StartTimer, StartTls,
                       StatusChanged, SubGone, SubsCleared, UnknownEffect)
from tclnats_py.credentials import read_credentials
from tclnats_py.engine.connection import CONNECTED, Engine, Msg, Request
from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.options import OPTION_SPEC, Options, coerce
from tclnats_py.engine.pool import parse_url
from tclnats_py.tclface.commands import tcl_commands, unknown_op
from tclnats_py.tclface.tlsname import check_server_name
from tclnats_py.tclface.values import tcl_value
from tclnats_py.engine.validate import MAX_TIMEOUT, header_name_error, header_value_error

# tclnats_py.tclface.js (and the engine's JetStream modules under it) is
# imported on first use, not by `package require nats`: _js() loads it and
# notes its Chain class, which only its operations create
_Chain: type | None = None


def _js():
    global _Chain
    from tclnats_py.tclface import js
    _Chain = js.Chain
    return js


def _format_exc() -> str:
    import traceback  # (with linecache, tokenize: only when there is one to format)
    return traceback.format_exc()

__all__ = ["install", "tcl_library_dir", "TclConnection"]

TCL_API_VERSION = "3.2.1"
_LEVELS = {"debug": 0, "info": 1, "warn": 2, "error": 3}
# bytes taken from the socket per readable event: a backlog is worked through
# in batches of this size (each batch parsed, delivered and freed before the
# next), not in one read of everything the kernel holds
READ_CHUNK = 256 * 1024
# bytes handed to the socket channel per write: the engine's queue leaves in
# chunks while the kernel takes them, so no second copy of it waits in Tcl
WRITE_CHUNK = 256 * 1024
# payload bytes the Tcl fast path frames before it asks for room (c_room)
FAST_BATCH = 256 * 1024


# (in the package's __init__, which the launcher tclsh.py imports without
# the built extension, and which a bridge start imports anyway)
from tclnats_py.tclface import tcl_library_dir  # noqa: E402


def _now_ms() -> int:
    return int(time.time() * 1000)


def _to_bytes(value) -> bytes:
    """A Tcl string as the bytes a binary Tcl channel would write.

    Tcl writes each character of a string to a binary channel as its low
    byte; payloads that came from the wire are byte arrays and arrive here as
    ``bytes`` or as a latin-1 ``str``.
    """
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        value = str(value)  # a Tcl_Obj of another type: its string form
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return bytes(ord(c) & 0xFF for c in value)


def headers_to_tcl(headers) -> tuple:
    if not headers:
        return ()
    out = []
    for k, vals in headers.items():
        out.append(k)
        out.append(tuple(vals))
    return tuple(out)


class _Bridge:
    """Per-interpreter state: the registered commands and the connections."""

    def __init__(self, tk):
        self.tk = tk
        self.ids = itertools.count(1)
        self.conns: dict[str, TclConnection] = {}
        self.dirty: set = set()  # connections with a posted flush
        tk.createcommand("::tclnats::_flush_dirty", self._flush_dirty)
        tk.createcommand("::tclnats::_new_connection", self._new_connection)
        tk.createcommand("::tclnats::_option_table", _option_table)
        tk.createcommand("::tclnats::_parse_url", self._parse_url)
        tk.createcommand("::tclnats::_token", self._token)
        tk.createcommand("::tclnats::python", self._python)
        from tclnats_py._tclcross import noop
        tk.createcommand("::tclnats::_noop", noop)   # crossing-cost measurements
        for name in ("metadata", "make_stream_source", "make_subject_transform", "make_republish",
                     "make_kv_origin"):
            tk.createcommand(f"::tclnats::_{name}", getattr(self, "_" + name))

    def dispose(self):
        """The interpreter is being deleted: Tcl closes its channels and
        drops its timers; forget the connections without calling Tcl."""
        for conn in list(self.conns.values()):
            conn.dead = True
            conn.sock = ""
            conn.flush_id = ""
            conn.timers.clear()
            conn.sweep_id = ""
        self.conns.clear()
        self.dirty.clear()

    def _flush_dirty(self, reader=None):
        """Write now what callbacks run by a readable handler published,
        instead of one more event-loop turn for the posted flush.  ``reader``:
        the readable handler whose deliveries have all run now."""
        if reader is not None:
            conn = self.conns.get(reader[:-3])
            if conn is not None:
                conn.batch_done()
        dirty = self.dirty
        while dirty:
            conn = dirty.pop()
            if conn.flush_id:
                try:
                    conn.flush_now()
                except Exception:
                    tb = _format_exc()
                    conn._log("error", f"internal error in flush: {tb}")
                    sys.stderr.write(tb)

    def _wrap(self, fn):
        try:
            return (0, fn())
        except NatsError as e:
            return (1, ("NATS", e.code), str(e))

    def _metadata(self, reply, subject):
        metadata_from_reply = _js().metadata_from_reply
        return self._wrap(lambda: tuple(_flat(metadata_from_reply(reply, subject))))

    def _make_stream_source(self, *args):
        make_stream_source = _js().make_stream_source
        return self._wrap(lambda: make_stream_source(self.tk, args))

    def _make_subject_transform(self, *args):
        make_subject_transform = _js().make_subject_transform
        return self._wrap(lambda: make_subject_transform(self.tk, args))

    def _make_republish(self, *args):
        make_republish = _js().make_republish
        return self._wrap(lambda: make_republish(self.tk, args))

    def _make_kv_origin(self, *args):
        make_kv_origin = _js().make_kv_origin
        return self._wrap(lambda: make_kv_origin(self.tk, args))

    def _new_connection(self, obj, ns, log_level):
        try:
            c = TclConnection(self, obj, ns, log_level)
        except Exception as e:  # pragma: no cover - defensive
            return (1, "NATS ErrInvalidArg", str(e))
        self.conns[c.cmd] = c
        return (0, c.cmd)

    def _python(self, *args):
        """``::tclnats::python``: which Python serves this interpreter."""
        from tclnats_py import _tclcross
        if args:
            raise TclError('wrong # args: should be "::tclnats::python"')
        return ("version", sys.version.split()[0], "executable", sys.executable, "prefix", sys.prefix,
                "embedded", int(_tclcross.embedded()), "package", os.path.dirname(os.path.abspath(__file__)))

    def _token(self):
        from tclnats_py.engine.nuid import next_token
        return (0, next_token())

    def _parse_url(self, url):
        try:
            return (0, tuple(_flat(parse_url(url).as_dict())))
        except NatsError as e:
            return (1, f"NATS {e.code}", str(e))


_MAX_TIMEOUT_MS = int(MAX_TIMEOUT * 1000)


def _int_value(value) -> int | None:
    """An integer as Tcl's ``string is entier -strict`` takes it (decimal,
    0x/0o/0b), or None."""
    if value.__class__ is int:
        return value
    try:
        return coerce("", "int", value) if str(value) == str(value).strip() and str(value) else None
    except NatsError:
        return None


def _tcl_default(value) -> str:
    """An option's default as ``$conn cget`` shows it (nats-tcl's forms)."""
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return " ".join(map(str, value))
    return str(value)


def _option_table():
    """``::tclnats::_option_table``: the engine's option table for nats.tcl
    (read once per interpreter, at its first connection): ``{types defaults
    max_timeout_ms}``, types and defaults as name/value lists in the engine's
    order."""
    types = []
    defaults = []
    for name, (typ, default) in OPTION_SPEC.items():
        types += (name, typ)
        defaults += (name, _tcl_default(default))
    return (0, (tuple(types), tuple(defaults), str(_MAX_TIMEOUT_MS)))


def _flat(d: dict):
    for k, v in d.items():
        yield k
        yield v


class _Op:
    """A request whose outcome is turned into a Tcl result in Python."""

    __slots__ = ("finish", "gather", "async_done", "on_error", "after")

    def __init__(self, finish, gather=None, async_done=None):
        self.finish = finish          # (outcome, req) -> result; may raise NatsError
        self.gather = gather          # gathers req_msg effects (JetStream fetch)
        self.async_done = async_done  # (outcome, req, deliveries) for async forms
        self.on_error = {}            # error code -> fn(err) giving a result or raising
        self.after = []               # result -> result

    def result(self, outcome, req):
        try:
            value = self.finish(outcome, req)
        except NatsError as e:
            fn = self.on_error.get(e.code)
            if fn is None:
                raise
            value = fn(e)
        for fn in self.after:
            if _Chain is not None and isinstance(value, _Chain):
                break
            value = fn(value)
        return value


def _reply(result):
    """A result for Tcl: ``{0 value}``, or ``{2 rid}`` when another request
    gives it (a follow-up); ``::tclnats::r`` unpacks it."""
    if result.__class__ is _Chain and _Chain is not None:
        return (2, result.rid)
    return (0, "" if result is None else result)


def _error_reply(e: NatsError):
    """An error for Tcl: ``{1 errorcode message}``."""
    return (1, e.details.get("errorcode") or ("NATS", e.code), str(e))


class _Sync:
    """The handler of a synchronous core request (the caller waits in Tcl)."""

    __slots__ = ("dictmsg",)

    def __init__(self, dictmsg: bool):
        self.dictmsg = dictmsg


_SYNC_PLAIN, _SYNC_DICT = _Sync(False), _Sync(True)


@tcl_commands
class TclConnection:
    """One ``nats::connection``: an engine plus the Tcl-side I/O."""

    def __init__(self, bridge: _Bridge, obj: str, ns: str, log_level: str):
        self.bridge = bridge
        self.tk = bridge.tk
        self.obj = obj
        self.ns = ns
        self.cmd = f"::tclnats::conn{next(bridge.ids)}"
        self.engine = Engine(Options(), clock=_now_ms, lang="Tcl", version=TCL_API_VERSION)
        self.engine.reconnect_delay = None
        self.min_level = _LEVELS.get(log_level, 0)
        self.sock = ""
        self.flush_id = ""
        self.timers: dict = {}       # key -> (token, after id)
        self.tokens: dict = {}       # token -> key
        self.tok = itertools.count(1)
        self.deadlines: dict = {}    # Request/Ping -> its token in deadline_keys
        self.deadline_keys: dict = {}  # token -> (Request/Ping, monotonic deadline)
        self.deadline_heap: list = []  # (deadline, token): no reference to the Request
        self.sweep_id = ""
        self.sweep_at = None
        self.utf8 = False
        self.writing_servers = False
        self.pool_var = ""
        self.js = None
        self.last_rid = 0
        self.tcl_pending = False
        self.noted_mux = None        # the request inbox subscription Tcl was told of
        self.fast_max = -1
        self.fast_room = -1
        self.fast_subjects: set = set()
        self.tls_pending = None      # (server, tls options) while a TLS handshake runs
        self.chan_pending = 0        # bytes in the socket channel's buffers at the last write
        self.drain_armed = False     # a writable handler (e_drain) is set
        self.room_wanted = False     # a publisher waits for Room (see c_room)
        # slow consumers: deliveries handed to Tcl by a read and not run yet,
        # per subscription ([msgs, bytes]); a callback that waits in the event
        # loop lets the next reads hand over more before its own read's are run
        self.batch = None            # {sub: [msgs, bytes]} of the read in progress
        self.batches: list = []      # those of reads whose deliveries are still running
        self.sub_pending: dict = {}  # sub -> [msgs, bytes] of all of them
        self.slow_subs: set = set()  # subscriptions in a slow-consumer episode
        self.limits = (0, 0)
        self.ended_objs: list = []   # Tcl objects to destroy once the effects are done
        self.dead = False
        self.tk.createcommand(self.cmd, functools.partial(self.call, self))
        self.tk.createcommand(self.cmd + "_ev", self.event)
        self.tk.createcommand(self.cmd + "_rd", self.on_readable)
        self.tk.createcommand(self.cmd + "_rx", self.rx)

    # ------------------------------------------------------------ dispatch
    def call(self, obj, op, *args):
        """Entry from Tcl: ``obj.c_<op>(*args)``, looked up in the table of
        obj's class (tclface/commands.py; the commands of this
        connection and of its JetStream objects, each a functools.partial of
        this method, no closure per call).  Returns ``{0 result}``,
        ``{1 errorcode message}``, or ``{2 rid}`` when the result will come
        from another request."""
        try:
            if self.tcl_pending:
                self.drain_tcl_pubs()
            fn = obj._tcl_commands.get(op)
            if fn is None:
                raise unknown_op(obj, op)
            result = fn(obj, *args)
        except NatsError as e:
            self.run()
            return _error_reply(e)
        except TclError as e:
            return (1, ("NATS", "ErrInternal"), f"Tcl error in tclnats_py: {e}")
        except Exception as e:
            return self._internal_error(op, e)
        return _reply(result)

    def _internal_error(self, what, e):
        tb = _format_exc()
        self._log("error", f"internal error in {what}: {tb}")
        return (1, ("NATS", "ErrInternal"), f"{type(e).__name__}: {e}")

    def event(self, op, *args):
        """Entry for channel events and timers (nobody to return an error to)."""
        try:
            getattr(self, "e_" + op)(*args)
        except Exception:
            tb = _format_exc()
            self._log("error", f"internal error in {op} event: {tb}")
            sys.stderr.write(tb)

    # ------------------------------------------------------------ helpers
    def _set(self, var, value):
        self.tk.call("set", f"{self.ns}::{var}", value)

    def _log(self, level, text):
        if _LEVELS.get(level, 3) < self.min_level or self.dead:
            return
        try:
            self.tk.call(f"{self.ns}::log::{level}", text)
        except TclError:
            pass  # the logger is gone (object being destroyed)

    def _push_servers(self):
        self.writing_servers = True
        try:
            if not self.pool_var:
                return
            self.tk.call("set", self.pool_var,
                         tuple(tuple(_flat(s.as_dict())) for s in self.engine.pool.servers))
        finally:
            self.writing_servers = False

    # ------------------------------------------------------------ effects
    def run(self, collect=None, writing=False):
        """Carry out the engine's effects until there are none left.

        Deliveries go to ``::nats::_deliver`` (posted to the event loop), or,
        given a ``collect`` list, are added to it for the caller to run;
        ``writing``: the caller writes at once (see Engine.take)."""
        eng = self.engine
        tk = self.tk
        ns = self.ns
        while True:
            fx = eng.take(writing)
            if not fx:
                break
            deliveries = []
            for f in fx:
                k = f.__class__
                if k is Deliver:
                    self._delivery(deliveries, f.sub, f.msg)
                elif k is Flush:
                    if eng.status == CONNECTED:
                        if not self.flush_id:
                            self.bridge.dirty.add(self)
                            self.flush_id = tk.call("after", 0, self.cmd + "_ev", "flush")
                            tk.call("set", f"{ns}::timers(flush)", self.flush_id)
                elif k is StartTimer:
                    self._start_timer(f.key, f.ms)
                elif k is CancelTimer:
                    self._cancel_timer(f.key)
                elif k is SubGone:
                    tk.call("unset", "-nocomplain", f"{ns}::subscriptions({f.sid})")
                    self._fast_unsub(f.sid)
                elif k is RequestDone:
                    self._request_done(deliveries, f.req, f.outcome)
                elif k is RequestReply:
                    self._request_msg(deliveries, f.req, f.msg)
                elif k is StatusChanged:
                    self._push_servers()
                    if f.status != CONNECTED and self.tcl_pending:
                        # publishes framed in Tcl before the connection broke
                        # go to the engine's reconnect buffer, in order
                        self._save_tcl_pubs()
                    tk.call("set", f"{ns}::status", f.status)
                    self._fast_path()
                    self._wake_room()
                elif k is ErrorChanged:
                    err = f.error
                    if err is None:
                        tk.call("set", f"{ns}::last_error", "")
                    else:
                        tk.call("set", f"{ns}::last_error",
                                ("code", ("NATS", err.code), "errorMessage", str(err)))
                elif k is Log:
                    self._log(f.level, f.text)
                elif k is InfoReceived:
                    # update the array in place: unsetting the whole variable
                    # would drop the user's traces on it (CoreAPI.md: trace
                    # serverInfo to learn e.g. of lame duck mode)
                    var = f"{ns}::serverInfo"
                    info = f.info
                    for old in tk.splitlist(tk.call("array", "names", var)):
                        if old not in info:
                            tk.call("unset", f"{var}({old})")
                    tk.call("array", "set", var, tcl_value(info))
                    self._fast_path()
                elif k is PongReceived:
                    tk.call("set", f"{ns}::pong", 1)
                elif k is PingDone:
                    p = f.ping
                    res = {True: 1, False: 0, None: "closed"}[f.ok]
                    tk.call("set", f"{ns}::PingResult({p.id})", res)
                elif k is SubsCleared:
                    self._fast("subclear")
                    tk.call("array", "unset", f"{ns}::subscriptions")
                    tk.call("set", f"{ns}::requestsInboxPrefix", "")
                    self.noted_mux = None
                elif k is Open:
                    self._open(f.server)
                elif k is StartTls:
                    self._starttls(f.server)
                elif k is Close:
                    self._close()
                else:
                    raise UnknownEffect(f)
            if deliveries:
                if collect is not None:
                    collect.extend(deliveries)
                    continue
                try:
                    tk.call("::nats::_deliver", tuple(deliveries))
                except TclError as e:
                    self._log("error", f"delivery failed: {e}")
        # handshake traffic goes out at once; user traffic waits for the flusher
        if self.sock and eng.status != CONNECTED and eng.want_write:
            self._write(eng.data_to_send())
        if self.ended_objs:
            # Tcl objects of operations that ended (a fetch ID)
            ended, self.ended_objs = self.ended_objs, []
            for obj in ended:
                tk.call("catch", (obj, "destroy"))

    def _msg_value(self, msg: Msg, dictmsg: bool, sid):
        data: bytes | str = msg.data
        if self.utf8:
            data = msg.data.decode("utf-8", "replace")
        if not dictmsg:
            return data
        return ("header", headers_to_tcl(msg.headers), "data", data, "subject", msg.subject,
                "reply", msg.reply or "", "sub_id", sid if sid is not None else "")

    def _delivery(self, out, sub, msg):
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
        out.extend((post, cb, msg.subject,
                    msg.data if not (dictmsg or self.utf8) else self._msg_value(msg, dictmsg, sub.sid),
                    msg.reply or ""))

    def _slow_consumer(self, sub):
        """A delivery past pending_msgs_limit / pending_bytes_limit is
        dropped; the first of an episode is reported as an async error (the
        episode ends when the subscription's callbacks have caught up)."""
        if sub in self.slow_subs:
            return
        self.slow_subs.add(sub)
        self._report_slow(sub)

    def _report_slow(self, sub):
        text = (f"Slow consumer on subject {sub.subject} (subscription {sub.sid}): messages dropped past "
                f"-pending_msgs_limit {self.engine.options.pending_msgs_limit} or "
                f"-pending_bytes_limit {self.engine.options.pending_bytes_limit}")
        self.tk.call("set", f"{self.ns}::last_error",
                     ("code", ("NATS", "ErrSlowConsumer"), "errorMessage", text))
        self._log("warn", text)

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

    def _request_done(self, out, req: Request, outcome: str):
        h = req.handler
        ns = self.ns
        if h.__class__ is _Sync:
            # a synchronous request: the Tcl call waits for results($id),
            # the result in call()'s form, and needs no Python call to fetch it
            if outcome == "msg":
                msg = req.msg
                r = (0, self._msg_value(msg, h.dictmsg, msg.sid))
            else:
                r = _error_reply(self.outcome_error(outcome, req))
            self.tk.setvar(f"{ns}::results({req.id})", r)
            return
        if isinstance(h, _Op):
            if h.gather is not None and not h.gather.done:
                h.gather.done = True
                h.gather.on_end(outcome, req, out)
            if h.async_done is not None:
                self.tk.call("unset", "-nocomplain", f"{ns}::requests({req.id})")
                h.async_done(outcome, req, out)
                return
            # the result is made now, for results($id) (see _Sync above)
            self.tk.setvar(f"{ns}::results({req.id})", self._op_result(h, outcome, req))
            return
        if h is None:
            # a synchronous gathering request (max_msgs): the list of replies
            if outcome == "msg" or (outcome == "timeout" and req.msgs):
                r = (0, tuple(self._msg_value(m, True, m.sid) for m in req.msgs))
            elif outcome == "no_responders":
                # nats-tcl names the subject here (and not for a plain request)
                r = _error_reply(make_error("ErrNoResponders", f"No responders available for request to {req.subject}"))
            else:
                r = _error_reply(self.outcome_error(outcome, req))
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

    def _op_result(self, op: "_Op", outcome, req):
        """The result of a finished synchronous operation in call()'s form."""
        try:
            return _reply(op.result(outcome, req))
        except NatsError as e:
            return _error_reply(e)
        except Exception as e:
            return self._internal_error("a request's result", e)

    def _post_req(self, out, cb, timed_out, value):
        # request callbacks have the signature {timedOut msg}
        out.extend((2, cb, timed_out, value, ""))

    def _request_msg(self, out, req: Request, msg: Msg):
        h = req.handler
        if isinstance(h, _Op):
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
        if h is None or h.__class__ is _Sync:
            return  # gathered in req.msgs for the synchronous caller
        cb, dictmsg, old_style = h
        self._post_req(out, cb, 1 if msg.no_responders else 0, self._msg_value(msg, True, msg.sid))

    # ------------------------------------------------------------ timers
    # Connection timers ("ping", "connect", "reconnect") are one [after] each.
    # Request and ping deadlines share one [after] set for the earliest of them:
    # a request answered in time costs no Tcl timer call at all, and the sweep
    # skips deadlines that were cancelled since.  The heap holds tokens, not
    # the requests: an answered request is garbage at once, not when its
    # timeout would have passed; cancelled entries are compacted away once
    # they outnumber the live ones.
    def _start_timer(self, key, ms):
        if key.__class__ is not str:
            deadline = time.monotonic() + int(ms) / 1000.0
            tok = next(self.tok)
            old = self.deadlines.get(key)
            if old is not None:
                del self.deadline_keys[old]
            self.deadlines[key] = tok
            self.deadline_keys[tok] = (key, deadline)
            heap = self.deadline_heap
            if len(heap) > 64 and len(heap) > 2 * len(self.deadline_keys):
                keys = self.deadline_keys
                heap[:] = [e for e in heap if e[1] in keys]
                heapq.heapify(heap)
            heapq.heappush(heap, (deadline, tok))
            if self.sweep_at is None or deadline < self.sweep_at:
                self._arm_sweep(deadline)
            return
        old = self.timers.pop(key, None)
        if old is not None:
            self.tokens.pop(old[0], None)
            self.tk.call("after", "cancel", old[1])
        tok = str(next(self.tok))
        aid = self.tk.call("after", int(ms), self.cmd + "_ev", "timer", tok)
        self.timers[key] = (tok, aid)
        self.tokens[tok] = key
        if key in ("ping", "connect"):
            self.tk.call("set", f"{self.ns}::timers({key})", aid)

    def _cancel_timer(self, key):
        if key.__class__ is not str:
            tok = self.deadlines.pop(key, None)
            if tok is not None:
                del self.deadline_keys[tok]
            return
        old = self.timers.pop(key, None)
        if old is not None:
            self.tokens.pop(old[0], None)
            self.tk.call("after", "cancel", old[1])
            if key in ("ping", "connect"):
                self.tk.call("set", f"{self.ns}::timers({key})", "")

    def _arm_sweep(self, deadline):
        if self.sweep_id:
            self.tk.call("after", "cancel", self.sweep_id)
        self.sweep_at = deadline
        wait = max(0, math.ceil((deadline - time.monotonic()) * 1000))
        self.sweep_id = self.tk.call("after", wait, self.cmd + "_ev", "sweep")

    def e_sweep(self):
        self.sweep_id = ""
        self.sweep_at = None
        heap = self.deadline_heap
        keys = self.deadline_keys
        now = time.monotonic()
        expired = []
        while heap:
            deadline, tok = heap[0]
            entry = keys.get(tok)
            if entry is None:
                heapq.heappop(heap)  # cancelled, or started again later
            elif deadline <= now:
                heapq.heappop(heap)
                del keys[tok]
                del self.deadlines[entry[0]]
                expired.append(entry[0])
            else:
                break
        if heap:
            self._arm_sweep(heap[0][0])
        for key in expired:
            self.engine.timer_fired(key)
        self.run()

    def cancel_all_timers(self):
        for key in list(self.timers):
            self._cancel_timer(key)
        self.deadlines.clear()
        self.deadline_keys.clear()
        self.deadline_heap.clear()
        if self.sweep_id:
            self.tk.call("after", "cancel", self.sweep_id)
            self.sweep_id = ""
            self.sweep_at = None
        if self.flush_id:
            self.tk.call("after", "cancel", self.flush_id)
            self.flush_id = ""

    def e_timer(self, tok):
        key = self.tokens.pop(tok, None)
        if key is None:
            return
        self.timers.pop(key, None)
        if key in ("ping", "connect"):
            self.tk.call("set", f"{self.ns}::timers({key})", "")
        self.engine.timer_fired(key)
        self.run()

    # ------------------------------------------------------------ socket
    def _open(self, server):
        self.engine.set_credentials(read_credentials(self.engine.options))
        tk = self.tk
        try:
            sock = tk.call("socket", "-async", server.host, server.port)
        except TclError as e:
            self.engine.socket_failed(str(e))
            return
        # every write is a whole batch (data_to_send), so no buffering: puts
        # hands it to the socket at once, and what the kernel does not take
        # waits in big channel buffers that drain in few writable events
        tk.call("chan", "configure", sock, "-translation", "binary", "-blocking", 0,
                "-buffering", "none", "-buffersize", 1 << 20)
        tk.call("chan", "event", sock, "writable", (self.cmd + "_ev", "writable"))
        self.sock = sock
        self._set("sock", sock)

    def e_writable(self):
        tk = self.tk
        sock = self.sock
        if not sock:
            return
        tk.call("chan", "event", sock, "writable", "")
        try:
            err = tk.call("chan", "configure", sock, "-error")
        except TclError as e:
            err = str(e)
        if err:
            self.engine.socket_failed(str(err))
        else:
            self._read_with_c(sock)
            self.engine.socket_connected()
        self.run()

    def _read_with_c(self, sock):
        """The socket's readable handler is the C reader of the connection
        (``Fast read``, tclfast.c): it reads, calls the callbacks of plain
        messages of the subscriptions registered with it (``Fast sub``), and
        hands every other frame to the engine through :meth:`rx`."""
        tk = self.tk
        fast = f"{self.ns}::Fast"
        if self._fast("rd", sock, self.cmd + "_rx", self.cmd + "_rd") is not None:
            handler = (fast, "read")
        else:
            handler = ("::nats::_on_readable", self.cmd + "_rd")   # (no C state: the Python reader)
        tk.call("chan", "event", sock, "readable", handler)
        tk.call("set", f"::tclnats::sockets({sock})", handler)

    def rx(self, op, *args):
        """The C reader's calls: ``ops data msgs bytes`` (frames for the
        engine; msgs and bytes: what the C reader received since its last
        report), ``lost reason``, ``eof`` (each returns the deliveries for
        Tcl, as :meth:`on_readable`), ``slow sid`` (a slow-consumer episode
        of a subscription of the C reader begins).  Never raises."""
        try:
            if op == "ops":
                data, msgs, nbytes = args
                if msgs:
                    stats = self.engine.stats
                    stats["in_msgs"] += int(msgs)
                    stats["in_bytes"] += int(nbytes)
                return self._feed(lambda: self.engine.receive_data(_to_bytes(data)))
            if op == "lost":
                return self._feed(lambda: self.engine.connection_lost(str(args[0]) or None))
            if op == "eof":
                return self._feed(lambda: self.engine.connection_lost(None))
            if op == "slow":
                sub = self.engine.subs.get(int(args[0]))
                if sub is not None:
                    self._report_slow(sub)
                return ()
        except Exception:
            tb = _format_exc()
            self._log("error", f"internal error in readable event: {tb}")
            sys.stderr.write(tb)
        return ()

    def _feed(self, step):
        """Run ``step`` (bytes or an outcome for the engine) as one read of
        :meth:`on_readable`: its effects carried out, its deliveries returned."""
        out = []
        o = self.engine.options
        self.limits = (o.pending_msgs_limit if o.pending_msgs_limit > 0 else sys.maxsize,
                       o.pending_bytes_limit if o.pending_bytes_limit > 0 else sys.maxsize)
        self.batch = batch = {}
        try:
            step()
            self.run(out)
            if out and self.flush_id:
                self.flush_now()  # PONGs and acks go out before user callbacks run
        except Exception:
            tb = _format_exc()
            self._log("error", f"internal error in readable event: {tb}")
            sys.stderr.write(tb)
        finally:
            self.batch = None
        if out:
            # the C reader reports (_flush_dirty) when they have run
            self.batches.append(batch)
        return tuple(out)

    def _fast(self, *args):
        """A call of the connection's C state (Fast); None when it is gone
        (the object is being destroyed)."""
        try:
            return self.tk.call(f"{self.ns}::Fast", *args)
        except TclError:
            return None

    def _fast_limits(self):
        o = self.engine.options
        return (o.pending_msgs_limit if o.pending_msgs_limit > 0 else 0,
                o.pending_bytes_limit if o.pending_bytes_limit > 0 else 0)

    def _fast_sub(self, sub):
        """Plain messages of a subscription with a callback (no -max_msgs,
        no utf8 conversion) go from the C reader to the callback without
        Python (as the message dict :meth:`_msg_value` makes, with -dictmsg)."""
        cb, dictmsg, _post = sub.handler
        if cb and not self.utf8 and not sub.max_msgs and sub.kind == "user":
            self._fast("sub", sub.sid, cb, *self._fast_limits(), int(bool(dictmsg)))

    def _fast_unsub(self, sid):
        """The C reader forgets a subscription; the engine learns how many
        messages it had received through it."""
        got = self._fast("unsub", sid)
        if got:
            sub = self.engine.subs.get(int(sid))
            if sub is not None:
                sub.received += int(got)

    def on_readable(self):
        """A readable handler in Python (``::nats::_on_readable``, which the
        C reader replaced): read, feed the engine, carry out its effects, and
        return the deliveries of this read for the Tcl handler to run once
        the library's work is done.  Never raises: an internal error is
        logged."""
        return self._feed(self._read)

    def _read(self):
        tk = self.tk
        sock = self.sock
        if not sock:
            return
        try:
            data = tk.call("read", sock, READ_CHUNK)
        except TclError as e:
            code = ""
            try:
                code = tk.call("set", "::errorCode")
            except TclError:
                pass
            reason = str(e)
            if isinstance(code, (tuple, list)) and len(code) > 1 and code[0] == "POSIX":
                reason = str(code[1])
            self.engine.connection_lost(reason)
            return
        if data:
            self.engine.receive_data(_to_bytes(data))
        else:
            try:
                eof = tk.call("eof", sock)
            except TclError:
                eof = 1
            if eof:
                self.engine.connection_lost(None)

    def e_flush(self):
        self.flush_id = ""
        self.bridge.dirty.discard(self)
        if self.tcl_pending:
            self.drain_tcl_pubs()
        self.tk.call("set", f"{self.ns}::timers(flush)", "")
        if self.sock:
            self._pump()
        self.run()

    def flush_now(self):
        """Write what is queued at once: the caller is about to wait for a
        reply, so a posted flush would only cost another event-loop turn."""
        if not self.sock or self.engine.status != CONNECTED:
            return
        if self.flush_id:
            self.tk.call("after", "cancel", self.flush_id)
            self.flush_id = ""
            self.tk.call("set", f"{self.ns}::timers(flush)", "")
        self.bridge.dirty.discard(self)
        # the posted flush would have taken the publishes framed in Tcl too
        if self.tcl_pending:
            self.drain_tcl_pubs()
        self._pump()
        eng = self.engine
        if eng.has_effects or self.ended_objs or eng.status != CONNECTED:
            self.run()

    def run_and_write(self):
        """Carry out the effects and write what is queued in the same call
        (a synchronous caller is about to wait for the reply)."""
        self.run(writing=True)
        self.flush_now()

    def _pump(self):
        """Write the engine's queue in chunks of WRITE_CHUNK bytes while the
        socket takes them.  What the kernel does not take stays in the
        channel's buffers (at most about one chunk): then the rest waits in
        the engine, and the channel's writable event (e_drain) goes on."""
        eng = self.engine
        tk = self.tk
        sock = self.sock
        try:
            if self.chan_pending:
                # a non-blocking flush hands the kernel what it takes now,
                # also in a loop that does not enter the event loop
                self.chan_pending = tk.chan_flush(sock)
            while not self.chan_pending and eng.want_write:
                # puts -nonewline, then chan pending output (one C call)
                self.chan_pending = tk.chan_write(sock, eng.data_to_send(WRITE_CHUNK))
        except TclError as e:
            eng.write_failed(str(e))
            return
        if self.chan_pending and not self.drain_armed:
            # also with nothing more to write: e_drain measures the channel
            # again and wakes publishers waiting for room
            self.drain_armed = True
            tk.call("chan", "event", sock, "writable", (self.cmd + "_ev", "drain"))
        if self.chan_pending or self.fast_room < 0:
            self._show_room()

    def e_drain(self):
        """The socket takes data again: write on, and wake publishers that
        wait for room."""
        self.drain_armed = False
        sock = self.sock
        if not sock:
            return
        self.tk.call("chan", "event", sock, "writable", "")
        if self.tcl_pending:
            self.drain_tcl_pubs()
        if self.engine.status == CONNECTED:
            self._pump()
        self.run()
        self._wake_room()

    def _buffered(self) -> int:
        """Bytes on the way to the socket besides the engine's queue: those in
        the channel's buffers (the Tcl fast path's batch goes to the engine
        before anybody asks, see c_room)."""
        return self.chan_pending

    def _wake_room(self):
        """Publishers wait (MakeRoom in nats.tcl) until the way to the socket
        is below half of write_buf_size, or the connection is not up."""
        if not self.room_wanted:
            return
        eng = self.engine
        if eng.status == CONNECTED and self.sock and \
                eng.pending_bytes + self._buffered() >= eng.options.write_buf_size // 2:
            return
        self.room_wanted = False
        self.tk.call("set", f"{self.ns}::Room", 1)

    def c_room(self):
        """Whether a publish may go on now (1), or must wait (0) until
        ``Room`` is written.  Everything framed in Tcl goes to the engine
        first, and to the socket as far as it takes it."""
        self.drain_tcl_pubs()
        eng = self.engine
        if eng.status != CONNECTED or not self.sock:
            # not connected: the engine's reconnect buffer has the say
            return 1
        if eng.pending_bytes or self.chan_pending:
            self._pump()
            if eng.has_effects:
                self.run()
            if eng.status != CONNECTED:
                return 1
        self._show_room()
        if self.fast_room >= 0:
            return 1
        self.room_wanted = True
        return 0

    def _write(self, data: bytes):
        try:
            self.tk.chan_write(self.sock, data)
        except TclError as e:
            self.engine.write_failed(str(e))

    def _close(self):
        """Close the socket without waiting: what the engine still has (a
        disconnect's last publishes) is handed to the non-blocking channel,
        and Tcl finishes writing it in the background after ``close``; a
        peer that does not read can delay nothing here."""
        tk = self.tk
        sock = self.sock
        if self.flush_id:
            tk.call("after", "cancel", self.flush_id)
            self.flush_id = ""
            tk.call("set", f"{self.ns}::timers(flush)", "")
        self.tls_pending = None
        self.drain_armed = False
        self.chan_pending = 0
        if not sock:
            return
        self.sock = ""
        self._fast("rd", "", self.cmd + "_rx", self.cmd + "_rd")
        data = self.engine.data_to_send()
        try:
            tk.call("unset", "-nocomplain", f"::tclnats::sockets({sock})")
            tk.call("chan", "event", sock, "readable", "")
            tk.call("chan", "event", sock, "writable", "")
            if data:
                tk.call("puts", "-nonewline", sock, data)
        except TclError as e:
            # the peer is gone: what was left for it is lost with it
            self._log("debug", f"Last {len(data)} bytes not written to the closed socket: {e}")
        try:
            tk.call("close", sock)
        except TclError as e:
            self._log("warn", f"Failed to close the socket: {e}")
        self._set("sock", "")
        self._wake_room()

    def _starttls(self, server):
        """Start the TLS handshake on the non-blocking socket; readable
        events drive it on (e_tls_step), so the event loop, the connect
        timer among its timers, keeps running while a server takes its time."""
        tk = self.tk
        sock = self.sock
        try:
            tk.call("package", "require", "tls")
        except TclError:
            self.engine.tls_failed("TLS package is not available")
            return
        opts = tk.call("set", f"{self.ns}::config(tls_opts)")
        try:
            merged = tk.call("dict", "merge", ("-require", 1, "-command", "::nats::tls_callback"), opts)
            # no NATS reads while TLS owns the socket (the readable handler and ::tclnats::_await)
            tk.call("unset", "-nocomplain", f"::tclnats::sockets({sock})")
            tk.call("chan", "event", sock, "readable", "")
            tk.call("tls::import", sock, *tk.splitlist(merged))
            tk.call("chan", "configure", sock, "-blocking", 0, "-translation", "binary",
                    "-buffering", "none", "-buffersize", 1 << 20)
        except TclError as e:
            self.engine.tls_failed(str(e))
            return
        self.tls_pending = (server, dict(zip(*[iter(tk.splitlist(merged))] * 2)))
        tk.call("chan", "event", sock, "readable", (self.cmd + "_ev", "tls_step"))
        # the first step sends the ClientHello; the effects of an outcome are
        # carried out by the run() that handed over StartTls
        self._tls_step()

    def e_tls_step(self):
        """A readable event during the TLS handshake."""
        if self.tls_pending is None or not self.sock:
            return
        self._tls_step()
        self.run()

    def _tls_step(self):
        """One step of the handshake: ``tls::handshake`` returns 0 while it
        is in progress, 1 once done, and raises when it failed."""
        tk = self.tk
        sock = self.sock
        try:
            done = tk.getboolean(tk.call("tls::handshake", sock))
        except TclError as e:
            self.tls_pending = None
            tk.call("chan", "event", sock, "readable", "")
            self.engine.tls_failed(str(e))
            return
        if not done:
            return
        server, given = self.tls_pending
        self.tls_pending = None
        self._read_with_c(sock)
        try:
            # TclTLS checked the chain (-require); the name in the certificate is ours to check
            if tk.getboolean(given.get("-require", 1)):
                status = dict(zip(*[iter(tk.splitlist(tk.call("tls::status", sock)))] * 2))
                check_server_name(str(status.get("certificate", "")),
                                  self.engine.pool.tls_name(server, str(given.get("-servername") or "")))
        except (TclError, NatsError) as e:
            self.engine.tls_failed(str(e))
            return
        self.engine.tls_done()

    # ------------------------------------------------------------ API from Tcl
    def c_configure(self, *args):
        if len(args) % 2:
            raise make_error("ErrInvalidArg", f"Missing value for option {args[-1]}")
        self._check_config(args)
        typed = {}
        servers = None
        for i in range(0, len(args), 2):
            name = str(args[i]).lstrip("-")
            spec = OPTION_SPEC.get(name)
            if spec is None:
                raise make_error("ErrInvalidArg", f"Unknown option {args[i]}")
            value = args[i + 1]
            typ = spec[0]
            if name == "servers":
                servers = tuple(self.tk.splitlist(value))
                if not servers:
                    raise make_error("ErrInvalidArg", f"Invalid value for the valid_str option servers : {value}")
                continue
            if typ == "valid_str" and value == "":
                raise make_error("ErrInvalidArg", f"Invalid value for the valid_str option {name} : {value}")
            typed[name] = (coerce(name, typ, value), value)
        o = self.engine.options
        for name, (v, raw) in typed.items():
            setattr(o, name, v)
            shown = ("true" if v else "false") if isinstance(v, bool) else raw
            self.tk.call("set", f"{self.ns}::config({name})", shown)
        self.utf8 = bool(o.utf8_convert)
        if "utf8_convert" in typed or "check_subjects" in typed:
            self.fast_subjects.clear()
            self.tk.call(f"{self.ns}::Fast", "clear")
        if self.utf8:
            # converted payloads: every delivery through the engine
            self._fast("subclear")
        if "pending_msgs_limit" in typed or "pending_bytes_limit" in typed:
            self._fast("limits", *self._fast_limits())
        if "utf8_convert" in typed or "check_subjects" in typed or "write_buf_size" in typed:
            self._fast_path()
        if "custom_reconnect_delay" in typed:
            cb = o.custom_reconnect_delay
            self.engine.reconnect_delay = self._reconnect_delay if cb else None
        if servers is not None:
            self.engine.configure_servers(servers)
            self.tk.call("set", f"{self.ns}::config(servers)", servers)
            self._push_servers()

    def _check_config(self, args) -> None:
        """What configure's option types alone do not say, checked over all
        the pairs before the types are (nats-tcl's messages): a list of
        servers whose every URL parses, timeouts not past the longest, ints
        (counts where -1 means unlimited) not below -1, -tls_opts a dict."""
        for i in range(0, len(args), 2):
            name = str(args[i]).lstrip("-")
            value = args[i + 1]
            if name == "tls_opts":
                if len(self._list_value(name, value, "a dict of tls::import options expected")) % 2:
                    raise make_error("ErrInvalidArg", f"Invalid value for the option tls_opts : {value} (a dict of "
                                     "tls::import options expected)")
                continue
            typ = OPTION_SPEC.get(name, ("",))[0]
            if typ == "list":
                for url in self._list_value(name, value, "a list expected"):
                    parse_url(url)
            elif typ == "timeout" or typ == "int":
                n = _int_value(value)
                if n is None:
                    continue  # the type's check reports it
                if typ == "timeout" and n > _MAX_TIMEOUT_MS:
                    raise make_error("ErrBadTimeout", f"Invalid value for the timeout option {name} : {value}")
                if typ == "int" and n < -1:
                    raise make_error("ErrInvalidArg", f"Invalid value for the option {name} : {value} "
                                     "(-1 means unlimited)")

    def _list_value(self, name, value, expected) -> tuple:
        """``value`` as a Tcl list, or ErrInvalidArg naming the option."""
        try:
            return tuple(self.tk.splitlist(value))
        except TclError:
            raise make_error("ErrInvalidArg", f"Invalid value for the option {name} : {value} ({expected})") from None

    def _reconnect_delay(self, server: dict):
        cb = self.engine.options.custom_reconnect_delay
        return int(self.tk.call(*self.tk.splitlist(cb), tuple(_flat(server))))

    def c_reset(self, name):
        self.engine.options.reset(name)
        if name == "servers":
            self.engine.pool.clear()
            self._push_servers()
        if name == "custom_reconnect_delay":
            self.engine.reconnect_delay = None
        if name == "utf8_convert":
            self.utf8 = False
        if name in ("utf8_convert", "write_buf_size"):
            self._fast_path()
        if name in ("pending_msgs_limit", "pending_bytes_limit"):
            self._fast("limits", *self._fast_limits())

    def c_servers_written(self, *_trace):
        """The Tcl user (or a test) changed the Servers list: take it back."""
        if self.writing_servers:
            return
        value = self.tk.call("set", self.pool_var)
        pool = self.engine.pool
        by_key = {(s.host, int(s.port)): s for s in pool.servers}
        new = []
        for item in self.tk.splitlist(value):
            d = dict(zip(*[iter(self.tk.splitlist(item))] * 2))
            try:
                key = (d["host"], int(d["port"]))
            except (KeyError, ValueError):
                continue
            s = by_key.get(key)
            if s is None:
                s = parse_url(f"{d.get('scheme', 'nats')}://{d['host']}:{d['port']}")
            s.reconnects = int(d.get("reconnects", s.reconnects))
            s.last_attempt = int(d.get("last_attempt", s.last_attempt))
            new.append(s)
        pool.servers = new

    def c_credentials(self):
        o = self.engine.options
        creds = self.engine.pool.credentials(o.user, o.password, o.token)
        if creds is None:
            raise make_error("ErrAuthorization",
                             f"No credentials known for NATS server at {self.engine.host_port()}")
        return tuple(_flat(creds))

    def c_pool_var(self, name):
        self.pool_var = name
        self._push_servers()

    def c_add_server(self, url):
        if self.engine.pool.add_discovered(url) is not None:
            self._log("debug", f"Added {url} to the server pool")
        self._push_servers()

    def c_all_servers(self):
        return tuple(tuple(_flat(s.as_dict())) for s in self.engine.pool.servers)

    def c_current_server(self):
        s = self.engine.pool.current
        if s is None:
            return ()
        return (s.host, s.port, s.scheme)

    def c_connect(self):
        self.engine.connect()
        self.run()

    def c_disconnect(self):
        self.engine.disconnect()
        self.run()
        self.cancel_all_timers()

    def c_publish(self, subject, payload, reply, header, check_subj):
        eng = self.engine
        if self.utf8:
            data = payload.encode("utf-8") if isinstance(payload, str) else payload
        else:
            data = _to_bytes(payload)
        headers = self._headers_from_tcl(header) if header else None
        checked = check_subj not in ("0", "false", 0)
        if eng.status == CONNECTED and (eng.pending_bytes or self.chan_pending) and \
                eng.write_pressure(self.chan_pending) and not self.c_room():
            return 0  # nothing accepted: Tcl waits for Room (MakeRoom) and calls again
        eng.publish(subject, data, reply or None, headers, checked)
        if checked and not self.utf8:
            # later publishes to this subject can be queued in Tcl (see nats.tcl)
            fast = self.fast_subjects
            if len(fast) > 4096:
                fast.clear()
                self.tk.call(f"{self.ns}::Fast", "clear")
            for subj in (subject, reply):
                if subj and subj not in fast and not subj.startswith("_INBOX."):
                    fast.add(subj)
                    self.tk.call(f"{self.ns}::Fast", "subject", subj)
        if eng.has_effects:
            self.run()
        return 1

    def c_pending(self):
        """Tcl has queued publishes (fast path): make sure a flush follows."""
        self.tcl_pending = True
        if self.engine.status == CONNECTED and not self.flush_id:
            # as the engine's Flush: written at the end of a readable
            # handler whose callbacks published (a responder), else posted
            self.bridge.dirty.add(self)
            self.flush_id = self.tk.call("after", 0, self.cmd + "_ev", "flush")
            self.tk.call("set", f"{self.ns}::timers(flush)", self.flush_id)

    def drain_tcl_pubs(self):
        """Hand the publishes framed in Tcl to the engine, in order; or,
        connected with nothing else queued and the socket taking all so
        far, write them from the C buffer to the socket at once."""
        self.tcl_pending = False
        eng = self.engine
        if self.sock and not self.chan_pending and eng.status == CONNECTED and not eng.want_write:
            try:
                count, nbytes, pending = self.tk.call(f"{self.ns}::Fast", "write", self.sock)
            except TclError as e:
                eng.write_failed(str(e))
                return
            if count:
                stats = eng.stats
                stats["out_msgs"] += int(count)
                stats["out_bytes"] += int(nbytes)
            self.chan_pending = int(pending)
            if self.chan_pending and not self.drain_armed:
                # (as _pump: e_drain writes on and wakes publishers waiting for room)
                self.drain_armed = True
                self.tk.call("chan", "event", self.sock, "writable", (self.cmd + "_ev", "drain"))
            return
        count, buf = self.tk.call(f"{self.ns}::Fast", "take")
        if not count:
            return
        # subjects, replies and sizes were checked when they entered the fast path
        self.engine.publish_framed(_to_bytes(buf), int(count))

    def _save_tcl_pubs(self):
        """The connection is no longer up: the fast path's batch, accepted
        by publish calls that returned, goes to the reconnect buffer.  Should
        that be full, the messages are lost, and the log says so."""
        try:
            self.drain_tcl_pubs()
        except NatsError as e:
            self._log("warn", f"Publishes framed before the connection broke were dropped: {e}")

    def _fast_path(self):
        """Open the Tcl publish fast path (FastMax = max_payload) or close it (-1)."""
        eng = self.engine
        limit = -1
        # only while connected: during an outage every publish goes through
        # Engine.publish, which bounds the reconnect buffer
        if not self.utf8 and eng.status == CONNECTED:
            mp = (eng.server_info or {}).get("max_payload")
            if isinstance(mp, int):
                limit = mp
        if limit != self.fast_max:
            self.fast_max = limit
            self.tk.call("set", f"{self.ns}::FastMax", limit)
        self._show_room()

    def _show_room(self):
        """FastRoom: the payload bytes the fast path frames before it calls
        c_room; -1 while the way to the socket is full, so that the next
        fast-path publish waits (MakeRoom) even when posted flushes keep
        taking its batch to the engine (a publisher driven by events)."""
        eng = self.engine
        if eng.status == CONNECTED and eng.write_pressure(self.chan_pending):
            room = -1
        else:
            room = max(0, min(FAST_BATCH, eng.options.write_buf_size // 4))
        if room != self.fast_room:
            self.fast_room = room
            self.tk.call("set", f"{self.ns}::FastRoom", room)

    def _headers_from_tcl(self, header):
        items = self.tk.splitlist(header)
        if len(items) % 2:
            raise make_error("ErrInvalidArg", "Invalid header")
        out = {}
        for i in range(0, len(items), 2):
            key = str(items[i])
            why = header_name_error(key)
            vals = [str(v) for v in self.tk.splitlist(items[i + 1])]
            for v in vals:
                if why is not None:
                    break
                why = header_value_error(key, v)
            if why is not None:
                raise make_error("ErrInvalidArg", f"Invalid headers: {why}")
            out[key] = vals
        return out

    def c_subscribe(self, subject, queue, max_msgs, callback, dictmsg, post):
        sub = self.engine.subscribe(subject, queue, int(max_msgs),
                                    handler=(callback, dictmsg in ("1", "true", 1, True),
                                             0 if post in ("0", "false", 0, False) else 1))
        self.tk.call("set", f"{self.ns}::subscriptions({sub.sid})",
                     ("subj", subject, "queue", queue, "callback", callback,
                      "maxMsgs", int(max_msgs), "isDictMsg", dictmsg, "post", post))
        self._fast_sub(sub)
        self.run()
        return sub.sid

    def c_unsubscribe(self, sid, max_msgs):
        try:
            sid_i = int(sid)
        except ValueError:
            raise make_error("ErrBadSubscription", f"Invalid subscription ID {sid}") from None
        if sid_i in self.engine.subs:
            # (with max_msgs its messages are counted by the engine from now on)
            self._fast_unsub(sid_i)
        gone = self.engine.unsubscribe(sid_i, int(max_msgs))
        if gone:
            self.tk.call("unset", "-nocomplain", f"{self.ns}::subscriptions({sid_i})")
        self.run()

    def _note_internal_subs(self, req):
        mux, prefix = self.engine.request_inbox
        if mux is not None and mux is not self.noted_mux:
            self.noted_mux = mux
            self.tk.call("set", f"{self.ns}::requestsInboxPrefix", prefix)
            if not self.tk.call("info", "exists", f"{self.ns}::subscriptions({mux.sid})"):
                self.tk.call("set", f"{self.ns}::subscriptions({mux.sid})",
                             ("subj", mux.subject, "queue", ""))
        if req.sub is not None:
            self.tk.call("set", f"{self.ns}::subscriptions({req.sub.sid})",
                         ("subj", req.sub.subject, "queue", ""))

    def c_request(self, subject, payload, timeout, callback, dictmsg, header, max_msgs, check_subj):
        """Start a request.  Sync ones (empty callback) are waited for in Tcl."""
        if self.utf8:
            data = payload.encode("utf-8") if isinstance(payload, str) else payload
        else:
            data = _to_bytes(payload)
        headers = self._headers_from_tcl(header) if header else None
        mm = None if max_msgs == "" else int(max_msgs)
        dm = dictmsg in ("1", "true", 1, True)
        if callback:
            handler = (callback, dm, mm is not None)
        elif mm is None:
            handler = _SYNC_DICT if dm else _SYNC_PLAIN
        else:
            handler = None  # a synchronous gathering request: results($id) gets the list
        req = self.engine.request(subject, data, int(timeout), headers, mm, handler,
                                  check_subj not in ("0", "false", 0))
        self._note_internal_subs(req)
        if not callback:
            self.run_and_write()
        else:
            self.tk.call("set", f"{self.ns}::requests({req.id})", "pending")
            self.run()
        return req.id

    # ------------------------------------------------------------ for tcljs
    def start_request(self, subject, payload: bytes, timeout, finish, headers=None, max_msgs=None,
                      gather=None, check_subj=True, async_done=None) -> int:
        """A request whose result is made in Python (JetStream operations)."""
        op = _Op(finish, gather, async_done)
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

    def _op(self, rid) -> "_Op":
        req = self.engine.requests.get(rid)
        if req is not None and isinstance(req.handler, _Op):
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
        return _to_bytes(value)

    def msg_from_tcl(self, value) -> Msg:
        d = self.dict_from_tcl(value)
        hdr = self.headers_from_tcl(d.get("header", ""))
        return Msg(str(d.get("subject", "")), _to_bytes(d.get("data", "")), str(d.get("reply", "")) or None,
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
        js = _js()
        JetStream, JsBridge = js.JetStream, js.JsBridge
        if self.js is None:
            self.js = JsBridge(self)
        return JetStream(self.js, ns, timeout, api_prefix, domain, trace, max_pending, stall_ms).cmd

    def c_service_new(self, serve, name, version, description, metadata, queue_group):
        """A ``nats::service`` (tcl/service.tcl): the command of its Python side."""
        from tclnats_py.tclface.micro import TclService
        return TclService(self, serve, name, version, description, metadata, queue_group).cmd

    def c_cancel_request(self, rid):
        try:
            rid_i = int(rid)
        except ValueError:
            raise make_error("ErrInvalidArg", f"Invalid request ID {rid}") from None
        req = self.engine.requests.get(rid_i)
        self.engine.cancel_request(rid_i)
        self.tk.call("unset", "-nocomplain", f"{self.ns}::requests({rid_i})")
        h = req.handler if req is not None else None
        if h is None or h.__class__ is _Sync or (isinstance(h, _Op) and h.async_done is None):
            # a synchronous call waits for results($id) (a callback cancelled it)
            self.tk.setvar(f"{self.ns}::results({rid_i})",
                           (1, ("NATS", "ErrInvalidArg"), f"Request {rid_i} was cancelled"))
        if req is not None and req.sub is not None:
            self.tk.call("unset", "-nocomplain", f"{self.ns}::subscriptions({req.sub.sid})")
        self.run()

    def c_ping(self, timeout):
        p = self.engine.ping(int(timeout))
        self.run()
        self.flush_now()
        return p.id

    def c_generation(self, api):
        """The nats-tcl API generation this connection serves (tcl/v2 says 2):
        2.x's reconnect wait counts from the last connection too."""
        self.engine.pool.wait_after_connect = str(api) == "2"

    def c_inbox(self):
        return self.engine.new_inbox()

    def c_out_buffer(self, *_trace):
        """Read trace of outBuffer: show the pending protocol commands."""
        chunks = self.engine.pending_commands()
        self.tk.call("set", f"{self.ns}::outBuffer", tuple(chunks))

    def c_check_subject(self, subject, mode):
        eng = self.engine
        return int(eng.check_subject(subject, wildcard=(mode == "wildcard"), queue=(mode == "queue")))

    def c_set_log_level(self, level):
        self.min_level = _LEVELS.get(level, 0)

    def c_destroy(self):
        try:
            self.engine.disconnect()
            self.run()
        except Exception as e:
            self._log("warn", f"Error while closing the connection: {e}")
        self.cancel_all_timers()
        self.dead = True
        self.bridge.conns.pop(self.cmd, None)
        self.bridge.dirty.discard(self)
        for name in (self.cmd, self.cmd + "_ev", self.cmd + "_rd", self.cmd + "_rx"):
            try:
                self.tk.deletecommand(name)
            except TclError:
                pass


_bridges: dict = {}   # Tcl_Interp address -> _Bridge


def _prepare(tk: Interp) -> "_Bridge":
    """Install the bridge's commands and state into one interpreter."""
    key = tk.interpaddr()
    bridge = _bridges.get(key)
    if bridge is not None and not tk.deleted():
        return bridge
    bridge = _bridges[key] = _Bridge(tk)

    def gone():
        # Tcl deleted the interpreter (interp delete, thread exit): its
        # channels and timers are gone with it; drop the engines
        _bridges.pop(key, None)
        bridge.dispose()
    tk.set_on_delete(gone)
    libdir = tcl_library_dir()
    tk.call("set", "::tclnats::library", libdir)
    tk.call("set", "::tclnats::hosted", 1)
    tk.eval(f"if {{[lsearch -exact $::auto_path {{{libdir}}}] < 0}} {{lappend ::auto_path {{{libdir}}}}}")
    # ::tclnats::r (unpacking Python replies) is needed before package nats
    # loads: the extension made it (tclcross_interp.c) with the interpreter's Interp
    tk.eval("namespace eval ::tclnats {}")
    return bridge


def install_loaded(tk: Interp) -> None:
    """Entry from the Tcl extension ([load] in pkgIndex.tcl): any Tcl
    interpreter, in any Tcl thread, of any host process."""
    from tclnats_py._tclcross import embedded
    if sys.flags.no_site and embedded():
        # the Python that the extension started (not a host's, run with -S
        # on purpose: its sys.prefix and sys.path stay as they are)
        _site_paths()
    _prepare(tk)


def _site_paths() -> None:
    """The part of :mod:`site` that a Python started by the Tcl extension
    needs (it starts without site: the .pth files of a site-packages folder,
    editable-install finders and the like, cost tens of ms and MB at every
    ``package require nats``): ``sys.prefix`` is the virtual environment
    when ``sys.executable`` is one's (a ``pyvenv.cfg`` beside it or one
    level up), and that environment's site-packages (plus the base
    installation's, when the environment includes them) come after the
    folder that holds tclnats_py, so its dependencies (nkeys) import."""
    exe_dir = os.path.dirname(sys.executable or "")
    prefixes = [sys.prefix]
    for cfg in (os.path.join(exe_dir, "pyvenv.cfg"), os.path.join(os.path.dirname(exe_dir), "pyvenv.cfg")):
        if exe_dir and os.path.isfile(cfg):
            env = os.path.dirname(cfg)
            system = False
            with open(cfg, encoding="utf-8") as f:
                for line in f:
                    key, sep, value = line.partition("=")
                    if sep and key.strip().lower() == "include-system-site-packages":
                        system = value.strip().lower() == "true"
            sys.prefix = sys.exec_prefix = env
            prefixes = [env] + ([sys.base_prefix] if system else [])
            break
    import site  # its functions only: with no_site, importing it changes nothing
    for path in site.getsitepackages(prefixes):
        if path not in sys.path and os.path.isdir(path):
            sys.path.append(path)


def install(interp: Any) -> None:
    """Make ``package require nats`` available in a tkinter interpreter.

    ``interp`` is a ``tkinter.Tcl()``/``tkinter.Tk()`` object (or its ``.tk``).
    The bridge drives it through the Tcl C API (:mod:`tclnats_py._tclcross`)
    like any other interpreter.  ``TCLLIBPATH`` gains the package folder, so
    Thread-package workers and child interpreters that this process creates
    find ``package require nats`` too (each then loads the Tcl extension,
    which joins this process's Python).
    """
    tk = getattr(interp, "tk", interp)
    if not isinstance(tk, Interp):
        tk = Interp.from_address(tk.interpaddr())
    _prepare(tk)
    libdir = tcl_library_dir()
    paths = os.environ.get("TCLLIBPATH", "")
    if libdir not in tk.splitlist(paths):
        os.environ["TCLLIBPATH"] = f"{{{libdir}}} {paths}".strip()
        tk.call("set", "::env(TCLLIBPATH)", os.environ["TCLLIBPATH"])
