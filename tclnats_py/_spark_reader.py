"""The Spark source's partition reader: a sequence range of a stream as Arrow
columns, read over one plain blocking socket.

A Spark task reads one range and nothing else, so it needs no event loop, no
subscription queue and no message objects: it speaks the protocol with the
engine's parser (``_protocol.Parser``) and puts each message's fields
straight into column lists.  Like the asyncio path it replaces, it reads
through an ephemeral pull consumer (memory state, deleted at the end and
expiring on the server anyway) and keeps two pull requests outstanding so the
server is sending the next batch while this one is converted.

Used for ``nats://`` servers without TLS or credentials options (user and
password or a token in the URL are fine); other setups take the asyncio path.
"""

from __future__ import annotations

import json
import socket
from array import array
import urllib.parse

from ._errors import make_error
from ._headers import parse_headers
from ._nuid import Nuid
from ._protocol import ERR, MSG, PING, Parser

__all__ = ["eligible", "read_columns"]

_RECV = 1 << 20


def eligible(opts: dict) -> bool:
    servers = (opts.get("servers") or opts.get("url") or "").split(",")
    if any(k in opts for k in ("creds", "tls", "tlsca", "tlscert", "tlskey", "nkey")):
        return False
    return all(s.strip().startswith("nats://") or "://" not in s for s in servers if s.strip())


class _Conn:
    """One blocking connection: requests to the JetStream API and a pull loop."""

    def __init__(self, servers: str, timeout: float = 5.0):
        last = None
        for url in (s.strip() for s in servers.split(",") if s.strip()):
            u = urllib.parse.urlsplit(url if "://" in url else "nats://" + url)
            try:
                self.sock = socket.create_connection((u.hostname or "127.0.0.1", u.port or 4222), timeout)
            except OSError as e:
                last = e
                continue
            self.user, self.password = u.username, u.password
            break
        else:
            raise make_error("ErrNoServers", f"NATS server unreachable at {servers}: {last}")
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(timeout)
        self.parser = Parser()
        self.pending: list = []
        self.nuid = Nuid()
        self._handshake()

    def _ops(self):
        while not self.pending:
            data = self.sock.recv(_RECV)
            if not data:
                raise make_error("ErrConnectionClosed", "the server closed the connection")
            self.pending = self.parser.feed(data)
        ops, self.pending = self.pending, []
        return ops

    def _handshake(self):
        ops = self._ops()
        if not ops or ops[0][0] != "INFO":
            raise make_error("ErrProtocol", "no INFO from the server")
        info = ops[0][1]
        self.max_payload = info.get("max_payload", 1 << 20)
        connect = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True,
                   "protocol": 1, "lang": "python-tclnats-spark", "version": "0.1.0"}
        if self.user and self.password is not None:
            connect.update(user=urllib.parse.unquote(self.user), **{"pass": urllib.parse.unquote(self.password)})
        elif self.user:
            connect["auth_token"] = urllib.parse.unquote(self.user)
        self.sock.sendall(b"CONNECT " + json.dumps(connect).encode() + b"\r\nPING\r\n")
        while True:
            for op in self._ops():
                if op[0] == "PONG":
                    return
                if op[0] == ERR:
                    raise make_error("ErrAuthorization" if "uthori" in op[1] else "ErrServer", op[1])

    def request(self, subject: str, body: dict | None, timeout: float = 5.0) -> dict:
        """A JetStream API request on its own inbox; the decoded JSON reply."""
        inbox = "_INBOX." + self.nuid.next()
        payload = b"" if body is None else json.dumps(body).encode()
        self.sock.sendall(b"SUB %s 1\r\nUNSUB 1 1\r\nPUB %s %s %d\r\n%s\r\n"
                          % (inbox.encode(), subject.encode(), inbox.encode(), len(payload), payload))
        self.sock.settimeout(timeout)
        while True:
            for op in self._ops():
                if op[0] == PING:
                    self.sock.sendall(b"PONG\r\n")
                elif op[0] == ERR:
                    raise make_error("ErrServer", op[1])
                elif op[0] == MSG and op[2] == 1:
                    if op[4] and b" 503" in op[4][:16]:
                        raise make_error("ErrJetStreamNotEnabled", "JetStream is not enabled (no responders)")
                    resp = json.loads(op[5] or b"{}")
                    err = resp.get("error") if isinstance(resp, dict) else None
                    if err:
                        code = {10059: "ErrStreamNotFound", 10014: "ErrConsumerNotFound"}.get(
                            err.get("err_code"), "ErrJSResponse")
                        raise make_error(code, err.get("description", "JetStream error"))
                    return resp

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class _Columns:
    """Column lists of one batch: subject, data and the delivery time (ns, as
    the digits of the ack subject: Arrow parses them faster than int() does)
    as lists of bytes, seq as an int64 array, headers as (row, dict) pairs
    (most rows have none)."""

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


