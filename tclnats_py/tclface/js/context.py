"""``nats::jet_stream``: one JetStream context of a connection, and the
per-connection registry of the Tcl commands of JetStream objects.

:class:`JetStream` runs ``engine.js`` operations: each Request step is a
request of the connection's engine that the Tcl layer waits for
(``requests($id)``); its result advances the operation, which may chain to
the next request (:class:`Chain`).  Its commands are the streams, consumers,
messages, publishes, acks and fetches of nats-tcl's ``jet_stream``, and they
make the other objects: pull requests (``pull.py``), ordered consumers
(``ordered.py``), KV buckets (``kv.py``) and object stores (``objstore.py``).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from tclnats_py._tclcross import TclError

from tclnats_py.engine.connection import CLOSED, Msg
from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.options import to_bool
from tclnats_py.engine.js import config as _cfg
from tclnats_py.engine.js import counter as _counter
from tclnats_py.engine.js import schedule as _schedule
from tclnats_py.engine.js.batch import publish_batch
from tclnats_py.engine.js.direct import check as check_direct
from tclnats_py.engine.js import kv as _kv
from tclnats_py.engine.js import objstore as _obj
from tclnats_py.engine.js import ordered as _ordered
from tclnats_py.engine.js.ack import NAK, TERM, WPI, ACK, nak_payload
from tclnats_py.engine.js.api import (JsApi, Publish, Request, advance, check_name, filename_safe,
                                      stored_from_direct)
from tclnats_py.engine.js.api import ns2ms as _ns2ms
from tclnats_py.engine.js.api_level import FEATURES, known_level, require_level, too_old
from tclnats_py.engine.js.publish import ack_error_dict, parse_ack_fast, publish_headers, stalled, ttl_from_ms
from tclnats_py.engine.js.priority import PRIORITY_SPEC, PullGroup, consumer_create, consumer_unpin
from tclnats_py.engine.js.pull import Fetch, connection_gone
from tclnats_py.tclface.commands import tcl_commands
from tclnats_py.tclface.values import tcl_value
from tclnats_py.tclface.js.convert import (_BATCH_OPTIONS, _DELETE_MSG_OPTIONS, _FETCH_OPTIONS, _GET_OPTIONS, _KV_OPTIONS,
                                           _NAK_OPTIONS, _NAMES_OPTIONS, _OBJ_OPTIONS, _ORDERED_OPTIONS,
                                           _PAUSE_OPTIONS, _PUBLISH_OPTIONS, _PURGE_OPTIONS, _RESET_OPTIONS,
                                           _SCHEDULE_OPTIONS, TclArgs,
                                           _consumer_reply, _option_subject, _pause_until, _stream_reply,
                                           _timeout_option)
from tclnats_py.engine.js import consumer_admin as _admin
from tclnats_py.tclface.js import direct as _direct
from tclnats_py.tclface.js.kv import KeyValue
from tclnats_py.tclface.js.objstore import ObjectStore
from tclnats_py.tclface.js.ordered import OrderedConsumer
from tclnats_py.tclface.js.pull import PullRequest

__all__ = ["Chain", "JsBridge", "JetStream"]


def _pause_reply(resp: dict):
    """CONSUMER.PAUSE's reply for Tcl: ``pause_remaining`` in ms."""
    _ns2ms(resp, "pause_remaining")
    return tcl_value(resp)


class Chain:
    """Returned by a post-processor: the result comes from another request."""

    __slots__ = ("rid",)

    def __init__(self, rid: int):
        self.rid = rid


class JsBridge:
    """Per-connection JetStream support: registered as Tcl commands."""

    def __init__(self, conn):
        self.conn = conn
        self.tk = conn.tk
        self.args = TclArgs(conn.tk)
        # command names must be unique in the interpreter, across connections
        self.ids = conn.bridge.ids
        self.objects: dict = {}

    def register(self, obj, cmd_name):
        self.objects[cmd_name] = obj
        self.tk.createcommand(cmd_name, functools.partial(self.conn.call, obj))

    def unregister(self, cmd_name):
        self.objects.pop(cmd_name, None)
        try:
            self.tk.deletecommand(cmd_name)
        except TclError:
            pass


