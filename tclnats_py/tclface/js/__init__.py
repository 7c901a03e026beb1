"""JetStream, Key-Value, ordered consumers and Object Store for the Tcl face.

The Tcl classes in ``tcl/jet_stream.tcl`` (``nats::jet_stream``,
``nats::ordered_consumer``, ``nats::key_value``, ``nats::kv_watcher``,
``nats::object_store``) keep nats-tcl 3.2.1's public shape and wait in Tcl.
The JetStream logic itself (API subjects, configs, payloads, pull requests,
ordered consumers, KV and Object Store) is ``tclnats_py.engine.js``, the same
engine the asyncio face drives.  What is here is the Tcl edge of it, one
module per concern:

``convert``   argument marshalling: Tcl option lists (``-name value ...``,
              every value a string) turned into the Python values the engine
              takes, and results as nats-tcl shows them (JSON as tcllib's
              json2dict does, durations in ms, its error codes)
``context``   :class:`JetStream` (``nats::jet_stream``): running the engine's
              operations (each Request step a request of the connection's
              engine that the Tcl layer waits for), streams, consumers,
              messages, publishes, acks, fetches; :class:`JsBridge`, the
              per-connection registry of the Tcl commands of these objects
``pull``      :class:`PullRequest`: one fetch
``ordered``   :class:`OrderedConsumer` (``nats::ordered_consumer``)
``kv``        :class:`KeyValue` (``nats::key_value``) and :class:`Watcher`
              (``nats::kv_watcher``, also an Object Store's watcher)
``objstore``  :class:`ObjectStore` (``nats::object_store``)

Each object is a Tcl command whose ops are its class's ``c_<op>`` methods
(:mod:`tclnats_py.tclface.commands`); the events of the engine's state
machines reach each class's ``on_<event>`` handlers through a table built
when the object is made (:func:`tclnats_py.engine.js.events.event_table`).
"""

from __future__ import annotations

from tclnats_py.engine.js.meta import metadata_from_reply
from tclnats_py.tclface.values import tcl_value
from tclnats_py.tclface.js.convert import (TclArgs, make_kv_origin, make_republish, make_stream_source,
                                           make_subject_transform)
from tclnats_py.tclface.js.context import Chain, JetStream, JsBridge
from tclnats_py.tclface.js.kv import KeyValue, Watcher
from tclnats_py.tclface.js.objstore import ObjectStore
from tclnats_py.tclface.js.ordered import OrderedConsumer
from tclnats_py.tclface.js.pull import PullRequest

__all__ = ["JsBridge", "JetStream", "Chain", "TclArgs", "PullRequest", "OrderedConsumer", "KeyValue", "Watcher",
           "ObjectStore", "metadata_from_reply", "tcl_value", "make_stream_source", "make_subject_transform",
           "make_republish", "make_kv_origin"]
