"""The connect options of the asyncio face: Python names and units.

The engine (shared with the Tcl face) keeps nats-tcl's option names and
units: milliseconds for times.  This face speaks as nats-py and nats.go do:

* times are **seconds** (int or float) under the names nats-py users know
  (``connect_timeout=2``, ``reconnect_time_wait=0.5``, ``ping_interval=120``);
  milliseconds only under explicit ``*_ms`` names (``connect_timeout_ms=2000``);
* a negative, NaN, infinite or implausible value (``connect_timeout=5000``:
  more than the option's ceiling in :data:`SECONDS`) is ErrInvalidArg naming
  the unit and the ``*_ms`` name;
* nats-py's connect names are accepted (:data:`ALIASES`, :data:`NEGATED`,
  the callbacks of :data:`CALLBACKS`); an unknown name is ErrInvalidArg with
  a "did you mean".

:func:`translate` turns the keyword arguments of ``tclnats_py.connect`` into
(engine options, driver settings).  :data:`TABLE` lists every option (name,
unit, default, nats-py name, what it does); README.md's table and the API
reference come from it.
"""

from __future__ import annotations

import difflib
import math
import os
from typing import TYPE_CHECKING, Any, Awaitable, Callable, NamedTuple, TypedDict, Union

from tclnats_py.engine.options import OPTION_SPEC
from tclnats_py.errors import make_error

if TYPE_CHECKING:  # names used in annotations only
    import ssl

__all__ = ["SECONDS", "ALIASES", "NEGATED", "CALLBACKS", "DRIVER", "TABLE", "Option", "ConnectOptions", "translate",
           "known_names", "markdown_table", "seconds_delay", "tls_context"]

#: time options in seconds: name -> (engine option or None for the driver's
#: own, default seconds, plausible ceiling in seconds)
SECONDS: dict[str, tuple[str | None, float, float]] = {
    "connect_timeout": ("connect_timeout", 2.0, 600.0),
    "reconnect_time_wait": ("reconnect_time_wait", 2.0, 3600.0),
    "ping_interval": ("ping_interval", 120.0, 86400.0),
    "request_timeout": ("request_timeout", 10.0, 86400.0),
    "flush_timeout": ("flush_timeout", 10.0, 3600.0),
    "reconnect_jitter": ("reconnect_jitter", 0.0, 3600.0),
    "reconnect_jitter_tls": ("reconnect_jitter_tls", 0.0, 3600.0),
    "drain_timeout": (None, 10.0, 86400.0),
    "spin_time": (None, 0.0003, 0.1),
}

#: nats-py names of engine options with the same meaning and value
ALIASES: dict[str, str] = {
    "user_credentials": "creds",
    "nkeys_seed": "nkey_seed",
    "nkeys_seed_str": "nkey_seed",
    "pending_size": "reconnect_buf_size",
}

#: nats-py booleans that are the negation of an engine option
NEGATED: dict[str, str] = {"no_echo": "echo", "dont_randomize": "randomize"}

#: callbacks the driver keeps (plain or coroutine functions)
CALLBACKS = ("error_cb", "status_cb", "disconnected_cb", "reconnected_cb", "closed_cb",
             "discovered_server_cb", "lame_duck_mode_cb", "signature_cb", "user_jwt_cb")

#: other settings the driver keeps
DRIVER = ("reconnect_delay", "reconnect_delay_ms", "tls", "tls_ca", "tls_cert", "tls_key", "tls_hostname",
          "tls_verify", "tls_handshake_first", "allow_reconnect", "inbox_prefix", "retry_on_failed_connect")

# engine options that are Tcl-only and mean nothing (or something else) here
_TCL_ONLY = ("dictmsg", "utf8_convert", "tls_opts")


class Option(NamedTuple):
    """One row of the connect-options table."""
    name: str
    unit: str
    default: str
    natspy: str
    doc: str


