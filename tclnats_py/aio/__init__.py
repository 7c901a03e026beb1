"""The asyncio face: a driver of the engine for Python programs.

``client`` (Client, connect, Subscription), ``jetstream`` (JetStream,
streams, consumers), ``kv`` (KeyValue) and ``objectstore`` (ObjectStore).
Importing this package does not import the JetStream modules; they load with
``client.jetstream()``.
"""

from tclnats_py.aio.client import DEFAULT_SERVER, Client, Subscription, connect

__all__ = ["Client", "Subscription", "connect", "DEFAULT_SERVER"]
