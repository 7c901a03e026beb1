"""A stand-in for the NATS CLI (``nats``), built on nats-py.

nats-tcl's test suite shells out to the NATS CLI for a few checks; the real
CLI is a Go binary that is not installed here.  This covers what the suite
calls, with an independent client (nats-py):

    nats [-s URL] pub [-H key:value ...] [--force-stdin] SUBJECT [BODY]
    nats [-s URL] sub [--count N] SUBJECT
    nats [-s URL] req [-H key:value ...] SUBJECT [BODY]
    nats [-s URL] stream info -j STREAM
    nats [-s URL] stream ls
    nats [-s URL] consumer info -j STREAM CONSUMER

The server comes from ``-s/--server``, else ``$NATS_URL``, else
nats://localhost:4222.  ``info -j`` prints the server's JSON reply (durations
in ns, as the real CLI does).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="nats", description="NATS CLI stand-in (nats-py)")
    p.add_argument("-s", "--server", default=None)
    sub = p.add_subparsers(dest="cmd", required=True)

    pub = sub.add_parser("pub")
    pub.add_argument("-H", "--header", action="append", default=[])
    pub.add_argument("--force-stdin", action="store_true")
    pub.add_argument("--count", type=int, default=1)
    pub.add_argument("subject")
    pub.add_argument("body", nargs="?", default="")

    s = sub.add_parser("sub")
    s.add_argument("--count", type=int, default=1)
    s.add_argument("subject")

    req = sub.add_parser("req", aliases=["request"])
    req.add_argument("-H", "--header", action="append", default=[])
    req.add_argument("--timeout", type=float, default=2.0)
    req.add_argument("subject")
    req.add_argument("body", nargs="?", default="")

    for name in ("stream", "str"):
        st = sub.add_parser(name)
        st_sub = st.add_subparsers(dest="action", required=True)
        info = st_sub.add_parser("info")
        info.add_argument("-j", "--json", action="store_true")
        info.add_argument("stream")
        st_sub.add_parser("ls")

    for name in ("consumer", "con"):
        c = sub.add_parser(name)
        c_sub = c.add_subparsers(dest="action", required=True)
        ci = c_sub.add_parser("info")
        ci.add_argument("-j", "--json", action="store_true")
        ci.add_argument("stream")
        ci.add_argument("consumer")
    return p


def _headers(pairs):
    out: dict[str, list[str]] = {}
    for h in pairs:
        key, sep, value = h.partition(":")
        if not sep:
            raise SystemExit(f"nats: error: invalid header {h!r}, expected key:value")
        out.setdefault(key.strip(), []).append(value.strip())
    return out


async def _connect(url):
    import nats  # nats-py, the independent peer
    return await nats.connect(url, connect_timeout=5, allow_reconnect=False, max_reconnect_attempts=0)


async def _publish(nc, subject, body: bytes, headers):
    if headers and any(len(v) > 1 for v in headers.values()):
        # nats-py's publish takes one value per key: write HPUB ourselves for repeated keys
        hdr = "NATS/1.0\r\n" + "".join(f"{k}: {v}\r\n" for k, vals in headers.items() for v in vals) + "\r\n"
        hb = hdr.encode()
        line = f"HPUB {subject} {len(hb)} {len(hb) + len(body)}\r\n".encode()
        await nc._send_command(line + hb + body + b"\r\n")
        await nc._flush_pending()
    else:
        await nc.publish(subject, body, headers={k: v[0] for k, v in headers.items()} or None)


async def _api(nc, subject):
    msg = await nc.request(subject, b"", timeout=5)
    data = json.loads(msg.data)
    data.pop("type", None)
    if "error" in data:
        err = data["error"]
        raise SystemExit(f"nats: error: {err.get('description')} ({err.get('err_code')})")
    return data


async def _run(args) -> int:
    import os
    url = args.server or os.environ.get("NATS_URL") or "nats://localhost:4222"
    nc = await _connect(url)
    try:
        if args.cmd == "pub":
            body = sys.stdin.buffer.read() if args.force_stdin else args.body.encode()
            headers = _headers(args.header)
            for _ in range(args.count):
                await _publish(nc, args.subject, body, headers)
            await nc.flush()
            print(f"Published {len(body)} bytes to \"{args.subject}\"", file=sys.stderr)
        elif args.cmd == "sub":
            done = asyncio.get_running_loop().create_future()
            got = 0

            async def cb(msg):
                nonlocal got
                got += 1
                sys.stdout.write(f"[#{got}] Received on \"{msg.subject}\"\n{msg.data.decode(errors='replace')}\n")
                sys.stdout.flush()
                if got >= args.count and not done.done():
                    done.set_result(True)
            await nc.subscribe(args.subject, cb=cb)
            await done
        elif args.cmd in ("req", "request"):
            hdrs = {k: v[0] for k, v in _headers(args.header).items()} or None
            msg = await nc.request(args.subject, args.body.encode(), timeout=args.timeout, headers=hdrs)
            sys.stdout.buffer.write(msg.data + b"\n")
        elif args.cmd in ("stream", "str"):
            if args.action == "ls":
                data = await _api(nc, "$JS.API.STREAM.NAMES")
                for name in data.get("streams") or []:
                    print(name)
            else:
                print(json.dumps(await _api(nc, f"$JS.API.STREAM.INFO.{args.stream}"), indent=2))
        elif args.cmd in ("consumer", "con"):
            print(json.dumps(await _api(nc, f"$JS.API.CONSUMER.INFO.{args.stream}.{args.consumer}"), indent=2))
    finally:
        await nc.close()
    return 0


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    try:
        return asyncio.run(_run(args))
    except SystemExit:
        raise
    except Exception as e:  # the CLI reports errors on stderr with exit code 1
        print(f"nats: error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
