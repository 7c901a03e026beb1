"""JetStream for the blocking face: the asyncio face's names, arguments and replies, returning instead of awaiting.

    js = client.jetstream()                            # or tclnats_py.sync.jetstream.new(client, domain=...)
    stream = js.create_stream("ORDERS", subjects=["orders.*"], max_age=3600)
    ack = js.publish("orders.new", b"apple", msg_id="o-1")        # PubAck
    fut = js.publish_async("orders.new", b"pear")                 # concurrent.futures.Future of a PubAck
    js.publish_async_complete(timeout=5)
    cons = stream.create_consumer(durable_name="PACKER")
    for msg in cons.fetch(10, max_wait=1.0):
        msg.ack()
    ctx = cons.consume(handle)                          # a thread calls handle(msg); ctx.stop()
    for msg in cons.messages(): ...                     # the same as an iterator
    for msg in js.ordered_consumer("ORDERS"): ...       # ADR-17, repairs itself
    kv = js.create_key_value("SETTINGS")                # tclnats_py.sync.kv
    obs = js.create_object_store("FILES")               # tclnats_py.sync.objectstore

The protocol work is the engine's (``tclnats_py.engine.js``); the values
(:class:`StreamInfo`, :class:`PubAck`, :class:`StreamConfig` ...) are the
asyncio face's, from :mod:`tclnats_py.jsface`.  One file per concept:
``context`` (JetStream), ``batch`` (BatchPublisher), ``stream``, ``consumer``, ``pull`` (consume,
messages), ``ordered``, ``message`` (JsMsg), ``publish`` (publish_async).
Units: seconds.  Errors: the shared codes (ErrStreamNotFound,
ErrConsumerNotFound, ErrMsgNotFound, ErrWrongLastSequence, ErrNoResponders,
ErrTimeout ...).
"""

from __future__ import annotations

from typing import Any

from tclnats_py.engine.js.api import StoredMsg
from tclnats_py.jsface.config import ConsumerConfig, StreamConfig
from tclnats_py.jsface.info import (AccountInfo, BatchAck, ConsumerInfo, ConsumerPauseResponse, ConsumerResetResponse, Info,
                                    PubAck, StreamInfo, StreamState)
from tclnats_py.sync.jetstream.batch import BatchPublisher
from tclnats_py.sync.jetstream.consumer import Consumer
from tclnats_py.sync.jetstream.context import JetStream
from tclnats_py.sync.jetstream.message import JsMsg, MsgMetadata, SequencePair
from tclnats_py.sync.jetstream.ordered import OrderedConsumer
from tclnats_py.sync.jetstream.pull import ConsumeContext, MessagesContext
from tclnats_py.sync.jetstream.stream import Stream

__all__ = ["new", "JetStream", "Stream", "Consumer", "JsMsg", "MsgMetadata", "SequencePair", "StoredMsg", "Info",
           "StreamInfo", "StreamState", "ConsumerInfo", "PubAck", "AccountInfo", "ConsumerPauseResponse",
           "ConsumerResetResponse", "StreamConfig", "ConsumerConfig", "ConsumeContext", "MessagesContext",
           "OrderedConsumer", "BatchAck", "BatchPublisher"]


def new(client: Any, domain: str | None = None, api_prefix: str | None = None, timeout: float = 5.0,
        **kw: Any) -> JetStream:
    """The JetStream context of the blocking ``client`` (what ``client.jetstream()`` returns)."""
    return JetStream(client, domain=domain, api_prefix=api_prefix, timeout=timeout, **kw)
