"""JetStream, Key-Value and ordered consumers for the Tcl face.

The Tcl classes in ``tcl/jet_stream.tcl`` (``nats::jet_stream``,
``nats::ordered_consumer``, ``nats::key_value``, ``nats::kv_watcher``) keep
nats-tcl 3.2.1's public shape and wait in Tcl; everything that speaks the
JetStream API lives here: option specs turned into API JSON (JsAPI.md and
KvAPI.md tables), API subjects with prefixes and domains (ADR-19), error
replies mapped to error codes (ADR-1), pull requests and their status
messages (ADR-13), ordered consumers (ADR-17) and KV semantics (ADR-8).

Requests go through the connection's engine.  A synchronous operation
returns a request id; the Tcl layer waits for ``requests($id)`` and asks
for the result, which runs the operation's post-processing here (and may
chain to a follow-up request).  Durations cross the Tcl boundary in ms and
the wire in ns, as nats-tcl does.
"""

from __future__ import annotations

import base64
import datetime
import json
import re
from ._tclcross import TclError

from ._engine import CLOSED, Msg
from ._errors import NatsError, make_error
from ._headers import parse_headers
from ._js import (check_bucket, check_js_error, check_key, filename_safe, iso_to_ms, kv_operation,
                  kv_stream_config, metadata_from_reply, pull_status)
from ._js.kv import check_key_pattern
from ._subjects import valid_queue, valid_subject, valid_wildcard_subject

__all__ = ["JsBridge", "Chain", "check_js_error", "metadata_from_reply"]



class Chain:
    """Returned by a post-processor: the result comes from another request."""

    __slots__ = ("rid",)

    def __init__(self, rid: int):
        self.rid = rid


