"""The Spark source's and sink's options: names, checks, and the connection
settings every task gets.

Spark option names are case-insensitive (Spark hands them over as given;
here they are compared lower-case).  Each format has a fixed list of known
options; an unknown one is an error that lists the known ones, and a bad
value is an error that names its option.  ``nats.<option>`` passes a
connection option of the client straight through (as ``kafka.<option>``
does for Kafka's), checked by the engine's option table.

:class:`ConnSettings` is what crosses from the driver to the executors (it is
pickled with the reader or writer): servers, credentials, TLS files and
timeouts.  Its ``repr`` names no secret, and no error raised here quotes a
password, a token or a seed.
"""

from __future__ import annotations

import ssl
import urllib.parse

from tclnats_py.engine.options import to_bool
from tclnats_py.engine.validate import duration_ms, int_text
from tclnats_py.errors import make_error

__all__ = ["ConnSettings", "check_known", "check_values", "opt_bool", "opt_int", "opt_ms", "opt_choice", "READ_MODES",
           "parse_conn", "redact_url", "KNOWN_READ", "KNOWN_STREAM", "KNOWN_WRITE", "KNOWN_KV", "CONN_OPTIONS"]

# connection options of every format (lower-case)
CONN_OPTIONS = ("servers", "url", "name", "user", "password", "token", "creds", "nkey", "tls", "tlsca",
                "tlscert", "tlskey", "tlsverify", "tlshostname", "connecttimeoutms", "requesttimeoutms",
                "domain", "apiprefix")
_READ_COMMON = ("stream", "subject", "decode", "minpartitions", "partitions", "failondataloss",
                "fetchoffset.numretries", "fetchoffset.retryintervalms", "readmode")
KNOWN_READ = CONN_OPTIONS + _READ_COMMON + ("startseq", "endseq", "starttime", "endtime")
KNOWN_STREAM = CONN_OPTIONS + _READ_COMMON + ("startingoffsets", "maxoffsetspertrigger", "maxmessagespertrigger",
                                              "minoffsetspertrigger", "maxtriggerdelay")
KNOWN_WRITE = CONN_OPTIONS + ("subject", "writeid", "msgidcolumn", "checkpointlocation", "path", "atomic",
                              "atomicbatchsize")
KNOWN_KV = CONN_OPTIONS + ("bucket", "history")

# camel-case spelling of each option, for messages
_SPELLING = {o.lower(): o for o in (
    "servers url name user password token creds nkey tls tlsCa tlsCert tlsKey tlsVerify tlsHostname "
    "connectTimeoutMs requestTimeoutMs domain apiPrefix stream subject decode minPartitions partitions "
    "failOnDataLoss fetchOffset.numRetries fetchOffset.retryIntervalMs readMode startSeq endSeq startTime endTime "
    "startingOffsets maxOffsetsPerTrigger maxMessagesPerTrigger minOffsetsPerTrigger maxTriggerDelay "
    "writeId msgIdColumn checkpointLocation path atomic atomicBatchSize bucket history").split()}


def spelling(name: str) -> str:
    return _SPELLING.get(name, name)


def _suggest(name: str, candidates) -> str:
    """`` (did you mean X?)`` for the closest of ``candidates`` to ``name``, matched
    without case; ``""`` when none is close."""
    import difflib
    by_lower = {c.lower(): c for c in candidates}
    best = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.75)
    return f" (did you mean {by_lower[best[0]]}?)" if best else ""


