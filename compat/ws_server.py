"""The conformance runner's ``--websocket``: nats-tcl's suite, unchanged,
with the connections of our sides going over WebSocket; the package itself
knows nothing of it.

Three parts.  The suite starts its servers as ``nats-server ARGS`` from PATH
and connects to fixed ports (4222, 5222, ...): :func:`install` puts a
``nats-server`` there that runs :func:`main`, which starts the real server
with the suite's arguments, its NATS port moved to the suite's port +
:data:`OFFSET` (4222 -> 14222) and a ``websocket {}`` listener (no TLS) on
the suite's port (a ``-c`` file of the suite is included in the
configuration that adds it).  The process is the real server (``exec``), so
the suite's pids stay right.  :func:`install_prelude` writes
``compat/ws_prelude.tcl`` as the pkgIndex.tcl of a folder that our sides get
on TCLLIBPATH after tclnats_py's: it gives ``nats::connection`` a mixin whose
``configure`` maps a ``nats://host:port`` in ``-servers`` to
``ws://host:port``, the same address; the NATS CLI stand-in goes to the moved
NATS port.  :data:`INHERENT` lists the tests that cannot hold over WebSocket
by their nature, each with the reason; :func:`excuse` reports them apart and
the verdict counts the rest.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import tempfile

__all__ = ["OFFSET", "INHERENT", "PRELUDE", "conf_port", "arguments", "install", "install_prelude", "prepare",
           "excuse", "print_inherent", "main"]

#: a server's NATS port is the suite's port + OFFSET (its websocket listener has the suite's port)
OFFSET = 10000
#: the Tcl prelude of our sides
PRELUDE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ws_prelude.tcl")

#: nats-tcl tag -> {"file test": why it cannot hold over WebSocket}; a listed
#: test that fails is reported with the reason and not counted
_SNIFF = ("its sniffer reads the bytes on the socket and compares NATS protocol lines; over WebSocket "
          "the socket carries the HTTP upgrade and frames, the client's masked (RFC 6455 5.3)")
_INTERCEPT = ("its intercept rewrites NATS protocol text in the bytes the client writes to make the server "
              "fail; over WebSocket those bytes are masked frames, so nothing matches and the server never fails")
_TLS = ("it checks the NATS protocol's TLS: the server's INFO asks for it and the client upgrades the TCP "
        "socket; a websocket listener has no such step (its TLS is wss://, before the HTTP upgrade), so the "
        "expected TLS failures do not happen")
INHERENT: dict[str, dict[str, str]] = {
    "v3.2.1": {
        "auth.test auth-1.1": _SNIFF + " (the user and password of CONNECT)",
        "auth.test auth-2.1": _SNIFF + " (the auth_token of CONNECT)",
        "basic.test basic-1": _SNIFF + " (the read data must start with INFO)",
        "basic.test basic-2.1": _SNIFF + " (SUB)",
        "basic.test basic-2.2": _SNIFF + " (PUB)",
        "basic.test basic-2.3": _SNIFF + " (UNSUB, PUB)",
        "basic.test basic-3.1": _SNIFF + " (SUB, UNSUB with max_msgs)",
        "basic.test basic-4.1": _SNIFF + " (UNSUB with max_msgs)",
        "basic.test basic-5.2": _SNIFF + " (the request's SUB and PUB)",
        "basic.test basic-5.3": _SNIFF + " (the MSG of the reply; its sid comes from basic-5.2's sniffed SUB)",
        "cluster.test cluster-2": _INTERCEPT + " (PUB -> PUB-BOGUS, then the reconnect is awaited)",
        "extra_opts.test extra_opts-1": _SNIFF + " (CONNECT's verbose and pedantic, +OK)",
        "extra_opts.test extra_opts-2": _SNIFF + " (CONNECT's echo)",
        "extra_opts.test extra_opts-3": _SNIFF + " (PING/PONG counted on the socket)",
        "extra_opts.test extra_opts-4.1": _SNIFF + " (the server's PING and the client's PONG)",
        "extra_opts.test extra_opts-4.2": _INTERCEPT + " (the client's PONGs deleted)",
        "extra_opts.test extra_opts-4.3": "its intercept deletes the server's PONG from the bytes the client reads; "
                                          "over WebSocket that text sits inside a frame whose header still counts "
                                          "it, so the framing breaks instead of a PONG going missing",
        "extra_opts.test extra_opts-7.2": "a consequence of extra_opts-2 (listed): its sniffer's assertion fails "
                                          "before it sets resp, so its cleanup stops at '$resp destroy' and never "
                                          "runs '$conn reset -echo'; with -echo still false the connection's own "
                                          "message never comes back (run after extra_opts-6 alone, 7.2 passes)",
        "ordered_consumer.test ordered-7": _INTERCEPT + " (PUB -> PUB-BOGUS, then the server's -ERR is awaited)",
        "pubsub.test pubsub-1": _SNIFF + " (HPUB and its header block)",
        "tls.test tls-1.1": _TLS + " (no CA: a certificate error expected)",
        "tls.test tls-1.2": _TLS + " (INFO's tls_required expected)",
        "tls.test tls-2.2": _TLS + " (a client certificate missing: ErrTLS expected)",
        "tls.test tls-3.1": _TLS + " (tls:// to a server without TLS: ErrSecureConnWanted expected; and "
                                   "tls-2.2's connection, not failed, is still connected here)",
    },
}


def install(bindir: str, server: str) -> str:
    """Replace ``bindir/nats-server`` with the wrapper of ``server``."""
    path = os.path.join(bindir, "nats-server")
    if os.path.lexists(path):
        os.remove(path)
    with open(path, "w") as f:
        # this file run as a script, without site: it imports nothing of
        # tclnats_py, so the server is up well within the suite's 500 ms wait
        f.write("#!/bin/sh\n"
                "# nats-server with a websocket listener at the suite's port, its NATS port + "
                f"{OFFSET}, written by tclnats-compat --websocket\n"
                f"exec {shlex.quote(sys.executable)} -S {shlex.quote(os.path.abspath(__file__))} "
                f"{shlex.quote(bindir)} {shlex.quote(server)} \"$@\"\n")
    os.chmod(path, 0o755)
    return path


def install_prelude(workspace: str) -> str:
    """The folder whose pkgIndex.tcl is the prelude (ws_prelude.tcl), for our sides' TCLLIBPATH."""
    folder = os.path.join(workspace, "ws-prelude")
    os.makedirs(folder, exist_ok=True)
    shutil.copyfile(PRELUDE, os.path.join(folder, "pkgIndex.tcl"))
    return folder


