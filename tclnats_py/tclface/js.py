"""JetStream, Key-Value, ordered consumers and Object Store for the Tcl face.

The Tcl classes in ``tcl/jet_stream.tcl`` (``nats::jet_stream``,
``nats::ordered_consumer``, ``nats::key_value``, ``nats::kv_watcher``,
``nats::object_store``) keep nats-tcl 3.2.1's public shape and wait in Tcl.
The JetStream logic itself (API subjects, configs, payloads, pull requests,
ordered consumers, KV and Object Store) is ``tclnats_py.engine.js``, the same
engine the asyncio face drives.  What is here is the Tcl edge of it:

* argument marshalling: Tcl option lists (``-name value ...``, every value a
  string) turned into the Python values ``_js`` takes;
* running ``_js`` operations: each Request step is a request of the
  connection's engine that the Tcl layer waits for (``requests($id)``); its
  result advances the operation, which may chain to the next request;
* Tcl values: results as nats-tcl shows them (JSON as tcllib's json2dict
  does, durations in ms, messages as ``nats::msg`` dicts, its error codes);
* the Tcl commands of each object.
"""

from __future__ import annotations

import copy
import functools
import json
import math
from typing import Any

from tclnats_py._tclcross import TclError

from tclnats_py.engine.connection import CLOSED, Msg
from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.options import to_bool
from tclnats_py.engine.js import config as _cfg
from tclnats_py.engine.js import kv as _kv
from tclnats_py.engine.js import objstore as _obj
from tclnats_py.engine.js import ordered as _ordered
from tclnats_py.engine.js.ack import NAK, TERM, WPI, ACK, nak_payload
from tclnats_py.engine.js.api import (JsApi, JsonFloat, Publish, Request, advance, api_call, check_name, filename_safe,
                      stored_from_direct)
from tclnats_py.engine.js.events import (Delivered, Ended, FlowReply, Heartbeat, InitDone, Reset, Retry, Stop,
                                         WatchEntry, WatchInfo, event_table)
from tclnats_py.engine.js.meta import metadata_from_reply
from tclnats_py.engine.js.publish import ack_error_dict, parse_ack_fast, publish_headers, stalled
from tclnats_py.engine.js.pull import Fetch
from tclnats_py.tclface.commands import tcl_commands
from tclnats_py.tclface.values import tcl_value

__all__ = ["JsBridge", "Chain", "metadata_from_reply", "tcl_value", "make_stream_source",
           "make_subject_transform", "make_republish", "make_kv_origin"]


class Chain:
    """Returned by a post-processor: the result comes from another request."""

    __slots__ = ("rid",)

    def __init__(self, rid: int):
        self.rid = rid


def _dumps(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


# ------------------------------------------------------------------ Tcl values in
def _json_scalar(text: str):
    """true/false/null or a finite JSON number as its value; else None."""
    try:
        v = json.loads(text, parse_float=JsonFloat)
    except ValueError:
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) > _cfg.UINT64_MAX:
        return None
    return v if isinstance(v, (bool, int, float)) else None


def _entry_dict(conn, e: _kv.Entry, with_delta=False):
    """A KV entry as nats-tcl's dict (the value a string with -utf8_convert)."""
    # Entry.as_dict's keys and order, made as the flat list tcl_value would
    # make of it (its values are all scalars: str, bytes, int)
    value = e.value.decode("utf-8", "replace") if conn.utf8 else e.value
    if with_delta:
        return ("bucket", e.bucket, "key", e.key, "value", value, "revision", e.revision,
                "created", e.created, "delta", e.delta, "operation", e.operation)
    return ("bucket", e.bucket, "key", e.key, "value", value, "revision", e.revision,
            "created", e.created, "operation", e.operation)


# the largest timeout (ms) a Tcl command takes, as on the Python face (about 31 years)
MAX_TIMEOUT_MS = 10 ** 12


def _int_or_text(v):
    """A Tcl integer as an int; anything else as it is, for ``_js`` to refuse."""
    try:
        return int(str(v).strip()) if str(v).strip().lstrip("+-").isdigit() else v
    except ValueError:
        return v


