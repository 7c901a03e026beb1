"""A stand-in for the NATS CLI (``nats``), built on nats-py.

nats-tcl's test suite shells out to the NATS CLI (a Go program) for a few
cross-checks.  The real CLI is not available everywhere, so this module
offers the same commands, output shapes and exit codes, implemented on an
independent client (nats-py), which keeps the cross-check meaningful::

    nats [global options] pub|publish SUBJECT [BODY] [-H K:V ...] [--force-stdin]
                                     [--reply SUBJ] [--count N] [--sleep DUR] [-J] [-q]
    nats [global options] req|request SUBJECT [BODY] [-H K:V ...] [-r|--raw]
    nats [global options] sub|subscribe SUBJECT [--count N] [--queue Q] [-r|--raw]
    nats [global options] stream|str info [-j] STREAM
    nats [global options] stream|str ls [-j] [-n]
    nats [global options] consumer|con info [-j] STREAM CONSUMER
    nats [global options] consumer|con ls [-j] [-n] STREAM
    nats [global options] kv get [--raw] BUCKET KEY
    nats [global options] kv put BUCKET KEY [VALUE]

Global options (accepted before or after the command, as with the real CLI):
``-s/--server URL[,URL]`` (else ``$NATS_URL``, else nats://localhost:4222),
``--user``, ``--password``, ``--creds``, ``--nkey``, ``--tlsca``,
``--tlscert``, ``--tlskey``, ``--timeout`` (Go-style duration, default 5s),
``--js-domain``, ``--js-api-prefix``.

Behaviour kept from the real CLI:

* ``pub``: the body comes from stdin when ``--force-stdin`` is given (or no
  body is given and stdout is a terminal), read to EOF and sent byte-exact;
  ``-H key:value`` is repeatable and a repeated key gets several values
  (key and value are trimmed, ``invalid header "x"`` when there is no ``:``);
  the simple body templates ``{{Count}}``, ``{{Cnt}}``, ``{{Unix}}``,
  ``{{UnixNano}}``, ``{{TimeStamp}}``, ``{{Time}}``, ``{{ID}}`` and
  ``{{Random min max}}`` are expanded (``--no-templates`` turns that off);
  progress messages such as ``Published 7 bytes to "subj"`` go to stderr
  with a time prefix.
* ``stream info -j`` / ``consumer info -j`` print the server's reply whole,
  exactly as the server sent it (every field, in its order, strings and
  numbers untouched, durations in nanoseconds), only indented as the CLI
  does (2 spaces, ``"key": value``).
* Errors go to stderr as ``nats: error: ...`` with exit code 1; usage errors
  as ``nats: error: ..., try --help`` with exit code 1.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import random
import re
import string
import sys
import time

VERSION = "0.2.0 (tclnats_py stand-in for the NATS CLI, on nats-py)"
DEFAULT_URL = "nats://localhost:4222"

__all__ = ["encode_headers", "expand_template", "main", "parse_duration", "parse_headers"]


class CLIError(Exception):
    """An error reported as ``nats: error: <message>`` with exit code 1."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # the real CLI: exit code 1, "try --help"
        sys.stderr.write(f"nats: error: {message}, try --help\n")
        raise SystemExit(1)


def _log(msg: str) -> None:
    """Progress output: stderr with a ``HH:MM:SS`` prefix, as the CLI's logger."""
    sys.stderr.write(f"{time.strftime('%H:%M:%S')} {msg}\n")
    sys.stderr.flush()


