"""NKey and JWT (``.creds``) credentials for CONNECT.

With decentralised auth the server's INFO carries a ``nonce``; the client
answers with its user JWT and the nonce signed by the user's NKey seed
(ed25519), base64url without padding.  With a bare NKey the public key goes
in ``nkey`` instead of ``jwt``.  Seeds are never logged or put in errors.
"""

from __future__ import annotations

import base64
import re

from ._errors import NatsError, make_error

__all__ = ["load_creds", "sign_nonce", "nkey_public", "read_seed", "read_credentials"]

_JWT_BLOCK = re.compile(
    r"-{3,}[^\n]*BEGIN NATS USER JWT[^\n]*-{3,}\s*\n(?P<jwt>[^\n-][^\n]*)\n", re.S)
_SEED_BLOCK = re.compile(
    r"-{3,}[^\n]*BEGIN USER NKEY SEED[^\n]*-{3,}\s*\n(?P<seed>S[A-Z0-9]+)\s*\n", re.S)


def load_creds(path: str) -> tuple[str, bytes]:
    """Return ``(jwt, seed)`` from a creds file."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise make_error("ErrAuthorization", f"Cannot read credentials file {path}: {e.strerror}") from None
    jm = _JWT_BLOCK.search(text)
    sm = _SEED_BLOCK.search(text)
    if not jm or not sm:
        raise make_error("ErrAuthorization", f"Invalid credentials file {path}")
    return jm.group("jwt").strip(), sm.group("seed").strip().encode()


def _keypair(seed: bytes):
    try:
        import nkeys  # the nkeys package does the ed25519 and base32 work
    except ImportError:  # pragma: no cover - declared dependency
        raise make_error("ErrAuthorization", "NKey authentication needs the 'nkeys' package") from None
    try:
        return nkeys.from_seed(bytearray(seed))
    except Exception:
        raise make_error("ErrAuthorization", "Invalid NKey seed") from None


def sign_nonce(seed: bytes, nonce: str) -> str:
    kp = _keypair(seed)
    sig = kp.sign(nonce.encode())
    return base64.urlsafe_b64encode(sig).rstrip(b"=").decode()


def nkey_public(seed: bytes) -> str:
    pub = _keypair(seed).public_key
    return pub.decode() if isinstance(pub, bytes) else str(pub)


def read_seed(value: str) -> bytes:
    """The option value is a seed (``SU...``) or a path to a file holding one."""
    v = value.strip()
    if v.startswith("SU") and "/" not in v:
        return v.encode()
    try:
        with open(v, "r", encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line.startswith("SU"):
                    return line.encode()
    except OSError as e:
        raise make_error("ErrAuthorization", f"Cannot read NKey seed file {v}: {e.strerror}") from None
    raise make_error("ErrAuthorization", f"No NKey seed found in {v}")


def read_credentials(options):
    """What a driver reads before it opens a socket (the engine reads no
    file): ``(jwt, seed)`` from the ``creds`` file, ``(None, seed)`` from
    ``nkey_seed``, or None when neither option is set.  A file that cannot
    be read or parsed gives its ErrAuthorization error as the value, for the
    engine to report when the server asks for credentials; files are read at
    every connection attempt, so a rotated creds file is picked up."""
    try:
        if options.creds:
            return load_creds(options.creds)
        if options.nkey_seed:
            return None, read_seed(options.nkey_seed)
    except NatsError as e:
        return e
    return None