class TclArgs:
    """Tcl option lists and values turned into the Python values of ``_js``."""

    def __init__(self, tk):
        self.tk = tk

    def pairs(self, args) -> dict:
        """``-name value ...`` -> {name: value}."""
        if len(args) % 2:
            raise make_error("ErrInvalidArg", f"Missing value for option {args[-1]}")
        return {str(args[i]).lstrip("-"): args[i + 1] for i in range(0, len(args), 2)}

    def splitlist(self, name, val):
        if isinstance(val, (list, tuple)):
            return val
        try:
            return self.tk.splitlist(val)
        except TclError:
            raise make_error("ErrInvalidArg", f"Invalid value for the option {name} : {val}") from None

    def value(self, name, typ, val):
        """The Python value of a Tcl option of a ``_js.config`` type: lists
        and dicts split, JSON options given as Tcl dicts typed by
        STREAM_FIELD_TYPES; scalars stay strings (``_js`` checks them)."""
        if typ in ("list", "ns_list"):
            return [str(x) for x in self.splitlist(name, val)]
        if typ == "metadata":
            items = self.splitlist(name, val)
            if len(items) % 2:
                return val  # not a dict: _js says so
            return {str(items[i]): str(items[i + 1]) for i in range(0, len(items), 2)}
        if typ == "json":
            return self._json(name, val)
        if typ == "json_list":
            return [self._json(name, x) for x in self.splitlist(name, val)] or val
        return val

    def _json(self, name, val):
        """JSON text as it is; else a Tcl dict typed as the field says."""
        if isinstance(val, (dict, list)):
            return val
        try:
            json.loads(val)
            return str(val)
        except (ValueError, TypeError):
            pass
        ftype = _cfg.STREAM_FIELD_TYPES.get(name)
        if isinstance(ftype, list):
            ftype = ftype[0] if ftype else None
        if not isinstance(ftype, dict):
            return val  # neither JSON nor a known object: _js refuses it
        return self.from_tcl(name, val, ftype)

    def from_tcl(self, name, val, ftype):
        """The JSON value of a Tcl value of the JSON type ``ftype`` (see
        ``_js.config.STREAM_FIELD_TYPES``; None when unknown: true/false,
        null and numbers as such, else a string)."""
        bad = make_error("ErrInvalidArg", f"Invalid value for the option {name} : {val}")
        if isinstance(ftype, dict):
            items = self.splitlist(name, val)
            if len(items) % 2:
                raise bad
            out = {}
            for i in range(0, len(items), 2):
                k = str(items[i])
                if k not in ftype and ftype:
                    raise make_error("ErrInvalidArg", f"Unknown option {k} in {name}")
                out[k] = self.from_tcl(f"{name} {k}", items[i + 1], ftype.get(k))
            return out
        if isinstance(ftype, list):
            elem = ftype[0] if ftype else None
            return [self.from_tcl(name, x, elem) for x in self.splitlist(name, val)]
        text = str(val)
        if isinstance(ftype, bool):
            b = to_bool(text)
            if b is None:
                raise bad
            return b
        if isinstance(ftype, str):
            return text
        v = _json_scalar(text.strip())
        if isinstance(ftype, (int, float)):
            if v is None or isinstance(v, bool) or (isinstance(ftype, int) and not isinstance(v, int)):
                raise bad
            return v
        return text if v is None and text != "null" else v

    def options(self, spec, args, *, given=None, beyond=False) -> dict:
        """A Tcl option list checked against a ``_js.config`` table (unknown
        options refused; with ``beyond``, stream fields the table does not
        list are kept when their JSON type is known)."""
        given = self.pairs(args) if given is None else given
        types = {name: typ for name, typ, _ in spec}
        opts = {}
        for k, v in given.items():
            if k in types:
                opts[k] = self.value(k, types[k], v)
            elif beyond:
                ftype = _cfg.STREAM_FIELD_TYPES.get(k)
                if ftype is None:
                    raise make_error("ErrInvalidArg", f"Unknown option {k}")
                opts[k] = self.from_tcl(k, v, ftype)
            else:
                raise make_error("ErrInvalidArg", f"Unknown option {k}")
        return opts

    def build(self, spec, args, **kw) -> dict:
        """The checked values of a Tcl command's options (``_js.config.build``)."""
        return _cfg.build(spec, self.options(spec, args), unit="ms", **kw)


