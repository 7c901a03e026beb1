"""``nats.js`` of nats-py 2.x: JetStream over tclnats_py's engine.

``nc.jetstream()`` is a :class:`JetStreamContext` (publish, push and pull
subscriptions, Key-Value, Object Store, and the management calls of
:class:`JetStreamManager`, which ``nc.jsm()`` gives alone); ``api`` holds
the ``nats.js.api`` dataclasses, ``errors`` the ``nats.js.errors`` classes.
"""

from __future__ import annotations

from tclnats_py.natspy.js import api, errors  # noqa: F401
from tclnats_py.natspy.js.client import JetStreamContext
from tclnats_py.natspy.js.manager import JetStreamManager

__all__ = ["api", "JetStreamManager", "JetStreamContext"]