_PULL_END = {b"404", b"408", b"409"}


def _scan(buf: bytes, cols: _Columns, last: int):
    """Take the complete frames at the start of ``buf`` (a pull's deliveries:
    MSG/HMSG with a $JS.ACK reply, pull statuses as HMSG without one, PING):
    messages go into ``cols``; returns (bytes used, events).

    This loop is the reader's cost per message, so it does as little as it
    can: one search for the end of the control line (a one-byte search, which
    CPython does with memchr), one split, one split of the reply subject."""
    events = []
    pos = 0
    n = len(buf)
    find = buf.find
    add_subject, add_data = cols.subject.append, cols.data.append
    add_seq, add_ts = cols.seq.append, cols.ts_ns.append
    row = cols.n
    try:
        while pos < n:
            eol = find(b"\n", pos)
            if eol < 0:
                if n - pos > 4096:
                    raise make_error("ErrServer", "Maximum control line exceeded")
                break
            args = buf[pos:eol].split()  # whitespace: the trailing CR goes too
            op = args[0] if args else b""
            if op == b"MSG":
                hsize = 0
                if len(args) == 5:
                    _, subj, _sid, reply, size = args
                elif len(args) == 4:
                    _, subj, _sid, size = args
                    reply = None
                else:
                    raise make_error("ErrProtocol", f"Invalid protocol {buf[pos:eol][:200]!r}")
            elif op == b"HMSG":
                if len(args) == 6:
                    _, subj, _sid, reply, hsize, size = args
                elif len(args) == 5:
                    _, subj, _sid, hsize, size = args
                    reply = None
                else:
                    raise make_error("ErrProtocol", f"Invalid protocol {buf[pos:eol][:200]!r}")
                hsize = int(hsize)
            else:
                line = buf[pos:eol].rstrip(b"\r")
                pos = eol + 1
                if line == b"PING":
                    events.append("ping")
                elif line.startswith(b"-ERR"):
                    raise make_error("ErrServer", line[4:].decode("utf-8", "replace").strip().strip("'"))
                elif line in (b"PONG", b"+OK") or line.startswith(b"INFO"):
                    pass
                else:
                    raise make_error("ErrProtocol", f"Invalid protocol {line[:200]!r}")
                continue
            start = eol + 1
            end = start + int(size)
            if end + 2 > n:
                break
            pos = end + 2
            if reply is None:
                # a pull status: NATS/1.0 404 (no messages), 408 (expired), 409, 100 (heartbeat)
                status = buf[start + 9:start + 12]
                if status in _PULL_END:
                    events.append((status.decode(), buf[start + 12:start + hsize].strip().decode("utf-8", "replace")))
                elif status != b"100":
                    raise make_error("ErrJSResponse", f"pull ended: {buf[start:start + 60]!r}")
                continue
            # $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ns>.<pending>
            _, seq, _, ts, pending = reply.rsplit(b".", 4)
            seq = int(seq)
            if seq > last:
                events.append("last")
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
                events.append("last")
                break
    except ValueError as e:  # a number that is not one
        raise make_error("ErrProtocol", f"Invalid protocol near {buf[pos:pos + 200]!r}: {e}") from None
    added = row - cols.n
    cols.n = row
    cols.received += added
    return pos, events


