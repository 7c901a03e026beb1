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

__all__ = ["api", "JetStreamManager", "JetStreamContext", "PROVIDED_PRIVATE"]

#: nats-py private attributes of the JetStream objects that this surface
#: serves with nats-py's meaning (nats-py's suite reads them; the runner,
#: compat/natspy_runner.py, counts the tests that touch only these and
#: ``tclnats_py.natspy.aio.client.PROVIDED_PRIVATE``):
#: PullSubscription ``_sub`` (its core Subscription), ``_nc``, ``_nms`` (the
#: pull request subject), ``_deliver`` (its inbox); PushSubscription
#: ``_consumer``, ``_pending_msgs_limit``, ``_pending_bytes_limit``; a KV
#: watcher's ``_sub`` and ``_updates`` (its queue, 256 entries);
#: ObjectStore ``_name`` and ``_stream``.
PROVIDED_PRIVATE = frozenset({
    "_sub", "_nc", "_nms", "_deliver", "_consumer", "_pending_msgs_limit", "_pending_bytes_limit", "_updates",
    "_name", "_stream",
})
