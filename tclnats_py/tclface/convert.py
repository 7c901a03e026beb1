"""Small conversions every part of the Tcl connection shares: Tcl strings
as bytes, headers and dicts as flat Tcl lists, log levels, the clock, and the
text of an internal error.

A leaf module: the parts of :class:`~tclnats_py.tclface.connection.TclConnection`
(io.py, effects.py, conn_commands.py, js_commands.py) import it, it imports
none of them.
"""

from __future__ import annotations

import time

__all__ = ["LEVELS", "flat", "format_exc", "headers_to_tcl", "now_ms", "to_bytes"]

# the log levels of nats-tcl's logger, lowest first
LEVELS = {"debug": 0, "info": 1, "warn": 2, "error": 3}


def now_ms() -> int:
    return int(time.time() * 1000)


def format_exc() -> str:
    """The traceback being handled, as text (for internal-error reports)."""
    import traceback  # (with linecache, tokenize: only when there is one to format)
    return traceback.format_exc()


def to_bytes(value) -> bytes:
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
    """A header mapping (name -> list of values) as nats-tcl's header dict."""
    if not headers:
        return ()
    out = []
    for k, vals in headers.items():
        out.append(k)
        out.append(tuple(vals))
    return tuple(out)


def flat(d: dict):
    """A dict's keys and values, one after the other (a Tcl dict's list)."""
    for k, v in d.items():
        yield k
        yield v
