"""The Tcl face in an interpreter: ``package require nats`` and the
per-interpreter registry of connections.

:func:`install` puts ``package require nats`` into a Tcl interpreter hosted
by Python (``tkinter.Tcl()`` or ``tkinter.Tk()``); :func:`install_loaded` is
the entry of the Tcl extension (``load`` in pkgIndex.tcl) for any other
interpreter.  The Tcl sources in ``tcl/`` give the TclOO shape of nats-tcl;
each ``nats::connection`` object gets one
:class:`~tclnats_py.tclface.connection.TclConnection`, reachable from Tcl as
a command, which runs the engine on the interpreter's event loop.  The
:class:`_Bridge` of an interpreter holds its connections and the commands
that are not a connection's (``::tclnats::_new_connection``,
``::tclnats::_option_table``, ...).

Crossings: one Tcl->Python call per API call and per timer.  The
per-message paths are C (tclnats_py/_ext/tclfast.c): plain publishes are
framed in a C buffer that a flush writes to the socket; the socket's
readable handler reads in C and calls the callbacks of plain messages
itself, handing every other frame to the engine (one call per read that has
any); the deliveries the engine makes go back to Tcl in one call.
"""

from __future__ import annotations

# (a plain False, no typing import at start: the checkers read it as True)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

import itertools
import os
import sys

from tclnats_py._tclcross import Interp, TclError
from tclnats_py.engine.options import OPTION_SPEC
from tclnats_py.engine.pool import parse_url
from tclnats_py.errors import NatsError
# (tcl_library_dir lives in the package's __init__, which the launcher
# tclsh.py imports without the built extension; tools import it from here)
from tclnats_py.tclface import tcl_library_dir
from tclnats_py.tclface.conn_commands import MAX_TIMEOUT_MS
from tclnats_py.tclface.connection import TclConnection
from tclnats_py.tclface.convert import flat, format_exc
from tclnats_py.tclface.results import load_js

__all__ = ["install", "install_loaded", "tcl_library_dir", "TclConnection"]


class _Bridge:
    """Per-interpreter state: the registered commands and the connections."""

    def __init__(self, tk):
        self.tk = tk
        self.ids = itertools.count(1)
        self.conns: dict[str, TclConnection] = {}
        self.dirty: set = set()  # connections with a posted flush
        tk.createcommand("::tclnats::_flush_dirty", self._flush_dirty)
        tk.createcommand("::tclnats::_new_connection", self._new_connection)
        tk.createcommand("::tclnats::_option_table", _option_table)
        tk.createcommand("::tclnats::_parse_url", self._parse_url)
        tk.createcommand("::tclnats::_token", self._token)
        tk.createcommand("::tclnats::python", self._python)
        from tclnats_py._tclcross import noop
        tk.createcommand("::tclnats::_noop", noop)   # crossing-cost measurements
        for name in ("metadata", "make_stream_source", "make_subject_transform", "make_republish",
                     "make_kv_origin"):
            tk.createcommand(f"::tclnats::_{name}", getattr(self, "_" + name))

    def dispose(self):
        """The interpreter is being deleted: Tcl closes its channels and
        drops its timers; forget the connections without calling Tcl."""
        for conn in list(self.conns.values()):
            conn.dead = True
            conn.sock = ""
            conn.flush_id = ""
            conn.timers.clear()
            conn.sweep_id = ""
        self.conns.clear()
        self.dirty.clear()

    def _flush_dirty(self, reader=None):
        """Write now what callbacks run by a readable handler published,
        instead of one more event-loop turn for the posted flush.  ``reader``:
        the readable handler whose deliveries have all run now."""
        if reader is not None:
            conn = self.conns.get(reader[:-3])
            if conn is not None:
                conn.batch_done()
        dirty = self.dirty
        while dirty:
            conn = dirty.pop()
            if conn.flush_id:
                try:
                    conn.flush_now()
                except Exception:
                    tb = format_exc()
                    conn._log("error", f"internal error in flush: {tb}")
                    sys.stderr.write(tb)

    def _wrap(self, fn):
        try:
            return (0, fn())
        except NatsError as e:
            return (1, ("NATS", e.code), str(e))

    def _metadata(self, reply, subject):
        metadata_from_reply = load_js().metadata_from_reply
        return self._wrap(lambda: tuple(flat(metadata_from_reply(reply, subject))))

    def _make_stream_source(self, *args):
        make_stream_source = load_js().make_stream_source
        return self._wrap(lambda: make_stream_source(self.tk, args))

    def _make_subject_transform(self, *args):
        make_subject_transform = load_js().make_subject_transform
        return self._wrap(lambda: make_subject_transform(self.tk, args))

    def _make_republish(self, *args):
        make_republish = load_js().make_republish
        return self._wrap(lambda: make_republish(self.tk, args))

    def _make_kv_origin(self, *args):
        make_kv_origin = load_js().make_kv_origin
        return self._wrap(lambda: make_kv_origin(self.tk, args))

    def _new_connection(self, obj, ns, log_level):
        try:
            c = TclConnection(self, obj, ns, log_level)
        except Exception as e:  # pragma: no cover - defensive
            return (1, "NATS ErrInvalidArg", str(e))
        self.conns[c.cmd] = c
        return (0, c.cmd)

    def _python(self, *args):
        """``::tclnats::python``: which Python serves this interpreter."""
        from tclnats_py import _tclcross
        if args:
            raise TclError('wrong # args: should be "::tclnats::python"')
        return ("version", sys.version.split()[0], "executable", sys.executable, "prefix", sys.prefix,
                "embedded", int(_tclcross.embedded()), "package", os.path.dirname(os.path.abspath(__file__)))

    def _token(self):
        from tclnats_py.engine.nuid import next_token
        return (0, next_token())

    def _parse_url(self, url):
        try:
            return (0, tuple(flat(parse_url(url).as_dict())))
        except NatsError as e:
            return (1, f"NATS {e.code}", str(e))