# the options of Tcl commands (nats-tcl's _parse_args specs)
_PURGE_OPTIONS = (("filter", "valid_str", None), ("keep", "pos_int", None), ("seq", "pos_int", None))
_NAMES_OPTIONS = (("subject", "valid_str", None),)
_GET_OPTIONS = (("last_by_subj", "valid_str", None), ("next_by_subj", "valid_str", None), ("seq", "pos_int", None))
_DELETE_MSG_OPTIONS = (("no_erase", "bool", True), ("seq", "pos_int", None))
_PUBLISH_OPTIONS = (("timeout", "pos_int", None), ("callback", "valid_str", None), ("stream", "valid_str", None))
_NAK_OPTIONS = (("delay", "pos_int", None),)
_FETCH_OPTIONS = (("timeout", "pos_int", None), ("batch_size", "pos_int", 1), ("expires", "pos_int", None),
                  ("callback", "valid_str", None))
_ORDERED_OPTIONS = (("callback", "valid_str", None), ("description", "valid_str", None), ("headers_only", "bool", False),
                    ("deliver_policy", "str", "all"), ("idle_heartbeat", "pos_int", 5000),
                    ("filter_subject", "valid_str", None), ("post", "bool", True))
_KV_OPTIONS = (("description", "valid_str", None), ("max_value_size", "int", None), ("history", "pos_int", 1),
               ("ttl", "pos_int", None), ("max_bucket_size", "pos_int", None),
               ("storage", ("enum", "memory", "file"), "file"), ("num_replicas", "replicas", 1),
               ("compression", ("enum", "none", "s2"), None), ("mirror_name", "valid_str", None),
               ("mirror_domain", "valid_str", None), ("metadata", "metadata", None))
_KV_GET_OPTIONS = (("revision", "pos_int", None),)
_KV_WATCH_OPTIONS = (("callback", "str", ""), ("include_history", "bool", False), ("meta_only", "bool", False),
                     ("ignore_deletes", "bool", False), ("updates_only", "bool", False),
                     ("idle_heartbeat", "pos_int", None))
_OBJ_WATCH_OPTIONS = (("callback", "str", ""), ("include_history", "bool", False),
                      ("ignore_deletes", "bool", False), ("updates_only", "bool", False))
_OBJ_OPTIONS = (("description", "valid_str", None), ("ttl", "pos_int", None), ("max_bucket_size", "pos_int", None),
                ("storage", ("enum", "memory", "file"), "file"), ("num_replicas", "replicas", 1))
_OBJ_PUT_OPTIONS = (("description", "valid_str", None), ("chunk_size", "pos_int", _obj.DEFAULT_CHUNK_SIZE))
_SOURCE_OPTIONS = (("name", "valid_str", None), ("opt_start_seq", "pos_int", None),
                   ("opt_start_time", "valid_str", None), ("filter_subject", "valid_str", None),
                   ("external", "json", None), ("subject_transforms", "json_list", None),
                   ("api", "valid_str", None), ("deliver", "valid_str", None))
_ORIGIN_OPTIONS = (("stream", "valid_str", None), ("bucket", "valid_str", None), ("keys", "str", None),
                   ("api", "valid_str", None), ("deliver", "valid_str", None), ("domain", "valid_str", None))
_TRANSFORM_OPTIONS = (("src", "valid_str", None), ("dest", "valid_str", None))
_REPUBLISH_OPTIONS = (("src", "valid_str", None), ("dest", "valid_str", None), ("headers_only", "bool", False))


def _timeout_option(given: dict, name: str) -> None:
    """nats-tcl's ``timeout`` type: ErrBadTimeout unless an integer 0..MAX_TIMEOUT_MS."""
    if name in given:
        v = _int_or_text(given[name])
        if not isinstance(v, int) or not 0 <= v <= MAX_TIMEOUT_MS:
            raise make_error("ErrBadTimeout", f"Invalid value for the timeout option {name} : {given[name]}")


# nats::make_stream_source, make_subject_transform, make_republish: JSON text
def make_stream_source(tk, args) -> str:
    o = TclArgs(tk).build(_SOURCE_OPTIONS, args)
    if "name" not in o:
        raise make_error("ErrInvalidArg", "Option name is required")
    return _dumps(_cfg.make_stream_source(**o))


def make_subject_transform(tk, args) -> str:
    o = TclArgs(tk).build(_TRANSFORM_OPTIONS, args)
    return _dumps(_cfg.make_subject_transform(o.get("src"), o.get("dest")))


def make_kv_origin(tk, args):
    """nats::make_kv_origin: the origin dict of an aggregate or mirror."""
    o = TclArgs(tk).build(_ORIGIN_OPTIONS, args)
    if "bucket" not in o:
        raise make_error("ErrInvalidArg", "Option bucket is required")
    if "keys" in o:
        o["keys"] = [str(k) for k in TclArgs(tk).splitlist("keys", o["keys"])]
    return tcl_value(_kv.make_origin(**o))


