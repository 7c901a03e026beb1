"""The asyncio face: a driver of the engine for Python programs.

``client`` (Client, connect, Subscription), ``jetstream`` (JetStream,
streams, consumers), ``kv`` (KeyValue) and ``objectstore`` (ObjectStore).
Importing this package does not import the JetStream modules; they load with
``client.jetstream()``.
"""

from tclnats_py.aio.client import DEFAULT_SERVER, Client, ClientMsg, Subscription, connect
from tclnats_py.aio.options import ConnectOptions

__all__ = ["Client", "Subscription", "ClientMsg", "ConnectOptions", "connect", "DEFAULT_SERVER"]