def _counter_tcl(value: int):
    """A counter's value for Tcl: an int, or its decimal text past 64 bits
    (a bignum to ``expr`` either way)."""
    return value if -(1 << 63) <= value < (1 << 63) else str(value)


@tcl_commands
class JetStream:
    """One ``nats::jet_stream`` object."""

    def __init__(self, js: JsBridge, ns: str, timeout, api_prefix, domain, trace, max_pending=4000,
                 stall_ms=200):
        self.js = js
        self.conn = js.conn
        self.tk = js.tk
        self.args = js.args
        self.ns = ns
        self.timeout = int(timeout)
        self.domain = domain or ""
        self.trace = bool(to_bool(trace))
        # a sync fetch ended by disconnect: ErrConnectionClosed (3.2.1), or
        # the messages it got so far (the 2.0.4 API's consume, which had no
        # such error: see c_fetch_closed_returns)
        self.fetch_closed_returns = False
        self.api = JsApi(domain or None, api_prefix or None)
        self.prefix = self.api.prefix
        self.cmd = f"::tclnats::js{next(js.ids)}"
        self.pulls: dict = {}  # rid -> PullRequest of asynchronous fetches
        # (stream, consumer) -> {group: pin id}: the pins this context's fetches
        # were given (priority groups, ADR-42), sent with its later fetches
        self.pins: dict = {}
        # asynchronous publishes (-callback) waiting for their ack: at most
        # max_pending; while that many are out, ${ns}::AsyncFull is 1 and the
        # Tcl layer waits up to stall_ms for one (-publish_async_*)
        self.max_pending = int(max_pending)
        self.stall_ms = int(stall_ms)
        if self.max_pending < 1:
            raise make_error("ErrInvalidArg",
                             f"Invalid value for the option publish_async_max_pending : {max_pending} (1 or more)")
        self.async_rids: set = set()
        self.async_full = False
        js.register(self, self.cmd)

    def _log(self, level, text):
        self.conn._log(level, text)

    @property
    def server_version(self):
        return self.conn.engine.server_info.get("version")

    # -------------------------------------------------------- running _js operations
    def run(self, op, post=tcl_value) -> int:
        """Start a ``_js`` operation; the id of its first request, which the
        Tcl layer waits for.  ``post`` makes the Tcl result of its result."""
        r = self._advance(op, post, None, None)
        if r.__class__ is not Chain:
            raise make_error("ErrInvalidArg", "operation finished without a request")
        return r.rid

    def _advance(self, op, post, value, error):
        while True:
            kind, step = advance(op, value, error)
            if kind == "done":
                return post(step)
            if step.__class__ is Publish:
                self.conn.engine.publish(step.subject, step.payload, step.reply, step.headers)
                self.conn.run()
                value = error = None
                continue
            if step.__class__ is not Request:
                raise TypeError(f"the Tcl face runs no {type(step).__name__} step")
            return Chain(self._request(step, op, post))

    def _request(self, step: Request, op, post) -> int:
        return self._send(step, lambda msg, error: self._advance(op, post, msg, error))

    def run_request(self, step: Request, result, post=tcl_value) -> int:
        """An operation of one request run without its generator (the
        engine's ``*_request`` / ``*_result`` pairs): ``result(msg, error)``
        makes its result from the reply, or raises its error (``error``: the
        request's failure).  The id of the request, as :meth:`run`."""
        return self._send(step, lambda msg, error: post(result(msg, error)))

    def _send(self, step: Request, cont) -> int:
        subject = step.subject
        if self.trace:
            self._log("debug", f">>> {subject} {step.payload.decode('utf-8', 'replace')}")

        def finish(outcome, req):
            try:
                msg = self.conn.outcome_msg(outcome, req)
            except NatsError as e:
                return cont(None, e)
            if self.trace:
                self._log("debug", f"<<< {subject} {msg.data.decode('utf-8', 'replace')}")
            return cont(msg, None)

        timeout = self.timeout if step.timeout is None else step.timeout
        return self.conn.start_request(subject, step.payload, timeout, finish, headers=step.headers,
                                       check_subj=step.check_subject)

    # -------------------------------------------------------- simple getters
    def c_api_prefix(self):
        return self.prefix

    def c_timeout(self):
        return self.timeout

    def c_domain(self):
        return self.domain

    def c_check_filename_safe(self, s):
        return int(filename_safe(s))

    def c_destroy(self):
        self.js.unregister(self.cmd)

    def c_require_level(self, feature):
        """"" when the server's API level (known already) is enough for
        ``feature``, ErrServerTooOld when it is not; else the id of the
        ``$JS.API.INFO`` request that finds out, for the Tcl layer to wait on
        (before a publish with ``-ttl`` ...)."""
        level = known_level(self.api)
        if level is None:
            return self.run(require_level(self.api, feature))
        if level < FEATURES[feature][0]:
            raise too_old(feature, level)
        return ""

    def c_with_timeout(self, timeout):
        """A copy of this context with another API timeout: the per-call
        ``-timeout`` of nats-tcl 2.x's Nov 2022 API (destroyed after the call
        started; its requests keep the copy)."""
        clone = copy.copy(self)
        clone.timeout = int(timeout)
        clone.cmd = f"::tclnats::js{next(self.js.ids)}"
        self.js.register(clone, clone.cmd)
        return clone.cmd

    # -------------------------------------------------------- streams
    def c_add_stream(self, stream, *args):
        return self.run(self.api.stream_create(self._stream_config(stream, args)), _stream_reply)

    def c_update_stream(self, stream, *args):
        return self.run(self.api.stream_update(self._stream_config(stream, args)), _stream_reply)

    def _stream_config(self, stream, args) -> dict:
        spec = _cfg.STREAM_SPEC + _cfg.STREAM_EXTRA_SPEC
        opts = self.args.options(spec, args, beyond=True)
        return _cfg.stream_config(stream, opts, unit="ms", strict=False, extended=True)

    def c_add_stream_from_json(self, json_config):
        return self.run(self.api.stream_create_json(json_config), str)

    def c_delete_stream(self, stream):
        return self.run(self.api.stream_delete(stream))

    def c_purge_stream(self, stream, *args):
        o = self.args.build(_PURGE_OPTIONS, args)
        return self.run(_option_subject(self.api.stream_purge(stream, o.get("filter"), o.get("keep"), o.get("seq"))))

    def c_stream_info(self, stream):
        return self.run(self.api.stream_info(stream), _stream_reply)

    def c_stream_names(self, *args):
        o = self.args.build(_NAMES_OPTIONS, args)
        return self.run(_option_subject(self.api.stream_names(o.get("subject"))), tuple)

    def c_stream_list(self, *args):
        """The info of every stream (nats-tcl 2.x's stream_info without a stream)."""
        o = self.args.build(_NAMES_OPTIONS, args)
        return self.run(_option_subject(self.api.stream_list(o.get("subject"))),
                        lambda infos: tuple(_stream_reply(i) for i in infos))

    def c_account_info(self):
        return self.run(self.api.account_info())

    # -------------------------------------------------------- consumers
    def _consumer(self, stream, action, given: dict):
        _pause_until(given)
        spec = _cfg.CONSUMER_SPEC + _cfg.CONSUMER_EXTRA_SPEC + PRIORITY_SPEC
        cfg = _cfg.consumer_config(self.args.options(spec, (), given=given), unit="ms", extended=True)
        req = self.api.consumer_create_request(stream, cfg, action, server_version=self.server_version,
                                               legacy_durable=True)
        return self.run(consumer_create(self.api, req, cfg), _consumer_reply)

    def c_add_consumer(self, stream, *args):
        return self._consumer(stream, "create", self.args.pairs(args))

    def c_update_consumer(self, stream, *args):
        return self._consumer(stream, "update", self.args.pairs(args))

    def c_add_pull_consumer(self, stream, consumer, *args):
        given = self.args.pairs(args)
        given["durable_name"] = consumer
        return self._consumer(stream, "create", given)

    def c_add_push_consumer(self, stream, consumer, deliver_subject, *args):
        given = self.args.pairs(args)
        given["durable_name"] = consumer
        given["deliver_subject"] = deliver_subject
        return self._consumer(stream, "create", given)

    def c_add_consumer_from_json(self, stream, consumer, json_config):
        return self.run(self.api.consumer_create_json(stream, consumer, json_config), str)

    def c_delete_consumer(self, stream, consumer):
        return self.run(self.api.consumer_delete(stream, consumer))

    def c_consumer_info(self, stream, consumer):
        return self.run(self.api.consumer_info(stream, consumer), _consumer_reply)

    def c_pause_consumer(self, stream, consumer, *args):
        """``-pause_until`` RFC 3339 or ms since the epoch (required); the
        reply as a dict, ``pause_remaining`` in ms.  nats-server 2.11+."""
        given = self.args.pairs(args)
        if "pause_until" not in given:
            raise make_error("ErrInvalidArg", "Option pause_until is required")
        _pause_until(given)
        o = _cfg.build(_PAUSE_OPTIONS, given)
        return self.run(_admin.pause_consumer(self.api, stream, consumer, o["pause_until"]), _pause_reply)

    def c_resume_consumer(self, stream, consumer):
        return self.run(_admin.resume_consumer(self.api, stream, consumer), _pause_reply)

    def c_reset_consumer(self, stream, consumer, *args):
        """``?-seq n?``: the consumer's info (as consumer_info) with ``reset_seq``.
        nats-server 2.14+."""
        o = self.args.build(_RESET_OPTIONS, args)
        return self.run(_admin.reset_consumer(self.api, stream, consumer, o.get("seq")), _consumer_reply)

    def c_consumer_names(self, stream):
        return self.run(self.api.consumer_names(stream), tuple)

    # -------------------------------------------------------- messages
    def _stored_msg(self, m, sid=None):
        """A message read from a stream as a nats::msg dict with seq and time."""
        msg = Msg(m.subject, m.data, None, m.headers, sid)
        return self.conn.msg_dict(msg, extra=("seq", m.seq, "time", m.time))

    def c_stream_msg_get(self, stream, *args):
        o = self.args.build(_GET_OPTIONS, args)
        return self.run(_option_subject(self.api.msg_get(stream, **o)), self._stored_msg)

    def c_stream_direct_get(self, stream, *args):
        given = self.args.pairs(args)
        if "batch" in given or "multi_last" in given:
            return self._direct_batch(stream, given)
        o = self.args.build(_GET_OPTIONS, args)

        def op():
            reply = yield self.api.direct_get_request(stream, **o)
            return stored_from_direct(reply, stream), reply.sid  # nats-tcl shows the reply's sub_id
        return self.run(_option_subject(op()), lambda r: self._stored_msg(*r))

    def _direct_batch(self, stream, given: dict) -> int:
        """``-batch n`` / ``-multi_last {subjects}``: the list of the messages
        (ADR-31), after the server's API level is checked."""
        opts = self.args.options(_direct.BATCH_OPTIONS + _GET_OPTIONS, (), given=given)
        try:
            get = _direct.direct_batch(stream, _cfg.build(_direct.BATCH_OPTIONS + _GET_OPTIONS, opts, unit="ms"))
        except NatsError as e:
            if e.code != "ErrBadSubject":
                raise
            raise make_error("ErrInvalidArg", str(e)) from None  # (nats-tcl's code for a bad option value)
        gather = _direct.BatchGather(get, self._stored_msg)

        def start(level):
            if self.trace:
                self._log("debug", f">>> {get.subject(self.api)} {get.body.decode()}")
            return Chain(self.conn.start_request(get.subject(self.api), get.body, self.timeout, gather.finish,
                                                 max_msgs=gather.max_msgs, gather=gather))
        return self.run(_option_subject(check_direct(self.api, get)), start)

    # -------------------------------------------------------- counters (ADR-49)
    def c_counter_add(self, stream, subject, delta):
        """``$js counter_add stream subject delta``: the counter's new value
        (``stream`` names the counter's stream, as in counter_get; the
        publish goes to ``subject``)."""
        check_name("stream", stream)
        return self.run(_counter.add(self.api, subject, delta), _counter_tcl)

    def c_counter_get(self, stream, subject):
        """``$js counter_get stream subject``: the counter's value; ErrMsgNotFound."""
        return self.run(_counter.get(self.api, stream, subject), _counter_tcl)

    def c_stream_msg_delete(self, stream, *args):
        o = self.args.build(_DELETE_MSG_OPTIONS, args)
        return self.run(self.api.msg_delete(stream, o.get("seq"), o["no_erase"]))

    # -------------------------------------------------------- publish
    def publish_request(self, subject, data, headers, timeout, callback):
        """A JetStream publish: a request whose reply is a PubAck (a dict),
        or, with a callback, ``callback timedOut pubAck pubError``."""
        if not callback:
            def finish(outcome, req):
                return tcl_value(parse_ack_fast(self.conn.outcome_msg(outcome, req)))
            return self.conn.start_request(subject, data, timeout, finish, headers=headers)

        if len(self.async_rids) >= self.max_pending:
            self._async_room()
            if len(self.async_rids) >= self.max_pending:
                self._show_full(True)
                raise stalled(self.max_pending, self.stall_ms)

        def deliver(outcome, req, out):
            self.async_rids.discard(req.id)
            if self.async_full and len(self.async_rids) < self.max_pending:
                self._show_full(False)
            if outcome in ("timeout", "no_responders", "lost"):
                out.extend((1, callback, 1, "", ""))
                return
            if outcome != "msg":
                return  # closed by the user: the callback is not invoked
            try:
                ack = parse_ack_fast(req.msg)
            except NatsError as e:
                if e.code == "ErrNoResponders":
                    out.extend((1, callback, 1, "", ""))
                else:
                    out.extend((1, callback, 0, "", tcl_value(ack_error_dict(e))))
                return
            out.extend((1, callback, 0, tcl_value(ack), ""))
        rid = self.conn.start_request(subject, data, timeout, None, headers=headers, async_done=deliver)
        self.async_rids.add(rid)
        if len(self.async_rids) >= self.max_pending:
            self._show_full(True)
        return rid

    def _async_room(self):
        """Forget asynchronous publishes that ended without their callback
        being told (a request cancelled by its ID)."""
        live = self.conn.engine.requests
        self.async_rids = {rid for rid in self.async_rids if rid in live}
        if self.async_full and len(self.async_rids) < self.max_pending:
            self._show_full(False)

    def _show_full(self, full: bool):
        self.async_full = full
        self.tk.call("set", f"{self.ns}::AsyncFull", 1 if full else 0)

    def c_publish(self, subject, data, *args):
        """``$js publish subject message ?options?`` without making a
        nats::msg first (the common form of a JetStream publish)."""
        return self._publish(subject, self.conn.payload_bytes(data), None, args)

    def c_publish_msg(self, msg, *args):
        d = self.conn.dict_from_tcl(msg)
        if "subject" not in d:
            raise make_error("ErrInvalidArg", "Invalid message: a nats::msg with a subject expected")
        headers = self.conn.headers_from_tcl(d.get("header", ""))
        return self._publish(d.get("subject", ""), self.conn.payload_bytes(d.get("data", "")), headers, args)

    def _publish(self, subject, data, headers, args):
        if not args:
            return self.publish_request(subject, data, headers, self.timeout, None)
        given = self.args.pairs(args)
        _timeout_option(given, "timeout")
        o = _cfg.build(_PUBLISH_OPTIONS, given)
        if len(o) > ("timeout" in o) + ("callback" in o):
            if "stream" in o:
                check_name("stream", o["stream"])
            headers = publish_headers(headers, expected_stream=o.get("stream"),
                                      ttl=ttl_from_ms(o["ttl"]) if "ttl" in o else None,
                                      expected_last_subject_seq=o.get("expected_last_subject_seq"),
                                      expected_last_subject_seq_subject=o.get("expected_last_subject_seq_subject"))
        return self.publish_request(subject, data, headers, o.get("timeout", self.timeout), o.get("callback"))

    def c_publish_schedule(self, subject, data, *args):
        """``$js publish_schedule subject data -target t (-at iso | -every ms |
        -cron spec) ?-time_zone tz? ?-ttl ms? ?-source subject? ?-timeout ms?``:
        store a message schedule (ADR-51); its PubAck."""
        given = self.args.pairs(args)
        _timeout_option(given, "timeout")
        o = _cfg.build(_SCHEDULE_OPTIONS, given)
        headers, features = _schedule.schedule_headers(
            subject, target=o.get("target"), at=o.get("at"), every=o.get("every"), cron=o.get("cron"),
            time_zone=o.get("time_zone"), ttl=o.get("ttl"), source=o.get("source"), unit="ms")
        return self.run(_schedule.publish_schedule(self.api, subject, self.conn.payload_bytes(data), headers,
                                                   features, o.get("timeout")))

    def c_publish_batch(self, msgs, *args):
        """``$js publish_batch {{subject data ?headers?} ...} ?-timeout ms?
        ?-ack_every n?``: the messages as one atomic batch (ADR-50), all
        stored or none; a dict ``stream seq batch_id batch_size`` (``seq``:
        the last message's)."""
        given = self.args.pairs(args)
        _timeout_option(given, "timeout")
        o = _cfg.build(_BATCH_OPTIONS, self.args.options(_BATCH_OPTIONS, args, given=given))
        items = []
        for m in self.tk.splitlist(msgs):
            parts = self.tk.splitlist(m)
            if len(parts) not in (2, 3):
                raise make_error("ErrInvalidArg", f"Invalid batch message {m}: {{subject data ?headers?}} expected")
            item = (str(parts[0]), self.conn.payload_bytes(parts[1]))
            items.append(item + (self.conn.headers_from_tcl(parts[2]),) if len(parts) == 3 else item)
        return self.run(publish_batch(self.api, items, o.get("ack_every", 0), o.get("timeout")))

    # -------------------------------------------------------- acks
    def _ack(self, msg, payload: bytes):
        self.conn.engine.publish(self.conn.dict_from_tcl(msg).get("reply", ""), payload)
        self.conn.run()

    def c_ack(self, msg):
        self._ack(msg, ACK)

    def c_ack_sync(self, msg):
        return self.conn.start_request(self.conn.dict_from_tcl(msg).get("reply", ""), ACK, self.timeout,
                                       lambda outcome, req: self.conn.outcome_msg(outcome, req).data)

    def c_nak(self, msg, *args):
        given = self.args.pairs(args)
        _timeout_option(given, "delay")
        o = _cfg.build(_NAK_OPTIONS, self.args.options(_NAK_OPTIONS, args, given=given), unit="ms")
        self._ack(msg, nak_payload(o["delay"]) if "delay" in o else NAK)

    def c_term(self, msg):
        self._ack(msg, TERM)

    def c_in_progress(self, msg):
        self._ack(msg, WPI)

    # -------------------------------------------------------- fetch
    def c_fetch(self, stream, consumer, *args):
        given = self.args.pairs(args)
        _timeout_option(given, "timeout")
        _timeout_option(given, "expires")
        o = _cfg.build(_FETCH_OPTIONS, given)
        subject = self.api.next_subject(check_name("stream", stream), check_name("consumer", consumer))
        group = self._pull_group(stream, consumer, o)
        fetch = Fetch(o["batch_size"], timeout_ms=o.get("timeout"), expires_ms=o.get("expires"),
                      js_timeout_ms=self.timeout, group=group, repull=True, deliver=bool(o.get("callback")))
        if self.trace:
            self._log("debug", f">>> {subject} {fetch.body.decode()}")
        pull = PullRequest(self.conn, fetch, o.get("callback"), self.fetch_closed_returns)
        pull.owner = self.pulls
        # the request's inbox takes -batch_size messages, and one more for the
        # 423 of a stale pin, after which the fetch pulls again unpinned
        rid = self.conn.start_request(subject, fetch.body, fetch.timeout_ms, pull.finish,
                                      max_msgs=fetch.batch + (1 if group is not None and group.pin is not None else 0),
                                      gather=pull)
        pull.rid = rid
        if pull.callback is not None and not pull.done:
            self.pulls[rid] = pull
        return rid

    def c_fetch_gone(self):
        """Asked by a sync fetch that ended by its timeout or no responders,
        with nothing, when its wait ends: a connection closed by then makes
        that the fetch's error (connection_gone, as nats-tcl looks at the
        connection when its wait ends), and no consumer_info is asked.  The
        connection can close between the end of the pull and the end of the
        wait: a WebSocket's close frame is read with the data before it."""
        eng = self.conn.engine
        closed = eng.status == CLOSED
        connection_gone(closed and eng.last_error is None, closed and eng.last_error is not None)

    def _pull_group(self, stream, consumer, o):
        """The fetch's priority group (ADR-42), or None.  A stale pin (the
        server's 423) is forgotten and the fetch pulls again unpinned."""
        if "group" not in o:
            if any(k in o for k in ("min_pending", "min_ack_pending", "priority")):
                raise make_error("ErrInvalidArg", "-min_pending, -min_ack_pending and -priority need -group")
            return None
        return PullGroup(o["group"], min_pending=o.get("min_pending"), min_ack_pending=o.get("min_ack_pending"),
                         priority=o.get("priority"), pins=self.pins.setdefault((stream, consumer), {}))

    def c_unpin_consumer(self, stream, consumer, group):
        """Take the pin of ``group`` from its client (ADR-42)."""
        return self.run(consumer_unpin(self.api, stream, consumer, group))

    def c_fetch_closed_returns(self):
        """From now on a sync fetch ended by disconnect returns what it got
        (tcl/v2: nats-tcl 2.0.4's consume)."""
        self.fetch_closed_returns = True

    def c_pull_object(self, rid, obj):
        pull = self.pulls.get(int(rid))
        if pull is None or pull.done:
            # already over: the object goes away at once
            self.tk.call("after", 0, ("catch", (obj, "destroy")))
        else:
            pull.tcl_obj = obj

    def c_pull_active(self, rid):
        """1 while the pull of this fetch ID goes on; 0 once it has ended (its
        object is then about to go away, after callbacks already posted)."""
        pull = self.pulls.get(int(rid))
        return int(pull is not None and not pull.done)

    def c_cancel_pull_request(self, rid):
        """Stop a pull request (the fetch ID object is being destroyed)."""
        rid_i = int(rid)
        pull = self.pulls.pop(rid_i, None)
        if pull is not None:
            pull.tcl_obj = None
        if rid_i in self.conn.engine.requests:
            self.conn.c_cancel_request(rid_i)

    # -------------------------------------------------------- ordered consumer
    def c_ordered_consumer(self, stream, obj, ns, *args):
        o = self.args.build(_ORDERED_OPTIONS, args)
        if "callback" not in o:
            raise make_error("ErrInvalidArg", "Option callback is required")
        state = _ordered.OrderedConsumer(stream, filter_subject=o.get("filter_subject"),
                                         deliver_policy=o["deliver_policy"], headers_only=o["headers_only"],
                                         idle_heartbeat_ms=o["idle_heartbeat"], description=o.get("description"))
        oc = OrderedConsumer(self, state, ns, o["callback"], o["post"])
        return (oc.cmd, oc.start())

    # -------------------------------------------------------- KV
    def _bucket_cmd(self, bucket):
        return KeyValue(self, bucket).cmd if bucket is not None else ""

    def c_bind_kv_bucket(self, bucket):
        return self.run(_kv.bind(self.api, bucket), self._bucket_cmd)

    def c_check_kv_bucket(self, bucket):
        """The engine's bucket-name rule, for the 2.x KV layer's own calls."""
        _kv.check_bucket(bucket)

    def c_kv_unchecked(self, bucket):
        """A bucket handle made without asking the server (the Aug 2023 KV
        API's -check_bucket false): no mirror known, reads by STREAM.MSG.GET."""
        return KeyValue(self, _kv.Bucket(self.api, bucket, {})).cmd

    def c_create_kv_bucket(self, bucket, *args):
        return self._create_bucket(bucket, args)

    def c_create_kv_aggregate(self, bucket, writable, origins, *args):
        origins = self.args.splitlist("origins", origins)
        if not origins:
            raise make_error("ErrInvalidArg", "List of KV origins is required")
        if to_bool(writable) is None:
            raise make_error("ErrInvalidArg", f"writable = {writable} is not a boolean")
        self._no_mirror_options(args)
        return self._create_bucket(bucket, args, origins=[self._origin(o) for o in origins],
                                   writable=to_bool(writable))

    def c_create_kv_mirror(self, name, origin, *args):
        self._no_mirror_options(args)
        return self._create_bucket(name, args, mirror_origin=self._origin(origin))

    @staticmethod
    def _no_mirror_options(args):
        if "-mirror_name" in args or "-mirror_domain" in args:
            raise make_error("ErrInvalidArg", "-mirror_name and -mirror_domain are not allowed")

    def _origin(self, origin) -> dict:
        """A KV origin (nats::make_kv_origin's dict) for _js.kv.make_origin."""
        items = self.args.splitlist("origin", origin)
        if len(items) % 2:
            raise make_error("ErrInvalidArg", f"Invalid KV origin {origin}: a dict expected")
        org = {str(items[i]): items[i + 1] for i in range(0, len(items), 2)}
        if "bucket" not in org:
            raise make_error("ErrInvalidArg", f"Invalid KV origin {origin}: no bucket")
        if org.get("keys"):
            org["keys"] = [str(k) for k in self.args.splitlist("keys", org["keys"])]
        kw: dict[str, Any] = {k: (org[k] or None) if k != "bucket" else str(org[k])
                              for k in ("bucket", "stream", "keys", "api", "deliver", "domain") if k in org}
        return _kv.make_origin(**kw)

    def _create_bucket(self, bucket, args, **kw):
        o = self.args.build(_KV_OPTIONS, args)
        return self.run(_kv.create_bucket(
            self.api, bucket, history=o["history"], ttl_ms=o.get("ttl"), max_value_size=o.get("max_value_size"),
            max_bucket_size=o.get("max_bucket_size"), storage=o["storage"], num_replicas=o["num_replicas"],
            description=o.get("description"), compression=o.get("compression"), metadata=o.get("metadata"),
            mirror_name=o.get("mirror_name"), mirror_domain=o.get("mirror_domain"),
            limit_marker_ttl_ms=o.get("limit_marker_ttl"), **kw), self._bucket_cmd)

    def c_delete_kv_bucket(self, bucket):
        return self.run(_kv.delete_bucket(self.api, bucket))

    def c_kv_buckets(self):
        return self.run(_kv.bucket_names(self.api), tuple)

    def c_empty_kv_bucket(self, bucket):
        return self.run(_kv.empty_bucket(self.api, bucket))

    # -------------------------------------------------------- Object Store
    def c_create_object_store(self, bucket, *args):
        o = self.args.build(_OBJ_OPTIONS, args)
        _obj.check_bucket(bucket)
        op = _obj.create_bucket(self.api, bucket, description=o.get("description"),
                                ttl_ns=o["ttl"] * 1_000_000 if o.get("ttl") else None,
                                max_bytes=o.get("max_bucket_size"), storage=o["storage"],
                                num_replicas=o["num_replicas"])
        return self.run(op, lambda info: ObjectStore(self, bucket).cmd)

    def c_bind_object_store(self, bucket):
        return self.run(_obj.bind(self.api, bucket), lambda info: ObjectStore(self, bucket).cmd)

    def c_delete_object_store(self, bucket):
        return self.run(_obj.delete_bucket(self.api, bucket))

    def c_object_store_names(self):
        return self.run(_obj.bucket_names(self.api), tuple)
