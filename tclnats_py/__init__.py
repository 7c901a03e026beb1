"""tclnats_py: one NATS client engine, served to Python (asyncio) and Tcl.

The asyncio face: ``await tclnats_py.connect(...)`` (see tclnats_py.aio),
``client.jetstream()`` (tclnats_py.jetstream, kv, objectstore).  The Tcl face:
``tclnats-tclsh`` or ``tclnats_py.tclbridge.install(tkinter.Tcl())`` give
``package require nats``.  Errors are classes named by code (ErrTimeout ...).
"""

from ._errors import *  # noqa: F401,F403  error classes named by code
from ._errors import CODES, NatsError, error_class
from ._engine import CLOSED, CONNECTED, CONNECTING, RECONNECTING, Engine, Msg
from ._options import Options

__version__ = "0.1.0"
#: the nats-tcl API level served to Tcl
TCL_API_VERSION = "3.2.1"

from .aio import Client, Subscription, connect  # noqa: E402  the asyncio face

__all__ = ["NatsError", "error_class", "Engine", "Msg", "Options", "Client", "Subscription", "connect",
           "CLOSED", "CONNECTING", "CONNECTED", "RECONNECTING", "TCL_API_VERSION", *CODES]
