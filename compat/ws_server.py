"""The conformance runner's ``--websocket``: nats-tcl's suite, unchanged,
with the connections of our sides going over WebSocket.

Two halves.  The suite starts its servers as ``nats-server ARGS`` from PATH:
:func:`install` puts a ``nats-server`` there that runs :func:`main`, which
starts the real server with the same arguments plus a ``websocket {}``
listener (no TLS) on the client port + :data:`OFFSET` (4222 -> 14222; a
``-c`` file of the suite is included in the configuration that adds it).
The process is the real server (``exec``), so the suite's pids stay right.
Our sides then run with ``TCLNATS_COMPAT_WS_OFFSET`` set, under which the
Tcl face maps a ``nats://host:port`` in ``-servers`` to
``ws://host:port+OFFSET`` (tclface/conn_commands.py).
"""

from __future__ import annotations

import os
import shlex
import sys
import tempfile

__all__ = ["OFFSET", "ENV", "install", "main"]

#: the WebSocket port of a server is its client port + OFFSET
OFFSET = 10000
#: the environment variable our sides run with
ENV = "TCLNATS_COMPAT_WS_OFFSET"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def install(bindir: str, server: str) -> str:
    """Replace ``bindir/nats-server`` with the wrapper of ``server``."""
    path = os.path.join(bindir, "nats-server")
    if os.path.lexists(path):
        os.remove(path)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n"
                "# nats-server with a websocket listener at the client port + "
                f"{OFFSET}, written by tclnats-compat --websocket\n"
                f"PYTHONPATH={shlex.quote(ROOT)}${{PYTHONPATH:+:$PYTHONPATH}}\n"
                "export PYTHONPATH\n"
                f"exec {shlex.quote(sys.executable)} -m tclnats_py.compat.ws_server "
                f"{shlex.quote(server)} \"$@\"\n")
    os.chmod(path, 0o755)
    return path


def main(argv: list[str]) -> None:
    """``ws_server REAL_SERVER ARGS...``: exec the real server with ARGS, a
    websocket listener added."""
    server, args = argv[0], list(argv[1:])
    port, conf, rest = 4222, None, []
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("-p", "--port") and i + 1 < len(args):
            port = int(args[i + 1])
        if a in ("-c", "--config") and i + 1 < len(args):
            conf = os.path.abspath(args[i + 1])
            i += 2
            continue
        rest.append(a)
        i += 1
    fd, path = tempfile.mkstemp(prefix="ws-", suffix=".conf")
    with os.fdopen(fd, "w") as f:
        if conf is not None:
            f.write(f'include "{conf}"\n')
        f.write(f"websocket {{\n  port: {port + OFFSET}\n  no_tls: true\n}}\n")
    os.execv(server, [server, *rest, "-c", path])


if __name__ == "__main__":
    main(sys.argv[1:])
