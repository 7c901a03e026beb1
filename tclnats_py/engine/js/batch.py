"""Atomic batch publish (ADR-50): messages a stream stores all together, or none.

A stream with ``allow_atomic`` stages the messages of a batch and stores
them at its commit, under one lock, or abandons the whole batch.  Each
message is a publish to its own subject with two headers, the batch's id
(:data:`~tclnats_py.engine.js.publish.BATCH_ID`, at most 64 characters:
a NUID here) and its place in the batch (``BATCH_SEQUENCE``, 1, 2, 3 ...
without gaps); the last one also carries ``BATCH_COMMIT: 1`` and is sent as
a request whose reply is the batch's ack: the PubAck of the last message
with ``batch`` (the id) and ``count`` (how many were stored).

The other messages are plain publishes, but a message sent as a request
gets an empty reply when the server took it (or an API error, at once):
the first one is (``ack_first``, as nats.go), to learn early that the
stream refuses batches or has too many in flight, and every
``ack_every``-th one when asked, so a long batch meets its errors before
the commit.

The server checks a batch's expectations (``Nats-Expected-Last-Sequence``,
only on the first message; ``Nats-Expected-Last-Subject-Sequence`` ...) at
its commit against the stream as it was before the batch, and refuses the
commit when one fails: nothing of the batch is stored.  It refuses
``Nats-Expected-Last-Msg-Id`` in a batch (refused here, before anything is
sent).  Its limits (nats-server's ``jetstream { limits { batch { ... } } }``;
the defaults in :data:`DEFAULT_LIMITS`) are not told to clients: they show
as the errors of :data:`EXPLAIN`, which :func:`batch_error` words with the
limit concerned.  An abandoned batch (a client gone, a gap, too long idle)
leaves nothing in the stream.

:class:`AtomicBatch` is one batch being written, message by message; it
holds the last message added back, so the batch can be committed with it
when the caller says it is complete (no end-of-batch marker is needed, so
it works with nats-server 2.12).  :func:`publish_batch` writes a whole list.
"""

from __future__ import annotations

import re

from tclnats_py.errors import NatsError, error_class, make_error
from tclnats_py.engine.js.api import JsApi, Op, Publish, Request, check_js_error, loads
from tclnats_py.engine.js.api_level import require_level
from tclnats_py.engine.js.publish import (BATCH_COMMIT, BATCH_ID, BATCH_SEQUENCE, EXPECTED_LAST_MSG_ID,
                                          EXPECTED_LAST_SEQ, parse_ack)
from tclnats_py.engine.nuid import next_token
from tclnats_py.engine.subjects import valid_subject
from tclnats_py.engine.validate import _to_bytes, check_headers

__all__ = ["FEATURE", "DEFAULT_LIMITS", "EXPLAIN", "ERR_DISABLED", "ERR_INCOMPLETE", "ERR_TOO_LARGE",
           "ERR_TOO_MANY_INFLIGHT", "batch_error", "batch_ack", "batch_message", "AtomicBatch", "publish_batch"]

FEATURE = "atomic_batch"

# nats-server's limits of atomic batches, by their names in its configuration
# (jetstream { limits { batch { ... } } }), and their defaults
DEFAULT_LIMITS = {"max_msgs": 1000, "max_inflight_per_stream": 50, "max_inflight_total": 1000, "timeout": "10s"}

# the API errors (err_code) of a batch, nats-server's numbers
ERR_DISABLED = 10174
ERR_SEQUENCE_MISSING = 10175
ERR_INCOMPLETE = 10176
ERR_UNSUPPORTED_HEADER = 10177
ERR_INVALID_ID = 10179
ERR_TOO_LARGE = 10199
ERR_COMMIT_INVALID = 10200
ERR_DUPLICATE_MSG_ID = 10201
ERR_TOO_MANY_INFLIGHT = 10210

#: err_code -> what the server's terse description means, added to it
EXPLAIN = {
    ERR_DISABLED: "the stream does not take atomic batches: create or update it with allow_atomic",
    ERR_INCOMPLETE: "the server abandoned the batch: a message of it was lost, or it was idle longer than the "
                    "server's batch timeout (limits batch timeout, default {timeout}); nothing of it was stored",
    ERR_TOO_LARGE: "a batch holds at most {limit} messages on this server (limits batch max_msgs, default "
                   "{max_msgs}); nothing of it was stored: split it into smaller batches",
    ERR_TOO_MANY_INFLIGHT: "the server has as many uncommitted batches as it allows (limits batch "
                           "max_inflight_per_stream, default {max_inflight_per_stream} per stream; "
                           "max_inflight_total, default {max_inflight_total} per server); retry when some "
                           "have committed",
    ERR_DUPLICATE_MSG_ID: "a Nats-Msg-Id of the batch was stored already (or is twice in it): the whole batch "
                          "was refused",
    ERR_UNSUPPORTED_HEADER: "a batch may not use Nats-Expected-Last-Msg-Id",
}

