"""Connection options: names, types and defaults shared by both faces.

The names, defaults and checks are those of nats-tcl's ``configure``
(CoreAPI.md "Options"); ``creds`` and ``nkey_seed`` are additions for
decentralised (JWT) and NKey authentication.  Values arrive as strings from
Tcl and as Python objects from the asyncio face; :func:`coerce` turns either
into the typed value the engine uses, raising ErrInvalidArg / ErrBadTimeout
with nats-tcl's message when the value does not fit the type.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing costs ~10 ms of every start

from tclnats_py.errors import make_error

__all__ = ["OPTION_SPEC", "Options", "coerce", "spin_time_default", "to_bool"]

# name: (type, default)   types: see coerce()
OPTION_SPEC: dict[str, tuple[str, object]] = {
    "servers": ("list", ()),
    "name": ("valid_str", ""),
    "pedantic": ("bool", False),
    "verbose": ("bool", False),
    "randomize": ("bool", True),
    "connect_timeout": ("timeout", 2000),
    "reconnect_time_wait": ("timeout", 2000),
    "custom_reconnect_delay": ("str", ""),
    "max_reconnect_attempts": ("int", 60),
    "ping_interval": ("timeout", 120000),
    "max_outstanding_pings": ("pos_int", 2),
    "echo": ("bool", True),
    "tls_opts": ("str", ""),
    "user": ("str", ""),
    "password": ("str", ""),
    "token": ("str", ""),
    "secure": ("bool", False),
    "check_subjects": ("bool", True),
    "dictmsg": ("bool", False),
    "utf8_convert": ("bool", False),
    "request_timeout": ("timeout", 10000),
    # additions of tclnats_py
    "creds": ("str", ""),
    "nkey_seed": ("str", ""),
    "pending_msgs_limit": ("int", 512 * 1024),
    "pending_bytes_limit": ("int", 64 * 1024 * 1024),
    # bounded memory (nats.go's ReconnectBufSize, ReconnectJitter[TLS], IgnoreAuthErrorAbort)
    "reconnect_buf_size": ("pos_int", 8 * 1024 * 1024),  # bytes buffered while not connected
    "write_buf_size": ("pos_int", 4 * 1024 * 1024),      # bytes queued for the socket before writers wait
    "flush_timeout": ("timeout", 10000),                 # the longest a writer waits for the socket
    "reconnect_jitter": ("timeout", 0),                  # ms added at random to each reconnect wait
    "reconnect_jitter_tls": ("timeout", 0),              # the same for TLS servers
    "ignore_auth_error_abort": ("bool", False),          # keep retrying a server that refuses us twice
    # WebSocket servers (ws://, wss://): engine/websocket.py
    "proxy": ("str", ""),                                # http://host:port of an HTTP CONNECT proxy
    "ws_headers": ("pairs", ()),                         # extra headers of the upgrade request
    "ws_compression": ("bool", True),                    # offer permessage-deflate
}

_BOOL_WORDS = ("true", "false", "yes", "no", "on", "off")


def spin_time_default() -> float:
    """The spin time in seconds when ``spin_time`` is not given (the
    asyncio and blocking faces; the Tcl face reads the same variable):
    TCLNATS_SPIN_US (microseconds, as for the Tcl face) or 300 us;
    ErrInvalidArg for a value that is not a whole number."""
    v = os.environ.get("TCLNATS_SPIN_US")
    if v is None or not v.strip():
        return 0.0003
    try:
        us = int(v)
    except ValueError:
        raise make_error("ErrInvalidArg", f"TCLNATS_SPIN_US={v!r}: a whole number of microseconds expected") from None
    return max(0, us) / 1e6


def to_bool(value) -> bool | None:
    """The one boolean rule of both faces: what Tcl's ``string is boolean
    -strict`` accepts (nats-tcl checks every bool option with it), or None.

    ``0`` and ``1``; ``true false yes no on off`` in any case, or a unique
    prefix of one (``t``, ``fa``, ``y``, ``n``, ``of``; not ``o``).  No
    other number (``2``, ``2.5``, ``0x1``), no white space, not empty.
    Python values: True/False, and the ints 0 and 1.
    """
    if value is True or value is False:
        return value
    if isinstance(value, int):
        return bool(value) if value in (0, 1) else None
    if not isinstance(value, str):
        return None
    if value == "1" or value == "0":
        return value == "1"
    v = value.lower()
    hits = [w for w in _BOOL_WORDS if v and w.startswith(v)]
    if len(hits) != 1:
        return None
    return hits[0] in ("true", "yes", "on")


def _to_int(value) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        v = value.strip()
        try:
            return int(v, 0) if v[:2].lower() in ("0x", "0o", "0b") else int(v)
        except (ValueError, IndexError):
            return None
    return None


def coerce(name: str, typ: str, value):
    """Check ``value`` against ``typ`` and return the typed value."""
    bad_code = "ErrBadTimeout" if typ == "timeout" else "ErrInvalidArg"

    def bad():
        return make_error(bad_code, f"Invalid value for the {typ} option {name} : {value}")

    if typ == "bool":
        b = to_bool(value)
        if b is None:
            raise bad()
        return b
    if typ in ("timeout", "pos_int"):
        i = _to_int(value)
        if i is None or i < 0:
            raise bad()
        return i
    if typ == "int":
        i = _to_int(value)
        if i is None:
            raise bad()
        return i
    if typ == "valid_str":
        if value is None or (isinstance(value, str) and value == ""):
            raise bad()
        return value
    if typ == "pairs":
        return _pairs(value, bad)
    if typ == "list":
        if isinstance(value, str):
            return (value,) if value else ()
        return tuple(value)
    return value


def _pairs(value, bad) -> tuple:
    """(name, value) pairs from a mapping, a list of pairs, or a flat list of
    even length (a Tcl dict); names are HTTP header names."""
    if not value:
        return ()
    if isinstance(value, dict):
        items = list(value.items())
    elif isinstance(value, (list, tuple)) and all(isinstance(p, (list, tuple)) and len(p) == 2 for p in value):
        items = [tuple(p) for p in value]
    elif isinstance(value, (list, tuple)) and len(value) % 2 == 0 and not any(isinstance(p, (list, tuple))
                                                                            for p in value):
        items = list(zip(value[::2], value[1::2]))
    else:
        raise bad()
    for k, v in items:
        if not str(k) or any(c in str(k) for c in " \t\r\n:") or any(c in str(v) for c in "\r\n"):
            raise bad()
    return tuple((str(k), str(v)) for k, v in items)


class Options:
    """Typed option values of one connection (attribute per option)."""

    if TYPE_CHECKING:  # the attributes __init__ sets from OPTION_SPEC, for type checkers
        servers: tuple
        name: str
        pedantic: bool
        verbose: bool
        randomize: bool
        connect_timeout: int
        reconnect_time_wait: int
        custom_reconnect_delay: str
        max_reconnect_attempts: int
        ping_interval: int
        max_outstanding_pings: int
        echo: bool
        tls_opts: str
        user: str
        password: str
        token: str
        secure: bool
        check_subjects: bool
        dictmsg: bool
        utf8_convert: bool
        request_timeout: int
        creds: str
        nkey_seed: str
        pending_msgs_limit: int
        pending_bytes_limit: int
        reconnect_buf_size: int
        write_buf_size: int
        flush_timeout: int
        reconnect_jitter: int
        reconnect_jitter_tls: int
        ignore_auth_error_abort: bool
        proxy: str
        ws_headers: tuple
        ws_compression: bool

    def __init__(self, **kwargs):
        for k, (_t, d) in OPTION_SPEC.items():
            setattr(self, k, d)
        self.update(kwargs)

    def update(self, values: dict) -> None:
        # all or nothing: check everything before assigning anything
        typed = {}
        for k, v in values.items():
            spec = OPTION_SPEC.get(k)
            if spec is None:
                raise make_error("ErrInvalidArg", f"Unknown option {k}")
            typed[k] = coerce(k, spec[0], v) if not (spec[0] == "valid_str" and k == "name" and v == "") else v
        for k, v in typed.items():
            setattr(self, k, v)

    def reset(self, name: str) -> None:
        spec = OPTION_SPEC.get(name)
        if spec is None:
            raise make_error("ErrInvalidArg", f"Invalid option {name}")
        setattr(self, name, spec[1])
