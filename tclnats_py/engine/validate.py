"""Argument checks shared by both faces: one validator per kind of input.

Subjects and queue groups are checked by the engine itself
(:mod:`tclnats_py.engine.subjects`, nats-tcl's rules); booleans in the Tcl form by
:func:`tclnats_py.engine.options.to_bool`.  The rest is here:

  payloads   bytes, bytearray, memoryview, str (UTF-8) or None (empty), else ErrInvalidArg
  timeouts   seconds, a finite int/float >= 0 (None: the default), else ErrBadTimeout;
             more than MAX_TIMEOUT (about 31 years) counts as MAX_TIMEOUT
  durations  (ttl, nak delay) a finite number >= 0, else ErrInvalidArg
  counts     ints (not bool) in range, else ErrInvalidArg
  text       option values written as text (Spark's options, configuration files):
             :func:`int_text` a decimal integer, :func:`duration_ms` milliseconds
             or a number with a unit (500ms, 30s, 15m, 1h, 2d); each gives None
             for what is not one, and the caller names its option in the error
  headers    a mapping of header name -> str/bytes value or a list/tuple of them; names
             non-empty, printable, without whitespace or ":"; values without CR/LF;
             else ErrInvalidArg.  :func:`header_name_error` and
             :func:`header_value_error` are the two rules; the Tcl face applies them
             to the pairs of a Tcl dict, the Python face to a mapping, the engine's
             encoder once more before anything is framed.
"""

from __future__ import annotations

import re

from tclnats_py.errors import make_error

__all__ = ["MAX_TIMEOUT", "int_text", "duration_ms", "check_timeout", "check_seconds", "check_int", "check_str",
           "check_headers", "header_name_error", "header_value_error"]

_NUMBER = (int, float)
MAX_TIMEOUT = 1e9  # seconds; in ns it still fits the server's int64 durations


def _to_bytes(data) -> bytes:
    if data.__class__ is bytes:
        return data
    if data is None:
        return b""
    if isinstance(data, str):
        return data.encode()
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise make_error("ErrInvalidArg", f"Invalid payload of type {type(data).__name__}: bytes or str expected")


def check_timeout(timeout, default=None, what: str = "timeout"):
    """``timeout`` (seconds) checked: a finite number >= 0; None -> ``default``."""
    if timeout is None:
        return default
    if timeout.__class__ not in _NUMBER and (isinstance(timeout, bool) or not isinstance(timeout, _NUMBER)):
        raise make_error("ErrBadTimeout", f"Invalid {what} {timeout!r}")
    if not (0 <= timeout < float("inf")):  # also false for NaN
        raise make_error("ErrBadTimeout", f"Invalid {what} {timeout!r}")
    return timeout if timeout <= MAX_TIMEOUT else MAX_TIMEOUT


def check_seconds(name: str, value, allow_none: bool = True):
    """A duration option that is not a timeout (ttl, nak delay): a finite
    number >= 0, else ErrInvalidArg."""
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, _NUMBER) or not (0 <= value < float("inf")):
        raise make_error("ErrInvalidArg", f"Invalid value for {name}: {value!r}")
    return value


def check_int(name: str, value, minimum: int = 0, maximum: int | None = None, allow_none: bool = False):
    """An int option (bool is not one) within [minimum, maximum]."""
    if value is None and allow_none:
        return None
    if value.__class__ is not int and (isinstance(value, bool) or not isinstance(value, int)) \
            or value < minimum or (maximum is not None and value > maximum):
        raise make_error("ErrInvalidArg", f"Invalid value for {name}: {value!r}")
    return value


def check_str(name: str, value, allow_none: bool = True, allow_empty: bool = True):
    """A free-text string option."""
    if value is None and allow_none:
        return None
    if not isinstance(value, str) or (not value and not allow_empty):
        raise make_error("ErrInvalidArg", f"Invalid value for {name}: {value!r}")
    return value


_INT_TEXT = re.compile(r"\s*([-+]?\d+)\s*")
_DURATION_TEXT = re.compile(r"\s*(\d+)\s*([a-z]*)\s*")
DURATION_UNITS_MS = {"ms": 1, "s": 1000, "sec": 1000, "m": 60000, "min": 60000, "h": 3600000, "d": 86400000}


def int_text(value) -> int | None:
    """A decimal integer written as text (surrounding blanks allowed), or an
    int (not bool); None for anything else."""
    if value.__class__ is int:
        return value
    if isinstance(value, bool) or value is None:
        return None
    m = _INT_TEXT.fullmatch(str(value))
    return int(m.group(1)) if m else None


def duration_ms(value) -> int | None:
    """A duration in milliseconds: a whole number of ms, or one with a unit
    of :data:`DURATION_UNITS_MS` (``500ms``, ``30s``, ``15m``, ``1h``, ``2d``;
    any case); None for anything else."""
    if isinstance(value, bool) or value is None:
        return None
    m = _DURATION_TEXT.fullmatch(str(value).lower())
    if not m or (m.group(2) and m.group(2) not in DURATION_UNITS_MS):
        return None
    return int(m.group(1)) * DURATION_UNITS_MS[m.group(2) or "ms"]


def _bad_header(msg: str):
    return make_error("ErrInvalidArg", f"Invalid headers: {msg}")


def header_name_error(name) -> str | None:
    """Why ``name`` cannot be a header name, or None when it can."""
    if not isinstance(name, str) or not name or not name.isprintable() or any(ch in name for ch in " :\t"):
        return f"invalid name {name!r}"
    return None


def header_value_error(name: str, value) -> str | None:
    """Why ``value`` cannot be a value of header ``name``, or None when it can."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return f"value of {name} must be str or bytes, not {type(value).__name__}"
    if "\r" in value or "\n" in value:
        return f"value of {name} contains a line break"
    return None


def check_headers(headers):
    """Headers as the engine takes them (see the rules above); None stays None."""
    if headers is None:
        return None
    if not hasattr(headers, "items") or isinstance(headers, (str, bytes)):
        raise _bad_header(f"a mapping expected, not {type(headers).__name__}")
    for k, vals in (dict.items(headers) if isinstance(headers, dict) else headers.items()):
        why = header_name_error(k)
        if why is None:
            for v in (vals if isinstance(vals, (list, tuple)) else (vals,)):
                why = header_value_error(k, v)
                if why is not None:
                    break
        if why is not None:
            raise _bad_header(why)
    return headers
