"""Acknowledgements of consumed messages (the ack family of ADR-15 / nats-tcl).

An ack is a publish to the message's ``$JS.ACK...`` reply subject with one
of these payloads; ``ack_sync`` is a request with ``+ACK`` whose (empty)
reply confirms the server got it.  :class:`AckState` keeps a message from
being acknowledged twice (nats.go's ErrMsgAlreadyAckd; the code here is
ErrInvalidArg, nats-tcl has none).
"""

from __future__ import annotations

import json

from tclnats_py.errors import make_error

__all__ = ["ACK", "NAK", "WPI", "TERM", "NEXT", "nak_payload", "term_payload", "ack_subject", "AckState"]

ACK = b"+ACK"
NAK = b"-NAK"
WPI = b"+WPI"      # work in progress: the ack wait starts over
TERM = b"+TERM"    # never redeliver
NEXT = b"+NXT"     # ack and ask for the next message (pull consumers)


def nak_payload(delay_ms: int | float | None = None) -> bytes:
    """``-NAK``, or ``-NAK {"delay": <ns>}`` to redeliver after ``delay_ms``."""
    if delay_ms is None:
        return NAK
    if isinstance(delay_ms, bool) or not isinstance(delay_ms, (int, float)) or delay_ms < 0:
        raise make_error("ErrBadTimeout", f"Invalid value for the timeout option delay : {delay_ms}")
    return NAK + b" " + json.dumps({"delay": int(round(delay_ms * 1_000_000))}, separators=(",", ":")).encode()


def term_payload(reason: str | None = None) -> bytes:
    """``+TERM``, with an optional reason the server shows in its advisory."""
    return TERM if not reason else TERM + b" " + reason.encode()


def ack_subject(msg) -> str:
    """Where acks of ``msg`` go: its reply subject, which must be a JetStream one."""
    reply = getattr(msg, "reply", None)
    if not reply or not reply.startswith("$JS.ACK."):
        raise make_error("ErrNotJSMessage", f"Message with subject {getattr(msg, 'subject', '')} "
                                           f"is not a JetStream message")
    return reply


class AckState:
    """Whether a message may still be acknowledged.

    ``+WPI`` may be sent any number of times before a final ack; ``+ACK``,
    ``-NAK`` and ``+TERM`` are final.  :meth:`check` raises before a second
    final ack; :meth:`done` records one.
    """

    __slots__ = ("final",)

    def __init__(self):
        self.final = None

    def check(self, payload: bytes) -> None:
        if self.final is not None:
            raise make_error("ErrInvalidArg", f"Message was already acknowledged ({self.final.decode()})")

    def done(self, payload: bytes) -> None:
        if not payload.startswith(WPI):
            self.final = payload.split(b" ", 1)[0]
