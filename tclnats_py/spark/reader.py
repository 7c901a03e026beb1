"""The Spark source's partition reader and planner: a sequence range of a
stream as Python columns, read over one blocking connection (TLS when asked).

A Spark task reads one range and nothing else, so it needs no event loop, no
subscription queue and no message objects per delivery.  It runs on the
engine's blocking driver (``tclnats_py.sync.driver.Driver``), not a client of
its own:

* the connection, the handshake and auth (the server pool and its TLS name
  rule, CONNECT, creds and NKey signatures, PING/PONG, ``-ERR``) are the
  engine's, carried out by the driver; a connection that breaks is not
  reconnected by it (``allow_reconnect`` False): the read resumes on a new
  one (below);
* the JetStream API calls are ``engine.js.api.JsApi`` operations run with
  ``run_sync`` over the driver's requests (so replies and errors map as
  everywhere else: ErrStreamNotFound, ErrJetStreamNotEnabled, ErrJSResponse
  with code and err_code ...), the pull request JSON is
  ``engine.js.pull.pull_request_body``, pull statuses are judged by
  ``engine.js.pull.classify`` / ``status_error``;
* the deliveries of the pull are read into columns by the engine's
  ``engine.js.columns.scan_deliveries`` (one fused loop, for speed) straight
  from the bytes the driver reads (``Driver.read_raw``); a PING it finds and
  what it leaves go back to the engine.  Each delivery's sequence, time and
  pending count come from the ack subject as ``engine.js.meta`` reads it.

It reads through an ephemeral pull consumer (memory state, deleted at the end
and expiring on the server anyway) and keeps two pull requests outstanding so
the server is sending the next batch while this one is converted.  Or, with
``mode="direct"``, by batch direct gets (ADR-31, ``engine.js.direct``: the
stream needs ``allow_direct``, the server 2.11): no consumer, one request per
batch from the next sequence (the subject filter as ``next_by_subj``), the
replies scanned into columns by ``engine.js.columns.scan_direct``; the server
skips deleted sequences itself.

A range ends at its last sequence, or when the server says nothing more
matches (a delivery with 0 pending, or a consumer info with num_pending 0
after a pull came back empty); never on silence.  A connection that breaks
is opened again and the read resumes after the last sequence handed out,
``retries`` times ``retry_interval_ms`` apart (the options
fetchOffset.numRetries / fetchOffset.retryIntervalMs); then the error names
the server, the stream and the sequence.  Messages removed below the range
(purge, limits) fail the read with ErrDataLoss, or with ``fail_on_data_loss``
False are skipped with a warning.

The driver plans with the same connection (``Meta``): stream state, the
first sequence at a time, and boundaries that split the messages a subject
filter matches into equal parts.
"""

from __future__ import annotations

import logging
import ssl
import time

from tclnats_py.engine.connection import Msg
from tclnats_py.engine.js.api import JsApi, Request, run_sync
from tclnats_py.engine.js.columns import LAST_EVENT, PING_EVENT, Columns, scan_deliveries, scan_direct
from tclnats_py.engine.js.api_level import too_old
from tclnats_py.engine.js.direct import DirectBatch
from tclnats_py.engine.js.pull import classify, pull_request_body, status_error
from tclnats_py.engine.protocol import PING_BYTES
from tclnats_py.errors import NatsError, make_error
from tclnats_py.spark.options import ConnSettings
from tclnats_py.sync.driver import Driver

__all__ = ["Meta", "read_columns", "direct_refusal", "connect", "DEFAULT_RETRIES", "DEFAULT_RETRY_INTERVAL_MS"]

log = logging.getLogger("tclnats_py.spark")

_LANG = "python-tclnats-spark"
_PULL_EXPIRES_NS = 5 * 10**9
# statuses that end one pull request and leave the consumer usable
_PULL_ENDED = frozenset(("no_messages", "timeout", "conflict", "pin_mismatch"))
DEFAULT_RETRIES = 5
DEFAULT_RETRY_INTERVAL_MS = 1000
# failures a new connection may cure (a restarted or unreachable server)
_RETRYABLE = frozenset(("ErrConnectionClosed", "ErrTimeout", "ErrNoServers", "ErrJetStreamNotEnabled",
                        "ErrNoResponders", "ErrBrokenSocket", "ErrStaleConnection", "ErrConnectionRefused",
                        "ErrConnectionTimeout", "ErrServerShutdown", "ErrConsumerDeleted", "ErrConsumerNotFound"))
