"""Stream and consumer configurations: nats-tcl's option tables, checked and
turned into the API's JSON (JsAPI.md ``add_stream`` / ``add_consumer``).

A spec row is ``(name, type, default)``; types are nats-tcl's:

``valid_str``  non-empty string         ``str``       any string
``int``        integer                  ``pos_int``   integer >= 0
``bool``       boolean (Tcl spellings accepted: 1/0, true/false, yes/no, on/off)
``list``       non-empty list of strings (a single string is a one-item list)
``metadata``   non-empty dict of strings (ADR-33)
``ns``         a duration in the caller's unit, sent as nanoseconds
``ns_list``    a list of such durations (consumer ``backoff``)
``json``       a dict, or its JSON text (mirror, subject_transform, republish ...)
``json_list``  a non-empty list of those (sources)
``("enum", v1, v2, ...)``

:func:`build` takes an options dict (keys with or without nats-tcl's
leading ``-``) and a unit for durations: ``"ms"`` for Tcl, ``"s"`` for the
Python face, ``"ns"`` for wire values.  Values may be strings, as Tcl hands
them over.  Errors are ErrInvalidArg with nats-tcl's messages.
"""

from __future__ import annotations

import json
import re

from .._errors import make_error
from .api import check_name, ns2ms

__all__ = [
    "STREAM_SPEC", "CONSUMER_SPEC", "STREAM_EXTRA_SPEC", "CONSUMER_EXTRA_SPEC", "STREAM_DURATIONS",
    "CONSUMER_DURATIONS", "build", "stream_config", "consumer_config", "make_stream_source",
    "make_subject_transform", "make_republish", "stream_reply_to_ms", "consumer_reply_to_ms", "to_bool",
    "duration_ns", "from_ns",
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
    ("num_replicas", "int", None),
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

# fields newer than nats-tcl 3.2.1 that the Python face names (servers >= 2.11)
STREAM_EXTRA_SPEC = (
    ("placement", "json", None),
    ("consumer_limits", "json", None),
    ("allow_msg_ttl", "bool", None),
    ("subject_delete_marker_ttl", "ns", None),
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
    ("num_replicas", "int", None),
    ("mem_storage", "bool", None),
    ("metadata", "metadata", None),
)

CONSUMER_EXTRA_SPEC = (
    ("filter_subjects", "list", None),
    ("backoff", "ns_list", None),
    ("max_batch", "int", None),
    ("max_expires", "ns", None),
    ("max_bytes", "int", None),
    ("pause_until", "valid_str", None),
)

# what nats-tcl converts from ns to ms in replies (config of stream / consumer)
STREAM_DURATIONS = ("duplicate_window", "max_age")
CONSUMER_DURATIONS = ("ack_wait", "idle_heartbeat", "inactive_threshold")

_UNITS = {"ns": 1, "ms": 1_000_000, "s": 1_000_000_000}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_INT = re.compile(r"^[-+]?\d+$")


def to_bool(v):
    """A Python or Tcl boolean, or None when ``v`` is not one."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int):
        return v != 0
    if isinstance(v, str):
        s = v.strip().lower()
        if s in _TRUE:
            return True
        if s in _FALSE:
            return False
    return None


def _to_int(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and _INT.match(v.strip()):
        return int(v)
    return None


def duration_ns(v, unit: str = "ms") -> int:
    """A duration in ``unit`` (number or numeric string) as whole ns."""
    if isinstance(v, bool):
        raise ValueError(v)
    if isinstance(v, str):
        v = float(v) if not _INT.match(v.strip()) else int(v)
    if not isinstance(v, (int, float)):
        raise ValueError(v)
    mult = _UNITS[unit]
    return v * mult if isinstance(v, int) else int(round(v * mult))


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
    return build(spec, opts, unit=unit, strict=strict)


def consumer_config(options: dict, *, unit: str = "ms", extended: bool = False, strict: bool = True,
                    defaults: bool = True) -> dict:
    """add_consumer: the consumer's config JSON, names checked (ADR-6)."""
    spec = CONSUMER_SPEC + CONSUMER_EXTRA_SPEC if extended else CONSUMER_SPEC
    cfg = build(spec, options, unit=unit, strict=strict, defaults=defaults)
    if cfg.get("name") is not None and cfg.get("durable_name") is not None:
        raise make_error("ErrInvalidArg", "-name conflicts with -durable_name")
    for k in ("name", "durable_name"):
        if cfg.get(k) is not None:
            check_name("consumer", cfg[k])
    if cfg.get("filter_subject") and cfg.get("filter_subjects"):
        raise make_error("ErrInvalidArg", "filter_subject and filter_subjects are mutually exclusive")
    return cfg


# ------------------------------------------------------------ nested objects
def make_subject_transform(src: str, dest: str) -> dict:
    """nats::make_subject_transform (ADR-36)."""
    if not src or not dest:
        _required("src" if not src else "dest")
    return {"src": str(src), "dest": str(dest)}


def make_republish(src: str, dest: str, headers_only: bool = False) -> dict:
    """nats::make_republish."""
    if not src or not dest:
        _required("src" if not src else "dest")
    return {"src": src, "dest": dest, "headers_only": _format("headers_only", "bool", headers_only, "ms")}


def make_stream_source(name: str, opt_start_seq: int | None = None, opt_start_time: str | None = None,
                       filter_subject: str | None = None, subject_transforms=None, api: str | None = None,
                       deliver: str | None = None, domain: str | None = None) -> dict:
    """nats::make_stream_source: a mirror or one of the sources of a stream.

    A stream in another domain or account is reached through ``api`` (its
    API prefix, e.g. ``$JS.hub.API``; ``domain`` is the shorthand) and maybe
    ``deliver`` (the delivery subject prefix): the ``external`` object.
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
    if api is not None:
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
