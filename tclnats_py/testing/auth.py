"""Authentication setups for real nats-servers: a server config snippet plus
what a client needs, for each scheme nats-server offers to clients.

    up = userpass_auth()                 # up.config, up.user, up.password, up.url(server)
    tk = token_auth()                    # tk.config, tk.token, tk.url(server)
    nk = nkey_auth(directory)            # nk.config, nk.seed, nk.public_key, nk.seed_path
    op = operator_auth(directory)        # op.config, op.creds_path, op.bad_creds_path, op.new_user(...)

    NatsServer(config=op.config)

The decentralized (JWT) setup builds and signs its JWTs here: an operator,
a system account and an application account (preloaded into a MEMORY
resolver), and users signed by the account, written as standard ``.creds``
files.  A JWT is ``b64url(header).b64url(claims).b64url(signature)`` with
header ``{"typ":"JWT","alg":"ed25519-nkey"}``, the signature being the
issuer's Ed25519 NKey signature of ``header.claims``; the claims follow the
NATS JWT v2 schema (``jti`` = base32 of the SHA-256 of the claims without
it, ``iat``, ``iss``, ``sub``, ``name``, ``nats: {type, version: 2, ...}``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import secrets
import time
from typing import Any
from dataclasses import dataclass, field

import nkeys

__all__ = [
    "KeyPair",
    "NKeyUser",
    "OperatorSetup",
    "Token",
    "UserPassword",
    "creds_text",
    "decode_jwt",
    "encode_jwt",
    "new_keypair",
    "nkey_auth",
    "operator_auth",
    "token_auth",
    "user_url",
    "userpass_auth",
    "write_creds",
]


def _q(s: str) -> str:
    """A quoted string for a nats-server config file."""
    return json.dumps(s)


def user_url(server, user: str | None = None, password: str | None = None) -> str:
    """``nats://user:password@host:port`` (or ``nats://token@...`` with no password) for a
    :class:`~tclnats_py.testing.server.NatsServer` or a plain URL."""
    from urllib.parse import quote
    url = server if isinstance(server, str) else server.url
    scheme, rest = url.split("://", 1)
    cred = quote(user or "", safe="")
    if password is not None:
        cred += ":" + quote(password, safe="")
    return f"{scheme}://{cred}@{rest}"


# -- user / password and token --------------------------------------------------------------

@dataclass
class UserPassword:
    user: str
    password: str

    @property
    def config(self) -> str:
        return f"authorization {{\n  user: {_q(self.user)}\n  password: {_q(self.password)}\n}}\n"

    def url(self, server) -> str:
        return user_url(server, self.user, self.password)


def userpass_auth(user: str = "tclnats", password: str | None = None) -> UserPassword:
    """One user with a password (random unless given)."""
    return UserPassword(user, password if password is not None else "pw-" + secrets.token_hex(8))


@dataclass
class Token:
    token: str

    @property
    def config(self) -> str:
        return f"authorization {{\n  token: {_q(self.token)}\n}}\n"

    def url(self, server) -> str:
        return user_url(server, self.token)


def token_auth(token: str | None = None) -> Token:
    """A token (random unless given)."""
    return Token(token if token is not None else "tok-" + secrets.token_hex(12))


# -- NKeys -----------------------------------------------------------------------------------

@dataclass
class KeyPair:
    """An NKey: ``seed`` (bytes, ``S..``), ``public_key`` (str, ``U..``/``A..``/``O..``)."""
    seed: bytes
    public_key: str

    def sign(self, data: bytes) -> bytes:
        return nkeys.from_seed(bytearray(self.seed)).sign(data)

    def verify(self, data: bytes, sig: bytes) -> bool:
        try:
            return bool(nkeys.from_seed(bytearray(self.seed)).verify(data, sig))
        except nkeys.ErrInvalidSignature:
            return False


_PREFIXES = {
    "user": nkeys.PREFIX_BYTE_USER,
    "account": nkeys.PREFIX_BYTE_ACCOUNT,
    "operator": nkeys.PREFIX_BYTE_OPERATOR,
    "server": nkeys.PREFIX_BYTE_SERVER,
    "cluster": nkeys.PREFIX_BYTE_CLUSTER,
}


def new_keypair(kind: str = "user") -> KeyPair:
    """A fresh NKey of ``kind``: user, account, operator, server or cluster."""
    seed = bytes(nkeys.encode_seed(os.urandom(32), _PREFIXES[kind]))
    pub = nkeys.from_seed(bytearray(seed)).public_key
    return KeyPair(seed, pub.decode() if isinstance(pub, (bytes, bytearray)) else str(pub))


@dataclass
class NKeyUser:
    seed: bytes
    public_key: str
    seed_path: str | None = None

    @property
    def config(self) -> str:
        return f"authorization {{\n  users = [\n    {{ nkey: {_q(self.public_key)} }}\n  ]\n}}\n"


def nkey_auth(directory=None, filename: str = "user.nk") -> NKeyUser:
    """A user NKey; with ``directory`` its seed is also written to a file there
    (what ``nats.connect(nkeys_seed=path)`` reads)."""
    kp = new_keypair("user")
    user = NKeyUser(kp.seed, kp.public_key)
    if directory is not None:
        os.makedirs(os.fspath(directory), exist_ok=True)
        user.seed_path = os.path.join(os.fspath(directory), filename)
        _write_secret(user.seed_path, kp.seed + b"\n")
    return user


# -- JWTs --------------------------------------------------------------------------------------

def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


_JWT_HEADER = _b64url(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}, separators=(",", ":")).encode())


def encode_jwt(claims: dict, signer: KeyPair) -> str:
    """Sign ``claims`` as a NATS JWT with ``signer`` (``iss`` is set to the
    signer's public key, ``iat`` to now if absent, ``jti`` computed)."""
    claims = dict(claims)
    claims["iss"] = signer.public_key
    claims.setdefault("iat", int(time.time()))
    claims.pop("jti", None)
    digest = hashlib.sha256(json.dumps(claims, separators=(",", ":")).encode()).digest()
    body = {"jti": base64.b32encode(digest).decode().rstrip("="), **claims}
    payload = _b64url(json.dumps(body, separators=(",", ":")).encode())
    signing_input = f"{_JWT_HEADER}.{payload}".encode()
    return f"{_JWT_HEADER}.{payload}.{_b64url(signer.sign(signing_input))}"


def decode_jwt(token: str, verify: bool = True) -> dict:
    """The claims of a NATS JWT; with ``verify`` the signature is checked
    against the ``iss`` public key (``ValueError`` if it does not match)."""
    header, payload, sig = token.split(".")
    claims = json.loads(_b64url_decode(payload))
    if verify:
        import nacl.exceptions
        import nacl.signing
        iss = claims.get("iss", "")
        try:
            raw = base64.b32decode(iss + "=" * (-len(iss) % 8))
            nacl.signing.VerifyKey(raw[1:-2]).verify(f"{header}.{payload}".encode(), _b64url_decode(sig))
        except (ValueError, nacl.exceptions.BadSignatureError) as e:
            raise ValueError(f"JWT signature does not verify against iss {iss!r}: {e}") from None
    return claims


def creds_text(jwt: str, seed: bytes | str) -> str:
    """A ``.creds`` file's text: the user JWT, then the user's seed."""
    seed = seed.decode() if isinstance(seed, (bytes, bytearray)) else seed
    return ("-----BEGIN NATS USER JWT-----\n"
            f"{jwt}\n"
            "------END NATS USER JWT------\n"
            "\n"
            "************************* IMPORTANT *************************\n"
            "NKEY Seed printed below can be used to sign and prove identity.\n"
            "NKEYs are sensitive and should be treated as secrets.\n"
            "\n"
            "-----BEGIN USER NKEY SEED-----\n"
            f"{seed}\n"
            "------END USER NKEY SEED------\n"
            "\n"
            "*************************************************************\n")


def write_creds(path, jwt: str, seed: bytes | str) -> str:
    """Write a ``.creds`` file (mode 0600); returns its path."""
    path = os.fspath(path)
    _write_secret(path, creds_text(jwt, seed).encode())
    return path


def _write_secret(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


_UNLIMITED_ACCOUNT = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
                      "wildcards": True, "conn": -1, "leaf": -1}
_JETSTREAM_LIMITS = {"mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1}


def operator_claims(operator: KeyPair, name: str, system_account: str | None = None) -> dict:
    nats = {"type": "operator", "version": 2}
    if system_account:
        nats["system_account"] = system_account
    return {"name": name, "sub": operator.public_key, "nats": nats}


def account_claims(account: KeyPair, name: str, jetstream: bool = False) -> dict:
    limits = dict(_UNLIMITED_ACCOUNT)
    if jetstream:
        limits.update(_JETSTREAM_LIMITS)
    return {"name": name, "sub": account.public_key,
            "nats": {"limits": limits, "default_permissions": {"pub": {}, "sub": {}},
                     "type": "account", "version": 2}}


def user_claims(user: KeyPair, name: str, pub_allow=None, pub_deny=None, sub_allow=None, sub_deny=None,
                expires: float | None = None) -> dict:
    def perm(allow, deny):
        p = {}
        if allow is not None:
            p["allow"] = list(allow)
        if deny is not None:
            p["deny"] = list(deny)
        return p

    claims: dict[str, Any] = {"name": name, "sub": user.public_key,
                              "nats": {"pub": perm(pub_allow, pub_deny), "sub": perm(sub_allow, sub_deny),
                                       "subs": -1, "data": -1, "payload": -1, "type": "user",
                                       "version": 2}}
    if expires is not None:
        claims["exp"] = int(expires)
    return claims


@dataclass
class OperatorSetup:
    """Decentralized auth: an operator, its system account ``SYS`` and one
    application account, preloaded in a MEMORY resolver (``config``); a user
    of that account in ``creds_path``, and in ``bad_creds_path`` a user of an
    account the server has never heard of (rejected)."""
    directory: str
    operator: KeyPair
    operator_jwt: str
    system_account: KeyPair
    system_account_jwt: str
    account: KeyPair
    account_jwt: str
    user: KeyPair
    user_jwt: str
    creds_path: str
    bad_creds_path: str
    accounts: dict = field(default_factory=dict)  # public key -> JWT, all preloaded

    @property
    def config(self) -> str:
        preload = "\n".join(f"  {pub}: {jwt}" for pub, jwt in self.accounts.items())
        return (f"operator: {self.operator_jwt}\n"
                f"system_account: {self.system_account.public_key}\n"
                "resolver: MEMORY\n"
                f"resolver_preload: {{\n{preload}\n}}\n")

    def new_user(self, name: str = "user", filename: str | None = None, **perms) -> str:
        """Another user of the account, written to ``<directory>/<filename or name.creds>``;
        ``perms``: ``pub_allow``, ``pub_deny``, ``sub_allow``, ``sub_deny``, ``expires`` (epoch)."""
        kp = new_keypair("user")
        jwt = encode_jwt(user_claims(kp, name, **perms), self.account)
        return write_creds(os.path.join(self.directory, filename or f"{name}.creds"), jwt, kp.seed)


def operator_auth(directory, jetstream: bool = False, account_name: str = "APP",
                  user_name: str = "user", operator_name: str = "tclnats-test-operator") -> OperatorSetup:
    """Build the JWT chain and write ``user.creds`` and ``stranger.creds`` in
    ``directory``.  ``jetstream=True`` gives the account JetStream limits
    (start the server with ``jetstream=True`` too)."""
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    op = new_keypair("operator")
    sys_acc = new_keypair("account")
    acc = new_keypair("account")
    op_jwt = encode_jwt(operator_claims(op, operator_name, system_account=sys_acc.public_key), op)
    sys_jwt = encode_jwt(account_claims(sys_acc, "SYS"), op)
    acc_jwt = encode_jwt(account_claims(acc, account_name, jetstream=jetstream), op)
    user = new_keypair("user")
    user_jwt = encode_jwt(user_claims(user, user_name), acc)
    creds = write_creds(os.path.join(directory, "user.creds"), user_jwt, user.seed)
    # a user of an account the operator signed but the resolver does not know
    stranger_acc = new_keypair("account")
    stranger = new_keypair("user")
    bad = write_creds(os.path.join(directory, "stranger.creds"),
                      encode_jwt(user_claims(stranger, "stranger"), stranger_acc), stranger.seed)
    return OperatorSetup(directory, op, op_jwt, sys_acc, sys_jwt, acc, acc_jwt, user, user_jwt, creds, bad,
                         accounts={sys_acc.public_key: sys_jwt, acc.public_key: acc_jwt})
