"""NKey and JWT (``.creds``) credentials for CONNECT.

With decentralised auth the server's INFO carries a ``nonce``; the client
answers with its user JWT and the nonce signed by the user's NKey seed
(ed25519), base64url without padding.  With a bare NKey the public key goes
in ``nkey`` instead of ``jwt``.  Seeds are never logged or put in errors.
The files are read by the drivers (:mod:`tclnats_py.credentials`); this
module only parses text and signs.
"""

from __future__ import annotations

import base64
import re

from tclnats_py.errors import make_error

__all__ = ["parse_creds", "seed_from_text", "sign_nonce", "nkey_public"]

_JWT_BLOCK = re.compile(
    r"-{3,}[^\n]*BEGIN NATS USER JWT[^\n]*-{3,}\s*\n(?P<jwt>[^\n-][^\n]*)\n", re.S)
_SEED_BLOCK = re.compile(
    r"-{3,}[^\n]*BEGIN USER NKEY SEED[^\n]*-{3,}\s*\n(?P<seed>S[A-Z0-9]+)\s*\n", re.S)


def parse_creds(text: str, origin: str = "credentials") -> tuple[str, bytes]:
    """``(jwt, seed)`` from the text of a ``.creds`` file (``origin`` names it in errors)."""
    jm = _JWT_BLOCK.search(text)
    sm = _SEED_BLOCK.search(text)
    if not jm or not sm:
        raise make_error("ErrAuthorization", f"Invalid credentials file {origin}")
    return jm.group("jwt").strip(), sm.group("seed").strip().encode()


def seed_from_text(text: str, origin: str = "NKey seed"):
    """The first ``SU...`` seed line of a text, None when there is none."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("SU"):
            return line.encode()
    return None


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
