"""Stream and consumer configurations: nats-tcl's option tables, checked and
turned into the API's JSON (JsAPI.md ``add_stream`` / ``add_consumer``).

A spec row is ``(name, type, default)``; types are nats-tcl's:

``valid_str``  non-empty string         ``str``       any string
``int``        integer                  ``pos_int``   integer >= 0
``replicas``   num_replicas: an integer 0..5 (see :func:`check_replicas`)
``bool``       boolean: ``_options.to_bool``, Tcl's ``string is boolean -strict``
``list``       non-empty list of strings (a single string is a one-item list)
``metadata``   non-empty dict of strings (ADR-33)
``ns``         a duration >= 0 in the caller's unit, sent as nanoseconds
``ns_list``    a list of such durations (consumer ``backoff``)
``json``       a dict, or its JSON text (mirror, subject_transform, republish ...)
``json_list``  a non-empty list of those (sources)
``("enum", v1, v2, ...)``

:func:`build` takes an options dict (keys with or without nats-tcl's
leading ``-``) and a unit for durations: ``"ms"`` for Tcl, ``"s"`` for the
Python face, ``"ns"`` for wire values.  Values may be strings, as Tcl hands
them over.  Errors are ErrInvalidArg with nats-tcl's messages.  Integers
and durations must fit the server's int64 (ns for durations).
"""

from __future__ import annotations

import json
import math
import re

from tclnats_py.errors import make_error
from tclnats_py.engine.options import to_bool
from tclnats_py.engine.subjects import valid_queue, valid_subject, valid_wildcard_subject
from tclnats_py.engine.js.api import check_name, ns2ms
from tclnats_py.engine.js.priority import PRIORITY_SPEC, to_wire

__all__ = [
    "STREAM_SPEC", "CONSUMER_SPEC", "STREAM_EXTRA_SPEC", "CONSUMER_EXTRA_SPEC", "STREAM_DURATIONS",
    "CONSUMER_DURATIONS", "build", "stream_config", "consumer_config", "make_stream_source",
    "make_subject_transform", "make_republish", "stream_reply_to_ms", "consumer_reply_to_ms", "to_bool",
    "duration_ns", "from_ns", "check_replicas", "STREAM_FIELD_TYPES", "learn_stream_fields", "MAX_REPLICAS",
]

# add_stream (the field order of nats.go's stream_config.go, as nats-tcl keeps it)
STREAM_SPEC = (
    ("name", "valid_str", None),
    ("description", "valid_str", None),
    ("subjects", "list", None),
    ("retention", ("enum", "limits", "interest", "workqueue"), "limits"),
    ("max_consumers", "int", None),
    ("max_msgs", "int", None),
    ("max_bytes", "int", None),
    ("discard", ("enum", "new", "old"), None),
    ("max_age", "ns", None),
    ("max_msgs_per_subject", "int", None),
    ("max_msg_size", "int", None),
    ("storage", ("enum", "memory", "file"), "file"),
    ("num_replicas", "replicas", None),
    ("no_ack", "bool", None),
    ("duplicate_window", "ns", None),
    ("mirror", "json", None),
    ("sources", "json_list", None),
    ("sealed", "bool", None),
    ("deny_delete", "bool", None),
    ("deny_purge", "bool", None),
    ("allow_rollup_hdrs", "bool", None),
    ("compression", ("enum", "none", "s2"), None),
    ("first_seq", "int", None),
    ("subject_transform", "json", None),
    ("republish", "json", None),
    ("allow_direct", "bool", None),
    ("mirror_direct", "bool", None),
    ("metadata", "metadata", None),
)

# fields newer than nats-tcl 3.2.1 (the server's StreamConfig up to 2.15; which
# server version each needs: engine/js/api_level.py)
STREAM_EXTRA_SPEC = (
    ("placement", "json", None),
    ("consumer_limits", "json", None),
    ("discard_new_per_subject", "bool", None),
    ("allow_msg_ttl", "bool", None),                # 2.11, ADR-43
    ("subject_delete_marker_ttl", "ns", None),      # 2.11, ADR-43
    ("allow_msg_counter", "bool", None),            # 2.12, ADR-49
    ("allow_atomic", "bool", None),                 # 2.12, ADR-50
    ("allow_msg_schedules", "bool", None),          # 2.12, ADR-51
    ("persist_mode", ("enum", "default", "async"), None),  # 2.12, ADR-56
    ("allow_batched", "bool", None),                # 2.14, ADR-50 fast batch
)

