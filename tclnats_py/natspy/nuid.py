"""``nats.nuid`` of nats-py 2.x: :class:`NUID` over the engine's NUID
(``tclnats_py.engine.nuid``); ``next()`` gives a ``bytearray`` of 22
characters, as nats-py's does."""

from __future__ import annotations

import string

from tclnats_py.engine.nuid import MAX_INC, MIN_INC, Nuid

__all__ = ["NUID", "DIGITS", "BASE", "PREFIX_LENGTH", "SEQ_LENGTH", "TOTAL_LENGTH", "MAX_SEQ", "MIN_INC",
           "MAX_INC", "INC"]

DIGITS = (string.digits + string.ascii_uppercase + string.ascii_lowercase).encode()
BASE = 62
PREFIX_LENGTH = 12
SEQ_LENGTH = 10
TOTAL_LENGTH = 22  # PREFIX_LENGTH + SEQ_LENGTH
MAX_SEQ = BASE ** SEQ_LENGTH
INC = MAX_INC - MIN_INC  # the span of the sequence's random step (the engine's)


class NUID:
    """Unique tokens: a random prefix and a sequence advancing by a random step."""

    def __init__(self) -> None:
        self._nuid = Nuid()

    def next(self) -> bytearray:
        return bytearray(self._nuid.next().encode())

    def randomize_prefix(self) -> None:
        self._nuid.randomize()

    def reset_sequential(self) -> None:
        """A new random sequence and step; the prefix stays."""
        self._nuid.reset_sequence()

    @property
    def _prefix(self) -> bytearray:
        return bytearray(self._nuid.prefix.encode())
