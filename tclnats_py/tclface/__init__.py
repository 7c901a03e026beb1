"""The Tcl face: ``package require nats`` in any Tcl interpreter.

``bridge`` installs ``package require nats`` into an interpreter and keeps
its connections; ``connection`` (with its parts ``io``, ``effects``,
``conn_commands``, ``js_commands``) drives the engine from the Tcl event loop
(the socket a Tcl channel, timers ``after``) and serves nats-tcl's
connection API; ``js``
turns Tcl option lists into the engine's JetStream operations and their
results into Tcl values; ``tclsh`` is the tclnats-tclsh launcher;
``notifier`` runs the Tcl event loop for Python hosts; ``tlsname`` checks a
TclTLS peer certificate's name.  The TclOO classes are in ``tclnats_py.tcl``
(the repository's tcl/ folder), the C crossing layer in ``_ext/``.
"""

import importlib
import os


def tcl_library_dir() -> str:
    """Folder holding pkgIndex.tcl of ``package require nats``: the
    subpackage ``tclnats_py.tcl`` (in a source checkout, the repository's
    ``tcl/``, which tclnats_py/__init__.py maps to that name)."""
    _tcl_pkg = importlib.import_module("tclnats_py.tcl")
    return os.path.dirname(os.path.abspath(_tcl_pkg.__file__ or ""))