# add_consumer
CONSUMER_SPEC = (
    ("name", "valid_str", None),
    ("durable_name", "valid_str", None),
    ("description", "valid_str", None),
    ("deliver_policy", ("enum", "all", "last", "new", "by_start_sequence", "by_start_time", "last_per_subject"),
     "all"),
    ("opt_start_seq", "int", None),
    ("opt_start_time", "valid_str", None),
    ("ack_policy", ("enum", "none", "all", "explicit"), "explicit"),
    ("ack_wait", "ns", None),
    ("max_deliver", "int", None),
    ("filter_subject", "valid_str", None),
    ("replay_policy", ("enum", "instant", "original"), "instant"),
    ("rate_limit_bps", "int", None),
    ("sample_freq", "valid_str", None),
    ("max_waiting", "int", None),
    ("max_ack_pending", "int", None),
    ("flow_control", "bool", None),
    ("idle_heartbeat", "ns", None),
    ("headers_only", "bool", None),
    ("deliver_subject", "valid_str", None),
    ("deliver_group", "valid_str", None),
    ("inactive_threshold", "ns", None),
    ("num_replicas", "replicas", None),
    ("mem_storage", "bool", None),
    ("metadata", "metadata", None),
)

CONSUMER_EXTRA_SPEC = (
    ("filter_subjects", "list", None),
    ("backoff", "ns_list", None),
    ("max_batch", "int", None),
    ("max_expires", "ns", None),
    ("max_bytes", "int", None),
    ("pause_until", "valid_str", None),            # 2.11
)
# the priority-group fields (ADR-42) are engine/js/priority.py's PRIORITY_SPEC

# what nats-tcl converts from ns to ms in replies (config of stream / consumer)
STREAM_DURATIONS = ("duplicate_window", "max_age", "subject_delete_marker_ttl")
CONSUMER_DURATIONS = ("ack_wait", "idle_heartbeat", "inactive_threshold", "priority_timeout")

# ------------------------------------------------------------ fields beyond the tables
# A stream config read from the server holds fields STREAM_SPEC does not list
# (consumer_limits, allow_msg_ttl ... and whatever newer servers add).  Given
# back in a create/update they go to the server as they came, so a face whose
# values carry no JSON type (Tcl: every value is a string) needs each field's
# type: a JSON value standing for it ({} object with its fields, [x] array of
# x, False boolean, 0 integer, 0.0 number, "" string).  These are nats-server
# 2.15's; learn_stream_fields widens them with every stream config a server
# returns.  Values are in wire units (ns).
_TRANSFORM_TYPE = {"src": "", "dest": ""}
_SOURCE_TYPE = {"name": "", "opt_start_seq": 0, "opt_start_time": "", "filter_subject": "",
                "subject_transforms": [_TRANSFORM_TYPE], "external": {"api": "", "deliver": ""}}
STREAM_FIELD_TYPES = {
    "mirror": _SOURCE_TYPE, "sources": [_SOURCE_TYPE], "subject_transform": _TRANSFORM_TYPE,
    "republish": {"src": "", "dest": "", "headers_only": False},
    "placement": {"cluster": "", "tags": [""], "preferred": ""},
    "consumer_limits": {"inactive_threshold": 0, "max_ack_pending": 0},
    "template_owner": "", "allow_msg_ttl": False, "subject_delete_marker_ttl": 0, "allow_msg_counter": False,
    "allow_atomic": False, "allow_msg_schedules": False, "persist_mode": "", "allow_batched": False,
    "discard_new_per_subject": False,
    # the nested objects of make_stream_source
    "external": _SOURCE_TYPE["external"], "subject_transforms": [_TRANSFORM_TYPE],
}
_UNTYPED = object()
_MAP_FIELDS = frozenset({"metadata"})   # maps, not objects: no fields to learn


