"""NATS client protocol: a byte-stream parser and the encoders.

Reference: docs.nats.io "Client Protocol" (INFO, CONNECT, PUB, HPUB, SUB,
UNSUB, MSG, HMSG, PING, PONG, +OK, -ERR) and ADR-4 for HMSG/HPUB.

The parser is incremental: :meth:`Parser.feed` takes whatever a socket read
returned and gives back every complete operation in it as a list, keeping a
partial tail for the next call.  Splitting the same byte stream at any
boundary yields the same operations.  It never raises anything but
:class:`~tclnats_py.errors.NatsError` with code ErrProtocol (malformed
input) or ErrServer (control line over the limit); the operations that were
complete before the bad bytes come with it, in ``err.details["ops"]``.

An optional compiled scanner (``tclnats_py._natsproto``, built from
``_ext/natsproto.c`` with the Tcl extension) decodes the plain frames (MSG,
HMSG, PING, PONG, +OK) between the Python parser's steps; at anything else it
stops and this module handles that one operation, so operations and errors
are this module's either way.  ``TCLNATS_PY_ACCEL=0`` turns it off,
``TCLNATS_PY_ACCEL=1`` makes its absence an ImportError; unset, it is used
when it was built.  ``ACCELERATED`` says which one runs.
"""

from __future__ import annotations

import importlib
import json
import os
TYPE_CHECKING = False  # typing costs ~10 ms of every start: type names for the checker only
if TYPE_CHECKING:
    from typing import Any, Callable

from tclnats_py.errors import NatsError, make_error
from tclnats_py.engine.headers import TCL_UTF8

__all__ = [
    "Parser", "MSG", "INFO", "PING", "PONG", "OK", "ERR",
    "MAX_CONTROL_LINE", "encode_pub", "encode_sub", "encode_unsub", "encode_connect",
    "PING_BYTES", "PONG_BYTES",
]

# operation tags; tuples are cheaper than objects on the hot path
MSG, INFO, PING, PONG, OK, ERR = "MSG", "INFO", "PING", "PONG", "+OK", "-ERR"

MAX_CONTROL_LINE = 4096
PING_BYTES = b"PING\r\n"
PONG_BYTES = b"PONG\r\n"

_PING_OP = (PING,)
_PONG_OP = (PONG,)
_OK_OP = (OK,)


def _load_scanner() -> Callable[[Any, int, list], int] | None:
    mode = os.environ.get("TCLNATS_PY_ACCEL", "")
    if mode == "0":
        return None
    try:
        _natsproto = importlib.import_module("tclnats_py._natsproto")  # built or not: no static import
    except ImportError:
        if mode == "1":
            raise ImportError("TCLNATS_PY_ACCEL=1 but tclnats_py._natsproto is not built "
                              "(python setup.py build_ext --inplace)") from None
        return None
    _natsproto.setup(MSG, _PING_OP, _PONG_OP, _OK_OP)
    scan: Callable[[Any, int, list], int] = _natsproto.scan
    return scan


_scan = _load_scanner()
ACCELERATED = _scan is not None


def _proto_error(msg: str):
    return make_error("ErrProtocol", msg)