def check_known(opts: dict, known, fmt: str, given=None) -> None:
    """Every option is one of ``known`` or ``nats.<engine option>``.

    ``opts`` has lower-case names; ``given`` maps them to the names as the
    caller wrote them.  Spark hands a data source its option names in lower
    case, so an unknown name reached through Spark is echoed lower-case and
    the message says so."""
    from tclnats_py.engine.options import OPTION_SPEC
    given = given or {}
    bad = []
    for k in opts:
        if k in known:
            continue
        shown = given.get(k, k)
        if k.startswith("nats."):
            if (k[5:] in OPTION_SPEC and k[5:] not in _TCL_ONLY) or k[5:] in _NATS_TLS:
                continue
            known_names = sorted(set(OPTION_SPEC) - set(_TCL_ONLY) | set(_NATS_TLS))
            hint = _suggest(shown[5:], known_names)
            raise make_error("ErrInvalidArg", f"option {shown}: {shown[5:]!r} is not a connection option of the "
                             f"client{hint} (known: {', '.join(known_names)}; times in milliseconds)")
        bad.append(k)
    if bad:
        names = ", ".join(sorted({spelling(k) for k in known}))
        what = "; ".join(f"{given.get(b, b)!r}{_suggest(given.get(b, b), [spelling(k) for k in known])}"
                         for b in sorted(bad))
        note = _case_note(*(given.get(b, b) for b in bad))
        raise make_error("ErrInvalidArg", f"unknown option{'s' if len(bad) > 1 else ''} {what}{note} for format "
                         f"{fmt!r}; known options: {names}, and nats.<connection option>")


def _case_note(*shown: str) -> str:
    """Names that reached us all lower-case may have been written otherwise: Spark lower-cases them."""
    if all(s == s.lower() for s in shown):
        return " (Spark passes option names in lower case; names are matched without case)"
    return ""


_INTS = {"minpartitions": 1, "partitions": 1, "startseq": 1, "endseq": 0, "maxoffsetspertrigger": 1,
         "maxmessagespertrigger": 1, "minoffsetspertrigger": 1, "fetchoffset.numretries": 0,
         "fetchoffset.retryintervalms": 0, "connecttimeoutms": 1, "requesttimeoutms": 1, "atomicbatchsize": 1}
_BOOLS = ("decode", "failondataloss", "tls", "tlsverify", "history", "atomic")


def check_values(opts: dict) -> None:
    """Every typed option present has a value of its type (errors name the option)."""
    for k, minimum in _INTS.items():
        opt_int(opts, k, None, minimum)
    for k in _BOOLS:
        opt_bool(opts, k, False)
    opt_ms(opts, "maxtriggerdelay")
    opt_choice(opts, "readmode", READ_MODES, READ_MODES[0])


#: the source's ways to read a range (readMode): through a consumer, by batch direct gets, or the latter where allowed
READ_MODES = ("consumer", "direct", "auto")


def opt_choice(opts: dict, name: str, choices, default: str) -> str:
    v = opts.get(name)
    if v is None or str(v).strip() == "":
        return default
    c = str(v).strip().lower()
    if c not in choices:
        raise make_error("ErrInvalidArg", f"option {spelling(name)} must be one of {', '.join(choices)}, not {v!r}")
    return c


def opt_bool(opts: dict, name: str, default: bool) -> bool:
    v = opts.get(name)
    if v is None:
        return default
    b = to_bool(str(v).strip())
    if b is None:
        raise make_error("ErrInvalidArg", f"option {spelling(name)} must be true or false, not {v!r}")
    return b


def opt_int(opts: dict, name: str, default=None, minimum: int = 0):
    v = opts.get(name)
    if v is None or (isinstance(v, str) and v.strip() == ""):
        return default
    i = int_text(v)
    if i is None:
        raise make_error("ErrInvalidArg", f"option {spelling(name)} must be an integer, not {v!r}")
    if i < minimum:
        raise make_error("ErrInvalidArg", f"option {spelling(name)} must be >= {minimum}, not {i}")
    return i


def opt_ms(opts: dict, name: str, default=None):
    """A duration: milliseconds, or a number with a unit (Spark's form: 500ms, 30s, 15m, 1h)."""
    v = opts.get(name)
    if v is None:
        return default
    ms = duration_ms(v)
    if ms is None:
        raise make_error("ErrInvalidArg", f"option {spelling(name)} must be a duration such as 500ms, 30s or 15m, "
                         f"not {v!r}")
    return ms


def redact_url(url: str) -> str:
    """A server URL without its user information."""
    if "@" not in url:
        return url
    try:
        p = urllib.parse.urlsplit(url if "://" in url else "nats://" + url)
    except ValueError:
        return "<url>"
    host = p.hostname or ""
    if p.port:
        host += f":{p.port}"
    return f"{p.scheme}://***@{host}"