def _type_of(v):
    if isinstance(v, dict):
        return {k: _type_of(x) for k, x in v.items()}
    if isinstance(v, list):
        elem = _UNTYPED
        for x in v:
            elem = _widen(elem, x)
        return [] if elem is _UNTYPED else [elem]
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return 0
    if isinstance(v, float):
        return 0.0
    if isinstance(v, str):
        return ""
    return None


def _widen(old, v):
    """The type ``old`` widened by the JSON value ``v`` (object fields are added)."""
    if old is _UNTYPED or old is None:
        return _type_of(v)
    if v is None:
        return old
    if isinstance(old, dict) and isinstance(v, dict):
        out = dict(old)
        for k, x in v.items():
            out[k] = _widen(out.get(k, _UNTYPED), x)
        return out
    if isinstance(old, list) and isinstance(v, list):
        elem = old[0] if old else _UNTYPED
        for x in v:
            elem = _widen(elem, x)
        return [] if elem is _UNTYPED else [elem]
    new = _type_of(v)
    return old if type(new) is type(old) else new


def learn_stream_fields(cfg: dict) -> None:
    """Widen STREAM_FIELD_TYPES with a stream config from the server."""
    for k, v in cfg.items():
        if k not in _MAP_FIELDS:
            STREAM_FIELD_TYPES[k] = _widen(STREAM_FIELD_TYPES.get(k, _UNTYPED), v)


_UNITS = {"ns": 1, "ms": 1_000_000, "s": 1_000_000_000}
_INT = re.compile(r"^[-+]?\d+$")
# the server's integers and durations (ns) are int64; sequences are uint64
INT64_MAX = (1 << 63) - 1
UINT64_MAX = (1 << 64) - 1
# num_replicas: the server keeps at most 5 copies; 0 is its default (1 for a
# stream, the stream's own for a consumer)
MAX_REPLICAS = 5


