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

:func:`scan_direct` does the same for the replies of a batch direct get
(ADR-31, ``engine.js.direct``): messages without a reply subject whose
coordinates are ``Nats-*`` headers the server appends after the message's
own, then one status (204 "EOB", or 404 when nothing matched).  The time is
the server's RFC 3339 text (``Columns.ts_iso``), which Arrow parses.
"""

from __future__ import annotations

from array import array
from typing import Any

from tclnats_py.engine.connection import Msg, server_error
from tclnats_py.engine.headers import parse_headers
from tclnats_py.engine.js.meta import ACK_PREFIX, seq_time_pending
from tclnats_py.engine.protocol import compiled
from tclnats_py.errors import make_error

__all__ = ["Columns", "scan_deliveries", "scan_direct", "PING_EVENT", "LAST_EVENT"]

# events of scan_deliveries besides pull statuses (Msg)
PING_EVENT, LAST_EVENT = "ping", "last"


class Columns:
    """Column lists of one batch: subject and data (bytes), the delivery
    time (ns, as the digits of the ack subject: Arrow parses them faster than
    int() does), seq as an int64 array, headers as (row, dict) pairs (most rows
    have none)."""

    __slots__ = ("subject", "data", "headers", "seq", "ts_ns", "n", "received", "ts_key")

    def __init__(self, ts_key: str = "ts_ns"):
        self.received = 0  # over all batches
        self.ts_key = ts_key  # the time column's name in take(): "ts_iso" for direct get replies
        self._new()

    def _new(self):
        self.subject, self.data, self.headers = [], [], []
        self.seq, self.ts_ns = array("q"), []
        self.n = 0

    def take(self) -> dict:
        out = {"subject": self.subject, "data": self.data, "headers": self.headers, "seq": self.seq,
               self.ts_key: self.ts_ns}
        self._new()
        return out


_ACK_PREFIX_B = ACK_PREFIX.encode()
_MAX_CONTROL_LINE = 4096
# the compiled scanner of the plain deliveries (natsproto.c scan_columns, over
# natscodec.c's frames), None without the accelerator
_scan_columns = compiled("scan_columns")
# the same for batch direct get replies (natsproto.c scan_direct_columns)
_scan_direct_columns = compiled("scan_direct_columns")


def scan_deliveries(buf: bytes, cols: Columns, last: int, sid: bytes = b"1"):
    """Take the complete frames at the start of ``buf`` (what the server
    sends a pull: deliveries as MSG/HMSG with an ack reply, statuses as
    HMSG without one, PING): deliveries go into ``cols``; returns (bytes used,
    events): ``"ping"``, ``"last"`` (the range is complete: the rest of
    ``buf`` is not looked at) or a status Msg (judged by ``_js.pull``).

    Frames by the rules of ``protocol.Parser`` (which the handshake and the
    API requests use, and which gets what this leaves), the ack subject split
    as ``js.meta`` splits it, fused into one pass over the bytes.  With the
    accelerator, its ``scan_columns`` takes the plain deliveries and
    :func:`_scan_py`, the reference, each frame it stops at; without it,
    :func:`_scan_py` takes them all."""
    return _scan(buf, cols, last, sid, _scan_columns, (_ACK_PREFIX_B, PING_EVENT, LAST_EVENT), _scan_py)


def _scan(buf: bytes, cols: Columns, last: int, sid: bytes, fast, fast_tail: tuple, ref) -> tuple:
    """What scan_deliveries and scan_direct share: the accelerator's
    ``fast`` (None without it) takes the plain frames, ``ref`` (the Python
    reference) each frame it stops at, or all of them without it; the rows
    go into ``cols``.  (bytes used, events)."""
    events: list = []
    row = cols.n
    if fast is None:
        pos, row, _ = ref(buf, 0, cols, row, last, sid, events, False)
    else:
        pos, n = 0, len(buf)
        while True:
            pos, seqs, done = fast(buf, pos, cols.subject, cols.data, cols.ts_ns, events, last, sid, *fast_tail)
            if seqs:
                cols.seq.frombytes(seqs)
                row += len(seqs) >> 3
            if done or pos >= n:
                break
            pos, row, stop = ref(buf, pos, cols, row, last, sid, events, True)
            if stop:
                break
    cols.received += row - cols.n
    cols.n = row
    return pos, events


def _scan_py(buf: bytes, pos: int, cols: Columns, row: int, last: int, pull_sid: bytes, events: list,
             one: bool) -> tuple:
    """scan_deliveries' loop in Python from ``pos``, ``row`` the next row's
    number: (position after what it took, next row, whether it stopped: an
    incomplete frame or the range's end); ``one``: return after one frame."""
    n = len(buf)
    seq: Any  # the digits of a reply token, then their int
    hsize: Any
    find = buf.find
    add_subject, add_data = cols.subject.append, cols.data.append
    add_seq, add_ts = cols.seq.append, cols.ts_ns.append
    ack_prefix = _ACK_PREFIX_B
    good_head = None  # the last head of an ack subject that was checked
    try:
        while pos < n:
            eol = find(b"\n", pos)
            if eol < 0:
                if n - pos > _MAX_CONTROL_LINE:
                    raise make_error("ErrServer", "Maximum control line exceeded")
                return pos, row, True
            args = buf[pos:eol].split()  # whitespace: the trailing CR goes too
            op = args[0] if args else b""
            if op != b"MSG" and op != b"HMSG":
                _other_line(buf[pos:eol].rstrip(b"\r"), events)
                pos = eol + 1
            else:
                if op == b"MSG" and len(args) == 5 and args[4].isdigit():  # a delivery: the common line
                    _, subj, sid, reply, size = args
                    hsize = 0
                else:
                    subj, sid, reply, hsize, size = _msg_fields(op, args, buf[pos:eol])
                start = eol + 1
                end = start + int(size)
                if hsize > end - start:
                    raise make_error("ErrProtocol", f"Invalid sizes in {buf[pos:eol][:200]!r}")
                if end + 2 > n:
                    return pos, row, True
                if buf[end] != 13 or buf[end + 1] != 10:
                    raise make_error("ErrProtocol", "Message payload not terminated by CRLF")
                pos = end + 2
                if sid != pull_sid:
                    pass  # a late reply of an API request
                elif reply is None:  # a pull status: no reply subject, a status header
                    hdr = parse_headers(buf[start:start + hsize]) if hsize else None
                    events.append(Msg(subj.decode("utf-8", "replace"), buf[start + hsize:end], None, hdr, int(sid)))
                else:
                    # the 9 tokens of js.meta's v1 form: <prefix>.<stream>.<consumer>.<delivered>.<stream seq>.
                    # <consumer seq>.<ns>.<pending>; any other form goes to js.meta itself
                    t = reply.rsplit(b".", 4)
                    if len(t) == 5 and (t[0] == good_head or (t[0].startswith(ack_prefix) and t[0].count(b".") == 4)):
                        good_head, seq, _, ts, pending = t
                    else:
                        seq, ts, pending = _other_ack(reply, subj)
                    seq = int(seq)
                    if seq > last:
                        events.append(LAST_EVENT)
                        return pos, row, True
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
                        return pos, row, True
            if one:
                return pos, row, False
    except ValueError as e:  # a number that is not one
        raise make_error("ErrProtocol", f"Invalid protocol near {buf[pos:pos + 200]!r}: {e}") from None
    return pos, row, True


def _msg_fields(op: bytes, args: list, line: bytes) -> tuple:
    """(subject, sid, reply or None, header size, size digits) of a MSG or
    HMSG control line split into ``args``; ErrProtocol as the Parser's."""
    hsize: Any = 0
    if op == b"MSG":
        if len(args) == 5:
            _, subj, sid, reply, size = args
        elif len(args) == 4:
            _, subj, sid, size = args
            reply = None
        else:
            raise make_error("ErrProtocol", f"Invalid protocol {line[:200]!r}")
    else:
        if len(args) == 6:
            _, subj, sid, reply, hsize, size = args
        elif len(args) == 5:
            _, subj, sid, hsize, size = args
            reply = None
        else:
            raise make_error("ErrProtocol", f"Invalid protocol {line[:200]!r}")
        if not hsize.isdigit():  # the engine's rule: int() would take "+1", "1_0"
            raise make_error("ErrProtocol", f"Invalid header size in {line[:200]!r}")
        hsize = int(hsize)
    if not size.isdigit():  # the engine's rule, as for the header size
        raise make_error("ErrProtocol", f"Invalid size in {line[:200]!r}")
    return subj, sid, reply, hsize, size


def _other_line(line: bytes, events: list) -> None:
    """A line that is not MSG/HMSG: PING an event, PONG, +OK and INFO passed
    over, -ERR the server's error raised, anything else ErrProtocol."""
    if line == b"PING":
        events.append(PING_EVENT)
    elif line.startswith(b"-ERR"):
        raise server_error(line[4:].decode("utf-8", "replace"))[0]
    elif not (line in (b"PONG", b"+OK") or line.startswith(b"INFO")):
        raise make_error("ErrProtocol", f"Invalid protocol {line[:200]!r}")


def _other_ack(reply: bytes, subject: bytes) -> tuple:
    """(seq, time, pending) digits of an ack subject not of the v1 form, by js.meta."""
    return tuple(x.encode() for x in seq_time_pending(reply.decode("utf-8", "replace"),
                                                        subject.decode("utf-8", "replace")))


_DIRECT_DROP = ("Nats-Stream", "Nats-Subject", "Nats-Sequence", "Nats-Time-Stamp", "Nats-Num-Pending",
                "Nats-Last-Sequence")
_VERSION_LEN = len(b"NATS/1.0")


def scan_direct(buf: bytes, cols: Columns, last: int, sid: bytes):
    """Take the complete frames at the start of ``buf`` (the replies of a
    batch direct get on subscription ``sid``, PING): messages go into
    ``cols`` (``ts_ns`` holding the RFC 3339 time text); returns (bytes used,
    events) as :func:`scan_deliveries` does: ``"ping"``, ``"last"`` (a
    message at or past ``last``, or the last one matching: the rest of
    ``buf`` is not looked at) or a status Msg (the batch's end, or an error,
    for ``DirectBatch.on_msg``).  Framing by the rules of ``protocol.Parser``.
    With the accelerator, its ``scan_direct_columns`` takes the replies with
    no headers of their own and :func:`_scan_direct_py`, the reference, each
    frame it stops at."""
    return _scan(buf, cols, last, sid, _scan_direct_columns, (PING_EVENT, LAST_EVENT), _scan_direct_py)


def _scan_direct_py(buf: bytes, pos: int, cols: Columns, row: int, last: int, sid: bytes, events: list,
                    one: bool) -> tuple:
    """scan_direct's loop in Python from ``pos``, ``row`` the next row's
    number: (position after what it took, next row, whether it stopped: an
    incomplete frame or the range's end); ``one``: return after one frame."""
    n = len(buf)
    find, rfind = buf.find, buf.rfind
    add_subject, add_data, add_seq, add_ts = cols.subject.append, cols.data.append, cols.seq.append, cols.ts_ns.append
    hsize: Any
    try:
        while pos < n:
            eol = find(b"\n", pos)
            if eol < 0:
                if n - pos > _MAX_CONTROL_LINE:
                    raise make_error("ErrServer", "Maximum control line exceeded")
                return pos, row, True
            args = buf[pos:eol].split()
            op = args[0] if args else b""
            if op == b"HMSG" and len(args) == 5 and args[3].isdigit() and args[4].isdigit():  # the common line
                _, subj, fsid, hsize, size = args
                hsize = int(hsize)
            elif op == b"MSG" or op == b"HMSG":
                subj, fsid, _, hsize, size = _msg_fields(op, args, buf[pos:eol])
            else:
                _other_line(buf[pos:eol].rstrip(b"\r"), events)
                pos = eol + 1
                if one:
                    return pos, row, False
                continue
            start = eol + 1
            end = start + int(size)
            hend = start + hsize
            if hend > end:
                raise make_error("ErrProtocol", f"Invalid sizes in {buf[pos:eol][:200]!r}")
            if end + 2 > n:
                return pos, row, True
            if buf[end] != 13 or buf[end + 1] != 10:
                raise make_error("ErrProtocol", "Message payload not terminated by CRLF")
            pos = end + 2
            if fsid != sid:  # a late reply of an API request
                if one:
                    return pos, row, False
                continue
            if not hsize or buf[start + _VERSION_LEN] == 32:  # "NATS/1.0 <status>": the batch's end, or an error
                hdr = parse_headers(buf[start:hend]) if hsize else None
                events.append(Msg(subj.decode("utf-8", "replace"), buf[hend:end], None, hdr, int(fsid)))
                if one:
                    return pos, row, False
                continue
            # the coordinates the server appends: Nats-Stream, -Subject, -Sequence, -Time-Stamp, -Num-Pending
            at = rfind(b"\r\nNats-Stream: ", start, hend)
            t = buf[at + 2:hend].split(b"\r\n", 5) if at >= 0 else ()
            if (len(t) > 4 and t[1][:14] == b"Nats-Subject: " and t[2][:15] == b"Nats-Sequence: "
                    and t[3][:17] == b"Nats-Time-Stamp: "):
                seq = int(t[2][15:])
                ts = t[3][17:]
                pending = int(t[4][18:]) if t[4][:18] == b"Nats-Num-Pending: " else None
                subject = t[1][14:]
                own = parse_headers(buf[start:at] + b"\r\n\r\n") if at > start + _VERSION_LEN else None
            else:
                subject, seq, ts, pending, own = _direct_headers(buf[start:hend])
            if seq > last:
                events.append(LAST_EVENT)
                return pos, row, True
            add_subject(subject)
            add_data(buf[hend:end])
            if own:
                cols.headers.append((row, own))
            add_seq(seq)
            add_ts(ts)
            row += 1
            if seq == last or pending == 0:  # the range's end, or nothing more matches
                events.append(LAST_EVENT)
                return pos, row, True
            if one:
                return pos, row, False
    except ValueError as e:  # a number that is not one
        raise make_error("ErrProtocol", f"Invalid protocol near {buf[pos:pos + 200]!r}: {e}") from None
    return pos, row, True


def _direct_headers(block: bytes) -> tuple:
    """(subject bytes, seq, RFC 3339 time bytes, pending or None, the
    message's own headers or None) of a direct get reply's header block not
    in the server's usual order, by the engine's header parser."""
    h = parse_headers(block)
    subject = (h.get("Nats-Subject") or [""])[0].encode()
    seq = int((h.get("Nats-Sequence") or ["0"])[0])
    ts = (h.get("Nats-Time-Stamp") or [""])[0].encode()
    np = h.get("Nats-Num-Pending")
    for k in _DIRECT_DROP:
        h.pop(k, None)
    return subject, seq, ts, int(np[0]) if np else None, h or None