def _ns2ms(d: dict, *keys) -> None:
    for k in keys:
        v = d.get(k)
        if isinstance(v, (int, float)) and v > 0:
            d[k] = int(v // 1000000)


# ------------------------------------------------------------------ option specs
# (name, type, default) with nats-tcl's types: valid_str str int pos_int bool
# list metadata ns json json_list ("enum", values...); default None = absent,
# REQUIRED = must be given.  Field order is the JSON field order.
REQUIRED = object()

STREAM_SPEC = [
    ("name", "valid_str", None), ("description", "valid_str", None), ("subjects", "list", None),
    ("retention", ("enum", "limits", "interest", "workqueue"), "limits"),
    ("max_consumers", "int", None), ("max_msgs", "int", None), ("max_bytes", "int", None),
    ("discard", ("enum", "new", "old"), None), ("max_age", "ns", None),
    ("max_msgs_per_subject", "int", None), ("max_msg_size", "int", None),
    ("storage", ("enum", "memory", "file"), "file"), ("num_replicas", "pos_int", None),
    ("no_ack", "bool", None), ("duplicate_window", "ns", None), ("mirror", "json", None),
    ("sources", "json_list", None), ("sealed", "bool", None), ("deny_delete", "bool", None),
    ("deny_purge", "bool", None), ("allow_rollup_hdrs", "bool", None),
    ("compression", ("enum", "none", "s2"), None), ("first_seq", "int", None),
    ("subject_transform", "json", None), ("republish", "json", None),
    ("allow_direct", "bool", None), ("mirror_direct", "bool", None), ("metadata", "metadata", None),
]

_STREAM_NAMES = frozenset(name for name, _, _ in STREAM_SPEC)

CONSUMER_SPEC = [
    ("name", "valid_str", None), ("durable_name", "valid_str", None),
    ("description", "valid_str", None),
    ("deliver_policy", ("enum", "all", "last", "new", "by_start_sequence", "by_start_time",
                        "last_per_subject"), "all"),
    ("opt_start_seq", "int", None), ("opt_start_time", "valid_str", None),
    ("ack_policy", ("enum", "none", "all", "explicit"), "explicit"), ("ack_wait", "ns", None),
    ("max_deliver", "int", None), ("filter_subject", "valid_str", None),
    ("replay_policy", ("enum", "instant", "original"), "instant"),
    ("rate_limit_bps", "int", None), ("sample_freq", "valid_str", None),
    ("max_waiting", "int", None), ("max_ack_pending", "int", None),
    ("flow_control", "bool", None), ("idle_heartbeat", "ns", None),
    ("headers_only", "bool", None), ("deliver_subject", "valid_str", None),
    ("deliver_group", "valid_str", None), ("inactive_threshold", "ns", None),
    ("num_replicas", "pos_int", None), ("mem_storage", "bool", None), ("metadata", "metadata", None),
]

SOURCE_SPEC = [
    ("name", "valid_str", REQUIRED), ("opt_start_seq", "pos_int", None),
    ("opt_start_time", "valid_str", None), ("filter_subject", "valid_str", None),
    ("external", "json", None), ("subject_transforms", "json_list", None),
]
EXTERNAL_SPEC = [("api", "valid_str", None), ("deliver", "valid_str", None)]
TRANSFORM_SPEC = [("src", "valid_str", REQUIRED), ("dest", "valid_str", REQUIRED)]
REPUBLISH_SPEC = [("src", "valid_str", REQUIRED), ("dest", "valid_str", REQUIRED),
                  ("headers_only", "bool", False)]

# ------------------------------------------------------------------ fields beyond the tables
# A stream config read from the server (stream_info's config) holds fields
# STREAM_SPEC does not list (consumer_limits, allow_msg_ttl ... and whatever
# newer servers add) and nested objects (mirror, sources ...) that reach Tcl
# as dicts.  Given back to add_stream/update_stream they go back to the
# server as they came: each is rebuilt from its Tcl value after the JSON
# shape of that field -- these seeds (nats-server 2.15's StreamConfig) merged
# with every stream config a server has returned in this process.  A field
# with no shape is an unknown option (ErrInvalidArg), as before; so is a
# key inside an object whose keys are all known.  Values are in wire units
# (ns), as stream_info shows them: nats-tcl converts only duplicate_window
# and max_age.
_NO_SHAPE = object()
_TRANSFORM_SHAPE = {"src": "", "dest": ""}
_SOURCE_SHAPE = {"name": "", "opt_start_seq": 0, "opt_start_time": "", "filter_subject": "",
                 "subject_transforms": [_TRANSFORM_SHAPE], "external": {"api": "", "deliver": ""}}
STREAM_FIELD_SHAPES = {
    "mirror": _SOURCE_SHAPE, "sources": [_SOURCE_SHAPE], "subject_transform": _TRANSFORM_SHAPE,
    "republish": {"src": "", "dest": "", "headers_only": False},
    "placement": {"cluster": "", "tags": [""], "preferred": ""},
    "consumer_limits": {"inactive_threshold": 0, "max_ack_pending": 0},
    "template_owner": "", "allow_msg_ttl": False, "subject_delete_marker_ttl": 0, "allow_msg_counter": False,
    "allow_atomic": False, "allow_msg_schedules": False, "persist_mode": "", "allow_batched": False,
}
# nested JSON options of make_stream_source
_JSON_OPTION_SHAPES = {"external": _SOURCE_SHAPE["external"], "subject_transforms": [_TRANSFORM_SHAPE]}
# fields whose values are maps, not objects: no shape is learnt from them
_MAP_FIELDS = frozenset({"metadata"})


def _shape_of(v):
    if isinstance(v, dict):
        return {k: _shape_of(x) for k, x in v.items()}
    if isinstance(v, list):
        elem = _NO_SHAPE
        for x in v:
            elem = _merge_shape(elem, x)
        return [] if elem is _NO_SHAPE else [elem]
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return 0
    if isinstance(v, float):
        return 0.0
    if isinstance(v, str):
        return ""
    return None


def _merge_shape(old, v):
    """``old`` widened by the JSON value ``v`` (dict keys are added)."""
    if old is _NO_SHAPE or old is None:
        return _shape_of(v)
    if v is None:
        return old
    if isinstance(old, dict) and isinstance(v, dict):
        out = dict(old)
        for k, x in v.items():
            out[k] = _merge_shape(out.get(k, _NO_SHAPE), x)
        return out
    if isinstance(old, list) and isinstance(v, list):
        elem = old[0] if old else _NO_SHAPE
        for x in v:
            elem = _merge_shape(elem, x)
        return [] if elem is _NO_SHAPE else [elem]
    new = _shape_of(v)
    return old if type(new) is type(old) else new


def stream_config_reply(cfg: dict) -> None:
    """A stream config from the server: its field shapes learnt, then
    duplicate_window and max_age in ms (nats-tcl's _ns2ms)."""
    for k, v in cfg.items():
        if k not in _MAP_FIELDS:
            STREAM_FIELD_SHAPES[k] = _merge_shape(STREAM_FIELD_SHAPES.get(k, _NO_SHAPE), v)
    _ns2ms(cfg, "duplicate_window", "max_age")


_NUMBER = re.compile(r"^-?(0|[1-9]\d*)(\.\d+)?([eE][-+]?\d+)?$")


# the largest values the server takes: its integers and durations (ns) are int64
_INT64_MAX = (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1
# the largest timeout (ms) a Tcl command takes, as on the Python face (about 31 years)
MAX_TIMEOUT_MS = 10 ** 12
# the largest fetch: the server keeps a pull's batch in an int32
_MAX_BATCH = (1 << 31) - 1

_BOOL_TRUE = {"1", "true", "yes", "on"}
_BOOL_ALL = {"1", "0", "true", "false", "yes", "no", "on", "off"}


def _is_bool(v) -> bool:
    if isinstance(v, bool):
        return True
    s = str(v).strip().lower()
    if s in _BOOL_ALL:
        return True
    try:
        float(s)
        return True
    except ValueError:
        return False


def _as_bool(v) -> bool:
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in _BOOL_TRUE:
        return True
    if s in _BOOL_ALL:
        return False
    return float(s) != 0


def _is_int(v) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return True
    try:
        int(str(v).strip())
        return True
    except ValueError:
        return False


class Spec:
    """Formats Tcl option values into API JSON values, with nats-tcl's checks."""

    def __init__(self, tk):
        self.tk = tk

    def fmt(self, name, typ, val):
        bad = make_error("ErrInvalidArg", f"Invalid value for the {typ} option {name} : {val}")
        if isinstance(typ, tuple):
            allowed = typ[1:]
            if str(val) not in allowed:
                raise make_error("ErrInvalidArg",
                                 f"Invalid value for the enum {name} : {val}; allowed values: {' '.join(allowed)}")
            return str(val)
        if typ == "valid_str":
            if str(val) == "":
                raise bad
            return str(val)
        if typ == "str":
            return str(val)
        if typ in ("int", "pos_int"):
            if not _is_int(val) or (typ == "pos_int" and int(val) < 0) or abs(int(val)) > _INT64_MAX:
                raise bad
            return int(val)
        if typ == "bool":
            if not _is_bool(val):
                raise bad
            return _as_bool(val)
        if typ == "ns":
            # milliseconds from Tcl: a duration is never negative and must fit the server's int64 ns
            try:
                ns = float(val) * 1000000
            except ValueError:
                raise bad from None
            if not 0 <= ns <= _INT64_MAX:  # also false for NaN
                raise bad
            return int(ns)
        if typ == "list":
            items = [str(x) for x in self.tk.splitlist(val)] if not isinstance(val, (list, tuple)) else list(val)
            if not items:
                raise bad
            return items
        if typ == "metadata":
            items = self.tk.splitlist(val) if not isinstance(val, (list, tuple)) else val
            if not items or len(items) % 2:
                raise bad
            return {str(items[i]): str(items[i + 1]) for i in range(0, len(items), 2)}
        if typ == "json":
            if isinstance(val, (dict, list)):
                return val
            try:
                return json.loads(val)
            except (ValueError, TypeError):
                pass
            # a dict as stream_info shows it (mirror, subject_transform ...)
            shape = self.option_shape(name)
            if not isinstance(shape, dict):
                raise bad
            return self.from_tcl(name, val, shape)
        if typ == "json_list":
            items = self.splitlist(name, val) if not isinstance(val, (list, tuple)) else val
            if not items:
                raise bad
            shape = self.option_shape(name)
            elem = shape[0] if isinstance(shape, list) and shape else _NO_SHAPE
            out = []
            for it in items:
                if isinstance(it, (dict, list)):
                    out.append(it)
                    continue
                try:
                    out.append(json.loads(it))
                except (ValueError, TypeError):
                    if not isinstance(elem, dict):
                        raise bad from None
                    out.append(self.from_tcl(name, it, elem))
            return out
        raise make_error("ErrInvalidArg", f"Wrong type {typ}")

    @staticmethod
    def option_shape(name):
        shape = _JSON_OPTION_SHAPES.get(name, _NO_SHAPE)
        return STREAM_FIELD_SHAPES.get(name, _NO_SHAPE) if shape is _NO_SHAPE else shape

    def splitlist(self, name, val):
        try:
            return self.tk.splitlist(val)
        except TclError:
            raise make_error("ErrInvalidArg", f"Invalid value for the option {name} : {val}") from None

    def from_tcl(self, name, val, shape):
        """The JSON value of a Tcl value shaped like ``shape`` (a JSON value
        standing for its type: {} objects, [] arrays, False, 0, 0.0, "";
        None or _NO_SHAPE when unknown: true/false, null, numbers, else a
        string)."""
        bad = make_error("ErrInvalidArg", f"Invalid value for the option {name} : {val}")
        if isinstance(shape, dict):
            items = self.splitlist(name, val)
            if len(items) % 2:
                raise bad
            out = {}
            for i in range(0, len(items), 2):
                k = str(items[i])
                sub = shape.get(k, _NO_SHAPE)
                if sub is _NO_SHAPE and shape:
                    raise make_error("ErrInvalidArg", f"Unknown option {k} in {name}")
                out[k] = self.from_tcl(f"{name} {k}", items[i + 1], sub)
            return out
        if isinstance(shape, list):
            elem = shape[0] if shape else _NO_SHAPE
            return [self.from_tcl(name, x, elem) for x in self.splitlist(name, val)]
        text = str(val)
        if isinstance(shape, bool):
            if not _is_bool(text):
                raise bad
            return _as_bool(text)
        if isinstance(shape, int):
            if not _is_int(text) or abs(int(text)) > _UINT64_MAX:
                raise bad
            return int(text)
        if isinstance(shape, float):
            if not _NUMBER.match(text.strip()):
                raise bad
            return _JsonFloat(text.strip())
        if isinstance(shape, str):
            return text
        if text in ("true", "false"):
            return text == "true"
        if text == "null":
            return None
        if _NUMBER.match(text):
            return int(text) if re.fullmatch(r"-?\d+", text) else _JsonFloat(text)
        return text

    def pairs(self, args) -> dict:
        if len(args) % 2:
            raise make_error("ErrInvalidArg", f"Missing value for option {args[-1]}")
        return {str(args[i]).lstrip("-"): args[i + 1] for i in range(0, len(args), 2)}

    def build(self, spec, given: dict, strict: bool) -> dict:
        """JSON object for ``spec`` from the given options (all checked)."""
        given = dict(given)
        out = {}
        for name, typ, default in spec:
            if name in given:
                out[name] = self.fmt(name, typ, given.pop(name))
            elif default is REQUIRED:
                raise make_error("ErrInvalidArg", f"Option {name} is required")
            elif default is not None:
                out[name] = self.fmt(name, typ, default)
        if strict and given:
            raise make_error("ErrInvalidArg", f"Unknown option {next(iter(given))}")
        return out


def _dumps(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class JsBridge:
    """Per-connection JetStream support: registered as Tcl commands."""

    def __init__(self, conn):
        self.conn = conn
        self.tk = conn.tk
        self.spec = Spec(conn.tk)
        # command names must be unique in the interpreter, across connections
        self.ids = conn.bridge.ids
        self.objects: dict = {}

    # -------------------------------------------------------- plumbing
    def register(self, obj, cmd_name):
        self.objects[cmd_name] = obj
        self.tk.createcommand(cmd_name, lambda *a: self._dispatch(obj, *a))

    def unregister(self, cmd_name):
        self.objects.pop(cmd_name, None)
        try:
            self.tk.deletecommand(cmd_name)
        except TclError:
            pass

    def _dispatch(self, obj, op, *args):
        return self.conn.guard(lambda: getattr(obj, "c_" + op)(*args))


class JetStream:
    """One ``nats::jet_stream`` object."""

    def __init__(self, js: JsBridge, ns: str, timeout, api_prefix, domain, trace):
        self.js = js
        self.conn = js.conn
        self.tk = js.tk
        self.ns = ns
        self.timeout = int(timeout)
        self.domain = domain or ""
        self.trace = _as_bool(trace)
        if domain and not filename_safe(domain):
            raise make_error("ErrInvalidArg", f"Invalid domain {domain}")
        if api_prefix and not valid_subject(api_prefix):
            raise make_error("ErrInvalidArg", f"Invalid API prefix {api_prefix}")
        if api_prefix:
            self.prefix = api_prefix
        elif domain:
            self.prefix = f"$JS.{domain}.API"
        else:
            self.prefix = "$JS.API"
        self.cmd = f"::tclnats::js{next(js.ids)}"
        self.pulls: dict = {}  # rid -> PullRequest of asynchronous fetches
        js.register(self, self.cmd)

    # -------------------------------------------------------- helpers
    def _log(self, level, text):
        self.conn._log(level, text)

    def api(self, tail: str, payload: str, post, check_subj=True, timeout=None, raw=False) -> int:
        """Start ``$JS.API.<tail>``; ``post(dict)`` makes the Tcl result.
        With ``raw`` the result is the reply's JSON text as the server sent
        it (nats-tcl's ``*_from_json``), once checked for an error."""
        subject = f"{self.prefix}.{tail}"
        if self.trace:
            self._log("debug", f">>> {subject} {payload}")

        def finish(outcome, req):
            if outcome == "no_responders":
                raise make_error("ErrJetStreamNotEnabled", "JetStream is not enabled in the server")
            msg = self.conn.outcome_msg(outcome, req)
            text = msg.data.decode("utf-8", "replace")
            if self.trace:
                self._log("debug", f"<<< {subject} {text}")
            try:
                resp = json.loads(text, parse_float=_JsonFloat) if text else {}
            except ValueError:
                raise make_error("ErrJSResponse", f"Invalid JSON from JetStream: {text[:200]}") from None
            check_js_error(resp)
            if raw:
                return _RawJson(text)
            if isinstance(resp, dict):
                resp.pop("type", None)
            return post(resp)

        return self.conn.start_request(subject, payload.encode("utf-8"), self.timeout if timeout is None else timeout,
                                       finish, check_subj=check_subj)

    def check_name(self, what, name):
        if not filename_safe(name):
            raise make_error("ErrInvalidArg", f"Invalid {what} name {name}")

    @staticmethod
    def check_subject(what, subject, wildcards=True):
        """ErrInvalidArg for a subject option the server would refuse (or
        take for another one, as in the direct get subject)."""
        ok = valid_wildcard_subject(subject) if wildcards else valid_subject(subject)
        if not ok:
            raise make_error("ErrInvalidArg", f"Invalid {what} {subject}")

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

    # -------------------------------------------------------- streams
    def _stream_post(self, resp):
        cfg = resp.get("config")
        if isinstance(cfg, dict):
            stream_config_reply(cfg)
        return tcl_value(resp)

    def c_add_stream(self, stream, *args):
        return self._add_update_stream(stream, "CREATE", args)

    def c_update_stream(self, stream, *args):
        return self._add_update_stream(stream, "UPDATE", args)

    def _add_update_stream(self, stream, action, args):
        self.check_name("stream", stream)
        given = self.js.spec.pairs(args)
        given["name"] = stream
        beyond = {k: given.pop(k) for k in list(given) if k not in _STREAM_NAMES}
        cfg = self.js.spec.build(STREAM_SPEC, given, strict=True)
        for k, v in beyond.items():
            shape = STREAM_FIELD_SHAPES.get(k, _NO_SHAPE)
            if shape is _NO_SHAPE:
                raise make_error("ErrInvalidArg", f"Unknown option {k}")
            cfg[k] = self.js.spec.from_tcl(k, v, shape)
        for subject in cfg.get("subjects") or ():
            self.check_subject("subject", subject)
        return self.api(f"STREAM.{action}.{stream}", _dumps(cfg), self._stream_post)

    def c_add_stream_from_json(self, json_config):
        try:
            name = json.loads(json_config)["name"]
        except (ValueError, KeyError, TypeError):
            raise make_error("ErrInvalidArg", "Invalid stream configuration JSON") from None
        self.check_name("stream", name)
        return self.api(f"STREAM.CREATE.{name}", json_config, None, raw=True)

    def c_delete_stream(self, stream):
        self.check_name("stream", stream)
        return self.api(f"STREAM.DELETE.{stream}", "", lambda r: tcl_value(r.get("success")))

    def c_purge_stream(self, stream, *args):
        self.check_name("stream", stream)
        given = self.js.spec.pairs(args)
        body = self.js.spec.build([("filter", "valid_str", None), ("keep", "pos_int", None),
                                   ("seq", "pos_int", None)], given, strict=True)
        if "filter" in body:
            self.check_subject("filter subject", body["filter"])
        return self.api(f"STREAM.PURGE.{stream}", _dumps(body) if body else "",
                        lambda r: tcl_value(r.get("purged")))

    def c_stream_info(self, stream):
        def post(resp):
            for k in ("total", "offset", "limit"):
                resp.pop(k, None)
            return self._stream_post(resp)
        self.check_name("stream", stream)
        return self.api(f"STREAM.INFO.{stream}", "", post)

    def c_stream_names(self, *args):
        given = self.js.spec.pairs(args)
        body = self.js.spec.build([("subject", "valid_str", None)], given, strict=True)
        if "subject" in body:
            self.check_subject("subject", body["subject"])

        def post(resp):
            if not resp.get("total"):
                return ()
            return tuple(resp.get("streams") or ())
        return self.api("STREAM.NAMES", _dumps(body) if body else "", post)

    def c_account_info(self):
        return self.api("INFO", "", tcl_value)

    # -------------------------------------------------------- consumers
    def _consumer_post(self, resp):
        cfg = resp.get("config")
        if isinstance(cfg, dict):
            _ns2ms(cfg, "ack_wait", "idle_heartbeat", "inactive_threshold")
        return tcl_value(resp)

    def consumer_request(self, stream, action, given: dict, post=None):
        self.check_name("stream", stream)
        cfg = self.js.spec.build(CONSUMER_SPEC, given, strict=True)
        if "filter_subject" in cfg:
            self.check_subject("filter subject", cfg["filter_subject"])
        if "deliver_subject" in cfg:
            self.check_subject("deliver subject", cfg["deliver_subject"], wildcards=False)
        if "deliver_group" in cfg and not valid_queue(cfg["deliver_group"]):
            raise make_error("ErrInvalidArg", f"Invalid deliver group {cfg['deliver_group']}")
        if "durable_name" in cfg:
            self.check_name("consumer", cfg["durable_name"])
        name = cfg.get("name")
        if name is not None:
            self.check_name("consumer", name)
            if "durable_name" in cfg:
                raise make_error("ErrInvalidArg", "-name conflicts with -durable_name")
        version = _version_tuple(self.conn.engine.server_info.get("version", "0"))
        check_subj = True
        if version >= (2, 9) and name is not None:
            fs = cfg.get("filter_subject")
            if fs is not None and fs != ">":
                subject = f"CONSUMER.CREATE.{stream}.{name}.{fs}"
                check_subj = False  # the filter may hold wildcards
            else:
                subject = f"CONSUMER.CREATE.{stream}.{name}"
        elif "durable_name" in cfg:
            subject = f"CONSUMER.DURABLE.CREATE.{stream}.{cfg['durable_name']}"
        else:
            subject = f"CONSUMER.CREATE.{stream}"
        body = {"stream_name": stream, "config": cfg}
        if version >= (2, 10):
            body["action"] = action
        return self.api(subject, _dumps(body), post or self._consumer_post, check_subj=check_subj)

    def c_add_consumer(self, stream, *args):
        return self.consumer_request(stream, "create", self.js.spec.pairs(args))

    def c_update_consumer(self, stream, *args):
        return self.consumer_request(stream, "update", self.js.spec.pairs(args))

    def c_add_pull_consumer(self, stream, consumer, *args):
        given = self.js.spec.pairs(args)
        given["durable_name"] = consumer
        return self.consumer_request(stream, "create", given)

    def c_add_push_consumer(self, stream, consumer, deliver_subject, *args):
        given = self.js.spec.pairs(args)
        given["durable_name"] = consumer
        given["deliver_subject"] = deliver_subject
        return self.consumer_request(stream, "create", given)

    def c_add_consumer_from_json(self, stream, consumer, json_config):
        self.check_name("stream", stream)
        self.check_name("consumer", consumer)
        try:
            ok = isinstance(json.loads(json_config), dict)
        except (ValueError, TypeError):
            ok = False
        if not ok:
            raise make_error("ErrInvalidArg", "Invalid consumer configuration JSON")
        payload = '{"stream_name":' + _dumps(stream) + ',"config":' + json_config + "}"
        return self.api(f"CONSUMER.DURABLE.CREATE.{stream}.{consumer}", payload, None, raw=True)

    def c_delete_consumer(self, stream, consumer):
        self.check_name("stream", stream)
        self.check_name("consumer", consumer)
        return self.api(f"CONSUMER.DELETE.{stream}.{consumer}", "", lambda r: tcl_value(r.get("success")))

    def c_consumer_info(self, stream, consumer):
        self.check_name("stream", stream)
        self.check_name("consumer", consumer)
        return self.api(f"CONSUMER.INFO.{stream}.{consumer}", "", self._consumer_post)

    def c_consumer_names(self, stream):
        self.check_name("stream", stream)
        return self.api(f"CONSUMER.NAMES.{stream}", "", lambda r: tuple(r.get("consumers") or ()))

    # -------------------------------------------------------- messages
    def c_stream_msg_get(self, stream, *args):
        self.check_name("stream", stream)
        given = self.js.spec.pairs(args)
        body = self.js.spec.build([("last_by_subj", "valid_str", None), ("next_by_subj", "valid_str", None),
                                   ("seq", "pos_int", None)], given, strict=True)
        for k in ("last_by_subj", "next_by_subj"):
            if k in body:
                self.check_subject("subject", body[k])

        def post(resp):
            m = resp.get("message") or {}
            data = base64.b64decode(m.get("data") or "")
            hdrs = base64.b64decode(m.get("hdrs") or "")
            msg = Msg(m.get("subject", ""), data, None, parse_headers(hdrs) if hdrs else None)
            return self.conn.msg_dict(msg, extra=("seq", m.get("seq"), "time", m.get("time")))
        return self.api(f"STREAM.MSG.GET.{stream}", _dumps(body) if body else "", post)

    def c_stream_direct_get(self, stream, *args):
        self.check_name("stream", stream)
        given = self.js.spec.pairs(args)
        body = self.js.spec.build([("last_by_subj", "valid_str", None), ("next_by_subj", "valid_str", None),
                                   ("seq", "pos_int", None)], given, strict=True)
        for k in ("last_by_subj", "next_by_subj"):
            if k in body:
                self.check_subject("subject", body[k])
        if "last_by_subj" in body:
            subject = f"{self.prefix}.DIRECT.GET.{stream}.{body['last_by_subj']}"
            payload = ""
        else:
            subject = f"{self.prefix}.DIRECT.GET.{stream}"
            payload = _dumps(body) if body else ""
        if self.trace:
            self._log("debug", f">>> {subject} {payload}")

        def finish(outcome, req):
            msg = self.conn.outcome_msg(outcome, req)
            status = msg.status
            if status == 404:
                raise make_error("ErrMsgNotFound", "no message found")
            if status == 408:
                raise make_error("ErrInvalidArg", "Invalid request")
            h = dict(msg.headers or {})
            seq = (h.get("Nats-Sequence") or [""])[0]
            ts = (h.get("Nats-Time-Stamp") or [""])[0]
            subj = (h.get("Nats-Subject") or [msg.subject])[0]
            for k in ("Nats-Sequence", "Nats-Time-Stamp", "Nats-Subject", "Nats-Stream"):
                h.pop(k, None)
            m2 = Msg(subj, msg.data, msg.reply, h, msg.sid)
            return self.conn.msg_dict(m2, extra=("seq", seq, "time", ts))
        return self.conn.start_request(subject, payload.encode(), self.timeout, finish)

    def c_stream_msg_delete(self, stream, *args):
        self.check_name("stream", stream)
        given = self.js.spec.pairs(args)
        body = self.js.spec.build([("no_erase", "bool", True), ("seq", "pos_int", REQUIRED)], given, strict=True)
        return self.api(f"STREAM.MSG.DELETE.{stream}", _dumps(body), lambda r: tcl_value(r.get("success")))

    # -------------------------------------------------------- publish
    def publish_request(self, subject, data, headers, timeout, callback, post=None):
        """JS publish: a request whose reply is a PubAck."""
        if callback:
            def deliver(outcome, req, out):
                if outcome in ("timeout", "no_responders", "lost"):
                    out.extend((1, callback, 1, "", ""))
                    return
                if outcome != "msg":
                    return  # closed by the user: the callback is not invoked
                try:
                    resp = json.loads(req.msg.data.decode("utf-8", "replace"))
                except ValueError:
                    resp = {"error": {"code": 0, "err_code": 0, "description": "invalid PubAck"}}
                err = resp.get("error") if isinstance(resp, dict) else None
                if err:
                    e = dict(err)
                    e["errorMessage"] = e.pop("description", "")
                    out.extend((1, callback, 0, "", tcl_value(e)))
                else:
                    out.extend((1, callback, 0, tcl_value(resp), ""))
            return self.conn.start_request(subject, data, timeout, None, headers=headers, async_done=deliver)

        def finish(outcome, req):
            msg = self.conn.outcome_msg(outcome, req)
            try:
                resp = json.loads(msg.data.decode("utf-8", "replace"))
            except ValueError:
                raise make_error("ErrJSResponse", "Invalid PubAck") from None
            check_js_error(resp)
            return post(resp) if post else tcl_value(resp)
        return self.conn.start_request(subject, data, timeout, finish, headers=headers)

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
        given = self.js.spec.pairs(args)
        opts = self.js.spec.build([("timeout", "pos_int", None), ("callback", "valid_str", None),
                                   ("stream", "valid_str", None)], given, strict=True)
        if "timeout" in given and not _is_int(given["timeout"]):
            raise make_error("ErrBadTimeout", f"Invalid value for the timeout option timeout : {given['timeout']}")
        if opts.get("timeout", 0) > MAX_TIMEOUT_MS:
            raise make_error("ErrInvalidArg", f"Invalid value for the timeout option timeout : {given['timeout']}")
        if "stream" in opts:
            self.check_name("stream", opts["stream"])
        headers = dict(headers or {})
        if "stream" in opts:
            headers["Nats-Expected-Stream"] = [opts["stream"]]
        return self.publish_request(subject, data, headers or None,
                                    opts.get("timeout", self.timeout), opts.get("callback"))

    # -------------------------------------------------------- acks
    def _reply_of(self, msg):
        return self.conn.dict_from_tcl(msg).get("reply", "")

    def c_ack(self, msg):
        self.conn.engine.publish(self._reply_of(msg), b"")
        self.conn.run()

    def c_ack_sync(self, msg):
        return self.conn.start_request(self._reply_of(msg), b"", self.timeout,
                                       lambda outcome, req: self.conn.outcome_msg(outcome, req).data)

    def c_nak(self, msg, *args):
        given = self.js.spec.pairs(args)
        opts = self.js.spec.build([("delay", "pos_int", None)], given, strict=True)
        payload = b"-NAK"
        if "delay" in opts:
            payload += b" " + _dumps({"delay": opts["delay"] * 1000000}).encode()
        self.conn.engine.publish(self._reply_of(msg), payload)
        self.conn.run()

    def c_term(self, msg):
        self.conn.engine.publish(self._reply_of(msg), b"+TERM")
        self.conn.run()

    def c_in_progress(self, msg):
        self.conn.engine.publish(self._reply_of(msg), b"+WPI")
        self.conn.run()

    # -------------------------------------------------------- fetch
    def c_fetch(self, stream, consumer, *args):
        self.check_name("stream", stream)
        self.check_name("consumer", consumer)
        given = self.js.spec.pairs(args)
        for k in ("timeout", "expires"):
            if k in given and (not _is_int(given[k]) or not 0 <= int(given[k]) <= MAX_TIMEOUT_MS):
                raise make_error("ErrBadTimeout", f"Invalid value for the timeout option {k} : {given[k]}")
        opts = self.js.spec.build([("timeout", "pos_int", None), ("batch_size", "pos_int", 1),
                                   ("expires", "pos_int", None), ("callback", "valid_str", None)],
                                  given, strict=True)
        if not 1 <= opts["batch_size"] <= _MAX_BATCH:
            raise make_error("ErrInvalidArg",
                             f"Invalid value for the batch_size option : {given['batch_size']} (1 to {_MAX_BATCH})")
        body = {}
        if "timeout" in opts:
            timeout = opts["timeout"]
            expires = opts.get("expires")
            if expires is None:
                expires = timeout - 10 if timeout >= 20 else timeout
            body["expires"] = int(expires) * 1000000
            body["batch"] = opts["batch_size"]
            body["no_wait"] = False
        else:
            if "expires" in opts:
                raise make_error("ErrInvalidArg", "-expires requires -timeout")
            timeout = self.timeout
            body["batch"] = opts["batch_size"]
            body["no_wait"] = True
        subject = f"{self.prefix}.CONSUMER.MSG.NEXT.{stream}.{consumer}"
        payload = _dumps(body)
        if self.trace:
            self._log("debug", f">>> {subject} {payload}")
        pull = PullRequest(self.conn, opts["batch_size"], opts.get("callback"), subject)
        pull.owner = self.pulls
        rid = self.conn.start_request(subject, payload.encode(), timeout, pull.finish,
                                      max_msgs=opts["batch_size"], gather=pull)
        pull.rid = rid
        if pull.callback is not None and not pull.done:
            self.pulls[rid] = pull
        return rid

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
        self.check_name("stream", stream)
        given = self.js.spec.pairs(args)
        spec = [("callback", "valid_str", ""), ("description", "valid_str", None),
                ("headers_only", "bool", None), ("deliver_policy", "str", None),
                ("idle_heartbeat", "pos_int", 5000), ("filter_subject", "valid_str", None),
                ("post", "bool", True)]
        opts = self.js.spec.build(spec, given, strict=True)
        if "filter_subject" in opts:
            self.check_subject("filter subject", opts["filter_subject"])
        oc = OrderedConsumer(self, stream, obj, ns, opts, opts.pop("callback"), opts.pop("post"))
        return (oc.cmd, oc.start())

    # -------------------------------------------------------- KV
    def check_bucket(self, bucket):
        check_bucket(bucket)

    def c_bind_kv_bucket(self, bucket):
        self.check_bucket(bucket)

        def post(resp):
            cfg = resp.get("config") or {}
            if (cfg.get("max_msgs_per_subject") or 0) < 1:
                raise make_error("ErrBucketNotFound", f"Bucket {bucket} not found")
            stream_config_reply(cfg)
            return KeyValue(self, bucket, cfg).cmd

        rid = self.api(f"STREAM.INFO.KV_{bucket}", "", post)
        self.conn.map_error(rid, "ErrStreamNotFound", "ErrBucketNotFound", f"Bucket {bucket} not found")
        return rid

    def c_create_kv_bucket(self, bucket, *args):
        return self._create_bucket(bucket, False, (), False, args)

    def c_create_kv_aggregate(self, bucket, writable, origins, *args):
        origins = self.tk.splitlist(origins)
        if not origins:
            raise make_error("ErrInvalidArg", "List of KV origins is required")
        if not _is_bool(writable):
            raise make_error("ErrInvalidArg", f"writable = {writable} is not a boolean")
        if "-mirror_name" in args or "-mirror_domain" in args:
            raise make_error("ErrInvalidArg", "-mirror_name and -mirror_domain are not allowed")
        return self._create_bucket(bucket, _as_bool(writable), origins, False, args)

    def c_create_kv_mirror(self, name, origin, *args):
        if "-mirror_name" in args or "-mirror_domain" in args:
            raise make_error("ErrInvalidArg", "-mirror_name and -mirror_domain are not allowed")
        return self._create_bucket(name, False, origin, True, args)

    def _origin(self, origin) -> dict:
        items = self.tk.splitlist(origin) if isinstance(origin, str) else origin
        if len(items) % 2:
            raise make_error("ErrInvalidArg", f"Invalid KV origin {origin}: a dict expected")
        org = {str(items[i]): items[i + 1] for i in range(0, len(items), 2)}
        if "bucket" not in org:
            raise make_error("ErrInvalidArg", f"Invalid KV origin {origin}: no bucket")
        check_bucket(str(org["bucket"]))
        if org.get("stream"):
            self.check_name("stream", str(org["stream"]))
        return org

    def _source(self, api, deliver, name, transforms=None) -> dict:
        src = {"name": name}
        if api:
            ext = {"api": api}
            if deliver:
                ext["deliver"] = deliver
            src["external"] = ext
        if transforms:
            src["subject_transforms"] = transforms
        return src

    def _create_bucket(self, bucket, writable, origins, is_mirror, args):
        self.check_bucket(bucket)
        given = self.js.spec.pairs(args)
        spec = [("description", "valid_str", None), ("max_value_size", "int", None),
                ("history", "pos_int", 1), ("ttl", "pos_int", None), ("max_bucket_size", "pos_int", None),
                ("storage", ("enum", "memory", "file"), "file"), ("num_replicas", "int", 1),
                ("compression", ("enum", "none", "s2"), None), ("mirror_name", "valid_str", None),
                ("mirror_domain", "valid_str", None), ("metadata", "metadata", None)]
        o = self.js.spec.build(spec, given, strict=True)
        cfg = kv_stream_config(bucket, history=o["history"], ttl_ms=o.get("ttl"),
                               max_value_size=o.get("max_value_size"), max_bucket_size=o.get("max_bucket_size"),
                               storage=o["storage"], num_replicas=o["num_replicas"],
                               description=o.get("description"), compression=o.get("compression"),
                               metadata=o.get("metadata"))
        stream = f"KV_{bucket}"
        if "mirror_name" in o:
            api = f"$JS.{o['mirror_domain']}.API" if "mirror_domain" in o else None
            cfg["mirror"] = self._source(api, None, f"KV_{o['mirror_name']}")
            cfg["mirror_direct"] = True
            cfg["subjects"] = None
        if is_mirror:
            if str(bucket).startswith("KV_"):
                raise make_error("ErrInvalidArg", "Mirror name must not be KV")
            org = self._origin(origins)
            ob = org.get("bucket")
            keys = self.tk.splitlist(org.get("keys", "")) if org.get("keys") else ()
            transforms = [{"src": f"$KV.{ob}.{k}", "dest": f"$KV.{ob}.{k}"} for k in keys]
            api = org.get("api") or (f"$JS.{org['domain']}.API" if org.get("domain") else None)
            cfg["mirror"] = self._source(api, org.get("deliver"), f"KV_{ob}", transforms)
            cfg["mirror_direct"] = True
            cfg["subjects"] = None
            cfg["name"] = bucket
            stream = bucket
        elif origins:
            sources = []
            for origin in origins:
                org = self._origin(origin)
                ob = org.get("bucket")
                keys = self.tk.splitlist(org.get("keys", "")) if org.get("keys") else ()
                keys = keys or (">",)
                transforms = [{"src": f"$KV.{ob}.{k}", "dest": f"$KV.{bucket}.{k}"} for k in keys]
                api = org.get("api") or (f"$JS.{org['domain']}.API" if org.get("domain") else None)
                sources.append(self._source(api, org.get("deliver"), org.get("stream") or f"KV_{ob}", transforms))
            cfg["sources"] = sources
            if not writable:
                cfg["subjects"] = None
        cfg = {k: v for k, v in cfg.items() if v is not None}

        def post(resp):
            scfg = resp.get("config") or {}
            stream_config_reply(scfg)
            if is_mirror:
                return ""
            return KeyValue(self, bucket, scfg).cmd
        return self.api(f"STREAM.CREATE.{stream}", _dumps(cfg), post)

    def c_delete_kv_bucket(self, bucket):
        self.check_bucket(bucket)
        rid = self.api(f"STREAM.DELETE.KV_{bucket}", "", lambda r: tcl_value(r.get("success")))
        self.conn.map_error(rid, "ErrStreamNotFound", "ErrBucketNotFound", f"Bucket {bucket} not found")
        return rid

    def c_kv_buckets(self):
        def post(resp):
            names = resp.get("streams") or () if resp.get("total") else ()
            return tuple(n[3:] for n in names if n.startswith("KV_"))
        return self.api("STREAM.NAMES", "", post)

    # -------------------------------------------------------- Object Store
    def c_create_object_store(self, bucket, *args):
        from ._js import objstore as O
        given = self.js.spec.pairs(args)
        o = self.js.spec.build([("description", "valid_str", None), ("ttl", "pos_int", None),
                                ("max_bucket_size", "pos_int", None),
                                ("storage", ("enum", "memory", "file"), "file"), ("num_replicas", "int", 1)],
                               given, strict=True)
        cfg = O.bucket_config(bucket, description=o.get("description"),
                              ttl_ns=o["ttl"] * 1000000 if "ttl" in o else None,
                              max_bytes=o.get("max_bucket_size"), storage=o["storage"],
                              num_replicas=o["num_replicas"])
        return self.api(f"STREAM.CREATE.{O.stream_name(bucket)}", _dumps(cfg),
                        lambda r: ObjectStoreTcl(self, bucket).cmd)

    def c_bind_object_store(self, bucket):
        from ._js import objstore as O
        O.check_bucket(bucket)
        rid = self.api(f"STREAM.INFO.{O.stream_name(bucket)}", "", lambda r: ObjectStoreTcl(self, bucket).cmd)
        self.conn.map_error(rid, "ErrStreamNotFound", "ErrBucketNotFound", f"Bucket {bucket} not found")
        return rid

    def c_delete_object_store(self, bucket):
        from ._js import objstore as O
        O.check_bucket(bucket)
        rid = self.api(f"STREAM.DELETE.OBJ_{bucket}", "", lambda r: tcl_value(r.get("success")))
        self.conn.map_error(rid, "ErrStreamNotFound", "ErrBucketNotFound", f"Bucket {bucket} not found")
        return rid

    def c_object_store_names(self):
        def post(resp):
            names = resp.get("streams") or () if resp.get("total") else ()
            return tuple(n[4:] for n in names if n.startswith("OBJ_"))
        return self.api("STREAM.NAMES", "", post)

    def c_empty_kv_bucket(self, bucket):
        self.check_bucket(bucket)
        rid = self.api(f"STREAM.PURGE.KV_{bucket}", "", lambda r: tcl_value(r.get("purged")))
        self.conn.map_error(rid, "ErrStreamNotFound", "ErrBucketNotFound", f"Bucket {bucket} not found")
        return rid


class _RawJson:
    """A JSON reply returned to Tcl as the JSON text itself (the *_from_json methods)."""

    def __init__(self, text: str):
        self.text = text


class _JsonFloat(float):
    """A JSON number with a fraction or exponent, shown in Tcl as the server
    wrote it (tcllib's json2dict keeps the text: ``1e-3`` stays ``1e-3``)."""

    def __new__(cls, text):
        obj = super().__new__(cls, text)
        obj.text = text
        return obj


def _version_tuple(v: str):
    parts = []
    for p in str(v).split("."):
        m = re.match(r"\d+", p)
        parts.append(int(m.group(0)) if m else 0)
    return tuple(parts)


def tcl_value(v):
    """A JSON value as tcllib's json2dict shows it in Tcl."""
    if isinstance(v, _RawJson):
        return v.text
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, dict):
        out = []
        for k, x in v.items():
            out.append(str(k))
            out.append(tcl_value(x))
        return tuple(out)
    if isinstance(v, list):
        return tuple(tcl_value(x) for x in v)
    if isinstance(v, _JsonFloat):
        return v.text
    if isinstance(v, float) and v.is_integer():
        return str(v)  # keep "1.0" as JSON wrote it
    return v


class PullRequest:
    """A fetch (ADR-13): collects up to batch messages; statuses end it."""

    def __init__(self, conn, batch, callback, subject):
        self.conn = conn
        self.batch = batch
        self.callback = callback
        self.subject = subject
        self.msgs = []
        self.user_msgs = 0
        self.rid = None
        self.done = False
        self.no_responders = False
        self.owner = None
        self.tcl_obj = None

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

    def on_msg(self, req, msg, out) -> bool:
        """One message of the pull; returns True when the pull is over."""
        kind = pull_status(msg)
        status = msg.status
        if kind == "heartbeat":
            return False
        if kind == "no_responders":
            # no JetStream behind the subject (e.g. no such stream): like a timeout
            self.no_responders = True
            if self.callback:
                out.extend((2, self.callback, 1, "", ""))
            self.ended()
            return True
        if kind == "end":
            kind = "Sync" if self.callback is None else "Async"
            self.conn._log("debug", f"{kind} pull request {req.id} got status message {status}")
            if self.callback:
                out.extend((2, self.callback, 1, self.conn.msg_dict(msg), ""))
            self.ended()
            return True
        self.msgs.append(msg)
        if self.callback:
            out.extend((2, self.callback, 0, self.conn.msg_dict(msg), ""))
        if len(self.msgs) >= self.batch:
            self.ended()
            return True
        return False

    def on_end(self, outcome, req, out):
        """The request ended without on_msg saying so (timeout, close, batch)."""
        self.ended()
        if self.callback is None:
            return
        # closed by the user: the callback is not invoked (CoreAPI.md table)
        if outcome in ("timeout", "lost") and len(self.msgs) < self.batch:
            self.conn._log("debug", f"Async pull request {req.id} timed out")
            out.extend((2, self.callback, 1, "", ""))

    def finish(self, outcome, req):
        """Result of a synchronous fetch."""
        if outcome == "closed":
            raise make_error("ErrConnectionClosed", "Connection closed")
        if outcome == "lost":
            raise make_error("ErrTimeout", "Connection lost")
        if (outcome == "timeout" or self.no_responders) and not self.msgs:
            self.conn._log("debug", f"Sync pull request {req.id} timed out")
            raise make_error("ErrTimeout", f"Sync pull request timeout, subject={self.subject}")
        return tuple(self.conn.msg_dict(m) for m in self.msgs)


class OrderedConsumer:
    """ADR-17 ordered push consumer behind ``nats::ordered_consumer``.

    Messages arrive at the Tcl object's ``OnMsg`` method (so it can be
    wrapped from Tcl), which hands them here.  Gaps, missing heartbeats and
    a lost consumer reset it from the last stream sequence seen.
    """

    def __init__(self, js: JetStream, stream, obj, ns, config: dict, callback, post):
        self.js = js
        self.conn = js.conn
        self.tk = js.tk
        self.stream = stream
        self.obj = obj
        self.ns = ns
        self.callback = callback          # Tcl command prefix, or a Python callable
        self.post = post
        cfg = dict(config)
        cfg.update({"flow_control": True, "ack_policy": "none", "max_deliver": 1,
                    "ack_wait": 22 * 3600 * 1000, "num_replicas": 1, "mem_storage": True,
                    "inactive_threshold": 2000})
        self.config = cfg
        self.stream_seq = 0
        self.consumer_seq = 0
        self.sid = None
        self.timer = ""
        self.info = ()
        self.dead = False
        self.reset_code = ""
        self.cmd = f"::tclnats::oc{next(js.js.ids)}"
        js.js.register(self, self.cmd)
        self._set("Name", "")
        self._set("RetryInterval", 10000)
        self._set("last_error", "")

    def _set(self, var, value):
        self.tk.call("set", f"{self.ns}::{var}", value)

    def _get(self, var):
        return self.tk.call("set", f"{self.ns}::{var}")

    def _consumer_args(self, inbox, err_code):
        g = {k: (("true" if v else "false") if isinstance(v, bool) else v) for k, v in self.config.items()}
        g["deliver_subject"] = inbox
        if err_code:
            g["deliver_policy"] = "by_start_sequence"
            g["opt_start_seq"] = self.stream_seq + 1
        return g

    def start(self) -> int:
        """First creation: errors go to the caller of ordered_consumer."""
        inbox = self.conn.engine.new_inbox()
        return self.js.consumer_request(self.stream, "create", self._consumer_args(inbox, ""),
                                        post=lambda resp: self._created(resp, inbox))

    def _created(self, resp, inbox):
        cfg = resp.get("config")
        if isinstance(cfg, dict):
            _ns2ms(cfg, "ack_wait", "idle_heartbeat", "inactive_threshold")
        self.info = tcl_value(resp)
        name = resp.get("name", "")
        delivered = resp.get("delivered") or {}
        self.stream_seq = int(delivered.get("stream_seq", 0))
        self.consumer_seq = int(delivered.get("consumer_seq", 0))
        cb = ("::nats::SafeCallback", f"{self.ns}::my", "OnMsg")
        self.sid = self.conn.tcl_subscribe(inbox, cb, dictmsg=True, post=False)
        self._set("Name", name)
        self._restart_hb()
        self.conn._log("debug", f"Ordered consumer {name} subscribed to {self.stream}, stream_seq = "
                                f"{self.stream_seq}, filter = {self.config.get('filter_subject', '')}")
        return self.info

    def _error(self, code, text):
        self.conn._log("warn", f"Ordered consumer {self.obj}: {text}")
        self._set("last_error", ("code", ("NATS", code), "errorMessage", text))

    def _after(self, ms, method, *args):
        """Run a method of the Tcl object later (it may wait, like nats-tcl's)."""
        if self.timer:
            self.tk.call("after", "cancel", self.timer)
        self.timer = self.tk.call("after", int(ms), ("::nats::SafeCallback", f"{self.ns}::my", method, *args))

    def _restart_hb(self):
        self._after(int(self.config["idle_heartbeat"]) * 3, "MissingHb")

    def _unsubscribe(self):
        if self.sid is not None:
            self.conn.tcl_unsubscribe(self.sid)
            self.sid = None

    def c_missing_hb(self):
        """No heartbeat for 3 intervals: the Tcl object resets next."""
        self.timer = ""
        self._unsubscribe()
        self._set("Name", "")

    def schedule_reset(self, err_code, delay=0):
        self._set("Name", "")
        self._unsubscribe()
        self._after(delay, "Reset", err_code)

    def c_reset_begin(self, err_code):
        """Start recreating the consumer; the Tcl ``Reset`` method waits for it.

        Returns the request id, or "" when the consumer stops instead.
        """
        self.timer = ""
        if self.dead:
            return ""
        self.reset_code = err_code
        inbox = self.conn.engine.new_inbox()
        start = self.stream_seq + 1
        self._error(err_code, f"reset with opt_start_seq = {start} due to {err_code}")
        if self.conn.engine.status == CLOSED:
            self._error("ErrConnectionClosed", "stopped")
            return ""
        return self.js.consumer_request(self.stream, "create", self._consumer_args(inbox, err_code),
                                        post=lambda resp: self._created(resp, inbox))

    def c_reset_failed(self, code, text):
        if self.dead:
            return
        if code == "ErrStreamNotFound":
            self._error("ErrStreamNotFound", f"stopped due to {text}")
            return
        self._error(code, f"failed to reset: {text}")
        if self.conn.engine.status == CLOSED:
            self._error("ErrConnectionClosed", "stopped")
            return
        self.schedule_reset(self.reset_code, int(self._get("RetryInterval")))

    def c_on_msg(self, msg):
        """Called by the Tcl object's OnMsg method with one delivered message."""
        if self.dead:
            return
        self._restart_hb()
        m = self.conn.msg_from_tcl(msg)
        if m.status == 100 and not m.data:
            desc = m.description
            if desc.startswith("Idle"):
                stalled = m.header("Nats-Consumer-Stalled")
                if stalled:
                    self.conn.engine.publish(stalled, b"")
                    self.conn.run()
                last = m.header("Nats-Last-Consumer")
                if last is not None and int(last) != self.consumer_seq:
                    self.schedule_reset("ErrConsumerSequenceMismatch")
                return
            if desc.startswith("Flow"):
                if m.reply:
                    self.conn.engine.publish(m.reply, b"")
                    self.conn.run()
                return
        meta = metadata_from_reply(m.reply, m.subject)
        if meta["consumer_seq"] != self.consumer_seq + 1:
            self.schedule_reset("ErrConsumerSequenceMismatch")
            return
        self.consumer_seq += 1
        self.stream_seq = meta["stream_seq"]
        if callable(self.callback):
            self.callback(m, meta)
        elif self.post:
            self.tk.call("after", 0, (*self.tk.splitlist(self.callback), msg))
        else:
            self.tk.call(*self.tk.splitlist(self.callback), msg)

    def c_info(self):
        return self.info

    def c_name(self):
        return self._get("Name")

    def c_destroy(self):
        self.dead = True
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


class KeyValue:
    """One ``nats::key_value`` bucket handle (ADR-8)."""

    def __init__(self, js: JetStream, bucket, stream_config: dict):
        self.js = js
        self.conn = js.conn
        self.tk = js.tk
        self.bucket = bucket
        self.stream = f"KV_{bucket}"
        self.read_prefix = f"$KV.{bucket}"
        self.write_prefix = self.read_prefix
        self.use_js_prefix = js.prefix != "$JS.API"
        self.use_direct = bool(stream_config.get("allow_direct"))
        mirror = stream_config.get("mirror") or {}
        if mirror.get("name"):
            origin = mirror["name"][3:]
            self.write_prefix = f"$KV.{origin}"
            ext = mirror.get("external") or {}
            if ext.get("api"):
                self.use_js_prefix = False
                self.read_prefix = f"$KV.{origin}"
                self.write_prefix = f"{ext['api']}.$KV.{origin}"
        self.cmd = f"::tclnats::kv{next(js.js.ids)}"
        js.js.register(self, self.cmd)

    def check_key(self, key):
        check_key(key)

    def _publish(self, key, value, headers, post):
        self.check_key(key)
        subject = f"{self.write_prefix}.{key}"
        if self.use_js_prefix:
            subject = f"{self.js.prefix}.{subject}"
        data = self.conn.payload_bytes(value)
        rid = self.js.publish_request(subject, data, headers, self.js.timeout, None, post=post)
        self.conn.map_error(rid, "ErrNoResponders", "ErrBucketNotFound", f"Bucket {self.bucket} not found")
        return rid

    def c_put(self, key, value):
        return self._publish(key, value, None, lambda r: r.get("seq"))

    def c_update(self, key, value, revision):
        if not _is_int(revision) or int(revision) < 0:
            raise make_error("ErrInvalidArg", f"Invalid revision {revision}")
        return self._publish(key, value, {"Nats-Expected-Last-Subject-Sequence": [str(int(revision))]},
                             lambda r: r.get("seq"))

    def c_create(self, key, value):
        """Create: update with revision 0; if the key holds a delete marker, update over it."""
        first = self.c_update(key, value, 0)

        def on_conflict(err):
            def after_get(outcome, req):
                try:
                    self._entry_from_reply(key, outcome, req, None)
                except NatsError as e:
                    if e.code == "ErrKeyDeleted":
                        return Chain(self.c_update(key, value, e.details["revision"]))
                    raise err from None
                raise err
            return Chain(self.conn.start_request(*self._get_request(key, None), after_get))
        self.conn.on_error(first, "ErrWrongLastSequence", on_conflict)
        return first

    def c_delete(self, key, revision=""):
        headers = {"KV-Operation": ["DEL"]}
        if revision != "" and (not _is_int(revision) or int(revision) < 0):
            raise make_error("ErrInvalidArg", f"Invalid revision {revision}")
        if revision != "" and int(revision) > 0:
            headers["Nats-Expected-Last-Subject-Sequence"] = [str(int(revision))]
        return self._publish(key, b"", headers, lambda r: "")

    def c_purge(self, key):
        return self._publish(key, b"", {"KV-Operation": ["PURGE"], "Nats-Rollup": ["sub"]}, lambda r: "")

    def _get_request(self, key, revision):
        """(subject, payload, timeout) of a read of key (at revision)."""
        p = self.js.prefix
        subject = f"{self.read_prefix}.{key}"
        if self.use_direct:
            if revision:
                return (f"{p}.DIRECT.GET.{self.stream}", _dumps({"seq": int(revision)}).encode(), self.js.timeout)
            return (f"{p}.DIRECT.GET.{self.stream}.{subject}", b"", self.js.timeout)
        body = {"seq": int(revision)} if revision else {"last_by_subj": subject}
        return (f"{p}.STREAM.MSG.GET.{self.stream}", _dumps(body).encode(), self.js.timeout)

    def _entry_from_reply(self, key, outcome, req, revision):
        msg = self.conn.outcome_msg(outcome, req)
        subject = f"{self.read_prefix}.{key}"
        if self.use_direct:
            st = msg.status
            if st == 404:
                raise make_error("ErrKeyNotFound", f"Key {key} not found in bucket {self.bucket}")
            if st == 408:
                raise make_error("ErrInvalidArg", "Invalid request")
            h = msg.headers or {}
            seq = int((h.get("Nats-Sequence") or ["0"])[0])
            ts = (h.get("Nats-Time-Stamp") or [""])[0]
            subj = (h.get("Nats-Subject") or [msg.subject])[0]
            op = kv_operation(h)
            data = msg.data
        else:
            try:
                resp = json.loads(msg.data.decode("utf-8", "replace"))
                check_js_error(resp)
            except NatsError as e:
                if e.code == "ErrMsgNotFound":
                    raise make_error("ErrKeyNotFound", f"Key {key} not found in bucket {self.bucket}") from None
                if e.code == "ErrStreamNotFound":
                    raise make_error("ErrBucketNotFound", f"Bucket {self.bucket} not found") from None
                raise
            m = resp.get("message") or {}
            seq = int(m.get("seq", 0))
            ts = m.get("time", "")
            subj = m.get("subject", "")
            data = base64.b64decode(m.get("data") or "")
            hdrs = base64.b64decode(m.get("hdrs") or "")
            op = kv_operation(parse_headers(hdrs) if hdrs else None)
        if revision and subj != subject:
            raise make_error("ErrKeyNotFound", f"Expected {subject}, got {subj}")
        if op in ("DEL", "PURGE"):
            e = make_error("ErrKeyDeleted", f"Key {key} was deleted or purged")
            e.details["revision"] = seq
            raise e
        value = data.decode("utf-8", "replace") if self.conn.utf8 else data
        return ("bucket", self.bucket, "key", key, "value", value, "revision", seq,
                "created", iso_to_ms(ts), "operation", op)

    def c_get(self, key, *args):
        self.check_key(key)
        given = self.js.js.spec.pairs(args)
        o = self.js.js.spec.build([("revision", "pos_int", None)], given, strict=True)
        revision = o.get("revision")

        def finish(outcome, req):
            try:
                return self._entry_from_reply(key, outcome, req, revision)
            except NatsError as e:
                if e.code == "ErrKeyDeleted":
                    raise make_error("ErrKeyNotFound", str(e)) from None
                raise
        return self.conn.start_request(*self._get_request(key, revision), finish)

    def c_status(self):
        def post(resp):
            cfg = resp.get("config") or {}
            stream_config_reply(cfg)
            state = resp.get("state") or {}
            info = [("bucket", self.bucket), ("bytes", state.get("bytes")),
                    ("history", cfg.get("max_msgs_per_subject")), ("ttl", cfg.get("max_age")),
                    ("values", state.get("messages")),
                    ("is_compressed", 1 if cfg.get("compression", "none") != "none" else 0)]
            mirror = cfg.get("mirror") or {}
            if mirror.get("name"):
                info.append(("mirror_name", mirror["name"][3:]))
                api = (mirror.get("external") or {}).get("api", "")
                parts = api.split(".") if api else []
                if len(parts) == 3 and parts[2] == "API":
                    info.append(("mirror_domain", parts[1]))
            info.append(("stream_config", tcl_value(cfg)))
            info.append(("stream_state", tcl_value(state)))
            out = []
            for k, v in info:
                out.extend((k, v if isinstance(v, tuple) else tcl_value(v)))
            return tuple(out)
        rid = self.js.api(f"STREAM.INFO.{self.stream}", "", post)
        self.conn.map_error(rid, "ErrStreamNotFound", "BucketNotFound", f"Bucket {self.bucket} not found")
        return rid

    def c_watch(self, key_pattern, obj, ns, values_array, *args):
        given = self.js.js.spec.pairs(args)
        o = self.js.js.spec.build([("callback", "str", ""), ("include_history", "bool", False),
                                ("meta_only", "bool", False), ("ignore_deletes", "bool", False),
                                ("updates_only", "bool", False), ("idle_heartbeat", "str", None)],
                               given, strict=True)
        if o["include_history"] and o["updates_only"]:
            raise make_error("ErrInvalidArg", "-include_history conflicts with -updates_only")
        check_key_pattern(key_pattern)
        policy = "all" if o["include_history"] else "last_per_subject"
        if o["updates_only"]:
            policy = "new"
        w = KvWatcher(self, obj, ns, o["callback"], o["ignore_deletes"], values_array)
        copts = {"description": "KV watcher", "headers_only": o["meta_only"], "deliver_policy": policy,
                 "filter_subject": f"{self.read_prefix}.{key_pattern}"}
        if o.get("idle_heartbeat") is not None:
            copts["idle_heartbeat"] = o["idle_heartbeat"]
        return (w.cmd, w.start(copts))

    def c_destroy(self):
        self.js.js.unregister(self.cmd)


class KvWatcher:
    """``nats::kv_watcher``: an ordered consumer turned into KV entries."""

    def __init__(self, kv: KeyValue, obj, ns, callback, ignore_deletes, values_array):
        self.kv = kv
        self.conn = kv.conn
        self.tk = kv.tk
        self.obj = obj
        self.ns = ns
        self.callback = callback
        self.ignore_deletes = ignore_deletes
        self.array = values_array
        self.init_done = False
        self.gathering = ""
        self.results = []
        self.consumer = None
        self.cmd = f"::tclnats::kvw{next(kv.js.js.ids)}"
        kv.js.js.register(self, self.cmd)
        self.prefix_len = len(kv.read_prefix) + 1

    def start(self, consumer_opts) -> int:
        """Create the ordered consumer; the Tcl side waits for it."""
        self.consumer = OrderedConsumer(self.kv.js, self.kv.stream, self.obj, self.ns,
                                        self._oc_config(consumer_opts), self._on_msg, False)
        self.consumer.obj = self.obj
        rid = self.consumer.start()

        def map_nf(err):
            if err.code == "ErrStreamNotFound":
                raise make_error("BucketNotFound", f"Bucket {self.kv.bucket} not found") from None
            raise err
        self.conn.on_error(rid, "ErrStreamNotFound", map_nf)
        self.conn.after_result(rid, self._created)
        return rid

    def _oc_config(self, copts):
        cfg = {"idle_heartbeat": 5000}
        spec = Spec(self.tk)
        for k, v in copts.items():
            if k == "idle_heartbeat":
                cfg[k] = spec.fmt(k, "pos_int", v)
            elif k == "headers_only":
                cfg[k] = bool(v)
            else:
                cfg[k] = v
        return cfg

    def _created(self, info):
        pending = dict(zip(info[::2], info[1::2])).get("num_pending", 0)
        if int(pending or 0) == 0:
            # nothing to replay: the end-of-initial-data marker is posted now,
            # ahead of any update that can only arrive after this returns
            self.c_init_done()
        return info

    def c_init_done(self):
        if self.init_done:
            return
        self.init_done = True
        self.tk.call("set", f"{self.ns}::InitDone", "true")
        if self.callback and not self.gathering:
            self.tk.call("after", 0, (*self.tk.splitlist(self.callback), ""))

    def _on_msg(self, msg: Msg, meta: dict):
        delta = meta["num_pending"]
        op = msg.header("KV-Operation", "PUT")
        if self.ignore_deletes and op in ("PURGE", "DEL"):
            if delta == 0 and not self.init_done:
                self.c_init_done()
            return
        key = msg.subject[self.prefix_len:]
        value = msg.data.decode("utf-8", "replace") if self.conn.utf8 else msg.data
        entry = ("bucket", self.kv.bucket, "key", key, "value", value, "revision", meta["stream_seq"],
                 "created", meta["timestamp"], "delta", delta, "operation", op)
        if self.gathering == "keys":
            self.results.append(key)
        elif self.gathering == "history":
            self.results.append(entry)
        else:
            if self.callback:
                self.tk.call("after", 0, (*self.tk.splitlist(self.callback), entry))
            if self.array:
                if op == "PUT":
                    self.tk.call("set", f"{self.array}({key})", value)
                else:
                    self.tk.call("unset", "-nocomplain", f"{self.array}({key})")
        if delta == 0 and not self.init_done:
            self.c_init_done()

    def c_timeout(self):
        return self.kv.js.timeout

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

    def c_consumer_cmd(self):
        return self.consumer.cmd if self.consumer else ""

    def c_destroy(self):
        if self.consumer is not None:
            self.consumer.c_destroy()
        self.kv.js.js.unregister(self.cmd)


class _Steps:
    """Drive a multi-request operation for the Tcl face.

    ``gen`` yields request specs ``(subject, payload, timeout, headers, gather)``
    and receives ``(outcome, req, gather)`` for each; its return value is the
    Tcl result.  Each step is a request the Tcl layer waits for in turn.
    """

    def __init__(self, conn, gen):
        self.conn = conn
        self.gen = gen

    def start(self) -> int:
        r = self._advance(None)
        if isinstance(r, Chain):
            return r.rid
        raise make_error("ErrInvalidArg", "operation finished without a request")

    def _advance(self, value):
        try:
            spec = self.gen.send(value)
        except StopIteration as stop:
            return stop.value
        subject, payload, timeout, headers, gather = spec
        rid = self.conn.start_request(subject, payload, timeout,
                                      lambda outcome, req: self._advance((outcome, req, gather)),
                                      headers=headers, max_msgs=gather.batch if gather else None, gather=gather)
        return Chain(rid)


def _object_meta(bucket: str, name: str, **fields) -> dict:
    """An object's info as the Tcl face stores and returns it: ADR-20's
    fields (shared with the Python face) and the time it was written."""
    from ._js import objstore as O
    meta = O._new_info(bucket, name, **fields)
    meta["mtime"] = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return meta


class ObjectStoreTcl:
    """One ``nats::object_store`` bucket handle (ADR-20) for the Tcl face."""

    def __init__(self, js: "JetStream", bucket: str):
        from ._js import objstore as O
        self.O = O
        self.js = js
        self.conn = js.conn
        self.tk = js.tk
        self.bucket = bucket
        self.stream = O.stream_name(bucket)
        self.cmd = f"::tclnats::obj{next(js.js.ids)}"
        js.js.register(self, self.cmd)

    # ------------------------------------------------------------ step helpers
    def _api(self, tail, body):
        payload = b"" if body is None else json.dumps(body, separators=(",", ":")).encode()
        return (f"{self.js.prefix}.{tail}", payload, self.js.timeout, None, None)

    def _json(self, outcome, req):
        resp = json.loads(self.conn.outcome_msg(outcome, req).data or b"{}")
        check_js_error(resp)
        return resp

    def _meta_steps(self, name, show_deleted=False):
        """Steps that end with the object's meta dict."""
        outcome, req, _ = yield self._api(f"STREAM.MSG.GET.{self.stream}",
                                          {"last_by_subj": self.O.meta_subject(self.bucket, name)})
        try:
            resp = self._json(outcome, req)
        except NatsError as e:
            if e.code == "ErrMsgNotFound":
                raise make_error("ErrObjectNotFound", f"Object {name} not found in bucket {self.bucket}") from None
            raise
        meta = self.O.info_from_meta(base64.b64decode((resp.get("message") or {}).get("data") or ""))
        if meta.get("deleted") and not show_deleted:
            raise make_error("ErrObjectNotFound", f"Object {name} not found in bucket {self.bucket}")
        return meta

    def _publish(self, subject, payload, headers=None):
        outcome, req, _ = yield (subject, payload, self.js.timeout, headers, None)
        resp = json.loads(self.conn.outcome_msg(outcome, req).data)
        check_js_error(resp)
        return resp

    def _pull_all(self, filter_subject, deliver_policy="all"):
        """Steps: an ephemeral pull consumer on filter_subject, drained in one pull."""
        cfg = {"ack_policy": "none", "deliver_policy": deliver_policy, "filter_subject": filter_subject,
               "inactive_threshold": 5 * 10**9, "mem_storage": True, "num_replicas": 1}
        outcome, req, _ = yield self._api(f"CONSUMER.CREATE.{self.stream}", {"stream_name": self.stream,
                                                                             "config": cfg})
        info = self._json(outcome, req)
        name = info["name"]
        pending = int(info.get("num_pending", 0))
        msgs = []
        if pending:
            pull = PullRequest(self.conn, pending, None, filter_subject)
            body = json.dumps({"batch": pending, "expires": int(self.js.timeout * 0.9) * 1000000}).encode()
            outcome, req, pull = yield (f"{self.js.prefix}.CONSUMER.MSG.NEXT.{self.stream}.{name}", body,
                                        self.js.timeout, None, pull)
            msgs = list(pull.msgs)
            if len(msgs) < pending:
                raise make_error("ErrTimeout", f"Got {len(msgs)} of {pending} messages from {self.stream}")
        yield self._api(f"CONSUMER.DELETE.{self.stream}.{name}", None)
        return msgs

    def _run(self, gen):
        return _Steps(self.conn, gen).start()

    # ------------------------------------------------------------ operations
    def c_put(self, name, data, *args):
        spec = Spec(self.tk)
        o = spec.build([("description", "valid_str", None), ("chunk_size", "pos_int", self.O.DEFAULT_CHUNK_SIZE)],
                       spec.pairs(args), strict=True)
        if o["chunk_size"] < 1:
            raise make_error("ErrInvalidArg", f"Invalid chunk size {o['chunk_size']}")
        payload = self.conn.payload_bytes(data)
        O = self.O

        def steps():
            try:
                old = yield from self._meta_steps(name, show_deleted=True)
            except NatsError as e:
                if e.code != "ErrObjectNotFound":
                    raise
                old = None
            nuid = self.conn.engine.new_inbox().rpartition(".")[2]
            size = o["chunk_size"]
            chunks = [payload[i:i + size] for i in range(0, len(payload), size)]
            for chunk in chunks:
                yield from self._publish(O.chunk_subject(self.bucket, nuid), chunk)
            meta = _object_meta(self.bucket, name, nuid=nuid, size=len(payload), chunks=len(chunks),
                                digest=O.digest_of(payload), description=o.get("description"),
                                chunk_size=o["chunk_size"])
            yield from self._publish(O.meta_subject(self.bucket, name), json.dumps(meta).encode(),
                                     {"Nats-Rollup": ["sub"]})
            if old and old.get("nuid") and old["nuid"] != nuid:
                yield self._api(f"STREAM.PURGE.{self.stream}", {"filter": O.chunk_subject(self.bucket, old["nuid"])})
            return tcl_value(meta)
        return self._run(steps())

    def c_get(self, name):
        O = self.O

        def steps(bucket_obj, obj_name):
            meta = yield from bucket_obj._meta_steps(obj_name)
            link = (meta.get("options") or {}).get("link")
            if link:
                if not link.get("name"):
                    raise make_error("ErrInvalidArg", f"{obj_name} links to a whole bucket")
                target = bucket_obj if link.get("bucket") == bucket_obj.bucket else \
                    ObjectStoreTcl.__new__(ObjectStoreTcl)
                if target is not bucket_obj:
                    target.O, target.js, target.conn, target.tk = O, self.js, self.conn, self.tk
                    target.bucket, target.stream = link["bucket"], O.stream_name(link["bucket"])
                return (yield from steps(target, link["name"]))
            if not meta.get("chunks"):
                return b""
            msgs = yield from bucket_obj._pull_all(O.chunk_subject(bucket_obj.bucket, meta["nuid"]))
            data = b"".join(m.data for m in msgs)
            if O.digest_of(data) != meta.get("digest"):
                raise make_error("ErrDigestMismatch", f"Digest of {obj_name} does not match")
            return data
        return self._run(steps(self, name))

    def c_info(self, name):
        def steps():
            meta = yield from self._meta_steps(name)
            return tcl_value(meta)
        return self._run(steps())

    def c_list(self):
        def steps():
            msgs = yield from self._pull_all(f"$O.{self.bucket}.M.>", "last_per_subject")
            metas = [self.O.info_from_meta(m.data) for m in msgs]
            return tuple(tcl_value(m) for m in metas if not m.get("deleted"))
        return self._run(steps())

    def c_delete(self, name):
        O = self.O

        def steps():
            meta = yield from self._meta_steps(name)
            gone = _object_meta(self.bucket, name, nuid=meta.get("nuid", ""), deleted=True)
            yield from self._publish(O.meta_subject(self.bucket, name), json.dumps(gone).encode(),
                                     {"Nats-Rollup": ["sub"]})
            if meta.get("nuid"):
                yield self._api(f"STREAM.PURGE.{self.stream}", {"filter": O.chunk_subject(self.bucket, meta["nuid"])})
            return ""
        return self._run(steps())

    def c_add_link(self, name, target_name):
        O = self.O

        def steps():
            target = yield from self._meta_steps(target_name)
            if (target.get("options") or {}).get("link"):
                raise make_error("ErrInvalidArg", "Cannot link to a link")
            meta = _object_meta(self.bucket, name, link={"bucket": self.bucket, "name": target_name})
            yield from self._publish(O.meta_subject(self.bucket, name), json.dumps(meta).encode(),
                                     {"Nats-Rollup": ["sub"]})
            return tcl_value(meta)
        return self._run(steps())

    def c_status(self):
        return self.js.api(f"STREAM.INFO.{self.stream}", "", lambda r: tcl_value(r))

    def c_destroy(self):
        self.js.js.unregister(self.cmd)


class ObjWatcher(KvWatcher):
    """Object Store watcher for the Tcl face: object infos instead of KV entries."""

    def _on_msg(self, msg: Msg, meta: dict):
        info = self.kv.O.info_from_meta(msg.data)
        delta = meta["num_pending"]
        if not (self.ignore_deletes and info.get("deleted")):
            if self.gathering:
                self.results.append(tcl_value(info))
            elif self.callback:
                self.tk.call("after", 0, (*self.tk.splitlist(self.callback), tcl_value(info)))
        if delta == 0 and not self.init_done:
            self.c_init_done()


def _obj_watch(self, key_pattern, obj, ns, values_array, *args):
    spec = Spec(self.tk)
    o = spec.build([("callback", "str", ""), ("include_history", "bool", False), ("ignore_deletes", "bool", False),
                    ("updates_only", "bool", False)], spec.pairs(args), strict=True)
    if o["include_history"] and o["updates_only"]:
        raise make_error("ErrInvalidArg", "-include_history conflicts with -updates_only")
    policy = "new" if o["updates_only"] else ("all" if o["include_history"] else "last_per_subject")
    self.read_prefix = f"$O.{self.bucket}.M"
    w = ObjWatcher(self, obj, ns, o["callback"], o["ignore_deletes"], "")
    return (w.cmd, w.start({"description": "object store watcher", "deliver_policy": policy,
                            "filter_subject": f"$O.{self.bucket}.M.>"}))


ObjectStoreTcl.c_watch = _obj_watch
