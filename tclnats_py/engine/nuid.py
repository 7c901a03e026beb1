"""Unique tokens for inboxes: a random prefix plus an incrementing sequence.

Same idea as the NUID of the official clients (22 base-62 characters, a
12-character random prefix and a 10-character sequence that advances by a
random step), so consecutive inboxes are unique without a syscall each.
"""

from __future__ import annotations

import random

# the OS's randomness (what the secrets module uses), without importing
# secrets and its hmac/hashlib/base64 at start-up
_sysrand = random.SystemRandom()

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_BASE = 62
_PREFIX_LEN = 12
_SEQ_LEN = 10
_MAX_SEQ = _BASE ** _SEQ_LEN
# the sequence's step: at least MIN_INC, below MAX_INC
MIN_INC = 33
MAX_INC = 33 + 333


class Nuid:
    __slots__ = ("_prefix", "_seq", "_inc")

    def __init__(self) -> None:
        self._randomize()

    def randomize(self) -> None:
        """A new random prefix, sequence and step."""
        self._prefix = "".join(_sysrand.choice(_ALPHABET) for _ in range(_PREFIX_LEN))
        self.reset_sequence()

    _randomize = randomize

    def reset_sequence(self) -> None:
        """A new random sequence and step; the prefix stays."""
        self._seq = _sysrand.randrange(_MAX_SEQ // 2)
        self._inc = MIN_INC + _sysrand.randrange(MAX_INC - MIN_INC)

    @property
    def prefix(self) -> str:
        """The current random prefix (the first characters of every token)."""
        return self._prefix

    def next(self) -> str:
        self._seq += self._inc
        if self._seq >= _MAX_SEQ:
            self._randomize()
        n = self._seq
        out = []
        for _ in range(_SEQ_LEN):
            n, r = divmod(n, _BASE)
            out.append(_ALPHABET[r])
        return self._prefix + "".join(reversed(out))


_global = Nuid()


def next_token() -> str:
    return _global.next()


def new_inbox(prefix: str = "_INBOX") -> str:
    return f"{prefix}.{_global.next()}"
