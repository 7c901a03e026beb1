"""The Spark source's partition reader: a sequence range of a stream as Python
columns, read over one plain blocking socket.

A Spark task reads one range and nothing else, so it needs no event loop, no
subscription queue and no message objects per delivery.  It is a small
blocking driver of the engine's pieces, not a second client:

* the server list, the first-round order and the URL credentials are the
  engine's (``engine.pool.ServerPool``), the CONNECT is ``engine.connection.connect_params``,
  a ``-ERR`` is ``engine.connection.server_error``;
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

Like the asyncio path it replaces, it reads through an ephemeral pull consumer
(memory state, deleted at the end and expiring on the server anyway) and keeps
two pull requests outstanding so the server is sending the next batch while
this one is converted.

Used for ``nats://`` servers without TLS or credentials files (user and
password or a token, in the URL or as options, are fine); other setups take
the asyncio path.
"""

from __future__ import annotations

import collections
import logging
import socket
import time

from tclnats_py.engine.connection import Msg, connect_params, server_error
from tclnats_py.errors import make_error
from tclnats_py.engine.headers import encode_headers, parse_headers
from tclnats_py.engine.js.api import JsApi, Request, run_sync
from tclnats_py.engine.js.columns import LAST_EVENT, PING_EVENT, Columns, scan_deliveries
from tclnats_py.engine.js.pull import classify, pull_request_body, status_error
from tclnats_py.engine.nuid import Nuid
from tclnats_py.engine.options import Options
from tclnats_py.engine.pool import NoServers, ServerPool
from tclnats_py.engine.protocol import (ERR, INFO, MSG, PING, PING_BYTES, PONG, PONG_BYTES, Parser, encode_connect, encode_pub,
                        encode_sub, encode_unsub)

__all__ = ["eligible", "read_columns"]

_RECV = 1 << 20
_LANG = "python-tclnats-spark"
_PULL_SID = 1
_PULL_SID_B = b"%d" % _PULL_SID
_PULL_EXPIRES_NS = 5 * 10**9
# statuses that end one pull request and leave the consumer usable
_PULL_ENDED = frozenset(("no_messages", "timeout", "conflict", "pin_mismatch"))


def eligible(opts: dict) -> bool:
    servers = (opts.get("servers") or opts.get("url") or "").split(",")
    if any(k in opts for k in ("creds", "tls", "tlsca", "tlscert", "tlskey", "nkey")):
        return False
    return all(s.strip().startswith("nats://") or "://" not in s for s in servers if s.strip())


class _Conn:
    """One blocking connection: JetStream API requests and a pull loop."""

    def __init__(self, servers: str, options: Options | None = None, timeout: float = 5.0):
        self.options = options or Options()
        self.timeout = timeout
        pool = ServerPool()
        pool.set_servers([s.strip() for s in (servers or "").split(",") if s.strip()], randomize=False)
        last = None
        while True:
            try:
                server, _wait = pool.next_server(True, -1, lambda s: 0, 0)
            except NoServers:
                raise make_error("ErrNoServers", f"NATS server unreachable at {servers}: {last}") from None
            try:
                self.sock = socket.create_connection((server.host, server.port), timeout)
                break
            except OSError as e:
                last = e
                pool.current_done(False, 0)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(timeout)
        self.parser = Parser()
        self.pending: collections.deque = collections.deque()  # parsed, not yet handled
        self.nuid = Nuid()
        self._sid = _PULL_SID
        try:
            self.info = self._handshake(pool)
        except BaseException:
            self.close()
            raise

    def recv(self) -> bytes:
        try:
            data = self.sock.recv(_RECV)
        except socket.timeout:
            raise make_error("ErrTimeout", "Timeout waiting for the server") from None
        if not data:
            raise make_error("ErrConnectionClosed", "the server closed the connection")
        return data

    def _next_op(self):
        while not self.pending:
            self.pending.extend(self.parser.feed(self.recv()))
        return self.pending.popleft()

    def _handshake(self, pool: ServerPool) -> dict:
        op = self._next_op()
        if op[0] is not INFO:
            raise make_error("ErrProtocol", "no INFO from the server")
        info = op[1]
        if info.get("tls_required"):
            raise make_error("ErrSecureConnWanted", "the server requires TLS: the Spark reader speaks plain nats://")
        o = self.options
        auth = pool.credentials(o.user, o.password, o.token) if info.get("auth_required") else None
        self.sock.sendall(encode_connect(connect_params(o, info, auth, lang=_LANG)) + PING_BYTES)
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
                    return Msg(op[1], op[5], op[3], parse_headers(hdr) if hdr is not None else None, sid)
            elif kind is PING:
                self.sock.sendall(PONG_BYTES)
            elif kind is ERR:
                raise server_error(op[1])[0]

    def close(self):
        try:
            self.sock.close()
        except OSError as e:
            logging.getLogger("tclnats_py.spark.datasource").debug("closing the reader's socket: %s", e)


def _options(opts: dict) -> Options:
    """The connection options the reader honours (nats-tcl names)."""
    return Options(**{k: opts[k] for k in ("name", "user", "password", "token") if opts.get(k)})


def read_columns(opts: dict, prefix: str, stream: str, first: int, last: int, filter_subject=None,
                 batch: int = 5000):
    """Columns of the messages with first <= seq <= last, a dict per pull
    batch: subject and data (lists of bytes), headers ((row, dict)
    pairs for the rows that have any), seq (int64 array) and ts_ns (list of
    the digits).  ``prefix`` is the JetStream API prefix (``_js.api.api_prefix``)."""
    if last < first:
        return
    api = JsApi(prefix=prefix)
    c = _Conn(opts.get("servers") or opts.get("url"), _options(opts))
    try:
        cfg = {"deliver_policy": "by_start_sequence", "opt_start_seq": first, "ack_policy": "none",
               "inactive_threshold": 30 * 10**9, "mem_storage": True, "num_replicas": 1,
               "max_waiting": 8}
        if filter_subject:
            cfg["filter_subject"] = filter_subject
        info = run_sync(api.consumer_create(stream, cfg, action=None, server_version=c.info.get("version")),
                        c.request)
        name = info["name"]

        def delete_consumer():
            run_sync(api.consumer_delete(stream, name), lambda step: c.request(step, 2.0))

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
        c.sock.settimeout(15.0)
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
                            # a whole pull went by without a message while the range
                            # is not finished: what is left was deleted meanwhile
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
                logging.getLogger("tclnats_py.spark.datasource").info("could not delete consumer %s: %s", name, e)
    finally:
        c.close()