TABLE: tuple[Option, ...] = (
    Option("servers", "", '"nats://localhost:4222"', "servers", "a URL or a list of URLs"),
    Option("name", "", '""', "name", "the connection's name, shown by the server"),
    Option("connect_timeout", "s", "2", "connect_timeout", "one connection attempt (TCP, TLS, INFO, CONNECT)"),
    Option("reconnect_time_wait", "s", "2", "reconnect_time_wait", "wait between two attempts on one server"),
    Option("max_reconnect_attempts", "", "60", "max_reconnect_attempts", "attempts per server; -1: forever"),
    Option("allow_reconnect", "bool", "True", "allow_reconnect", "False: a lost connection closes the client"),
    Option("retry_on_failed_connect", "bool", "False", "(nats.go RetryOnFailedConnect; nats-py's connect "
           "always does)", "True: connect() retries each server as reconnecting does (max_reconnect_attempts, "
           "reconnect_time_wait) and returns once one answers"),
    Option("reconnect_jitter", "s", "0", "(nats.go ReconnectJitter)", "random extra wait, up to this"),
    Option("reconnect_jitter_tls", "s", "0", "(nats.go ReconnectJitter)", "the same for TLS servers"),
    Option("reconnect_delay", "s", "None", "(nats.go CustomReconnectDelay)",
           "callable(server dict) -> seconds to wait, instead of reconnect_time_wait"),
    Option("ping_interval", "s", "120", "ping_interval", "time between client PINGs"),
    Option("max_outstanding_pings", "", "2", "max_outstanding_pings", "PINGs without PONG before ErrStaleConnection"),
    Option("request_timeout", "s", "10", "(nats.go Timeout)", "default timeout of request()"),
    Option("flush_timeout", "s", "10", "flush_timeout", "longest wait for the socket (publish, close)"),
    Option("drain_timeout", "s", "10", "drain_timeout (30)", "default timeout of drain()"),
    Option("spin_time", "s", "0.0003", "", "while a reply is awaited, the event loop polls this long without "
           "sleeping before it sleeps (0: off; env TCLNATS_SPIN_US sets the default)"),
    Option("reconnect_buf_size", "bytes", "8 MiB", "pending_size", "bytes buffered while not connected"),
    Option("write_buf_size", "bytes", "4 MiB", "(none; nats-py flushes at pending_size)", "bytes queued for the socket before "
           "await publish() waits"),
    Option("pending_msgs_limit", "msgs", "524288", "pending_msgs_limit (subscribe)", "per-subscription queue"),
    Option("pending_bytes_limit", "bytes", "64 MiB", "pending_bytes_limit (subscribe)", "per-subscription queue"),
    Option("randomize", "bool", "True", "dont_randomize (negated)", "shuffle the server pool"),
    Option("echo", "bool", "True", "no_echo (negated)", "receive our own publishes"),
    Option("pedantic", "bool", "False", "pedantic", "server-side strict checks"),
    Option("verbose", "bool", "False", "verbose", "+OK for every message"),
    Option("user", "", '""', "user", "user name (also from the URL)"),
    Option("password", "", '""', "password", "password (also from the URL)"),
    Option("token", "", '""', "token", "auth token"),
    Option("creds", "path", '""', "user_credentials", "a .creds file (JWT + NKey seed)"),
    Option("nkey_seed", "path or seed", '""', "nkeys_seed, nkeys_seed_str", "an NKey seed or a file holding one"),
    Option("user_jwt_cb", "", "None", "user_jwt_cb", "callable() -> JWT (bytes or str); with signature_cb"),
    Option("signature_cb", "", "None", "signature_cb", "callable(nonce: str) -> base64url signature "
           "(bytes or str); with user_jwt_cb"),
    Option("inbox_prefix", "", '"_INBOX"', "inbox_prefix", "prefix of reply subjects"),
    Option("tls", "", "None", "tls", "a ready ssl.SSLContext"),
    Option("tls_ca", "path", "None", "(nats.go RootCAs)", "CA file to verify the server"),
    Option("tls_cert", "path", "None", "(nats.go ClientCert)", "client certificate"),
    Option("tls_key", "path", "None", "(nats.go ClientCert)", "client key"),
    Option("tls_hostname", "", "None", "tls_hostname", "name the server certificate must carry"),
    Option("tls_verify", "bool", "True", "", "False: no certificate check"),
    Option("tls_handshake_first", "bool", "False", "tls_handshake_first", "TLS before the server's INFO "
           "(server tls { handshake_first: true })"),
    Option("secure", "bool", "False", "", "require TLS (also tls:// URLs)"),
    Option("ignore_auth_error_abort", "bool", "False", "(nats.go IgnoreAuthErrorAbort)",
           "keep retrying a server that refused us twice"),
    Option("error_cb", "", "None", "error_cb", "error_cb(err) for asynchronous errors; without it they are "
           "logged at ERROR by the 'tclnats_py' logger"),
    Option("disconnected_cb", "", "None", "disconnected_cb", "disconnected_cb()"),
    Option("reconnected_cb", "", "None", "reconnected_cb", "reconnected_cb()"),
    Option("closed_cb", "", "None", "closed_cb", "closed_cb()"),
    Option("discovered_server_cb", "", "None", "discovered_server_cb", "discovered_server_cb(): a server "
           "joined the pool (INFO connect_urls)"),
    Option("lame_duck_mode_cb", "", "None", "lame_duck_mode_cb", "lame_duck_mode_cb(): the server entered "
           "lame duck mode"),
    Option("status_cb", "", "None", "", "status_cb(status): connecting, connected, reconnecting, closed"),
)