class Parser:
    """Incremental parser.  Operations returned by :meth:`feed`:

    * ``("MSG", subject, sid, reply_or_None, header_bytes_or_None, payload)``
    * ``("INFO", dict)``, ``("PING",)``, ``("PONG",)``, ``("+OK",)``
    * ``("-ERR", text)`` (quotes stripped)
    """

    __slots__ = ("_buf", "_need", "_scan")

    def __init__(self, accelerated: bool | None = None) -> None:
        self._buf = bytearray()  # the unparsed tail of what was fed
        self._need = 0  # the tail's length once the payload it waits for is complete
        # the compiled scanner (None: pure Python); accelerated=False forces
        # pure Python, True requires the scanner
        if accelerated and _scan is None:
            raise ImportError("tclnats_py._natsproto is not available")
        self._scan = _scan if accelerated is not False else None

    def reset(self) -> None:
        self._buf.clear()
        self._need = 0

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def take_unparsed(self) -> bytes:
        """The bytes fed but not parsed yet (the start of an incomplete
        operation), removed from the parser: for a driver that scans the
        next part of the stream itself and feeds back what it leaves."""
        tail = bytes(self._buf)
        self.reset()
        return tail

    def feed(self, data) -> list:
        """Every operation complete in what was fed so far (see the class)."""
        # Parsing runs over one bytes object (its slices are the fields, one
        # copy each); the tail is kept in a bytearray, and a payload arriving
        # in many reads is only appended to until it is complete.
        tail = self._buf
        if tail:
            if data:
                tail += data
            if len(tail) < self._need:
                return []
            buf = bytes(tail)
        elif not data:
            return []
        else:
            buf = data if type(data) is bytes else bytes(data)
        self._need = 0
        ops: list = []
        append, find, scan = ops.append, buf.find, self._scan
        pos, n = 0, len(buf)
        try:
            while pos < n:
                if scan is not None:
                    # the plain frames in C; what it stops at is handled below, one operation
                    pos = scan(buf, pos, ops)
                    if pos >= n:
                        break
                eol = find(b"\r\n", pos)
                if eol < 0:
                    if n - pos > MAX_CONTROL_LINE:
                        raise make_error("ErrServer", "Maximum control line exceeded")
                    break
                c = buf[pos]
                if not (c == 77 or c == 109 or c == 72 or c == 104):  # M m H h: MSG / HMSG
                    line = buf[pos:eol]
                    pos = eol + 2  # (past it even when it is bad)
                    append(_line_op(line))
                    continue
                args = buf[pos:eol].split()
                na = len(args)
                op = args[0]
                if op != b"MSG" and op != b"HMSG":
                    op = op.upper()
                if op == b"MSG" and na == 5:
                    subject, sid, reply, size = args[1], args[2], args[3], args[4]
                    hsize = 0
                elif op == b"MSG" and na == 4:
                    subject, sid, size = args[1], args[2], args[3]
                    reply = None
                    hsize = 0
                elif op == b"HMSG" and na == 6 and args[4].isdigit():  # int() would take "+1", "1_0"
                    subject, sid, reply, size = args[1], args[2], args[3], args[5]
                    hsize = int(args[4])
                else:  # HMSG without a reply, and the errors
                    subject, sid, reply, hsize, size = _hmsg_fields(op, args, buf[pos:eol])
                if not (size.isdigit() and sid.isdigit()):  # ASCII digits only
                    raise _proto_error(f"Invalid size or sid in {buf[pos:eol][:200]!r}")
                start = eol + 2
                end = start + int(size)
                if hsize > end - start:
                    raise _proto_error(f"Invalid sizes in {buf[pos:eol][:200]!r}")
                if end + 2 > n:
                    self._need = end + 2 - pos  # wait for the rest of the payload
                    break
                if buf[end] != 13 or buf[end + 1] != 10:
                    raise _proto_error("Message payload not terminated by CRLF")
                append((MSG, subject.decode("utf-8", TCL_UTF8), int(sid),
                        reply.decode("utf-8", TCL_UTF8) if reply is not None else None,
                        buf[start:start + hsize] if hsize else None, buf[start + hsize:end]))
                pos = end + 2
        except NatsError as e:
            e.details["ops"] = ops  # the operations complete before the bad bytes still count
            raise
        finally:
            if tail:
                if pos:
                    del tail[:pos]
            elif pos < n:
                tail += memoryview(buf)[pos:]
        return ops


def _hmsg_fields(op: bytes, args: list, line: bytes) -> tuple:
    """(subject, sid, reply or None, header size, size digits) of an HMSG
    control line split into ``args`` (``op`` its verb, upper-cased); ErrProtocol
    for a MSG line of another length or anything else (``_parse`` takes the
    common lines itself)."""
    na = len(args)
    if op != b"HMSG":
        raise _proto_error(f"Invalid protocol {line[:200]!r}")
    if na == 5:
        subject, sid, hsize, size = args[1], args[2], args[3], args[4]
        reply = None
    elif na == 6:
        subject, sid, reply, hsize, size = args[1:6]
    else:
        raise _proto_error(f"Invalid protocol {line[:200]!r}")
    if not hsize.isdigit():  # int() would take "+1", "1_0", " 1"
        raise _proto_error(f"Invalid header size in {line[:200]!r}")
    return subject, sid, reply, int(hsize), size


def _line_op(line: bytes) -> tuple:
    """The operation of a control line that is not MSG/HMSG (PING, PONG,
    +OK, INFO, -ERR: verbs in any case); ErrProtocol for anything else."""
    upper = line[:4].upper()
    if upper == b"PING" and len(line) == 4:
        return _PING_OP
    if upper == b"PONG" and len(line) == 4:
        return _PONG_OP
    if upper == b"+OK" and len(line) == 3:
        return _OK_OP
    if upper == b"INFO" and len(line) > 4 and line[4] in (32, 9):
        try:
            info = json.loads(line[5:])
        except (ValueError, RecursionError):  # RecursionError: "[[[[..." nesting
            raise _proto_error("Invalid JSON in INFO") from None
        if not isinstance(info, dict):
            raise _proto_error("INFO is not a JSON object")
        return (INFO, info)
    if upper == b"-ERR" and (len(line) == 4 or line[4] in (32, 9)):
        return (ERR, line[4:].decode("utf-8", "replace").strip().strip("'").strip())
    raise _proto_error(f"Invalid protocol {line[:200].decode('utf-8', 'replace')}")