_LIMIT = re.compile(r":\s*(\d+)\s*\Z")


def batch_error(err: NatsError) -> NatsError:
    """``err`` (an API error of a batch) with its meaning added to the
    message when the server's description is terse; ``details`` keep the
    server's ``code``, ``err_code`` and ``description``, and for a batch too
    large ``limit``, the server's maximum."""
    d = err.details
    err_code = d.get("err_code")
    why = EXPLAIN.get(err_code) if isinstance(err_code, int) else None
    if why is None:
        return err
    m = _LIMIT.search(str(d.get("description") or ""))
    limit = int(m.group(1)) if m else DEFAULT_LIMITS["max_msgs"]
    if err_code == ERR_TOO_LARGE:
        d["limit"] = limit
    err.message = f"{err.message}: {why.format(limit=limit, **DEFAULT_LIMITS)}"
    err.args = (err.message,)
    return err


def batch_ack(ack: dict) -> dict:
    """The result of a commit, from its PubAck: ``stream``, ``seq`` (of the
    batch's last message), ``batch_id``, ``batch_size``, and ``domain``
    when the server gave one."""
    if not isinstance(ack.get("batch"), str) or not isinstance(ack.get("count"), int):
        raise make_error("ErrJSResponse", f"Not the ack of an atomic batch: {ack!r}")
    out = {"stream": ack["stream"], "seq": ack["seq"], "batch_id": ack["batch"], "batch_size": ack["count"]}
    if "domain" in ack:
        out["domain"] = ack["domain"]
    return out


def batch_message(item) -> tuple:
    """``(subject, payload, headers)`` of one message of a batch given as
    ``(subject, data)`` or ``(subject, data, headers)``; checked: a valid
    subject, bytes or text, headers without the batch's own headers or
    ``Nats-Expected-Last-Msg-Id``.  ``headers`` come back as a new dict of
    lists (the caller's mapping is not changed)."""
    if isinstance(item, (str, bytes)) or not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
        raise make_error("ErrInvalidArg", f"Invalid batch message {item!r}: (subject, data[, headers]) expected")
    subject, data = item[0], _to_bytes(item[1])
    if not isinstance(subject, str) or not valid_subject(subject):
        raise make_error("ErrBadSubject", f"Invalid subject {subject}")
    hdrs: dict = {}
    given = check_headers(item[2]) if len(item) == 3 else None
    for k, v in (dict.items(given) if isinstance(given, dict) else (given or {}).items()):
        if k.lower() in _REFUSED:
            raise make_error("ErrInvalidArg", f"The header {k} cannot be used in an atomic batch"
                             + ("" if k.lower() != EXPECTED_LAST_MSG_ID.lower() else " (the server refuses it)"))
        hdrs[k] = list(v) if isinstance(v, (list, tuple)) else [v]
    return subject, data, hdrs


_REFUSED = frozenset(h.lower() for h in (BATCH_ID, BATCH_SEQUENCE, BATCH_COMMIT, EXPECTED_LAST_MSG_ID))


def _check_staged(reply) -> None:
    """The reply to a message of a batch before its commit: empty when the
    server took it, else an API error (raised, explained)."""
    if reply.status == 503:
        raise make_error("ErrNoResponders", "No responders available for request: no stream on the subject")
    if not reply.data:
        return
    try:
        resp = loads(reply.data)
    except ValueError:
        raise make_error("ErrJSResponse", f"Invalid reply to a batch message: {reply.data[:80]!r}") from None
    try:
        check_js_error(resp)
    except NatsError as e:
        raise batch_error(e) from None


