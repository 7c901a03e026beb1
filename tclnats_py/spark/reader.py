"""The Spark source's partition reader: a sequence range of a stream as Python
columns, read over one plain blocking socket.

A Spark task reads one range and nothing else, so it needs no event loop, no
subscription queue and no message objects per delivery.  It is a small
blocking driver of the engine's pieces, not a second client:

* the server list, the first-round order and the URL credentials are the
  engine's (``_pool.ServerPool``), the CONNECT is ``_engine.connect_params``,
  a ``-ERR`` is ``_engine.server_error``;
* the handshake and the API replies are read with the engine's parser
  (``_protocol.Parser``), every frame is written with its encoders; the
  deliveries of the pull are scanned by one fused loop (:func:`_scan`, for
  speed), which hands the parser what it leaves;
* the JetStream API calls are ``_js.api.JsApi`` operations run with
  ``run_sync`` (so replies and errors map as everywhere else: ErrStreamNotFound,
  ErrJetStreamNotEnabled, ErrJSResponse with code and err_code ...), the pull
  request JSON is ``_js.pull.pull_request_body``, pull statuses are judged by
  ``_js.pull.classify`` / ``status_error``, and each delivery's sequence,
  time and pending count come from ``_js.meta.seq_time_pending``.

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
from array import array

from tclnats_py.engine.connection import Msg, connect_params, server_error
from tclnats_py.errors import make_error
from tclnats_py.engine.headers import encode_headers, parse_headers
from tclnats_py.engine.js.api import JsApi, Request, run_sync
from tclnats_py.engine.js.meta import ACK_PREFIX, seq_time_pending
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
_PULL_EXPIRES_NS = 5 * 10**9
# statuses that end one pull request and leave the consumer usable
_PULL_ENDED = frozenset(("no_messages", "timeout", "conflict", "pin_mismatch"))
# events of _scan besides pull statuses (Msg)
_PING_EV, _LAST_EV = "ping", "last"


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


class _Columns:
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


_PULL_SID_B = b"%d" % _PULL_SID
_ACK_PREFIX_B = ACK_PREFIX.encode()
_MAX_CONTROL_LINE = 4096


def _scan(buf: bytes, cols: _Columns, last: int):
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
    events = []
    pos = 0
    n = len(buf)
    find = buf.find
    add_subject, add_data = cols.subject.append, cols.data.append
    add_seq, add_ts = cols.seq.append, cols.ts_ns.append
    row = cols.n
    pull_sid, ack_prefix = _PULL_SID_B, _ACK_PREFIX_B
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
                    events.append(_PING_EV)
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
                events.append(Msg(subj.decode("utf-8", "replace"), buf[start + hsize:end], None, hdr, _PULL_SID))
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
                events.append(_LAST_EV)
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
                events.append(_LAST_EV)
                break
    except ValueError as e:  # a number that is not one
        raise make_error("ErrProtocol", f"Invalid protocol near {buf[pos:pos + 200]!r}: {e}") from None
    added = row - cols.n
    cols.n = row
    cols.received += added
    return pos, events


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
        cols = _Columns()
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
                pos, events = _scan(buf, cols, last)
                got_since_end += cols.n - n_before
                buf = buf[pos:]
                for ev in events:
                    if ev is _PING_EV:
                        send(PONG_BYTES)
                    elif ev is _LAST_EV:
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
