"""What a driver reads from disk for a connection attempt: the ``creds`` and
``nkey_seed`` files.  The engine reads no file; each driver calls
:func:`read_credentials` before it opens a socket and hands the result to
``Engine.set_credentials``, so a rotated creds file is read again at the next
connection.
"""

from __future__ import annotations

from tclnats_py.errors import NatsError, make_error

__all__ = ["read_credentials", "load_creds", "read_seed"]


def load_creds(path: str) -> tuple[str, bytes]:
    """``(jwt, seed)`` from a creds file."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise make_error("ErrAuthorization", f"Cannot read credentials file {path}: {e.strerror}") from None
    from tclnats_py.engine.auth import parse_creds  # here: base64 and its regexes only when a file is read
    return parse_creds(text, path)


def read_seed(value: str) -> bytes:
    """The option value is a seed (``SU...``) or a path to a file holding one."""
    v = value.strip()
    if v.startswith("SU") and "/" not in v:
        return v.encode()
    from tclnats_py.engine.auth import seed_from_text
    try:
        with open(v, "r", encoding="utf-8") as f:
            seed = seed_from_text(f.read())
    except OSError as e:
        raise make_error("ErrAuthorization", f"Cannot read NKey seed file {v}: {e.strerror}") from None
    if seed is None:
        raise make_error("ErrAuthorization", f"No NKey seed found in {v}")
    return seed


def read_credentials(options):
    """``(jwt, seed)`` from the ``creds`` file, ``(None, seed)`` from
    ``nkey_seed``, or None when neither option is set.  A file that cannot be
    read or parsed gives its ErrAuthorization error as the value, for the
    engine to report when the server asks for credentials."""
    try:
        if options.creds:
            return load_creds(options.creds)
        if options.nkey_seed:
            return None, read_seed(options.nkey_seed)
    except NatsError as e:
        return e
    return None
