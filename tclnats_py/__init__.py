"""tclnats_py: one NATS client engine, served to Python (asyncio) and Tcl.

The asyncio face: ``await tclnats_py.connect(...)`` (see tclnats_py.aio.client),
``client.jetstream()`` (tclnats_py.aio.jetstream, kv, objectstore); the same API
without ``await``, shared by threads: ``tclnats_py.sync.connect(...)``.  The Tcl face:
``tclnats-tclsh`` or ``tclnats_py.tclface.bridge.install(tkinter.Tcl())`` give
``package require nats``.  Errors are classes named by code (ErrTimeout ...).
"""

import os as _os
import sys as _sys

# In a source checkout (no install), tclnats_py.tcl and tclnats_py.compat are
# the repository's tcl/ and compat/ folders, as an install maps them (setup.py's
# package_dir).  A finder first on sys.meta_path (ahead of an editable
# install's mapping to another checkout) resolves those two names
# only, so the package's __path__ stays its own folder (walking it finds no
# setup.py, tests or tclnats_py.tclnats_py).
_top = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(__path__[0], "compat")) \
        and _os.path.isfile(_os.path.join(_top, "compat", "__init__.py")) \
        and _os.path.isfile(_os.path.join(_top, "tcl", "pkgIndex.tcl")):

    class _CheckoutFolders:
        """Meta path finder: tclnats_py.tcl and tclnats_py.compat from the
        checkout's top folder (their submodules then come from their own
        __path__)."""

        top = _top

        @classmethod
        def find_spec(cls, name: str, path: object = None, target: object = None) -> object:
            if name not in ("tclnats_py.tcl", "tclnats_py.compat"):
                return None
            from importlib.machinery import PathFinder
            # (PathFinder looks up the last part of the name, tcl or compat, in [top])
            return PathFinder.find_spec(name, [cls.top], target)  # type: ignore[arg-type]

    if not any(getattr(f, "__name__", "") == "_CheckoutFolders" for f in _sys.meta_path):
        _sys.meta_path.insert(0, _CheckoutFolders)  # type: ignore[arg-type]  # (a class with find_spec)

from tclnats_py.errors import *  # noqa: F401,F403  every error class (one per code) and the families
from tclnats_py.errors import __all__ as _error_names
from tclnats_py.engine.connection import CLOSED, CONNECTED, CONNECTING, RECONNECTING, Engine, Msg
from tclnats_py.engine.options import Options
from tclnats_py.engine.headers import Headers

__version__ = "0.1.0"
#: the nats-tcl API level served to Tcl
TCL_API_VERSION = "3.2.1"

# the asyncio face is imported on first use (PEP 562): the Tcl face, which
# imports this package too, starts without asyncio (and without typing: this
# TYPE_CHECKING is a plain False, which mypy and pyright read as True)
TYPE_CHECKING = False
if TYPE_CHECKING:
    # what type checkers see: the real classes and functions, so a program
    # using tclnats_py.connect(...) is checked (a misspelled option, a wrong
    # argument type, a missing attribute) instead of getting Any
    from tclnats_py.aio.client import (Client as Client, ClientMsg as ClientMsg, Subscription as Subscription,
                                       connect as connect)
    from tclnats_py.aio.options import ConnectOptions as ConnectOptions

_AIO = ("Client", "ClientMsg", "Subscription", "connect", "ConnectOptions")

if not TYPE_CHECKING:
    # (hidden from type checkers: a module __getattr__ would make every
    # misspelled name, tclnats_py.conect, an Any instead of an error)
    def __getattr__(name: str):
        if name in _AIO:
            if name == "ConnectOptions":
                from tclnats_py.aio import options as _mod
            else:
                from tclnats_py.aio import client as _mod
            value = getattr(_mod, name)
            globals()[name] = value
            return value
        raise AttributeError(f"module 'tclnats_py' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_AIO))


__all__ = ["Engine", "Msg", "Headers", "Options", "Client", "ClientMsg", "Subscription", "connect", "ConnectOptions",
           "CLOSED", "CONNECTING", "CONNECTED", "RECONNECTING", "TCL_API_VERSION", *_error_names]