def encode_pub(subject: str, reply: str | None, payload: bytes, header: bytes | bytearray | None = None) -> bytes:
    """PUB or HPUB with payload, ready for the wire (``header`` ends with CRLFCRLF).

    The reply slot is always written, empty when there is no reply, giving
    ``PUB subj  5``: the server accepts it and it is byte-for-byte what
    nats-tcl sends, which tools that sniff the wire (and its test suite) see.
    """
    if header is None:
        return b"".join((f"PUB {subject} {reply or ''} {len(payload)}\r\n".encode(),
                         payload, b"\r\n"))
    hl = len(header)
    return b"".join((f"HPUB {subject} {reply or ''} {hl} {hl + len(payload)}\r\n".encode(),
                     header, payload, b"\r\n"))


def encode_sub(subject: str, queue: str | None, sid: int) -> bytes:
    return f"SUB {subject} {queue or ''} {sid}\r\n".encode()


def encode_unsub(sid: int, max_msgs: int = 0) -> bytes:
    if max_msgs:
        return f"UNSUB {sid} {max_msgs}\r\n".encode()
    return f"UNSUB {sid}\r\n".encode()


def encode_connect(params: dict) -> bytes:
    return b"CONNECT " + json.dumps(params, separators=(",", ":")).encode() + b"\r\n"


def pub_head(subject: str, size: int) -> tuple:
    """The value :func:`pub_frame` keeps for ``subject`` in its ``heads``
    dict: ``(b"PUB <subject>  ", size, the whole PUB line for that size)``."""
    prefix = b"PUB %s  " % subject.encode()
    return (prefix, size, b"%s%d\r\n" % (prefix, size))


def _py_pub_frame(heads: dict, subject, data, limit: int, reply=None, check=True) -> bytes | None:
    """The PUB frame of a subject that has an entry in ``heads`` (made by
    :func:`pub_head`: a subject the engine accepted before) and a bytes
    payload of at most ``limit`` bytes: ``encode_pub(subject, None, data)``
    without the formatting; None otherwise (the caller's general path),
    and for any ``reply`` (the compiled ``pub_frame`` frames a plain ASCII
    reply, ``check`` false: any ASCII one).  The compiled accelerator's
    ``pub_frame`` gives the same bytes."""
    if reply is None and subject.__class__ is str and data.__class__ is bytes:
        head = heads.get(subject)
        n = len(data)
        if head is not None and n <= limit:
            if head[1] != n:  # the line of the last size is kept
                head = heads[subject] = (head[0], n, b"%s%d\r\n" % (head[0], n))
            return head[2] + data + b"\r\n"
    return None


def compiled(name: str) -> Any:
    """The accelerator's function or type ``name`` (``tclnats_py._natsproto``:
    ``scan_columns``, ``SpinPolicy`` ...); None when the accelerator is off
    (TCLNATS_PY_ACCEL=0) or not built."""
    if _scan is None:
        return None
    return getattr(importlib.import_module("tclnats_py._natsproto"), name, None)


def _load_fast() -> tuple:
    """(pub_frame, an awaitable already complete or None, step or None, the
    marker of step's "other result", take_msgs or None, headers or None):
    the compiled ones when the accelerator is on, else the pure-Python
    pub_frame (the engine and the asyncio face do the rest themselves)."""
    if _scan is None:
        return _py_pub_frame, None, None, None, None, None
    m = importlib.import_module("tclnats_py._natsproto")
    frame = getattr(m, "pub_frame", None)
    done = getattr(m, "Done", None)
    return ((frame or _py_pub_frame), (done() if done is not None else None), getattr(m, "step", None), m,
            getattr(m, "take_msgs", None), getattr(m, "headers", None))


# headers(block): headers.parse_headers(block) of a plain block, else None
pub_frame, DONE, step, STEP_OTHER, take_msgs, headers = _load_fast()
# encode_pub(subject, reply, payload) made by the C framer (natscodec.c) when
# the accelerator is on: the same bytes (tests/engine/test_codec_property.py)
frame_pub: Callable[[str, str | None, bytes], bytes] = compiled("encode_pub") or encode_pub
# RecordMaker(cls, fields): the engine's records made in C (None: not compiled)
RecordMaker: Any = compiled("RecordMaker")