def make_republish(tk, args) -> str:
    o = TclArgs(tk).build(_REPUBLISH_OPTIONS, args)
    return _dumps(_cfg.make_republish(o.get("src"), o.get("dest"), o["headers_only"]))


# ------------------------------------------------------------------ results out
def _stream_reply(resp: dict):
    """A stream reply for Tcl: its config's field types learnt (so the
    config can be given back), durations in ms (nats-tcl's _ns2ms)."""
    if isinstance(resp.get("config"), dict):
        _cfg.learn_stream_fields(resp["config"])
    return tcl_value(_cfg.stream_reply_to_ms(resp))


def _consumer_reply(resp: dict):
    return tcl_value(_cfg.consumer_reply_to_ms(resp))


def _renamed(op, codes, to_code, text=None):
    """Operation ``op`` with the errors ``codes`` renamed ``to_code`` (where
    nats-tcl throws another code than ``_js``), with ``text`` or their own."""
    try:
        return (yield from op)
    except NatsError as e:
        if e.code in codes:
            raise make_error(to_code, str(e) if text is None else text) from None
        raise


def _option_subject(op):
    """A subject option the server would refuse is one more invalid option
    value in Tcl (nats-tcl's ErrInvalidArg), ErrBadSubject in ``_js``."""
    return _renamed(op, ("ErrBadSubject",), "ErrInvalidArg")


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
        opts = self.args.options(_cfg.STREAM_SPEC, args, beyond=True)
        return _cfg.stream_config(stream, opts, unit="ms", strict=False)

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
        cfg = _cfg.consumer_config(self.args.options(_cfg.CONSUMER_SPEC, (), given=given), unit="ms")
        req = self.api.consumer_create_request(stream, cfg, action, server_version=self.server_version,
                                               legacy_durable=True)
        return self.run(api_call(req), _consumer_reply)

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
        o = self.args.build(_GET_OPTIONS, args)

        def op():
            reply = yield self.api.direct_get_request(stream, **o)
            return stored_from_direct(reply, stream), reply.sid  # nats-tcl shows the reply's sub_id
        return self.run(_option_subject(op()), lambda r: self._stored_msg(*r))

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
        if "stream" in o:
            check_name("stream", o["stream"])
            headers = publish_headers(headers, expected_stream=o["stream"])
        return self.publish_request(subject, data, headers, o.get("timeout", self.timeout), o.get("callback"))

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
        fetch = Fetch(o["batch_size"], timeout_ms=o.get("timeout"), expires_ms=o.get("expires"),
                      js_timeout_ms=self.timeout)
        if self.trace:
            self._log("debug", f">>> {subject} {fetch.body.decode()}")
        pull = PullRequest(self.conn, fetch, o.get("callback"), self.fetch_closed_returns)
        pull.owner = self.pulls
        rid = self.conn.start_request(subject, fetch.body, fetch.timeout_ms, pull.finish, max_msgs=fetch.batch,
                                      gather=pull)
        pull.rid = rid
        if pull.callback is not None and not pull.done:
            self.pulls[rid] = pull
        return rid

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
            mirror_name=o.get("mirror_name"), mirror_domain=o.get("mirror_domain"), **kw), self._bucket_cmd)

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
        self._dispatch = event_table(self, fetch.EVENTS)  # handlers take (event, req, out)

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
            on[ev.__class__](ev, req, out)
        if self.fetch.done:
            self.ended()
            return True
        return False

    # -- the Fetch's events: callbacks of an asynchronous fetch, put in ``out``
    def on_delivered(self, ev: Delivered, req, out) -> None:
        if self.callback:
            out.extend((2, self.callback, 0, self.conn.msg_dict(ev.msg), ""))

    def on_ended(self, ev: Ended, req, out) -> None:
        status = ev.status
        if status is not None:
            self.conn._log("debug", f"{self._kind()} pull request {req.id} got status message {status.status}")
        if self.callback:
            out.extend((2, self.callback, 1, self.conn.msg_dict(status) if status is not None else "", ""))

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


