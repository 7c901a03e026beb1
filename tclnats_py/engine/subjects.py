"""Subject, queue-group and token checks (ADR-6 naming rules).

nats-tcl accepts, per token, any run of characters from this set: letters and
digits plus ``- ! # $ % & ' ( ) + , / : ; < = ? @ ^ _ ` | ~`` (that is: no
whitespace, no ``.``, ``*``, ``>``, ``\\``, ``"``, ``[``, ``]``, ``{``, ``}``).
A *reply* / publish subject is dot-separated tokens from that set; a
*subscribe* subject may also use ``*`` and ``>`` as whole tokens; a queue
group is one token (no dots).  ``[:alnum:]`` in Tcl includes Unicode letters
and digits, so we accept them too (``str.isalnum``).
"""

from __future__ import annotations

import re

__all__ = ["valid_subject", "valid_wildcard_subject", "valid_queue", "valid_token"]

_PUNCT = frozenset("-!#$%&'()+,/:;<=?@^_`|~")
# the same rules for ASCII subjects, as one pattern (no per-character loop)
_ASCII_TOKEN = r"[A-Za-z0-9\-!#$%&'()+,/:;<=?@^_`|~]+"
_ASCII_PLAIN = re.compile(rf"{_ASCII_TOKEN}(?:\.{_ASCII_TOKEN})*")
# ">" only as the last token: the server refuses "a.>.b" (-ERR after the SUB went out)
_ASCII_WILD = re.compile(rf"(?:{_ASCII_TOKEN}|\*)(?:\.(?:{_ASCII_TOKEN}|\*))*(?:\.>)?|>")


def valid_token(tok: str) -> bool:
    if not tok:
        return False
    if tok.isascii():
        # fast path: the common case is plain ASCII
        for ch in tok:
            if not (ch.isalnum() or ch in _PUNCT):
                return False
        return True
    return all(ch.isalnum() or ch in _PUNCT for ch in tok)


def _checker(pattern, wildcards: bool):
    """A cached check of whole subjects: ``pattern`` for ASCII ones, the
    per-token rule (isalnum counts Unicode letters and digits) for others."""
    cache: dict = {}

    def token_ok(t: str) -> bool:
        return (wildcards and (t == "*" or t == ">")) or valid_token(t)

    def check(subject) -> bool:
        try:
            r = cache.get(subject)
        except TypeError:  # unhashable: not a string
            return False
        if r is None:
            if not isinstance(subject, str):
                return False
            if subject.isascii():
                r = pattern.fullmatch(subject) is not None
            else:
                toks = subject.split(".")
                r = bool(subject) and all(token_ok(t) for t in toks) and ">" not in toks[:-1]
            if len(cache) > 4096:
                cache.clear()
            cache[subject] = r
        return r
    return check


_plain = _checker(_ASCII_PLAIN, wildcards=False)
_wild = _checker(_ASCII_WILD, wildcards=True)


def valid_subject(subject: str) -> bool:
    """A subject to publish to, or a reply subject: no wildcards."""
    return _plain(subject)


def valid_wildcard_subject(subject: str) -> bool:
    """A subject to subscribe to: ``*`` and ``>`` allowed as whole tokens, ``>`` last."""
    return _wild(subject)


def valid_queue(queue: str) -> bool:
    return isinstance(queue, str) and valid_token(queue)
