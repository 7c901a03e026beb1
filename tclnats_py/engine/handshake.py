"""What the handshake says and reads, as plain functions: the fields of
CONNECT (:func:`connect_params`, :func:`auth_params`), the server's INFO as
the engine keeps it (:func:`checked_info`, :func:`handshake_info`), and the
meaning of a ``-ERR`` (:func:`server_error`, CoreAPI.md's table of
asynchronous errors).

The engine sends and reads these; so does the Spark reader's blocking
connection, which imports them from here (through ``engine.connection``).
No state: when the engine sends CONNECT is the phase table's business
(``state.py``).
"""

from __future__ import annotations

import re

from tclnats_py.engine.options import Options
from tclnats_py.engine.pool import ServerPool
from tclnats_py.errors import NatsError, make_error

__all__ = ["connect_params", "auth_params", "server_error", "checked_info", "handshake_info", "AUTH_ERRORS"]

# the auth errors after which a server that gives the same one twice in a
# row is given up (nats.go's processAuthError), unless ignore_auth_error_abort
AUTH_ERRORS = frozenset(("ErrAuthorization", "ErrAuthExpired", "ErrAuthRevoked", "ErrAccountAuthExpired"))

_ERR_MAP = (
    # -ERR text (lowercased prefix/glob) -> (code, fatal); CoreAPI.md async error table
    ("stale connection", "ErrStaleConnection", True),
    ("authorization violation", "ErrAuthorization", True),
    ("user authentication expired", "ErrAuthExpired", True),
    ("user authentication revoked", "ErrAuthRevoked", True),
    ("account authentication expired", "ErrAccountAuthExpired", True),
    ("permissions violation", "ErrPermissions", False),
)
_INVALID_SUBJECT = re.compile(r"^invalid .*subject")
_VERSION = re.compile(r"[\d.]+")


def server_error(text: str) -> tuple[NatsError, bool]:
    """The error for the text of a ``-ERR`` (CoreAPI.md's table of
    asynchronous errors) and whether it ends the connection: ErrServer
    (fatal) for a text the table does not know."""
    low = text.lower().strip(" '")
    for prefix, code, fatal in _ERR_MAP:
        if low.startswith(prefix):
            return make_error(code, low), fatal
    if _INVALID_SUBJECT.match(low):
        return make_error("ErrBadSubject", low), False
    return make_error("ErrServer", low), True


# INFO fields the engine computes with, and the JSON types they must have
_INFO_TYPES = (("max_payload", int), ("connect_urls", list), ("nonce", str))


def connect_params(options: Options, info: dict, auth: dict | None = None, *, lang: str = "python",
                   version: str = "0.1.0", tls_done: bool = False) -> dict:
    """The fields of the CONNECT answering a server's INFO (encode with
    ``_protocol.encode_connect``): the options' flags and name, this client's
    lang and version, headers and no_responders when the server has headers,
    then ``auth`` (user/pass, auth_token, jwt/sig or nkey/sig) when given.
    The engine sends this; so does the Spark reader's blocking connection."""
    o = options
    params = {
        "verbose": bool(o.verbose), "pedantic": bool(o.pedantic),
        "tls_required": tls_done, "name": o.name or "",
        "lang": lang, "version": version, "protocol": 1, "echo": bool(o.echo),
    }
    if info.get("headers"):
        params["headers"] = True
        params["no_responders"] = True
    if auth:
        params.update(auth)
    return params


def auth_params(options: Options, info: dict, pool: ServerPool, credentials=None, always: bool = False):
    """The credential fields of the CONNECT answering ``info``, or None:
    the ``creds``/``nkey_seed`` files' JWT or public NKey, signing the
    server's nonce (``credentials``: what :func:`tclnats_py.credentials.read_credentials`
    gave, a NatsError raised here), else, when the server asks for it, the
    current server's URL credentials or the options' user/password/token.
    ``always``: the user/password/token go even when the server does not
    ask (nats-py and nats.go send them; nats-tcl only when asked).
    The engine and the Spark reader's blocking connection both send this."""
    o = options
    nonce = info.get("nonce")
    if o.creds or o.nkey_seed:
        c = credentials
        if isinstance(c, NatsError):
            raise c
        if c is None:
            raise make_error("ErrAuthorization", "The credentials of the creds/nkey_seed option were not "
                             "read (a driver calls set_credentials before it opens a socket)")
        from tclnats_py.engine.auth import nkey_public, sign_nonce
        jwt, seed = c
        p = {"jwt": jwt} if jwt else {"nkey": nkey_public(seed)}
        if nonce:
            p["sig"] = sign_nonce(seed, nonce)
        return p
    if not info.get("auth_required"):
        if not always:
            return None
        return pool.credentials(o.user, o.password, o.token)
    creds = pool.credentials(o.user, o.password, o.token)
    if creds is None:
        s = pool.current
        where = f"{s.host}:{s.port}" if s else "?"
        raise make_error("ErrAuthorization", f"No credentials known for NATS server at {where}")
    return creds


def checked_info(info: dict) -> dict:
    """``info`` without the fields the engine computes with that have the
    wrong JSON type (a broken or hostile server): they would fail later, far
    from here, with a TypeError.  ``info`` itself when all are right."""
    for key, typ in _INFO_TYPES:
        if key in info and not isinstance(info[key], typ):
            info = {k: v for k, v in info.items() if k != key}
    return info


def handshake_info(info: dict) -> dict:
    """A copy of the handshake's INFO as ``Engine.server_info`` keeps it:
    the version cut to its dotted numbers ("2.15.1-binary" -> "2.15.1", as
    nats-tcl shows it)."""
    info = dict(info)
    v = info.get("version")
    if isinstance(v, str):
        m = _VERSION.match(v)
        if m:
            info["version"] = m.group(0)
    return info