@tcl_commands
class KeyValue:
    """One ``nats::key_value`` bucket handle over ``_js.kv.Bucket`` (ADR-8)."""

    def __init__(self, js: JetStream, bucket: _kv.Bucket):
        self.js = js
        self.conn = js.conn
        self.tk = js.tk
        self.b = bucket
        self.cmd = f"::tclnats::kv{next(js.js.ids)}"
        js.js.register(self, self.cmd)

    def c_put(self, key, value):
        b = self.b

        def result(msg, error):
            if error is not None:
                raise b.put_error(error) from None
            return b.put_result(msg)["seq"]
        return self.js.run_request(b.put_request(key, self.conn.payload_bytes(value)), result)

    def c_update(self, key, value, revision):
        return self.js.run(self.b.update(key, self.conn.payload_bytes(value), _int_or_text(revision)))

    def c_create(self, key, value):
        return self.js.run(self.b.create(key, self.conn.payload_bytes(value)))

    def c_delete(self, key, revision=""):
        return self.js.run(self.b.delete(key, None if revision == "" else _int_or_text(revision)), lambda r: "")

    def c_purge(self, key):
        return self.js.run(self.b.purge(key), lambda r: "")

    def c_purge_ack(self, key):
        """purge, returning the PubAck of the marker (the Aug 2023 KV API)."""
        return self.js.run(self.b.purge(key))

    def c_get(self, key, *args):
        revision = self.js.args.build(_KV_GET_OPTIONS, args).get("revision") if args else None
        b = self.b
        req = b.get_request(key, revision)
        post = lambda e: _entry_dict(self.conn, e)  # noqa: E731
        if req is None:
            return self.js.run(b.get(key, revision), post)

        def result(msg, error):
            if error is not None:
                raise b.get_error(key, error) from None
            return b.get_result(key, revision, msg)
        return self.js.run_request(req, result, post)

    def c_bucket(self):
        return self.b.bucket

    def c_generation2(self):
        """nats-tcl 2.x's reads (see _kv.Bucket.read_as_2x)."""
        self.b.read_as_2x()

    def c_status(self):
        def post(st):
            st = _kv.status_to_ms(st)
            st["is_compressed"] = int(st["is_compressed"])
            _cfg.learn_stream_fields(st["stream_config"])
            return tcl_value(st)
        # nats-tcl's status throws BucketNotFound (without Err)
        return self.js.run(_renamed(self.b.status(), ("ErrBucketNotFound",), "BucketNotFound",
                                    f"Bucket {self.b.bucket} not found"), post)

    def c_watch(self, key_pattern, obj, ns, values_array, *args):
        o = self.js.args.build(_KV_WATCH_OPTIONS, args)
        opts = self.b.watch_options(key_pattern, include_history=o["include_history"], meta_only=o["meta_only"],
                                    updates_only=o["updates_only"], idle_heartbeat_ms=o.get("idle_heartbeat"))
        state = _ordered.OrderedConsumer(self.b.stream, **opts)
        w = Watcher(self.js, self.b.bucket, self.b.watcher(ignore_deletes=o["ignore_deletes"],
                                                          updates_only=o["updates_only"]),
                    ns, o["callback"], values_array)
        return (w.cmd, w.start(state))

    def c_destroy(self):
        self.js.js.unregister(self.cmd)


