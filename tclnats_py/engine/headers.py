"""Message headers (ADR-4).

Wire form: ``NATS/1.0[ <status>[ <description>]]\\r\\n`` then ``Key: value\\r\\n``
lines and a blank line.  Keys are case-sensitive and may repeat, so headers
are a ``dict[str, list[str]]`` here.  An inline status (e.g. ``503`` for
no-responders, ``100 Idle Heartbeat``, ``404 No Messages``) is exposed as the
``Status`` and ``Description`` keys, as nats-tcl and the official clients do
when parsing; when encoding, those keys are ordinary header lines.
"""

from __future__ import annotations

import codecs
TYPE_CHECKING = False  # typing costs ~10 ms of every start: type names for the checker only
if TYPE_CHECKING:
    from typing import Any

from tclnats_py.errors import make_error
from tclnats_py.engine.validate import header_name_error, header_value_error

__all__ = ["parse_headers", "encode_headers", "status_of", "TCL_UTF8", "Headers", "raw_items"]


def _tcl_undecodable(err: UnicodeDecodeError):
    """Tcl's rule for bytes that are not UTF-8: such a byte is the character
    of its value (``encoding convertfrom utf-8 \xe9`` is é), so nothing a
    peer sends is lost or turned into U+FFFD."""
    b, i = err.object, err.start
    if b[i] == 0xED and i + 2 < len(b) and 0xA0 <= b[i + 1] <= 0xBF and 0x80 <= b[i + 2] <= 0xBF:
        # an encoded surrogate (CESU-8, as Tcl 8.6 writes characters beyond the BMP)
        return chr(0xD000 | (b[i + 1] & 0x3F) << 6 | (b[i + 2] & 0x3F)), i + 3
    return chr(b[i]), i + 1


TCL_UTF8 = "tclnats.tcl_utf8"   # the error handler's name, for bytes.decode
codecs.register_error(TCL_UTF8, _tcl_undecodable)  # type: ignore[arg-type]  # (called with decode errors only)

_PREFIX = b"NATS/1.0"


def parse_headers(block: bytes) -> dict[str, list[str]]:
    """Parse a header block (with or without the trailing blank line).

    Raises ErrBadHeaderMsg for an unknown version line.  Lines without a colon
    or with an empty name are skipped, like the reference clients do; so is
    nothing after the colon, while ``K: `` (blanks only) is ``K = ""`` as in
    nats-tcl, which is how nats-py sends an empty value.
    """
    text = block.decode("utf-8", TCL_UTF8)
    lines = text.split("\r\n")
    first = lines[0]
    parts = first.split(None, 2)
    if not parts or parts[0] != "NATS/1.0":
        raise make_error("ErrBadHeaderMsg", f"Unknown header version {parts[0] if parts else ''}")
    hdrs: dict[str, list[str]] = {}
    if len(parts) > 1:
        if parts[1].isdigit():
            hdrs["Status"] = [parts[1]]
        if len(parts) > 2 and parts[2].strip():
            hdrs["Description"] = [parts[2].strip()]
    for line in lines[1:]:
        if not line:
            continue
        k, sep, raw = line.partition(":")
        k = k.strip()
        v = raw.strip()
        if not sep or not k or not raw:
            continue  # as nats-tcl: "K:" is skipped, "K: " is K = "" (what nats-py sends for "")
        lst = hdrs.get(k)
        if lst is None:
            hdrs[k] = [v]
        else:
            lst.append(v)
    return hdrs


def raw_items(headers):
    """``headers.items()`` with every value as stored: for a :class:`Headers`
    the lists, not the first values its ``items()`` shows."""
    return dict.items(headers) if isinstance(headers, dict) else headers.items()


def encode_headers(headers) -> bytes:
    """Encode a mapping of key -> value or list of values, ending with a blank line."""
    out = ["NATS/1.0\r\n"]
    for k, vals in raw_items(headers):
        why = header_name_error(k)
        if why is not None:
            raise make_error("ErrInvalidArg", f"Invalid headers: {why}")
        if isinstance(vals, (str, bytes, int, float)):
            vals = (vals,)
        for v in vals:
            if isinstance(v, bytes):
                v = v.decode("utf-8", "replace")
            elif v.__class__ is not str:
                v = str(v)  # numbers, as their text
            why = header_value_error(k, v)
            if why is not None:
                raise make_error("ErrInvalidArg", f"Invalid headers: {why}")
            out.append(f"{k}: {v.strip()}\r\n")
    out.append("\r\n")
    return "".join(out).encode("utf-8")


def status_of(headers) -> int:
    """The numeric status of a message's headers, 0 when none."""
    if not headers:
        return 0
    s = dict.get(headers, "Status") if isinstance(headers, dict) else headers.get("Status")
    if not s:
        return 0
    try:
        return int(s[0] if isinstance(s, list) else s)
    except ValueError:
        return 0


class Headers(dict):
    """Received headers as the Python face hands them out: a ``dict`` whose
    stored values are the lists of the wire (repeated keys keep every
    value; the engine, the Tcl face, ``==`` and ``dict(h)`` see the lists),
    read as nats-py reads its headers:

    * ``h["K"]``, ``h.get("K")``: the first value, a ``str``; a key not
      found as written is looked up case-insensitively (``h["nats-msg-id"]``);
    * ``h.get_all("K")``: every value, a list (``[]`` when absent);
    * ``items()`` / ``values()``: first values; ``multi_items()``: the lists.

    Publishing takes a Headers, a dict of str or a dict of lists alike.
    """

    __slots__ = ()

    def _key(self, key):
        if dict.__contains__(self, key):
            return key
        if isinstance(key, str):
            low = key.lower()
            for k in dict.keys(self):
                if k.lower() == low:
                    return k
        return None

    def __getitem__(self, key) -> str:
        k = self._key(key)
        if k is None:
            raise KeyError(key)
        v = dict.__getitem__(self, k)
        return (v[0] if v else "") if isinstance(v, list) else v

    def __contains__(self, key) -> bool:
        return self._key(key) is not None

    def get(self, key: str, default: Any = None) -> Any:
        """The first value of ``key`` (case-insensitive lookup), or ``default``."""
        k = self._key(key)
        if k is None:
            return default
        v = dict.__getitem__(self, k)
        return (v[0] if v else "") if isinstance(v, list) else v

    def get_all(self, key: str, default: list[str] | None = None) -> list[str]:
        """Every value of ``key`` (case-insensitive lookup), in wire order;
        ``default`` (an empty list when None) when absent."""
        k = self._key(key)
        if k is None:
            return [] if default is None else default
        v = dict.__getitem__(self, k)
        return list(v) if isinstance(v, list) else [v]

    def items(self) -> list[tuple[str, str]]:  # type: ignore[override]
        """``(key, first value)`` pairs (``multi_items()`` gives the lists)."""
        return [(k, (v[0] if v else "") if isinstance(v, list) else v) for k, v in dict.items(self)]

    def values(self) -> list[str]:  # type: ignore[override]
        """The first value of each key."""
        return [(v[0] if v else "") if isinstance(v, list) else v for v in dict.values(self)]

    def multi_items(self) -> list[tuple[str, list[str]]]:
        """``(key, [values])`` pairs, as stored."""
        return list(dict.items(self))

    def copy(self) -> "Headers":
        """A copy (the lists copied too)."""
        return Headers({k: list(v) if isinstance(v, list) else v for k, v in dict.items(self)})

    def __repr__(self) -> str:
        return f"Headers({dict.__repr__(self)})"
