"""tclnats_py: one NATS client engine, served to Python (asyncio) and Tcl.

The asyncio face: ``await tclnats_py.connect(...)`` (see tclnats_py.aio),
``client.jetstream()`` (tclnats_py.jetstream, kv, objectstore).  The Tcl face:
``tclnats-tclsh`` or ``tclnats_py.tclbridge.install(tkinter.Tcl())`` give
``package require nats``.  Errors are classes named by code (ErrTimeout ...).
"""

from ._errors import *  # noqa: F401,F403  every error class (one per code) and the families
from ._errors import __all__ as _error_names
from ._engine import CLOSED, CONNECTED, CONNECTING, RECONNECTING, Engine, Msg
from ._options import Options

__version__ = "0.1.0"
#: the nats-tcl API level served to Tcl
TCL_API_VERSION = "3.2.1"

from .aio import Client, Subscription, connect  # noqa: E402  the asyncio face

__all__ = ["Engine", "Msg", "Options", "Client", "Subscription", "connect",
           "CLOSED", "CONNECTING", "CONNECTED", "RECONNECTING", "TCL_API_VERSION", *_error_names]
