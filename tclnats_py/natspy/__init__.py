"""tclnats_py.natspy: nats-py 2.x's API over tclnats_py's engine.

A nats-py program runs on the engine unchanged with::

    python -m tclnats_py.natspy PROGRAM [ARGS]
    python -m tclnats_py.natspy -m MODULE [ARGS]      # e.g. -m pytest

in which ``import nats`` and every ``nats.*`` module resolve to this package
(``nats.aio.client`` is ``tclnats_py.natspy.aio.client`` ...), whether or not
nats-py itself is installed; other processes are unaffected.  Or directly:
``from tclnats_py import natspy as nats``.

The layer is thin: behaviour lives in the engine (``tclnats_py/engine``) and
the asyncio driver (``tclnats_py/aio``); these modules convert names,
arguments, results and exceptions.

The contract between the core modules and the JetStream modules
------------------------------------------------------------------

Core (``natspy/__init__``, ``__main__``, ``aio/``, ``errors``, ``nuid``):

* ``aio.client.Client``: nats-py's ``Client``; ``connect()`` takes nats-py's
  connect signature (servers, error_cb, disconnected_cb, closed_cb,
  reconnected_cb, discovered_server_cb, lame_duck_mode_cb, name, pedantic,
  verbose, allow_reconnect, connect_timeout, reconnect_time_wait,
  max_reconnect_attempts, ping_interval, max_outstanding_pings,
  dont_randomize, flusher_queue_size, no_echo, tls, tls_hostname,
  tls_handshake_first, user, password, token, drain_timeout, signature_cb,
  user_jwt_cb, user_credentials, nkeys_seed, nkeys_seed_str, inbox_prefix,
  pending_size, flush_timeout).  Once connected, ``client._impl`` is the
  asyncio face's ``tclnats_py.aio.client.Client`` (its ``jetstream()``,
  ``engine``, ``request`` ... are what the JetStream modules drive).
  ``client.jetstream(**opts)`` returns
  ``tclnats_py.natspy.js.JetStreamContext(client, **opts)`` and
  ``client.jsm(**opts)`` returns
  ``tclnats_py.natspy.js.manager.JetStreamManager(client, **opts)``, both
  imported when called.  ``client.publish/request/subscribe`` take and give
  nats-py's types and raise ``nats.errors`` classes.
* ``aio.msg.Msg``: nats-py's dataclass ``Msg(_client, subject, reply, data,
  headers, _metadata, _ackd, _sid)``; ``Msg._from_impl(client, impl_msg)``
  builds one from a message of the asyncio face (headers become a ``dict``
  of ``str``); ``respond``, ``ack``, ``ack_sync``, ``nak``, ``in_progress``,
  ``term`` and ``metadata`` (``Msg.Metadata``) are there.  JetStream
  subscriptions hand out ``Msg`` (or a subclass) made with ``_from_impl``.
* ``aio.subscription.Subscription(conn, impl_sub, cb=None, future=None)``
  wraps a subscription of the asyncio face (``_impl``); ``_jsi`` is free for
  the JetStream modules' per-subscription state.
* ``errors``: every ``nats.errors`` name, and ``translate(exc)``: an engine
  error (``tclnats_py.errors.NatsError``) -> the nats-py exception (others
  unchanged).  For a ``JetStreamError`` whose code is not a core one it
  calls ``tclnats_py.natspy.js.errors.translate(exc)`` when that module
  exists (it returns ``exc`` itself to decline).

JetStream (``natspy/js/``, ``js/errors.py``, ``js/api.py``, ``js/kv.py``,
``js/object_store.py``, ``js/manager.py``; ``micro/``) builds on the above.
"""

from __future__ import annotations

from typing import Any

from tclnats_py.natspy import errors  # noqa: F401  nats.errors after `import nats`
from tclnats_py.natspy.aio.client import Client as NATS
from tclnats_py.natspy import js  # noqa: F401  as nats-py's `import nats` loads nats.js (and JetStream's error translation)

__all__ = ["NATS", "connect"]

_DEFAULT_URL = "nats://localhost:4222"


async def connect(servers: str | list[str] = _DEFAULT_URL, **options: Any) -> NATS:
    """Create a client and connect it (nats-py's ``nats.connect``)."""
    nc = NATS()
    await nc.connect(servers, **options)
    return nc
