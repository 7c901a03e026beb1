"""tclnats_py: one NATS client engine, served to Python (asyncio) and Tcl."""

from ._errors import *  # noqa: F401,F403  error classes named by code
from ._errors import NatsError, error_class
from ._engine import Engine, Msg, CLOSED, CONNECTING, CONNECTED, RECONNECTING
from ._options import Options

__version__ = "0.1.0"
#: the nats-tcl API level served to Tcl
TCL_API_VERSION = "3.2.1"

from .aio import Client, Subscription, connect  # noqa: E402  the asyncio face