def prepare(paths: dict, tag: str | None) -> dict:
    """What a ``--websocket`` run adds to the runner's paths: the server
    wrapper on PATH, the NATS CLI stand-in's default server on the moved port,
    the prelude's folder, the tag whose INHERENT list holds."""
    cli = os.path.join(paths["bin"], "nats")
    with open(cli) as f:
        shebang, rest = f.read().split("\n", 1)
    with open(cli, "w") as f:
        f.write(f"{shebang}\nNATS_URL=${{NATS_URL:-nats://localhost:{4222 + OFFSET}}}\nexport NATS_URL\n{rest}")
    return {"websocket": install(paths["bin"], paths["nats_server"]),
            "ws_prelude": (install_prelude(paths["workspace"]),), "ws_tag": tag}


def excuse(summary: dict, tag: str | None) -> None:
    """Move the failures INHERENT lists for ``tag`` from ``summary["failed"]``
    to ``summary["inherent_ws"]`` ({side: [[test, reason], ...]}), drop them
    from the differences between our sides and decide ``ok`` again on the rest."""
    listed = INHERENT.get(tag or "", {})
    summary["inherent_ws"] = {}
    for side, tests in summary["failed"].items():
        summary["inherent_ws"][side] = [[t, listed[t]] for t in tests if t in listed]
        summary["failed"][side] = [t for t in tests if t not in listed]
    summary["differ"] = [d for d in summary["differ"] if f"{d['file']} {d['test']}" not in listed]
    summary["ok"] = not summary["differ"] and not any(summary["failed"].values()) and not summary["problems"]