# connection failures that say the servers could not be reached
_UNREACHABLE = frozenset(("ErrConnectionRefused", "ErrHostNotResolved", "ErrNoServers"))


def retryable(e: BaseException) -> bool:
    if isinstance(e, NatsError):
        return e.code in _RETRYABLE
    if isinstance(e, ssl.SSLCertVerificationError):
        return False
    return isinstance(e, OSError)


def _connect_error(settings: ConnSettings, e: NatsError) -> NatsError:
    """The reader's error for a failed connection: the servers named when
    none could be reached (ErrNoServers), ErrTimeout for a server that did
    not answer in time, else the server's own error (ErrAuthorization,
    ErrTLS ...)."""
    cause = e.__cause__ if isinstance(e.__cause__, NatsError) else e
    code = cause.code
    if code in _UNREACHABLE:
        return make_error("ErrNoServers", f"NATS server unreachable at {settings.servers_text()}: {cause}")
    if code == "ErrConnectionTimeout":
        return make_error("ErrTimeout", f"Timeout waiting for the server: {cause}")
    if code == "ErrBrokenSocket":
        return make_error("ErrConnectionClosed", str(cause))
    return make_error(code, str(cause))


def connect(settings: ConnSettings) -> Driver:
    """A connected driver: each server in the order given, tried once; no
    reconnection (a broken read resumes on a new connection)."""
    options = settings.engine_options()
    options.randomize = False
    d = Driver(options, tls=settings.ssl_context, tls_hostname=settings.tls_hostname, allow_reconnect=False,
               lang=_LANG)
    try:
        d.connect(settings.servers)
    except NatsError as e:
        raise _connect_error(settings, e) from None
    return d


def _handler(c: Driver, timeout: float | None = None):
    """``step -> reply Msg`` for ``run_sync``: a ``_js`` Request step as a request on ``c``."""
    def request(step: Request) -> Msg:
        t = timeout if timeout is not None else (step.timeout / 1000 if step.timeout else None)
        return c.request(step.subject, step.payload, t, step.headers or None, step.check_subject)
    return request


def _call(c: Driver, op, timeout: float | None = None):
    """Run a JetStream API operation on ``c``."""
    return run_sync(op, _handler(c, timeout))


class Meta:
    """The driver's questions about a stream, on one blocking connection
    (``with Meta(settings) as m: ...``)."""

    def __init__(self, settings: ConnSettings):
        self.settings = settings
        self.api = JsApi(prefix=settings.api_prefix_value())
        self.c = connect(settings)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.c.close()

    def close(self):
        self.c.close()

    def call(self, op):
        return _call(self.c, op)

    def stream_info(self, stream: str) -> dict:
        return self.call(self.api.stream_info(stream))

    def _consumer(self, stream, cfg):
        info = self.call(self.api.consumer_create(stream, cfg, action=None,
                                                  server_version=self.c.info.get("version")))
        try:
            self.call(self.api.consumer_delete(stream, info["name"]))
        except NatsError as e:  # it expires on the server anyway
            log.info("could not delete consumer %s: %s", info["name"], e)
        return info

    def pending_from(self, stream: str, seq: int, filter_subject=None) -> int:
        """How many messages (matching the filter) have a sequence >= seq."""
        cfg = {"deliver_policy": "by_start_sequence", "opt_start_seq": max(1, seq), "ack_policy": "none",
               "inactive_threshold": 10 * 10**9, "mem_storage": True, "num_replicas": 1}
        if filter_subject:
            cfg["filter_subject"] = filter_subject
        return int(self._consumer(stream, cfg).get("num_pending", 0))

    def seq_at_time(self, stream: str, iso: str, filter_subject=None) -> int:
        """The first stream sequence stored at or after a time (RFC 3339)."""
        cfg = {"deliver_policy": "by_start_time", "opt_start_time": iso, "ack_policy": "none",
               "inactive_threshold": 10 * 10**9, "mem_storage": True, "num_replicas": 1}
        if filter_subject:
            cfg["filter_subject"] = filter_subject
        info = self._consumer(stream, cfg)
        return int(info.get("delivered", {}).get("stream_seq", 0)) + 1

    def split(self, stream: str, first: int, last: int, n: int, filter_subject=None, stream_last=None):
        """Ranges covering first..last, about equal in the messages they hold.

        Without a filter, equal sequence spans.  With one, the boundaries are
        where the matching messages divide into n equal parts (bisection on
        the pending count from a sequence); a filter matching nothing in the
        range gives no range."""
        if last < first:
            return []
        if not filter_subject:
            return _even(first, last, n)
        total_from = self.pending_from(stream, first, filter_subject)
        after = 0
        if stream_last is None or last < stream_last:
            after = self.pending_from(stream, last + 1, filter_subject)
        count = total_from - after
        if count <= 0:
            return []
        if count == last - first + 1:  # every sequence matches: equal spans are equal parts
            return _even(first, last, n)
        n = max(1, min(n, count))
        # each probe costs the server a count over the filter: parts equal to
        # within 1/64 of a part are close enough
        tol = count // (64 * n)
        bounds = [first]
        lo_floor = first
        for i in range(1, n):
            target = total_from - (i * count) // n  # the boundary: pending_from(s) <= target
            lo, hi = lo_floor, last + 1
            while lo < hi:
                mid = (lo + hi) // 2
                p = self.pending_from(stream, mid, filter_subject)
                if abs(p - target) <= tol:
                    lo = mid
                    break
                if p <= target:
                    hi = mid
                else:
                    lo = mid + 1
            if lo > bounds[-1]:
                bounds.append(lo)
            lo_floor = lo
        bounds.append(last + 1)
        return [(a, b - 1) for a, b in zip(bounds, bounds[1:]) if b > a]


