"""The ceiling of the benchmarks: NATS protocol bytes framed in advance and
written through plain blocking sockets, with the least parsing that tells
a reply from the rest, in one Python thread (two for delivery: a publisher
and a reader; the request rows' echo responder in a process of its own,
below).  No client library: what this machine, this Python and this
server allow, measured in the same run as the clients (compat/bench_py.py,
compat/bench.py print every figure as a percentage of it).

    python -m tclnats_py.compat.bench_raw URL [--count N] [FIGURE ...]

Figures (the names of both benchmarks): publish, deliver, request,
request_async (256 in flight), js_publish (a PUB to a stream's subject and
its ack), js_publish_async (4000 acks in flight), fetch (pull requests of
500), kv_put, kv_get (DIRECT.GET of the last value).

The request rows measure round trips to one echo responder that runs in a
process of its own (:class:`EchoResponder`: a raw blocking socket that
answers each MSG with a PUB of its payload to the reply subject), the same
one for every requester of a round: this ceiling's raw socket, and the
clients of compat/bench_py.py and compat/bench_sync.py.  So each row
counts what one requester costs, its thread waking for every reply, against
a responder whose cost is the same for all; given no responder
(``echo=None``), :func:`request` and :func:`request_async` start one for
their own run.  Every reply must equal its request.

A reader waits in one of two ways, and :func:`ceiling` runs both and keeps
the faster per figure: ``block`` sleeps in ``recv`` at once; ``spin`` first
polls the socket without blocking for ``SPIN_US`` microseconds (yielding the
CPU between polls) and only then sleeps, which is how the clients measured
against it wait for a reply (the Tcl face's ``::tclnats::spin_us``, the
asyncio face's ``spin_time``).  Every figure checks its count: the replies
and values read back, the acks, the messages fetched; the publish connection
is named, so that a harness can ask the server what it received.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from urllib.parse import urlparse

PAYLOAD = b"x" * 128
#: how long a ``spin`` reader polls before it sleeps (the clients' default)
SPIN_US = 300
# what one read takes at most: a buffer of 1 MiB per read would be allocated
# (and given back) through mmap each time, which roughly doubles the CPU of
# a round trip; 64 KiB stays under malloc's mmap threshold
_READ = 64 * 1024
WAITS = ("block", "spin")
FIGURES = ["publish", "deliver", "request", "request_async", "js_publish", "js_publish_async",
           "fetch", "kv_put", "kv_get"]


class RawConn:
    """One NATS connection over a blocking socket: CONNECT, then frames in,
    messages out (``MSG``/``HMSG`` as (subject, reply, payload)); PINGs from
    the server are answered, +OK and INFO skipped."""

    def __init__(self, url: str, wait: str = "block", name: str = "raw"):
        if wait not in WAITS:
            raise ValueError(f"wait must be one of {WAITS}, not {wait!r}")
        self.spin_s = SPIN_US / 1e6 if wait == "spin" else 0.0
        u = urlparse(url)
        self.sock = socket.create_connection((u.hostname or "127.0.0.1", u.port or 4222))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()
        self.pos = 0
        self._line()  # INFO
        self.send(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,'
                  b'"protocol":1,"lang":"raw","version":"0","name":%s}\r\n' % json.dumps(name).encode())
        self.ping_wait()

    def send(self, data) -> None:
        self.sock.sendall(data)

    def close(self) -> None:
        self.sock.close()

    def _fill(self) -> None:
        if self.pos:
            del self.buf[:self.pos]
            self.pos = 0
        chunk = self._recv()
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buf += chunk

    def _recv(self) -> bytes:
        if self.spin_s:
            deadline = time.perf_counter() + self.spin_s
            while True:
                try:
                    return self.sock.recv(_READ, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    if time.perf_counter() >= deadline:
                        break
                    os.sched_yield()
        return self.sock.recv(_READ)

    def _line(self) -> bytes:
        while True:
            eol = self.buf.find(b"\r\n", self.pos)
            if eol >= 0:
                line = bytes(self.buf[self.pos:eol])
                self.pos = eol + 2
                return line
            self._fill()

    def next(self, block: bool = True):
        """The next message, or a control line's first word (b"PONG", ...);
        None when ``block`` is false and no complete frame is buffered."""
        while True:
            buf = self.buf
            eol = buf.find(b"\r\n", self.pos)
            if eol < 0:
                if not block:
                    return None
                self._fill()
                continue
            c = buf[self.pos]
            if c == 77 or c == 72:  # MSG / HMSG
                args = buf[self.pos:eol].split()
                size = int(args[-1])
                end = eol + 2 + size
                if end + 2 > len(buf):
                    if not block:
                        return None
                    self._fill()
                    continue
                reply = args[3] if len(args) == (5 if c == 77 else 6) else None
                payload = bytes(buf[eol + 2:end])
                self.pos = end + 2
                return args[1], reply, payload
            word = bytes(buf[self.pos:self.pos + 4])
            self.pos = eol + 2
            if word == b"PING":
                self.send(b"PONG\r\n")
                continue
            if word == b"-ERR":
                raise RuntimeError(bytes(buf[self.pos - 2 - (eol - self.pos):eol]).decode())
            if word == b"+OK" or word == b"INFO":
                continue
            return word

    def msg(self):
        while True:
            m = self.next()
            if isinstance(m, tuple):
                return m

    def ping_wait(self) -> None:
        self.send(b"PING\r\n")
        while self.next() != b"PONG":
            pass

    def request(self, subject: bytes, reply: bytes, payload: bytes = b""):
        """One round trip: a PUB with a reply subject, the first message back
        (the connection subscribes to its inbox once, see :func:`inbox`)."""
        self.send(b"PUB %s %s %d\r\n%s\r\n" % (subject, reply, len(payload), payload))
        return self.msg()


def inbox(conn: RawConn, prefix: bytes) -> None:
    conn.send(b"SUB %s.* 99\r\n" % prefix)
    conn.ping_wait()


def _rate(n: int, t0: float) -> float:
    return n / (time.perf_counter() - t0)


def publish(url: str, count: int, tag: str, wait: str = "block") -> float:
    c = RawConn(url, wait, name=f"raw-pub-{tag}")
    frame = b"PUB bench.raw.%s.pub  %d\r\n%s\r\n" % (tag.encode(), len(PAYLOAD), PAYLOAD)
    per = 512
    batch = frame * per
    t0 = time.perf_counter()
    full, rest = divmod(count, per)
    for _ in range(full):
        c.send(batch)
    if rest:
        c.send(frame * rest)
    c.ping_wait()
    r = _rate(count, t0)
    c.close()
    return r


def deliver(url: str, count: int, tag: str, wait: str = "block") -> float:
    sub, pub = RawConn(url, wait), RawConn(url, wait)
    subject = b"bench.raw.%s.deliver" % tag.encode()
    sub.send(b"SUB %s 1\r\n" % subject)
    sub.ping_wait()
    frame = b"PUB %s  %d\r\n%s\r\n" % (subject, len(PAYLOAD), PAYLOAD)
    msg_len = len(b"MSG %s 1 %d\r\n%s\r\n" % (subject, len(PAYLOAD), PAYLOAD))
    want = msg_len * count

    def send_all():
        per = 512
        full, rest = divmod(count, per)
        batch = frame * per
        for _ in range(full):
            pub.send(batch)
        if rest:
            pub.send(frame * rest)

    t0 = time.perf_counter()
    th = threading.Thread(target=send_all)
    th.start()
    got = len(sub.buf) - sub.pos
    buf = bytearray(1 << 20)
    recv_into = sub.sock.recv_into
    while got < want:  # every frame has the same length: count bytes
        n = recv_into(buf)
        if not n:
            raise ConnectionError("the server closed the connection")
        got += n
    r = _rate(count, t0)
    th.join()
    sub.close()
    pub.close()
    return r


class EchoResponder:
    """The request rows' echo responder, in a process of its own (this file
    run as ``bench_raw.py echo URL SUBJECT``, see :func:`echo_serve`),
    subscribed before ``with`` hands out its subject, ended after it::

        with EchoResponder(url) as subject:
            request(url, 500, "t", echo=subject)
    """

    def __init__(self, url: str, subject: str | None = None):
        self.url = url
        self.subject = subject or f"bench.echo.{os.getpid()}.{time.monotonic_ns()}"
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> str:
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "echo", self.url, self.subject],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.__exit__()
            raise RuntimeError(f"the echo responder did not start (it said {line!r})")
        return self.subject

    def __exit__(self, *exc: object) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def echo_serve(url: str, subject: str) -> None:
    """The echo responder's loop: subscribe to ``subject``, say "ready" on
    stdout, then answer every message read with a PUB of its payload to its
    reply subject (one write per read), until the connection ends."""
    c = RawConn(url, name="bench-echo")
    c.send(b"SUB %s 1\r\n" % subject.encode())
    c.ping_wait()
    print("ready", flush=True)
    while True:
        try:
            c._fill()
        except (ConnectionError, OSError):
            return
        out = []
        while True:
            m = c.next(block=False)
            if m is None:
                break
            if isinstance(m, tuple) and m[1] is not None:
                out.append(b"PUB %s %d\r\n%s\r\n" % (m[1], len(m[2]), m[2]))
        if out:
            c.send(b"".join(out))


def request(url: str, rounds: int, tag: str, wait: str = "block", echo: str | None = None) -> float:
    """Sequential round trips to the echo responder on ``echo`` (one of
    this run's own when None)."""
    if echo is None:
        with EchoResponder(url) as subject:
            return request(url, rounds, tag, wait, subject)
    a = RawConn(url, wait)
    inbox(a, b"_RAW.%s" % tag.encode())
    head = b"PUB %s _RAW.%s." % (echo.encode(), tag.encode())
    tail = b" %d\r\n%s\r\n" % (len(PAYLOAD), PAYLOAD)
    t0 = time.perf_counter()
    for i in range(rounds):
        a.send(b"%s%d%s" % (head, i, tail))
        if a.msg()[2] != PAYLOAD:
            raise RuntimeError("request: a reply differs from the request")
    r = _rate(rounds, t0)
    a.close()
    return r


def _in_flight(a: "RawConn", head: bytes, tail: bytes, n: int, inflight: int, expect: bytes | None = None,
               wrong: str = "") -> None:
    """``n`` messages ``head + i + tail``, at most ``inflight`` of them
    unanswered: each reply lets the next one go (a reply whose data is not
    ``expect``, when given, raises RuntimeError(``wrong``))."""
    sent = min(n, inflight)
    a.send(b"".join(b"%s%d%s" % (head, i, tail) for i in range(sent)))
    done = 0
    while done < n:
        a._fill()
        more = []
        while True:
            m = a.next(block=False)
            if m is None:
                break
            if isinstance(m, tuple):
                if expect is not None and m[2] != expect:
                    raise RuntimeError(wrong)
                done += 1
                if sent < n:
                    more.append(b"%s%d%s" % (head, sent, tail))
                    sent += 1
        if more:
            a.send(b"".join(more))


def request_async(url: str, n: int, tag: str, wait: str = "block", inflight: int = 256,
                  echo: str | None = None) -> float:
    """``n`` round trips to the echo responder on ``echo`` (one of this
    run's own when None), ``inflight`` at a time."""
    if echo is None:
        with EchoResponder(url) as subject:
            return request_async(url, n, tag, wait, inflight, subject)
    a = RawConn(url, wait)
    inbox(a, b"_RAWA.%s" % tag.encode())
    head = b"PUB %s _RAWA.%s." % (echo.encode(), tag.encode())
    tail = b" %d\r\n%s\r\n" % (len(PAYLOAD), PAYLOAD)
    t0 = time.perf_counter()
    _in_flight(a, head, tail, n, inflight, PAYLOAD, "request_async: a reply differs from the request")
    r = _rate(n, t0)
    a.close()
    return r


def _api(c: RawConn, subject: str, body: dict | bytes, prefix: bytes, seq=[0]) -> dict:
    seq[0] += 1
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    _, _, reply = c.request(subject.encode(), b"%s.api%d" % (prefix, seq[0]), data)
    return json.loads(reply) if reply else {}


def _stream(c: RawConn, prefix: bytes, name: str, subjects: list, **cfg) -> None:
    _api(c, f"$JS.API.STREAM.DELETE.{name}", b"", prefix)
    out = _api(c, f"$JS.API.STREAM.CREATE.{name}",
               dict({"name": name, "subjects": subjects, "storage": "memory"}, **cfg), prefix)
    if "error" in out:
        raise RuntimeError(f"stream {name}: {out['error']}")


def _stored(c: RawConn, prefix: bytes, name: str, want: int) -> None:
    state = _api(c, f"$JS.API.STREAM.INFO.{name}", b"", prefix).get("state", {})
    if state.get("messages") != want:
        raise RuntimeError(f"stream {name}: {state.get('messages')} of {want} messages stored")


def js_publish(url: str, rounds: int, tag: str, wait: str = "block") -> float:
    a = RawConn(url, wait)
    prefix = b"_RAWJ.%s" % tag.encode()
    inbox(a, prefix)
    name = f"BENCH_RAWJ_{tag.upper()}"
    _stream(a, prefix, name, [f"rawjs.{tag}.>"])
    subject = f"rawjs.{tag}.x".encode()
    t0 = time.perf_counter()
    for i in range(rounds):
        _, _, ack = a.request(subject, b"%s.%d" % (prefix, i), PAYLOAD)
        if b'"seq"' not in ack:
            raise RuntimeError(f"no ack: {ack!r}")
    r = _rate(rounds, t0)
    _stored(a, prefix, name, rounds)
    _api(a, f"$JS.API.STREAM.DELETE.{name}", b"", prefix)
    a.close()
    return r


def js_publish_async(url: str, n: int, tag: str, wait: str = "block", inflight: int = 4000) -> float:
    a = RawConn(url, wait)
    prefix = b"_RAWK.%s" % tag.encode()
    inbox(a, prefix)
    name = f"BENCH_RAWK_{tag.upper()}"
    _stream(a, prefix, name, [f"rawjsa.{tag}.>"])
    head = b"PUB rawjsa.%s.y %s." % (tag.encode(), prefix)
    tail = b" %d\r\n%s\r\n" % (len(PAYLOAD), PAYLOAD)
    t0 = time.perf_counter()
    _in_flight(a, head, tail, n, inflight)
    r = _rate(n, t0)
    _stored(a, prefix, name, n)
    _api(a, f"$JS.API.STREAM.DELETE.{name}", b"", prefix)
    a.close()
    return r


def pull_all(a: "RawConn", nxt: bytes, prefix: bytes, batch: int, total: int) -> int:
    """Pull ``total`` messages through the consumer whose MSG.NEXT subject is
    ``nxt``, ``batch`` a pull, replies to inboxes under ``prefix``: how many
    came (RuntimeError when a pull brings nothing)."""
    body = json.dumps({"batch": batch, "expires": 2_000_000_000}).encode()
    got = i = 0
    while got < total:
        i += 1
        a.send(b"PUB %s %s.f%d %d\r\n%s\r\n" % (nxt, prefix, i, len(body), body))
        n = 0
        while n < batch and got + n < total:
            subject, _, _ = a.msg()
            if subject.startswith(prefix):  # a status (404/408): the batch ended
                break
            n += 1
        got += n
        if n == 0:
            raise RuntimeError(f"fetch: a pull brought nothing after {got} of {total} messages")
    return got


def fetch(url: str, total: int, tag: str, wait: str = "block", batch: int = 500) -> float:
    a = RawConn(url, wait)
    prefix = b"_RAWF.%s" % tag.encode()
    inbox(a, prefix)
    name = f"BENCH_RAWF_{tag.upper()}"
    _stream(a, prefix, name, [f"rawf.{tag}.>"])
    frame = b"PUB rawf.%s.f  %d\r\n%s\r\n" % (tag.encode(), len(PAYLOAD), PAYLOAD)
    a.send(frame * total)
    a.ping_wait()
    out = _api(a, f"$JS.API.CONSUMER.CREATE.{name}.PULL",
               {"stream_name": name, "config": {"durable_name": "PULL", "ack_policy": "none",
                                                "filter_subject": f"rawf.{tag}.f"}}, prefix)
    if "error" in out:
        raise RuntimeError(f"consumer: {out['error']}")
    nxt = f"$JS.API.CONSUMER.MSG.NEXT.{name}.PULL".encode()
    t0 = time.perf_counter()
    got = pull_all(a, nxt, prefix, batch, total)
    r = _rate(got, t0)
    _api(a, f"$JS.API.STREAM.DELETE.{name}", b"", prefix)
    a.close()
    return r


def kv(url: str, rounds: int, tag: str, wait: str = "block") -> tuple[float, float]:
    a = RawConn(url, wait)
    prefix = b"_RAWV.%s" % tag.encode()
    inbox(a, prefix)
    bucket = f"BENCH_RAWV_{tag.upper()}"
    _stream(a, prefix, f"KV_{bucket}", [f"$KV.{bucket}.>"], max_msgs_per_subject=1, allow_direct=True,
            allow_rollup_hdrs=True, deny_delete=True, discard="new")
    keys = [f"$KV.{bucket}.key.{i}".encode() for i in range(100)]
    t0 = time.perf_counter()
    for i in range(rounds):
        _, _, ack = a.request(keys[i % 100], b"%s.p%d" % (prefix, i), PAYLOAD)
        if b'"seq"' not in ack:
            raise RuntimeError(f"no ack: {ack!r}")
    put = _rate(rounds, t0)
    gets = [f"$JS.API.DIRECT.GET.KV_{bucket}.$KV.{bucket}.key.{i}".encode() for i in range(100)]
    t0 = time.perf_counter()
    for i in range(rounds):
        _, _, value = a.request(gets[i % 100], b"%s.g%d" % (prefix, i))
        if not value.endswith(PAYLOAD):  # HMSG: the headers, then the value
            raise RuntimeError(f"wrong value: {value!r}")
    get = _rate(rounds, t0)
    _api(a, f"$JS.API.STREAM.DELETE.KV_{bucket}", b"", prefix)
    a.close()
    return put, get


def run(url: str, count: int, figures=None, tag: str = "raw", wait: str = "block", echo: str | None = None) -> dict:
    """The figures of both benchmarks for ``count`` messages, with their
    derived counts (round trips: max(200 or 500, count // 50), as each
    benchmark uses), every reader waiting the ``wait`` way: {figure: msg/s}.
    ``echo``: the subject of the request rows' :class:`EchoResponder`
    (None: each of those rows starts one)."""
    want = set(figures or FIGURES)
    if wait not in WAITS:
        raise ValueError(f"wait must be one of {WAITS}, not {wait!r}")
    rounds = max(500, count // 50)
    out = {}
    if "publish" in want:
        out["publish"] = publish(url, count, tag, wait)
    if "deliver" in want:
        out["deliver"] = deliver(url, count, tag, wait)
    if "request" in want:
        out["request"] = request(url, rounds, tag, wait, echo)
    if "request_async" in want:
        out["request_async"] = request_async(url, max(2000, count // 10), tag, wait=wait, echo=echo)
    if "js_publish" in want:
        out["js_publish"] = js_publish(url, rounds, tag, wait)
    if "js_publish_async" in want:
        out["js_publish_async"] = js_publish_async(url, max(5000, count // 2), tag, wait=wait)
    if "fetch" in want:
        out["fetch"] = fetch(url, max(2000, count // 5), tag, wait=wait)
    if "kv_put" in want or "kv_get" in want:
        out["kv_put"], out["kv_get"] = kv(url, rounds, tag, wait)
    return out


def ceiling(url: str, count: int, figures=None, tag: str = "raw", echo: str | None = None) -> tuple[dict, dict]:
    """Both ways of waiting, one after the other: ({figure: the faster
    rate}, {figure: {"block": rate, "spin": rate}}).  The request rows talk
    to the :class:`EchoResponder` on ``echo`` (None: one started here for both ways)."""
    if echo is None and {"request", "request_async"} & set(figures or FIGURES):
        with EchoResponder(url) as subject:
            return ceiling(url, count, figures, tag, subject)
    both = {w: run(url, count, figures, f"{tag}{w[0]}", w, echo) for w in WAITS}
    each = {fig: {w: both[w][fig] for w in WAITS} for fig in both["block"]}
    return {fig: max(v.values()) for fig, v in each.items()}, each


def each_way_line(ceiling_each: list) -> str:
    """One line of the ceiling's two ways of waiting, medians of the rounds
    (``ceiling_each``: the second result of :func:`ceiling`, one per round)."""
    import statistics
    return "raw socket, each way of waiting (median of the rounds): " + ", ".join(
        f"{fig} block {statistics.median(e[fig]['block'] for e in ceiling_each):,.0f} / "
        f"spin {statistics.median(e[fig]['spin'] for e in ceiling_each):,.0f}"
        for fig in FIGURES if fig in ceiling_each[0])


def exit_status(prog: str, failures: list) -> int:
    """Print every failure of a benchmark run on stderr: 1 if there was one, else 0."""
    for f in failures:
        print(f"{prog}: {f}", file=sys.stderr)
    if failures:
        print(f"{prog}: FAILED ({len(failures)} problem(s) above)", file=sys.stderr)
        return 1
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["echo"]:  # the echo responder's process (EchoResponder)
        if len(argv) != 3:
            raise SystemExit("usage: bench_raw.py echo URL SUBJECT")
        echo_serve(argv[1], argv[2])
        return 0
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url")
    ap.add_argument("--count", type=int, default=100000)
    ap.add_argument("figures", nargs="*")
    args = ap.parse_args(argv)
    best, each = ceiling(args.url, args.count, args.figures)
    for k, v in best.items():
        print(f"{k} {v:.1f}  (block {each[k]['block']:.1f}, spin {each[k]['spin']:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
