"""A pull's deliveries read straight into columns, for a reader that wants
columns rather than messages (the Spark source, ``tclnats_py.spark.reader``).

:func:`scan_deliveries` takes the frames a pull subscription receives (MSG or
HMSG deliveries with an ack reply, statuses without one, PING) from the start
of a buffer and appends each delivery's subject, data, stream sequence and
time to :class:`Columns`.  It is the one loop of the pull path that does not
go through :class:`~tclnats_py.engine.protocol.Parser`, for speed: framing
by the same rules (a test feeds both the same frames, good and bad) fused
with the ack subject split of :mod:`tclnats_py.engine.js.meta` into one pass
over the bytes, about half the work per message of parsing into frames and
then taking the columns from them.  Sans-IO like the rest of the engine.
"""

from __future__ import annotations

from array import array
from typing import Any

from tclnats_py.engine.connection import Msg, server_error
from tclnats_py.engine.headers import parse_headers
from tclnats_py.engine.js.meta import ACK_PREFIX, seq_time_pending
from tclnats_py.errors import make_error

__all__ = ["Columns", "scan_deliveries", "PING_EVENT", "LAST_EVENT"]

# events of scan_deliveries besides pull statuses (Msg)
PING_EVENT, LAST_EVENT = "ping", "last"


class Columns:
    """Column lists of one batch: subject and data (bytes), the delivery
    time (ns, as the digits of the ack subject: Arrow parses them faster than
    int() does), seq as an int64 array, headers as (row, dict) pairs (most rows
    have none)."""

    __slots__ = ("subject", "data", "headers", "seq", "ts_ns", "n", "received")

    def __init__(self):
        self.received = 0  # over all batches
        self._new()

    def _new(self):
        self.subject, self.data, self.headers = [], [], []
        self.seq, self.ts_ns = array("q"), []
        self.n = 0

    def take(self) -> dict:
        out = {"subject": self.subject, "data": self.data, "headers": self.headers, "seq": self.seq,
               "ts_ns": self.ts_ns}
        self._new()
        return out


_ACK_PREFIX_B = ACK_PREFIX.encode()
_MAX_CONTROL_LINE = 4096


def scan_deliveries(buf: bytes, cols: Columns, last: int, sid: bytes = b"1"):
    """Take the complete frames at the start of ``buf`` (what the server
    sends a pull: deliveries as MSG/HMSG with an ack reply, statuses as
    HMSG without one, PING): deliveries go into ``cols``; returns (bytes used,
    events): ``"ping"``, ``"last"`` (the range is complete: the rest of
    ``buf`` is not looked at) or a status Msg (judged by ``_js.pull``).

    The one loop of the reader not made of the engine's pieces, for speed:
    frames by the rules of ``_protocol.Parser`` (which the handshake and the
    API requests use, and which gets what this loop leaves) and the ack
    subject split as ``_js.meta`` splits it, fused into one pass over the
    bytes (one memchr for the end of the control line, one split, one split
    of the reply), about half the work per message of parsing into frames and
    then taking the columns from them."""
    events: list = []
    pos = 0
    n = len(buf)
    seq: Any  # the digits of a reply token, then their int
    size: Any
    hsize: Any
    find = buf.find
    add_subject, add_data = cols.subject.append, cols.data.append
    add_seq, add_ts = cols.seq.append, cols.ts_ns.append
    row = cols.n
    pull_sid, ack_prefix = sid, _ACK_PREFIX_B
    good_head = None  # the last head of an ack subject that was checked
    try:
        while pos < n:
            eol = find(b"\n", pos)
            if eol < 0:
                if n - pos > _MAX_CONTROL_LINE:
                    raise make_error("ErrServer", "Maximum control line exceeded")
                break
            args = buf[pos:eol].split()  # whitespace: the trailing CR goes too
            op = args[0] if args else b""
            if op == b"MSG":
                hsize = 0
                if len(args) == 5:
                    _, subj, sid, reply, size = args
                elif len(args) == 4:
                    _, subj, sid, size = args
                    reply = None
                else:
                    raise make_error("ErrProtocol", f"Invalid protocol {buf[pos:eol][:200]!r}")
            elif op == b"HMSG":
                if len(args) == 6:
                    _, subj, sid, reply, hsize, size = args
                elif len(args) == 5:
                    _, subj, sid, hsize, size = args
                    reply = None
                else:
                    raise make_error("ErrProtocol", f"Invalid protocol {buf[pos:eol][:200]!r}")
                if not hsize.isdigit():  # the engine's rule: int() would take "+1", "1_0"
                    raise make_error("ErrProtocol", f"Invalid header size in {buf[pos:eol][:200]!r}")
                hsize = int(hsize)
            else:
                line = buf[pos:eol].rstrip(b"\r")
                pos = eol + 1
                if line == b"PING":
                    events.append(PING_EVENT)
                elif line.startswith(b"-ERR"):
                    raise server_error(line[4:].decode("utf-8", "replace"))[0]
                elif not (line in (b"PONG", b"+OK") or line.startswith(b"INFO")):
                    raise make_error("ErrProtocol", f"Invalid protocol {line[:200]!r}")
                continue
            if not size.isdigit():  # the engine's rule, as for the header size
                raise make_error("ErrProtocol", f"Invalid size in {buf[pos:eol][:200]!r}")
            start = eol + 1
            end = start + int(size)
            if hsize > end - start:
                raise make_error("ErrProtocol", f"Invalid sizes in {buf[pos:eol][:200]!r}")
            if end + 2 > n:
                break
            if buf[end] != 13 or buf[end + 1] != 10:
                raise make_error("ErrProtocol", "Message payload not terminated by CRLF")
            pos = end + 2
            if sid != pull_sid:
                continue  # a late reply of an API request
            if reply is None:  # a pull status: no reply subject, a status header
                hdr = parse_headers(buf[start:start + hsize]) if hsize else None
                events.append(Msg(subj.decode("utf-8", "replace"), buf[start + hsize:end], None, hdr, int(sid)))
                continue
            # the 9 tokens of _js.meta's v1 form: <prefix>.<stream>.<consumer>.<delivered>.<stream seq>.
            # <consumer seq>.<ns>.<pending>; any other form goes to _js.meta itself
            t = reply.rsplit(b".", 4)
            if len(t) == 5 and (t[0] == good_head or (t[0].startswith(ack_prefix) and t[0].count(b".") == 4)):
                good_head, seq, _, ts, pending = t
            else:
                seq, ts, pending = (x.encode() for x in seq_time_pending(reply.decode("utf-8", "replace"),
                                                                         subj.decode("utf-8", "replace")))
            seq = int(seq)
            if seq > last:
                events.append(LAST_EVENT)
                break
            add_subject(subj)
            if hsize:
                add_data(buf[start + hsize:end])
                cols.headers.append((row, parse_headers(buf[start:start + hsize])))
            else:
                add_data(buf[start:end])
            add_seq(seq)
            add_ts(ts)
            row += 1
            if seq == last or pending == b"0":  # the range's end, or nothing more in the stream
                events.append(LAST_EVENT)
                break
    except ValueError as e:  # a number that is not one
        raise make_error("ErrProtocol", f"Invalid protocol near {buf[pos:pos + 200]!r}: {e}") from None
    added = row - cols.n
    cols.n = row
    cols.received += added
    return pos, events