# nats.<tls option> of the asyncio face, besides the engine's option table
_NATS_TLS = ("tls_ca", "tls_cert", "tls_key", "tls_hostname", "tls_verify")
# engine options only the Tcl face has
_TCL_ONLY = ("dictmsg", "utf8_convert", "tls_opts", "custom_reconnect_delay")
# the asyncio face's options that took seconds before its *_ms names
_FACE_SECONDS_BEFORE = ("flush_timeout", "reconnect_jitter", "reconnect_jitter_tls")


def _face_takes_ms_names() -> bool:
    """Whether the asyncio face takes times in seconds with ``*_ms`` names
    for milliseconds (tclnats_py.aio.options); before it, most were ms."""
    try:
        from tclnats_py.aio import options as face
    except ImportError:
        return False
    return "connect_timeout" in getattr(face, "SECONDS", {})


class ConnSettings:
    """How a task connects: what the options said, checked on the driver."""

    def __init__(self, servers, *, name="tclnats-spark", user=None, password=None, token=None, creds=None,
                 nkey=None, tls=False, tls_ca=None, tls_cert=None, tls_key=None, tls_verify=True,
                 tls_hostname=None, connect_timeout_ms=5000, request_timeout_ms=5000, domain=None,
                 api_prefix=None, extra=None):
        self.servers = list(servers)
        self.name = name
        self.user, self.password, self.token = user, password, token
        self.creds, self.nkey = creds, nkey
        self.tls, self.tls_ca, self.tls_cert, self.tls_key = tls, tls_ca, tls_cert, tls_key
        self.tls_verify, self.tls_hostname = tls_verify, tls_hostname
        self.connect_timeout_ms, self.request_timeout_ms = connect_timeout_ms, request_timeout_ms
        self.domain, self.api_prefix = domain, api_prefix
        self.extra = dict(extra or {})  # nats.<option>, typed by the engine's table

    def __repr__(self):
        shown = [f"servers={self.servers_text()!r}"]
        for k in ("user", "creds", "tls_ca", "tls_cert", "tls_key"):
            if getattr(self, k):
                shown.append(f"{k}={getattr(self, k)!r}")
        for k in ("password", "token", "nkey"):
            if getattr(self, k):
                shown.append(f"{k}=***")
        return f"ConnSettings({', '.join(shown)})"

    def servers_text(self) -> str:
        return ",".join(redact_url(s) for s in self.servers)

    @property
    def wants_tls(self) -> bool:
        return bool(self.tls or self.tls_ca or self.tls_cert
                    or any(s.startswith("tls://") for s in self.servers))

    def api_prefix_value(self) -> str:
        from tclnats_py.engine.js.api import api_prefix
        return api_prefix(self.domain, self.api_prefix)

    def engine_options(self):
        """The engine's Options for a blocking connection (the reader)."""
        from tclnats_py.engine.options import OPTION_SPEC, Options
        kw = {k: v for k, v in self.extra.items() if k in OPTION_SPEC}
        kw["name"] = self.name
        for k in ("user", "password", "token", "creds"):
            if getattr(self, k):
                kw[k] = getattr(self, k)
        if self.nkey:
            kw["nkey_seed"] = self.nkey
        kw["connect_timeout"] = self.connect_timeout_ms
        kw["request_timeout"] = self.request_timeout_ms
        if self.wants_tls:
            kw["secure"] = True
        return Options(**kw)

    def ssl_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=self.tls_ca or self.extra.get("tls_ca"))
        if not self.tls_verify:
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        cert = self.tls_cert or self.extra.get("tls_cert")
        if cert:
            ctx.load_cert_chain(cert, self.tls_key or self.extra.get("tls_key"))
        return ctx

    def connect_kwargs(self) -> dict:
        """Keyword arguments of ``tclnats_py.sync.connect`` (the blocking face, which takes the asyncio
        face's options from the same table: the writer and the KV reader).

        Times are milliseconds here (the engine's table); the face takes them
        under its ``*_ms`` names where it has them, else (before those names)
        in the unit each option had there."""
        from tclnats_py.engine.options import OPTION_SPEC
        ms_names = _face_takes_ms_names()
        kw = {}

        def put_ms(name, ms):
            if ms_names:
                kw[name + "_ms"] = ms
            elif name in _FACE_SECONDS_BEFORE:
                kw[name] = ms / 1000
            else:
                kw[name] = ms
        kw["name"] = self.name
        put_ms("connect_timeout", self.connect_timeout_ms)
        put_ms("request_timeout", self.request_timeout_ms)
        put_ms("reconnect_time_wait", 500)
        kw["max_reconnect_attempts"] = 5
        for k, v in self.extra.items():  # nats.<option> wins
            if OPTION_SPEC.get(k, ("",))[0] == "timeout":
                put_ms(k, v)
            else:
                kw[k] = v
        for k in ("user", "password", "token", "creds"):
            if getattr(self, k):
                kw[k] = getattr(self, k)
        if self.nkey:
            kw["nkey_seed"] = self.nkey
        if self.wants_tls:
            kw["secure"] = True
            kw["tls"] = self.ssl_context()
        if self.tls_hostname:
            kw["tls_hostname"] = self.tls_hostname
        return kw


