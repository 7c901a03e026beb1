"""Batch direct gets and multi-last gets (ADR-31), without I/O.

One request to ``DIRECT.GET.<stream>`` (the stream needs ``allow_direct``)
with a reply subject of the driver's (an inbox it subscribed to, or a
request gathering several replies); the server answers with the messages,
each carrying its coordinates in ``Nats-*`` headers and
``Nats-Num-Pending`` (matching messages left after it), then one status
204 "EOB" message that ends the batch, with ``Nats-Num-Pending``,
``Nats-Last-Sequence`` and, for a multi-last get, ``Nats-UpTo-Sequence``
(the stream sequence the answer stands at: ask again with ``up_to_seq``
to page on the same snapshot).  Nothing matching: one status 404 and no
EOB.

:class:`DirectBatch` is one such get: ``body`` and :meth:`subject` to send,
then :meth:`on_msg` for each reply: the :class:`~api.StoredMsg` of a
message, or None once :attr:`done` (EOB or 404; a 404 ends it with no
message, as an empty result); another status raises its error (408: a bad
request, ErrInvalidArg; 413: too many subjects for one multi-last get,
ErrInvalidArg; 503: nothing serves direct gets, ErrNoResponders).  The
driver keeps a timer (``timeout_ms`` since the last reply) and calls
:meth:`on_timeout` when it fires.

A face checks the server's API level first with :func:`check`
(feature ``direct_get_batch`` or ``direct_get_multi_last``).
"""

from __future__ import annotations

import datetime
import json

from tclnats_py.errors import error_class, make_error
from tclnats_py.engine.js.api import JsApi, Op, StoredMsg, check_name, stored_from_direct
from tclnats_py.engine.js.api_level import require_level
from tclnats_py.engine.subjects import valid_wildcard_subject

__all__ = ["NUM_PENDING", "LAST_SEQUENCE", "UPTO_SEQUENCE", "DirectBatch", "check"]

NUM_PENDING = "Nats-Num-Pending"
LAST_SEQUENCE = "Nats-Last-Sequence"
UPTO_SEQUENCE = "Nats-UpTo-Sequence"


def _pos_int(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise make_error("ErrInvalidArg", f"Invalid value for the pos_int option {name} : {v}")
    return v


def _time_text(name: str, v) -> str:
    """An RFC 3339 time for the request: a datetime (naive: UTC) or text as given."""
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=datetime.timezone.utc)
        return v.astimezone(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
    if isinstance(v, str) and v:
        return v
    raise make_error("ErrInvalidArg", f"Invalid value for the time option {name} : {v!r}")


def _header_int(msg, key: str) -> int | None:
    h = msg.headers
    v = dict.get(h, key) if h else None  # (the asyncio face's Headers.get gives the first value)
    if not v:
        return None
    try:
        return int(v[0])
    except ValueError:
        return None


class DirectBatch:
    """One batch direct get (``batch``, from ``seq`` or ``start_time``,
    on ``next_by_subj`` when given, up to ``max_bytes``) or multi-last get
    (``multi_last`` subjects, wildcards allowed, at ``up_to_seq`` or
    ``up_to_time``, at most ``batch`` of them).  Arguments are checked here."""

    __slots__ = ("stream", "feature", "batch_size", "body", "done", "count", "num_pending", "last_seq", "up_to_seq", "timeout_ms")

    def __init__(self, stream: str, *, batch: int | None = None, seq: int | None = None,
                 next_by_subj: str | None = None, start_time=None, max_bytes: int | None = None,
                 multi_last=None, up_to_seq: int | None = None, up_to_time=None, timeout_ms: int = 5000):
        self.stream = check_name("stream", stream)
        req: dict = {}
        if multi_last is not None:
            subjects = [multi_last] if isinstance(multi_last, str) else list(multi_last)
            if not subjects:
                raise make_error("ErrInvalidArg", "multi_last needs at least one subject")
            for s in subjects:
                if not isinstance(s, str) or not valid_wildcard_subject(s):
                    raise make_error("ErrBadSubject", f"Invalid subject {s}")
            if seq is not None or start_time is not None or next_by_subj is not None:
                raise make_error("ErrInvalidArg", "multi_last excludes seq, start_time and next_by_subj")
            if up_to_seq is not None and up_to_time is not None:
                raise make_error("ErrInvalidArg", "up_to_seq and up_to_time are mutually exclusive")
            self.feature = "direct_get_multi_last"
            req["multi_last"] = subjects
            if up_to_seq is not None:
                req["up_to_seq"] = _pos_int("up_to_seq", up_to_seq)
            if up_to_time is not None:
                req["up_to_time"] = _time_text("up_to_time", up_to_time)
            if batch is not None:
                req["batch"] = _pos_int("batch", batch)
        else:
            if up_to_seq is not None or up_to_time is not None:
                raise make_error("ErrInvalidArg", "up_to_seq and up_to_time go with multi_last")
            if seq is not None and start_time is not None:
                raise make_error("ErrInvalidArg", "seq and start_time are mutually exclusive")
            self.feature = "direct_get_batch"
            req["batch"] = _pos_int("batch", batch)
            if start_time is not None:
                req["start_time"] = _time_text("start_time", start_time)
            else:
                req["seq"] = 1 if seq is None else _pos_int("seq", seq)
            if next_by_subj is not None:
                if not isinstance(next_by_subj, str) or not valid_wildcard_subject(next_by_subj):
                    raise make_error("ErrBadSubject", f"Invalid subject {next_by_subj}")
                req["next_by_subj"] = next_by_subj
        if max_bytes is not None:
            req["max_bytes"] = _pos_int("max_bytes", max_bytes)
        self.batch_size: int | None = req.get("batch")
        self.body = json.dumps(req, separators=(",", ":")).encode()
        self.done = False
        self.count = 0                     # messages so far
        self.num_pending: int | None = None  # matching messages left after the last one
        self.last_seq: int | None = None
        self.up_to_seq: int | None = None
        self.timeout_ms = timeout_ms

    def subject(self, api: JsApi) -> str:
        return api.subject("DIRECT.GET", self.stream)

    def on_msg(self, msg) -> StoredMsg | None:
        """A reply: its message, or None when it ended the batch (:attr:`done`)."""
        status = msg.status
        if status == 204 or status == 404:
            self.done = True
            self.num_pending = _header_int(msg, NUM_PENDING)
            self.last_seq = _header_int(msg, LAST_SEQUENCE)
            self.up_to_seq = _header_int(msg, UPTO_SEQUENCE)
            return None
        if status == 413:
            self.done = True
            raise make_error("ErrInvalidArg", msg.description or "Too many subjects for one multi_last get")
        if status:
            self.done = True
            return stored_from_direct(msg, self.stream)  # raises the status's error
        self.count += 1
        self.num_pending = _header_int(msg, NUM_PENDING)
        m = stored_from_direct(msg, self.stream)
        h = m.headers
        if h:
            # the batch's own coordinates, not the message's headers
            dict.pop(h, NUM_PENDING, None)
            dict.pop(h, LAST_SEQUENCE, None)
            if not h:
                m.headers = None
        return m

    def on_timeout(self):
        """The driver's timer fired before the end of the batch: ErrTimeout."""
        self.done = True
        return error_class("ErrTimeout")(f"Timeout waiting for the direct get batch of {self.stream}")


def check(api: JsApi, get: DirectBatch) -> Op[int]:
    """Operation: the server's API level, when it serves ``get``'s kind of
    direct get (ErrServerTooOld otherwise)."""
    return (yield from require_level(api, get.feature))