#: a path option's value
_Path = Union[str, "os.PathLike[str]"]
#: a callback without argument (disconnected_cb, reconnected_cb ...): a plain or a coroutine function
_Hook = Callable[[], Union[None, Awaitable[None]]]


class ConnectOptions(TypedDict, total=False):
    """The keyword arguments of ``tclnats_py.connect`` / ``Client(...)`` /
    ``Client.connect`` for type checkers (``**options: Unpack[ConnectOptions]``):
    a misspelled name or a value of the wrong type is a type error.  The
    same names as :func:`known_names` (tests/install/test_typing.py checks it), but
    ``servers``, which is the functions' first parameter.  See :data:`TABLE`."""
    name: str
    connect_timeout: float
    connect_timeout_ms: float
    reconnect_time_wait: float
    reconnect_time_wait_ms: float
    max_reconnect_attempts: int
    allow_reconnect: bool
    retry_on_failed_connect: bool
    reconnect_jitter: float
    reconnect_jitter_ms: float
    reconnect_jitter_tls: float
    reconnect_jitter_tls_ms: float
    reconnect_delay: Callable[[dict[str, Any]], float] | None
    reconnect_delay_ms: Callable[[dict[str, Any]], float] | None
    ping_interval: float
    ping_interval_ms: float
    max_outstanding_pings: int
    request_timeout: float
    request_timeout_ms: float
    flush_timeout: float
    flush_timeout_ms: float
    drain_timeout: float
    drain_timeout_ms: float
    spin_time: float
    spin_time_ms: float
    reconnect_buf_size: int
    pending_size: int
    write_buf_size: int
    pending_msgs_limit: int
    pending_bytes_limit: int
    randomize: bool
    dont_randomize: bool
    echo: bool
    no_echo: bool
    pedantic: bool
    verbose: bool
    check_subjects: bool
    user: str
    password: str
    token: str
    creds: _Path
    user_credentials: _Path
    nkey_seed: str
    nkeys_seed: _Path | bytes
    nkeys_seed_str: str | bytes
    user_jwt_cb: Callable[[], bytes | str] | None
    signature_cb: Callable[[str], bytes | str] | None
    inbox_prefix: str
    tls: ssl.SSLContext | None
    tls_ca: _Path | None
    tls_cert: _Path | None
    tls_key: _Path | None
    tls_hostname: str | None
    tls_verify: bool
    tls_handshake_first: bool
    secure: bool
    ignore_auth_error_abort: bool
    error_cb: Callable[[Exception], Union[None, Awaitable[None]]] | None
    status_cb: Callable[[str], Union[None, Awaitable[None]]] | None
    disconnected_cb: _Hook | None
    reconnected_cb: _Hook | None
    closed_cb: _Hook | None
    discovered_server_cb: _Hook | None
    lame_duck_mode_cb: _Hook | None