def _to_int(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        i = v
    elif isinstance(v, str) and _INT.match(v.strip()):
        i = int(v)
    else:
        return None
    return i if abs(i) <= INT64_MAX else None


def check_replicas(v, name: str = "num_replicas") -> int:
    """The one num_replicas rule of both faces (streams, consumers, KV and
    Object Store buckets): an integer from 0 to MAX_REPLICAS, 0 meaning the
    server's default.  Anything else is ErrInvalidArg before a request goes
    out (the server would refuse a negative count or more than 5)."""
    i = _to_int(v)
    if i is None or not 0 <= i <= MAX_REPLICAS:
        raise _bad("replicas", name, v)
    return i


def duration_ns(v, unit: str = "ms") -> int:
    """A duration in ``unit`` (number or numeric string) as whole ns."""
    if isinstance(v, bool):
        raise ValueError(v)
    if isinstance(v, str):
        v = float(v) if not _INT.match(v.strip()) else int(v)
    if not isinstance(v, (int, float)):
        raise ValueError(v)
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError(v)
    mult = _UNITS[unit]
    ns = v * mult if isinstance(v, int) else int(round(v * mult))
    if not 0 <= ns <= INT64_MAX:   # also false for NaN
        raise ValueError(v)
    return ns


def from_ns(v, unit: str = "s"):
    """A wire duration in ``unit``: seconds as float, ms as int (ns2ms rule)."""
    if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
        return v
    if unit == "s":
        return v / 1_000_000_000
    return v // _UNITS[unit]


def _bad(tname, name, val):
    return make_error("ErrInvalidArg", f"Invalid value for the {tname} option {name} : {val}")


def _json(name, val, tname):
    if isinstance(val, (bytes, bytearray)):
        val = val.decode()
    if isinstance(val, str):
        try:
            val = json.loads(val)
        except ValueError:
            raise _bad(tname, name, val) from None
    if not isinstance(val, dict):
        raise _bad(tname, name, val)
    return val


def _format(name, typ, val, unit):
    """One option value, checked and in wire form (nats-tcl's _format_json)."""
    if isinstance(typ, tuple):  # ("enum", ...)
        allowed = typ[1:]
        if val not in allowed:
            raise make_error("ErrInvalidArg", f"Invalid value for the enum {name} : {val}; "
                                              f"allowed values: {' '.join(allowed)}")
        return val
    if typ == "valid_str":
        if not isinstance(val, str) or not val:
            raise _bad(typ, name, val)
        return val
    if typ == "str":
        return "" if val is None else str(val)
    if typ in ("int", "pos_int"):
        i = _to_int(val)
        if i is None or (typ == "pos_int" and i < 0):
            raise _bad(typ, name, val)
        return i
    if typ == "replicas":
        return check_replicas(val, name)
    if typ == "bool":
        b = to_bool(val)
        if b is None:
            raise _bad(typ, name, val)
        return b
    if typ == "list":
        if isinstance(val, str):
            val = [val]
        if not isinstance(val, (list, tuple)) or not val:
            raise _bad(typ, name, val)
        return [str(x) for x in val]
    if typ == "metadata":
        if not isinstance(val, dict) or not val:
            raise _bad(typ, name, val)
        return {str(k): str(v) for k, v in val.items()}
    if typ == "ns":
        try:
            return duration_ns(val, unit)
        except (ValueError, TypeError):
            raise _bad(typ, name, val) from None
    if typ == "ns_list":
        if not isinstance(val, (list, tuple)) or not val:
            raise _bad(typ, name, val)
        try:
            return [duration_ns(x, unit) for x in val]
        except (ValueError, TypeError):
            raise _bad(typ, name, val) from None
    if typ == "json":
        return _json(name, val, typ)
    if typ == "json_list":
        if isinstance(val, (dict, str)):
            val = [val]
        if not isinstance(val, (list, tuple)) or not val:
            raise _bad(typ, name, val)
        return [_json(name, x, typ) for x in val]
    raise make_error("ErrInvalidArg", f"Wrong type {typ}")


def build(spec, options: dict, *, unit: str = "ms", strict: bool = True, defaults: bool = True) -> dict:
    """The wire JSON (a dict) for ``options`` checked against ``spec``.

    Options left out get the spec's default (when ``defaults``); None values
    count as left out.  Unknown options are ErrInvalidArg ``Unknown option
    <name>`` when ``strict``, else sent as they are (fields this table does
    not know yet).
    """
    given = {}
    for k, v in options.items():
        given[k[1:] if isinstance(k, str) and k.startswith("-") else k] = v
    out = {}
    for name, typ, default in spec:
        if name in given:
            v = given.pop(name)
            if v is None:
                if defaults and default is not None:
                    out[name] = default
                continue
            out[name] = _format(name, typ, v, unit)
        elif defaults and default is not None:
            out[name] = default
    for k, v in given.items():
        if strict:
            raise make_error("ErrInvalidArg", f"Unknown option {k}")
        if v is not None:
            out[k] = v
    return out


def stream_config(name: str, options: dict, *, unit: str = "ms", extended: bool = False,
                  strict: bool = True) -> dict:
    """add_stream/update_stream: the stream's config JSON (``name`` always set,
    as the server wants it in the body too).  ``extended`` adds the fields
    newer than nats-tcl (STREAM_EXTRA_SPEC)."""
    check_name("stream", name)
    opts = dict(options)
    opts.pop("-name", None)
    opts["name"] = name
    spec = STREAM_SPEC + STREAM_EXTRA_SPEC if extended else STREAM_SPEC
    cfg = build(spec, opts, unit=unit, strict=strict)
    for subject in cfg.get("subjects") or ():
        if not valid_wildcard_subject(subject):
            raise make_error("ErrInvalidArg", f"Invalid subject {subject}")
    return cfg


def consumer_config(options: dict, *, unit: str = "ms", extended: bool = False, strict: bool = True,
                    defaults: bool = True) -> dict:
    """add_consumer: the consumer's config JSON, names checked (ADR-6); the
    priority-group fields (ADR-42, :mod:`~tclnats_py.engine.js.priority`) in
    every face."""
    spec = (CONSUMER_SPEC + CONSUMER_EXTRA_SPEC if extended else CONSUMER_SPEC) + PRIORITY_SPEC
    cfg = to_wire(build(spec, options, unit=unit, strict=strict, defaults=defaults))
    if cfg.get("name") is not None and cfg.get("durable_name") is not None:
        raise make_error("ErrInvalidArg", "-name conflicts with -durable_name")
    for k in ("name", "durable_name"):
        if cfg.get(k) is not None:
            check_name("consumer", cfg[k])
    if cfg.get("filter_subject") and cfg.get("filter_subjects"):
        raise make_error("ErrInvalidArg", "filter_subject and filter_subjects are mutually exclusive")
    for subject in [cfg.get("filter_subject")] + list(cfg.get("filter_subjects") or ()):
        if subject is not None and not valid_wildcard_subject(subject):
            raise make_error("ErrInvalidArg", f"Invalid filter subject {subject}")
    if cfg.get("deliver_subject") is not None and not valid_subject(cfg["deliver_subject"]):
        raise make_error("ErrInvalidArg", f"Invalid deliver subject {cfg['deliver_subject']}")
    if cfg.get("deliver_group") is not None and not valid_queue(cfg["deliver_group"]):
        raise make_error("ErrInvalidArg", f"Invalid deliver group {cfg['deliver_group']}")
    return cfg


# ------------------------------------------------------------ nested objects
def make_subject_transform(src: str | None, dest: str | None) -> dict:
    """nats::make_subject_transform (ADR-36)."""
    if not src or not dest:
        _required("src" if not src else "dest")
    return {"src": str(src), "dest": str(dest)}


def make_republish(src: str | None, dest: str | None, headers_only: bool = False) -> dict:
    """nats::make_republish."""
    if not src or not dest:
        _required("src" if not src else "dest")
    return {"src": src, "dest": dest, "headers_only": _format("headers_only", "bool", headers_only, "ms")}


def make_stream_source(name: str, opt_start_seq: int | None = None, opt_start_time: str | None = None,
                       filter_subject: str | None = None, subject_transforms=None, api: str | None = None,
                       deliver: str | None = None, domain: str | None = None, external=None) -> dict:
    """nats::make_stream_source: a mirror or one of the sources of a stream.

    A stream in another domain or account is reached through ``api`` (its
    API prefix, e.g. ``$JS.hub.API``; ``domain`` is the shorthand) and maybe
    ``deliver`` (the delivery subject prefix): the ``external`` object,
    which may also be given whole (a dict or its JSON) as ``external``.
    """
    if not name:
        _required("name")
    if domain is not None:
        if api is not None:
            raise make_error("ErrInvalidArg", "-domain and -api are mutually exclusive")
        api = f"$JS.{domain}.API"
    spec = (("name", "valid_str", None), ("opt_start_seq", "pos_int", None), ("opt_start_time", "valid_str", None),
            ("filter_subject", "valid_str", None), ("subject_transforms", "json_list", None))
    src = build(spec, {"name": name, "opt_start_seq": opt_start_seq, "opt_start_time": opt_start_time,
                       "filter_subject": filter_subject, "subject_transforms": subject_transforms})
    if external is not None:
        if api is not None or deliver is not None:
            raise make_error("ErrInvalidArg", "-external excludes -api and -deliver")
        src["external"] = _json("external", external, "json")
    elif api is not None:
        ext = {"api": _format("api", "valid_str", api, "ms")}
        if deliver is not None:
            ext["deliver"] = _format("deliver", "valid_str", deliver, "ms")
        src["external"] = ext
    return src


def _required(name):
    raise make_error("ErrInvalidArg", f"Option {name} is required")


# ------------------------------------------------------------ replies for Tcl
def stream_reply_to_ms(resp: dict) -> dict:
    """A stream create/update/info reply with nats-tcl's ms in ``config``."""
    if isinstance(resp.get("config"), dict):
        ns2ms(resp["config"], *STREAM_DURATIONS)
    return resp


def consumer_reply_to_ms(resp: dict) -> dict:
    """A consumer create/info reply with nats-tcl's ms in ``config``."""
    if isinstance(resp.get("config"), dict):
        ns2ms(resp["config"], *CONSUMER_DURATIONS)
    return resp