_DUR = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Go-style duration (``5s``, ``500ms``, ``1m30s``) or plain seconds -> seconds."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    pos, total = 0, 0.0
    for m in _DUR.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _UNITS[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise argparse.ArgumentTypeError(f"invalid duration {text!r}")
    return total


def parse_headers(pairs) -> list[tuple[str, str]]:
    """``["k:v", ...]`` -> ordered (key, value) pairs; a key may repeat."""
    out = []
    for h in pairs or ():
        key, sep, value = h.partition(":")
        if not sep:
            raise CLIError(f"invalid header {json.dumps(h)}")
        key, value = key.strip(), value.strip()
        if not key or any(c in key for c in " \t\r\n:"):
            raise CLIError(f"invalid header {json.dumps(h)}")
        if "\r" in value or "\n" in value:
            raise CLIError(f"invalid header {json.dumps(h)}")
        out.append((key, value))
    return out


def encode_headers(headers) -> bytes:
    """The NATS/1.0 header block for ``headers`` (ordered pairs, repeats kept)."""
    return ("NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n").encode()


_TEMPLATE = re.compile(rb"\{\{\s*(Count|Cnt|Unix|UnixNano|TimeStamp|Time|ID|Random\s+(\d+)\s+(\d+))\s*\}\}")


def expand_template(body: bytes, count: int) -> bytes:
    """Expand the simple body templates of ``nats pub`` (others are left alone)."""
    if b"{{" not in body:
        return body

    def one(m):
        name = m.group(1)
        now = datetime.datetime.now(datetime.timezone.utc)  # noqa: UP017 (Python 3.10)
        if name in (b"Count", b"Cnt"):
            return str(count).encode()
        if name == b"Unix":
            return str(int(now.timestamp())).encode()
        if name == b"UnixNano":
            return str(time.time_ns()).encode()
        if name == b"TimeStamp":
            return now.isoformat(timespec="seconds").replace("+00:00", "Z").encode()
        if name == b"Time":
            return now.strftime("%I:%M:%S%p").lstrip("0").encode()
        if name == b"ID":
            return "".join(random.choices(string.ascii_letters + string.digits, k=22)).encode()
        lo, hi = sorted((int(m.group(2)), int(m.group(3))))
        return "".join(random.choices(string.ascii_letters, k=random.randint(lo, hi))).encode()
    return _TEMPLATE.sub(one, body)


# --------------------------------------------------------------------- parser

def _global_options(p: argparse.ArgumentParser, suppress: bool) -> None:
    d = (lambda v: argparse.SUPPRESS) if suppress else (lambda v: v)
    p.add_argument("-s", "--server", default=d(None), help="NATS server URL(s), comma separated")
    p.add_argument("--user", default=d(None), help="username or token")
    p.add_argument("--password", default=d(None))
    p.add_argument("--creds", default=d(None), help="user credentials file")
    p.add_argument("--nkey", default=d(None), help="user NKEY seed file")
    p.add_argument("--tlsca", default=d(None), help="CA certificate to verify the server")
    p.add_argument("--tlscert", default=d(None), help="client certificate")
    p.add_argument("--tlskey", default=d(None), help="client private key")
    p.add_argument("--timeout", type=parse_duration, default=d(5.0), help="time to wait on responses (5s)")
    p.add_argument("--js-domain", default=d(None), help="JetStream domain")
    p.add_argument("--js-api-prefix", default=d(None), help="JetStream API prefix")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="nats", description="NATS CLI stand-in built on nats-py (tclnats_py compat)")
    p.add_argument("--version", action="version", version=VERSION)
    _global_options(p, suppress=False)
    common = argparse.ArgumentParser(add_help=False)
    _global_options(common, suppress=True)
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=_Parser, metavar="COMMAND")

    def command(parent, name, aliases=(), **kw):
        return parent.add_parser(name, aliases=list(aliases), parents=[common], **kw)

    pub = command(sub, "publish", ("pub",), help="publish a message")
    pub.add_argument("subject")
    pub.add_argument("body", nargs="?", default=None)
    pub.add_argument("-H", "--header", action="append", default=[], help="K:V header, repeatable")
    pub.add_argument("--force-stdin", action="store_true", help="read the body from stdin")
    pub.add_argument("--reply", default="", help="reply subject")
    pub.add_argument("--count", type=int, default=1)
    pub.add_argument("--sleep", type=parse_duration, default=0.0)
    pub.add_argument("-J", "--jetstream", action="store_true", help="publish to JetStream and wait for the ack")
    pub.add_argument("-q", "--quiet", action="store_true")
    pub.add_argument("--templates", dest="templates", action="store_true", default=True)
    pub.add_argument("--no-templates", dest="templates", action="store_false")

    req = command(sub, "request", ("req",), help="send a request and print the reply")
    req.add_argument("subject")
    req.add_argument("body", nargs="?", default=None)
    req.add_argument("-H", "--header", action="append", default=[])
    req.add_argument("-r", "--raw", action="store_true", help="print only the reply body")
    req.add_argument("--force-stdin", action="store_true")
    req.add_argument("--templates", dest="templates", action="store_true", default=True)
    req.add_argument("--no-templates", dest="templates", action="store_false")

    s = command(sub, "subscribe", ("sub",), help="print messages on a subject")
    s.add_argument("subject")
    s.add_argument("--count", type=int, default=0, help="exit after N messages (0: never)")
    s.add_argument("--queue", default="")
    s.add_argument("-r", "--raw", action="store_true")

    st = command(sub, "stream", ("str",), help="JetStream streams")
    st_sub = st.add_subparsers(dest="action", required=True, parser_class=_Parser, metavar="ACTION")
    si = command(st_sub, "info", ("i",))
    si.add_argument("-j", "--json", action="store_true")
    si.add_argument("stream")
    sl = command(st_sub, "ls", ("list",))
    sl.add_argument("-j", "--json", action="store_true")
    sl.add_argument("-n", "--names", action="store_true")

    c = command(sub, "consumer", ("con", "obs"), help="JetStream consumers")
    c_sub = c.add_subparsers(dest="action", required=True, parser_class=_Parser, metavar="ACTION")
    ci = command(c_sub, "info", ("i",))
    ci.add_argument("-j", "--json", action="store_true")
    ci.add_argument("stream")
    ci.add_argument("consumer")
    cl = command(c_sub, "ls", ("list",))
    cl.add_argument("-j", "--json", action="store_true")
    cl.add_argument("-n", "--names", action="store_true")
    cl.add_argument("stream")

    kv = command(sub, "kv", (), help="Key-Value buckets")
    kv_sub = kv.add_subparsers(dest="action", required=True, parser_class=_Parser, metavar="ACTION")
    kg = command(kv_sub, "get", ())
    kg.add_argument("--raw", action="store_true")
    kg.add_argument("bucket")
    kg.add_argument("key")
    kp = command(kv_sub, "put", ())
    kp.add_argument("bucket")
    kp.add_argument("key")
    kp.add_argument("value", nargs="?", default=None)
    return p


