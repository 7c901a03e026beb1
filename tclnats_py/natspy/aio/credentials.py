"""nats-py's forms of credentials (``user_credentials`` as a path, a
(jwt file, seed file) pair or :class:`RawCredentials`; ``nkeys_seed``,
``nkeys_seed_str``; ``user_jwt_cb`` with ``signature_cb``) as the asyncio
face's options; the engine reads and signs them."""

from __future__ import annotations

from collections import UserString
from pathlib import Path
from typing import Any, Dict, Tuple, Union

from tclnats_py.credentials import load_creds
from tclnats_py.engine.auth import parse_creds, seed_from_text, sign_nonce
from tclnats_py.errors import NatsError
from tclnats_py.natspy import errors

__all__ = ["RawCredentials", "Credentials", "auth_options"]


class RawCredentials(UserString):
    """The text of a .creds file given as ``user_credentials`` (not a path)."""


Credentials = Union[str, Path, RawCredentials, Tuple[str, str]]


def _read_text(path) -> str:
    with open(path, "r", encoding="utf-8") as f:
        return f.read()


def _jwt_of(text: str) -> str:
    """The user JWT of a .creds text, or the text itself when it is a bare JWT."""
    if "BEGIN NATS USER JWT" in text:
        lines = [ln.strip() for ln in text.splitlines()]
        for i, ln in enumerate(lines):
            if "BEGIN NATS USER JWT" in ln and i + 1 < len(lines):
                return lines[i + 1]
    return text.strip()


def _check_creds_file(path: str) -> None:
    """A .creds file nats-py would refuse is refused as nats-py does: no
    seed line after the seed marker is InvalidUserCredentialsError, a seed
    line nkeys cannot read is nkeys' own error."""
    import nkeys
    try:
        _jwt, seed = load_creds(path)
    except NatsError as e:
        try:
            lines = _read_text(path).split("\n")
        except OSError:
            raise errors.InvalidUserCredentialsError() from e
        for i, line in enumerate(lines):
            if "BEGIN USER NKEY SEED" in line and len(lines) - i > 2:
                nkeys.from_seed(bytearray(lines[i + 1].strip().encode()))
        raise errors.InvalidUserCredentialsError() from e
    nkeys.from_seed(bytearray(seed))


def auth_options(opts: Dict[str, Any], signature_cb, user_jwt_cb, user_credentials, nkeys_seed,
                 nkeys_seed_str) -> None:
    """nats-py's credentials forms as the face's options."""
    if signature_cb is not None or user_jwt_cb is not None:
        opts["signature_cb"] = signature_cb
        opts["user_jwt_cb"] = user_jwt_cb
    if user_credentials is not None:
        creds = user_credentials
        if isinstance(creds, RawCredentials):
            jwt, seed = parse_creds(str(creds), "raw credentials")
            opts["user_jwt_cb"] = lambda: jwt
            opts["signature_cb"] = lambda nonce: sign_nonce(seed, nonce)
        elif isinstance(creds, tuple):
            jwt_file, seed_file = creds

            def jwt_cb() -> str:
                return _jwt_of(_read_text(jwt_file))

            def sig_cb(nonce: str) -> str:
                seed = seed_from_text(_read_text(seed_file))
                if seed is None:
                    raise errors.InvalidUserCredentialsError()
                return sign_nonce(seed, nonce)
            opts["user_jwt_cb"] = jwt_cb
            opts["signature_cb"] = sig_cb
        else:
            path = str(creds)
            _check_creds_file(path)
            opts["user_credentials"] = path
    if nkeys_seed is not None:
        opts["nkeys_seed"] = nkeys_seed
    if nkeys_seed_str is not None:
        opts["nkeys_seed_str"] = nkeys_seed_str