def known_names() -> list[str]:
    """Every name ``connect`` accepts."""
    names = set(SECONDS) | {k + "_ms" for k in SECONDS} | set(ALIASES) | set(NEGATED) | set(CALLBACKS) \
        | set(DRIVER) | {k for k in OPTION_SPEC if k not in _TCL_ONLY and k != "custom_reconnect_delay"}
    return sorted(names)


def _bad(msg: str):
    return make_error("ErrInvalidArg", msg)


def _number(name: str, value, unit: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(f"Invalid value for {name}: {value!r} (a number of {unit} expected)")
    if math.isnan(value) or value < 0 or math.isinf(value):
        raise _bad(f"Invalid value for {name}: {value!r} (a finite number of {unit} >= 0 expected)")
    return value


def seconds(name: str, value) -> float:
    """A time option in seconds, checked against its plausible ceiling."""
    ceiling = SECONDS[name][2]
    v = _number(name, value, "seconds")
    if v > ceiling:
        raise _bad(f"Invalid value for {name}: {value!r} seconds is implausible (at most {ceiling:g} s); "
                   f"{name} is in seconds: for milliseconds use {name}_ms={value!r}")
    return v


def milliseconds(name: str, value) -> float:
    """A ``*_ms`` option, checked; returned in seconds."""
    base = name[:-3]
    ceiling = SECONDS[base][2] * 1000
    v = _number(name, value, "milliseconds")
    if v > ceiling:
        raise _bad(f"Invalid value for {name}: {value!r} milliseconds is implausible (at most {ceiling:g} ms)")
    return v / 1000.0


def _ms(v: float) -> int:
    """Seconds -> the engine's whole milliseconds (a positive time stays positive)."""
    ms = int(round(v * 1000))
    return 1 if ms == 0 and v > 0 else ms


def unknown(name: str):
    """ErrInvalidArg for an option name nobody knows, with a "did you mean"."""
    close = difflib.get_close_matches(name, known_names(), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    if name in _TCL_ONLY:
        hint = f" (a Tcl-face option){hint}"
    return _bad(f"Unknown option {name}{hint}")


def translate(options: dict) -> tuple[dict, dict]:
    """``(engine options, driver settings)`` from ``connect``'s keyword
    arguments, every value checked; raises ErrInvalidArg before anything is
    applied."""
    engine: dict[str, Any] = {}
    driver: dict[str, Any] = {}
    given_times: dict[str, str] = {}
    for name, value in options.items():
        if name in SECONDS or (name.endswith("_ms") and name[:-3] in SECONDS):
            base = name[:-3] if name.endswith("_ms") else name
            if base in given_times:
                raise _bad(f"{given_times[base]} and {name} both given: one of them, please")
            given_times[base] = name
            v = milliseconds(name, value) if name.endswith("_ms") else seconds(name, value)
            target = SECONDS[base][0]
            if target is None:
                driver[base] = v
            else:
                engine[target] = _ms(v)
        elif name in ALIASES:
            target = ALIASES[name]
            if target in options:
                raise _bad(f"{name} and {target} both given: one of them, please")
            if name == "user_credentials":
                if isinstance(value, (tuple, list)):
                    raise _bad("user_credentials as a (jwt file, seed file) pair is not supported: give one .creds "
                               "file, or user_jwt_cb and signature_cb")
                if not isinstance(value, (str, os.PathLike)):
                    raise _bad(f"Invalid value for user_credentials: {value!r} (a .creds file path expected)")
                value = os.fspath(value)
            elif name in ("nkeys_seed", "nkeys_seed_str"):
                if isinstance(value, bytes):
                    value = value.decode()
                if not isinstance(value, (str, os.PathLike)):
                    raise _bad(f"Invalid value for {name}: {value!r} (a seed or a seed file path expected)")
                value = os.fspath(value)
                if name == "nkeys_seed_str" and not value.strip().startswith("SU"):
                    raise _bad("nkeys_seed_str must be an NKey user seed (SU...)")
            engine[target] = value
        elif name in NEGATED:
            if not isinstance(value, bool):
                raise _bad(f"Invalid value for {name}: {value!r} (True or False expected)")
            engine[NEGATED[name]] = not value
        elif name in CALLBACKS:
            if value is not None and not callable(value):
                raise _bad(f"Invalid value for {name}: {value!r} (a function expected)")
            driver[name] = value
        elif name in DRIVER:
            driver[name] = value
        elif name in OPTION_SPEC and name not in _TCL_ONLY:
            if name == "custom_reconnect_delay":
                raise _bad("custom_reconnect_delay is the Tcl face's option: give reconnect_delay (a function "
                           "returning seconds) or reconnect_delay_ms (returning milliseconds)")
            engine[name] = value
        else:
            raise unknown(name)
    for name in ("allow_reconnect", "tls_handshake_first", "tls_verify", "retry_on_failed_connect"):
        if name in driver and not isinstance(driver[name], bool):
            raise _bad(f"Invalid value for {name}: {driver[name]!r} (True or False expected)")
    for name in ("reconnect_delay", "reconnect_delay_ms"):
        if driver.get(name) is not None and not callable(driver[name]):
            raise _bad(f"Invalid value for {name}: {driver[name]!r} (a function of the server dict expected)")
    if "reconnect_delay" in driver and "reconnect_delay_ms" in driver:
        raise _bad("reconnect_delay and reconnect_delay_ms both given: one of them, please")
    if driver.get("signature_cb") is not None and driver.get("user_jwt_cb") is None:
        raise _bad("signature_cb needs user_jwt_cb (the JWT the signature goes with); for an NKey alone give "
                   "nkeys_seed")
    if driver.get("user_jwt_cb") is not None and driver.get("signature_cb") is None:
        raise _bad("user_jwt_cb needs signature_cb (which signs the server's nonce)")
    p = driver.get("inbox_prefix")
    if p is not None and (not isinstance(p, str) or not p or any(c in p for c in " \t\r\n*>")
                          or p.startswith(".") or p.endswith(".") or ".." in p):
        raise _bad(f"Invalid value for inbox_prefix: {p!r} (a subject without wildcards expected)")
    return engine, driver


def seconds_delay(fn: Callable[[dict], float]) -> Callable[[dict], int]:
    """A reconnect_delay function (server dict -> seconds) as the engine's (-> ms)."""
    def delay(server: dict) -> int:
        v = fn(server)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v <= 86400):
            raise make_error("ErrInvalidArg", f"reconnect_delay returned {v!r}: seconds (0 to 86400) expected")
        return int(round(v * 1000))
    return delay


def tls_context(o: dict) -> "ssl.SSLContext":
    """The context of the options ``tls_ca``, ``tls_cert``, ``tls_key`` and
    ``tls_verify`` (``o``: those names -> values)."""
    import ssl
    ctx = ssl.create_default_context(cafile=o["tls_ca"])
    if not o["tls_verify"]:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if o["tls_cert"]:
        ctx.load_cert_chain(o["tls_cert"], o["tls_key"])
    return ctx


def markdown_table() -> str:
    """:data:`TABLE` as a Markdown table (README.md and the API reference show it)."""
    rows = ["| option | unit | default | nats-py / nats.go name | what it does |", "|---|---|---|---|---|"]
    rows += [f"| `{o.name}` | {o.unit} | {o.default} | {o.natspy} | {o.doc} |" for o in TABLE]
    return "\n".join(rows)


__doc__ = (__doc__ or "") + "\nThe connect options (times in seconds; ``<name>_ms`` for milliseconds):\n\n" + markdown_table() + "\n"