# ------------------------------------------------------------------ commands

def _servers(args) -> list[str]:
    raw = args.server or os.environ.get("NATS_URL") or DEFAULT_URL
    out = []
    for u in raw.split(","):
        u = u.strip()
        if u:
            out.append(u if "://" in u else "nats://" + u)
    return out


def _tls_context(args, servers):
    if not (args.tlsca or args.tlscert or any(s.startswith("tls://") for s in servers)):
        return None
    import ssl
    ctx = ssl.create_default_context(cafile=args.tlsca) if args.tlsca else ssl.create_default_context()
    if args.tlscert:
        ctx.load_cert_chain(args.tlscert, args.tlskey)
    return ctx


async def _connect(args):
    import nats  # nats-py: the independent implementation
    servers = _servers(args)

    async def quiet(*_):  # nats-py would otherwise log to stderr
        return None
    # nats-py treats max_reconnect_attempts <= 0 as "retry forever" even for
    # the first connect; 1 means each server is tried twice, a moment apart
    opts = dict(servers=servers, connect_timeout=args.timeout, allow_reconnect=False,
                max_reconnect_attempts=1, reconnect_time_wait=0.05, name="NATS CLI stand-in",
                error_cb=quiet, disconnected_cb=quiet, closed_cb=quiet)
    if args.user:
        if args.password is None:
            opts["token"] = args.user
        else:
            opts["user"], opts["password"] = args.user, args.password
    if args.creds:
        opts["user_credentials"] = args.creds
    if args.nkey:
        opts["nkeys_seed"] = args.nkey
    tls = _tls_context(args, servers)
    if tls is not None:
        opts["tls"] = tls
    try:
        return await nats.connect(**opts)
    except Exception as e:
        msg = str(e) or type(e).__name__
        raise CLIError(msg if msg.startswith("nats:") else f"nats: {msg}") from None