def _even(first, last, n):
    size = -(-(last - first + 1) // max(1, n))
    return [(s, min(s + size - 1, last)) for s in range(first, last + 1, size)]


def data_loss_message(stream, expected, available, what="read"):
    return (f"stream {stream}: the {what} needs sequence {expected} but the stream's first sequence "
            f"is now {available}: {available - expected} message(s) were removed (purge, max_msgs, max_age "
            f"or max_bytes) before they were read. Set failOnDataLoss=false to skip them with a warning")


def read_columns(settings: ConnSettings, stream: str, first: int, last: int, filter_subject=None, *,
                 batch: int = 5000, fail_on_data_loss: bool = True, retries: int = DEFAULT_RETRIES,
                 retry_interval_ms: int = DEFAULT_RETRY_INTERVAL_MS, headers_only: bool = False,
                 mode: str = "consumer"):
    """Columns of the messages with first <= seq <= last, a dict per pull
    batch: subject and data (lists of bytes), headers ((row, dict) pairs for
    the rows that have any), seq (int64 array) and ts_ns (list of the digits).
    ``headers_only``: the server sends no data (the sink's look for what an
    interrupted run wrote reads only the message ids).  ``mode`` "direct":
    read by batch direct gets, each dict with ts_iso (the RFC 3339 times as
    bytes) instead of ts_ns; the caller has checked that the stream and
    server allow them (``direct_refusal``).

    A broken connection is opened again and the read resumes after the last
    sequence handed out (``retries`` times, ``retry_interval_ms`` apart)."""
    if last < first:
        return
    api = JsApi(prefix=settings.api_prefix_value())
    nxt = first
    failures = 0
    while nxt <= last:
        if mode == "direct":
            part = _read_direct_once(settings, api, stream, nxt, last, filter_subject, batch, fail_on_data_loss)
        else:
            part = _read_once(settings, api, stream, nxt, last, filter_subject, batch, fail_on_data_loss,
                              headers_only)
        try:
            for cols in part:
                if len(cols["seq"]):
                    nxt = cols["seq"][-1] + 1
                    failures = 0
                yield cols
            return
        except Exception as e:
            if not retryable(e):
                raise
            failures += 1
            where = f"stream {stream} at sequence {nxt} (range {first}..{last}) from {settings.servers_text()}"
            if failures > retries:
                code = e.code if isinstance(e, NatsError) else "ErrConnectionClosed"
                raise make_error(code, f"reading {where} failed {failures} times in a row, the last time with "
                                 f"{type(e).__name__}: {e} (fetchOffset.numRetries={retries}, "
                                 f"fetchOffset.retryIntervalMs={retry_interval_ms})") from e
            log.warning("reading %s: %s: %s; retry %d of %d in %d ms", where, type(e).__name__, e, failures,
                        retries, retry_interval_ms)
            time.sleep(retry_interval_ms / 1000)
        finally:
            part.close()


def _read_once(settings, api, stream, first, last, filter_subject, batch, fail_on_data_loss, headers_only=False):
    c = connect(settings)
    try:
        if not _available(c, api, stream, first, last, fail_on_data_loss):
            return
        cfg = {"deliver_policy": "by_start_sequence", "opt_start_seq": first, "ack_policy": "none",
               "inactive_threshold": 30 * 10**9, "mem_storage": True, "num_replicas": 1,
               "max_waiting": 8}
        if filter_subject:
            cfg["filter_subject"] = filter_subject
        if headers_only:
            cfg["headers_only"] = True
        info = _call(c, api.consumer_create(stream, cfg, action=None, server_version=c.info.get("version")))
        pull = _Pull(settings, c, api, stream, info, first, last, batch)
        try:
            if info.get("num_pending"):
                yield from pull.run()
        finally:
            try:
                _call(c, api.consumer_delete(stream, pull.name), 2.0)
            except Exception as e:  # the consumer expires on the server anyway (inactive_threshold)
                log.info("could not delete consumer %s: %s", pull.name, e)
    finally:
        c.close()


def _available(c: Driver, api, stream, first, last, fail_on_data_loss) -> bool:
    """Whether anything of first..last is left in the stream: messages
    removed below ``first`` are ErrDataLoss, or with ``fail_on_data_loss``
    False skipped with a warning."""
    state = _call(c, api.stream_info(stream))["state"]
    available = state.get("first_seq", 0)
    if available > first:
        lost = min(last, available - 1) - first + 1
        if fail_on_data_loss:
            raise make_error("ErrDataLoss", data_loss_message(stream, first, available),
                             stream=stream, expected=first, available=available)
        log.warning("stream %s: %d message(s) before sequence %d were removed before they were read "
                    "(failOnDataLoss=false: skipped)", stream, lost, available)
        if available > last:
            return False
    return True


class _Pull:
    """The deliveries of one consumer for a range, as columns: two pull
    requests outstanding (the server sends the next batch while this one is
    converted), scanned from the driver's raw bytes."""

    def __init__(self, settings, c: Driver, api, stream, info, first, last, batch):
        self.settings, self.c, self.api, self.stream = settings, c, api, stream
        self.name = info["name"]
        self.last = last
        # never ask for more than the range can hold: what is delivered past
        # its end is only read to be thrown away
        self.total = min(last - first + 1, info.get("num_pending") or 0)
        self.want = min(batch, self.total)
        self.next_subject = api.next_subject(stream, self.name)
        self.inbox = ""
        self.sid = b""
        self.cols = Columns()
        self.asked = 0
        self.done = False
        self.got_since_end = 0  # messages since the last pull that ended early

    def ask(self, k: int) -> None:
        self.c.publish(self.next_subject, pull_request_body(k, expires_ns=_PULL_EXPIRES_NS), self.inbox)

    def run(self):
        c, cols, want, total = self.c, self.cols, self.want, self.total
        self.inbox = c.engine.new_inbox()
        sub = c.subscribe(self.inbox)
        self.sid = b"%d" % sub.sid
        for k in (min(want, total - i * want) for i in range(2) if total - i * want > 0):
            self.ask(k)
            self.asked += k
        # a pull expires after 5 s with a status: 15 s without a byte is a dead connection
        timeout = max(15.0, c.engine.options.request_timeout / 1000)
        try:
            while not self.done:
                c.read_raw(self.scan, timeout)
                if self.done:
                    break
                while self.asked < total and self.asked - cols.received <= want:
                    k = min(want, total - self.asked)
                    self.ask(k)
                    self.asked += k
                if cols.n >= want:
                    yield cols.take()
            if cols.n:
                yield cols.take()
        finally:
            if not c.is_closed:
                # deliveries of the other outstanding pull may follow: stop
                # them, and the engine parses on from where the scanner stopped
                c.unsubscribe(sub)
                c.end_raw()

    def scan(self, buf: bytes) -> int:
        """``Driver.read_raw``'s scanner: the deliveries at the start of
        ``buf`` into the columns; the bytes used."""
        cols = self.cols
        n_before = cols.n
        pos, events = scan_deliveries(buf, cols, self.last, self.sid)
        self.got_since_end += cols.n - n_before
        for ev in events:
            if ev is PING_EVENT:
                self.c.feed(PING_BYTES)
            elif ev is LAST_EVENT:
                self.done = True
            elif self.status(ev):
                break
        return pos

    def status(self, ev: Msg) -> bool:
        """A pull status: go on (False), ask again, or the range ended (True)."""
        kind = classify(ev)
        if kind == "heartbeat" or kind == "flow_control":
            return False
        err, terminal = status_error(ev)
        if terminal or kind not in _PULL_ENDED:
            raise err or make_error("ErrJSResponse", f"pull on stream {self.stream} ended: {ev.status} "
                                    f"{ev.description}")
        if (kind == "no_messages" or kind == "timeout") and not self.got_since_end:
            # a whole pull went by without a message: ask the server whether
            # anything is left (messages deleted meanwhile); the range ends
            # only on its answer
            if self.pending_now() == 0:
                self.done = True
                return True
        # a pull ended early: ask again for at most what may be left
        self.got_since_end = 0
        k = max(1, min(self.want, self.total - self.cols.received))
        self.ask(k)
        self.asked = max(self.asked, self.cols.received + k)
        return False

    def pending_now(self) -> int:
        # on a connection of its own: this one may be receiving the other pull's deliveries
        other = connect(self.settings)
        try:
            return int(_call(other, self.api.consumer_info(self.stream, self.name)).get("num_pending", 0))
        finally:
            other.close()


def direct_refusal(info: dict, level: int) -> NatsError | None:
    """Why a stream (its info) on a server of JetStream API ``level`` cannot
    be read by batch direct gets (ErrServerTooOld, ErrInvalidArg), or None
    when it can."""
    cfg = info.get("config") or {}
    if level < 1:
        return too_old("direct_get_batch", level)
    if not cfg.get("allow_direct"):
        return make_error("ErrInvalidArg", f"stream {cfg.get('name', '')} does not allow direct gets "
                          f"(allow_direct is false)")
    return None


def _read_direct_once(settings, api, stream, first, last, filter_subject, batch, fail_on_data_loss):
    c = connect(settings)
    try:
        if _available(c, api, stream, first, last, fail_on_data_loss):
            yield from _Direct(c, api, stream, first, last, filter_subject, batch).run()
    finally:
        c.close()


class _Direct:
    """A range read by batch direct gets: each from the sequence after the
    last one read, for at most what the range can still hold, sent as the one
    before it ends, its replies scanned from the driver's raw bytes."""

    def __init__(self, c: Driver, api, stream, first, last, filter_subject, batch):
        self.c, self.stream, self.last, self.filter = c, stream, last, filter_subject
        self.subject = api.subject("DIRECT.GET", stream)
        self.nxt = first
        self.batch = batch
        self.cols = Columns("ts_iso")
        self.sid = b""
        self.get: DirectBatch | None = None
        self.done = False

    def ask(self, inbox: str) -> DirectBatch:
        get = self.get = DirectBatch(self.stream, batch=min(self.batch, self.last - self.nxt + 1), seq=self.nxt,
                                     next_by_subj=self.filter)
        self.c.publish(self.subject, get.body, inbox)
        return get

    def run(self):
        c, cols = self.c, self.cols
        inbox = c.engine.new_inbox()
        sub = c.subscribe(inbox)
        self.sid = b"%d" % sub.sid
        timeout = max(15.0, c.engine.options.request_timeout / 1000)
        try:
            get: DirectBatch | None = self.ask(inbox)
            while get is not None:
                before = cols.received
                while not (get.done or self.done):
                    c.read_raw(self.scan, timeout)
                if cols.received == before and not self.done:
                    if get.num_pending:  # never silently short: a batch with nothing in it yet more to come
                        raise make_error("ErrJSResponse", f"direct get on stream {self.stream} from sequence "
                                         f"{self.nxt} sent no message but {get.num_pending} pending")
                    self.done = True  # nothing more matches from nxt on (404, or an empty batch)
                if cols.n:
                    self.nxt = cols.seq[-1] + 1
                # the next get goes out before this batch is handed on: the
                # server sends it while the caller converts this one
                get = self.ask(inbox) if not self.done and self.nxt <= self.last else None
                if cols.n:
                    yield cols.take()
        finally:
            if not c.is_closed:
                # the rest of a batch that went past the range may follow: stop
                # it, and the engine parses on from where the scanner stopped
                c.unsubscribe(sub)
                c.end_raw()

    def scan(self, buf: bytes) -> int:
        """``Driver.read_raw``'s scanner: the replies at the start of ``buf``
        into the columns; the bytes used."""
        pos, events = scan_direct(buf, self.cols, self.last, self.sid)
        for ev in events:
            if ev is PING_EVENT:
                self.c.feed(PING_BYTES)
            elif ev is LAST_EVENT:
                self.done = True
            elif self.get is not None:
                self.get.on_msg(ev)  # EOB or 404 ends the get; another status raises its error
                if self.get.done and self.get.num_pending == 0:
                    self.done = True
        return pos