def print_inherent(summary: dict, stream) -> None:
    """The failures excused over WebSocket, each with its reason."""
    for side, tests in summary["inherent_ws"].items():
        stream.write(f"\nover WebSocket these cannot hold, failed on {side} and not counted ({len(tests)}):\n")
        for test, why in tests:
            stream.write(f"  {test}: {why}\n")


def conf_port(text: str) -> int | None:
    """The client port a nats-server configuration sets at its top level
    (``port: N`` or ``listen: [host:]N``), or None."""
    depth = 0
    for line in text.splitlines():
        line = line.split("#", 1)[0].split("//", 1)[0]
        m = re.match(r"\s*(port|listen)\s*[:=]?\s*\"?(?:[^\s\"]*:)?(\d+)\"?\s*$", line)
        if depth == 0 and m:
            return int(m.group(2))
        depth += line.count("{") + line.count("[") - line.count("}") - line.count("]")
    return None


def shifted(advertise: str, port: int) -> str:
    """``--client_advertise HOST[:PORT]`` for the moved NATS port: HOST:PORT+OFFSET."""
    host, sep, given = advertise.rpartition(":")
    if not sep or not given.isdigit():
        host, given = advertise, str(port)
    return f"{host}:{int(given) + OFFSET}"


def arguments(args: list[str], conf_text: str | None = None) -> tuple[list[str], str]:
    """(the real server's arguments but ``-c``, its websocket block) for the
    suite's ``nats-server ARGS``: the client port P (``-p``, else the ``-c``
    file's, else 4222) becomes P+OFFSET, the websocket listener takes P;
    ``--client_advertise A`` likewise (the websocket block advertises A, so
    that the connect_urls WebSocket clients get are the suite's addresses)."""
    port, advertise, rest = None, None, []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-p", "--port", "--client_advertise", "-c", "--config") and i + 1 < len(args):
            if a in ("-p", "--port"):
                port = int(args[i + 1])
            elif a == "--client_advertise":
                advertise = args[i + 1]
            i += 2
            continue
        rest.append(a)
        i += 1
    if port is None:
        port = (conf_port(conf_text) if conf_text is not None else None) or 4222
    rest += ["-p", str(port + OFFSET)]
    block = f"websocket {{\n  port: {port}\n  no_tls: true\n"
    if advertise:
        rest += ["--client_advertise", shifted(advertise, port)]
        block += f'  advertise: "{advertise}"\n'
    return rest, block + "}\n"


def main(argv: list[str]) -> None:
    """``ws_server DIR REAL_SERVER ARGS...``: exec the real server with
    :func:`arguments`, its configuration (the suite's ``-c`` file included,
    the websocket block) written in DIR."""
    folder, server, args = argv[0], argv[1], list(argv[2:])
    conf = None
    for a, b in zip(args, args[1:]):
        if a in ("-c", "--config"):
            conf = os.path.abspath(b)
    text = None
    if conf is not None:
        with open(conf, encoding="utf-8", errors="replace") as f:
            text = f.read()
    rest, block = arguments(args, text)
    fd, path = tempfile.mkstemp(prefix="ws-", suffix=".conf", dir=folder)
    with os.fdopen(fd, "w") as f:
        if conf is not None:
            # (nats-server reads an include's path relative to the including file)
            f.write(f'include "{os.path.relpath(conf, folder)}"\n')
        f.write(block)
    os.execv(server, [server, *rest, "-c", path])

if __name__ == "__main__":
    main(sys.argv[1:])