def _api_prefix(args) -> str:
    if args.js_api_prefix:
        return args.js_api_prefix.rstrip(".")
    if args.js_domain:
        return f"$JS.{args.js_domain}.API"
    return "$JS.API"


async def _api(nc, args, subject: str, what: str, payload: bytes = b"", raw: list | None = None) -> dict:
    """The API reply as a dict (envelope fields dropped); with ``raw`` (a
    list) the reply's text as the server sent it is appended to it."""
    from nats.errors import NoRespondersError
    from nats.errors import TimeoutError as NatsTimeout
    try:
        msg = await nc.request(f"{_api_prefix(args)}.{subject}", payload, timeout=args.timeout)
    except NoRespondersError:
        raise CLIError(f"{what}: nats: no responders available for request") from None
    except NatsTimeout:
        raise CLIError(f"{what}: context deadline exceeded") from None
    data = json.loads(msg.data)
    if raw is not None:
        raw.append(msg.data.decode("utf-8"))
    data.pop("type", None)
    if ".INFO." in subject:  # the CLI prints the info object, without the paging envelope
        for k in ("total", "offset", "limit"):
            data.pop(k, None)
    err = data.pop("error", None)
    if err:
        raise CLIError(f"{what}: {err.get('description', 'unknown error')} ({err.get('err_code', err.get('code'))})")
    return data


async def _names(nc, args, subject: str, key: str, what: str) -> list[str]:
    names, offset = [], 0
    while True:
        data = await _api(nc, args, subject, what, json.dumps({"offset": offset}).encode())
        batch = data.get(key) or []
        names.extend(batch)
        offset += len(batch)
        if not batch or offset >= data.get("total", 0):
            return names


def _print_json(obj) -> None:
    sys.stdout.buffer.write(json.dumps(obj, indent=2, ensure_ascii=False).encode() + b"\n")
    sys.stdout.flush()


def pretty_json(text: str) -> str:
    """``text`` (valid JSON) indented as the CLI prints it (Go's
    json.MarshalIndent with two spaces: ``"key": value``, ``{}`` and ``[]``
    when empty) and otherwise untouched: every field in the server's order,
    strings with their escapes, numbers as written."""
    out, depth, i, n = [], 0, 0, len(text)
    ws = " \t\r\n"
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
            continue
        if c in ws:
            i += 1
            continue
        if c in "{[":
            j = i + 1
            while j < n and text[j] in ws:
                j += 1
            if j < n and text[j] == ("}" if c == "{" else "]"):
                out.append(c + text[j])
                i = j + 1
                continue
            depth += 1
            out.append(c + "\n" + "  " * depth)
        elif c in "}]":
            depth -= 1
            out.append("\n" + "  " * depth + c)
        elif c == ",":
            out.append(",\n" + "  " * depth)
        elif c == ":":
            out.append(": ")
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _print_raw_json(text: str) -> None:
    sys.stdout.buffer.write(pretty_json(text).encode() + b"\n")
    sys.stdout.flush()


async def _send(nc, subject: str, body: bytes, headers, reply: str = "") -> None:
    if not headers:
        await nc.publish(subject, body, reply=reply)
        return
    keys = [k for k, _ in headers]
    if len(set(keys)) == len(keys):
        await nc.publish(subject, body, reply=reply, headers=dict(headers))
        return
    # a repeated key: nats-py's publish takes one value per key, so the
    # header block is written here and sent as HPUB on nats-py's connection
    hdr = encode_headers(headers)
    target = f"{subject} {reply}" if reply else subject
    line = f"HPUB {target} {len(hdr)} {len(hdr) + len(body)}\r\n".encode()
    await nc._send_command(line + hdr + body + b"\r\n")
    await nc._flush_pending()


def _body(args) -> bytes:
    stdin = args.body is None and (args.force_stdin or sys.stdout.isatty())
    if stdin:
        if not getattr(args, "quiet", False) and args.cmd in ("publish", "pub"):
            _log("Reading payload from STDIN")
        return sys.stdin.buffer.read()
    return (args.body or "").encode()


