"""The blocking face: ``tclnats_py.sync.connect(...)`` for programs that are not asyncio.

    from tclnats_py import sync

    with sync.connect("nats://localhost:4222") as nc:
        nc.publish("greet.py", b"hello")
        reply = nc.request("time.now", b"", timeout=1)

:mod:`tclnats_py.sync.client` (Client, connect) has the asyncio face's
options, names, errors and message type, without ``await``; every method may
be called from any thread (:mod:`tclnats_py.sync.threads`).
:mod:`tclnats_py.sync.driver` is the single-threaded blocking driver the
Spark source reads through (raw mode); importing it does not import the
client (which loads the option table of tclnats_py.aio).
"""

TYPE_CHECKING = False
if TYPE_CHECKING:
    from tclnats_py.sync.client import (DEFAULT_SERVER as DEFAULT_SERVER, Client as Client,
                                        HeadersArg as HeadersArg, Payload as Payload, connect as connect)
    from tclnats_py.sync.subscription import Subscription as Subscription, SyncMsg as SyncMsg

__all__ = ["Client", "Subscription", "SyncMsg", "connect", "DEFAULT_SERVER", "Payload", "HeadersArg"]

if not TYPE_CHECKING:
    def __getattr__(name: str):
        """The client's names, imported at first use."""
        if name in ("Subscription", "SyncMsg"):
            from tclnats_py.sync import subscription
            return getattr(subscription, name)
        if name in __all__:
            from tclnats_py.sync import client
            return getattr(client, name)
        raise AttributeError(f"module 'tclnats_py.sync' has no attribute {name!r}")
