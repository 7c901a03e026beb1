"""JSON values as Tcl shows them, without the JetStream layer.

The bridge converts each INFO into the connection's ``serverInfo`` array with
:func:`tcl_value`; keeping it here (not in :mod:`tclnats_py.tclface.js`)
means a plain connection imports none of the JetStream modules (and their
typing, datetime, hashlib ...).  :mod:`tclnats_py.tclface.js` uses the same
function for API replies.
"""

from __future__ import annotations

__all__ = ["tcl_value"]


def tcl_value(v):
    """A JSON value as tcllib's json2dict shows it in Tcl."""
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "null"
    if isinstance(v, dict):
        out = []
        for k, x in v.items():
            out.append(str(k))
            out.append(tcl_value(x))
        return tuple(out)
    if isinstance(v, list):
        return tuple(tcl_value(x) for x in v)
    if isinstance(v, float):
        # a JSON number parsed as engine.js.api.JsonFloat keeps its text
        # (1e-3 stays 1e-3); a plain float that is whole keeps its ".0"
        text = getattr(v, "text", None)
        if text is not None:
            return text
        if v.is_integer():
            return str(v)
    return v
