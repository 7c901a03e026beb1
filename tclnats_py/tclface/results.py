"""Tcl results of Python calls, and requests whose result is made in Python.

Every ``$Py op ...`` returns ``{0 result}``, ``{1 errorcode message}`` or
``{2 rid}`` (:func:`reply`, :func:`error_reply`), which ``::tclnats::r``
unpacks in Tcl.  An :class:`Op` is the handler of a request that a
JetStream, Key-Value, Object Store or service operation started: it turns
the request's outcome into that result (effects.py calls it when the
request ends).
"""

from __future__ import annotations

from tclnats_py.errors import NatsError

__all__ = ["Op", "error_reply", "load_js", "reply"]

# tclnats_py.tclface.js (and the engine's JetStream modules under it) is
# imported on first use: load_js() loads it and notes its Chain class, which
# only its operations create
_Chain: type | None = None


def load_js():
    """The module tclnats_py.tclface.js, imported at its first use."""
    global _Chain
    from tclnats_py.tclface import js
    _Chain = js.Chain
    return js


def reply(result):
    """A result for Tcl: ``{0 value}``, or ``{2 rid}`` when another request
    gives it (a follow-up); ``::tclnats::r`` unpacks it."""
    if result.__class__ is _Chain and _Chain is not None:
        return (2, result.rid)
    return (0, "" if result is None else result)


def error_reply(e: NatsError):
    """An error for Tcl: ``{1 errorcode message}``."""
    return (1, e.details.get("errorcode") or ("NATS", e.code), str(e))


class Op:
    """A request whose outcome is turned into a Tcl result in Python."""

    __slots__ = ("finish", "gather", "async_done", "on_error", "after")

    def __init__(self, finish, gather=None, async_done=None):
        self.finish = finish          # (outcome, req) -> result; may raise NatsError
        self.gather = gather          # gathers req_msg effects (JetStream fetch)
        self.async_done = async_done  # (outcome, req, deliveries) for async forms
        self.on_error = {}            # error code -> fn(err) giving a result or raising
        self.after = []               # result -> result

    def result(self, outcome, req):
        try:
            value = self.finish(outcome, req)
        except NatsError as e:
            fn = self.on_error.get(e.code)
            if fn is None:
                raise
            value = fn(e)
        for fn in self.after:
            if _Chain is not None and isinstance(value, _Chain):
                break
            value = fn(value)
        return value
