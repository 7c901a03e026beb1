"""The Spark source's partition reader and planner: a sequence range of a
stream as Python columns, read over one plain blocking socket (TLS when asked).

A Spark task reads one range and nothing else, so it needs no event loop, no
subscription queue and no message objects per delivery.  It is a small
blocking driver of the engine's pieces, not a second client:

* the server list, the first-round order, the URL credentials and the TLS
  name rule are the engine's (``engine.pool.ServerPool``), the CONNECT is
  ``engine.connection.connect_params``, a ``-ERR`` is ``engine.connection.server_error``,
  creds and NKey seeds are read by ``tclnats_py.credentials`` and signed by
  ``engine.auth``;
* the handshake and the API replies are read with the engine's parser
  (``engine.protocol.Parser``), every frame is written with its encoders; the
  deliveries of the pull are read into columns by the engine's
  ``engine.js.columns.scan_deliveries`` (one fused loop, for speed), which
  hands the parser what it leaves;
* the JetStream API calls are ``engine.js.api.JsApi`` operations run with
  ``run_sync`` (so replies and errors map as everywhere else: ErrStreamNotFound,
  ErrJetStreamNotEnabled, ErrJSResponse with code and err_code ...), the pull
  request JSON is ``engine.js.pull.pull_request_body``, pull statuses are judged by
  ``engine.js.pull.classify`` / ``status_error``, and each delivery's sequence,
  time and pending count come from the ack subject as ``engine.js.meta`` reads it.

It reads through an ephemeral pull consumer (memory state, deleted at the end
and expiring on the server anyway) and keeps two pull requests outstanding so
the server is sending the next batch while this one is converted.

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

import collections
import logging
import socket
import ssl
import time

from tclnats_py.credentials import read_credentials
from tclnats_py.engine.connection import Msg, auth_params, connect_params, server_error
from tclnats_py.engine.headers import encode_headers, parse_headers
from tclnats_py.engine.js.api import JsApi, Request, run_sync
from tclnats_py.engine.js.columns import LAST_EVENT, PING_EVENT, Columns, scan_deliveries
from tclnats_py.engine.js.pull import classify, pull_request_body, status_error
from tclnats_py.engine.nuid import Nuid
from tclnats_py.engine.pool import NoServers, ServerPool
from tclnats_py.engine.protocol import (ERR, INFO, MSG, PING, PING_BYTES, PONG, PONG_BYTES, Parser, encode_connect,
                                        encode_pub, encode_sub, encode_unsub)
from tclnats_py.errors import NatsError, make_error
from tclnats_py.spark.options import ConnSettings

__all__ = ["Meta", "read_columns", "DEFAULT_RETRIES", "DEFAULT_RETRY_INTERVAL_MS"]

log = logging.getLogger("tclnats_py.spark")

_RECV = 1 << 20
_LANG = "python-tclnats-spark"
_PULL_SID = 1
_PULL_SID_B = b"%d" % _PULL_SID
_PULL_EXPIRES_NS = 5 * 10**9
# statuses that end one pull request and leave the consumer usable
_PULL_ENDED = frozenset(("no_messages", "timeout", "conflict", "pin_mismatch"))
DEFAULT_RETRIES = 5
DEFAULT_RETRY_INTERVAL_MS = 1000
# failures a new connection may cure (a restarted or unreachable server)
_RETRYABLE = frozenset(("ErrConnectionClosed", "ErrTimeout", "ErrNoServers", "ErrJetStreamNotEnabled",
                        "ErrNoResponders", "ErrBrokenSocket", "ErrStaleConnection", "ErrConnectionRefused",
                        "ErrConnectionTimeout", "ErrServerShutdown", "ErrConsumerDeleted", "ErrConsumerNotFound"))


def retryable(e: BaseException) -> bool:
    if isinstance(e, NatsError):
        return e.code in _RETRYABLE
    if isinstance(e, ssl.SSLCertVerificationError):
        return False
    return isinstance(e, OSError)


def _auth_params(o, info: dict, pool: ServerPool):
    """What the engine sends (engine.connection.auth_params), for a blocking connection."""
    return auth_params(o, info, pool, read_credentials(o) if (o.creds or o.nkey_seed) else None)


class _Conn:
    """One blocking connection: JetStream API requests and a pull loop."""

    def __init__(self, settings: ConnSettings):
        self.settings = settings
        self.options = settings.engine_options()
        self.timeout = settings.request_timeout_ms / 1000
        connect_timeout = settings.connect_timeout_ms / 1000
        pool = ServerPool()
        pool.set_servers(settings.servers, randomize=False)
        last = None
        while True:
            try:
                server, _wait = pool.next_server(True, -1, lambda s: 0, 0)
            except NoServers:
                raise make_error("ErrNoServers",
                                 f"NATS server unreachable at {settings.servers_text()}: {last}") from None
            try:
                self.sock = socket.create_connection((server.host, server.port), connect_timeout)
                break
            except OSError as e:
                last = e
                pool.current_done(False, 0)
        self.server = f"{server.host}:{server.port}"
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(connect_timeout)
        self.parser = Parser()
        self.pending: collections.deque = collections.deque()  # parsed, not yet handled
        self.nuid = Nuid()
        self._sid = _PULL_SID
        try:
            self.info = self._handshake(pool, server)
        except BaseException:
            self.close()
            raise
        self.sock.settimeout(self.timeout)

    def recv(self) -> bytes:
        try:
            data = self.sock.recv(_RECV)
        except socket.timeout:
            raise make_error("ErrTimeout", f"Timeout waiting for the server {self.server}") from None
        if not data:
            raise make_error("ErrConnectionClosed", f"the server {self.server} closed the connection")
        return data

    def _next_op(self):
        while not self.pending:
            self.pending.extend(self.parser.feed(self.recv()))
        return self.pending.popleft()

    def _handshake(self, pool: ServerPool, server) -> dict:
        op = self._next_op()
        if op[0] is not INFO:
            raise make_error("ErrProtocol", "no INFO from the server")
        info = op[1]
        o = self.options
        want_tls = o.secure or server.scheme == "tls"
        tls_done = False
        if info.get("tls_required") or (want_tls and info.get("tls_available")):
            name = pool.tls_name(server, self.settings.tls_hostname)
            try:
                self.sock = self.settings.ssl_context().wrap_socket(self.sock, server_hostname=name)
            except ssl.SSLError as e:
                raise make_error("ErrTLS", f"TLS handshake with {self.server} failed: {e}") from None
            tls_done = True
        elif want_tls:
            raise make_error("ErrSecureConnWanted", f"Server {self.server} does not provide TLS")
        auth = _auth_params(o, info, pool)
        self.sock.sendall(encode_connect(connect_params(o, info, auth, lang=_LANG, tls_done=tls_done)) + PING_BYTES)
        while True:
            op = self._next_op()
            if op[0] is PONG:
                return info
            if op[0] is ERR:
                raise server_error(op[1])[0]
            if op[0] is PING:
                self.sock.sendall(PONG_BYTES)

    def request(self, step: Request, timeout: float | None = None) -> Msg:
        """A core request on its own inbox (a ``_js`` Request step): the reply Msg."""
        self._sid += 1
        sid = self._sid
        inbox = "_INBOX." + self.nuid.next()
        headers = encode_headers(step.headers) if step.headers else None
        self.sock.sendall(encode_sub(inbox, None, sid) + encode_unsub(sid, 1)
                          + encode_pub(step.subject, inbox, step.payload, headers))
        if timeout is None:
            timeout = step.timeout / 1000 if step.timeout else self.timeout
        deadline = time.monotonic() + timeout
        try:
            while True:
                while not self.pending:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise make_error("ErrTimeout", f"Timeout waiting for a reply on {step.subject}")
                    self.sock.settimeout(left)
                    self.pending.extend(self.parser.feed(self.recv()))
                op = self.pending.popleft()
                kind = op[0]
                if kind is MSG:
                    if op[2] == sid:
                        hdr = op[4]
                        msg = Msg(op[1], op[5], op[3], parse_headers(hdr) if hdr is not None else None, sid)
                        if msg.no_responders:
                            raise make_error("ErrNoResponders", f"no responders on {step.subject}")
                        return msg
                elif kind is PING:
                    self.sock.sendall(PONG_BYTES)
                elif kind is ERR:
                    raise server_error(op[1])[0]
        finally:
            self.sock.settimeout(self.timeout)

    def close(self):
        try:
            self.sock.close()
        except OSError as e:
            log.debug("closing the reader's socket: %s", e)


def connect(settings: ConnSettings) -> _Conn:
    return _Conn(settings)


class Meta:
    """The driver's questions about a stream, on one blocking connection
    (``with Meta(settings) as m: ...``)."""

    def __init__(self, settings: ConnSettings):
        self.settings = settings
        self.api = JsApi(prefix=settings.api_prefix_value())
        self.c = _Conn(settings)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.c.close()

    def close(self):
        self.c.close()

    def call(self, op):
        return run_sync(op, self.c.request)

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
                 retry_interval_ms: int = DEFAULT_RETRY_INTERVAL_MS, headers_only: bool = False):
    """Columns of the messages with first <= seq <= last, a dict per pull
    batch: subject and data (lists of bytes), headers ((row, dict) pairs for
    the rows that have any), seq (int64 array) and ts_ns (list of the digits).
    ``headers_only``: the server sends no data (the sink's look for what an
    interrupted run wrote reads only the message ids).

    A broken connection is opened again and the read resumes after the last
    sequence handed out (``retries`` times, ``retry_interval_ms`` apart)."""
    if last < first:
        return
    api = JsApi(prefix=settings.api_prefix_value())
    nxt = first
    failures = 0
    while nxt <= last:
        part = _read_once(settings, api, stream, nxt, last, filter_subject, batch, fail_on_data_loss, headers_only)
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
    c = _Conn(settings)
    try:
        state = run_sync(api.stream_info(stream), c.request)["state"]
        available = state.get("first_seq", 0)
        if available > first:
            lost = min(last, available - 1) - first + 1
            if fail_on_data_loss:
                raise make_error("ErrDataLoss", data_loss_message(stream, first, available),
                                 stream=stream, expected=first, available=available)
            log.warning("stream %s: %d message(s) before sequence %d were removed before they were read "
                        "(failOnDataLoss=false: skipped)", stream, lost, available)
            if available > last:
                return
        cfg = {"deliver_policy": "by_start_sequence", "opt_start_seq": first, "ack_policy": "none",
               "inactive_threshold": 30 * 10**9, "mem_storage": True, "num_replicas": 1,
               "max_waiting": 8}
        if filter_subject:
            cfg["filter_subject"] = filter_subject
        if headers_only:
            cfg["headers_only"] = True
        info = run_sync(api.consumer_create(stream, cfg, action=None, server_version=c.info.get("version")),
                        c.request)
        name = info["name"]

        def delete_consumer():
            run_sync(api.consumer_delete(stream, name), lambda step: c.request(step, 2.0))

        def pending_now() -> int:
            # on a connection of its own: this one may be receiving the other pull's deliveries
            other = _Conn(settings)
            try:
                return int(run_sync(api.consumer_info(stream, name), other.request).get("num_pending", 0))
            finally:
                other.close()

        if not info.get("num_pending"):
            delete_consumer()
            return
        inbox = "_INBOX." + c.nuid.next()
        nxt = api.next_subject(stream, name)
        # never ask for more than the range can hold: what is delivered past
        # its end is only read to be thrown away
        total = min(last - first + 1, info["num_pending"])
        want = min(batch, total)

        def ask(k):
            return encode_pub(nxt, inbox, pull_request_body(k, expires_ns=_PULL_EXPIRES_NS))

        # two pulls outstanding: the server sends the next batch while this one is converted
        first_asks = [min(want, total - i * want) for i in range(2) if total - i * want > 0]
        c.sock.sendall(encode_sub(inbox, None, _PULL_SID) + b"".join(ask(k) for k in first_asks))
        asked = sum(first_asks)
        # a pull expires after 5 s with a status: 15 s without a byte is a dead connection
        c.sock.settimeout(max(15.0, c.timeout))
        cols = Columns()
        done = False
        got_since_end = 0  # messages since the last pull that ended early
        recv, send = c.recv, c.sock.sendall
        # what the API requests left: parsed operations (a PING at most) and unparsed bytes
        for op in c.pending:
            if op[0] is PING:
                send(PONG_BYTES)
        c.pending.clear()
        buf = c.parser.take_unparsed()
        try:
            while not done:
                data = recv()
                buf = buf + data if buf else data
                n_before = cols.n
                pos, events = scan_deliveries(buf, cols, last, _PULL_SID_B)
                got_since_end += cols.n - n_before
                buf = buf[pos:]
                for ev in events:
                    if ev is PING_EVENT:
                        send(PONG_BYTES)
                    elif ev is LAST_EVENT:
                        done = True
                    else:
                        kind = classify(ev)
                        if kind == "heartbeat" or kind == "flow_control":
                            continue
                        err, terminal = status_error(ev)
                        if terminal or kind not in _PULL_ENDED:
                            raise err or make_error(
                                "ErrJSResponse", f"pull on stream {stream} ended: {ev.status} {ev.description}")
                        if (kind == "no_messages" or kind == "timeout") and not got_since_end:
                            # a whole pull went by without a message: ask the
                            # server whether anything is left (messages deleted
                            # meanwhile); the range ends only on its answer
                            if pending_now() == 0:
                                done = True
                                break
                        # a pull ended early: ask again for at most what may be left
                        got_since_end = 0
                        k = max(1, min(want, total - cols.received))
                        send(ask(k))
                        asked = max(asked, cols.received + k)
                if done:
                    break
                while asked < total and asked - cols.received <= want:
                    k = min(want, total - asked)
                    send(ask(k))
                    asked += k
                if cols.n >= want:
                    yield cols.take()
            if cols.n:
                yield cols.take()
            # deliveries of the other outstanding pull may follow: stop them and
            # let the engine's parser continue from where the scanner left off
            send(encode_unsub(_PULL_SID))
            c.pending.extend(c.parser.feed(buf))
        finally:
            try:
                delete_consumer()
            except Exception as e:  # the consumer expires on the server anyway (inactive_threshold)
                log.info("could not delete consumer %s: %s", name, e)
    finally:
        c.close()