@tcl_commands
class Watcher:
    """``nats::kv_watcher`` (also an Object Store's watcher): an ordered
    consumer whose messages a ``_js`` watcher state turns into entries (or
    object infos) and the end of the initial data."""

    def __init__(self, js: JetStream, bucket, state, ns, callback, values_array):
        self.js = js
        self.conn = js.conn
        self.tk = js.tk
        self.bucket = bucket
        self.state = state                 # _js.kv.Watcher or _js.objstore.Watcher
        self.ns = ns
        self.callback = callback
        self.array = values_array
        self.init_done = False
        self.gathering = ""
        self.results: list = []
        self.consumer: OrderedConsumer | None = None
        self._dispatch = event_table(self, state.EVENTS)
        self.cmd = f"::tclnats::kvw{next(js.js.ids)}"
        js.js.register(self, self.cmd)

    def start(self, ordered: _ordered.OrderedConsumer) -> int:
        """Create the ordered consumer; the Tcl side waits for it."""
        self.consumer = OrderedConsumer(self.js, ordered, self.ns, self._on_msg, False,
                                        on_created=lambda info: self._events(self.state.on_consumer_created(info)))
        # nats-tcl's watch throws BucketNotFound (without Err) for a missing bucket
        rid = self.consumer.start()  # (type checkers: set just above)
        self.conn.map_error(rid, "ErrStreamNotFound", "BucketNotFound", f"Bucket {self.bucket} not found")
        return rid

    def c_init_done(self):
        if self.init_done:
            return
        self.init_done = True
        self.tk.call("set", f"{self.ns}::InitDone", "true")
        if self.callback and not self.gathering:
            self.tk.call("after", 0, (*self.tk.splitlist(self.callback), ""))

    def _on_msg(self, msg: Msg, meta: dict):
        self._events(self.state.on_msg(msg, meta))

    def _events(self, events):
        on = self._dispatch
        for ev in events:
            on[ev.__class__](ev)

    # -- the engine's events (a KV or an Object Store watcher's)
    def on_init_done(self, ev: InitDone) -> None:
        self.c_init_done()

    def on_watch_info(self, ev: WatchInfo) -> None:
        self._deliver(tcl_value(ev.info))

    def on_watch_entry(self, ev: WatchEntry) -> None:
        e = ev.entry
        if self.gathering == "keys":
            self.results.append(e.key)
            return
        self._deliver(_entry_dict(self.conn, e, True))
        if self.array and not self.gathering:
            if e.operation == _kv.PUT:
                value = e.value.decode("utf-8", "replace") if self.conn.utf8 else e.value
                self.tk.call("set", f"{self.array}({e.key})", value)
            else:
                self.tk.call("unset", "-nocomplain", f"{self.array}({e.key})")

    def _deliver(self, item):
        if self.gathering:
            self.results.append(item)
        elif self.callback:
            self.tk.call("after", 0, (*self.tk.splitlist(self.callback), item))

    def c_timeout(self):
        return self.js.timeout

    def c_bucket(self):
        return self.bucket

    def c_info(self):
        return self.consumer.info if self.consumer else ()

    def c_gather(self, what):
        self.gathering = what
        self.results = []

    def c_results(self):
        return tuple(self.results)

    def c_on_msg(self, msg):
        self.consumer.c_on_msg(msg)

    def c_missing_hb(self):
        return self.consumer.c_missing_hb()

    def c_reset_begin(self, err_code):
        return self.consumer.c_reset_begin(err_code)

    def c_reset_failed(self, code, text):
        return self.consumer.c_reset_failed(code, text)

    def c_destroy(self):
        if self.consumer is not None:
            self.consumer.c_destroy()
        self.js.js.unregister(self.cmd)


@tcl_commands
class ObjectStore:
    """One ``nats::object_store`` bucket handle (ADR-20) over ``_js.objstore``."""

    def __init__(self, js: JetStream, bucket: str):
        self.js = js
        self.conn = js.conn
        self.tk = js.tk
        self.bucket = bucket
        self.stream = _obj.stream_name(bucket)
        self.cmd = f"::tclnats::obj{next(js.js.ids)}"
        js.js.register(self, self.cmd)

    def c_put(self, name, data, *args):
        o = self.js.args.build(_OBJ_PUT_OPTIONS, args)
        nuid = self.conn.engine.new_inbox().rpartition(".")[2]
        return self.js.run(_obj.put(self.js.api, self.bucket, name, self.conn.payload_bytes(data), nuid,
                                    chunk_size=o["chunk_size"], description=o.get("description")))

    def c_get(self, name):
        return self.js.run(_obj.get(self.js.api, self.bucket, name))

    def c_info(self, name):
        return self.js.run(_obj.info(self.js.api, self.bucket, name))

    def c_list(self):
        return self.js.run(_obj.list_infos(self.js.api, self.bucket), lambda infos: tcl_value(infos))

    def c_delete(self, name):
        return self.js.run(_obj.delete(self.js.api, self.bucket, name), lambda r: "")

    def c_add_link(self, name, target_name):
        def op():
            target = yield from _obj.info(self.js.api, self.bucket, target_name)
            return (yield from _obj.add_link(self.js.api, self.bucket, name, target))
        return self.js.run(op())

    def c_status(self):
        return self.js.run(self.js.api.stream_info(self.stream))

    def c_watch(self, key_pattern, obj, ns, values_array, *args):
        o = self.js.args.build(_OBJ_WATCH_OPTIONS, args)
        state = _ordered.OrderedConsumer(self.stream, **_obj.watch_options(
            self.bucket, include_history=o["include_history"], updates_only=o["updates_only"]))
        w = Watcher(self.js, self.bucket, _obj.Watcher(ignore_deletes=o["ignore_deletes"],
                                                       updates_only=o["updates_only"]),
                    ns, o["callback"], "")
        return (w.cmd, w.start(state))

    def c_destroy(self):
        self.js.js.unregister(self.cmd)
