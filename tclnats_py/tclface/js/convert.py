"""Tcl values in and out of the JetStream commands.

Tcl option lists (``-name value ...``, every value a string) turned into the
Python values ``engine.js`` takes (:class:`TclArgs`, the option tables of
each command, nats-tcl's ``_parse_args`` specs); replies turned into the
Tcl values nats-tcl shows (durations in ms, JSON as tcllib's json2dict
does); the ``nats::make_*`` helpers; the error renames where nats-tcl
throws another code than the engine.
"""

from __future__ import annotations

import json
import math

from tclnats_py._tclcross import TclError

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.options import to_bool
from tclnats_py.engine.js import config as _cfg
from tclnats_py.engine.js import kv as _kv
from tclnats_py.engine.js import objstore as _obj
from tclnats_py.engine.js.api import JsonFloat
from tclnats_py.engine.js.consumer_admin import pause_time as _pause_time
from tclnats_py.tclface.values import tcl_value

__all__ = ["TclArgs", "MAX_TIMEOUT_MS", "make_stream_source", "make_subject_transform", "make_republish",
           "make_kv_origin"]


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
_PUBLISH_OPTIONS = (("timeout", "pos_int", None), ("callback", "valid_str", None), ("stream", "valid_str", None),
                    ("ttl", "str", None), ("expected_last_subject_seq", "pos_int", None),
                    ("expected_last_subject_seq_subject", "valid_str", None))
# publish_schedule (ADR-51): -every and -ttl in ms (or a Go duration), -at RFC 3339
_SCHEDULE_OPTIONS = (("target", "valid_str", None), ("at", "valid_str", None), ("every", "str", None),
                     ("cron", "str", None), ("time_zone", "str", None), ("ttl", "str", None),
                     ("source", "valid_str", None), ("timeout", "pos_int", None))
# publish_batch (ADR-50): each wait for the server's word, and every n-th message waiting for it
_BATCH_OPTIONS = (("timeout", "pos_int", None), ("ack_every", "pos_int", 0))
_NAK_OPTIONS = (("delay", "pos_int", None),)
_PAUSE_OPTIONS = (("pause_until", "valid_str", None),)
_RESET_OPTIONS = (("seq", "pos_int", None),)
_FETCH_OPTIONS = (("timeout", "pos_int", None), ("batch_size", "pos_int", 1), ("expires", "pos_int", None),
                  ("callback", "valid_str", None),
                  # priority groups (ADR-42)
                  ("group", "valid_str", None), ("min_pending", "pos_int", None),
                  ("min_ack_pending", "pos_int", None), ("priority", "pos_int", None))
_ORDERED_OPTIONS = (("callback", "valid_str", None), ("description", "valid_str", None), ("headers_only", "bool", False),
                    ("deliver_policy", "str", "all"), ("idle_heartbeat", "pos_int", 5000),
                    ("filter_subject", "valid_str", None), ("post", "bool", True))
_KV_OPTIONS = (("description", "valid_str", None), ("max_value_size", "int", None), ("history", "pos_int", 1),
               ("ttl", "pos_int", None), ("max_bucket_size", "pos_int", None),
               ("storage", ("enum", "memory", "file"), "file"), ("num_replicas", "replicas", 1),
               ("compression", ("enum", "none", "s2"), None), ("mirror_name", "valid_str", None),
               ("mirror_domain", "valid_str", None), ("metadata", "metadata", None),
               ("limit_marker_ttl", "pos_int", None))
_KV_GET_OPTIONS = (("revision", "pos_int", None),)
_KV_TTL_OPTIONS = (("ttl", "str", None),)
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


def _pause_until(given: dict) -> None:
    """``-pause_until`` as RFC 3339 text or ms since the epoch (an integer),
    made RFC 3339 for the server."""
    v = given.get("pause_until")
    if v is not None:
        i = _int_or_text(v)
        given["pause_until"] = _pause_time(i if isinstance(i, int) else str(v))


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