def parse_conn(opts: dict) -> ConnSettings:
    """The connection settings of a format's options (checked here, on the driver)."""
    import os

    from tclnats_py.engine.options import OPTION_SPEC, coerce
    servers = opts.get("servers") or opts.get("url")
    if not servers or not str(servers).strip():
        raise make_error("ErrInvalidArg", "option 'servers' is required (a NATS URL, or several separated by commas)")
    servers = [s.strip() for s in str(servers).split(",") if s.strip()]
    from tclnats_py.engine.pool import DEFAULT_PORTS
    for s in servers:
        scheme = s.split("://", 1)[0] if "://" in s else "nats"
        if scheme not in DEFAULT_PORTS:
            raise make_error("ErrInvalidArg", f"option servers: {redact_url(s)!r} is not a NATS URL "
                             f"({', '.join(k + '://' for k in DEFAULT_PORTS)})")
    for name in ("creds", "tlsca", "tlscert", "tlskey"):
        path = opts.get(name)
        if path and not os.path.isfile(path):
            raise make_error("ErrInvalidArg", f"option {spelling(name)}: no such file {path!r}")
    nkey = opts.get("nkey")
    if nkey:
        v = str(nkey).strip()
        if not (v.startswith("SU") and "/" not in v) and not os.path.isfile(v):
            raise make_error("ErrInvalidArg", "option nkey must be an NKey user seed (SU...) or the path of a "
                             "file holding one; the file does not exist")
    if opts.get("tlskey") and not opts.get("tlscert"):
        raise make_error("ErrInvalidArg", "option tlsKey needs tlsCert")
    extra = {}
    for k, v in opts.items():
        if not k.startswith("nats."):
            continue
        name = k[5:]
        if name in OPTION_SPEC:
            extra[name] = coerce(k, OPTION_SPEC[name][0], v)
        elif name == "tls_verify":
            extra[name] = opt_bool(opts, k, True)
        else:
            extra[name] = v
    tls_verify = opt_bool(opts, "tlsverify", extra.pop("tls_verify", True))
    s = ConnSettings(
        servers, name=opts.get("name") or "tclnats-spark", user=opts.get("user"), password=opts.get("password"),
        token=opts.get("token"), creds=opts.get("creds"), nkey=nkey, tls=opt_bool(opts, "tls", False),
        tls_ca=opts.get("tlsca"), tls_cert=opts.get("tlscert"), tls_key=opts.get("tlskey"), tls_verify=tls_verify,
        tls_hostname=opts.get("tlshostname") or extra.pop("tls_hostname", None),
        connect_timeout_ms=opt_int(opts, "connecttimeoutms", 5000, 1),
        request_timeout_ms=opt_int(opts, "requesttimeoutms", 5000, 1),
        domain=opts.get("domain"), api_prefix=opts.get("apiprefix"), extra=extra)
    if s.wants_tls:
        try:
            s.ssl_context()
        except (OSError, ssl.SSLError) as e:
            raise make_error("ErrTLS", f"options tlsCa/tlsCert/tlsKey: {e}") from None
    return s