def _tcl_default(value) -> str:
    """An option's default as ``$conn cget`` shows it (nats-tcl's forms)."""
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return " ".join(map(str, value))
    return str(value)


def _option_table():
    """``::tclnats::_option_table``: the engine's option table for nats.tcl
    (read once per interpreter, at its first connection): ``{types defaults
    max_timeout_ms}``, types and defaults as name/value lists in the engine's
    order."""
    types = []
    defaults = []
    for name, (typ, default) in OPTION_SPEC.items():
        types += (name, typ)
        defaults += (name, _tcl_default(default))
    return (0, (tuple(types), tuple(defaults), str(MAX_TIMEOUT_MS)))


_bridges: dict = {}   # Tcl_Interp address -> _Bridge


def _prepare(tk: Interp) -> "_Bridge":
    """Install the bridge's commands and state into one interpreter."""
    key = tk.interpaddr()
    bridge = _bridges.get(key)
    if bridge is not None and not tk.deleted():
        return bridge
    bridge = _bridges[key] = _Bridge(tk)

    def gone():
        # Tcl deleted the interpreter (interp delete, thread exit): its
        # channels and timers are gone with it; drop the engines
        _bridges.pop(key, None)
        bridge.dispose()
    tk.set_on_delete(gone)
    libdir = tcl_library_dir()
    tk.call("set", "::tclnats::library", libdir)
    tk.call("set", "::tclnats::hosted", 1)
    tk.eval(f"if {{[lsearch -exact $::auto_path {{{libdir}}}] < 0}} {{lappend ::auto_path {{{libdir}}}}}")
    # ::tclnats::r (unpacking Python replies) is needed before package nats
    # loads: the extension made it (tclcross_interp.c) with the interpreter's Interp
    tk.eval("namespace eval ::tclnats {}")
    return bridge


def install_loaded(tk: Interp) -> None:
    """Entry from the Tcl extension ([load] in pkgIndex.tcl): any Tcl
    interpreter, in any Tcl thread, of any host process."""
    from tclnats_py._tclcross import embedded
    if sys.flags.no_site and embedded():
        # the Python that the extension started (not a host's, run with -S
        # on purpose: its sys.prefix and sys.path stay as they are)
        _site_paths()
    _prepare(tk)


def _site_paths() -> None:
    """The part of :mod:`site` that a Python started by the Tcl extension
    needs (it starts without site: the .pth files of a site-packages folder,
    editable-install finders and the like, cost tens of ms and MB at every
    ``package require nats``): ``sys.prefix`` is the virtual environment
    when ``sys.executable`` is one's (a ``pyvenv.cfg`` beside it or one
    level up), and that environment's site-packages (plus the base
    installation's, when the environment includes them) come after the
    folder that holds tclnats_py, so its dependencies (nkeys) import."""
    exe_dir = os.path.dirname(sys.executable or "")
    prefixes = [sys.prefix]
    for cfg in (os.path.join(exe_dir, "pyvenv.cfg"), os.path.join(os.path.dirname(exe_dir), "pyvenv.cfg")):
        if exe_dir and os.path.isfile(cfg):
            env = os.path.dirname(cfg)
            system = False
            with open(cfg, encoding="utf-8") as f:
                for line in f:
                    key, sep, value = line.partition("=")
                    if sep and key.strip().lower() == "include-system-site-packages":
                        system = value.strip().lower() == "true"
            sys.prefix = sys.exec_prefix = env
            prefixes = [env] + ([sys.base_prefix] if system else [])
            break
    import site  # its functions only: with no_site, importing it changes nothing
    for path in site.getsitepackages(prefixes):
        if path not in sys.path and os.path.isdir(path):
            sys.path.append(path)


def install(interp: Any) -> None:
    """Make ``package require nats`` available in a tkinter interpreter.

    ``interp`` is a ``tkinter.Tcl()``/``tkinter.Tk()`` object (or its ``.tk``).
    The bridge drives it through the Tcl C API (:mod:`tclnats_py._tclcross`)
    like any other interpreter.  ``TCLLIBPATH`` gains the package folder, so
    Thread-package workers and child interpreters that this process creates
    find ``package require nats`` too (each then loads the Tcl extension,
    which joins this process's Python).
    """
    tk = getattr(interp, "tk", interp)
    if not isinstance(tk, Interp):
        tk = Interp.from_address(tk.interpaddr())
    _prepare(tk)
    libdir = tcl_library_dir()
    paths = os.environ.get("TCLLIBPATH", "")
    if libdir not in tk.splitlist(paths):
        os.environ["TCLLIBPATH"] = f"{{{libdir}}} {paths}".strip()
        tk.call("set", "::env(TCLLIBPATH)", os.environ["TCLLIBPATH"])