async def cmd_pub(nc, args) -> None:
    headers = parse_headers(args.header)
    base = _body(args)
    count = args.count if args.count >= 1 else 32767
    for i in range(1, count + 1):
        body = expand_template(base, i) if args.templates else base
        if args.jetstream:
            if not args.quiet:
                _log(f"Published {len(body)} bytes to {json.dumps(args.subject)}")
            inbox = nc.new_inbox()
            fut = asyncio.get_running_loop().create_future()

            async def cb(msg, fut=fut):
                if not fut.done():
                    fut.set_result(msg)
            sub = await nc.subscribe(inbox, cb=cb, max_msgs=1)
            await _send(nc, args.subject, body, headers, reply=inbox)
            try:
                msg = await asyncio.wait_for(fut, args.timeout)
            except asyncio.TimeoutError:  # noqa: UP041 (distinct from TimeoutError on Python 3.10)
                raise CLIError("nats: timeout") from None
            finally:
                await sub.unsubscribe()
            if msg.headers and msg.headers.get("Status") == "503":
                raise CLIError("nats: no responders available for request")
            ack = json.loads(msg.data or b"{}")
            if "error" in ack:
                err = ack["error"]
                raise CLIError(f"{err.get('description')} ({err.get('err_code')})")
            if not args.quiet:
                text = f"Stored in Stream: {ack.get('stream')} Sequence: {ack.get('seq')}"
                if ack.get("domain"):
                    text += f" Domain: {json.dumps(ack['domain'])}"
                if ack.get("duplicate"):
                    text += " Duplicate: true"
                _log(text)
        else:
            await _send(nc, args.subject, body, headers, reply=args.reply)
            await nc.flush(timeout=args.timeout)
            if not args.quiet:
                _log(f"Published {len(body)} bytes to {json.dumps(args.subject)}")
        if args.sleep and i < count:
            await asyncio.sleep(args.sleep)


async def cmd_req(nc, args) -> None:
    from nats.errors import NoRespondersError
    from nats.errors import TimeoutError as NatsTimeout
    headers = parse_headers(args.header)
    body = _body(args)
    if args.templates:
        body = expand_template(body, 1)
    if not args.raw:
        _log(f"Sending request on {json.dumps(args.subject)}")
    hdrs = dict(headers) if headers else None
    start = time.monotonic()
    try:
        msg = await nc.request(args.subject, body, timeout=args.timeout, headers=hdrs)
    except NoRespondersError:
        _log("No responders are available")
        return
    except NatsTimeout:
        return  # the real CLI stops waiting quietly
    if not args.raw:
        _log(f"Received with rtt {(time.monotonic() - start) * 1000:.3f}ms")
        if msg.headers:
            for k, v in msg.headers.items():
                _log(f"{k}: {v}")
            sys.stderr.write("\n")
    sys.stdout.buffer.write(msg.data + b"\n")
    sys.stdout.flush()


async def cmd_sub(nc, args) -> None:
    done = asyncio.get_running_loop().create_future()
    got = 0

    async def cb(msg):
        nonlocal got
        got += 1
        out = sys.stdout.buffer
        if args.raw:
            out.write(msg.data + b"\n")
        else:
            reply = f" with reply {json.dumps(msg.reply)}" if msg.reply else ""
            out.write(f"[#{got}] Received on {json.dumps(msg.subject)}{reply}\n".encode())
            for k, v in (msg.headers or {}).items():
                out.write(f"{k}: {v}\n".encode())
            if msg.headers:
                out.write(b"\n")
            out.write(msg.data + b"\n\n")
        sys.stdout.flush()
        if args.count and got >= args.count and not done.done():
            done.set_result(True)
    if not args.raw:
        _log(f"Subscribing on {args.subject}" + (f" in group {args.queue}" if args.queue else ""))
    await nc.subscribe(args.subject, queue=args.queue, cb=cb)
    await nc.flush(timeout=args.timeout)
    await done


