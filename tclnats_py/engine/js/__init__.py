"""JetStream, Key-Value, ordered consumers and Object Store, without I/O.

The logic both faces share: the asyncio face (``tclnats_py.aio.jetstream``,
``kv``, ``objectstore``) and the Tcl face drive it; neither re-implements
it.  Nothing here owns a socket, a clock or a thread, and nothing needs more
from a driver than core NATS: request, publish, subscribe, timers.

Modules
-------
``api``       JS API subjects with prefixes/domains (ADR-19), the steps, API
              operations on :class:`JsApi`, reply/error mapping, units
``config``    stream/consumer option tables (nats-tcl's), JSON building,
              stream sources, subject transforms, republish
``publish``   expectation headers, PubAck parsing, :class:`AsyncPublisher`
``pull``      :class:`Fetch` (one pull request) and :class:`Consume`
              (continuous pull), status handling (ADR-13, ADR-37)
``ack``       ack payloads (+ACK -NAK +WPI +TERM), :class:`AckState`
``meta``      message metadata from ``$JS.ACK`` reply subjects (v1, v2)
``ordered``   :class:`OrderedConsumer` (ADR-17)
``push``      :class:`~push.PushState`: a push consumer's deliveries
``events``    the events the state machines answer with, and
              :func:`~events.event_table`, a face's dispatch of them
``counter``   counters (ADR-49): add, get, get_many of a stream's counters
``schedule``  message schedules (ADR-51): the schedule's headers, its checks, the publish
``direct``    :class:`~direct.DirectBatch`: batch and multi-last direct gets (ADR-31)
``kv``        Key-Value (ADR-8): buckets, entries, operations, watcher
``objstore``  Object Store (ADR-20): chunking, digests, infos, watcher

Operations
----------
Multi-step work (an API call, KV ``create``, object ``delete``...) is a
generator, an *operation*.  It yields steps and returns its result:

``Request(subject, payload, headers, timeout, check_subject)``
    a core request; send the reply Msg back (``op.send(msg)``), or throw
    the failure in (``op.throw(err)``: ErrTimeout, ErrNoResponders,
    ErrConnectionClosed).  ``timeout`` is ms, None for the JS timeout.
``Publish(subject, payload, reply, headers)``
    a plain publish; send back None.
``Batch(steps)``
    steps that may run concurrently; send back a list of their results,
    a NatsError in place of each failed one.

:func:`~api.advance` moves an operation one step (for event-loop drivers,
e.g. the Tcl face: issue the step's request with a callback that calls
``advance`` again); :func:`~api.run_sync` runs one with a blocking
handler; the asyncio face awaits each step.  Errors are ``NatsError``
subclasses named by nats-tcl's codes (``err.code``).

State machines
--------------
Streams of messages are fed to small objects: :class:`~pull.Fetch`,
:class:`~pull.Consume`, :class:`~ordered.OrderedConsumer`,
:class:`~push.PushState`, :class:`~kv.Watcher` and :class:`~objstore.Watcher`
answer with *events*, typed values of :mod:`~tclnats_py.engine.js.events`
that each names in its ``EVENTS``; :class:`~objstore.Put`,
:class:`~objstore.Get` and :class:`~publish.AsyncPublisher` answer with
data.  Each class documents its events and the timers the driver keeps for it.

Units
-----
Wire units inside (ns durations, RFC 3339 times), ms where nats-tcl
documents ms (metadata ``timestamp``, KV ``created``, timeouts and the
``ms`` options of the config tables); ``api.ns2ms``,
``config.stream_reply_to_ms`` / ``consumer_reply_to_ms``,
``kv.status_to_ms`` convert replies for Tcl.
"""

from __future__ import annotations

from tclnats_py.engine.js import ack, api, config, events, kv, meta, objstore, ordered, publish, pull, push
from tclnats_py.engine.js.api import (Batch, JsApi, Publish, Request, StoredMsg, advance, api_call, api_prefix, check_js_error,
                  check_name, filename_safe, iso_to_ms, ms_to_iso, ns2ms, run_sync)
from tclnats_py.engine.js.kv import check_bucket, check_key, is_not_found, kv_operation
from tclnats_py.engine.js.meta import metadata_from_reply, parse_metadata
from tclnats_py.engine.js.ordered import OrderedConsumer
from tclnats_py.engine.js.pull import Consume, Fetch

__all__ = [
    "ack", "api", "config", "events", "kv", "meta", "objstore", "ordered", "publish", "pull", "push",
    "Batch", "JsApi", "Publish", "Request", "StoredMsg", "advance", "api_call", "run_sync",
    "api_prefix", "check_js_error", "check_name", "filename_safe", "iso_to_ms", "ms_to_iso", "ns2ms",
    "metadata_from_reply", "parse_metadata", "OrderedConsumer", "Consume", "Fetch",
    "check_bucket", "check_key", "kv_operation", "is_not_found",
]