class AtomicBatch:
    """One atomic batch being written (sans-IO: its methods are operations
    for a face to run).  ``add`` checks a message and holds it back, sending
    the one held before; ``commit`` sends the held one (or a last one given
    to it) with the commit header and returns :func:`batch_ack`'s dict.
    ``discard`` drops what is held: the server abandons the rest after its
    batch timeout, and stores nothing of it.

    ``ack_first``: the first message is a request (its refusal, e.g. a
    stream without ``allow_atomic``, raises at once); ``ack_every`` n: every
    n-th message too (0: none).  ``timeout`` (ms, None: the JsApi's) bounds
    each of those requests and the commit's."""

    __slots__ = ("api", "batch_id", "sent", "held", "closed", "ack_first", "ack_every", "timeout", "_checked")

    def __init__(self, api: JsApi, ack_first: bool = True, ack_every: int = 0, timeout: int | None = None):
        if ack_every.__class__ is not int or ack_every < 0:
            raise make_error("ErrInvalidArg", f"Invalid ack_every {ack_every!r}: 0 or more")
        self.api = api
        self.batch_id = next_token()
        self.sent = 0                 # messages sent so far (the held one not among them)
        self.held: tuple | None = None
        self.closed = False
        self.ack_first = bool(ack_first)
        self.ack_every = ack_every
        self.timeout = timeout
        self._checked = False

    @property
    def size(self) -> int:
        """Messages added so far (sent or held)."""
        return self.sent + (self.held is not None)

    def _open(self) -> Op[None]:
        if self.closed:
            raise make_error("ErrInvalidArg", "The batch was committed or discarded already")
        if not self._checked:
            yield from require_level(self.api, FEATURE)
            self._checked = True

    def add(self, item) -> Op[None]:
        """Operation: add ``(subject, data[, headers])`` to the batch."""
        msg = batch_message(item)
        if self.size and EXPECTED_LAST_SEQ.lower() in (k.lower() for k in msg[2]):
            raise make_error("ErrInvalidArg", f"Only the first message of a batch may carry {EXPECTED_LAST_SEQ}")
        yield from self._open()
        held, self.held = self.held, msg
        if held is not None:
            yield from self._send(held)

    def _send(self, msg) -> Op[None]:
        subject, data, hdrs = msg
        self.sent += 1
        n = self.sent
        hdrs[BATCH_ID] = [self.batch_id]
        hdrs[BATCH_SEQUENCE] = [str(n)]
        if (n == 1 and self.ack_first) or (self.ack_every and n % self.ack_every == 0):
            try:
                _check_staged((yield Request(subject, data, hdrs, self._timeout())))
            except NatsError:
                self.closed = True  # the server abandons what it staged
                raise
        else:
            yield Publish(subject, data, None, hdrs)

    def _timeout(self):
        return self.api.default_timeout if self.timeout is None else self.timeout

    def commit(self, item=None) -> Op[dict]:
        """Operation: commit the batch, with ``item`` as its last message
        when given; the batch ack (:func:`batch_ack`).  A commit whose reply
        does not come (ErrTimeout) may have been stored or not: with a
        ``Nats-Msg-Id`` on each message, sending the batch again is safe (one
        stored already is refused whole, err_code 10201)."""
        if item is not None:
            yield from self.add(item)
        if self.held is None:
            raise make_error("ErrInvalidArg", "An atomic batch needs a message to commit: it is empty"
                             if not self.closed else "The batch was committed or discarded already")
        yield from self._open()
        subject, data, hdrs = self.held
        self.held = None
        self.closed = True
        self.sent += 1
        hdrs[BATCH_ID] = [self.batch_id]
        hdrs[BATCH_SEQUENCE] = [str(self.sent)]
        hdrs[BATCH_COMMIT] = ["1"]
        reply = yield Request(subject, data, hdrs, self._timeout())
        try:
            return batch_ack(parse_ack(reply))
        except NatsError as e:
            raise batch_error(e) from None

    def discard(self) -> None:
        """Give the batch up: nothing more is sent, and the server stores
        nothing of it."""
        self.held = None
        self.closed = True


def publish_batch(api: JsApi, items, ack_every: int = 0, timeout: int | None = None) -> Op[dict]:
    """Operation: publish ``items`` (each ``(subject, data[, headers])``)
    as one atomic batch; its ack (:func:`batch_ack`).  Every message is
    checked before the first is sent."""
    if isinstance(items, (str, bytes)) or not hasattr(items, "__iter__"):
        raise make_error("ErrInvalidArg", "A list of (subject, data[, headers]) expected")
    msgs = [batch_message(item) for item in items]
    if not msgs:
        raise make_error("ErrInvalidArg", "An atomic batch needs at least one message")
    for _, _, hdrs in msgs[1:]:
        if EXPECTED_LAST_SEQ.lower() in (k.lower() for k in hdrs):
            raise make_error("ErrInvalidArg", f"Only the first message of a batch may carry {EXPECTED_LAST_SEQ}")
    batch = AtomicBatch(api, ack_every=ack_every, timeout=timeout)
    yield from batch._open()
    for msg in msgs[:-1]:
        yield from batch._send(msg)
    batch.held = msgs[-1]
    return (yield from batch.commit())