def _print_info_text(kind: str, name: str, info: dict) -> None:
    print(f"Information for {kind} {name} created {info.get('created', '')}")
    print()
    for section in ("config", "state", "delivered", "ack_floor", "cluster"):
        if isinstance(info.get(section), dict):
            print(f"{section.replace('_', ' ').title()}:")
            print()
            for k, v in info[section].items():
                print(f"  {k:>24}: {json.dumps(v) if isinstance(v, (dict, list)) else v}")
            print()
    for k in ("num_ack_pending", "num_redelivered", "num_waiting", "num_pending"):
        if k in info:
            print(f"  {k:>24}: {info[k]}")


async def cmd_stream(nc, args) -> None:
    if args.action in ("info", "i"):
        raw: list = []
        info = await _api(nc, args, f"STREAM.INFO.{args.stream}", "could not request Stream info", raw=raw)
        if args.json:
            _print_raw_json(raw[0])
        else:
            _print_info_text("Stream", args.stream, info)
        return
    names = await _names(nc, args, "STREAM.NAMES", "streams", "could not list streams")
    if args.json:
        _print_json(sorted(names))
    elif args.names:
        for n in sorted(names):
            print(n)
    elif not names:
        print("No Streams defined")
    else:
        print(f"Streams ({len(names)}):")
        for n in sorted(names):
            print(f"  {n}")


async def cmd_consumer(nc, args) -> None:
    if args.action in ("info", "i"):
        raw: list = []
        info = await _api(nc, args, f"CONSUMER.INFO.{args.stream}.{args.consumer}",
                          "could not load Consumer", raw=raw)
        if args.json:
            _print_raw_json(raw[0])
        else:
            _print_info_text("Consumer", f"{args.stream} > {args.consumer}", info)
        return
    names = await _names(nc, args, f"CONSUMER.NAMES.{args.stream}", "consumers", "could not list consumers")
    if args.json:
        _print_json(sorted(names))
    elif args.names:
        for n in sorted(names):
            print(n)
    elif not names:
        print(f"No Consumers defined for Stream {args.stream}")
    else:
        print(f"Consumers for Stream {args.stream} ({len(names)}):")
        for n in sorted(names):
            print(f"  {n}")


async def cmd_kv(nc, args) -> None:
    from nats.js.errors import BucketNotFoundError, KeyNotFoundError, NotFoundError
    js = nc.jetstream(domain=args.js_domain) if args.js_domain else nc.jetstream()
    try:
        kv = await js.key_value(args.bucket)
    except (BucketNotFoundError, NotFoundError):
        raise CLIError("nats: bucket not found") from None
    if args.action == "put":
        value = args.value.encode() if args.value is not None else sys.stdin.buffer.read()
        await kv.put(args.key, value)
        sys.stdout.buffer.write(value + b"\n")
        return
    try:
        entry = await kv.get(args.key)
    except KeyNotFoundError:
        raise CLIError("nats: key not found") from None
    if args.raw:
        sys.stdout.buffer.write(entry.value or b"")
        return
    print(f"{args.bucket} > {args.key} revision: {entry.revision}")
    print()
    sys.stdout.flush()
    sys.stdout.buffer.write((entry.value or b"") + b"\n")


_COMMANDS = {
    "publish": cmd_pub, "pub": cmd_pub,
    "request": cmd_req, "req": cmd_req,
    "subscribe": cmd_sub, "sub": cmd_sub,
    "stream": cmd_stream, "str": cmd_stream,
    "consumer": cmd_consumer, "con": cmd_consumer, "obs": cmd_consumer,
    "kv": cmd_kv,
}


async def _run(args) -> int:
    nc = await _connect(args)
    try:
        await _COMMANDS[args.cmd](nc, args)
    finally:
        try:
            await nc.close()
        except Exception:
            pass
    return 0


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        return asyncio.run(_run(args))
    except CLIError as e:
        sys.stderr.write(f"nats: error: {e}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. piped into head: quiet, as a Go program
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:  # anything unexpected: still the CLI's error shape
        sys.stderr.write(f"nats: error: {e or type(e).__name__}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