def read_columns(opts: dict, prefix: str, stream: str, first: int, last: int, filter_subject=None,
                 batch: int = 5000):
    """Columns of the messages with first <= seq <= last, a dict per pull
    batch: subject and data (lists of bytes), headers ((row, dict) pairs for
    the rows that have any), seq (int64 array) and ts_ns (list of the digits)."""
    if last < first:
        return
    c = _Conn(opts.get("servers") or opts.get("url"))
    try:
        cfg = {"deliver_policy": "by_start_sequence", "opt_start_seq": first, "ack_policy": "none",
               "inactive_threshold": 30 * 10**9, "mem_storage": True, "num_replicas": 1,
               "max_waiting": 8}
        if filter_subject:
            cfg["filter_subject"] = filter_subject
        info = c.request(f"{prefix}.CONSUMER.CREATE.{stream}", {"stream_name": stream, "config": cfg})
        name = info["name"]
        if not info.get("num_pending"):
            c.request(f"{prefix}.CONSUMER.DELETE.{stream}.{name}", None, timeout=2.0)
            return
        inbox = ("_INBOX." + c.nuid.next()).encode()
        nxt = f"{prefix}.CONSUMER.MSG.NEXT.{stream}.{name}".encode()
        # never ask for more than the range can hold: what is delivered past
        # its end is only read to be thrown away
        total = min(last - first + 1, info["num_pending"])
        want = min(batch, total)

        def ask(k):
            pull = b'{"batch":%d,"expires":5000000000}' % k
            return b"PUB %s %s %d\r\n%s\r\n" % (nxt, inbox, len(pull), pull)

        # two pulls outstanding: the server sends the next batch while this one is converted
        first_asks = [min(want, total - i * want) for i in range(2) if total - i * want > 0]
        c.sock.sendall(b"SUB %s 2\r\n" % inbox + b"".join(ask(k) for k in first_asks))
        asked = sum(first_asks)
        c.sock.settimeout(15.0)
        cols = _Columns()
        done = False
        got_since_end = 0  # messages since the last pull that ended early
        # the handshake parser may hold bytes already read: start from them
        buf = bytes(c.parser._buf) if c.parser.buffered else b""
        c.parser.reset()
        try:
            while not done:
                data = c.sock.recv(_RECV)
                if not data:
                    raise make_error("ErrConnectionClosed", "the server closed the connection")
                buf = buf + data if buf else data
                n_before = cols.n
                pos, events = _scan(buf, cols, last)
                got_since_end += cols.n - n_before
                buf = buf[pos:]
                for ev in events:
                    if ev == "ping":
                        c.sock.sendall(b"PONG\r\n")
                    elif ev == "last":
                        done = True
                    else:
                        status, desc = ev
                        if status == "409" and not ("Leadership" in desc or "MaxWaiting" in desc):
                            code = "ErrConsumerNotFound" if "Deleted" in desc else "ErrJSResponse"
                            raise make_error(code, f"pull on stream {stream} ended: 409 {desc}")
                        if status in ("404", "408") and not got_since_end:
                            # a whole pull went by without a message while the range
                            # is not finished: what is left was deleted meanwhile
                            done = True
                            break
                        # a pull ended early: ask again for at most what may be left
                        got_since_end = 0
                        k = max(1, min(want, total - cols.received))
                        c.sock.sendall(ask(k))
                        asked = max(asked, cols.received + k)
                if done:
                    break
                while asked < total and asked - cols.received <= want:
                    k = min(want, total - asked)
                    c.sock.sendall(ask(k))
                    asked += k
                if cols.n >= want:
                    yield cols.take()
            if cols.n:
                yield cols.take()
            # deliveries of the other outstanding pull may follow: stop them and
            # let the parser continue from where the scanner left off
            c.sock.sendall(b"UNSUB 2\r\n")
            c.pending = c.parser.feed(buf)
        finally:
            try:
                c.request(f"{prefix}.CONSUMER.DELETE.{stream}.{name}", None, timeout=2.0)
            except Exception as e:  # the consumer expires on the server anyway (inactive_threshold)
                import logging
                logging.getLogger("tclnats_py.spark").info("could not delete consumer %s: %s", name, e)
    finally:
        c.close()
